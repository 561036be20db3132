// The connector is the app's side of the SDK: where a token comes from and
// where local writes go. Here both are the loopback test service, which
// serve.mjs makes available on this page's own origin: its `GET /dev/token`
// signs a token, and its `POST /upload` stands in for the app's backend (a
// real app posts to its own API, which writes to the server database; the
// PowerSync service then streams the change back).
export class LoopbackConnector {
  constructor(endpoint) {
    this.endpoint = endpoint;
    this.token = null;
  }

  async fetchCredentials() {
    const res = await fetch(`${this.endpoint}/dev/token?ttl=3600`);
    if (!res.ok) throw new Error(`GET /dev/token: ${res.status} ${await res.text()}`);
    this.token = await res.text();
    return { endpoint: this.endpoint, token: this.token };
  }

  // One local transaction at a time, in order; the SDK calls this again
  // while the upload queue is not empty.
  async uploadData(db) {
    const tx = await db.getNextCrudTransaction();
    if (!tx) return;
    const res = await fetch(`${this.endpoint}/upload`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Token ${this.token}` },
      body: JSON.stringify({ batch: tx.crud.map((entry) => entry.toJSON()) }),
    });
    // Throwing keeps the transaction queued: the SDK retries it later.
    if (!res.ok) throw new Error(`POST /upload: ${res.status} ${await res.text()}`);
    await tx.complete();
  }
}

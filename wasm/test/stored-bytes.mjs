// Which strings occur in the bytes a browser storage holds, for the tests
// that prove an encrypted database holds no plaintext (wasm/test
// browser.test.mjs, clients/web encryption-page.mjs). Runs in a page, with
// the database closed; self-contained, so that tests can also pass it to
// page.evaluate.
//
// where: {opfs: [directory, ...]} (every file below that OPFS directory),
// {opfsFile: name} (one file at the OPFS root), or {idb: name, store,
// field} (every value of an IndexedDB object store, or its `field`).
// Resolves to {files, found, digest}: how many files or values were read,
// the needles found in any of them, and a SHA-256 of them all (in path or
// key order), to tell whether anything was written.
export async function storedNeedles({ where, needles }) {
  const chunks = [];
  const asBytes = (value) => new Uint8Array(value instanceof ArrayBuffer ? value : value.buffer.slice(value.byteOffset, value.byteOffset + value.byteLength));
  if (where.opfs || where.opfsFile) {
    const files = [];
    const walk = async (dir) => {
      for await (const handle of dir.values()) {
        if (handle.kind === 'directory') await walk(handle);
        else files.push([`${dir.name}/${handle.name}`, new Uint8Array(await (await handle.getFile()).arrayBuffer())]);
      }
    };
    let dir = await navigator.storage.getDirectory();
    if (where.opfsFile) {
      chunks.push(new Uint8Array(await (await (await dir.getFileHandle(where.opfsFile)).getFile()).arrayBuffer()));
    } else {
      for (const part of where.opfs) dir = await dir.getDirectoryHandle(part);
      await walk(dir);
      files.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      chunks.push(...files.map(([, bytes]) => bytes));
    }
  } else {
    const request = (req) => new Promise((resolve, reject) => {
      req.onsuccess = () => resolve(req.result);
      req.onerror = () => reject(req.error);
    });
    const idb = await request(indexedDB.open(where.idb));
    const all = await request(idb.transaction(where.store).objectStore(where.store).getAll());
    idb.close();
    for (const value of all) chunks.push(asBytes(where.field ? value[where.field] : value));
  }
  const has = (bytes, needle) => {
    const n = new TextEncoder().encode(needle);
    outer: for (let i = 0; i + n.length <= bytes.length; i++) {
      for (let j = 0; j < n.length; j++) if (bytes[i + j] !== n[j]) continue outer;
      return true;
    }
    return false;
  };
  const all = new Uint8Array(chunks.reduce((n, bytes) => n + bytes.length, 0));
  chunks.reduce((at, bytes) => (all.set(bytes, at), at + bytes.length), 0);
  const digest = [...new Uint8Array(await crypto.subtle.digest('SHA-256', all))].map((b) => b.toString(16).padStart(2, '0')).join('');
  return { files: chunks.length, found: needles.filter((needle) => chunks.some((bytes) => has(bytes, needle))), digest };
}

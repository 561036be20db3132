// Generated sync streams for the Node tests, the browser tests, the demo and
// the benchmark: the shape of extension/benches/store.rs. N PUT ops over 10
// buckets, line i holding ops of bucket i % 10, 1000 ops per line, op ids
// 1..N, row ids `thisismyrowid<n>` of type `thisisatable`, data {"n": n},
// checksum (n * 17) mod 1e9.

export const BUCKETS = 10;
export const OPS_PER_LINE = 1000;

export function checksumOf(n) {
  return (n * 17) % 1_000_000_000;
}

/**
 * The stream for `ops` operations: {checkpoint, data: [line objects], complete}.
 * `after` (bucket name -> op id) drops ops the client already has.
 */
export function benchmarkStream(ops, { after = {}, opsPerLine = OPS_PER_LINE } = {}) {
  const sums = new Array(BUCKETS).fill(0);
  const data = [];
  let id = 1;
  for (let line = 0; id <= ops; line++) {
    const bucket = line % BUCKETS;
    const name = `bucket${bucket}`;
    const since = Number(after[name] ?? 0);
    const entries = [];
    for (let k = 0; k < opsPerLine && id <= ops; k++, id++) {
      const checksum = checksumOf(id);
      sums[bucket] = (sums[bucket] + checksum) >>> 0;
      if (id <= since) continue;
      entries.push({
        op_id: String(id), op: 'PUT', object_type: 'thisisatable',
        object_id: `thisismyrowid${id}`, checksum, data: JSON.stringify({ n: id }),
      });
    }
    if (entries.length > 0) {
      data.push({ data: { bucket: name, has_more: false, after: null, next_after: null, data: entries } });
    }
  }
  const lastOp = String(ops);
  const checkpoint = {
    checkpoint: {
      last_op_id: lastOp, write_checkpoint: null,
      buckets: sums.map((checksum, b) => ({ bucket: `bucket${b}`, checksum, priority: 3, count: countIn(ops, b) })),
    },
  };
  return { checkpoint, data, complete: { checkpoint_complete: { last_op_id: lastOp } } };
}

function countIn(ops, bucket) {
  let count = 0;
  for (let line = bucket; line * OPS_PER_LINE < ops; line += BUCKETS) {
    count += Math.min(OPS_PER_LINE, ops - line * OPS_PER_LINE);
  }
  return count;
}

/** The stream as an ordered list of line objects. */
export function streamLines(ops, options) {
  const { checkpoint, data, complete } = benchmarkStream(ops, options);
  return [checkpoint, ...data, complete];
}

// A minimal BSON encoder for sync lines: documents, arrays, strings,
// booleans, null, int32 / int64 / double numbers and bigints.
export function bson(doc) {
  const parts = [];
  let size = 0;
  const push = (bytes) => { parts.push(bytes); size += bytes.length; };
  const enc = new TextEncoder();
  const cstring = (s) => { const b = enc.encode(s); const out = new Uint8Array(b.length + 1); out.set(b); return out; };
  const int32 = (n) => { const b = new Uint8Array(4); new DataView(b.buffer).setInt32(0, n, true); return b; };

  function element(name, value) {
    const key = cstring(name);
    if (value === null || value === undefined) { push(Uint8Array.of(0x0a)); push(key); return; }
    if (typeof value === 'boolean') { push(Uint8Array.of(0x08)); push(key); push(Uint8Array.of(value ? 1 : 0)); return; }
    if (typeof value === 'string') {
      const b = enc.encode(value);
      push(Uint8Array.of(0x02)); push(key); push(int32(b.length + 1)); push(b); push(Uint8Array.of(0));
      return;
    }
    if (typeof value === 'bigint' || (typeof value === 'number' && Number.isInteger(value) && (value > 2147483647 || value < -2147483648))) {
      const b = new Uint8Array(8); new DataView(b.buffer).setBigInt64(0, BigInt(value), true);
      push(Uint8Array.of(0x12)); push(key); push(b); return;
    }
    if (typeof value === 'number' && Number.isInteger(value)) { push(Uint8Array.of(0x10)); push(key); push(int32(value)); return; }
    if (typeof value === 'number') {
      const b = new Uint8Array(8); new DataView(b.buffer).setFloat64(0, value, true);
      push(Uint8Array.of(0x01)); push(key); push(b); return;
    }
    if (Array.isArray(value)) {
      push(Uint8Array.of(0x04)); push(key); push(bson(Object.fromEntries(value.map((v, i) => [String(i), v])))); return;
    }
    push(Uint8Array.of(0x03)); push(key); push(bson(value));
  }

  for (const [k, v] of Object.entries(doc)) element(k, v);
  const out = new Uint8Array(size + 5);
  new DataView(out.buffer).setInt32(0, size + 5, true);
  let at = 4;
  for (const p of parts) { out.set(p, at); at += p.length; }
  out[at] = 0;
  return out;
}

// Writes the NDJSON stream of N ops to stdout (for the native benchmark):
//   node wasm/test/stream.mjs 1000000 > stream.ndjson
if (import.meta.url === `file://${process.argv[1]}`) {
  const ops = Number(process.argv[2] || 100000);
  const { stdout } = process;
  const lines = streamLines(ops);
  let i = 0;
  const write = () => {
    while (i < lines.length) {
      if (!stdout.write(JSON.stringify(lines[i++]) + '\n')) { stdout.once('drain', write); return; }
    }
  };
  write();
}

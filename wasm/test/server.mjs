// The test fixture server on 127.0.0.1: serves the demo page (wasm/www),
// the built package (wasm/pkg) and a generated sync stream.
//
//   node wasm/test/server.mjs [--port 8080]
//   POST /sync/stream?ops=100000   (body: the EstablishSyncStream request)
//
// The stream is benchmarkStream(ops) from stream.mjs, honouring the
// request's `after` per bucket. NDJSON by default; length-prefixed BSON
// documents when the request accepts application/vnd.powersync.bson-stream.
// Lines are built before the response starts and cached per size, so a
// benchmark measures the client, not the generator.

import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchmarkStream, bson } from './stream.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const types = { '.html': 'text/html', '.js': 'text/javascript', '.mjs': 'text/javascript', '.wasm': 'application/wasm', '.json': 'application/json', '.ts': 'text/plain', '.css': 'text/css' };

const cache = new Map(); // ops -> {text: Buffer[], binary: Buffer[]|null}

function linesFor(ops, after, binary) {
  const fresh = Object.keys(after).length === 0;
  let entry = fresh ? cache.get(ops) : null;
  if (entry == null) {
    const s = benchmarkStream(ops, { after });
    entry = { objects: [s.checkpoint, ...s.data, s.complete], text: null, binary: null };
    if (fresh) {
      cache.clear();
      cache.set(ops, entry);
    }
  }
  if (binary) entry.binary ??= entry.objects.map((o) => Buffer.from(bson(o)));
  else entry.text ??= entry.objects.map((o) => Buffer.from(JSON.stringify(o) + '\n'));
  return binary ? entry.binary : entry.text;
}

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

async function stream(req, res, url) {
  const ops = Number(url.searchParams.get('ops') || 1000);
  if (!Number.isInteger(ops) || ops < 0 || ops > 20_000_000) {
    res.writeHead(400).end('bad ops');
    return;
  }
  let request = {};
  try {
    const body = await readBody(req);
    request = body ? JSON.parse(body) : {};
  } catch {
    res.writeHead(400).end('bad request body');
    return;
  }
  const after = {};
  for (const b of request.buckets || []) if (b.after != null) after[b.name] = b.after;
  const binary = (req.headers.accept || '').includes('application/vnd.powersync.bson-stream');
  const lines = linesFor(ops, after, binary);
  res.writeHead(200, {
    'content-type': binary ? 'application/vnd.powersync.bson-stream' : 'application/x-ndjson',
    'cache-control': 'no-store',
  });
  let i = 0;
  const write = () => {
    while (i < lines.length) {
      if (!res.write(lines[i++])) {
        res.once('drain', write);
        return;
      }
    }
    res.end();
  };
  res.on('close', () => { i = lines.length; });
  write();
}

function serveFile(res, file) {
  fs.stat(file, (err, st) => {
    if (err || !st.isFile()) {
      res.writeHead(404).end('not found');
      return;
    }
    res.writeHead(200, {
      'content-type': types[path.extname(file)] || 'application/octet-stream',
      'content-length': st.size,
      'cache-control': 'no-store',
    });
    fs.createReadStream(file).pipe(res);
  });
}

export function startServer({ port = 0, host = '127.0.0.1' } = {}) {
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://localhost');
    if (url.pathname === '/sync/stream') {
      stream(req, res, url).catch((e) => { res.destroy(e); });
      return;
    }
    let rel = url.pathname === '/' ? '/www/index.html' : decodeURIComponent(url.pathname);
    const file = path.resolve(root, '.' + rel);
    const allowed = ['www', 'pkg'].some((d) => file.startsWith(path.join(root, d) + path.sep));
    if (!allowed) {
      res.writeHead(404).end('not found');
      return;
    }
    serveFile(res, file);
  });
  return new Promise((resolve) => {
    server.listen(port, host, () => {
      const { port: actual } = server.address();
      resolve({ server, url: `http://${host}:${actual}`, close: () => new Promise((r) => server.close(r)) });
    });
  });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const i = process.argv.indexOf('--port');
  const port = i > 0 ? Number(process.argv[i + 1]) : 8080;
  startServer({ port }).then(({ url }) => console.log(`oplite demo on ${url}/`));
}

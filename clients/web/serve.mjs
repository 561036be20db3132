// The web test's HTTP server on 127.0.0.1: the page and its bundle, the
// oplite adapter package, and everything else passed through to the
// loopback service (so the SDK, the page and the service share an origin
// and no CORS is involved). The service can change between runs
// (setService); a stream the service cuts off is cut off for the browser
// too, as the planned drop of the scenario needs.
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';

const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.mjs': 'text/javascript', '.wasm': 'application/wasm', '.json': 'application/json', '.map': 'application/json' };

/** roots: {urlPrefix: directory}. Resolves to {url, setService(url), close()}. */
export function startServer(roots) {
  let service = null;
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://127.0.0.1');
    for (const [prefix, dir] of Object.entries(roots)) {
      if (!url.pathname.startsWith(prefix)) continue;
      const file = path.join(dir, decodeURIComponent(url.pathname.slice(prefix.length)));
      if (!file.startsWith(dir) || !fs.existsSync(file) || !fs.statSync(file).isFile()) {
        res.writeHead(404).end('not found');
        return;
      }
      res.writeHead(200, {
        'content-type': TYPES[path.extname(file)] ?? 'application/octet-stream',
        'cache-control': 'no-store',
      });
      fs.createReadStream(file).pipe(res);
      return;
    }
    if (service == null) {
      res.writeHead(503).end('no service');
      return;
    }
    const upstream = http.request(new URL(req.url, service), { method: req.method, headers: req.headers }, (reply) => {
      res.writeHead(reply.statusCode, reply.headers);
      reply.pipe(res);
      // The service dropped the stream: drop the browser's response too,
      // but only once everything the service sent before is on its way,
      // so the browser gets the same lines a direct connection would
      // (the socket is closed without the last chunk: a network error).
      const cut = () => {
        if (reply.readableLength > 0 || res.writableLength > 0) setTimeout(cut, 5);
        else res.socket?.end();
      };
      reply.on('aborted', cut);
      reply.on('error', cut);
    });
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      resolve({
        url: `http://127.0.0.1:${server.address().port}`,
        setService(url) { service = url; },
        close: () => new Promise((done) => { server.closeAllConnections(); server.close(done); }),
      });
    });
  });
}

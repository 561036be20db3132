// The example's one command: starts oplite's loopback test service with the
// recorded todo-list session, and serves the page on one origin with it.
//
//   node serve.mjs [--port 8080]
//
// Then open the URL it prints. The page, its modules and node_modules are
// served as they are (no bundler); the service's endpoints are passed
// through, so the page, the SDK and the service share an origin and no CORS
// is involved. Ctrl-C stops both. test.mjs starts the same with startExample().
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '../..');
export const recordedSession = path.join(repo, 'test-data/recorded/todo-list/stream.ndjson');

const PAGE_FILES = ['index.html', 'app.mjs', 'schema.mjs', 'connector.mjs', 'style.css'];
const SERVICE_PATHS = ['/sync/', '/write-checkpoint2.json', '/upload', '/dev/'];
const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.json': 'application/json',
  '.map': 'application/json',
  // WebAssembly.instantiateStreaming accepts only this type.
  '.wasm': 'application/wasm',
};

/** Starts the service and the page server; resolves to { url, serviceUrl, stop }. */
export async function startExample({ port = 0 } = {}) {
  checkInstalled();
  const service = await startService();
  try {
    const server = await listen(http.createServer((req, res) => handle(req, res, service.url)), port);
    const url = `http://127.0.0.1:${server.address().port}`;
    const stop = async () => {
      service.stop();
      server.closeAllConnections();
      await new Promise((done) => server.close(done));
    };
    return { url, serviceUrl: service.url, stop };
  } catch (e) {
    service.stop();
    throw e;
  }
}

// The packages npm installs from the registry and from dist/npm/.
function checkInstalled() {
  for (const file of ['@powersync/web/lib/index.js', '@oplite/powersync-web/index.js', '@oplite/powersync-web/oplite_wasm_bg.wasm']) {
    if (!fs.existsSync(path.join(here, 'node_modules', file))) {
      throw new Error(`node_modules/${file} is missing: run \`npm install\` in examples/web ` +
        "(after `bash scripts/package.sh` at the repository's root, which writes dist/npm/oplite-powersync-web-0.1.0.tgz)");
    }
  }
  // `npm install` keeps an installed file: tarball even after a rebuild:
  // compare its checksum with the one npm noted at install.
  const spec = JSON.parse(fs.readFileSync(path.join(here, 'package.json'), 'utf8')).dependencies['@oplite/powersync-web'];
  const tarball = path.resolve(here, spec.replace(/^file:/, ''));
  const noted = readJson(path.join(here, 'node_modules/.package-lock.json'))?.packages?.['node_modules/@oplite/powersync-web']?.integrity;
  if (noted && fs.existsSync(tarball) && noted !== `sha512-${createHash('sha512').update(fs.readFileSync(tarball)).digest('base64')}`) {
    console.warn(`serve.mjs: node_modules/@oplite/powersync-web is not the build in ${path.relative(here, tarball)}; ` +
      `to use that one: npm install ${path.relative(here, tarball)}`);
  }
}

function readJson(file) {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch {
    return null;
  }
}

// The loopback stand-in for the PowerSync service (not a production server).
function serviceBinary() {
  const candidates = process.env.OPLITE_TEST_SERVER
    ? [process.env.OPLITE_TEST_SERVER]
    : [path.join(repo, 'dist/bin/oplite-test-server'), path.join(repo, 'target/release/oplite-test-server')];
  const found = candidates.find((file) => fs.existsSync(file));
  if (!found) {
    throw new Error(`oplite-test-server is missing (looked for ${candidates.join(' and ')}): ` +
      "run `bash scripts/package.sh` at the repository's root (or `cargo build --release -p oplite-test-server`)");
  }
  return found;
}

function startService() {
  const binary = serviceBinary();
  if (!fs.existsSync(recordedSession)) throw new Error(`${recordedSession} is missing: is this a whole clone of the repository?`);
  const child = spawn(binary, ['--recorded', recordedSession], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => { child.kill(); reject(new Error(`${binary} did not say where it listens within 10 s`)); }, 10_000);
    child.stdout.on('data', (chunk) => {
      out += chunk;
      const url = out.match(/listening on (http:\/\/\S+)/)?.[1];
      if (url) {
        clearTimeout(timer);
        // Whichever way this process ends, the service ends with it.
        const stop = () => child.kill();
        process.on('exit', stop);
        resolve({ url, stop: () => { process.off('exit', stop); stop(); } });
      }
    });
    child.on('error', (e) => { clearTimeout(timer); reject(new Error(`could not start ${binary}: ${e.message}`)); });
    child.on('exit', (code) => { clearTimeout(timer); reject(new Error(`${binary} exited with ${code} before it listened`)); });
  });
}

function listen(server, port) {
  return new Promise((resolve, reject) => {
    server.once('error', (e) => reject(e.code === 'EADDRINUSE' ? new Error(`port ${port} is in use: pass --port N (0 picks a free one)`) : e));
    server.listen(port, '127.0.0.1', () => resolve(server));
  });
}

function handle(req, res, serviceUrl) {
  const { pathname } = new URL(req.url, 'http://127.0.0.1');
  if (SERVICE_PATHS.some((p) => pathname.startsWith(p))) return proxy(req, res, serviceUrl);
  const name = pathname === '/' ? 'index.html' : decodeURIComponent(pathname.slice(1));
  if (PAGE_FILES.includes(name)) return sendFile(res, path.join(here, name));
  if (name.startsWith('node_modules/')) {
    const file = path.resolve(here, name);
    if (file.startsWith(path.join(here, 'node_modules') + path.sep)) return sendFile(res, file);
  }
  res.writeHead(404, { 'content-type': 'text/plain' }).end(`${pathname} is not part of the example\n`);
}

function sendFile(res, file) {
  fs.stat(file, (error, stat) => {
    if (error || !stat.isFile()) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end(`${path.relative(here, file)} does not exist\n`);
      return;
    }
    res.writeHead(200, {
      'content-type': TYPES[path.extname(file)] ?? 'application/octet-stream',
      'content-length': stat.size,
      // While you edit the example, a reload shows the edit.
      'cache-control': 'no-cache',
    });
    fs.createReadStream(file).pipe(res);
  });
}

// Passes a request to the service and its answer back as it comes (the
// sync stream stays open for as long as the SDK is connected).
function proxy(req, res, serviceUrl) {
  const upstream = http.request(new URL(req.url, serviceUrl), { method: req.method, headers: req.headers }, (reply) => {
    res.writeHead(reply.statusCode, reply.headers);
    reply.pipe(res);
  });
  upstream.on('error', (e) => {
    if (res.headersSent) res.destroy();
    else res.writeHead(502, { 'content-type': 'text/plain' }).end(`the loopback service did not answer: ${e.message}\n`);
  });
  // The page went away (a reload, a disconnect): end the stream there too.
  res.on('close', () => upstream.destroy());
  req.pipe(upstream);
}

async function main() {
  const { values } = parseArgs({ options: { port: { type: 'string', default: '8080' } } });
  const example = await startExample({ port: Number(values.port) });
  console.log(`loopback service on ${example.serviceUrl}, serving the recorded todo-list session`);
  console.log(`open ${example.url}/ (OPFS) or ${example.url}/?vfs=idb (IndexedDB); Ctrl-C stops`);
  const stop = () => example.stop().then(() => process.exit(0));
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((e) => {
    console.error(`serve.mjs: ${e.message}`);
    process.exit(1);
  });
}

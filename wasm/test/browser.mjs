// Headless Chromium for the browser tests and the benchmark: Debian's
// chromium driven by playwright-core, a fresh profile per launch, pages
// served by the fixture server on 127.0.0.1.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { startServer } from './server.mjs';

export const CHROMIUM = process.env.OPLITE_CHROMIUM || '/usr/bin/chromium';

const FLAGS = [
  '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
];

/** Starts the fixture server and Chromium; returns {url, context, newPage, close}. */
export async function launch() {
  const server = await startServer();
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'oplite-chromium-'));
  // launchPersistentContext passes --user-data-dir=<profile>.
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM, headless: true, args: FLAGS, timeout: 60_000,
  });
  const logs = [];
  const newPage = async () => {
    const page = await context.newPage();
    page.on('console', (m) => logs.push(`[console] ${m.text()}`));
    page.on('pageerror', (e) => logs.push(`[pageerror] ${e.message}`));
    await page.goto(`${server.url}/`);
    await page.waitForFunction(() => window.demo != null);
    return page;
  };
  return {
    url: server.url,
    context,
    newPage,
    logs,
    async close() {
      await context.close().catch(() => {});
      await server.close();
      fs.rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** Calls a method of the demo worker in `page` (see www/worker.js). */
export function call(page, method, args = {}) {
  return page.evaluate(([m, a]) => window.demo.call(m, a), [method, args]);
}

/** Like call(), but resolves to {error: {name, message, code}} instead of throwing. */
export function attempt(page, method, args = {}) {
  return page.evaluate(([m, a]) => window.demo.call(m, a).then(
    (value) => ({ value }),
    (e) => ({ error: { name: e.name, message: e.message, code: e.code } }),
  ), [method, args]);
}

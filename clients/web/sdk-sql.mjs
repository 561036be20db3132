// The SQL statements of the installed @powersync packages that call
// powersync_control: string literals in their JavaScript that start a
// SELECT and name the function (run.mjs checks the adapter recognises each).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), 'node_modules/@powersync');
const LITERAL = /(['"`])(\s*select\b(?:(?!\1)[^\\]|\\.)*?\bpowersync_control\b(?:(?!\1)[^\\]|\\.)*)\1/gi;

function* jsFiles(dir) {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) yield* jsFiles(full);
    else if (/\.(c|m)?js$/.test(entry.name)) yield full;
  }
}

/** Each distinct statement, with none found an error (the scan would prove nothing). */
export function sdkControlCalls() {
  const found = new Set();
  for (const file of jsFiles(root)) {
    for (const match of fs.readFileSync(file, 'utf8').matchAll(LITERAL)) found.add(match[2]);
  }
  if (found.size === 0) throw new Error(`no powersync_control statement found under ${root}`);
  return [...found];
}

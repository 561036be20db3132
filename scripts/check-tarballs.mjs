// Run by scripts/test-examples.sh inside a fresh app directory where
// `npm install ./dist/npm/...tgz` installed oplite's two web packages:
// checks that they import by name and work, as an app would use them.
// Prints one line per check; exits 1 if any failed.
import { existsSync } from 'node:fs';

let failed = 0;
function check(what, ok, detail = '') {
  if (!ok) failed++;
  console.log(`${ok ? 'ok' : 'FAILED'} - ${what}${ok || !detail ? '' : `: ${detail}`}`);
}

try {
  const { open } = await import('oplite-wasm');
  const db = await open({ name: 'fresh-app', vfs: 'memory' });
  const inTransaction = async (sql, params) => {
    await db.execute('BEGIN');
    await db.execute(sql, params);
    await db.execute('COMMIT');
  };
  await inTransaction('SELECT powersync_init()');
  const [{ v }] = await db.query('SELECT oplite_version() AS v');
  check('oplite-wasm opens a database with oplite loaded', /^oplite /.test(v), v);
  const schema = { tables: [{ name: 'notes', columns: [{ name: 'body', type: 'text' }] }] };
  await inTransaction('SELECT powersync_replace_schema(?)', [JSON.stringify(schema)]);
  await db.execute("INSERT INTO notes (id, body) VALUES (uuid(), 'hello')");
  const [{ n }] = await db.query('SELECT count(*) AS n FROM ps_crud');
  check('a local write reaches the upload queue', n === 1, String(n));
  await db.close();
} catch (e) {
  check('oplite-wasm imports and runs in Node', false, e.stack ?? e.message);
}

try {
  const adapter = await import('@oplite/powersync-web');
  check('@oplite/powersync-web exports OpliteOpenFactory', typeof adapter.OpliteOpenFactory === 'function');
} catch (e) {
  check('@oplite/powersync-web imports', false, e.stack ?? e.message);
}
const wasm = new URL('./node_modules/@oplite/powersync-web/oplite_wasm_bg.wasm', `file://${process.cwd()}/`);
check('@oplite/powersync-web carries its wasm module', existsSync(wasm));
process.exit(failed === 0 ? 0 : 1);

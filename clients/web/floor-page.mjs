// The storage floor of the web benchmark (bench.mjs; docs/web-sdk.md,
// "The floor"), bundled into the test page: oplite-wasm, through the
// adapter without the SDK, writes the database the drop-in scenario's first
// sync of `rows` rows ends with (the two-tables dataset of the loopback
// service: lists and todos, one op each, in five buckets) with plain
// INSERT ... SELECT statements in transactions of 100,000 rows: the oplog
// with its indexes, the buckets, and the typed tables with the schema's
// index. No lines are parsed, no checksums added, no sync engine runs: what
// is left is what the storage costs. window.storageFloor({vfs, rows})
// resolves to the milliseconds and the file's size.
import * as sdk from '@powersync/web';
import { OpliteDBAdapter } from '@oplite/powersync-web';
import { dropInSchema } from '../scenario/drop-in.mjs';

const BATCH = 100_000;
const BUCKETS = ['lists', 'todos0', 'todos1', 'todos2', 'todos3'];

// Op i (0-based) as the two-tables dataset has it: the first `lists` ops
// are lists, the rest todos in four buckets by index (test-server/src/two_tables.rs).
// ?4 to ?8: the ids of the buckets lists and todos0 to todos3.
const ROWS = `WITH RECURSIVE n(i) AS (SELECT ?1 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ?2),
  op AS (SELECT i, i - ?3 AS t, i < ?3 AS is_list FROM n)`;
const OPLOG = `${ROWS}
  INSERT INTO ps_oplog(bucket, op_id, row_type, row_id, key, data, hash)
  SELECT CASE WHEN is_list THEN ?4 ELSE CASE t % 4 WHEN 0 THEN ?5 WHEN 1 THEN ?6 WHEN 2 THEN ?7 ELSE ?8 END END, i + 1,
         CASE WHEN is_list THEN 'lists' ELSE 'todos' END,
         CASE WHEN is_list THEN 'list' || i ELSE 'todo' || t END,
         CASE WHEN is_list THEN 'lists/list' || i || '/null' ELSE 'todos/todo' || t || '/null' END,
         CASE WHEN is_list THEN json_object('name', 'List ' || i, 'created_at', printf('2026-01-01T00:00:%02dZ', i % 60))
              ELSE json_object('description', 'Todo ' || t, 'done', t % 7 = 0, 'list_id', 'list' || (t % ?3)) END,
         (i + 1) * 625341585 % 4294967296
  FROM op`;
const LISTS = `${ROWS}
  INSERT INTO ps_data__lists(id, name, created_at)
  SELECT 'list' || i, 'List ' || i, printf('2026-01-01T00:00:%02dZ', i % 60) FROM op WHERE is_list`;
const TODOS = `${ROWS}
  INSERT INTO ps_data__todos(id, list_id, description, done)
  SELECT 'todo' || t, 'list' || (t % ?3), 'Todo ' || t, t % 7 = 0 FROM op WHERE NOT is_list`;

window.storageFloor = async ({ vfs, rows }) => {
  const db = new OpliteDBAdapter({ dbFilename: 'floor.db', vfs, worker: '/oplite/oplite-worker.js', multiTab: false });
  try {
    const lists = Math.min(Math.max(Math.floor(rows / 100), 1), rows);
    await db.writeTransaction(async (tx) => {
      await tx.execute('SELECT powersync_init()');
      await tx.execute('SELECT powersync_replace_schema(?)', [JSON.stringify(dropInSchema(sdk, false).toJSON())]);
      for (const name of BUCKETS) await tx.execute('INSERT INTO ps_buckets(name) VALUES (?)', [name]);
    });
    const ids = [];
    for (const name of BUCKETS) ids.push((await db.get('SELECT id FROM ps_buckets WHERE name = ?', [name])).id);
    const started = performance.now();
    for (let from = 0; from < rows; from += BATCH) {
      const to = Math.min(from + BATCH, rows);
      await db.writeTransaction(async (tx) => {
        await tx.execute(OPLOG, [from, to, lists, ...ids]);
        for (const sql of [LISTS, TODOS]) await tx.execute(sql, [from, to, lists]);
        if (to === rows) await tx.execute('UPDATE ps_buckets SET last_op = ?1, last_applied_op = ?1', [rows]);
      });
    }
    await db.flush();
    const ms = Math.round(performance.now() - started);
    const size = (await db.get('SELECT page_count * page_size AS bytes FROM pragma_page_count(), pragma_page_size()')).bytes;
    const counts = await db.get('SELECT (SELECT count(*) FROM ps_oplog) AS ops, (SELECT count(*) FROM ps_data__lists) + (SELECT count(*) FROM ps_data__todos) AS rows');
    return { ms, bytes: size, ...counts };
  } finally {
    await db.close();
  }
};

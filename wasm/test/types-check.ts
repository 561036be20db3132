// Compile-only check of oplite.d.ts (tsc --noEmit, run by scripts/test-wasm.sh):
// the API as an app would use it must type-check in strict mode.
import { open, syncStream, DatabaseLockedError, type Database, type Reader, type Row, type Stats } from '../pkg/oplite.js';

async function example(): Promise<void> {
  let db: Database;
  try {
    db = await open({ name: 'app', vfs: 'opfs', onLocked: 'error' });
  } catch (e) {
    if (e instanceof DatabaseLockedError) return;
    throw e;
  }
  const stop: () => void = db.onTablesChanged((tables: string[]) => console.log(tables));
  const r = await db.execute('INSERT INTO t(a, b) VALUES (?, ?)', [1, 'x']);
  const id: number | bigint = r.lastInsertRowid;
  const rows: Row[] = await db.query('SELECT * FROM t WHERE a = :a', { a: 1n });
  const first: Row | undefined = await db.get('SELECT 1 AS one');
  const n: number = await db.transaction((tx) => {
    tx.execute('DELETE FROM t');
    return tx.query('SELECT count(*) AS n FROM t').length;
  });
  const instructions = await db.control('start', JSON.stringify({ parameters: {} }));
  const result = await syncStream(db, { url: '/sync/stream', binary: true, onStatus: (s) => console.log(s) });
  const completed: boolean = result.completed;
  const stats: Stats = await db.stats({ reset: true });
  const temp: number = stats.tempBytesWritten;
  const stepped: boolean = await db.applyInSteps('line_text', '{"checkpoint_complete":{"last_op_id":"1"}}');
  const steps: number = stats.applySteps + (stats.lastApply?.end ?? 0) + stats.slowSteps.length;
  const reader: Reader = await db.openReader();
  const old: Row[] = await reader.query('SELECT count(*) AS n FROM t');
  const raw: unknown[][] = (await reader.executeRaw('SELECT a FROM t')).rawRows;
  await reader.close();
  await db.flush();
  stop();
  await db.close();
  console.log(id, rows, first, n, instructions, completed, temp, stepped, steps, old, raw);
}

void example;

//! Benchmarks for the schema module: writes through views (issue 5) and
//! reads from synced tables (issue 11), each against a plain SQLite table
//! with the same columns and against the reference core, side by side.
//!
//! ```sh
//! cargo bench -p oplite --no-default-features --features bundled --bench views
//! # fewer rows while iterating:
//! OPLITE_BENCH_SCALE=0.1 cargo bench -p oplite --no-default-features --features bundled --bench views
//! ```
//!
//! Prints markdown tables: the median of several runs per cell and the
//! multiplier against the plain table. Nothing here asserts on time.
//!
//! For profiling: `OPLITE_BENCH_ONLY=<plain|floor|oplite|reference>` runs the
//! other targets once only; `OPLITE_BENCH_SKIP_AUTOCOMMIT=1` skips the slow
//! autocommit rows; `views profile <target>` runs one in-transaction write
//! round on one target (`OPLITE_BENCH_INSERT_ONLY=1`: inserts only), e.g.
//! under `valgrind --tool=callgrind` or `perf record`.

#[path = "../tests/common/mod.rs"]
mod common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use rusqlite::{params, Connection};

/// Which database a measurement runs on.
#[derive(Clone, Copy, PartialEq)]
enum Target {
    Plain,
    /// Plain SQLite with oplite's data table, view and INSTEAD OF triggers
    /// that only write the table (no upload queue): what SQLite's view
    /// machinery costs by itself.
    ViewFloor,
    Oplite,
    Reference,
}

const TARGETS: [Target; 3] = [Target::Plain, Target::Oplite, Target::Reference];
const WRITE_TARGETS: [Target; 4] = [Target::Plain, Target::ViewFloor, Target::Oplite, Target::Reference];

/// `OPLITE_BENCH_ONLY=oplite` (or plain, reference) runs the other targets
/// once only, for profiling one of them.
fn profiled(target: Target) -> bool {
    std::env::var("OPLITE_BENCH_ONLY").map_or(true, |only| only == target_name(target))
}

fn target_name(target: Target) -> &'static str {
    match target {
        Target::Plain => "plain",
        Target::ViewFloor => "floor",
        Target::Oplite => "oplite",
        Target::Reference => "reference",
    }
}

fn scale() -> f64 {
    std::env::var("OPLITE_BENCH_SCALE").ok().and_then(|s| s.parse().ok()).unwrap_or(1.0)
}

fn scaled(n: usize) -> usize {
    ((n as f64 * scale()) as usize).max(10)
}

fn temp_path(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("oplite-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    path
}

/// Opens a file database for `target`, in WAL mode with `synchronous`.
fn open(target: Target, name: &str, synchronous: &str) -> Connection {
    let db = Connection::open(temp_path(name)).unwrap();
    db.execute_batch(&format!("PRAGMA journal_mode = WAL; PRAGMA synchronous = {synchronous}; PRAGMA cache_size = -65536;"))
        .unwrap();
    match target {
        Target::Plain | Target::ViewFloor => {}
        Target::Oplite => oplite::register(&db).unwrap(),
        Target::Reference => common::load(&db, &common::reference_so(), "sqlite3_powersync_init").unwrap(),
    }
    if matches!(target, Target::Oplite | Target::Reference) {
        db.execute_batch("BEGIN; SELECT powersync_init(); COMMIT;").unwrap();
    }
    db
}

fn replace_schema(db: &Connection, schema: &str) {
    db.execute_batch("BEGIN").unwrap();
    db.query_row("SELECT powersync_replace_schema(?1)", [schema], |_| Ok(())).unwrap();
    db.execute_batch("COMMIT").unwrap();
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

fn ratio(d: Duration, base: Duration) -> String {
    format!("{:.2}x", d.as_secs_f64() / base.as_secs_f64())
}

// ---------------------------------------------------------------------------
// Writes through views (issue 5).

const WRITE_SCHEMA: &str = r#"{"tables":[{"name":"items","columns":[
  {"name":"name","type":"text"},{"name":"n","type":"integer"},{"name":"x","type":"real"},{"name":"category","type":"text"}]}]}"#;
const WRITE_PLAIN: &str = "CREATE TABLE items(id TEXT PRIMARY KEY NOT NULL, name TEXT, n INTEGER, x REAL, category TEXT)";
const WRITE_FLOOR: &str = r#"
CREATE TABLE ps_data__items(id TEXT PRIMARY KEY NOT NULL, "name", "n", "x", "category", ps_undeclared TEXT);
CREATE VIEW items(id, name, n, x, category) AS
  SELECT id, CAST(name AS TEXT), CAST(n AS INTEGER), CAST(x AS REAL), CAST(category AS TEXT) FROM ps_data__items;
CREATE TRIGGER items_insert INSTEAD OF INSERT ON items BEGIN
  INSERT INTO ps_data__items(id, name, n, x, category) VALUES (NEW.id, NEW.name, NEW.n, NEW.x, NEW.category); END;
CREATE TRIGGER items_update INSTEAD OF UPDATE ON items BEGIN
  UPDATE ps_data__items SET name = NEW.name, n = NEW.n, x = NEW.x, category = NEW.category WHERE id = NEW.id; END;
CREATE TRIGGER items_delete INSTEAD OF DELETE ON items BEGIN DELETE FROM ps_data__items WHERE id = OLD.id; END;
"#;

fn write_db(target: Target, synchronous: &str) -> Connection {
    let db = open(target, &format!("write-{}.db", target_name(target)), synchronous);
    match target {
        Target::Plain => db.execute_batch(WRITE_PLAIN).unwrap(),
        Target::ViewFloor => db.execute_batch(WRITE_FLOOR).unwrap(),
        Target::Oplite | Target::Reference => replace_schema(&db, WRITE_SCHEMA),
    }
    db
}

/// Times inserts, updates and deletes of `rows` single-row statements, in
/// one transaction or each in its own.
fn write_run(target: Target, rows: usize, in_transaction: bool) -> [Duration; 3] {
    let db = write_db(target, if in_transaction { "NORMAL" } else { "FULL" });
    let timed = |sql: &str, bind: &dyn Fn(&mut rusqlite::Statement<'_>, usize)| {
        let mut stmt = db.prepare(sql).unwrap();
        let start = Instant::now();
        if in_transaction {
            db.execute_batch("BEGIN").unwrap();
        }
        for i in 0..rows {
            bind(&mut stmt, i);
        }
        if in_transaction {
            db.execute_batch("COMMIT").unwrap();
        }
        start.elapsed()
    };
    let insert = timed("INSERT INTO items(id, name, n, x, category) VALUES (?1, ?2, ?3, ?4, ?5)", &|s, i| {
        s.execute(params![format!("item-{i:07}"), format!("name {i}"), i as i64, i as f64 * 0.25, ["a", "b", "c"][i % 3]])
            .unwrap();
    });
    if std::env::var("OPLITE_BENCH_INSERT_ONLY").is_ok() {
        return [insert, Duration::ZERO, Duration::ZERO];
    }
    let update = timed("UPDATE items SET name = ?2, n = ?3 WHERE id = ?1", &|s, i| {
        s.execute(params![format!("item-{i:07}"), format!("renamed {i}"), (i * 7) as i64]).unwrap();
    });
    let delete = timed("DELETE FROM items WHERE id = ?1", &|s, i| {
        s.execute([format!("item-{i:07}")]).unwrap();
    });
    [insert, update, delete]
}

fn write_bench() {
    let configs = [("in one transaction", true, scaled(100_000), 5), ("autocommit, WAL, synchronous=FULL", false, scaled(2_000), 3)];
    println!("## Writes through views\n");
    println!("Median of the runs; the targets take turns in each round, so background load hits them alike.\n");
    println!("| operation | mode | rows | plain table | view, table only | oplite view | reference view | floor / plain | oplite / plain | reference / plain | oplite / reference |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    let skip_autocommit = std::env::var("OPLITE_BENCH_SKIP_AUTOCOMMIT").is_ok();
    for (mode, in_tx, rows, runs) in configs {
        if skip_autocommit && !in_tx {
            continue;
        }
        // per target, per operation, the times of every run
        let mut times: Vec<[Vec<Duration>; 3]> = WRITE_TARGETS.iter().map(|_| [Vec::new(), Vec::new(), Vec::new()]).collect();
        for round in 0..runs {
            for (t, &target) in WRITE_TARGETS.iter().enumerate() {
                if round > 0 && !profiled(target) {
                    continue;
                }
                for (k, time) in write_run(target, rows, in_tx).into_iter().enumerate() {
                    times[t][k].push(time);
                }
            }
        }
        let results: Vec<[Duration; 3]> = times.into_iter().map(|per_op| per_op.map(median)).collect();
        for (k, op) in ["insert", "update", "delete"].iter().enumerate() {
            let (p, f, o, r) = (results[0][k], results[1][k], results[2][k], results[3][k]);
            println!(
                "| {op} | {mode} | {rows} | {} | {} | {} | {} | {} | {} | {} | {} |",
                ms(p),
                ms(f),
                ms(o),
                ms(r),
                ratio(f, p),
                ratio(o, p),
                ratio(r, p),
                ratio(o, r)
            );
        }
    }
    println!();
}

// ---------------------------------------------------------------------------
// Reads from synced tables (issue 11).

const READ_SCHEMA: &str = r#"{"tables":[
  {"name":"orders","columns":[{"name":"customer_id","type":"text"},{"name":"amount","type":"real"},{"name":"quantity","type":"integer"},
    {"name":"status","type":"text"},{"name":"created","type":"integer"}],
   "indexes":[{"name":"by_created","columns":[{"name":"created","ascending":true,"type":"integer"}]}]},
  {"name":"customers","columns":[{"name":"name","type":"text"},{"name":"country","type":"text"}]}]}"#;
const READ_PLAIN: &str = "CREATE TABLE orders(id TEXT PRIMARY KEY NOT NULL, customer_id TEXT, amount REAL, quantity INTEGER, status TEXT, created INTEGER);
CREATE INDEX orders_by_created ON orders(created);
CREATE TABLE customers(id TEXT PRIMARY KEY NOT NULL, name TEXT, country TEXT);";

const STATUSES: [&str; 5] = ["new", "paid", "shipped", "delivered", "cancelled"];

fn order(i: usize) -> (String, String) {
    let data = serde_json::json!({
        "customer_id": format!("c{:05}", (i * 7919) % customers_count()),
        "amount": ((i * 37) % 10_000) as f64 / 4.0,
        "quantity": (i % 9) as i64 + 1,
        "status": STATUSES[i % STATUSES.len()],
        "created": 1_700_000_000 + i as i64 * 10,
    });
    (format!("o{i:07}"), data.to_string())
}

fn customer(i: usize) -> (String, String) {
    let country = ["NZ", "DE", "BR", "JP"][i % 4];
    let data = serde_json::json!({"name": format!("customer {i}"), "country": country});
    (format!("c{i:05}"), data.to_string())
}

fn orders_count() -> usize {
    scaled(200_000)
}

fn customers_count() -> usize {
    scaled(20_000)
}

/// Loads the reference through its sync protocol: one checkpoint, data
/// lines of 1000 ops, checkpoint_complete.
fn load_reference(db: &Connection) {
    let control = |op: &str, payload: &str| {
        db.execute_batch("BEGIN").unwrap();
        let out: String = db.query_row("SELECT powersync_control(?1, ?2)", [op, payload], |r| r.get(0)).unwrap();
        db.execute_batch("COMMIT").unwrap();
        out
    };
    db.execute_batch("BEGIN; SELECT powersync_control('start', NULL); COMMIT;").unwrap();
    let total = orders_count() + customers_count();
    let checkpoint = serde_json::json!({"checkpoint": {"last_op_id": total.to_string(), "buckets": [
        {"bucket": "b", "checksum": 0, "priority": 3, "count": total}]}});
    control("line_text", &checkpoint.to_string());
    let rows: Vec<(&str, String, String)> = (0..orders_count())
        .map(|i| {
            let (id, data) = order(i);
            ("orders", id, data)
        })
        .chain((0..customers_count()).map(|i| {
            let (id, data) = customer(i);
            ("customers", id, data)
        }))
        .collect();
    for (chunk_no, chunk) in rows.chunks(1000).enumerate() {
        let ops: Vec<serde_json::Value> = chunk
            .iter()
            .enumerate()
            .map(|(k, (t, id, data))| {
                serde_json::json!({"op_id": (chunk_no * 1000 + k + 1).to_string(), "op": "PUT", "object_type": t,
                    "object_id": id, "checksum": 0, "data": data})
            })
            .collect();
        let line = serde_json::json!({"data": {"bucket": "b", "has_more": false, "data": ops}});
        control("line_text", &line.to_string());
    }
    let done = control("line_text", &serde_json::json!({"checkpoint_complete": {"last_op_id": total.to_string()}}).to_string());
    assert!(done.contains("applied"), "reference did not apply: {done}");
}

/// Loads oplite through the interface the sync apply uses.
fn load_oplite(db: &Connection) {
    db.execute_batch("BEGIN").unwrap();
    {
        let tables = oplite::schema::DataTables::load(db).unwrap();
        let mut writer = tables.writer(db).unwrap();
        for i in 0..orders_count() {
            let (id, data) = order(i);
            writer.put("orders", &id, &data).unwrap();
        }
        for i in 0..customers_count() {
            let (id, data) = customer(i);
            writer.put("customers", &id, &data).unwrap();
        }
    }
    db.execute_batch("COMMIT").unwrap();
}

fn load_plain(db: &Connection) {
    db.execute_batch(READ_PLAIN).unwrap();
    db.execute_batch("BEGIN").unwrap();
    {
        let mut insert = db
            .prepare("INSERT INTO orders SELECT ?1, data->>'customer_id', data->>'amount', data->>'quantity', data->>'status', data->>'created' FROM (SELECT ?2 AS data)")
            .unwrap();
        for i in 0..orders_count() {
            let (id, data) = order(i);
            insert.execute([id, data]).unwrap();
        }
        let mut insert = db.prepare("INSERT INTO customers SELECT ?1, data->>'name', data->>'country' FROM (SELECT ?2 AS data)").unwrap();
        for i in 0..customers_count() {
            let (id, data) = customer(i);
            insert.execute([id, data]).unwrap();
        }
    }
    db.execute_batch("COMMIT").unwrap();
}

struct ReadTest {
    name: &'static str,
    queries: usize,
    sql: &'static str,
    /// Parameters of query `k`.
    params: fn(usize) -> Vec<i64>,
}

fn created_at(row: usize) -> i64 {
    1_700_000_000 + row as i64 * 10
}

fn read_tests() -> Vec<ReadTest> {
    let n = orders_count();
    let _ = n;
    vec![
        ReadTest {
            name: "point select by id",
            queries: 20_000,
            sql: "SELECT * FROM orders WHERE id = printf('o%07d', ?1)",
            params: |k| vec![((k * 7_919) % orders_count()) as i64],
        },
        ReadTest {
            name: "range select on an indexed column (100 rows)",
            queries: 2_000,
            sql: "SELECT * FROM orders WHERE created BETWEEN ?1 AND ?2",
            params: |k| {
                let start = (k * 104_729) % (orders_count() - 100);
                vec![created_at(start), created_at(start + 99)]
            },
        },
        ReadTest {
            name: "sum over an indexed range (1000 rows)",
            queries: 500,
            sql: "SELECT sum(amount) FROM orders WHERE created BETWEEN ?1 AND ?2",
            params: |k| {
                let start = (k * 104_729) % (orders_count() - 1000);
                vec![created_at(start), created_at(start + 999)]
            },
        },
        ReadTest {
            name: "full scan with a filter",
            queries: 5,
            sql: "SELECT count(*), sum(quantity) FROM orders WHERE amount > ?1 AND status = 'paid'",
            params: |k| vec![(k * 100) as i64],
        },
        ReadTest {
            name: "ordered range (ORDER BY indexed column, LIMIT 50)",
            queries: 2_000,
            sql: "SELECT id, amount, created FROM orders WHERE created >= ?1 ORDER BY created LIMIT 50",
            params: |k| vec![created_at((k * 104_729) % orders_count())],
        },
        ReadTest {
            name: "GROUP BY",
            queries: 5,
            sql: "SELECT status, count(*), sum(amount), avg(quantity) FROM orders WHERE ?1 = ?1 GROUP BY status",
            params: |k| vec![k as i64],
        },
        ReadTest {
            name: "join of two tables (500 orders each)",
            queries: 200,
            sql: "SELECT c.country, count(*), sum(o.amount) FROM orders o JOIN customers c ON c.id = o.customer_id \
                  WHERE o.created BETWEEN ?1 AND ?2 GROUP BY c.country",
            params: |k| {
                let start = (k * 104_729) % (orders_count() - 500);
                vec![created_at(start), created_at(start + 499)]
            },
        },
    ]
}

/// Runs a test's queries once, reading every column of every row.
fn run_read(db: &Connection, test: &ReadTest) -> (Duration, f64) {
    let mut stmt = db.prepare(test.sql).unwrap();
    let columns = stmt.column_count();
    let mut checksum = 0.0;
    let start = Instant::now();
    for k in 0..test.queries {
        let params = (test.params)(k);
        let mut rows = stmt.query(rusqlite::params_from_iter(params)).unwrap();
        while let Some(row) = rows.next().unwrap() {
            for c in 0..columns {
                if let Ok(rusqlite::types::ValueRef::Real(r)) = row.get_ref(c) {
                    checksum += r;
                } else if let Ok(rusqlite::types::ValueRef::Integer(i)) = row.get_ref(c) {
                    checksum += i as f64;
                }
            }
        }
    }
    (start.elapsed(), checksum)
}

fn read_bench() {
    let dbs: Vec<Connection> = TARGETS
        .iter()
        .map(|&target| {
            let start = Instant::now();
            let db = match target {
                Target::Plain => {
                    let db = open(target, "read-plain.db", "NORMAL");
                    load_plain(&db);
                    db
                }
                Target::Oplite => {
                    let db = open(target, "read-oplite.db", "NORMAL");
                    replace_schema(&db, READ_SCHEMA);
                    load_oplite(&db);
                    db
                }
                Target::Reference => {
                    let db = open(target, "read-reference.db", "NORMAL");
                    replace_schema(&db, READ_SCHEMA);
                    load_reference(&db);
                    db
                }
                Target::ViewFloor => unreachable!("not a read target"),
            };
            eprintln!("loaded {} in {:.1} s", target_name(target), start.elapsed().as_secs_f64());
            db
        })
        .collect();
    println!("## Reads ({} orders, {} customers)\n", orders_count(), customers_count());
    println!("| test | queries | plain table | oplite view | reference view | oplite / plain | reference / plain |");
    println!("|---|---|---|---|---|---|---|");
    let (mut sum_oplite, mut sum_reference, mut count) = (0.0, 0.0, 0.0);
    for test in read_tests() {
        let mut checksums = Vec::new();
        for db in &dbs {
            checksums.push(run_read(db, &test).1); // also warms the cache
        }
        // Targets take turns in each round, so background load hits them alike.
        let mut times: Vec<Vec<Duration>> = vec![Vec::new(); dbs.len()];
        for _ in 0..5 {
            for (t, db) in dbs.iter().enumerate() {
                times[t].push(run_read(db, &test).0);
            }
        }
        let medians: Vec<Duration> = times.into_iter().map(median).collect();
        assert!(
            checksums.iter().all(|c| (c - checksums[0]).abs() <= 1e-6 * checksums[0].abs().max(1.0)),
            "{}: results differ: {checksums:?}",
            test.name
        );
        let (p, o, r) = (medians[0], medians[1], medians[2]);
        sum_oplite += o.as_secs_f64() / p.as_secs_f64();
        sum_reference += r.as_secs_f64() / p.as_secs_f64();
        count += 1.0;
        println!("| {} | {} | {} | {} | {} | {} | {} |", test.name, test.queries, ms(p), ms(o), ms(r), ratio(o, p), ratio(r, p));
    }
    println!("| **average multiplier** | | | | | **{:.2}x** | **{:.2}x** |", sum_oplite / count, sum_reference / count);
    println!();
}

// ---------------------------------------------------------------------------
// Applying synced rows (the interface sync_local writes through).

/// Times writing every order into `orders` with oplite's RowWriter and with
/// the set-wise SQL, for typed storage and for the JSON layout.
fn apply_bench() {
    let n = orders_count();
    println!("## Applying synced rows ({n} orders)\n");
    println!("| layout | RowWriter::put, one row at a time | upsert_from_select_sql, set-wise |");
    println!("|---|---|---|");
    for (layout, option) in [("typed (default)", ""), ("JSON (oplite_json_storage)", r#""oplite_json_storage":true,"#)] {
        let schema = READ_SCHEMA.replace(r#"{"name":"orders","#, &format!(r#"{{"name":"orders",{option}"#));
        let mut row_times = Vec::new();
        let mut set_times = Vec::new();
        for _ in 0..3 {
            let db = open(Target::Oplite, "apply.db", "NORMAL");
            replace_schema(&db, &schema);
            db.execute_batch("CREATE TEMP TABLE staging(id TEXT, data TEXT)").unwrap();
            db.execute_batch("BEGIN").unwrap();
            {
                let mut insert = db.prepare("INSERT INTO staging VALUES (?1, ?2)").unwrap();
                for i in 0..n {
                    let (id, data) = order(i);
                    insert.execute([id, data]).unwrap();
                }
            }
            db.execute_batch("COMMIT").unwrap();
            let rows: Vec<(String, String)> = (0..n).map(order).collect();
            let tables = oplite::schema::DataTables::load(&db).unwrap();
            let start = Instant::now();
            db.execute_batch("BEGIN").unwrap();
            {
                let mut writer = tables.writer(&db).unwrap();
                for (id, data) in &rows {
                    writer.put("orders", id, data).unwrap();
                }
            }
            db.execute_batch("COMMIT").unwrap();
            row_times.push(start.elapsed());
            db.execute_batch("DELETE FROM ps_data__orders").unwrap();
            let sql = tables.upsert_from_select_sql("orders", "SELECT id, data FROM staging").unwrap();
            // sync_local runs set-wise SQL while its RowWriter lives (which
            // lets typed tables skip rendering `data` nothing reads).
            let writer = tables.writer(&db).unwrap();
            let start = Instant::now();
            db.execute_batch(&format!("BEGIN; {sql}; COMMIT;")).unwrap();
            set_times.push(start.elapsed());
            drop(writer);
        }
        println!("| {layout} | {} | {} |", ms(median(row_times)), ms(median(set_times)));
    }
    println!();
}

fn main() {
    // `cargo bench` passes --bench; a filter argument picks one section.
    let filter: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    // `views profile <plain|oplite|reference>`: one run of the in-transaction
    // writes on one target only, for `perf stat` / `perf record`.
    if filter.first().map(String::as_str) == Some("profile") {
        let target = match filter.get(1).map(String::as_str) {
            Some("plain") => Target::Plain,
            Some("reference") => Target::Reference,
            _ => Target::Oplite,
        };
        let times = write_run(target, scaled(100_000), true);
        eprintln!("insert {:?} update {:?} delete {:?}", times[0], times[1], times[2]);
        return;
    }
    let wants = |name: &str| filter.is_empty() || filter.iter().any(|f| name.contains(f.as_str()));
    if wants("writes") {
        write_bench();
    }
    if wants("reads") {
        read_bench();
    }
    if wants("apply") {
        apply_bench();
    }
}

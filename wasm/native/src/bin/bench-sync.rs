//! The native side of `wasm/bench/browser-bench.mjs`: syncs an NDJSON stream
//! (from `node wasm/test/stream.mjs N`) into a new file database with
//! SQLite's default pragmas, exactly as the web package does (one
//! `BEGIN IMMEDIATE` transaction per `powersync_control` call), and prints
//! one JSON object: total and apply time, the longest call, the file size.
//!
//!     cargo run --release -p oplite-wasm-native --bin bench-sync -- stream.ndjson [db-path]
//!
//! Lines are read into memory before the clock starts.

use std::time::Instant;

use rusqlite::Connection;

fn control(db: &Connection, op: &str, payload: Option<&str>) -> String {
    db.execute_batch("BEGIN IMMEDIATE").unwrap();
    let out: Option<String> =
        db.query_row("SELECT powersync_control(?1, ?2)", (op, payload), |r| r.get(0)).unwrap();
    db.execute_batch("COMMIT").unwrap();
    out.unwrap_or_default()
}

fn main() {
    let mut args = std::env::args().skip(1);
    let stream = args.next().expect("usage: bench-sync <stream.ndjson> [db-path]");
    let path = args.next().map(std::path::PathBuf::from).unwrap_or_else(|| {
        std::env::temp_dir().join(format!("oplite-bench-sync-{}.db", std::process::id()))
    });
    let text = std::fs::read_to_string(&stream).expect("reading the stream");
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let _ = std::fs::remove_file(&path);
    let _ = std::fs::remove_file(path.with_extension("db-journal"));

    let db = Connection::open(&path).unwrap();
    oplite::register(&db).unwrap();
    db.execute_batch("BEGIN; SELECT powersync_init(); COMMIT;").unwrap();

    let started = Instant::now();
    control(&db, "start", Some("{\"parameters\":{}}"));
    control(&db, "connection", Some("established"));
    let (mut longest, mut apply, mut completed) = (0f64, 0f64, false);
    for line in &lines {
        let t = Instant::now();
        let out = control(&db, "line_text", Some(line));
        let took = t.elapsed().as_secs_f64() * 1000.0;
        longest = longest.max(took);
        if out.contains("DidCompleteSync") {
            apply += took;
            completed = true;
        }
    }
    control(&db, "connection", Some("end"));
    control(&db, "stop", None);
    let total = started.elapsed().as_secs_f64() * 1000.0;
    let rows: i64 = db.query_row("SELECT count(*) FROM ps_untyped", [], |r| r.get(0)).unwrap();
    drop(db);
    let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    let _ = std::fs::remove_file(&path);
    println!(
        "{}",
        serde_json::json!({
            "lines": lines.len(), "completed": completed, "rows": rows, "totalMs": total,
            "applyMs": apply, "longestCallMs": longest, "dbBytes": size,
            "sqlite": rusqlite::version(),
        })
    );
}

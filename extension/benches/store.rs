//! Storing sync lines: how many data lines of 1000 ops per second oplite
//! stores through `powersync_control`, JSON and BSON, next to the reference
//! cores 0.5.4 and 0.5.3, on a file database in WAL mode. Lines are
//! generated before timing.
//!
//!     cargo bench -p oplite --no-default-features --features bundled --bench store
//!         [-- --lines 200] [--runs 5] [--cores oplite,0.5.4,0.5.3] [--again]
//!
//! `--cores` picks the engines (all three by default; `--only-oplite` and
//! `--only-reference` are `--cores oplite` and `--cores 0.5.4,0.5.3`). The
//! reference cores are `$REFERENCE_CORE` / `$REFERENCE_CORE_053`, or what
//! `scripts/reference-core.sh` prints.
//!
//! `--again` times a second pass over the same lines in a new iteration:
//! every op then supersedes one in a bucket that held ops before, so each
//! is looked up (the first pass, into fresh buckets, never needs to).
//!
//!     cargo bench ... --bench store -- --buckets 1000,10000,20000 [--lines 1000] [--runs 3]
//!
//! `--buckets` measures instead what a line costs next to how many buckets
//! the checkpoint names: a checkpoint over N buckets (priorities 0 to 3,
//! with counts, all in one default stream), then `--lines` one-op data lines
//! spread over the buckets, microseconds per line (median of runs). A line
//! changes one bucket, so its cost should not grow with N.
//! `--full-sync N` times a whole sync of N buckets instead (checkpoint, one
//! one-op line per bucket, checkpoint_complete), once per core.

#[path = "common/mod.rs"]
mod common;

use std::path::Path;
use std::time::Instant;

use common::Core;

use rusqlite::Connection;
use serde_json::{json, Value};

const OPS_PER_LINE: usize = 1000;
const BUCKETS: usize = 10;

fn lines(count: usize) -> (Value, Vec<Value>) {
    let mut checksums = [0u32; BUCKETS];
    let mut out = Vec::with_capacity(count);
    let mut op_id = 1usize;
    for line in 0..count {
        let bucket = line % BUCKETS;
        let ops: Vec<Value> = (0..OPS_PER_LINE)
            .map(|_| {
                let id = op_id;
                op_id += 1;
                let checksum = ((id as u64 * 17) % 1_000_000_000) as u32;
                checksums[bucket] = checksums[bucket].wrapping_add(checksum);
                json!({"op_id": id.to_string(), "op": "PUT", "object_type": "thisisatable",
                       "object_id": format!("thisismyrowid{id}"), "checksum": checksum,
                       "data": json!({"n": id}).to_string()})
            })
            .collect();
        out.push(json!({"data": {"bucket": format!("bucket{bucket}"), "has_more": false,
                                 "after": null, "next_after": null, "data": ops}}));
    }
    let checkpoint = json!({"checkpoint": {"last_op_id": (op_id - 1).to_string(), "write_checkpoint": null,
        "buckets": (0..BUCKETS).map(|b| json!({"bucket": format!("bucket{b}"), "checksum": checksums[b],
                                                  "priority": 3})).collect::<Vec<_>>()}});
    (checkpoint, out)
}

fn open(core: Core, path: &Path) -> Connection {
    let _ = std::fs::remove_file(path);
    let _ = std::fs::remove_file(path.with_extension("db-wal"));
    let db = Connection::open(path).unwrap();
    db.execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;").unwrap();
    core.install(&db).unwrap();
    db.execute_batch("BEGIN; SELECT powersync_init(); COMMIT;").unwrap();
    db
}

enum Line {
    Text(String),
    Binary(Vec<u8>),
}

/// Stores every line, one transaction per line as the SDKs do; returns
/// seconds (of the second pass over the lines when `again`).
fn store(db: &Connection, checkpoint: &str, lines: &[Line], again: bool) -> f64 {
    let control = |op: &str, text: Option<&str>, blob: Option<&[u8]>| {
        db.execute_batch("BEGIN").unwrap();
        match blob {
            Some(b) => db.query_row("SELECT powersync_control(?1, ?2)", (op, b), |_| Ok(())),
            None => db.query_row("SELECT powersync_control(?1, ?2)", (op, text), |_| Ok(())),
        }
        .unwrap();
        db.execute_batch("COMMIT").unwrap();
    };
    control("start", None, None);
    control("line_text", Some(checkpoint), None);
    let mut started = Instant::now();
    for line in lines {
        match line {
            Line::Text(text) => control("line_text", Some(text), None),
            Line::Binary(bytes) => control("line_binary", None, Some(bytes)),
        }
    }
    if again {
        control("stop", None, None);
        control("start", None, None);
        control("line_text", Some(checkpoint), None);
        started = Instant::now();
        for line in lines {
            match line {
                Line::Text(text) => control("line_text", Some(text), None),
                Line::Binary(bytes) => control("line_binary", None, Some(bytes)),
            }
        }
    }
    started.elapsed().as_secs_f64()
}

/// A checkpoint over `buckets` buckets in one default stream and `lines`
/// one-op data lines, bucket after bucket, and the completing line.
fn many_buckets(buckets: usize, lines: usize) -> (String, Vec<String>, String) {
    let mut checksums = vec![0u32; buckets];
    let mut counts = vec![0usize; buckets];
    let data: Vec<String> = (0..lines)
        .map(|i| {
            let bucket = i % buckets;
            let id = i + 1;
            let checksum = ((id as u64 * 17) % 1_000_000_000) as u32;
            checksums[bucket] = checksums[bucket].wrapping_add(checksum);
            counts[bucket] += 1;
            json!({"data": {"bucket": format!("bucket{bucket}"), "has_more": false, "after": null,
                "next_after": null, "data": [{"op_id": id.to_string(), "op": "PUT",
                "object_type": "thisisatable", "object_id": format!("thisismyrowid{id}"),
                "checksum": checksum, "data": json!({"n": id}).to_string()}]}})
            .to_string()
        })
        .collect();
    let checkpoint = json!({"checkpoint": {"last_op_id": lines.to_string(), "write_checkpoint": null,
        "buckets": (0..buckets).map(|b| json!({"bucket": format!("bucket{b}"), "checksum": checksums[b],
            "priority": b % 4, "count": counts[b], "subscriptions": [{"default": 0}]})).collect::<Vec<_>>(),
        "streams": [{"name": "all", "is_default": true, "errors": []}]}});
    let complete = json!({"checkpoint_complete": {"last_op_id": lines.to_string()}});
    (checkpoint.to_string(), data, complete.to_string())
}

/// Seconds per data line, storing `data` after `checkpoint`.
fn per_line(db: &Connection, checkpoint: &str, data: &[String]) -> f64 {
    let control = |op: &str, text: Option<&str>| {
        db.execute_batch("BEGIN").unwrap();
        db.query_row("SELECT powersync_control(?1, ?2)", (op, text), |_| Ok(())).unwrap();
        db.execute_batch("COMMIT").unwrap();
    };
    control("start", None);
    control("line_text", Some(checkpoint));
    let started = Instant::now();
    for line in data {
        control("line_text", Some(line));
    }
    started.elapsed().as_secs_f64() / data.len() as f64
}

/// Seconds for a whole sync: checkpoint, every data line, completion.
fn full_sync(db: &Connection, checkpoint: &str, data: &[String], complete: &str) -> f64 {
    let started = Instant::now();
    per_line(db, checkpoint, data);
    db.execute_batch("BEGIN").unwrap();
    let out: String = db.query_row("SELECT powersync_control('line_text', ?1)", [complete], |r| r.get(0)).unwrap();
    db.execute_batch("COMMIT").unwrap();
    assert!(out.contains("DidCompleteSync"), "the sync did not complete: {out}");
    started.elapsed().as_secs_f64()
}

/// The engines `--cores` (or `--only-oplite`, `--only-reference`) names;
/// every one by default.
fn cores(args: &[String]) -> Vec<Core> {
    if args.iter().any(|a| a == "--only-oplite") {
        return vec![Core::Oplite];
    }
    if args.iter().any(|a| a == "--only-reference") {
        return Core::ALL.into_iter().filter(|c| *c != Core::Oplite).collect();
    }
    match args.iter().position(|a| a == "--cores").and_then(|i| args.get(i + 1)) {
        Some(list) => list
            .split(',')
            .map(|name| Core::parse(name.trim()).unwrap_or_else(|| panic!("--cores: unknown {name:?} (oplite, 0.5.4, 0.5.3)")))
            .collect(),
        None => Core::ALL.to_vec(),
    }
}

/// Prints a markdown table's header: `first`, a column `unit` per core,
/// then oplite's figure over each reference core's.
fn header(first: &str, unit: &str, cores: &[Core]) {
    let mut columns: Vec<String> = vec![first.to_owned()];
    columns.extend(cores.iter().map(|c| format!("{} {unit}", c.label())));
    if cores.contains(&Core::Oplite) {
        columns.extend(cores.iter().filter(|c| **c != Core::Oplite).map(|c| format!("oplite / {}", c.name())));
    }
    println!("| {} |", columns.join(" | "));
    println!("|{}", "---|".repeat(columns.len()));
}

/// A table row: the figures per core (in `cores`' order), then oplite's
/// over each reference core's.
fn row(first: &str, cores: &[Core], figures: &[f64], precision: usize) {
    let mut cells: Vec<String> = vec![first.to_owned()];
    cells.extend(figures.iter().map(|f| format!("{f:.precision$}")));
    if let Some(oplite) = cores.iter().position(|c| *c == Core::Oplite) {
        for (i, _) in cores.iter().enumerate().filter(|(_, c)| **c != Core::Oplite) {
            cells.push(format!("{:.2}x", figures[oplite] / figures[i]));
        }
    }
    println!("| {} |", cells.join(" | "));
}

fn buckets_mode(args: &[String], path: &Path) -> bool {
    let value = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1).cloned());
    let cores = cores(args);
    if let Some(n) = value("--full-sync") {
        let n: usize = n.parse().expect("--full-sync N");
        let (checkpoint, data, complete) = many_buckets(n, n);
        println!("A whole sync of {n} buckets (one one-op line each)\n");
        for &core in &cores {
            let seconds = full_sync(&open(core, path), &checkpoint, &data, &complete);
            println!("{}: {seconds:.1} s", core.label());
        }
        return true;
    }
    let Some(list) = value("--buckets") else { return false };
    let lines: usize = value("--lines").and_then(|v| v.parse().ok()).unwrap_or(1000);
    let runs: usize = value("--runs").and_then(|v| v.parse().ok()).unwrap_or(3);
    println!("One-op data lines next to the checkpoint's bucket count: {lines} lines, median of {runs} runs\n");
    header("buckets", "µs/line", &cores);
    for n in list.split(',').map(|n| n.parse::<usize>().expect("--buckets N,N,...")) {
        let (checkpoint, data, _) = many_buckets(n, lines);
        let micros: Vec<f64> = cores
            .iter()
            .map(|&core| median((0..runs).map(|_| per_line(&open(core, path), &checkpoint, &data)).collect()) * 1e6)
            .collect();
        row(&n.to_string(), &cores, &micros, 0);
    }
    true
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--help" || a == "-h") {
        println!("usage: store [--lines 200] [--runs 5] [--cores oplite,0.5.4,0.5.3] [--again]");
        println!("       store --buckets 1000,10000,20000 [--lines 1000] [--runs 3] [--cores ...]");
        println!("       store --full-sync N [--cores ...]");
        return;
    }
    if buckets_mode(&args, &std::env::temp_dir().join("oplite-bench-store.db")) {
        return;
    }
    let flag = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)?.parse().ok());
    let count: usize = flag("--lines").unwrap_or(200);
    let runs: usize = flag("--runs").unwrap_or(5);
    let (checkpoint, values) = lines(count);
    let checkpoint = checkpoint.to_string();
    let text: Vec<Line> = values.iter().map(|v| Line::Text(v.to_string())).collect();
    let binary: Vec<Line> = values.iter().map(|v| Line::Binary(bson::serialize_to_vec(v).unwrap())).collect();
    let path = std::env::temp_dir().join("oplite-bench-store.db");
    let again = args.iter().any(|a| a == "--again");

    let pass = if again { ", a second time (every op supersedes one)" } else { "" };
    println!("Storing {count} data lines of {OPS_PER_LINE} ops ({} ops){pass}, median of {runs} runs\n", count * OPS_PER_LINE);
    let cores = cores(&args);
    header("encoding", "lines/s", &cores);
    for (name, lines) in [("JSON", &text), ("BSON", &binary)] {
        let rates: Vec<f64> = cores
            .iter()
            .map(|&core| count as f64 / median((0..runs).map(|_| store(&open(core, &path), &checkpoint, lines, again)).collect()))
            .collect();
        row(name, &cores, &rates, 0);
    }
}

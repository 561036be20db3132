//! Deterministic fuzzing: the bodies of the cargo-fuzz targets
//! (fuzz/src/lib.rs) run on seeded mutations of the seed corpus in
//! test-data/fuzz/<target>/, as an ordinary test that needs no nightly
//! compiler or instrumentation. Coverage-guided runs use the same bodies
//! through libFuzzer (scripts/fuzz.sh).
//!
//! Mutations: bit flips, interesting bytes (quotes, brackets, 0x80, 0xff),
//! deleted, duplicated and inserted ranges, splices of two inputs, numbers
//! replaced by huge, negative or fractional ones, and deep nesting.
//!
//! `OPLITE_FUZZ_ITERS=n` sets the mutations per target (a tenth of it for
//! `control`; default 100000 for the decoders and 3000 for `control`); a failing input is written
//! to target/fuzz-failures/ and its iteration printed.
//! `OPLITE_WRITE_FUZZ_CORPUS=1` regenerates the seed corpus.
mod common;

#[allow(dead_code)]
#[path = "../../fuzz/src/lib.rs"]
mod bodies;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use bodies::PayloadKind;
use oplite_test_data::{Rng, ServerModel, ServerOptions};
use serde_json::{json, Value};

const TARGETS: &[(&str, fn(&[u8]))] = &[
    ("parse_text", bodies::parse_text),
    ("parse_binary", bodies::parse_binary),
    ("bson", bodies::bson),
    ("control", bodies::control),
    ("schema", bodies::schema),
];

fn corpus_dir(target: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../test-data/fuzz").join(target)
}

fn load(target: &str) -> Vec<Vec<u8>> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(corpus_dir(target))
        .unwrap_or_else(|_| panic!("no seed corpus for {target}: run with OPLITE_WRITE_FUZZ_CORPUS=1"))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    entries.iter().map(|p| std::fs::read(p).unwrap()).collect()
}

/// Sync lines of a few seeded sessions, plus every other kind of line.
fn sample_lines() -> Vec<Value> {
    let mut lines = vec![
        json!({"token_expires_in": 30}),
        json!({"token_expires_in": 0}),
        json!({"partial_checkpoint_complete": {"last_op_id": "7", "priority": 1}}),
        json!({"unknown_line": {"x": [1, 2, {"y": null}]}}),
        json!({"checkpoint_diff": {"last_op_id": "9", "write_checkpoint": "3",
            "updated_buckets": [{"bucket": "b\"'; DROP TABLE ps_oplog; --", "checksum": -5, "priority": 0, "count": 2}],
            "removed_buckets": ["bucket1"]}}),
    ];
    for seed in 0..3 {
        let mut server = ServerModel::new(seed, ServerOptions { buckets: 2, ..Default::default() });
        server.mutate(12);
        let previous = server.checkpoint_entries();
        lines.push(server.checkpoint_line());
        lines.extend(server.data_lines(&Default::default()).into_iter().map(|(_, l)| l).take(3));
        server.mutate(6);
        lines.push(server.checkpoint_diff_line(&previous));
        lines.push(json!({"checkpoint_complete": {"last_op_id": server.last_op_id().to_string()}}));
    }
    lines
}

/// Event sequences for `control`: whole sessions with local writes and
/// uploads, in both encodings.
fn sample_sessions() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for seed in 0..6u64 {
        let mut server = ServerModel::new(seed, ServerOptions { buckets: 2, ..Default::default() });
        let binary = seed % 2 == 1;
        let mut events = Vec::new();
        bodies::encode_event(&mut events, "start", PayloadKind::Null, b"");
        for round in 0..2 {
            server.mutate(8);
            let mut lines = vec![server.checkpoint_line()];
            lines.extend(server.data_lines(&Default::default()).into_iter().map(|(_, l)| l));
            if round == 1 {
                bodies::encode_event(&mut events, "local_write", PayloadKind::Text, b"row1");
            }
            lines.push(json!({"checkpoint_complete": {"last_op_id": server.last_op_id().to_string()}}));
            for line in lines {
                if binary {
                    bodies::encode_event(&mut events, "line_binary", PayloadKind::Blob, &bson::serialize_to_vec(&line).unwrap());
                } else {
                    bodies::encode_event(&mut events, "line_text", PayloadKind::Text, line.to_string().as_bytes());
                }
            }
        }
        bodies::encode_event(&mut events, "target_checkpoint_request_id", PayloadKind::Text, b"5");
        bodies::encode_event(&mut events, "completed_upload", PayloadKind::Null, b"");
        bodies::encode_event(&mut events, "connection", PayloadKind::Text, b"established");
        bodies::encode_event(&mut events, "stop", PayloadKind::Null, b"");
        out.push(events);
    }
    out
}

/// Schemas with every kind of table, column and option.
fn sample_schemas() -> Vec<Vec<u8>> {
    [
        json!({"tables": [{"name": "items", "columns": [{"name": "name", "type": "text"}, {"name": "n", "type": "integer"}, {"name": "r", "type": "real"}]}]}),
        json!({"tables": [{"name": "lists", "columns": [{"name": "title", "type": "text"}],
            "indexes": [{"name": "by_title", "columns": [{"name": "title", "ascending": true, "type": "text"}]}]}]}),
        json!({"tables": [{"name": "drafts", "local_only": true, "columns": [{"name": "body", "type": "text"}]},
                          {"name": "log", "insert_only": true, "columns": [{"name": "line", "type": "text"}]}]}),
        json!({"tables": [{"name": "notes", "view_name": "my_notes", "include_metadata": true, "include_old": ["body"],
            "include_old_only_when_changed": true, "ignore_empty_update": true, "columns": [{"name": "body", "type": "text"}]}]}),
        json!({"tables": [{"name": "we\"ird; DROP TABLE ps_kv; --", "columns": [{"name": "co'l\"umn", "type": "text"}]}]}),
        json!({"tables": [], "raw_tables": [{"name": "raw", "table_name": "raw_t",
            "put": {"sql": "INSERT OR REPLACE INTO raw_t(id, v) VALUES (?, ?)", "params": ["Id", {"Column": "v"}]},
            "delete": {"sql": "DELETE FROM raw_t WHERE id = ?", "params": ["Id"]}}]}),
    ]
    .iter()
    .map(|s| s.to_string().into_bytes())
    .collect()
}

#[test]
fn seed_corpus_is_present() {
    if std::env::var_os("OPLITE_WRITE_FUZZ_CORPUS").is_some() {
        let lines = sample_lines();
        let text: Vec<Vec<u8>> = lines.iter().map(|l| l.to_string().into_bytes()).collect();
        let binary: Vec<Vec<u8>> = lines.iter().map(|l| bson::serialize_to_vec(l).unwrap()).collect();
        for (target, entries) in [
            ("parse_text", text),
            ("parse_binary", binary.clone()),
            ("bson", binary),
            ("control", sample_sessions()),
            ("schema", sample_schemas()),
        ] {
            // Generated entries are seed-NNN; inputs kept from fuzzing runs
            // (found-*) stay.
            let dir = corpus_dir(target);
            std::fs::create_dir_all(&dir).unwrap();
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.file_name().unwrap().to_string_lossy().starts_with("seed-") {
                    std::fs::remove_file(path).unwrap();
                }
            }
            for (i, entry) in entries.iter().enumerate() {
                std::fs::write(dir.join(format!("seed-{i:03}")), entry).unwrap();
            }
        }
    }
    for (target, _) in TARGETS {
        assert!(load(target).len() >= 5, "{target}: seed corpus too small");
    }
}

const INTERESTING: &[u8] = b"\"{}[]\\:,0-9\x00\x80\xff\x7f\x01\x02\x03\x04\x05\x10\x12";
const NUMBERS: &[&str] = &[
    "-1",
    "0",
    "-9223372036854775808",
    "9223372036854775807",
    "9223372036854775808",
    "18446744073709551616",
    "99999999999999999999999",
    "1e308",
    "-0.5",
    "4294967296",
    "-2147483649",
];

fn mutate(rng: &mut Rng, input: &[u8], corpus: &[Vec<u8>]) -> Vec<u8> {
    let mut data = input.to_vec();
    for _ in 0..1 + rng.below(4) {
        let len = data.len().max(1) as u64;
        match rng.below(9) {
            0 if !data.is_empty() => {
                let i = rng.below(len) as usize;
                data[i] ^= 1 << rng.below(8);
            }
            1 if !data.is_empty() => {
                let i = rng.below(len) as usize;
                data[i] = *rng.pick(INTERESTING);
            }
            2 if !data.is_empty() => {
                let at = rng.below(len) as usize;
                let n = (rng.below(16) as usize).min(data.len() - at);
                data.drain(at..at + n);
            }
            3 if !data.is_empty() => {
                let at = rng.below(len) as usize;
                let n = (1 + rng.below(64) as usize).min(data.len() - at);
                let chunk = data[at..at + n].to_vec();
                let to = rng.below(len) as usize;
                data.splice(to..to, chunk);
            }
            4 => {
                let at = rng.below(len + 1).min(data.len() as u64) as usize;
                let bytes: Vec<u8> = (0..1 + rng.below(8)).map(|_| rng.next_u64() as u8).collect();
                data.splice(at..at, bytes);
            }
            5 => {
                let other = rng.pick(corpus);
                if !other.is_empty() {
                    let cut = rng.below(len + 1).min(data.len() as u64) as usize;
                    let from = rng.below(other.len() as u64) as usize;
                    data.truncate(cut);
                    data.extend_from_slice(&other[from..]);
                }
            }
            6 => {
                // Replace a run of digits with an extreme number.
                let start = rng.below(len) as usize;
                if let Some(pos) = data.iter().skip(start).position(|b| b.is_ascii_digit()) {
                    let at = start + pos;
                    let end = data[at..].iter().position(|b| !b.is_ascii_digit()).map_or(data.len(), |e| at + e);
                    data.splice(at..end, rng.pick(NUMBERS).bytes());
                }
            }
            7 => {
                // Deep nesting.
                let depth = 1 + rng.below(300) as usize;
                let at = rng.below(len + 1).min(data.len() as u64) as usize;
                let open = if rng.chance(50) { b'[' } else { b'{' };
                data.splice(at..at, std::iter::repeat_n(open, depth));
            }
            _ => {
                // A truncated input.
                let cut = rng.below(len + 1) as usize;
                data.truncate(cut);
            }
        }
    }
    data
}

#[test]
fn seeded_mutations_find_no_panic() {
    let iterations: Option<u64> = std::env::var("OPLITE_FUZZ_ITERS").ok().and_then(|n| n.parse().ok());
    let started = Instant::now();
    let mut total = 0u64;
    for (target, body) in TARGETS {
        let corpus = load(target);
        let n = match (iterations, *target) {
            (Some(n), "control" | "schema") => n / 10,
            (Some(n), _) => n,
            (None, "control" | "schema") => 3_000,
            (None, _) => 100_000,
        };
        let mut slowest = Duration::ZERO;
        let t = Instant::now();
        for (i, input) in corpus.iter().map(|c| c.clone()).chain((0..n).map(|i| {
            let mut rng = Rng::new(i ^ 0x5EED);
            let base = rng.pick(&corpus).clone();
            mutate(&mut rng, &base, &corpus)
        })).enumerate() {
            let one = Instant::now();
            if let Err(panic) = std::panic::catch_unwind(|| body(&input)) {
                let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/fuzz-failures");
                std::fs::create_dir_all(&dir).unwrap();
                let path = dir.join(format!("{target}-{i}"));
                std::fs::write(&path, &input).unwrap();
                eprintln!("{target}: input {i} failed; saved to {}", path.display());
                std::panic::resume_unwind(panic);
            }
            slowest = slowest.max(one.elapsed());
            total += 1;
        }
        println!(
            "fuzz {target}: {} inputs in {:.1}s, slowest {:.1} ms",
            corpus.len() as u64 + n,
            t.elapsed().as_secs_f64(),
            slowest.as_secs_f64() * 1000.0
        );
    }
    println!("fuzz: {total} inputs, no panic, {:.1}s", started.elapsed().as_secs_f64());
}

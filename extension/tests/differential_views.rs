//! Differential tests of local writes: oplite and the reference core get the
//! same schema and the same seeded random sequence of writes through the
//! views (inserts, updates, deletes, several tables, several transactions,
//! some rolled back). After every transaction both must hold the same
//! ps_crud rows (JSON text, ids, tx_ids), ps_tx, ps_updated_rows and ps_kv
//! (besides the client id), the same view columns and values, and report
//! the same tables through `powersync_update_hooks('get')`.
//!
//! A failing seed is printed; rerun one with `OPLITE_SEED=<seed>`.
mod common;

use common::*;
use rusqlite::types::Value;
use rusqlite::Connection;

/// Every table option, and values of every storage class.
const SCHEMA: &str = r#"{"tables":[
  {"name":"todos","columns":[{"name":"description","type":"text"},{"name":"done","type":"integer"},{"name":"priority","type":"real"},{"name":"list_id","type":"text"}],
   "indexes":[{"name":"by_list","columns":[{"name":"list_id","ascending":true,"type":"text"},{"name":"priority","ascending":false,"type":"real"}]}]},
  {"name":"lists","include_old":true,"include_metadata":true,"columns":[{"name":"name","type":"text"},{"name":"count","type":"integer"}]},
  {"name":"notes","include_old":["body","score"],"include_old_only_when_changed":true,"ignore_empty_update":true,
   "columns":[{"name":"title","type":"text"},{"name":"body","type":"text"},{"name":"score","type":"real"}]},
  {"name":"changes","include_old":true,"include_old_only_when_changed":true,"columns":[{"name":"a","type":"text"},{"name":"b","type":"integer"}]},
  {"name":"logs","insert_only":true,"columns":[{"name":"message","type":"text"},{"name":"level","type":"integer"}]},
  {"name":"drafts","local_only":true,"columns":[{"name":"text","type":"text"},{"name":"n","type":"integer"}]},
  {"name":"tagged","view_name":"tags_view","ignore_empty_update":true,"include_metadata":true,"columns":[{"name":"tag","type":"text"}]}
]}"#;

/// View name, columns a write may set.
const VIEWS: &[(&str, &[&str])] = &[
    ("todos", &["description", "done", "priority", "list_id"]),
    ("lists", &["name", "count"]),
    ("notes", &["title", "body", "score"]),
    ("changes", &["a", "b"]),
    ("logs", &["message", "level"]),
    ("drafts", &["text", "n"]),
    ("tags_view", &["tag"]),
];

/// splitmix64: small, seedable, good enough for test data.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// A random SQL literal of any storage class (no BLOBs: JSON cannot hold
/// them in either core).
fn literal(rng: &mut Rng) -> String {
    match rng.below(14) {
        0 | 1 => "NULL".into(),
        2 | 3 => format!("{}", rng.below(2000) as i64 - 1000),
        4 => format!("{}.0", rng.below(50)),
        5 => format!("{}", (rng.below(4000) as f64 - 2000.0) / 8.0),
        6 => ["1e20", "-2.5e-7", "0.1", "(1.0/3)", "9007199254740993", "-0.5"][rng.below(6) as usize].into(),
        7 => format!("'{}'", rng.below(100)),
        8 => ["'it''s'", "'quote \" and \\ backslash'", "'tab\tnew\nline'", "'é ü 😀'", "char(1, 127, 31)", "''"][rng.below(6) as usize].into(),
        9 => r#"'{"looks":"like json"}'"#.into(),
        10 => "json('[1, 2, {\"x\": null}]')".into(),
        11 => "json_object('k', 1)".into(),
        _ => format!("'text {}'", rng.below(1000)),
    }
}

/// One random write statement; `ids` tracks the ids each view may hold.
fn statement(rng: &mut Rng, ids: &mut [Vec<String>], next_id: &mut u64) -> String {
    let which = rng.below(VIEWS.len() as u64) as usize;
    let (view, columns) = VIEWS[which];
    let existing = &mut ids[which];
    let metadata = view == "lists" || view == "tags_view";
    let kind = if view == "logs" { 0 } else { rng.below(10) };
    match kind {
        // Insert.
        0..=3 => {
            *next_id += 1;
            let id = format!("id-{next_id}");
            let mut names = vec!["id".to_owned()];
            let mut values = vec![format!("'{id}'")];
            for column in columns.iter() {
                if rng.chance(80) {
                    names.push((*column).into());
                    values.push(literal(rng));
                }
            }
            if metadata && rng.chance(50) {
                names.push("_metadata".into());
                values.push(if rng.chance(80) { format!("'meta {}'", rng.below(10)) } else { "42".into() });
            }
            if view != "logs" {
                existing.push(id);
            }
            format!("INSERT INTO {view}({}) VALUES ({})", names.join(", "), values.join(", "))
        }
        // Update one row (sometimes to the values it already has).
        4..=6 => {
            let target = pick(rng, existing);
            let mut sets: Vec<String> = Vec::new();
            for c in columns.iter() {
                if rng.chance(60) {
                    sets.push(if rng.chance(20) { format!("{c} = {c}") } else { format!("{c} = {}", literal(rng)) });
                }
            }
            if sets.is_empty() {
                sets.push(format!("{0} = {0}", columns[0]));
            }
            if metadata && rng.chance(40) {
                sets.push(format!("_metadata = 'meta {}'", rng.below(10)));
            }
            format!("UPDATE {view} SET {} WHERE id = '{target}'", sets.join(", "))
        }
        // Delete one row, maybe one that does not exist.
        7 | 8 => {
            let target = pick(rng, existing);
            existing.retain(|id| *id != target);
            if metadata && rng.chance(50) {
                let meta = if rng.chance(70) { format!(", _metadata = 'gone {}'", rng.below(5)) } else { String::new() };
                format!("UPDATE {view} SET _deleted = TRUE{meta} WHERE id = '{target}'")
            } else {
                format!("DELETE FROM {view} WHERE id = '{target}'")
            }
        }
        // Several rows at once.
        _ => {
            if view == "todos" && rng.chance(50) {
                format!("UPDATE todos SET done = {} WHERE priority > {}", literal(rng), rng.below(200) as i64 - 100)
            } else {
                let column = columns[rng.below(columns.len() as u64) as usize];
                format!("UPDATE {view} SET {column} = {} WHERE id > 'id-{}'", literal(rng), rng.below(*next_id + 1))
            }
        }
    }
}

fn pick(rng: &mut Rng, ids: &[String]) -> String {
    if ids.is_empty() || rng.chance(10) {
        return "no-such-id".into();
    }
    ids[rng.below(ids.len() as u64) as usize].clone()
}

fn rows(db: &Connection, sql: &str) -> Vec<Vec<Value>> {
    let mut stmt = db.prepare(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    let n = stmt.column_count();
    stmt.query_map([], |r| (0..n).map(|i| r.get::<_, Value>(i)).collect())
        .unwrap()
        .map(|r| r.unwrap())
        .collect()
}

/// Everything the two cores must agree on.
fn state(db: &Connection) -> Vec<(String, Vec<Vec<Value>>)> {
    let mut out = vec![
        ("ps_crud".to_owned(), rows(db, "SELECT id, data, tx_id FROM ps_crud ORDER BY id")),
        ("ps_tx".to_owned(), rows(db, "SELECT * FROM ps_tx")),
        ("ps_updated_rows".to_owned(), rows(db, "SELECT * FROM ps_updated_rows ORDER BY 1, 2")),
        ("ps_kv".to_owned(), rows(db, "SELECT key, value FROM ps_kv WHERE key != 'client_id' ORDER BY key")),
        // oplite's triggers insert into ps_crud in the trigger body, so SQLite
        // records the sequence (as 0) as soon as a statement on a synced view
        // runs, even if it queues nothing; the reference only on a first row.
        ("sqlite_sequence".to_owned(), rows(db, "SELECT * FROM sqlite_sequence WHERE seq > 0 ORDER BY name")),
    ];
    for (view, _) in VIEWS {
        out.push((format!("{view} columns"), rows(db, &format!("SELECT name FROM pragma_table_info('{view}')"))));
        out.push((view.to_string(), rows(db, &format!("SELECT * FROM {view} ORDER BY id"))));
    }
    out
}

fn hooks(db: &Connection) -> String {
    db.query_row("SELECT powersync_update_hooks('get')", [], |r| r.get(0)).unwrap()
}

fn setup(db: &Connection) {
    init(db);
    db.execute("BEGIN", []).unwrap();
    db.query_row("SELECT powersync_replace_schema(?1)", [SCHEMA], |_| Ok(())).unwrap();
    db.execute("COMMIT", []).unwrap();
    db.query_row("SELECT powersync_update_hooks('install')", [], |_| Ok(())).unwrap();
    hooks(db);
}

/// Runs `sql` on both; both must succeed or fail alike.
fn both(ours: &Connection, theirs: &Connection, sql: &str, seed: u64) {
    let a = ours.execute_batch(sql);
    let b = theirs.execute_batch(sql);
    assert_eq!(
        a.as_ref().map_err(|e| e.to_string()),
        b.as_ref().map_err(|e| e.to_string()),
        "seed {seed}: {sql}"
    );
}

fn run_seed(seed: u64, transactions: usize) {
    let ours = oplite();
    let theirs = reference();
    setup(&ours);
    setup(&theirs);
    let mut rng = Rng(seed);
    let mut ids: Vec<Vec<String>> = vec![Vec::new(); VIEWS.len()];
    let mut next_id = 0;
    for step in 0..transactions {
        let autocommit = rng.chance(30);
        let count = if autocommit { 1 } else { 1 + rng.below(5) };
        let saved_ids = ids.clone();
        let statements: Vec<String> = (0..count).map(|_| statement(&mut rng, &mut ids, &mut next_id)).collect();
        if autocommit {
            both(&ours, &theirs, &statements[0], seed);
        } else {
            both(&ours, &theirs, "BEGIN", seed);
            for sql in &statements {
                both(&ours, &theirs, sql, seed);
            }
            if rng.chance(15) {
                both(&ours, &theirs, "ROLLBACK", seed);
                ids = saved_ids;
            } else {
                both(&ours, &theirs, "COMMIT", seed);
            }
        }
        let (a, b) = (state(&ours), state(&theirs));
        for ((name, x), (_, y)) in a.iter().zip(b.iter()) {
            assert_eq!(x, y, "seed {seed}, transaction {step} ({statements:?}): {name} differs");
        }
        assert_eq!(hooks(&ours), hooks(&theirs), "seed {seed}, transaction {step}: update hooks differ");
    }
}

#[test]
fn random_local_writes_match_the_reference() {
    let seeds: Vec<u64> = match std::env::var("OPLITE_SEED") {
        Ok(seed) => vec![seed.parse().expect("OPLITE_SEED must be a number")],
        Err(_) => (1..=12).collect(),
    };
    for seed in seeds {
        println!("seed {seed}");
        run_seed(seed, 120);
    }
}

#[test]
fn view_columns_and_schema_objects_match_the_reference() {
    let ours = oplite();
    let theirs = reference();
    setup(&ours);
    setup(&theirs);
    let names = |db: &Connection, kind: &str| {
        rows(db, &format!("SELECT name FROM sqlite_master WHERE type = '{kind}' AND name NOT LIKE 'sqlite_%' ORDER BY name"))
    };
    for kind in ["view", "trigger"] {
        assert_eq!(names(&ours, kind), names(&theirs, kind), "{kind}s differ");
    }
    let tables = |db: &Connection| rows(db, "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'ps_data%' ORDER BY name");
    assert_eq!(tables(&ours), tables(&theirs));
}

//! The switching guide's Rust code, run: its rusqlite snippet (docs/switching.md,
//! "Your own host") is `examples/load_extension.rs` between the `guide begin`
//! and `guide end` markers, which this test compares with the guide's
//! ```rust block, and runs against the loadable build, `$OPLITE_SO` or
//! `target/release/liboplite.so`.

use std::path::{Path, PathBuf};
use std::process::Command;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_owned()
}

/// The loadable build: `$OPLITE_SO`, or `target/release/liboplite.so`.
fn loadable() -> PathBuf {
    let so = std::env::var_os("OPLITE_SO")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("target/release/liboplite.so"));
    assert!(so.exists(), "{} is missing: run `cargo build --release --manifest-path loadable/Cargo.toml` first (scripts/test.sh does)", so.display());
    so
}

/// The lines of `text` between the lines ending with `begin` and `end`.
fn between<'a>(text: &'a str, begin: &str, end: &str) -> Vec<&'a str> {
    let mut lines = text.lines().skip_while(|l| !l.trim_end().ends_with(begin)).skip(1);
    let taken: Vec<&str> = lines.by_ref().take_while(|l| !l.trim_end().ends_with(end)).collect();
    assert!(!taken.is_empty(), "no lines between {begin:?} and {end:?}");
    taken
}

#[test]
fn the_switching_guide_shows_the_rusqlite_example_as_it_is_compiled() {
    let guide = std::fs::read_to_string(workspace().join("docs/switching.md")).unwrap();
    let example = std::fs::read_to_string(workspace().join("cli/examples/load_extension.rs")).unwrap();
    let shown = between(&guide, "```rust", "```");
    let compiled: Vec<&str> =
        between(&example, "// guide begin", "// guide end").iter().map(|l| l.strip_prefix("    ").unwrap_or(l)).collect();
    assert_eq!(shown, compiled, "docs/switching.md's ```rust block must be examples/load_extension.rs's marked lines");
}

#[test]
fn the_rusqlite_example_loads_oplite_and_prints_its_version() {
    let so = loadable();
    // Examples are built next to the test binaries: target/<profile>/examples.
    let example = std::env::current_exe().unwrap().parent().unwrap().parent().unwrap().join("examples/load_extension");
    if !example.exists() {
        // `cargo test --test readme` builds no examples.
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let built = Command::new(cargo).args(["build", "-p", "oplite-cli", "--example", "load_extension"]).status().unwrap();
        assert!(built.success() && example.exists(), "{} was not built", example.display());
    }
    let output = Command::new(&example).arg(&so).output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}{}", String::from_utf8_lossy(&output.stderr));
    let version = stdout.trim().strip_prefix("oplite ").unwrap_or_else(|| panic!("{stdout}"));
    // The core version oplite answers as, then its own build: "0.5.3/<commit>".
    let semver = version.split('/').next().unwrap();
    assert!(semver.split('.').count() == 3 && semver.split('.').all(|p| p.parse::<u32>().is_ok()), "{version}");
}

#[test]
fn the_switching_guide_sql_example_runs_as_shown() {
    let so = loadable();
    let guide = std::fs::read_to_string(workspace().join("docs/switching.md")).unwrap();
    let sql = between(&guide, "```sql", "```").join("\n");
    let conn = rusqlite::Connection::open_in_memory().unwrap();
    // SAFETY: the library is this workspace's own build.
    unsafe {
        conn.load_extension_enable().unwrap();
        conn.load_extension(&so, Some("sqlite3_oplite_init")).unwrap();
    }
    conn.execute_batch(&sql).unwrap_or_else(|e| panic!("the guide's SQL example failed: {e}\n{sql}"));
    let queued: String = conn.query_row("SELECT data FROM ps_crud", [], |r| r.get(0)).unwrap();
    let entry: serde_json::Value = serde_json::from_str(&queued).unwrap();
    assert_eq!((entry["op"].as_str(), entry["type"].as_str()), (Some("PUT"), Some("todos")));
    assert_eq!(entry["data"], serde_json::json!({"description": "Milk", "done": 0}));
}

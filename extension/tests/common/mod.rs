//! Shared set-up for the integration tests: connections with oplite
//! registered directly, loaded from the built .so, or with the reference
//! core loaded instead.
#![allow(dead_code)]

pub mod cores;
pub mod counting_vfs;
pub mod diff;
pub mod driver;
pub mod fault_vfs;
pub mod lines;
pub mod wrapping_vfs;

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use rusqlite::{Connection, LoadExtensionGuard};

/// A fresh in-memory database with oplite registered from the rlib.
pub fn oplite() -> Connection {
    let db = Connection::open_in_memory().unwrap();
    oplite::register(&db).unwrap();
    db
}

/// A fresh in-memory database with oplite registered and initialised.
pub fn oplite_initialised() -> Connection {
    let db = oplite();
    init(&db);
    db
}

/// Runs `powersync_init()` in a transaction.
pub fn init(db: &Connection) {
    db.execute_batch("BEGIN; SELECT powersync_init(); COMMIT;").unwrap();
}

/// Runs `powersync_init()` in a transaction and fixes the client id, so
/// that two databases' requests and rows compare equal.
pub fn init_fixed_client_id(db: &Connection) {
    db.execute_batch(
        "BEGIN; SELECT powersync_init();
         UPDATE ps_kv SET value = '00000000-0000-4000-8000-000000000000' WHERE key = 'client_id';
         COMMIT;",
    )
    .unwrap();
}

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// The loadable build of oplite (`cargo build --release --manifest-path
/// loadable/Cargo.toml`), or $OPLITE_SO.
pub fn oplite_so() -> PathBuf {
    let path = std::env::var_os("OPLITE_SO")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target/release/liboplite.so"));
    assert!(
        path.exists(),
        "{} is missing: run `cargo build --release --manifest-path loadable/Cargo.toml` first (scripts/test.sh does)",
        path.display()
    );
    path
}

/// The reference core 0.5.4, built by scripts/reference-core.sh from its
/// crates.io source (or $REFERENCE_CORE).
pub fn reference_so() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| reference_core("REFERENCE_CORE", "0.5.4")).clone()
}

/// The reference core 0.5.3, the one the JS SDKs bundle, downloaded by
/// scripts/reference-core.sh (or $REFERENCE_CORE_053).
pub fn reference_053_so() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| reference_core("REFERENCE_CORE_053", "0.5.3")).clone()
}

fn reference_core(variable: &str, version: &str) -> PathBuf {
    if let Some(path) = std::env::var_os(variable) {
        return PathBuf::from(path);
    }
    let script = repo_root().join("scripts/reference-core.sh");
    let out = Command::new("bash").arg(&script).arg(version).output().expect("running reference-core.sh");
    assert!(
        out.status.success(),
        "{} {version} failed: {}",
        script.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
}

/// Loads a SQLite extension from `path` with `entry` into `db`.
pub fn load(db: &Connection, path: &PathBuf, entry: &str) -> rusqlite::Result<()> {
    unsafe {
        let _guard = LoadExtensionGuard::new(db)?;
        db.load_extension(path, Some(entry))
    }
}

/// A fresh in-memory database with only the reference core 0.5.4 loaded.
pub fn reference() -> Connection {
    let db = Connection::open_in_memory().unwrap();
    load(&db, &reference_so(), "sqlite3_powersync_init").unwrap();
    db
}

/// A fresh in-memory database with only the reference core 0.5.3 loaded.
pub fn reference_053() -> Connection {
    let db = Connection::open_in_memory().unwrap();
    load(&db, &reference_053_so(), "sqlite3_powersync_init").unwrap();
    db
}

/// The SQLite extended error code of a failed call.
pub fn error_code(err: &rusqlite::Error) -> i32 {
    match err {
        rusqlite::Error::SqliteFailure(e, _) => e.extended_code,
        other => panic!("not a SQLite failure: {other:?}"),
    }
}

pub mod schema;

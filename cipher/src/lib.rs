//! Test support for oplite inside SQLCipher: opening a file with its key,
//! the markers the tests write, and a look at the stored bytes.
//!
//! The tests (tests/) run oplite's host, the `oplite` CLI's library, on a
//! SQLCipher build of SQLite: the same sync loop, upload queue and views as
//! everywhere, with every page of the file encrypted. What they check is
//! what an app that encrypts its database relies on: the key is all it
//! takes, nothing readable reaches the disk, a wrong key is refused without
//! touching the file, and a process killed mid-sync leaves an encrypted
//! file that opens with the key and syncs on. docs/mobile.md, "Encrypted
//! databases", says how an app links oplite with SQLCipher.

use std::path::{Path, PathBuf};

use oplite_cli::Database;
use rusqlite::Connection;

/// Text every synced row of the wide test shape holds
/// (`StreamSpec::wide`'s descriptions).
pub const SYNCED_MARKER: &str = "of the wide shape";
/// Text a local write puts into a row and so into the upload queue.
pub const LOCAL_MARKER: &str = "local-marker-5d1c9e0b";
/// The header of every unencrypted SQLite file.
pub const SQLITE_HEADER: &str = "SQLite format 3";

/// Gives `key` to a new connection: SQLCipher's `PRAGMA key`, before any
/// other statement.
pub fn give_key(conn: &Connection, key: &str) -> rusqlite::Result<()> {
    conn.execute_batch(&format!("PRAGMA key = '{}'", key.replace('\'', "''")))
}

/// Opens `path` with oplite's host, keyed with `key` (none: unencrypted).
pub fn open(path: &Path, key: Option<&str>) -> Result<Database, oplite_cli::Error> {
    Database::open_with(path, |conn| key.map_or(Ok(()), |key| give_key(conn, key)))
}

/// A fresh directory for one test's files.
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("oplite-cipher-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The bytes of every file in `dir` (the database, its WAL and journal).
pub fn stored_bytes(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_file())
        .map(|path| {
            let bytes = std::fs::read(&path).unwrap();
            (path, bytes)
        })
        .collect();
    files.sort();
    files
}

/// Which of `needles` occur in any file of `dir`, with the file.
pub fn plaintext_found(dir: &Path, needles: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    for (path, bytes) in stored_bytes(dir) {
        for needle in needles {
            if bytes.windows(needle.len()).any(|w| w == needle.as_bytes()) {
                found.push(format!("{needle:?} in {}", path.display()));
            }
        }
    }
    found
}

/// The SQLite library this build links, as `sqlite_version()` and
/// SQLCipher's `PRAGMA cipher_version` report it (empty without a cipher).
pub fn cipher_version(conn: &Connection) -> String {
    conn.query_row("PRAGMA cipher_version", [], |r| r.get(0)).unwrap_or_default()
}

/// liboplite.so: `OPLITE_SO`, or the release build beside this workspace.
pub fn loadable_path() -> PathBuf {
    std::env::var_os("OPLITE_SO").map(PathBuf::from).unwrap_or_else(|| {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/release/liboplite.so")
    })
}

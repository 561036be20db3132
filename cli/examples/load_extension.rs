//! The switching guide's rusqlite example (docs/switching.md), compiled by
//! `cargo test -p oplite-cli` and run by `tests/switching_guide.rs`, which also
//! checks that the guide shows exactly the code between the markers. Loads
//! `liboplite.so` (the path is the first argument) into rusqlite's bundled
//! SQLite and prints the engine's version.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).unwrap_or_else(|| "./target/release/liboplite.so".into());
    // guide begin
    // Cargo.toml: rusqlite = { version = "0.43", features = ["bundled", "load_extension"] }
    let conn = rusqlite::Connection::open_in_memory()?;
    // SAFETY: loading a library runs its code; load only one you trust.
    unsafe {
        conn.load_extension_enable()?;
        conn.load_extension(&path, Some("sqlite3_oplite_init"))?;
        conn.load_extension_disable()?;
    }
    conn.execute_batch("BEGIN; SELECT powersync_init(); COMMIT;")?;
    let version: String = conn.query_row("SELECT powersync_rs_version()", [], |row| row.get(0))?;
    println!("oplite {version}");
    // guide end
    Ok(())
}

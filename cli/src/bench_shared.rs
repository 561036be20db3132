//! What the two benchmark binaries (`oplite-bench`, `oplite-steady`) share:
//! the reference cores (the extension's benches' module, so every benchmark
//! finds them alike) and removing a run's database. Included by each with
//! `#[path]`, so it is not part of the host's library.

use std::path::Path;

#[path = "../../extension/benches/common/mod.rs"]
mod reference_cores;
pub use reference_cores::{with_direct_tables, Reference};

/// Removes a run's database with its journal files.
pub fn remove_db(path: &Path) {
    let _ = oplite_cli::demo::remove_database(path);
}

/// Runs `child` for `--child ARGS...` (one measured run in a process of its
/// own) and `parent` otherwise; an error is printed after `name`.
pub fn main(
    name: &str,
    parent: fn(&[String]) -> Result<(), String>,
    child: fn(&[String]) -> Result<(), String>,
) -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = if args.first().map(String::as_str) == Some("--child") { child(&args[1..]) } else { parent(&args) };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{name}: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

//! What the benchmark binaries (`oplite-bench`, `oplite-steady`, `oplite-small`) share:
//! the reference cores (the extension's benches' module, so every benchmark
//! finds them alike) and removing a run's database. Included by each with
//! `#[path]`, so it is not part of the host's library.

use std::path::Path;

#[path = "../../extension/benches/common/mod.rs"]
mod reference_cores;
// Not every benchmark declares direct tables.
#[allow(unused_imports)]
pub use reference_cores::{with_direct_tables, Reference};

/// Removes a run's database with its journal files.
pub fn remove_db(path: &Path) {
    let _ = oplite_cli::demo::remove_database(path);
}

/// The median of `values` (the mean of the middle two of an even count;
/// 0 for none).
pub fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    if values.is_empty() {
        return 0.0;
    }
    let mid = values.len() / 2;
    if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    }
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

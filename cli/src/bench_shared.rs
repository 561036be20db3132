//! What the two benchmark binaries (`oplite-bench`, `oplite-steady`) share:
//! finding the reference core and removing a run's database. Included by
//! each with `#[path]`, so it is not part of the host's library.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The reference core: `$REFERENCE_CORE`, or what scripts/reference-core.sh
/// fetches and prints.
pub fn reference_core() -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os("REFERENCE_CORE") {
        return Ok(PathBuf::from(path));
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/reference-core.sh");
    let output = Command::new("bash").arg(&script).output().map_err(|e| format!("{}: {e}", script.display()))?;
    if !output.status.success() {
        return Err(format!("{} failed: {}", script.display(), String::from_utf8_lossy(&output.stderr)));
    }
    Ok(PathBuf::from(String::from_utf8_lossy(&output.stdout).trim()))
}

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

//! Shared by the bench binaries.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The reference core: $REFERENCE_CORE, or fetched by
/// scripts/reference-core.sh.
pub fn reference_core() -> PathBuf {
    if let Some(path) = std::env::var_os("REFERENCE_CORE") {
        return path.into();
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/reference-core.sh");
    let out = Command::new("bash").arg(script).output().expect("running reference-core.sh");
    assert!(out.status.success(), "reference-core.sh failed: {}", String::from_utf8_lossy(&out.stderr));
    PathBuf::from(String::from_utf8(out.stdout).expect("a path").trim())
}

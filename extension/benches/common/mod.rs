//! The reference cores every benchmark compares oplite with: core 0.5.4,
//! the specification, and core 0.5.3, the one the JS SDKs still bundle.
//! One place finds and loads them, so the extension's benches and the
//! CLI's benchmark binaries (which include this file with `#[path]`) name
//! the same libraries the same way.
//!
//! A core's library is `$REFERENCE_CORE` (0.5.4) or `$REFERENCE_CORE_053`
//! (0.5.3) when set, else what `scripts/reference-core.sh VERSION` builds or
//! downloads and prints. A parent process resolves it once and passes it to
//! its children in that variable.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use rusqlite::Connection;

/// A reference core.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Reference {
    /// Core 0.5.4, the specification (direct tables).
    V054,
    /// Core 0.5.3 (no direct tables).
    V053,
}

impl Reference {
    /// Both, the specification first.
    pub const ALL: [Reference; 2] = [Reference::V054, Reference::V053];

    /// "0.5.4" or "0.5.3".
    pub fn version(self) -> &'static str {
        match self {
            Reference::V054 => "0.5.4",
            Reference::V053 => "0.5.3",
        }
    }

    /// The environment variable that names its library.
    pub fn variable(self) -> &'static str {
        match self {
            Reference::V054 => "REFERENCE_CORE",
            Reference::V053 => "REFERENCE_CORE_053",
        }
    }

    /// "reference 0.5.4", as tables label it.
    pub fn label(self) -> String {
        format!("reference {}", self.version())
    }

    /// Whether its schemas may declare `"direct": true` tables.
    pub fn has_direct_tables(self) -> bool {
        self == Reference::V054
    }

    /// Its library (looked up once per process).
    pub fn path(self) -> Result<PathBuf, String> {
        static PATHS: [OnceLock<Result<PathBuf, String>>; 2] = [OnceLock::new(), OnceLock::new()];
        PATHS[self as usize].get_or_init(|| self.find()).clone()
    }

    fn find(self) -> Result<PathBuf, String> {
        if let Some(path) = std::env::var_os(self.variable()) {
            return Ok(PathBuf::from(path));
        }
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/reference-core.sh");
        let output = Command::new("bash")
            .arg(&script)
            .arg(self.version())
            .output()
            .map_err(|e| format!("{}: {e}", script.display()))?;
        if !output.status.success() {
            return Err(format!(
                "{} {} failed: {}",
                script.display(),
                self.version(),
                String::from_utf8_lossy(&output.stderr)
            ));
        }
        Ok(PathBuf::from(String::from_utf8_lossy(&output.stdout).trim()))
    }

    /// Loads it into `conn`.
    pub fn load(self, conn: &Connection) -> Result<(), String> {
        let path = self.path()?;
        let failed = |e: rusqlite::Error| format!("loading the reference core {} ({}): {e}", self.version(), path.display());
        unsafe {
            let _guard = rusqlite::LoadExtensionGuard::new(conn).map_err(failed)?;
            conn.load_extension(&path, Some("sqlite3_powersync_init")).map_err(failed)
        }
    }

    /// Makes `command` (a child run) find the same library.
    pub fn pass_to(self, command: &mut Command) -> Result<(), String> {
        command.env(self.variable(), self.path()?);
        Ok(())
    }
}

/// `schema` with every table a direct table (core 0.5.4's `"direct": true`).
pub fn with_direct_tables(mut schema: serde_json::Value) -> serde_json::Value {
    for table in schema["tables"].as_array_mut().into_iter().flatten() {
        table["direct"] = serde_json::Value::Bool(true);
    }
    schema
}

/// The engine of a bench run: oplite of this build, or a reference core.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Core {
    Oplite,
    Reference(Reference),
}

impl Core {
    /// oplite, then the reference cores.
    pub const ALL: [Core; 3] = [Core::Oplite, Core::Reference(Reference::V054), Core::Reference(Reference::V053)];

    /// Its name on a command line and in file names: `oplite`, `0.5.4`,
    /// `0.5.3`.
    pub fn name(self) -> &'static str {
        match self {
            Core::Oplite => "oplite",
            Core::Reference(reference) => reference.version(),
        }
    }

    pub fn parse(name: &str) -> Option<Core> {
        Core::ALL.into_iter().find(|c| c.name() == name)
    }

    /// "oplite" or "reference 0.5.4", as tables label it.
    pub fn label(self) -> String {
        match self {
            Core::Oplite => "oplite".to_owned(),
            Core::Reference(reference) => reference.label(),
        }
    }

    /// Registers oplite on `conn`, or loads the reference core into it.
    pub fn install(self, conn: &Connection) -> Result<(), String> {
        match self {
            Core::Oplite => oplite::register(conn).map_err(|e| e.to_string()),
            Core::Reference(reference) => reference.load(conn),
        }
    }
}

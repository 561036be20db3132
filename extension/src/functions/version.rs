//! Version reporting: `powersync_rs_version()` for the SDKs' compatibility
//! check and `oplite_version()` for humans.
//!
//! The SDKs check `powersync_rs_version()` against a semver range (the Node
//! SDK 1.1.0 accepts >=0.5.2 <0.6.0), so it reports the PowerSync core
//! protocol level oplite implements, not oplite's own version.

use rusqlite::types::Value;
use rusqlite::Connection;

use crate::error::Result;
use crate::sqlite::{register_scalar, Purity};

/// The PowerSync core version whose SQL surface oplite implements.
pub const POWERSYNC_COMPAT_VERSION: &str = "0.5.4";

/// oplite's own version.
pub const OPLITE_VERSION: &str = env!("CARGO_PKG_VERSION");

/// The git revision this build was made from ("unknown" outside git).
pub const GIT_HASH: &str = env!("OPLITE_GIT_HASH");

pub(super) fn register(db: &Connection) -> Result<()> {
    register_scalar(
        db,
        "powersync_rs_version",
        0,
        Purity::Deterministic,
        Box::new(|_, _| Ok(Value::Text(format!("{POWERSYNC_COMPAT_VERSION}/{GIT_HASH}")))),
    )?;
    register_scalar(
        db,
        "oplite_version",
        0,
        Purity::Deterministic,
        Box::new(|_, _| Ok(Value::Text(format!("oplite {OPLITE_VERSION} ({GIT_HASH})")))),
    )
}

//! Identifiers as SQL functions: `uuid()`, `gen_random_uuid()` and
//! `powersync_client_id()`, which the SDKs call; the ids themselves come
//! from `client_id.rs` and `uuid.rs`.

use rusqlite::types::Value;
use rusqlite::Connection;

use crate::client_id::client_id;
use crate::uuid::random_uuid;
use crate::error::Result;
use crate::sqlite::{register_scalar, Purity};

pub(super) fn register(db: &Connection) -> Result<()> {
    for name in ["uuid", "gen_random_uuid"] {
        register_scalar(db, name, 0, Purity::Volatile, Box::new(|_, _| Ok(Value::Text(random_uuid()))))?;
    }
    register_scalar(
        db,
        "powersync_client_id",
        0,
        Purity::Volatile,
        Box::new(|db, _| client_id(db).map(Value::Text)),
    )
}

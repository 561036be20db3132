//! The client id, a random UUID stored in `ps_kv` once per database, and
//! `powersync_init()`, the set-up that creates it. The SQL functions, the
//! schema (`powersync_replace_schema` runs the set-up first) and the sync
//! client (which sends the id with every request) all need these, so they
//! live outside each of them.

use rusqlite::{Connection, OptionalExtension};

use crate::error::{OpliteError, Result, SqliteResultExt};
use crate::migrations::{current_version, migrate_to, LATEST_VERSION};
use crate::kv;
use crate::uuid::random_uuid;

/// Brings the internal schema to the latest version and makes sure a client
/// id exists. Idempotent, and writes nothing when both are there already, so
/// it also succeeds on a read-only connection to an initialised database
/// (the SDKs run it on their read connections). A read-only connection that
/// finds the id missing leaves it missing, as the reference does: only the
/// migrations create it there, and a read connection cannot write it.
pub fn powersync_init(db: &Connection) -> Result<()> {
    migrate_to(db, LATEST_VERSION)?;
    let has_id = kv::text(db, kv::CLIENT_ID)?.is_some();
    if has_id || db.is_readonly(rusqlite::MAIN_DB).context("checking for a read-only database")? {
        return Ok(());
    }
    kv::set(db, kv::CLIENT_ID, &random_uuid())
}

/// The client id stored in ps_kv by `powersync_init()`.
pub fn client_id(db: &Connection) -> Result<String> {
    if current_version(db)? == 0 {
        return Err(OpliteError::Misuse {
            function: "powersync_client_id",
            reason: "no client id: call powersync_init() first".into(),
        });
    }
    let id: Option<String> = db
        .query_row("SELECT value FROM ps_kv WHERE key = 'client_id'", [], |row| row.get(0))
        .optional()
        .context("reading the client id")?;
    id.ok_or(OpliteError::MissingClientId)
}

//! The client id, a random UUID stored in `ps_kv` once per database, and
//! `powersync_init()`, the set-up that creates it. The SQL functions, the
//! schema (`powersync_replace_schema` runs the set-up first) and the sync
//! client (which sends the id with every request) all need these, so they
//! live outside each of them. Random bytes come from `sqlite3_randomness`,
//! which SQLite seeds from its VFS; that works the same natively and in the
//! browser without another source of entropy.

use rusqlite::{Connection, OptionalExtension};

use crate::error::{OpliteError, Result, SqliteResultExt};
use crate::migrations::{current_version, migrate_to, LATEST_VERSION};
use crate::kv;
use crate::sqlite::random_bytes;

/// A random (version 4) UUID in lower-case hyphenated form.
pub fn random_uuid() -> String {
    let mut bytes = [0u8; 16];
    random_bytes(&mut bytes);
    format_uuid_v4(bytes)
}

/// Sets the version and variant bits of `bytes` and formats them.
fn format_uuid_v4(mut bytes: [u8; 16]) -> String {
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let mut out = String::with_capacity(36);
    for (i, b) in bytes.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            out.push('-');
        }
        out.push(char::from_digit(u32::from(b >> 4), 16).unwrap_or('0'));
        out.push(char::from_digit(u32::from(b & 0xf), 16).unwrap_or('0'));
    }
    out
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuid_has_version_and_variant_bits() {
        let s = format_uuid_v4([0xff; 16]);
        assert_eq!(s, "ffffffff-ffff-4fff-bfff-ffffffffffff");
        let s = format_uuid_v4([0; 16]);
        assert_eq!(s, "00000000-0000-4000-8000-000000000000");
    }
}

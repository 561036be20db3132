//! A test VFS that wraps the default one and counts bytes written to
//! temporary files (temp databases, transient tables, sorter spills,
//! statement journals). sync_local promises never to build a temporary
//! b-tree; this proves none spilled to disk.
#![allow(dead_code)]

use std::ffi::c_int;
use std::sync::atomic::{AtomicI64, Ordering};

use rusqlite::ffi;

use super::wrapping_vfs::{self, Hooks, Io};

static TEMP_BYTES: AtomicI64 = AtomicI64::new(0);

const TEMP_FLAGS: c_int = ffi::SQLITE_OPEN_TEMP_DB
    | ffi::SQLITE_OPEN_TEMP_JOURNAL
    | ffi::SQLITE_OPEN_TRANSIENT_DB
    | ffi::SQLITE_OPEN_SUBJOURNAL;

static HOOKS: Hooks = Hooks {
    watch: |flags| flags & TEMP_FLAGS != 0,
    before: |io| {
        if let Io::Write(bytes) = io {
            TEMP_BYTES.fetch_add(bytes as i64, Ordering::SeqCst);
        }
        None
    },
    mmap: true,
};

/// Bytes written to temporary files since the last [`reset`].
pub fn temp_bytes_written() -> i64 {
    TEMP_BYTES.load(Ordering::SeqCst)
}

/// Sets the counter to zero.
pub fn reset() {
    TEMP_BYTES.store(0, Ordering::SeqCst);
}

/// Registers the counting VFS as the default for connections opened after
/// this call. Idempotent.
pub fn register_as_default() {
    wrapping_vfs::register(c"counting", &HOOKS, true);
}

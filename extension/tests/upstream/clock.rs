//! A fake clock for SQLite: a VFS that is the default one except for its
//! current time, which is a per-thread value tests set and advance (the
//! Dart suite's `fakeAsync` clock, starting at 2025-03-01 10:00 UTC).

use std::cell::Cell;
use std::ffi::{c_double, c_int, CStr};
use std::sync::Once;

use rusqlite::ffi;

/// 2025-03-01T10:00:00Z in Unix milliseconds.
pub const START_MS: i64 = 1_740_823_200_000;

/// Unix epoch as a Julian day number, in milliseconds.
const JULIAN_EPOCH_MS: i64 = 210_866_760_000_000;

thread_local! {
    static NOW_MS: Cell<i64> = const { Cell::new(START_MS) };
}

/// The fake time in Unix milliseconds.
pub fn now_ms() -> i64 {
    NOW_MS.with(Cell::get)
}

/// Sets the fake clock of this thread back to its start.
pub fn reset() {
    NOW_MS.with(|now| now.set(START_MS));
}

/// Moves the fake clock of this thread forward.
pub fn advance(duration: std::time::Duration) {
    NOW_MS.with(|now| now.set(now.get() + duration.as_millis() as i64));
}

/// The fake time plus an offset, in microseconds (the Dart `timestamp()`).
pub fn timestamp_micros(plus_seconds: i64) -> i64 {
    (now_ms() + plus_seconds * 1000) * 1000
}

unsafe extern "C" fn current_time_int64(_vfs: *mut ffi::sqlite3_vfs, out: *mut i64) -> c_int {
    unsafe { *out = now_ms() + JULIAN_EPOCH_MS };
    ffi::SQLITE_OK
}

unsafe extern "C" fn current_time(_vfs: *mut ffi::sqlite3_vfs, out: *mut c_double) -> c_int {
    unsafe { *out = (now_ms() + JULIAN_EPOCH_MS) as f64 / 86_400_000.0 };
    ffi::SQLITE_OK
}

const NAME: &CStr = c"upstream-fake-clock";

/// Registers the VFS once (not as the default) and returns its name.
pub fn vfs_name() -> &'static str {
    static REGISTER: Once = Once::new();
    REGISTER.call_once(|| unsafe {
        let base = ffi::sqlite3_vfs_find(std::ptr::null());
        assert!(!base.is_null());
        let mut vfs = std::ptr::read(base);
        vfs.zName = NAME.as_ptr();
        vfs.pNext = std::ptr::null_mut();
        vfs.xCurrentTime = Some(current_time);
        if vfs.iVersion >= 2 {
            vfs.xCurrentTimeInt64 = Some(current_time_int64);
        }
        let vfs = Box::leak(Box::new(vfs));
        assert_eq!(ffi::sqlite3_vfs_register(vfs, 0), ffi::SQLITE_OK);
    });
    NAME.to_str().unwrap()
}

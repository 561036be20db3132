//! A test VFS that wraps the default one and counts bytes written to
//! temporary files (temp databases, transient tables, sorter spills,
//! statement journals). sync_local promises never to build a temporary
//! b-tree; this proves none spilled to disk.
//!
//! Test support only: it is unsafe glue between SQLite's C structs and a
//! counter, kept out of the extension.
#![allow(dead_code)]

use std::ffi::{c_char, c_int, c_void};
use std::ptr;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Once;

use rusqlite::ffi;

static TEMP_BYTES: AtomicI64 = AtomicI64::new(0);
static REGISTER: Once = Once::new();
static mut BASE: *mut ffi::sqlite3_vfs = ptr::null_mut();
static mut VFS: ffi::sqlite3_vfs = unsafe { std::mem::zeroed() };

const TEMP_FLAGS: c_int = ffi::SQLITE_OPEN_TEMP_DB
    | ffi::SQLITE_OPEN_TEMP_JOURNAL
    | ffi::SQLITE_OPEN_TRANSIENT_DB
    | ffi::SQLITE_OPEN_SUBJOURNAL;

/// Bytes written to temporary files since the last [`reset`].
pub fn temp_bytes_written() -> i64 {
    TEMP_BYTES.load(Ordering::SeqCst)
}

/// Sets the counter to zero.
pub fn reset() {
    TEMP_BYTES.store(0, Ordering::SeqCst);
}

#[repr(C)]
struct CountingFile {
    base: ffi::sqlite3_file,
    temp: bool,
    real: *mut ffi::sqlite3_file,
}

static mut METHODS: ffi::sqlite3_io_methods = unsafe { std::mem::zeroed() };

/// Registers the counting VFS as the default for connections opened after
/// this call. Idempotent.
pub fn register_as_default() {
    REGISTER.call_once(|| unsafe {
        let base = ffi::sqlite3_vfs_find(ptr::null());
        assert!(!base.is_null());
        BASE = base;
        let vfs = &mut *ptr::addr_of_mut!(VFS);
        *vfs = ptr::read(base);
        vfs.szOsFile = (std::mem::size_of::<CountingFile>() as c_int) + (*base).szOsFile;
        vfs.zName = c"counting".as_ptr();
        vfs.pAppData = ptr::null_mut();
        vfs.xOpen = Some(x_open);
        let methods = &mut *ptr::addr_of_mut!(METHODS);
        methods.iVersion = 3;
        methods.xClose = Some(x_close);
        methods.xRead = Some(x_read);
        methods.xWrite = Some(x_write);
        methods.xTruncate = Some(x_truncate);
        methods.xSync = Some(x_sync);
        methods.xFileSize = Some(x_file_size);
        methods.xLock = Some(x_lock);
        methods.xUnlock = Some(x_unlock);
        methods.xCheckReservedLock = Some(x_check_reserved_lock);
        methods.xFileControl = Some(x_file_control);
        methods.xSectorSize = Some(x_sector_size);
        methods.xDeviceCharacteristics = Some(x_device_characteristics);
        methods.xShmMap = Some(x_shm_map);
        methods.xShmLock = Some(x_shm_lock);
        methods.xShmBarrier = Some(x_shm_barrier);
        methods.xShmUnmap = Some(x_shm_unmap);
        methods.xFetch = Some(x_fetch);
        methods.xUnfetch = Some(x_unfetch);
        assert_eq!(ffi::sqlite3_vfs_register(vfs, 1), ffi::SQLITE_OK);
    });
}

unsafe extern "C" fn x_open(
    _vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    unsafe {
        let ours = file.cast::<CountingFile>();
        let real = file.cast::<u8>().add(std::mem::size_of::<CountingFile>()).cast::<ffi::sqlite3_file>();
        (*ours).base.pMethods = ptr::null();
        (*ours).real = real;
        (*ours).temp = flags & TEMP_FLAGS != 0;
        let rc = ((*BASE).xOpen.unwrap())(BASE, name, real, flags, out_flags);
        if rc == ffi::SQLITE_OK && !(*real).pMethods.is_null() {
            (*ours).base.pMethods = ptr::addr_of!(METHODS);
        }
        rc
    }
}

unsafe fn real(file: *mut ffi::sqlite3_file) -> *mut ffi::sqlite3_file {
    unsafe { (*file.cast::<CountingFile>()).real }
}

macro_rules! forward {
    ($file:expr, $method:ident $(, $arg:expr)*) => {{
        let real = real($file);
        match (*(*real).pMethods).$method {
            Some(f) => f(real $(, $arg)*),
            None => ffi::SQLITE_IOERR,
        }
    }};
}

unsafe extern "C" fn x_close(file: *mut ffi::sqlite3_file) -> c_int {
    unsafe { forward!(file, xClose) }
}
unsafe extern "C" fn x_read(file: *mut ffi::sqlite3_file, buf: *mut c_void, amount: c_int, offset: i64) -> c_int {
    unsafe { forward!(file, xRead, buf, amount, offset) }
}
unsafe extern "C" fn x_write(file: *mut ffi::sqlite3_file, buf: *const c_void, amount: c_int, offset: i64) -> c_int {
    unsafe {
        if (*file.cast::<CountingFile>()).temp {
            TEMP_BYTES.fetch_add(i64::from(amount), Ordering::SeqCst);
        }
        forward!(file, xWrite, buf, amount, offset)
    }
}
unsafe extern "C" fn x_truncate(file: *mut ffi::sqlite3_file, size: i64) -> c_int {
    unsafe { forward!(file, xTruncate, size) }
}
unsafe extern "C" fn x_sync(file: *mut ffi::sqlite3_file, flags: c_int) -> c_int {
    unsafe { forward!(file, xSync, flags) }
}
unsafe extern "C" fn x_file_size(file: *mut ffi::sqlite3_file, size: *mut i64) -> c_int {
    unsafe { forward!(file, xFileSize, size) }
}
unsafe extern "C" fn x_lock(file: *mut ffi::sqlite3_file, lock: c_int) -> c_int {
    unsafe { forward!(file, xLock, lock) }
}
unsafe extern "C" fn x_unlock(file: *mut ffi::sqlite3_file, lock: c_int) -> c_int {
    unsafe { forward!(file, xUnlock, lock) }
}
unsafe extern "C" fn x_check_reserved_lock(file: *mut ffi::sqlite3_file, out: *mut c_int) -> c_int {
    unsafe { forward!(file, xCheckReservedLock, out) }
}
unsafe extern "C" fn x_file_control(file: *mut ffi::sqlite3_file, op: c_int, arg: *mut c_void) -> c_int {
    unsafe { forward!(file, xFileControl, op, arg) }
}
unsafe extern "C" fn x_sector_size(file: *mut ffi::sqlite3_file) -> c_int {
    unsafe {
        let real = real(file);
        (*(*real).pMethods).xSectorSize.map_or(4096, |f| f(real))
    }
}
unsafe extern "C" fn x_device_characteristics(file: *mut ffi::sqlite3_file) -> c_int {
    unsafe {
        let real = real(file);
        (*(*real).pMethods).xDeviceCharacteristics.map_or(0, |f| f(real))
    }
}
unsafe extern "C" fn x_shm_map(
    file: *mut ffi::sqlite3_file,
    page: c_int,
    size: c_int,
    extend: c_int,
    out: *mut *mut c_void,
) -> c_int {
    unsafe { forward!(file, xShmMap, page, size, extend, out) }
}
unsafe extern "C" fn x_shm_lock(file: *mut ffi::sqlite3_file, offset: c_int, n: c_int, flags: c_int) -> c_int {
    unsafe { forward!(file, xShmLock, offset, n, flags) }
}
unsafe extern "C" fn x_shm_barrier(file: *mut ffi::sqlite3_file) {
    unsafe {
        let real = real(file);
        if let Some(f) = (*(*real).pMethods).xShmBarrier {
            f(real)
        }
    }
}
unsafe extern "C" fn x_shm_unmap(file: *mut ffi::sqlite3_file, delete: c_int) -> c_int {
    unsafe { forward!(file, xShmUnmap, delete) }
}
unsafe extern "C" fn x_fetch(file: *mut ffi::sqlite3_file, offset: i64, amount: c_int, out: *mut *mut c_void) -> c_int {
    unsafe { forward!(file, xFetch, offset, amount, out) }
}
unsafe extern "C" fn x_unfetch(file: *mut ffi::sqlite3_file, offset: i64, page: *mut c_void) -> c_int {
    unsafe { forward!(file, xUnfetch, offset, page) }
}

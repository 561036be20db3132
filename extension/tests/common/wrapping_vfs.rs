//! A VFS that wraps the default one, forwards every call to it, and lets a
//! test watch (and fail) the reads, writes and syncs of the files it
//! chooses: the shared part of `counting_vfs.rs` and `fault_vfs.rs`.
//!
//! Test support only: unsafe glue between SQLite's C structs and a pair of
//! plain functions, kept out of the extension.
#![allow(dead_code)]

use std::ffi::{c_char, c_int, c_void, CStr};
use std::ptr;
use std::sync::Mutex;

use rusqlite::ffi;

/// An I/O call of a watched file.
#[derive(Clone, Copy, Debug)]
pub enum Io {
    Read,
    /// A write of this many bytes.
    Write(u64),
    Sync,
}

/// What a wrapping VFS does besides forwarding.
pub struct Hooks {
    /// Whether a file opened with these `SQLITE_OPEN_*` flags is watched.
    pub watch: fn(c_int) -> bool,
    /// Runs before each read, write or sync of a watched file; `Some(code)`
    /// fails the call with that code instead of forwarding it.
    pub before: fn(Io) -> Option<c_int>,
    /// Forward memory-mapped I/O; without it every page goes through
    /// xRead and xWrite, where `before` sees it.
    pub mmap: bool,
}

/// One registered VFS; leaked, as SQLite keeps pointing at it.
#[repr(C)]
struct Wrapper {
    vfs: ffi::sqlite3_vfs,
    methods: ffi::sqlite3_io_methods,
    base: *mut ffi::sqlite3_vfs,
    hooks: &'static Hooks,
}

#[repr(C)]
struct WrappedFile {
    base: ffi::sqlite3_file,
    watched: bool,
    hooks: *const Hooks,
    real: *mut ffi::sqlite3_file,
}

static REGISTERING: Mutex<()> = Mutex::new(());

/// Registers a VFS called `name` that wraps the current default one with
/// `hooks`, and makes it the default if `make_default`. Does nothing if a
/// VFS of that name exists.
pub fn register(name: &'static CStr, hooks: &'static Hooks, make_default: bool) {
    let _guard = REGISTERING.lock().unwrap_or_else(|e| e.into_inner());
    unsafe {
        if !ffi::sqlite3_vfs_find(name.as_ptr()).is_null() {
            return;
        }
        let base = ffi::sqlite3_vfs_find(ptr::null());
        assert!(!base.is_null());
        let mut vfs = ptr::read(base);
        vfs.szOsFile = (std::mem::size_of::<WrappedFile>() as c_int) + (*base).szOsFile;
        vfs.zName = name.as_ptr();
        vfs.pNext = ptr::null_mut();
        vfs.xOpen = Some(x_open);
        let methods = ffi::sqlite3_io_methods {
            iVersion: if hooks.mmap { 3 } else { 2 },
            xClose: Some(x_close),
            xRead: Some(x_read),
            xWrite: Some(x_write),
            xTruncate: Some(x_truncate),
            xSync: Some(x_sync),
            xFileSize: Some(x_file_size),
            xLock: Some(x_lock),
            xUnlock: Some(x_unlock),
            xCheckReservedLock: Some(x_check_reserved_lock),
            xFileControl: Some(x_file_control),
            xSectorSize: Some(x_sector_size),
            xDeviceCharacteristics: Some(x_device_characteristics),
            xShmMap: Some(x_shm_map),
            xShmLock: Some(x_shm_lock),
            xShmBarrier: Some(x_shm_barrier),
            xShmUnmap: Some(x_shm_unmap),
            xFetch: if hooks.mmap { Some(x_fetch) } else { None },
            xUnfetch: if hooks.mmap { Some(x_unfetch) } else { None },
        };
        let wrapper = Box::leak(Box::new(Wrapper { vfs, methods, base, hooks }));
        wrapper.vfs.pAppData = ptr::addr_of_mut!(*wrapper).cast::<c_void>();
        assert_eq!(ffi::sqlite3_vfs_register(&mut wrapper.vfs, c_int::from(make_default)), ffi::SQLITE_OK);
    }
}

unsafe extern "C" fn x_open(
    vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    unsafe {
        let wrapper = &*(*vfs).pAppData.cast::<Wrapper>();
        let ours = file.cast::<WrappedFile>();
        let real = file.cast::<u8>().add(std::mem::size_of::<WrappedFile>()).cast::<ffi::sqlite3_file>();
        (*ours).base.pMethods = ptr::null();
        (*ours).real = real;
        (*ours).hooks = wrapper.hooks;
        (*ours).watched = (wrapper.hooks.watch)(flags);
        let rc = ((*wrapper.base).xOpen.unwrap())(wrapper.base, name, real, flags, out_flags);
        if rc == ffi::SQLITE_OK && !(*real).pMethods.is_null() {
            (*ours).base.pMethods = &wrapper.methods;
        }
        rc
    }
}

unsafe fn real(file: *mut ffi::sqlite3_file) -> *mut ffi::sqlite3_file {
    unsafe { (*file.cast::<WrappedFile>()).real }
}

/// The code to fail `io` with, if the file is watched and its hook says so.
unsafe fn before(file: *mut ffi::sqlite3_file, io: Io) -> Option<c_int> {
    unsafe {
        let file = &*file.cast::<WrappedFile>();
        if file.watched {
            ((*file.hooks).before)(io)
        } else {
            None
        }
    }
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
    unsafe { before(file, Io::Read).unwrap_or_else(|| forward!(file, xRead, buf, amount, offset)) }
}
unsafe extern "C" fn x_write(file: *mut ffi::sqlite3_file, buf: *const c_void, amount: c_int, offset: i64) -> c_int {
    unsafe {
        before(file, Io::Write(amount.max(0) as u64)).unwrap_or_else(|| forward!(file, xWrite, buf, amount, offset))
    }
}
unsafe extern "C" fn x_truncate(file: *mut ffi::sqlite3_file, size: i64) -> c_int {
    unsafe { forward!(file, xTruncate, size) }
}
unsafe extern "C" fn x_sync(file: *mut ffi::sqlite3_file, flags: c_int) -> c_int {
    unsafe { before(file, Io::Sync).unwrap_or_else(|| forward!(file, xSync, flags)) }
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

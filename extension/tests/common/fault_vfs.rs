//! A fault-injecting VFS: wraps the default one and, following a plan set
//! per thread, fails the N-th read, write or sync of a database, WAL or
//! journal file with a chosen error code, fails writes with `SQLITE_FULL`
//! once a byte budget is spent, or kills the whole process with SIGKILL at
//! the N-th write or sync (a crash at an exact point inside a commit).
//!
//! The plan is thread-local because SQLite calls the VFS on the thread that
//! runs the statement, so tests running in parallel do not see each other's
//! faults. Connections must be opened with [`NAME`] as their VFS.
//!
//! Test support only: the same pattern as `counting_vfs.rs`.
#![allow(dead_code)]

use std::cell::RefCell;
use std::ffi::{c_char, c_int, c_void};
use std::ptr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Once;

use rusqlite::ffi;

/// The VFS name to open connections with.
pub const NAME: &str = "oplite-fault";

/// What to do to the next I/O calls of this thread.
#[derive(Clone, Debug, Default)]
pub struct Plan {
    /// Fail the write with this 1-based index (counted from [`arm`]).
    pub fail_write_at: Option<u64>,
    /// Fail the read with this 1-based index.
    pub fail_read_at: Option<u64>,
    /// Fail the sync with this 1-based index.
    pub fail_sync_at: Option<u64>,
    /// After this many bytes written, writes fail with `SQLITE_FULL`.
    pub write_budget: Option<u64>,
    /// SIGKILL the process at this write or sync (1-based, both counted).
    pub kill_at: Option<u64>,
    /// Keep failing after the first fault (a disk that stays broken) rather
    /// than failing once.
    pub sticky: bool,
}

/// What the VFS saw on this thread since [`arm`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Reads of database, WAL or journal files.
    pub reads: u64,
    /// Writes of those files.
    pub writes: u64,
    /// Syncs of those files.
    pub syncs: u64,
    /// Bytes written.
    pub bytes: u64,
    /// Faults injected.
    pub faults: u64,
}

#[derive(Default)]
struct State {
    plan: Plan,
    counts: Counts,
}

/// Whether the call numbered `count` is the one planned to fail (or a later
/// one, for a disk that stays broken).
fn hit(at: Option<u64>, count: u64, sticky: bool) -> bool {
    at.is_some_and(|n| count == n || (sticky && count > n))
}

thread_local! {
    static STATE: RefCell<State> = RefCell::new(State::default());
}

/// Faults injected by every thread since the process started.
static TOTAL_FAULTS: AtomicU64 = AtomicU64::new(0);

/// Faults injected by every thread of this process.
pub fn total_faults() -> u64 {
    TOTAL_FAULTS.load(Ordering::SeqCst)
}

/// Sets this thread's plan and zeroes its counts.
pub fn arm(plan: Plan) {
    STATE.with(|s| *s.borrow_mut() = State { plan, ..Default::default() });
}

/// Stops injecting faults on this thread; returns what was seen.
pub fn disarm() -> Counts {
    STATE.with(|s| {
        let mut s = s.borrow_mut();
        let counts = s.counts;
        *s = State::default();
        counts
    })
}

/// What this thread's VFS calls saw since [`arm`].
pub fn counts() -> Counts {
    STATE.with(|s| s.borrow().counts)
}

static REGISTER: Once = Once::new();
static mut BASE: *mut ffi::sqlite3_vfs = ptr::null_mut();
static mut VFS: ffi::sqlite3_vfs = unsafe { std::mem::zeroed() };
static mut METHODS: ffi::sqlite3_io_methods = unsafe { std::mem::zeroed() };

const WATCHED: c_int = ffi::SQLITE_OPEN_MAIN_DB | ffi::SQLITE_OPEN_WAL | ffi::SQLITE_OPEN_MAIN_JOURNAL;

#[repr(C)]
struct FaultFile {
    base: ffi::sqlite3_file,
    watched: bool,
    real: *mut ffi::sqlite3_file,
}

/// Registers the VFS under [`NAME`] (not as the default). Idempotent.
pub fn register() {
    REGISTER.call_once(|| unsafe {
        let base = ffi::sqlite3_vfs_find(ptr::null());
        assert!(!base.is_null());
        BASE = base;
        let vfs = &mut *ptr::addr_of_mut!(VFS);
        *vfs = ptr::read(base);
        vfs.szOsFile = (std::mem::size_of::<FaultFile>() as c_int) + (*base).szOsFile;
        vfs.zName = c"oplite-fault".as_ptr();
        vfs.pAppData = ptr::null_mut();
        vfs.pNext = ptr::null_mut();
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
        // No memory-mapped I/O: every page goes through xRead/xWrite.
        methods.xFetch = None;
        methods.xUnfetch = None;
        methods.iVersion = 2;
        assert_eq!(ffi::sqlite3_vfs_register(vfs, 0), ffi::SQLITE_OK);
    });
}

unsafe extern "C" {
    fn getpid() -> c_int;
    fn kill(pid: c_int, sig: c_int) -> c_int;
}

fn sigkill_self() -> ! {
    unsafe {
        kill(getpid(), 9);
    }
    // SIGKILL cannot be caught; this is never reached.
    std::process::abort()
}

enum Io {
    Read,
    Write(u64),
    Sync,
}

/// Counts an I/O call and says which error (if any) to return instead.
fn decide(io: Io) -> Option<c_int> {
    STATE.with(|s| {
        let mut s = s.borrow_mut();
        let State { plan, counts } = &mut *s;
        let fault = match io {
            Io::Read => {
                counts.reads += 1;
                hit(plan.fail_read_at, counts.reads, plan.sticky).then_some(ffi::SQLITE_IOERR_READ)
            }
            Io::Write(bytes) => {
                counts.writes += 1;
                if plan.kill_at.is_some_and(|n| counts.writes + counts.syncs == n) {
                    sigkill_self();
                }
                let full = plan.write_budget.is_some_and(|budget| counts.bytes + bytes > budget);
                if !full {
                    counts.bytes += bytes;
                }
                if full {
                    Some(ffi::SQLITE_FULL)
                } else {
                    hit(plan.fail_write_at, counts.writes, plan.sticky).then_some(ffi::SQLITE_IOERR_WRITE)
                }
            }
            Io::Sync => {
                counts.syncs += 1;
                if plan.kill_at.is_some_and(|n| counts.writes + counts.syncs == n) {
                    sigkill_self();
                }
                hit(plan.fail_sync_at, counts.syncs, plan.sticky).then_some(ffi::SQLITE_IOERR_FSYNC)
            }
        };
        if fault.is_some() {
            counts.faults += 1;
            TOTAL_FAULTS.fetch_add(1, Ordering::SeqCst);
        }
        fault
    })
}

unsafe extern "C" fn x_open(
    _vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    unsafe {
        let ours = file.cast::<FaultFile>();
        let real = file.cast::<u8>().add(std::mem::size_of::<FaultFile>()).cast::<ffi::sqlite3_file>();
        (*ours).base.pMethods = ptr::null();
        (*ours).real = real;
        (*ours).watched = flags & WATCHED != 0;
        let rc = ((*BASE).xOpen.unwrap())(BASE, name, real, flags, out_flags);
        if rc == ffi::SQLITE_OK && !(*real).pMethods.is_null() {
            (*ours).base.pMethods = ptr::addr_of!(METHODS);
        }
        rc
    }
}

unsafe fn real(file: *mut ffi::sqlite3_file) -> *mut ffi::sqlite3_file {
    unsafe { (*file.cast::<FaultFile>()).real }
}

unsafe fn watched(file: *mut ffi::sqlite3_file) -> bool {
    unsafe { (*file.cast::<FaultFile>()).watched }
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
    unsafe {
        if watched(file) {
            if let Some(code) = decide(Io::Read) {
                return code;
            }
        }
        forward!(file, xRead, buf, amount, offset)
    }
}
unsafe extern "C" fn x_write(file: *mut ffi::sqlite3_file, buf: *const c_void, amount: c_int, offset: i64) -> c_int {
    unsafe {
        if watched(file) {
            if let Some(code) = decide(Io::Write(amount as u64)) {
                return code;
            }
        }
        forward!(file, xWrite, buf, amount, offset)
    }
}
unsafe extern "C" fn x_truncate(file: *mut ffi::sqlite3_file, size: i64) -> c_int {
    unsafe { forward!(file, xTruncate, size) }
}
unsafe extern "C" fn x_sync(file: *mut ffi::sqlite3_file, flags: c_int) -> c_int {
    unsafe {
        if watched(file) {
            if let Some(code) = decide(Io::Sync) {
                return code;
            }
        }
        forward!(file, xSync, flags)
    }
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

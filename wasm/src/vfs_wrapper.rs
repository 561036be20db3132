//! A pass-through VFS that counts what SQLite writes, by kind of file, and
//! locks main database files across the connections of this module.
//!
//! Every database opened by this module goes through a wrapper named
//! `<base>+count` around its real VFS (memvfs, the OPFS pool, the IndexedDB
//! mirror). The wrapper forwards every call and adds the bytes of each write
//! to one of three counters: temporary files (temp databases, transient
//! tables, sorter spills, statement journals), rollback journals, and the
//! main database; it also counts deleted rollback journals (one per write
//! transaction in the default journal mode). The counters are what
//! `stats()` reports and what the browser tests use to prove that a sync
//! spills nothing to temporary files (sync_local promises never to build a
//! temporary b-tree) and that a reader deletes no journal of its writer.
//!
//! **Locks and snapshots.** The base VFSs keep a lock level per handle and
//! nothing more, so two connections on one file (the writer and its reader,
//! see `Database.openReader`) would not see each other: a reader would find
//! no RESERVED lock, take the writer's journal for a hot one and roll it
//! back. So the wrapper keeps the locks of main database files itself, in a
//! table keyed by base VFS and file name shared by all connections of this
//! (single-threaded) module ([`FileLocks`]), and gives each reader a
//! snapshot: the page images the writer overwrites are kept for the readers
//! that began before its transaction ended ([`crate::snapshot`]), so readers
//! and the writer never wait for each other. Lock and unlock calls still
//! reach the base VFS once the wrapper grants them (the IndexedDB mirror
//! finds commit points in its unlock). Journals and other files are not
//! locked by SQLite and pass through unchanged.
//!
//! The wrapper advertises I/O methods version 1 (no shared memory, no
//! memory mapping), like every VFS it wraps here, so SQLite never tries WAL
//! shared memory through it.
//!
//! It also times the reads, writes and syncs it forwards ([`crate::io_time`]).
//!
//! This is the one module with raw SQLite structs besides [`crate::mirror`];
//! its counting mirrors `extension/tests/common/counting_vfs.rs`.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::ptr;
use std::rc::{Rc, Weak};

use rusqlite::ffi;

use crate::io_time::{self, Io};
use crate::snapshot::Snapshots;

thread_local! {
    static COUNTS: Cell<WriteCounts> = const { Cell::new(WriteCounts { temp: 0, journal: 0, main: 0, journals_deleted: 0 }) };
}

/// Bytes written since the module was loaded, by kind of file.
#[derive(Clone, Copy, Debug, Default)]
pub struct WriteCounts {
    /// Temporary databases, transient tables, sorter spills, statement journals.
    pub temp: u64,
    /// Rollback journals (and super-journals).
    pub journal: u64,
    /// Main database files.
    pub main: u64,
    /// Rollback journals deleted (`<db>-journal`): by the transaction that
    /// wrote each, at its end, or by a connection rolling back a hot one.
    pub journals_deleted: u64,
}

/// The counters so far (all databases of this module together).
pub fn counts() -> WriteCounts {
    COUNTS.with(Cell::get)
}

const TEMP_FLAGS: c_int =
    ffi::SQLITE_OPEN_TEMP_DB | ffi::SQLITE_OPEN_TEMP_JOURNAL | ffi::SQLITE_OPEN_TRANSIENT_DB | ffi::SQLITE_OPEN_SUBJOURNAL;
const JOURNAL_FLAGS: c_int = ffi::SQLITE_OPEN_MAIN_JOURNAL | ffi::SQLITE_OPEN_SUPER_JOURNAL | ffi::SQLITE_OPEN_WAL;

#[derive(Clone, Copy)]
enum Kind {
    Temp,
    Journal,
    Main,
}

const NONE: c_int = ffi::SQLITE_LOCK_NONE;
const SHARED: c_int = ffi::SQLITE_LOCK_SHARED;
const RESERVED: c_int = ffi::SQLITE_LOCK_RESERVED;

/// The locks held on one main database file by all its handles, and the
/// read snapshots they hold. Any number of handles may hold SHARED, at most
/// one holds more: the writer, which takes RESERVED and then EXCLUSIVE as
/// SQLite asks. Unlike SQLite's own VFSs, a reader may take SHARED while
/// the writer holds EXCLUSIVE, and the writer gets EXCLUSIVE while readers
/// hold SHARED: each reader reads the file as of its snapshot
/// ([`Snapshots`]). A handle whose snapshot is stale (a write committed since
/// it took SHARED) is refused RESERVED and EXCLUSIVE with SQLITE_BUSY until it
/// unlocks, as WAL refuses it; otherwise it would write over a change it never
/// saw.
#[derive(Default)]
struct FileLocks {
    /// The level of the one handle above SHARED, or NONE.
    writer: c_int,
    snapshots: Snapshots,
}

impl FileLocks {
    /// Moves one handle's lock from `from` to `to`, without checks.
    fn set(&mut self, from: c_int, to: c_int) {
        if to > SHARED {
            self.writer = to;
        } else if from > SHARED {
            self.writer = NONE;
        }
    }

    /// Raises a handle's lock from `held` to `want` (xLock); `stale` says
    /// whether its snapshot is. Returns the level it holds afterwards and
    /// SQLITE_OK, SQLITE_BUSY or SQLITE_MISUSE.
    fn raise(&mut self, held: c_int, want: c_int, stale: bool) -> (c_int, c_int) {
        if want <= held {
            return (held, ffi::SQLITE_OK);
        }
        if held == NONE && want > SHARED {
            // SQLite always takes SHARED first.
            return (held, ffi::SQLITE_MISUSE);
        }
        // A write lock is refused beside another handle's, or to a stale
        // snapshot; a snapshot beside a write that keeps no images.
        let refused = match want {
            SHARED => self.snapshots.blind(),
            _ => (held == SHARED && self.writer != NONE) || stale,
        };
        if refused {
            return (held, ffi::SQLITE_BUSY);
        }
        self.set(held, want);
        (want, ffi::SQLITE_OK)
    }
}

thread_local! {
    /// The lock state of each open main database file, by base VFS and name.
    static LOCKS: RefCell<HashMap<String, Weak<RefCell<FileLocks>>>> = RefCell::new(HashMap::new());
}

/// Bytes of before images held for read snapshots, over all open files.
pub fn snapshot_bytes() -> u64 {
    LOCKS.with(|table| {
        table.borrow().values().filter_map(Weak::upgrade).map(|locks| locks.borrow().snapshots.held_bytes()).sum()
    })
}

/// Syncs the main database file of `conn` (its VFS's xSync, as at a commit).
/// Mid-transaction this is always safe, and after `sqlite3_db_cacheflush` it
/// makes the durable writes happen then instead of all at COMMIT.
pub fn sync_main_file(conn: &rusqlite::Connection) -> Result<(), rusqlite::Error> {
    let mut file: *mut ffi::sqlite3_file = ptr::null_mut();
    // SAFETY: `conn` is open; SQLITE_FCNTL_FILE_POINTER writes one pointer,
    // to the file SQLite owns for as long as the connection is open, and we
    // call it on this thread before returning.
    let rc = unsafe {
        let rc = ffi::sqlite3_file_control(
            conn.handle(),
            c"main".as_ptr(),
            ffi::SQLITE_FCNTL_FILE_POINTER,
            ptr::addr_of_mut!(file).cast(),
        );
        if rc != ffi::SQLITE_OK || file.is_null() || (*file).pMethods.is_null() {
            rc
        } else {
            (*(*file).pMethods).xSync.map_or(ffi::SQLITE_OK, |sync| sync(file, ffi::SQLITE_SYNC_NORMAL))
        }
    };
    match rc {
        ffi::SQLITE_OK => Ok(()),
        rc => Err(rusqlite::Error::SqliteFailure(ffi::Error::new(rc), Some("syncing the database file failed".into()))),
    }
}

/// The lock state shared by every handle on the file `key`.
fn file_locks(key: String) -> Rc<RefCell<FileLocks>> {
    LOCKS.with(|table| {
        let mut table = table.borrow_mut();
        if let Some(locks) = table.get(&key).and_then(Weak::upgrade) {
            return locks;
        }
        let locks = Rc::new(RefCell::new(FileLocks::default()));
        table.insert(key, Rc::downgrade(&locks));
        locks
    })
}

#[repr(C)]
struct CountingFile {
    base: ffi::sqlite3_file,
    kind: Kind,
    real: *mut ffi::sqlite3_file,
    /// Main database files: the lock this handle holds and the file's lock
    /// state. `None` for other files, whose lock calls pass through.
    lock: c_int,
    locks: Option<Rc<RefCell<FileLocks>>>,
    /// The snapshot this handle reads while it holds SHARED.
    version: u64,
}

/// Registers (once) and returns the name of the counting wrapper around the
/// VFS named `base`. Fails if `base` is not registered.
pub fn wrap(base: &str) -> Result<String, String> {
    let name = format!("{base}+count");
    let c_name = CString::new(name.clone()).map_err(|_| format!("VFS name {base:?} contains NUL"))?;
    let c_base = CString::new(base).map_err(|_| format!("VFS name {base:?} contains NUL"))?;
    // SAFETY: SQLite is single-threaded in this module; the structs handed to
    // sqlite3_vfs_register are leaked and live for the rest of the program.
    unsafe {
        if !ffi::sqlite3_vfs_find(c_name.as_ptr()).is_null() {
            return Ok(name);
        }
        let base_vfs = ffi::sqlite3_vfs_find(c_base.as_ptr());
        if base_vfs.is_null() {
            return Err(format!("VFS {base:?} is not registered"));
        }
        let mut vfs: ffi::sqlite3_vfs = ptr::read(base_vfs);
        vfs.pNext = ptr::null_mut();
        vfs.szOsFile = std::mem::size_of::<CountingFile>() as c_int + (*base_vfs).szOsFile;
        vfs.zName = c_name.into_raw();
        vfs.pAppData = base_vfs.cast();
        // Every method that receives the VFS must be forwarded with the
        // base VFS: the base reads its own pAppData from it.
        vfs.xOpen = Some(x_open);
        vfs.xDelete = Some(x_delete);
        vfs.xAccess = Some(x_access);
        vfs.xFullPathname = Some(x_full_pathname);
        vfs.xDlOpen = None;
        vfs.xDlError = None;
        vfs.xDlSym = None;
        vfs.xDlClose = None;
        vfs.xRandomness = Some(x_randomness);
        vfs.xSleep = Some(x_sleep);
        vfs.xCurrentTime = Some(x_current_time);
        vfs.xGetLastError = Some(x_get_last_error);
        vfs.xCurrentTimeInt64 = Some(x_current_time_int64);
        vfs.iVersion = vfs.iVersion.min(2);
        vfs.xSetSystemCall = None;
        vfs.xGetSystemCall = None;
        vfs.xNextSystemCall = None;
        let vfs = Box::into_raw(Box::new(vfs));
        let rc = ffi::sqlite3_vfs_register(vfs, 0);
        if rc != ffi::SQLITE_OK {
            return Err(format!("registering VFS {name:?} failed with SQLite code {rc}"));
        }
    }
    Ok(name)
}

static METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
    iVersion: 1,
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
    xShmMap: None,
    xShmLock: None,
    xShmBarrier: None,
    xShmUnmap: None,
    xFetch: None,
    xUnfetch: None,
};

unsafe extern "C" fn x_open(
    vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    unsafe {
        let base = base(vfs);
        let ours = file.cast::<CountingFile>();
        let real = file.cast::<u8>().add(std::mem::size_of::<CountingFile>()).cast::<ffi::sqlite3_file>();
        (*ours).base.pMethods = ptr::null();
        (*ours).real = real;
        (*ours).kind = if flags & TEMP_FLAGS != 0 || name.is_null() {
            Kind::Temp
        } else if flags & JOURNAL_FLAGS != 0 {
            Kind::Journal
        } else {
            Kind::Main
        };
        (*ours).lock = NONE;
        (*ours).version = 0;
        // The memory is SQLite's and uninitialised: write the field without
        // dropping what was there. x_close takes it out again.
        ptr::addr_of_mut!((*ours).locks).write(None);
        (*real).pMethods = ptr::null();
        let rc = ((*base).xOpen.unwrap())(base, name, real, flags, out_flags);
        if rc == ffi::SQLITE_OK && matches!((*ours).kind, Kind::Main) {
            // `name` is non-null for Kind::Main; both strings are SQLite's
            // or the base VFS's, NUL-terminated.
            let base_name = CStr::from_ptr((*base).zName).to_string_lossy();
            let key = format!("{base_name}:{}", CStr::from_ptr(name).to_string_lossy());
            let locks = file_locks(key);
            locks.borrow_mut().snapshots.open_handle();
            (*ours).locks = Some(locks);
        }
        if !(*real).pMethods.is_null() {
            // Set even on failure: SQLite then calls our xClose, which
            // forwards to the real file's close as the base VFS expects.
            (*ours).base.pMethods = &METHODS;
        }
        rc
    }
}

unsafe fn base(vfs: *mut ffi::sqlite3_vfs) -> *mut ffi::sqlite3_vfs {
    unsafe { (*vfs).pAppData.cast() }
}

macro_rules! forward_vfs {
    ($vfs:expr, $method:ident, $missing:expr $(, $arg:expr)*) => {{
        let base = base($vfs);
        match (*base).$method {
            Some(f) => f(base $(, $arg)*),
            None => $missing,
        }
    }};
}

unsafe extern "C" fn x_delete(vfs: *mut ffi::sqlite3_vfs, name: *const c_char, sync_dir: c_int) -> c_int {
    unsafe {
        let rc = forward_vfs!(vfs, xDelete, ffi::SQLITE_IOERR_DELETE, name, sync_dir);
        // SQLite passes a NUL-terminated name.
        if rc == ffi::SQLITE_OK && !name.is_null() && CStr::from_ptr(name).to_bytes().ends_with(b"-journal") {
            COUNTS.with(|c| c.set(WriteCounts { journals_deleted: c.get().journals_deleted + 1, ..c.get() }));
        }
        rc
    }
}
unsafe extern "C" fn x_access(vfs: *mut ffi::sqlite3_vfs, name: *const c_char, flags: c_int, out: *mut c_int) -> c_int {
    unsafe { forward_vfs!(vfs, xAccess, ffi::SQLITE_IOERR_ACCESS, name, flags, out) }
}
unsafe extern "C" fn x_full_pathname(vfs: *mut ffi::sqlite3_vfs, name: *const c_char, n: c_int, out: *mut c_char) -> c_int {
    unsafe { forward_vfs!(vfs, xFullPathname, ffi::SQLITE_CANTOPEN, name, n, out) }
}
unsafe extern "C" fn x_randomness(vfs: *mut ffi::sqlite3_vfs, n: c_int, out: *mut c_char) -> c_int {
    unsafe { forward_vfs!(vfs, xRandomness, 0, n, out) }
}
unsafe extern "C" fn x_sleep(vfs: *mut ffi::sqlite3_vfs, micros: c_int) -> c_int {
    unsafe { forward_vfs!(vfs, xSleep, 0, micros) }
}
unsafe extern "C" fn x_current_time(vfs: *mut ffi::sqlite3_vfs, out: *mut f64) -> c_int {
    unsafe { forward_vfs!(vfs, xCurrentTime, ffi::SQLITE_ERROR, out) }
}
unsafe extern "C" fn x_get_last_error(vfs: *mut ffi::sqlite3_vfs, n: c_int, out: *mut c_char) -> c_int {
    unsafe { forward_vfs!(vfs, xGetLastError, 0, n, out) }
}
unsafe extern "C" fn x_current_time_int64(vfs: *mut ffi::sqlite3_vfs, out: *mut i64) -> c_int {
    unsafe { forward_vfs!(vfs, xCurrentTimeInt64, ffi::SQLITE_ERROR, out) }
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
    unsafe {
        let ours = file.cast::<CountingFile>();
        // SQLite unlocks before it closes; release anything left anyway.
        if let Some(locks) = (*ours).locks.take() {
            release(&mut locks.borrow_mut(), ours, NONE);
            locks.borrow_mut().snapshots.close_handle();
            drop(locks);
            LOCKS.with(|table| table.borrow_mut().retain(|_, locks| locks.strong_count() > 0));
        }
        let rc = forward!(file, xClose);
        (*file).pMethods = ptr::null();
        rc
    }
}
/// The handle's lock table if it reads through a snapshot now: a main
/// database file, at SHARED (a writer reads the file it writes).
unsafe fn snapshot_reader(file: *mut ffi::sqlite3_file) -> Option<(Rc<RefCell<FileLocks>>, u64)> {
    unsafe {
        let ours = file.cast::<CountingFile>();
        let locks = (*ours).locks.as_ref()?;
        ((*ours).lock == SHARED).then(|| (locks.clone(), (*ours).version))
    }
}

/// Reads the real file for [`Snapshots`]: a short read is zero-filled, as the
/// base VFSs do, and is not an error there.
unsafe fn read_real(file: *mut ffi::sqlite3_file, offset: u64, buf: &mut [u8]) -> Result<(), c_int> {
    unsafe {
        match forward!(file, xRead, buf.as_mut_ptr().cast(), buf.len() as c_int, offset as i64) {
            ffi::SQLITE_OK | ffi::SQLITE_IOERR_SHORT_READ => Ok(()),
            rc => Err(rc),
        }
    }
}

unsafe fn real_size(file: *mut ffi::sqlite3_file) -> Result<u64, c_int> {
    unsafe {
        let mut size = 0i64;
        match forward!(file, xFileSize, &mut size) {
            ffi::SQLITE_OK => Ok(size.max(0) as u64),
            rc => Err(rc),
        }
    }
}

unsafe extern "C" fn x_read(file: *mut ffi::sqlite3_file, buf: *mut c_void, amount: c_int, offset: i64) -> c_int {
    unsafe {
        if let Some((locks, version)) = snapshot_reader(file) {
            // SQLite passes a buffer of `amount` bytes.
            let out = std::slice::from_raw_parts_mut(buf.cast::<u8>(), amount.max(0) as usize);
            let read = locks.borrow().snapshots.read(version, offset.max(0) as u64, out, |at, out| read_real(file, at, out));
            match read {
                None => {}
                Some(Ok(false)) => return ffi::SQLITE_OK,
                Some(Ok(true)) => return ffi::SQLITE_IOERR_SHORT_READ,
                Some(Err(rc)) => return rc,
            }
        }
        io_time::timed(Io::Read, || forward!(file, xRead, buf, amount, offset))
    }
}
unsafe extern "C" fn x_write(file: *mut ffi::sqlite3_file, buf: *const c_void, amount: c_int, offset: i64) -> c_int {
    unsafe {
        let ours = file.cast::<CountingFile>();
        let kind = (*ours).kind;
        COUNTS.with(|c| {
            let mut counts = c.get();
            let amount = amount.max(0) as u64;
            match kind {
                Kind::Temp => counts.temp += amount,
                Kind::Journal => counts.journal += amount,
                Kind::Main => counts.main += amount,
            }
            c.set(counts);
        });
        if let Some(locks) = (*ours).locks.clone() {
            let kept = locks.borrow_mut().snapshots.before_write(
                offset.max(0) as u64,
                amount.max(0) as u64,
                || real_size(file),
                |at, out| read_real(file, at, out),
            );
            if let Err(rc) = kept {
                return rc;
            }
        }
        io_time::timed(Io::Write, || forward!(file, xWrite, buf, amount, offset))
    }
}
unsafe extern "C" fn x_truncate(file: *mut ffi::sqlite3_file, size: i64) -> c_int {
    unsafe {
        if let Some(locks) = (*file.cast::<CountingFile>()).locks.clone() {
            let kept = locks.borrow_mut().snapshots.before_truncate(
                size.max(0) as u64,
                || real_size(file),
                |at, out| read_real(file, at, out),
            );
            if let Err(rc) = kept {
                return rc;
            }
        }
        forward!(file, xTruncate, size)
    }
}
unsafe extern "C" fn x_sync(file: *mut ffi::sqlite3_file, flags: c_int) -> c_int {
    unsafe { io_time::timed(Io::Sync, || forward!(file, xSync, flags)) }
}
unsafe extern "C" fn x_file_size(file: *mut ffi::sqlite3_file, size: *mut i64) -> c_int {
    unsafe {
        if let Some(old) = snapshot_reader(file).and_then(|(locks, v)| locks.borrow().snapshots.size(v)) {
            *size = old as i64;
            return ffi::SQLITE_OK;
        }
        forward!(file, xFileSize, size)
    }
}

/// Lowers a handle's lock in the table to `to`, ending its write (a new
/// version, if it wrote) and its snapshot as it goes below each level. A
/// writer that keeps SHARED reads on at the version it made.
unsafe fn release(locks: &mut FileLocks, ours: *mut CountingFile, to: c_int) {
    unsafe {
        let from = (*ours).lock;
        let to = to.min(from);
        locks.set(from, to);
        (*ours).lock = to;
        if from >= RESERVED && to < RESERVED {
            locks.snapshots.end_write();
            if to == SHARED {
                locks.snapshots.end_read((*ours).version);
                (*ours).version = locks.snapshots.begin_read();
            }
        }
        if from >= SHARED && to == NONE {
            locks.snapshots.end_read((*ours).version);
        }
    }
}

// The lock methods: decide in the shared table first, then tell the base VFS.
// `file` is one of our handles (SQLite passes back what x_open set up), and
// no base VFS calls back into these, so the RefCell borrows never overlap.
unsafe extern "C" fn x_lock(file: *mut ffi::sqlite3_file, lock: c_int) -> c_int {
    unsafe {
        let ours = file.cast::<CountingFile>();
        let Some(locks) = (*ours).locks.clone() else {
            return forward!(file, xLock, lock);
        };
        let held = (*ours).lock;
        {
            let mut table = locks.borrow_mut();
            let stale = held >= SHARED && table.snapshots.is_stale((*ours).version);
            let (reached, rc) = table.raise(held, lock, stale);
            if rc != ffi::SQLITE_OK {
                return rc;
            }
            if held == NONE && reached >= SHARED {
                (*ours).version = table.snapshots.begin_read();
            }
            (*ours).lock = reached;
        }
        let rc = forward!(file, xLock, lock);
        if rc != ffi::SQLITE_OK {
            release(&mut locks.borrow_mut(), ours, held);
        }
        rc
    }
}
unsafe extern "C" fn x_unlock(file: *mut ffi::sqlite3_file, lock: c_int) -> c_int {
    unsafe {
        let ours = file.cast::<CountingFile>();
        if let Some(locks) = (*ours).locks.clone() {
            release(&mut locks.borrow_mut(), ours, lock);
        }
        forward!(file, xUnlock, lock)
    }
}
unsafe extern "C" fn x_check_reserved_lock(file: *mut ffi::sqlite3_file, out: *mut c_int) -> c_int {
    unsafe {
        match &(*file.cast::<CountingFile>()).locks {
            // Any handle's, this one's included, as SQLite's own VFSs answer.
            Some(locks) => {
                *out = c_int::from(locks.borrow().writer >= RESERVED);
                ffi::SQLITE_OK
            }
            None => forward!(file, xCheckReservedLock, out),
        }
    }
}
unsafe extern "C" fn x_file_control(file: *mut ffi::sqlite3_file, op: c_int, arg: *mut c_void) -> c_int {
    unsafe {
        if let Some(locks) = (*file.cast::<CountingFile>()).locks.clone() {
            match op {
                // The OPFS storage grows the file on a size hint: the
                // snapshot must know the size it had.
                ffi::SQLITE_FCNTL_SIZE_HINT => {
                    if let Err(rc) = locks.borrow_mut().snapshots.before_resize(|| real_size(file)) {
                        return rc;
                    }
                }
                ffi::SQLITE_FCNTL_PRAGMA if is_exclusive_locking(arg) => {
                    // arg is SQLite's char*[3]: [0] receives the error message.
                    let message = c"oplite-wasm: PRAGMA locking_mode = EXCLUSIVE is not supported: the module's readers need the writer to unlock after each transaction";
                    *arg.cast::<*mut c_char>() = ffi::sqlite3_mprintf(c"%s".as_ptr(), message.as_ptr());
                    return ffi::SQLITE_ERROR;
                }
                _ => {}
            }
        }
        let real = real(file);
        match (*(*real).pMethods).xFileControl {
            Some(f) => f(real, op, arg),
            None => ffi::SQLITE_NOTFOUND,
        }
    }
}
/// Whether the SQLITE_FCNTL_PRAGMA argument (`char*[3]`: error, name,
/// value) is `locking_mode = exclusive`, which would hold EXCLUSIVE across
/// transactions: readers would never see a new version.
unsafe fn is_exclusive_locking(arg: *mut c_void) -> bool {
    unsafe {
        let args = arg.cast::<*const c_char>();
        let (name, value) = (*args.add(1), *args.add(2));
        !name.is_null()
            && !value.is_null()
            && CStr::from_ptr(name).to_bytes().eq_ignore_ascii_case(b"locking_mode")
            && CStr::from_ptr(value).to_bytes().eq_ignore_ascii_case(b"exclusive")
    }
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

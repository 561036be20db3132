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
//! Test support only, on top of `wrapping_vfs.rs`.
#![allow(dead_code)]

use std::cell::RefCell;
use std::ffi::c_int;
use std::sync::atomic::{AtomicU64, Ordering};

use rusqlite::ffi;

use super::wrapping_vfs::{self, Hooks, Io};

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

const WATCHED: c_int = ffi::SQLITE_OPEN_MAIN_DB | ffi::SQLITE_OPEN_WAL | ffi::SQLITE_OPEN_MAIN_JOURNAL;

static HOOKS: Hooks = Hooks {
    watch: |flags| flags & WATCHED != 0,
    before: decide,
    // No memory-mapped I/O: every page goes through xRead/xWrite.
    mmap: false,
};

/// Registers the VFS under [`NAME`] (not as the default). Idempotent.
pub fn register() {
    wrapping_vfs::register(c"oplite-fault", &HOOKS, false);
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

//! A loadable build of the PowerSync core 0.5.4 from crates.io, for oplite's
//! differential tests and benchmarks. The crate `powersync_core` defines the
//! entry point `sqlite3_powersync_init`; this shell only supplies what a
//! `no_std` cdylib needs: SQLite's allocator (so memory can pass between the
//! core and SQLite), a panic handler that aborts, and the personality symbol
//! the precompiled `core` still names.
#![no_std]

extern crate alloc;

#[allow(unused_imports)]
use powersync_core as _;

#[global_allocator]
static ALLOCATOR: powersync_sqlite_nostd::SQLite3Allocator =
    powersync_sqlite_nostd::SQLite3Allocator {};

unsafe extern "C" {
    fn abort() -> !;
}

#[panic_handler]
fn panic(_info: &core::panic::PanicInfo) -> ! {
    // SAFETY: abort() takes no arguments and never returns.
    unsafe { abort() }
}

#[unsafe(no_mangle)]
extern "C" fn rust_eh_personality() {}

//! The Rust half of scripts/check-mobile-lib.sh's Rust link check: a static
//! library of Rust code with its own standard library, as a Rust app or
//! another Rust library brings to the link. It calls into oplite's archive
//! and has unwind tables of its own (`catch_unwind`), so that the two
//! archives' copies of `DW.ref.rust_eh_personality` meet in one link.
//! build-mobile.sh compiles it for each target with the std it built there.

use std::ffi::c_int;
use std::panic;

extern "C" {
    fn oplite_auto_extension() -> c_int;
}

/// Registers oplite, as the Rust SDK's `powersync_init_static()` does, and
/// returns SQLite's result code; -1 if registering panicked.
#[no_mangle]
pub extern "C" fn rust_link_probe() -> c_int {
    // SAFETY: oplite_auto_extension takes no arguments.
    panic::catch_unwind(|| unsafe { oplite_auto_extension() }).unwrap_or(-1)
}

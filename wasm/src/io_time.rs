//! Time spent in the storage's reads, writes and syncs, for the web
//! benchmark's profile (docs/web-sdk.md, "Where the time goes").
//!
//! [`crate::vfs_wrapper`] times each call it forwards to the real VFS (the
//! OPFS pool's access handles, or the IndexedDB mirror's copies in wasm
//! memory) with the host's `performance.now()`, and adds it here; `stats()`
//! reports the sums. Browsers coarsen that clock where the page is not
//! cross-origin isolated (Chromium: 100 µs, with jitter), so a single call
//! reads as 0 or 0.1 ms, but the sums over the thousands of calls of a sync
//! are what the profile needs.

use std::cell::Cell;

use wasm_bindgen::prelude::wasm_bindgen;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_namespace = performance, js_name = now)]
    fn performance_now() -> f64;
}

/// What a timed call was.
#[derive(Clone, Copy)]
pub enum Io {
    Read,
    Write,
    Sync,
}

/// Milliseconds and calls, by kind, since the module was loaded.
#[derive(Clone, Copy, Debug, Default)]
pub struct IoTimes {
    pub read_ms: f64,
    pub write_ms: f64,
    pub sync_ms: f64,
    pub reads: u64,
    pub writes: u64,
    pub syncs: u64,
}

thread_local! {
    static TIMES: Cell<IoTimes> = const { Cell::new(IoTimes { read_ms: 0.0, write_ms: 0.0, sync_ms: 0.0, reads: 0, writes: 0, syncs: 0 }) };
}

/// Runs `call`, adding its duration to `io`'s sum.
pub fn timed(io: Io, call: impl FnOnce() -> i32) -> i32 {
    let start = performance_now();
    let rc = call();
    let ms = performance_now() - start;
    TIMES.with(|t| {
        let mut times = t.get();
        match io {
            Io::Read => (times.read_ms += ms, times.reads += 1),
            Io::Write => (times.write_ms += ms, times.writes += 1),
            Io::Sync => (times.sync_ms += ms, times.syncs += 1),
        };
        t.set(times);
    });
    rc
}

/// The sums so far (all databases of this module together).
pub fn times() -> IoTimes {
    TIMES.with(Cell::get)
}

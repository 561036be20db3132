//! Seeded generators of PowerSync protocol streams.
//!
//! Everything here is deterministic for a given seed, so a failing test
//! prints its seed and replays exactly. [`server::ServerModel`] is a small
//! model of a sync service: buckets of ops with checksums, from which it
//! answers a client's request with checkpoint and data lines.

pub mod rng;
pub mod server;

pub use rng::Rng;
pub use server::{ServerModel, ServerOptions};

//! Seeded generators of PowerSync protocol streams.
//!
//! Everything here is deterministic for a given seed, so a failing test
//! prints its seed and replays exactly.
//!
//! - [`server::ServerModel`]: a small model of a sync service (buckets of
//!   random ops with checksums) for differential tests.
//! - [`stream::StreamSpec`]: the benchmark shapes (the published sync_local
//!   benchmark and its variants), generated lazily as an iterator of lines
//!   of any length.
//! - [`lines`]: encoding lines as JSON text or BSON; paging ops into data
//!   lines.
//! - [`recorded`]: small recorded sessions under `recorded/` with the
//!   tables a client must end with.
//! - [`session`]: the seeded session of the differential sync test and
//!   the web package's recorded sessions, on any [`session::Host`].
//! - [`bson`]: the BSON writer behind [`lines`].

pub mod bson;
pub mod lines;
pub mod recorded;
pub mod rng;
pub mod server;
pub mod session;
pub mod stream;

pub use lines::{BucketEntry, Encoding};
pub use rng::Rng;
pub use server::{ServerModel, ServerOptions};
pub use stream::StreamSpec;

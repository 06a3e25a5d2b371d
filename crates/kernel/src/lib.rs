//! The interlab event kernel.
//!
//! * [`Time`]: simulated time as an integer number of **picoseconds** (u64: about 213 days).
//! * [`EventQueue`]: a min-queue of events ordered by `(time, sequence number)`, so events
//!   scheduled for the same instant run in the order they were scheduled: runs are
//!   deterministic.
//! * [`Simulation`]: components addressed by [`ComponentId`] (an index, never a pointer),
//!   each receiving messages through [`Component::handle`] with a [`Ctx`] to schedule more.
//! * [`Rng`]: a seeded, portable pseudo-random generator (SplitMix64 seeding xoshiro256**).
//!
//! The kernel knows nothing of networks; the model crate builds on it.

pub mod bench;
mod queue;
mod rng;
mod sim;
mod time;

pub use queue::{EventQueue, Scheduled};
pub use rng::Rng;
pub use sim::{Component, ComponentId, Ctx, RunStats, Simulation};
pub use time::{from_ns, from_us, Time, PS_PER_MS, PS_PER_NS, PS_PER_S, PS_PER_US};

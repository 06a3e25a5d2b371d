//! What the live data center (`interlab-datacenter`) and its model replay
//! (`interlab-replay`) share, and nothing else:
//!
//! * [`tpcw`]: the 14 interactions, the three mixes' CBMGs, scaling rules, NURand, think time
//!   (TPC-W 1.8).
//! * [`trace`]: per-interaction, per-tier CPU and message traces (JSON Lines, versioned):
//!   written by the bookstore and its browser emulator, read by the replay.
//! * [`wc98`]: the WorldCup98 access-log format (static-content workloads).

pub mod tpcw;
pub mod trace;
pub mod wc98;

pub use trace::{Trace, TraceRecord};

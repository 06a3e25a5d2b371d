//! Integer simulated time.

/// Simulated time or duration in **picoseconds**.
pub type Time = u64;

/// Picoseconds per nanosecond.
pub const PS_PER_NS: Time = 1_000;
/// Picoseconds per microsecond.
pub const PS_PER_US: Time = 1_000_000;
/// Picoseconds per millisecond.
pub const PS_PER_MS: Time = 1_000_000_000;
/// Picoseconds per second.
pub const PS_PER_S: Time = 1_000_000_000_000;

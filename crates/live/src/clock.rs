//! The engine clock: monotonic time in picoseconds since a base instant, the unit pattern
//! programs take.

use std::time::Instant;

/// Picoseconds per second.
pub const PS_PER_S: u64 = 1_000_000_000_000;

#[derive(Debug, Clone, Copy)]
pub struct Clock(Instant);

impl Default for Clock {
    fn default() -> Self {
        Clock(Instant::now())
    }
}

impl Clock {
    /// Picoseconds since the clock was made.
    #[inline]
    pub fn now_ps(&self) -> u64 {
        self.0.elapsed().as_nanos() as u64 * 1_000
    }
}

/// Seconds to picoseconds.
pub fn secs_to_ps(s: f64) -> u64 {
    (s * PS_PER_S as f64).round().max(0.0) as u64
}

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

/// A duration given in nanoseconds as a real number (a profile parameter such as
/// `tcp_rx_ns = 1900`), as integer picoseconds, rounded to the nearest.
pub fn from_ns(ns: f64) -> Time {
    (ns * 1000.0).round() as Time
}

/// A duration given in microseconds as a real number, as integer picoseconds, rounded.
pub fn from_us(us: f64) -> Time {
    (us * 1_000_000.0).round() as Time
}

#[cfg(test)]
mod conv_tests {
    use super::*;

    #[test]
    fn real_durations_round_to_the_nearest_picosecond() {
        assert_eq!(from_ns(1.0), PS_PER_NS);
        assert_eq!(from_ns(2.2004), 2200);
        assert_eq!(from_ns(0.0), 0);
        assert_eq!(from_us(1.5), 1_500_000);
    }
}

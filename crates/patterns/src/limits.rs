//! Bounds on the counts that size a pattern's work and memory. Every engine and every input
//! path (control protocol, spec files, command line) checks its numbers against these before
//! anything is allocated or run; `docs/live.md` ("Limits and security") lists them.

/// Most iterations (warm-up or measured, each) a phase may ask for.
pub const MAX_ITERATIONS: u32 = 1 << 30;
/// Most latency samples one channel keeps per phase (8 bytes each: 64 MiB).
pub const MAX_LATENCY_SAMPLES: u32 = 1 << 23;
/// Largest window, messages.
pub const MAX_WINDOW: u32 = 1 << 20;
/// Largest message, bytes (1 GiB; the live daemon accepts at most 64 MiB).
pub const MAX_MESSAGE_BYTES: u64 = 1 << 30;
/// Initial capacity of a sample vector: it grows as samples arrive, so a count that is
/// never reached costs nothing.
pub const SAMPLE_PREALLOC: usize = 1 << 12;

/// Checks warm-up and measured iteration counts; `latency_samples` when every measured
/// iteration keeps an 8-byte sample.
pub fn check_iterations(warmup: u64, iterations: u64, latency_samples: bool) -> Result<(), String> {
    if warmup > MAX_ITERATIONS as u64 {
        return Err(format!("warm-up of {warmup} iterations is out of range (0 to {MAX_ITERATIONS})"));
    }
    if iterations > MAX_ITERATIONS as u64 {
        return Err(format!("{iterations} iterations is out of range (1 to {MAX_ITERATIONS})"));
    }
    if latency_samples && iterations > MAX_LATENCY_SAMPLES as u64 {
        return Err(format!(
            "{iterations} iterations is out of range for a latency pattern (1 to {MAX_LATENCY_SAMPLES}: one 8-byte sample each, at most {} MiB per channel)",
            (MAX_LATENCY_SAMPLES as u64 * 8) >> 20
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds() {
        assert!(check_iterations(0, 1, true).is_ok());
        assert!(check_iterations(MAX_ITERATIONS as u64, MAX_ITERATIONS as u64, false).is_ok());
        assert!(check_iterations(0, u32::MAX as u64, false).unwrap_err().contains("out of range"));
        assert!(check_iterations(0, MAX_LATENCY_SAMPLES as u64 + 1, true).unwrap_err().contains("latency"));
        assert!(check_iterations(u32::MAX as u64, 1, false).unwrap_err().contains("warm-up"));
    }
}

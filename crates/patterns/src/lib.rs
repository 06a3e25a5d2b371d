//! Patterns, defined once, executed by both engines.
//!
//! A pattern is a *sans-IO program*: it receives [`Input`]s (start, a message arrived, an
//! operation completed) stamped with the engine's clock in picoseconds and answers with
//! [`Output`]s (post a message on a channel, finish). The live engine turns outputs into
//! socket calls, the model into work requests on simulated adapters; neither re-implements
//! warm-up, windows, replies or what is measured.

mod confidence;
pub mod limits;
mod program;
mod record;
mod record_ext;
mod stats;
mod stream;
mod txn;
mod workload;

pub use program::{
    Input, Message, Op, Output, PatternKind, PatternSpec, Program, Role, Samples, REPLY_BYTES, TAG_DATA, TAG_REPLY,
};
pub use record::{ResultRecord, RECORD_SCHEMA};
pub use stats::Summary;
pub use confidence::{t_quantile, ConfidenceRule, Interval};
pub use record_ext::{ConfidenceReport, CpuUsage, ExtendedRecord, HostFacts, IntervalReport, LiveFields};
pub use stream::{StreamReceiver, StreamSender, StreamSpec};
pub use txn::{TxnInitiator, TxnInput, TxnKind, TxnOutput, TxnResponder, TxnSpec};
pub use workload::{Base, ChannelPlan, Report, Side, Workload, WorkloadKind};

/// Message sizes for sweeps: powers of two from `lo` to `hi` bytes inclusive.
pub fn pow2_sizes(lo: u64, hi: u64) -> Vec<u64> {
    let mut v = Vec::new();
    let Some(mut s) = lo.max(1).checked_next_power_of_two() else { return v };
    while s <= hi {
        v.push(s);
        match s.checked_mul(2) {
            Some(n) => s = n,
            None => break,
        }
    }
    v
}

/// Parses one size: a whole number of bytes with an optional suffix K = 2^10, M = 2^20,
/// G = 2^30 (`64`, `4K`, `1M`); at least 1 byte.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let (num, mult) = match s.chars().last() {
        Some('K') | Some('k') => (&s[..s.len() - 1], 1u64 << 10),
        Some('M') | Some('m') => (&s[..s.len() - 1], 1u64 << 20),
        Some('G') | Some('g') => (&s[..s.len() - 1], 1u64 << 30),
        _ => (s, 1),
    };
    let n: u64 = num.parse().map_err(|_| format!("`{s}` is not a size (expected e.g. 64, 4K, 1M)"))?;
    if n == 0 {
        return Err("sizes must be at least 1 byte".into());
    }
    n.checked_mul(mult).ok_or_else(|| format!("`{s}` is too large (at most {} bytes)", u64::MAX))
}

/// Parses a size list: `1,2,4..4M` (ranges are powers of two), suffixes K = 2^10, M = 2^20.
/// A range's ends must themselves be powers of two (`1..3M` would silently stop at 2M, so it
/// is refused with a message naming both neighbours).
pub fn parse_sizes(text: &str) -> Result<Vec<u64>, String> {
    let mut out = Vec::new();
    for part in text.split(',') {
        if part.trim().is_empty() {
            return Err(format!("empty item in size list `{text}`"));
        }
        if let Some((a, b)) = part.split_once("..") {
            let (a_text, b_text) = (a.trim(), b.trim());
            let (a, b) = (parse_size(a_text)?, parse_size(b_text)?);
            if a > b {
                return Err(format!("range `{}` runs backwards", part.trim()));
            }
            for (end, text) in [(a, a_text), (b, b_text)] {
                if !end.is_power_of_two() {
                    let below = 1u64 << (63 - end.leading_zeros());
                    return Err(format!(
                        "range `{}`: ranges run over powers of two and {text} ({end} bytes) is not one; end it at {} or {}, or list {text} on its own",
                        part.trim(),
                        show_size(below),
                        below.checked_mul(2).map_or("-".to_string(), show_size)
                    ));
                }
            }
            out.extend(pow2_sizes(a, b));
        } else {
            out.push(parse_size(part)?);
        }
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// Parses a duration: `60s`, `1.5s`, `500ms`, `2m`, `1h`, or a bare number of seconds
/// (as every command-line flag takes them); at most 10^7 s.
pub fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    let t = s.trim();
    let (num, mul) = if let Some(x) = t.strip_suffix("ms") {
        (x, 0.001)
    } else if let Some(x) = t.strip_suffix("us") {
        (x, 1e-6)
    } else if let Some(x) = t.strip_suffix('s') {
        (x, 1.0)
    } else if let Some(x) = t.strip_suffix('m') {
        (x, 60.0)
    } else if let Some(x) = t.strip_suffix('h') {
        (x, 3600.0)
    } else {
        (t, 1.0)
    };
    match num.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 && v * mul < 1e7 => Ok(std::time::Duration::from_secs_f64(v * mul)),
        _ => Err(format!("duration `{s}`: expected e.g. 3s, 500ms, 2m or a number of seconds")),
    }
}

/// A size with the largest exact suffix: `4096` -> `4K`, `3145728` -> `3M`, `1000` -> `1000`.
pub fn show_size(n: u64) -> String {
    for (shift, suffix) in [(30, "G"), (20, "M"), (10, "K")] {
        if n >= 1 << shift && n % (1 << shift) == 0 {
            return format!("{}{suffix}", n >> shift);
        }
    }
    n.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_sizes("1,2,4..16").unwrap(), vec![1, 2, 4, 8, 16]);
        assert_eq!(parse_sizes("1K..4K").unwrap(), vec![1024, 2048, 4096]);
        assert_eq!(parse_sizes("1M").unwrap(), vec![1 << 20]);
        assert!(parse_sizes("x").is_err());
        assert!(parse_sizes("4..1").is_err());
        assert!(parse_sizes("0").is_err());
        assert!(parse_sizes("1,,2").is_err());
        assert!(parse_sizes("99999999999G").unwrap_err().contains("too large"));
        assert_eq!(pow2_sizes(1 << 62, u64::MAX), vec![1 << 62, 1 << 63]);
        assert!(pow2_sizes(u64::MAX, u64::MAX).is_empty());
    }

    #[test]
    fn ranges_that_would_miss_their_end_are_refused() {
        let e = parse_sizes("1..3M").unwrap_err();
        assert!(e.contains("2M") && e.contains("4M") && e.contains("3M"), "{e}");
        assert!(parse_sizes("3..16").unwrap_err().contains("end it at 2 or 4"));
        assert_eq!(parse_sizes("1..2M,3M").unwrap().last(), Some(&(3 << 20)));
        assert_eq!(parse_size("1K"), Ok(1024));
        assert_eq!(show_size(4096), "4K");
        assert_eq!(show_size(1000), "1000");
    }
}

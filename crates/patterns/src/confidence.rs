//! Confidence intervals over repetitions, and netperf-style confidence control
//! (`-I level,width` with `-i max,min`): repeat a whole measurement until the interval of the
//! mean at the requested level is within the requested width, between a minimum and a
//! maximum number of repetitions.

use serde::{Deserialize, Serialize};

/// Two-sided Student t quantiles for 1..=30 degrees of freedom at 90 %, 95 % and 99 %.
const T90: [f64; 30] = [
    6.314, 2.920, 2.353, 2.132, 2.015, 1.943, 1.895, 1.860, 1.833, 1.812, 1.796, 1.782, 1.771, 1.761, 1.753, 1.746, 1.740,
    1.734, 1.729, 1.725, 1.721, 1.717, 1.714, 1.711, 1.708, 1.706, 1.703, 1.701, 1.699, 1.697,
];
const T95: [f64; 30] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110,
    2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
];
const T99: [f64; 30] = [
    63.657, 9.925, 5.841, 4.604, 4.032, 3.707, 3.499, 3.355, 3.250, 3.169, 3.106, 3.055, 3.012, 2.977, 2.947, 2.921, 2.898,
    2.878, 2.861, 2.845, 2.831, 2.819, 2.807, 2.797, 2.787, 2.779, 2.771, 2.763, 2.756, 2.750,
];

/// Confidence levels with a t table, in percent.
pub const LEVELS: [u32; 3] = [90, 95, 99];

/// Two-sided t quantile for `level` percent (90, 95 or 99) and `dof` >= 1 degrees of freedom.
/// Beyond 30 degrees of freedom: the normal quantile with the first Cornish-Fisher term.
pub fn t_quantile(level: u32, dof: u32) -> Option<f64> {
    let (table, z) = match level {
        90 => (&T90, 1.644_854),
        95 => (&T95, 1.959_964),
        99 => (&T99, 2.575_829),
        _ => return None,
    };
    match dof {
        0 => None,
        1..=30 => Some(table[dof as usize - 1]),
        d => Some(z + (z * z * z + z) / (4.0 * d as f64)),
    }
}

/// The interval achieved over a set of repetitions.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    /// Confidence level, percent.
    pub level_pct: u32,
    /// Mean of the per-repetition values.
    pub mean: f64,
    /// Half-width of the interval, in the unit of the values.
    pub half_width: f64,
    /// Full width relative to the mean, percent (netperf's `-I` width: 5 means +-2.5 %).
    pub width_pct: f64,
    /// Repetitions the interval is over.
    pub repetitions: u32,
}

impl Interval {
    /// The t interval of the mean of `values` at `level` percent; None with fewer than two
    /// values or an unsupported level.
    pub fn of(values: &[f64], level: u32) -> Option<Interval> {
        let n = values.len();
        if n < 2 {
            return None;
        }
        let t = t_quantile(level, n as u32 - 1)?;
        let mean = values.iter().sum::<f64>() / n as f64;
        let var = values.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n as f64 - 1.0);
        let half = t * (var / n as f64).sqrt();
        let width_pct = if mean != 0.0 { 200.0 * half / mean.abs() } else { f64::INFINITY };
        Some(Interval { level_pct: level, mean, half_width: half, width_pct, repetitions: n as u32 })
    }
}

/// When to stop repeating.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ConfidenceRule {
    /// Confidence level, percent (90, 95 or 99).
    pub level_pct: u32,
    /// Requested full width of the interval, percent of the mean.
    pub width_pct: f64,
    /// Repetitions always run.
    pub min_reps: u32,
    /// Repetitions never exceeded.
    pub max_reps: u32,
}

impl ConfidenceRule {
    /// netperf's defaults: `-I 99,5 -i 10,3`.
    pub const NETPERF: ConfidenceRule = ConfidenceRule { level_pct: 99, width_pct: 5.0, min_reps: 3, max_reps: 10 };

    /// Checks the rule; errors say what was expected.
    pub fn validate(&self) -> Result<(), String> {
        if !LEVELS.contains(&self.level_pct) {
            return Err(format!("confidence level {} % is not supported (expected one of 90, 95, 99)", self.level_pct));
        }
        if !(self.width_pct > 0.0 && self.width_pct.is_finite()) {
            return Err(format!("confidence width {} % must be a positive number of percent", self.width_pct));
        }
        if self.min_reps < 2 {
            return Err(format!("at least 2 repetitions are needed for an interval (got minimum {})", self.min_reps));
        }
        if self.max_reps < self.min_reps {
            return Err(format!("maximum repetitions {} is below the minimum {}", self.max_reps, self.min_reps));
        }
        Ok(())
    }

    /// True when the interval over `values` is narrow enough.
    pub fn met(&self, values: &[f64]) -> bool {
        Interval::of(values, self.level_pct).is_some_and(|i| i.width_pct <= self.width_pct)
    }

    /// True when another repetition should run after `values`.
    pub fn wants_more(&self, values: &[f64]) -> bool {
        let n = values.len() as u32;
        n < self.min_reps || (n < self.max_reps && !self.met(values))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_table_matches_known_quantiles() {
        assert_eq!(t_quantile(95, 1), Some(12.706));
        assert_eq!(t_quantile(99, 30), Some(2.750));
        assert!((t_quantile(95, 1000).unwrap() - 1.962).abs() < 0.001);
        // Continuous with the table at the join.
        assert!((t_quantile(95, 31).unwrap() - 2.040).abs() < 0.01);
        assert_eq!(t_quantile(80, 5), None);
        assert_eq!(t_quantile(95, 0), None);
    }

    #[test]
    fn interval_of_known_sample() {
        // mean 10, sample sd 1, n 4: half = 3.182 * 0.5.
        let v = [9.0, 10.0, 11.0, 10.0];
        let i = Interval::of(&v, 95).unwrap();
        let sd = (2.0f64 / 3.0).sqrt();
        assert!((i.half_width - 3.182 * sd / 2.0).abs() < 1e-9);
        assert!((i.width_pct - 20.0 * i.half_width).abs() < 1e-9);
        assert!(Interval::of(&[1.0], 95).is_none());
    }

    #[test]
    fn rule_repeats_between_min_and_max() {
        let r = ConfidenceRule { level_pct: 95, width_pct: 1.0, min_reps: 3, max_reps: 5 };
        r.validate().unwrap();
        assert!(r.wants_more(&[10.0, 10.0]));
        assert!(!r.wants_more(&[10.0, 10.0, 10.0]));
        assert!(r.wants_more(&[10.0, 12.0, 8.0]));
        assert!(!r.wants_more(&[10.0, 12.0, 8.0, 11.0, 9.0]));
        assert!(ConfidenceRule { level_pct: 97, ..r }.validate().is_err());
        assert!(ConfidenceRule { min_reps: 1, ..r }.validate().is_err());
        assert!(ConfidenceRule { max_reps: 2, ..r }.validate().is_err());
        ConfidenceRule::NETPERF.validate().unwrap();
    }
}

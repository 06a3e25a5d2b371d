//! Summary statistics of samples.

use serde::{Deserialize, Serialize};

/// Mean, spread and percentiles of a sample set (same unit as the samples).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub count: usize,
    pub mean: f64,
    pub min: f64,
    pub max: f64,
    pub stddev: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub p999: f64,
}

impl Summary {
    /// Summarises `xs`; None when empty.
    pub fn of(xs: &[f64]) -> Option<Summary> {
        if xs.is_empty() {
            return None;
        }
        let mut v: Vec<f64> = xs.to_vec();
        v.sort_by(|a, b| a.total_cmp(b));
        let n = v.len() as f64;
        let mean = v.iter().sum::<f64>() / n;
        let var = if v.len() > 1 { v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0) } else { 0.0 };
        // Nearest-rank percentile.
        let pct = |p: f64| v[(((p / 100.0) * n).ceil() as usize).clamp(1, v.len()) - 1];
        Some(Summary {
            count: v.len(),
            mean,
            min: v[0],
            max: v[v.len() - 1],
            stddev: var.sqrt(),
            p50: pct(50.0),
            p90: pct(90.0),
            p99: pct(99.0),
            p999: pct(99.9),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_nearest_rank() {
        let xs: Vec<f64> = (1..=100).map(|x| x as f64).collect();
        let s = Summary::of(&xs).unwrap();
        assert_eq!(s.p50, 50.0);
        assert_eq!(s.p90, 90.0);
        assert_eq!(s.p99, 99.0);
        assert_eq!(s.p999, 100.0);
        assert_eq!(s.mean, 50.5);
        assert!(Summary::of(&[]).is_none());
        assert_eq!(Summary::of(&[3.0]).unwrap().stddev, 0.0);
    }
}

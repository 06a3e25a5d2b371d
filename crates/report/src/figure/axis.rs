//! Axis ranges and ticks: 1-2-5 steps on linear axes, powers of two (labelled as sizes,
//! 1K = 2^10, 1M = 2^20) or ten on logarithmic ones.

use super::Scale;
use crate::text::{format_fixed, format_sig};

/// One labelled tick, at a data value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Tick {
    /// Position in data units.
    pub value: f64,
    /// Text under (or beside) the tick.
    pub label: String,
}

/// A finished axis: scale, range (in transformed units) and ticks.
#[derive(Debug, Clone)]
pub(crate) struct Axis {
    scale: Scale,
    lo: f64,
    hi: f64,
    /// Labelled ticks with gridlines.
    pub ticks: Vec<Tick>,
    /// Unlabelled minor gridlines (log axes only), in data units.
    pub minor: Vec<f64>,
}

/// How an axis should choose its range.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AxisOptions {
    /// Include 0 in the range of a linear axis (bandwidth and latency plots start at 0).
    pub zero_baseline: bool,
    /// Upper bound on the number of labelled ticks.
    pub max_ticks: usize,
}

impl Scale {
    /// True when `v` can be drawn on this scale (finite; positive on log scales).
    pub(crate) fn accepts(self, v: f64) -> bool {
        v.is_finite() && (self == Scale::Linear || v > 0.0)
    }

    fn transform(self, v: f64) -> f64 {
        match self {
            Scale::Linear => v,
            Scale::Log2 => v.log2(),
            Scale::Log10 => v.log10(),
        }
    }
}

impl Axis {
    /// Builds an axis covering every acceptable value of `values` (others are ignored).
    pub(crate) fn new(scale: Scale, values: &[f64], opts: AxisOptions) -> Axis {
        let mut min = f64::INFINITY;
        let mut max = f64::NEG_INFINITY;
        for &v in values.iter().filter(|v| scale.accepts(**v)) {
            min = min.min(v);
            max = max.max(v);
        }
        let data = if min <= max { Some((min, max)) } else { None };
        match scale {
            Scale::Linear => linear(data, opts),
            Scale::Log2 | Scale::Log10 => logarithmic(scale, data, opts),
        }
    }

    /// Where `v` falls on the axis: 0 at the low end, 1 at the high end (may lie outside
    /// 0..1 for values out of range). `None` when the scale cannot show `v`.
    pub(crate) fn fraction(&self, v: f64) -> Option<f64> {
        if !self.scale.accepts(v) {
            return None;
        }
        let f = (self.scale.transform(v) - self.lo) / (self.hi - self.lo);
        f.is_finite().then_some(f)
    }
}

fn linear(data: Option<(f64, f64)>, opts: AxisOptions) -> Axis {
    let (mut min, mut max) = data.unwrap_or((0.0, 1.0));
    if opts.zero_baseline {
        min = min.min(0.0);
        max = max.max(0.0);
    }
    if min == max {
        let pad = if min == 0.0 { 1.0 } else { min.abs() * 0.25 };
        min -= pad;
        max += pad;
        if opts.zero_baseline && data.is_some_and(|(lo, _)| lo >= 0.0) {
            min = min.max(0.0);
        }
    }
    let target = opts.max_ticks.clamp(2, 12) as f64 - 1.0;
    let step = nice_step((max - min) / target);
    let (lo_k, hi_k) = match step {
        Some(s) => ((min / s).floor(), (max / s).ceil()),
        None => (0.0, 0.0),
    };
    let Some(step) = step.filter(|_| hi_k - lo_k >= 1.0 && hi_k - lo_k <= 100.0) else {
        // Range too small or too large for tick arithmetic: show it plainly.
        return Axis {
            scale: Scale::Linear,
            lo: min,
            hi: max,
            ticks: [min, max]
                .iter()
                .map(|&v| Tick {
                    value: v,
                    label: format_sig(v, 4),
                })
                .collect(),
            minor: Vec::new(),
        };
    };
    let decimals = (-step.log10().floor()).max(0.0) as usize;
    let ticks = (lo_k as i64..=hi_k as i64)
        .map(|k| {
            let value = k as f64 * step;
            Tick {
                value,
                label: format_fixed(value, decimals),
            }
        })
        .collect();
    Axis {
        scale: Scale::Linear,
        lo: lo_k * step,
        hi: hi_k * step,
        ticks,
        minor: Vec::new(),
    }
}

/// The 1-2-5 step at or above `raw`; `None` if `raw` is not a positive finite number.
fn nice_step(raw: f64) -> Option<f64> {
    if !(raw.is_finite() && raw > 0.0) {
        return None;
    }
    let magnitude = 10f64.powf(raw.log10().floor());
    let norm = raw / magnitude;
    let nice = if norm <= 1.0 {
        1.0
    } else if norm <= 2.0 {
        2.0
    } else if norm <= 5.0 {
        5.0
    } else {
        10.0
    };
    let step = nice * magnitude;
    (step.is_finite() && step > 0.0).then_some(step)
}

fn logarithmic(scale: Scale, data: Option<(f64, f64)>, opts: AxisOptions) -> Axis {
    let base = if scale == Scale::Log2 { 2.0 } else { 10.0 };
    let (min, max) = data.unwrap_or((1.0, if scale == Scale::Log2 { 16.0 } else { 100.0 }));
    let mut e_lo = scale.transform(min).floor().clamp(-1000.0, 1000.0) as i64;
    let mut e_hi = scale.transform(max).ceil().clamp(-1000.0, 1000.0) as i64;
    if e_hi <= e_lo {
        // A single exact power: centre it between its neighbours.
        e_lo -= 1;
        e_hi = e_lo + 2;
    }
    let max_ticks = opts.max_ticks.max(2) as i64;
    let step = ((e_hi - e_lo) + max_ticks - 2)
        .div_euclid(max_ticks - 1)
        .max(1);
    e_lo = e_lo.div_euclid(step) * step;
    e_hi = -((-e_hi).div_euclid(step)) * step;
    let ticks = (e_lo..=e_hi)
        .step_by(step as usize)
        .map(|e| {
            let value = base_pow(base, e);
            Tick {
                value,
                label: log_label(scale, e, value),
            }
        })
        .collect();
    let mut minor = Vec::new();
    if scale == Scale::Log2 {
        if step > 1 {
            minor = (e_lo..=e_hi)
                .filter(|e| (e - e_lo) % step != 0)
                .map(|e| base_pow(base, e))
                .collect();
        }
    } else if step == 1 && e_hi - e_lo <= 4 {
        for e in e_lo..e_hi {
            minor.extend((2..10).map(|m| m as f64 * base_pow(base, e)));
        }
    }
    Axis {
        scale,
        lo: e_lo as f64,
        hi: e_hi as f64,
        ticks,
        minor,
    }
}

fn base_pow(base: f64, e: i64) -> f64 {
    base.powi(e.clamp(-1000, 1000) as i32)
}

fn log_label(scale: Scale, e: i64, value: f64) -> String {
    if scale == Scale::Log10 || e < 0 {
        return format_sig(value, 3);
    }
    size_label(e)
}

/// 2^e as a size: 1, 2, ... 512, 1K, ... 512K, 1M, ... 1G, ... 1T, then 2^e.
fn size_label(e: i64) -> String {
    const UNITS: [&str; 5] = ["", "K", "M", "G", "T"];
    let group = (e / 10) as usize;
    match UNITS.get(group) {
        Some(unit) => format!("{}{unit}", 1u64 << (e % 10)),
        None => format!("2^{e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(axis: &Axis) -> Vec<&str> {
        axis.ticks.iter().map(|t| t.label.as_str()).collect()
    }

    const X: AxisOptions = AxisOptions {
        zero_baseline: false,
        max_ticks: 12,
    };
    const Y: AxisOptions = AxisOptions {
        zero_baseline: true,
        max_ticks: 7,
    };

    #[test]
    fn log2_message_sizes() {
        let a = Axis::new(Scale::Log2, &[1.0, 4194304.0], X);
        assert_eq!(
            labels(&a),
            ["1", "4", "16", "64", "256", "1K", "4K", "16K", "64K", "256K", "1M", "4M"]
        );
        assert_eq!(a.fraction(1.0), Some(0.0));
        assert_eq!(a.fraction(4194304.0), Some(1.0));
        assert!(!a.minor.is_empty());
        let a = Axis::new(Scale::Log2, &[2.0, 64.0], X);
        assert_eq!(labels(&a), ["2", "4", "8", "16", "32", "64"]);
        assert_eq!(a.fraction(0.0), None);
        assert_eq!(a.fraction(-1.0), None);
    }

    #[test]
    fn log2_fractions_and_single_value() {
        let a = Axis::new(Scale::Log2, &[0.5, 3.0], X);
        assert_eq!(labels(&a), ["0.5", "1", "2", "4"]);
        // A single value sits in the middle, between its neighbouring powers.
        let a = Axis::new(Scale::Log2, &[1024.0], X);
        assert_eq!(labels(&a), ["512", "1K", "2K"]);
        assert_eq!(a.fraction(1024.0), Some(0.5));
        assert_eq!(size_label(30), "1G");
        assert_eq!(size_label(55), "2^55");
    }

    #[test]
    fn log10() {
        let a = Axis::new(Scale::Log10, &[2.0, 300.0], Y);
        assert_eq!(labels(&a), ["1", "10", "100", "1000"]);
        assert_eq!(a.minor.len(), 24);
    }

    #[test]
    fn linear_starts_at_zero_with_nice_steps() {
        let a = Axis::new(Scale::Linear, &[500.0, 968.0], Y);
        assert_eq!(labels(&a), ["0", "200", "400", "600", "800", "1000"]);
        let a = Axis::new(
            Scale::Linear,
            &[1.0, 8.0],
            AxisOptions {
                zero_baseline: false,
                max_ticks: 9,
            },
        );
        assert_eq!(labels(&a), ["1", "2", "3", "4", "5", "6", "7", "8"]);
        let a = Axis::new(Scale::Linear, &[0.012, 0.07], Y);
        assert_eq!(labels(&a), ["0", "0.02", "0.04", "0.06", "0.08"]);
    }

    #[test]
    fn negative_data_lowers_the_baseline() {
        let a = Axis::new(Scale::Linear, &[-30.0, 20.0], Y);
        assert_eq!(a.ticks.first().unwrap().value, -30.0);
        assert_eq!(a.ticks.last().unwrap().value, 20.0);
    }

    #[test]
    fn degenerate_ranges() {
        let a = Axis::new(Scale::Linear, &[], Y);
        assert_eq!(labels(&a).first(), Some(&"0"));
        let a = Axis::new(Scale::Linear, &[0.0, 0.0], Y);
        assert_eq!(labels(&a).last(), Some(&"1"));
        let a = Axis::new(Scale::Linear, &[4.0], X);
        assert!(a.fraction(4.0).unwrap() > 0.0 && a.fraction(4.0).unwrap() < 1.0);
        let a = Axis::new(Scale::Linear, &[f64::NAN, f64::INFINITY], Y);
        assert!(!a.ticks.is_empty());
        let a = Axis::new(Scale::Linear, &[1.0, 1.0 + 1e-15], X);
        assert!(a.fraction(1.0).unwrap().is_finite());
        let a = Axis::new(Scale::Linear, &[-1e308, 1e308], X);
        assert!(a.fraction(0.0).unwrap().is_finite());
        let a = Axis::new(Scale::Log10, &[1e-300, 1e300], Y);
        assert!(a.ticks.len() <= 7);
        let a = Axis::new(Scale::Log2, &[-5.0, 0.0], X);
        assert_eq!(labels(&a), ["1", "2", "4", "8", "16"]);
    }
}

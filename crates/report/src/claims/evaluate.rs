//! Comparing a model value with a claim's published value.

use super::spec::{ClaimSpec, ClaimValue};
use serde::Serialize;

/// Relative tolerance used when a numeric claim specifies none (0.15 = 15 %).
pub const DEFAULT_TOLERANCE: f64 = 0.15;

/// How a model value compares with a claim.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ClaimStatus {
    /// The model value agrees with the published one (within the relative tolerance, or
    /// the same yes/no answer).
    Within,
    /// The model value disagrees with the published one, or is of the wrong kind.
    Outside,
    /// The published value is withheld on purpose; the model computed a prediction.
    Predicted,
    /// The model cannot compute this claim yet.
    NotModelled,
    /// The claim's study was not selected in this run (`reproduce --study ...`).
    NotRun,
}

impl ClaimStatus {
    /// All statuses, in report order.
    pub const ALL: [ClaimStatus; 5] = [
        ClaimStatus::Within,
        ClaimStatus::Outside,
        ClaimStatus::Predicted,
        ClaimStatus::NotModelled,
        ClaimStatus::NotRun,
    ];

    /// The JSON spelling: `within`, `outside`, `predicted`, `not_modelled`, `not_run`.
    pub fn as_str(self) -> &'static str {
        match self {
            ClaimStatus::Within => "within",
            ClaimStatus::Outside => "outside",
            ClaimStatus::Predicted => "predicted",
            ClaimStatus::NotModelled => "not_modelled",
            ClaimStatus::NotRun => "not_run",
        }
    }

    /// Words for people: `within tolerance`, `outside tolerance`, `predicted`, `not modelled`.
    pub fn label(self) -> &'static str {
        match self {
            ClaimStatus::Within => "within tolerance",
            ClaimStatus::Outside => "outside tolerance",
            ClaimStatus::Predicted => "predicted (withheld)",
            ClaimStatus::NotModelled => "not modelled",
            ClaimStatus::NotRun => "not run (study not selected)",
        }
    }

    /// The one-character mark of the report: ✓ within, ✗ outside, ● predicted, — not
    /// modelled, · not run.
    pub fn mark(self) -> &'static str {
        match self {
            ClaimStatus::Within => "\u{2713}",
            ClaimStatus::Outside => "\u{2717}",
            ClaimStatus::Predicted => "\u{25cf}",
            ClaimStatus::NotModelled => "\u{2014}",
            ClaimStatus::NotRun => "\u{00b7}",
        }
    }
}

/// A claim together with the model's value for it and the verdict.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ClaimResult {
    /// The claim as read from `claims.csv`.
    pub spec: ClaimSpec,
    /// The model's value in `spec.unit`; `None` when not modelled.
    pub value: Option<ClaimValue>,
    /// The verdict.
    pub status: ClaimStatus,
    /// Relative deviation `(model - published) / published` of numeric claims
    /// (0.05 = model 5 % above); `None` for yes/no, withheld or unmodelled claims, or
    /// when the published value is 0 and the model value is not.
    pub deviation: Option<f64>,
    /// Free text for people, e.g. why a claim is outside or how it was computed.
    pub note: Option<String>,
}

/// Counts of claims per status.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClaimCounts {
    /// Claims within tolerance.
    pub within: usize,
    /// Claims outside tolerance.
    pub outside: usize,
    /// Withheld claims the model predicted.
    pub predicted: usize,
    /// Claims the model cannot compute yet.
    pub not_modelled: usize,
    /// Claims of studies not run.
    pub not_run: usize,
}

impl ClaimCounts {
    /// Counts the statuses of `results`.
    pub fn of<'a>(results: impl IntoIterator<Item = &'a ClaimResult>) -> ClaimCounts {
        let mut counts = ClaimCounts::default();
        for r in results {
            *counts.slot(r.status) += 1;
        }
        counts
    }

    /// The count of one status.
    pub fn get(&self, status: ClaimStatus) -> usize {
        match status {
            ClaimStatus::Within => self.within,
            ClaimStatus::Outside => self.outside,
            ClaimStatus::Predicted => self.predicted,
            ClaimStatus::NotModelled => self.not_modelled,
            ClaimStatus::NotRun => self.not_run,
        }
    }

    /// Total number of claims counted.
    pub fn total(&self) -> usize {
        self.within + self.outside + self.predicted + self.not_modelled + self.not_run
    }

    fn slot(&mut self, status: ClaimStatus) -> &mut usize {
        match status {
            ClaimStatus::Within => &mut self.within,
            ClaimStatus::Outside => &mut self.outside,
            ClaimStatus::Predicted => &mut self.predicted,
            ClaimStatus::NotModelled => &mut self.not_modelled,
            ClaimStatus::NotRun => &mut self.not_run,
        }
    }
}

impl ClaimResult {
    /// The result for a claim whose study was not run: no value, status
    /// [`ClaimStatus::NotRun`].
    pub fn not_run(spec: &ClaimSpec) -> ClaimResult {
        ClaimResult {
            spec: spec.clone(),
            value: None,
            status: ClaimStatus::NotRun,
            deviation: None,
            note: Some("study not selected in this run".to_string()),
        }
    }
}

/// Judges the model's `value` for the claim `spec`.
///
/// * `value` `None` → [`ClaimStatus::NotModelled`].
/// * A value of the wrong kind (a number for a `bool` claim, a yes/no for a numeric one)
///   or a non-finite number → [`ClaimStatus::Outside`] with an explaining note.
/// * Published value withheld → [`ClaimStatus::Predicted`].
/// * Numbers: within when `|model - published| <= tolerance * |published|`, tolerance
///   defaulting to [`DEFAULT_TOLERANCE`]; `deviation` is `(model - published) / published`.
/// * Yes/no: within when equal.
///
/// `note` is kept; a note explaining a mismatch is appended to it.
pub fn evaluate(spec: &ClaimSpec, value: Option<ClaimValue>, note: Option<String>) -> ClaimResult {
    let (status, deviation, problem) = judge(spec, value.as_ref());
    let note = match (note, problem) {
        (Some(n), Some(p)) => Some(format!("{n}; {p}")),
        (n, p) => n.or(p),
    };
    ClaimResult {
        spec: spec.clone(),
        value,
        status,
        deviation,
        note,
    }
}

fn judge(
    spec: &ClaimSpec,
    value: Option<&ClaimValue>,
) -> (ClaimStatus, Option<f64>, Option<String>) {
    let Some(value) = value else {
        return (ClaimStatus::NotModelled, None, None);
    };
    let kind_ok = matches!(value, ClaimValue::Bool(_)) == spec.is_bool();
    if !kind_ok {
        let problem = if spec.is_bool() {
            format!("model gave the number {value} for a yes/no claim")
        } else {
            format!(
                "model gave the yes/no answer {value} for a claim in {}",
                spec.unit
            )
        };
        return (ClaimStatus::Outside, None, Some(problem));
    }
    if let ClaimValue::Number(x) = value {
        if !x.is_finite() {
            return (
                ClaimStatus::Outside,
                None,
                Some(format!("model value {x} is not finite")),
            );
        }
    }
    match (&spec.published, value) {
        (None, _) => (ClaimStatus::Predicted, None, None),
        (Some(ClaimValue::Number(p)), ClaimValue::Number(m)) => {
            let tol = spec.judged_tolerance().unwrap_or(DEFAULT_TOLERANCE);
            let within = (m - p).abs() <= tol * p.abs();
            let deviation = if *p != 0.0 {
                Some((m - p) / p)
            } else if *m == 0.0 {
                Some(0.0)
            } else {
                None
            };
            let status = if within {
                ClaimStatus::Within
            } else {
                ClaimStatus::Outside
            };
            (status, deviation, None)
        }
        (Some(ClaimValue::Bool(p)), ClaimValue::Bool(m)) => {
            let status = if p == m {
                ClaimStatus::Within
            } else {
                ClaimStatus::Outside
            };
            (status, None, None)
        }
        // The published value's kind disagrees with the unit; parse_claims_csv never
        // produces this, but hand-built specs could.
        (Some(p), _) => (
            ClaimStatus::Outside,
            None,
            Some(format!(
                "published value {p} does not match the unit {}",
                spec.unit
            )),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(unit: &str, published: Option<ClaimValue>, tolerance: Option<f64>) -> ClaimSpec {
        ClaimSpec {
            id: "x.y".into(),
            paper: "pcie".into(),
            figure: "fig6".into(),
            testbed: "tb".into(),
            description: "d".into(),
            unit: unit.into(),
            published,
            tolerance,
        }
    }

    #[test]
    fn number_within_and_outside() {
        let s = spec("MB/s", Some(1000.0.into()), Some(0.1));
        let r = evaluate(&s, Some(1100.0.into()), None);
        assert_eq!(r.status, ClaimStatus::Within);
        assert!((r.deviation.unwrap() - 0.1).abs() < 1e-12);
        let r = evaluate(&s, Some(1100.1.into()), None);
        assert_eq!(r.status, ClaimStatus::Outside);
        let r = evaluate(&s, Some(850.0.into()), Some("from fig6 series".into()));
        assert_eq!(r.status, ClaimStatus::Outside);
        assert!((r.deviation.unwrap() + 0.15).abs() < 1e-12);
        assert_eq!(r.note.as_deref(), Some("from fig6 series"));
    }

    #[test]
    fn default_tolerance_applies() {
        let s = spec("us", Some(10.0.into()), None);
        assert_eq!(
            evaluate(&s, Some(11.4.into()), None).status,
            ClaimStatus::Within
        );
        assert_eq!(
            evaluate(&s, Some(11.6.into()), None).status,
            ClaimStatus::Outside
        );
    }

    #[test]
    fn negative_and_zero_published() {
        let s = spec("%", Some((-10.0).into()), Some(0.2));
        let r = evaluate(&s, Some((-11.0).into()), None);
        assert_eq!(r.status, ClaimStatus::Within);
        assert!((r.deviation.unwrap() - 0.1).abs() < 1e-12);
        let s = spec("%", Some(0.0.into()), Some(0.2));
        let r = evaluate(&s, Some(0.0.into()), None);
        assert_eq!((r.status, r.deviation), (ClaimStatus::Within, Some(0.0)));
        let r = evaluate(&s, Some(0.1.into()), None);
        assert_eq!((r.status, r.deviation), (ClaimStatus::Outside, None));
    }

    #[test]
    fn bools() {
        let s = spec("bool", Some(true.into()), None);
        assert_eq!(
            evaluate(&s, Some(true.into()), None).status,
            ClaimStatus::Within
        );
        let r = evaluate(&s, Some(false.into()), None);
        assert_eq!((r.status, r.deviation), (ClaimStatus::Outside, None));
    }

    #[test]
    fn predicted_and_not_modelled() {
        let s = spec("Mb/s", None, Some(0.15));
        let r = evaluate(&s, Some(9000.0.into()), None);
        assert_eq!((r.status, r.deviation), (ClaimStatus::Predicted, None));
        let r = evaluate(&s, None, Some("needs the WAN model".into()));
        assert_eq!(r.status, ClaimStatus::NotModelled);
        assert_eq!(r.note.as_deref(), Some("needs the WAN model"));
        let s = spec("bool", Some(true.into()), None);
        assert_eq!(evaluate(&s, None, None).status, ClaimStatus::NotModelled);
    }

    #[test]
    fn kind_mismatch_is_outside_with_note() {
        let s = spec("bool", Some(true.into()), None);
        let r = evaluate(&s, Some(1.0.into()), Some("n".into()));
        assert_eq!(r.status, ClaimStatus::Outside);
        assert_eq!(
            r.note.as_deref(),
            Some("n; model gave the number 1 for a yes/no claim")
        );
        let s = spec("us", None, None);
        let r = evaluate(&s, Some(true.into()), None);
        assert_eq!(r.status, ClaimStatus::Outside, "even when withheld");
        assert!(r
            .note
            .unwrap()
            .contains("yes/no answer true for a claim in us"));
    }

    #[test]
    fn non_finite_model_value_is_outside() {
        let s = spec("us", Some(1.0.into()), None);
        let r = evaluate(&s, Some(f64::NAN.into()), None);
        assert_eq!(r.status, ClaimStatus::Outside);
        assert!(r.note.unwrap().contains("not finite"));
    }

    #[test]
    fn counts() {
        let s = spec("us", Some(1.0.into()), None);
        let results = vec![
            evaluate(&s, Some(1.0.into()), None),
            evaluate(&s, Some(3.0.into()), None),
            evaluate(&s, None, None),
            evaluate(&s, None, None),
        ];
        let c = ClaimCounts::of(&results);
        assert_eq!(
            (c.within, c.outside, c.predicted, c.not_modelled, c.total()),
            (1, 1, 0, 2, 4)
        );
        assert_eq!(c.get(ClaimStatus::NotModelled), 2);
    }
}

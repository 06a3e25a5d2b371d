//! What a claim is: one published number or yes/no statement of a study, with its unit
//! and the tolerance within which the model is said to reproduce it.

use serde::Serialize;
use std::fmt;

/// The units a claim value may have (column `unit` of `claims.csv`).
///
/// `us` microseconds, `ms` milliseconds, `MB/s` 10^6 byte/s, `Mb/s` 10^6 bit/s,
/// `%` percent, `ratio` dimensionless, `bool` a yes/no statement.
pub const UNITS: [&str; 7] = ["us", "ms", "MB/s", "Mb/s", "%", "ratio", "bool"];

/// The unit string of yes/no claims.
pub const BOOL_UNIT: &str = "bool";

/// One row of `claims.csv`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ClaimSpec {
    /// Stable claim id, e.g. `pcie.bw.uni_pcie`; unique within the file.
    pub id: String,
    /// Study (paper) id, e.g. `pcie`; equals the report's study section id.
    pub paper: String,
    /// Figure (or section) of the paper the claim belongs to, e.g. `fig6` or `sec6`.
    pub figure: String,
    /// Testbed profile the claim was measured on, e.g. `xeon-mt25208-pcie`.
    pub testbed: String,
    /// One-sentence description of what is claimed.
    pub description: String,
    /// Unit of the value, one of [`UNITS`].
    pub unit: String,
    /// The published value in `unit`; `None` when withheld on purpose (the model predicts it).
    pub published: Option<ClaimValue>,
    /// Relative tolerance (0.15 = 15 %) for numeric claims; `None` for yes/no claims or
    /// when unspecified (then [`crate::DEFAULT_TOLERANCE`] applies).
    pub tolerance: Option<f64>,
}

impl ClaimSpec {
    /// True when the claim is a yes/no statement (unit `bool`).
    pub fn is_bool(&self) -> bool {
        self.unit == BOOL_UNIT
    }

    /// The relative tolerance a numeric claim is judged with: its own, or
    /// [`crate::DEFAULT_TOLERANCE`]; `None` for yes/no claims.
    pub fn judged_tolerance(&self) -> Option<f64> {
        (!self.is_bool()).then(|| self.tolerance.unwrap_or(crate::DEFAULT_TOLERANCE))
    }
}

/// A claim value: a number in the claim's unit, or a yes/no answer.
/// Serialises as a bare JSON number or boolean.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ClaimValue {
    /// A number in the unit of its claim.
    Number(f64),
    /// A yes/no answer (unit `bool`).
    Bool(bool),
}

impl fmt::Display for ClaimValue {
    /// Numbers in their shortest exact form (`1.22`, `12650`), booleans as `true`/`false`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClaimValue::Number(x) => write!(f, "{x}"),
            ClaimValue::Bool(b) => write!(f, "{b}"),
        }
    }
}

impl From<f64> for ClaimValue {
    fn from(x: f64) -> Self {
        ClaimValue::Number(x)
    }
}

impl From<bool> for ClaimValue {
    fn from(b: bool) -> Self {
        ClaimValue::Bool(b)
    }
}

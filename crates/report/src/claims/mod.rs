//! Claims: reading `claims.csv`, judging model values against published ones, and the
//! machine-readable claims JSON.

mod csv;
mod evaluate;
mod json;
mod parse;
mod spec;

pub use evaluate::{evaluate, ClaimCounts, ClaimResult, ClaimStatus, DEFAULT_TOLERANCE};
pub use json::claims_json;
pub use parse::{parse_claims_csv, read_claims_csv, COLUMNS};
pub use spec::{ClaimSpec, ClaimValue, BOOL_UNIT, UNITS};

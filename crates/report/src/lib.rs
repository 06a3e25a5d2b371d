//! interlab-report: claims, figures and the HTML report of interlab.
//!
//! * [`claims`]: read `claims.csv` ([`parse_claims_csv`]), judge model values against
//!   published ones ([`evaluate`]) and write the claims JSON ([`claims_json`]).
//! * [`figure`]: describe a plot ([`Figure`]) and render it as SVG ([`render_svg`]).
//! * [`html`]: assemble studies, figures and claims into one self-contained HTML page
//!   plus SVG and JSON files ([`write_report`]).
//!
//! Everything here is deterministic: the same input gives the same bytes.

#![warn(missing_docs)]

pub mod claims;
mod error;
pub mod figure;
pub mod html;
mod text;

#[cfg(test)]
mod test_support;

pub use claims::{
    claims_json, evaluate, parse_claims_csv, read_claims_csv, ClaimCounts, ClaimResult, ClaimSpec,
    ClaimStatus, ClaimValue, DEFAULT_TOLERANCE,
};
pub use error::ReportError;
pub use text::format_sig;
pub use figure::{render_svg, Figure, Mark, Scale, Series};
pub use html::{figure_claims, render_html, write_report, Report, ReportFiles, StudySection};

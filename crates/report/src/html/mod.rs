//! The report: one self-contained HTML page (figures inlined as SVG, inline CSS, no
//! external resources), the figures again as SVG files, and the claims JSON.

mod css;
mod page;
mod write;

use crate::claims::ClaimResult;
use crate::figure::Figure;
use std::path::PathBuf;

pub use page::render_html;
pub use write::write_report;

/// One study (paper) of the report.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StudySection {
    /// Study id, e.g. `pcie`; claims whose `paper` equals it belong to this section.
    pub id: String,
    /// Heading, e.g. `PCI Express vs PCI-X InfiniBand HCAs`.
    pub title: String,
    /// A paragraph saying what the study measured and what the model shows.
    pub summary: String,
    /// The study's figures, in reading order. A claim belongs to the figure whose id is
    /// `<study id>-<claim figure>`, e.g. claim figure `fig6` of study `pcie` → `pcie-fig6`.
    pub figures: Vec<Figure>,
}

/// Everything the report shows.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Report {
    /// Page title, e.g. `interlab: reproduction of five interconnect studies`.
    pub title: String,
    /// Tool version, e.g. `0.1.0`.
    pub version: String,
    /// How the report was made, e.g. the command line and seed.
    pub generated_note: String,
    /// Study sections, in order.
    pub studies: Vec<StudySection>,
    /// Every evaluated claim (also those of papers without a section), in `claims.csv` order.
    pub claims: Vec<ClaimResult>,
    /// Text at the bottom of the page, e.g. `model run time 12.3 s`.
    pub footer: String,
}

/// The files [`write_report`] wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReportFiles {
    /// `<dir>/report.html`.
    pub html: PathBuf,
    /// `<dir>/claims.json`.
    pub claims_json: PathBuf,
    /// `<dir>/figures/<figure id>.svg`, in report order.
    pub figures: Vec<PathBuf>,
}

/// The claims of `claims` that belong to figure `fig` of study `study_id`
/// (`spec.paper == study_id` and `<study_id>-<spec.figure> == fig.id`), in input order.
pub fn figure_claims<'a>(
    study_id: &str,
    fig: &Figure,
    claims: &'a [ClaimResult],
) -> Vec<&'a ClaimResult> {
    claims
        .iter()
        .filter(|c| c.spec.paper == study_id && fig.id == format!("{study_id}-{}", c.spec.figure))
        .collect()
}

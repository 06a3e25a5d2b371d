//! The studies and their figures.

use crate::claimcalc::{Computed, FigureResults};
use interlab_report::Scale;

/// One figure of a study: its experiment spec and how to plot it.
#[derive(Debug, Clone)]
pub struct FigureDef {
    /// Figure id as in claims.csv (`fig6`).
    pub id: &'static str,
    pub title: &'static str,
    /// Embedded experiment spec text.
    pub spec: &'static str,
    /// Spec path inside the repository (for records and error messages).
    pub spec_path: &'static str,
    pub x_label: &'static str,
    pub y_label: &'static str,
    pub x_scale: Scale,
    pub y_scale: Scale,
    /// Plotted y = series value / `y_div` (e.g. 1000 to draw microseconds as milliseconds).
    pub y_div: f64,
    /// A horizontal reference line drawn dashed across the plot: its y in the plotted unit
    /// and its legend label (e.g. TPC-W's limit of 10 % of requests over the response time).
    pub y_reference: Option<(f64, &'static str)>,
}

/// A study: figures plus the claim computations.
pub struct StudyDef {
    /// Paper id (`pcie`).
    pub id: &'static str,
    pub title: &'static str,
    pub summary: &'static str,
    pub figures: Vec<FigureDef>,
    /// Computes the study's claims from its figures' results.
    pub claims: fn(&FigureResults) -> Vec<Computed>,
}

/// Every study interlab models so far, in report order.
pub fn catalog() -> Vec<StudyDef> {
    vec![crate::vpi::study(), crate::pcie::study(), crate::ipoib_offload::study(), crate::ibwan::study(), crate::sdp::study()]
}

/// The five paper ids, in report order (studies not yet modelled still get a section).
pub const PAPERS: &[(&str, &str)] = &[
    ("vpi", "Grant, Afsahi, Balaji: ConnectX Virtual Protocol Interconnect for data centers (ICPADS 2009)"),
    ("pcie", "Liu, Mamidala, Vishnu, Panda: InfiniBand with PCI Express (HotI 2004)"),
    ("ipoib-offload", "Grant, Balaji, Afsahi: hardware-assisted IP over InfiniBand in enterprise data centers (2010)"),
    ("ib-wan", "Yu, Rao, Vetter: InfiniBand transport services on WAN (2008)"),
    ("sdp", "Balaji et al.: Sockets Direct Protocol over InfiniBand in clusters (ISPASS 2004)"),
];

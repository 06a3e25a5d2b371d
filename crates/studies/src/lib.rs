//! The study catalog: for each of the five published studies, its figures (experiment
//! specs under `studies/<id>/`), the code that computes each claim of `claims.csv` from
//! the simulated series, and [`reproduce`], which runs them and writes the report.

/// A figure of study `$study` whose experiment spec is `studies/$study/$id.toml` (embedded).
macro_rules! study_figure {
    ($study:literal, $id:literal, $title:expr, x: $xl:expr, $xs:expr, y: $yl:expr, $ys:expr, div: $div:expr) => {
        $crate::catalog::FigureDef {
            id: $id,
            title: $title,
            spec: include_str!(concat!("../../../studies/", $study, "/", $id, ".toml")),
            spec_path: concat!("studies/", $study, "/", $id, ".toml"),
            x_label: $xl,
            y_label: $yl,
            x_scale: $xs,
            y_scale: $ys,
            y_div: $div,
            y_reference: None,
        }
    };
}

mod catalog;
mod claimcalc;
mod datacenter;
mod ibwan;
mod ipoib_offload;
mod pcie;
pub mod pvfs;
mod reproduce;
mod schedule;
mod sdp;
mod vpi;

pub use catalog::{catalog, FigureDef, StudyDef};
pub use claimcalc::{Computed, FigureResults};
pub use reproduce::{reproduce, FigureTiming, NoProgress, PointSharing, QueueSpan, Progress, ReproduceOptions, ReproduceOutput, EMBEDDED_CLAIMS};

//! The study catalog: for each of the five published studies, its figures (experiment
//! specs under `studies/<id>/`), the code that computes each claim of `claims.csv` from
//! the simulated series, and [`reproduce`], which runs them and writes the report.

mod catalog;
mod claimcalc;
mod ibwan;
mod ipoib_offload;
mod pcie;
mod reproduce;
mod sdp;
mod vpi;

pub use catalog::{catalog, FigureDef, StudyDef};
pub use claimcalc::{Computed, FigureResults};
pub use reproduce::{reproduce, NoProgress, Progress, ReproduceOptions, ReproduceOutput, EMBEDDED_CLAIMS};

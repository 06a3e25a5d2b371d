//! Experiment specs and their execution.
//!
//! An experiment (one TOML file) names a pattern, a transport set-up, a profile and a size
//! sweep, optionally as several `[[series]]` that override any of those keys (one curve
//! each). Running it yields one [`SeriesResult`] per series and one tidy
//! [`ResultRecord`](interlab_patterns::ResultRecord) per point.

pub mod calibrate;
pub mod calibrate_mpi;
pub mod fit;
pub mod live;
pub mod live_mpi;
pub mod toolout;
mod point;
mod run;
mod spec;

pub use point::{PointJob, PointKeys};
pub use run::{assemble, point_count, point_jobs, records_csv, records_jsonl, run_experiment, run_experiment_shard, write_records, SeriesResult, Shard};
pub use spec::{other_spec_kind, parse_experiment, Engine, Experiment, LiveSpec, PointSpec, SeriesSpec, XAxis};

/// Version string stamped on every record.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

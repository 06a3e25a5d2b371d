//! Trace-driven replay of the data center in the model: browsers, tiers with cores,
//! connection pools per tier pair, and per message the network cost of the chosen socket
//! protocol taken from the detailed model (`interlab-model`). See docs/datacenter.md,
//! "Model replay".

pub mod engine;
mod msgcost;
mod program;
mod queue;
mod runs;
pub mod netcost;
pub mod spec;
pub mod table;
pub mod workload;

pub use engine::{Completion, Config, LinkCfg, Outcome, TierCfg, Workload, WorkloadClone};
pub use program::{Program, Step};
pub use netcost::{MsgCost, NetCost, Protocol};
pub use spec::{CostCache, DcSpec, Kind};
pub use table::InteractionTable;

#[cfg(test)]
mod tests;

//! Switch parameters.

use crate::params::{ParamError, Table};

/// A cut-through crossbar switch with output queueing.
#[derive(Debug, Clone, PartialEq)]
pub struct SwitchSpec {
    /// Port-to-port latency (header in to header out), ns.
    pub port_latency_ns: f64,
}

impl SwitchSpec {
    /// Reads `[switch]`.
    pub fn from_table(t: &mut Table) -> Result<Self, ParamError> {
        Ok(SwitchSpec { port_latency_ns: t.param("port_latency_ns", "ns")? })
    }
}

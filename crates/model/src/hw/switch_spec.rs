//! Switch parameters.

use crate::params::{ParamError, Table};

/// A cut-through crossbar switch with output queueing.
#[derive(Debug, Clone, PartialEq)]
pub struct SwitchSpec {
    /// Port-to-port latency (header in to header out), ns.
    pub port_latency_ns: f64,
    /// Buffer per port for packets waiting on a busy output, bytes; beyond it the
    /// upstream sender runs out of link credits and stalls.
    pub buffer_bytes: u64,
}

impl SwitchSpec {
    /// Reads `[switch]`.
    pub fn from_table(t: &mut Table) -> Result<Self, ParamError> {
        Ok(SwitchSpec { port_latency_ns: t.param("port_latency_ns", "ns")?, buffer_bytes: t.param_u64("buffer_bytes", "bytes", 64)? })
    }
}

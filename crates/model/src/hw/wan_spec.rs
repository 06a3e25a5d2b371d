//! Wide-area path parameters: InfiniBand range extenders (IB over SONET) and the loop.

use crate::hw::link::{LineCode, LinkSpec};
use crate::params::{ParamError, Table};

/// Two range extenders (one per site) joined by a SONET loop.
#[derive(Debug, Clone, PartialEq)]
pub struct WanSpec {
    /// Extender InfiniBand port: signalling per lane, Gb/s.
    pub ib_lane_gbps: f64,
    /// Extender InfiniBand port lanes.
    pub ib_lanes: u32,
    /// Extender InfiniBand port line code.
    pub ib_code: LineCode,
    /// SONET payload rate carrying the packets, Gb/s.
    pub sonet_payload_gbps: f64,
    /// Encapsulation bytes added to every packet on the SONET side.
    pub encap_bytes: u64,
    /// Store-and-forward latency of one extender, ns.
    pub extender_latency_ns: f64,
    /// One-way delay of the loop per mile (fibre plus SONET equipment), us/mile.
    pub delay_us_per_mile: f64,
}

impl WanSpec {
    /// Reads `[wan]`.
    pub fn from_table(t: &mut Table) -> Result<Self, ParamError> {
        Ok(WanSpec {
            ib_lane_gbps: t.param("ib_lane_gbps", "Gb/s")?,
            ib_lanes: t.param_u64("ib_lanes", "lanes", 1)? as u32,
            ib_code: LineCode::parse(t, "ib_line_code")?,
            sonet_payload_gbps: t.param("sonet_payload_gbps", "Gb/s")?,
            encap_bytes: t.param_u64("encap_bytes", "bytes", 0)?,
            extender_latency_ns: t.param("extender_latency_ns", "ns")?,
            delay_us_per_mile: t.param("delay_us_per_mile", "us/mile")?,
        })
    }

    /// The link between a site switch and its extender (MTU and framing as the fabric's).
    pub fn ib_link(&self, fabric: &LinkSpec) -> LinkSpec {
        LinkSpec { lane_gbps: self.ib_lane_gbps, lanes: self.ib_lanes, code: self.ib_code, cable_m: 0.0, ..fabric.clone() }
    }
}

//! An Ethernet port of a VPI adapter (profile section `[eth]`): the 10GigE link, its driver's
//! per-frame host costs and its receive interrupt coalescing, static or adaptive.

use crate::hw::cycles::HostClock;
use crate::hw::link::LinkSpec;
use crate::params::{ParamError, Table};

/// The adapter's Ethernet port.
#[derive(Debug, Clone, PartialEq)]
pub struct EthSpec {
    /// Adapter port (1-based in the profile, stored 0-based) that runs Ethernet.
    pub port: u8,
    /// The link: signalling rate, line code, framing (preamble, MAC header, FCS, gap),
    /// MTU (IP packet bytes per frame), cable.
    pub link: LinkSpec,
    /// Driver work per frame (or LSO work request) sent, ns.
    pub tx_ns: f64,
    /// Driver work per frame received, ns.
    pub rx_ns: f64,
    /// Static receive coalescing: the interrupt waits this long after the first frame, us.
    pub rx_usecs: f64,
    /// Adaptive coalescing: at or below this packet rate no delay, packets/s.
    pub aic_low_pps: f64,
    /// Adaptive coalescing: at or above this rate the longest delay, packets/s.
    pub aic_high_pps: f64,
    /// Adaptive coalescing: longest delay, us.
    pub aic_max_usecs: f64,
    /// Time constant of the adaptive scheme's packet-rate estimate, us.
    pub aic_sample_us: f64,
    /// Large receive offload in the driver.
    pub lro: bool,
    /// Large send offload (TSO).
    pub lso: bool,
}

impl EthSpec {
    /// Reads `[eth]` of a host whose clock is `clock` (the driver costs may be given in
    /// cycles: `tx_cycles`, `rx_cycles`).
    pub fn from_table(t: &mut Table, clock: &HostClock) -> Result<Self, ParamError> {
        let port = t.param_u64("port", "port", 1)?;
        let link = LinkSpec::read(t, 576)?;
        let s = EthSpec {
            port: (port - 1) as u8,
            link,
            tx_ns: clock.cost(t, "tx_ns")?,
            rx_ns: clock.cost(t, "rx_ns")?,
            rx_usecs: t.param("rx_usecs", "us")?,
            aic_low_pps: t.param("aic_low_pps", "packets/s")?,
            aic_high_pps: t.param("aic_high_pps", "packets/s")?,
            aic_max_usecs: t.param("aic_max_usecs", "us")?,
            aic_sample_us: t.param("aic_sample_us", "us")?,
            lro: t.param_u64("lro", "flag", 0)? != 0,
            lso: t.param_u64("lso", "flag", 0)? != 0,
        };
        if s.aic_high_pps <= s.aic_low_pps {
            return Err(t.err("aic_high_pps", "must exceed aic_low_pps"));
        }
        if s.aic_sample_us <= 0.0 {
            return Err(t.err("aic_sample_us", "must be > 0"));
        }
        Ok(s)
    }

    /// The adaptive scheme's interrupt delay at `pps` packets/s, us.
    pub fn aic_delay_us(&self, pps: f64) -> f64 {
        if pps <= self.aic_low_pps {
            0.0
        } else if pps >= self.aic_high_pps {
            self.aic_max_usecs
        } else {
            self.aic_max_usecs * (pps - self.aic_low_pps) / (self.aic_high_pps - self.aic_low_pps)
        }
    }
}

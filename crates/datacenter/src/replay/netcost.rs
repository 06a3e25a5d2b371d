//! What one message costs on a link, from the detailed socket model: per protocol, the
//! one-way latency and the host CPU at each end as functions of the message size, measured
//! by running `VerbsSetup` latency points (ping-pong, one message each way per iteration)
//! at a grid of sizes and interpolated linearly in between (beyond the last size: the last
//! segment's slope). Also the connection set-up time (`VerbsSetup::connect_time`) and, for
//! SDP, the profile's idle threshold after which a connection pays a control round trip.

use interlab_model::ulp::sock::{SockKind, SockStack};
use interlab_model::{Ports, Profile, VerbsSetup};
use interlab_patterns::{Op, PatternKind, PatternSpec};
use std::sync::Arc;

/// A socket protocol on a tier-to-tier link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Protocol {
    /// TCP/IP over the profile's Ethernet port (`[eth]`: 10GigE with jumbo frames on
    /// r805-connectx-ddr, the clients' Fast Ethernet on xeon24-mt23108-pcix). Spec name
    /// `eth`, or `10gige`.
    Eth,
    /// TCP/IP over IPoIB datagram mode, no offloads.
    IpoibUd,
    /// TCP/IP over IPoIB datagram mode with LRO and LSO.
    IpoibUdOffload,
    /// TCP/IP over IPoIB connected mode.
    IpoibRc,
    /// SDP with the default 64 KiB zero-copy threshold.
    Sdp,
    /// SDP in buffered-copy mode only (the 2004 Voltaire SDP of the sdp study).
    SdpBc,
}

impl Protocol {
    pub const ALL: [Protocol; 6] = [Protocol::Eth, Protocol::IpoibUd, Protocol::IpoibUdOffload, Protocol::IpoibRc, Protocol::Sdp, Protocol::SdpBc];

    /// Spec name.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Eth => "eth",
            Protocol::IpoibUd => "ipoib-ud",
            Protocol::IpoibUdOffload => "ipoib-ud-lro-lso",
            Protocol::IpoibRc => "ipoib-rc",
            Protocol::Sdp => "sdp",
            Protocol::SdpBc => "sdp-bc",
        }
    }

    /// Parses a spec name.
    pub fn parse(s: &str) -> Result<Protocol, String> {
        if s == "10gige" {
            return Ok(Protocol::Eth);
        }
        Protocol::ALL.iter().copied().find(|p| p.name() == s).ok_or_else(|| {
            format!("unknown protocol `{s}` (expected one of 10gige, {})", Protocol::ALL.iter().map(|p| p.name()).collect::<Vec<_>>().join(", "))
        })
    }

    /// The socket stack of the detailed model.
    pub fn stack(self) -> SockStack {
        match self {
            Protocol::Eth => SockStack::new(SockKind::Eth),
            Protocol::IpoibUd => SockStack::ipoib_ud(),
            Protocol::IpoibUdOffload => SockStack { lro: Some(true), lso: Some(true), ..SockStack::ipoib_ud() },
            Protocol::IpoibRc => SockStack::new(SockKind::IpoibRc),
            Protocol::Sdp => SockStack::new(SockKind::Sdp),
            Protocol::SdpBc => SockStack::sdp_bc(),
        }
    }
}

/// Message sizes at which the model is run (bytes).
pub const GRID: [u64; 9] = [1, 256, 1024, 4096, 16384, 65536, 262144, 524288, 1048576];

/// Iterations of each latency point (after 2 warm-up iterations).
const ITERS: u32 = 10;
const WARMUP: u32 = 2;

/// Per-message costs of one protocol on one profile.
#[derive(Debug, Clone, PartialEq)]
pub struct NetCost {
    pub protocol: Protocol,
    pub profile: String,
    /// Message sizes, bytes (ascending).
    pub sizes: Vec<u64>,
    /// One-way latency at each size, us (unloaded hosts).
    pub latency_us: Vec<f64>,
    /// Host CPU per message at each end (half of one host's busy time per ping-pong
    /// iteration, which sends one and receives one message), us.
    pub cpu_us: Vec<f64>,
    /// Connection set-up time, us.
    pub connect_us: f64,
    /// SDP: a connection silent for longer than this pays a control round trip, us.
    pub idle_us: Option<f64>,
    /// Model events simulated to build the table.
    pub events: u64,
}

fn interp(xs: &[u64], ys: &[f64], x: u64) -> f64 {
    let n = xs.len();
    if n == 0 {
        return 0.0;
    }
    if n == 1 || x <= xs[0] {
        return ys[0];
    }
    let i = xs.iter().position(|&s| s >= x).unwrap_or(n - 1).max(1);
    let (x0, x1, y0, y1) = (xs[i - 1] as f64, xs[i] as f64, ys[i - 1], ys[i]);
    (y0 + (y1 - y0) * (x as f64 - x0) / (x1 - x0)).max(0.0)
}

impl NetCost {
    /// One-way latency of a message of `bytes`, us.
    pub fn latency(&self, bytes: u64) -> f64 {
        interp(&self.sizes, &self.latency_us, bytes.max(1))
    }

    /// Host CPU at one end for a message of `bytes`, us.
    pub fn cpu(&self, bytes: u64) -> f64 {
        interp(&self.sizes, &self.cpu_us, bytes.max(1))
    }

    /// A table from given points (tests and user-supplied costs).
    pub fn from_points(protocol: Protocol, points: &[(u64, f64, f64)], connect_us: f64, idle_us: Option<f64>) -> NetCost {
        NetCost {
            protocol,
            profile: "given".into(),
            sizes: points.iter().map(|p| p.0).collect(),
            latency_us: points.iter().map(|p| p.1).collect(),
            cpu_us: points.iter().map(|p| p.2).collect(),
            connect_us,
            idle_us,
            events: 0,
        }
    }

    /// Runs the detailed model for `protocol` on profile `profile` (built-in id or file).
    pub fn from_model(profile: &str, protocol: Protocol) -> Result<NetCost, String> {
        let p = Arc::new(Profile::load(profile).map_err(|e| format!("profile {profile}: {e}"))?);
        let st = p.stack.clone().ok_or_else(|| format!("profile {profile} has no [stack] section: it cannot model sockets"))?;
        let cores = p.host.cores.max(1) as f64;
        let stack = protocol.stack();
        let mut v = VerbsSetup::new(p.clone(), stack.service(), Ports::One, 1);
        v.sock = Some(stack);
        let (mut lat, mut cpu, mut events) = (Vec::new(), Vec::new(), 0u64);
        for &size in GRID.iter() {
            let spec = PatternSpec { kind: PatternKind::Latency, op: Op::Send, size, window: 1, warmup: WARMUP, iterations: ITERS };
            let pt = v.run(&spec).map_err(|e| format!("{} on {profile} at {size} B: {e}", protocol.name()))?;
            events += pt.events;
            lat.push(pt.value);
            let busy_us = pt.server_cpu_percent / 100.0 * cores * pt.sim_time_ps as f64 / 1e6;
            cpu.push(busy_us / (WARMUP + ITERS) as f64 / 2.0);
        }
        let c = v.connect_time().map_err(|e| format!("{} on {profile}: connection time: {e}", protocol.name()))?;
        events += c.events;
        Ok(NetCost {
            protocol,
            profile: p.id.clone(),
            sizes: GRID.to_vec(),
            latency_us: lat,
            cpu_us: cpu,
            connect_us: c.value,
            idle_us: matches!(protocol, Protocol::Sdp | Protocol::SdpBc).then_some(st.sdp_idle_us),
            events,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interpolation_is_piecewise_linear() {
        let c = NetCost::from_points(Protocol::Eth, &[(1, 10.0, 2.0), (1001, 20.0, 4.0)], 50.0, None);
        assert_eq!(c.latency(1), 10.0);
        assert!((c.latency(501) - 15.0).abs() < 1e-9);
        assert!((c.cpu(2001) - 6.0).abs() < 1e-9, "extrapolates the last slope");
    }

    #[test]
    fn model_costs_grow_with_size() {
        let c = NetCost::from_model("r805-connectx-ddr", Protocol::IpoibRc).unwrap();
        assert!(c.latency(1) > 5.0 && c.latency(1) < 50.0, "{:?}", c.latency_us);
        assert!(c.latency(1 << 20) > c.latency(1));
        assert!(c.cpu(1 << 20) > c.cpu(1) && c.cpu(1) > 0.0, "{:?}", c.cpu_us);
        assert!(c.connect_us > 2.0 * c.latency(1));
        let s = NetCost::from_model("r805-connectx-ddr", Protocol::Sdp).unwrap();
        assert_eq!(s.idle_us, Some(1000.0));
    }
}

//! Workloads: every pattern of DESIGN.md principle 1 as a definition both engines can
//! execute. A workload says which base program runs on which channel, who initiates it,
//! over how many sessions (independent clients) and peers (remote hosts), the warm-up and
//! iteration rules, and how per-channel samples become the reported figure.
//!
//! Base programs: [`crate::Program`] (ping-pong latency and windowed bandwidth, the same
//! state machines the model runs), [`crate::StreamSender`]/[`crate::StreamReceiver`], and
//! [`crate::TxnInitiator`]/[`crate::TxnResponder`].

use crate::{PatternKind, PatternSpec, Samples, Op, TxnKind, TxnSpec};

/// The patterns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WorkloadKind {
    /// Ping-pong latency (one-way = round trip / 2), [`PatternKind::Latency`].
    Latency,
    /// Windowed bandwidth: `window` messages then a reply (OSU, the pcie study), [`PatternKind::Bandwidth`].
    Bandwidth,
    /// Streaming bandwidth, no replies (netperf `TCP_STREAM`, iperf3), time-bounded.
    Stream,
    /// Both directions at once, each windowed, [`PatternKind::BiBandwidth`]; the sum is reported.
    BiBandwidth,
    /// `streams` parallel streaming connections to one peer, one thread each; the sum is reported.
    MultiStream,
    /// `streams` clients (sessions) each ping-pong one server; pooled latency and total rate.
    HotSpot,
    /// Every peer (x `streams` senders each) sends windowed bandwidth to this host; the sum is reported.
    FanIn,
    /// This host sends windowed bandwidth to every peer (x `streams` each); the sum is reported.
    FanOut,
    /// Connection set-up (connect + close) time (netperf `TCP_CC`).
    Connect,
    /// Connect, request, response, close (netperf `TCP_CRR`).
    Crr,
    /// Request/response on a persistent connection (netperf `TCP_RR`), sizes of its own.
    Rr,
}

impl WorkloadKind {
    /// All, in display order.
    pub const ALL: [WorkloadKind; 11] = [
        WorkloadKind::Latency,
        WorkloadKind::Bandwidth,
        WorkloadKind::Stream,
        WorkloadKind::BiBandwidth,
        WorkloadKind::MultiStream,
        WorkloadKind::HotSpot,
        WorkloadKind::FanIn,
        WorkloadKind::FanOut,
        WorkloadKind::Connect,
        WorkloadKind::Crr,
        WorkloadKind::Rr,
    ];

    /// CLI / record name.
    pub fn name(self) -> &'static str {
        match self {
            WorkloadKind::Latency => "latency",
            WorkloadKind::Bandwidth => "bandwidth",
            WorkloadKind::Stream => "stream",
            WorkloadKind::BiBandwidth => "bibw",
            WorkloadKind::MultiStream => "multi-stream",
            WorkloadKind::HotSpot => "hot-spot",
            WorkloadKind::FanIn => "fan-in",
            WorkloadKind::FanOut => "fan-out",
            WorkloadKind::Connect => "connect",
            WorkloadKind::Crr => "crr",
            WorkloadKind::Rr => "rr",
        }
    }

    /// Parses a name (see [`WorkloadKind::name`]).
    pub fn from_name(s: &str) -> Option<WorkloadKind> {
        WorkloadKind::ALL.into_iter().find(|k| k.name() == s)
    }

    /// The base program its channels run.
    pub fn base(self) -> Base {
        match self {
            WorkloadKind::Latency | WorkloadKind::HotSpot => Base::PingPong,
            WorkloadKind::Bandwidth | WorkloadKind::BiBandwidth | WorkloadKind::FanIn | WorkloadKind::FanOut => Base::Windowed,
            WorkloadKind::Stream | WorkloadKind::MultiStream => Base::Stream,
            WorkloadKind::Connect => Base::Txn(TxnKind::Connect),
            WorkloadKind::Crr => Base::Txn(TxnKind::ConnectRequestResponse),
            WorkloadKind::Rr => Base::Txn(TxnKind::RequestResponse),
        }
    }

    /// True when the run length is a time by definition (no iteration count applies).
    pub fn time_bounded(self) -> bool {
        self.base() == Base::Stream
    }

    /// True when the pattern needs a connection-oriented transport.
    pub fn needs_connections(self) -> bool {
        matches!(self, WorkloadKind::Connect | WorkloadKind::Crr)
    }
}

/// The program a channel runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Base {
    /// [`crate::Program`] with [`PatternKind::Latency`].
    PingPong,
    /// [`crate::Program`] with [`PatternKind::Bandwidth`].
    Windowed,
    /// [`crate::StreamSender`] / [`crate::StreamReceiver`].
    Stream,
    /// [`crate::TxnInitiator`] / [`crate::TxnResponder`].
    Txn(TxnKind),
}

/// Which end of a channel initiates (sends data, measures).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Side {
    /// The orchestrating end (the `interlab live` client).
    Local,
    /// The peer (an `interlab serve` daemon, or a remote node in the model).
    Remote,
}

/// One channel of a workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChannelPlan {
    /// Independent client (its own control session) the channel belongs to.
    pub session: u32,
    /// Remote endpoint (index into the peer list).
    pub peer: u32,
    /// Channel number inside the session.
    pub chan: u32,
    /// Who initiates.
    pub initiator: Side,
    pub base: Base,
}

/// A pattern point, fully parameterised.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Workload {
    pub kind: WorkloadKind,
    /// Message (request) size in bytes.
    pub size: u64,
    /// Response size in bytes (rr, crr).
    pub response_size: u64,
    /// Messages per window (windowed patterns).
    pub window: u32,
    /// Parallel streams (multi-stream), clients (hot-spot) or senders per peer (fan-in, fan-out).
    pub streams: u32,
    /// Remote endpoints.
    pub peers: u32,
}

/// The figure a workload reports from its channels' samples.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// Metric name: latency_us, bandwidth_MBps, connect_us, transaction_us.
    pub metric: &'static str,
    /// "us" or "MB/s" (10^6 bytes/s).
    pub unit: &'static str,
    /// The reported value.
    pub value: f64,
    /// Per-sample values in microseconds (latency-like metrics), for percentiles.
    pub samples_us: Vec<f64>,
    /// Transactions (or round trips) per second over all channels (latency-like metrics).
    pub rate_per_s: Option<f64>,
    /// Bytes counted by the measurement.
    pub bytes: u64,
}

impl Workload {
    /// Checks the parameters; errors say what was expected.
    pub fn validate(&self) -> Result<(), String> {
        if self.size == 0 {
            return Err("message size must be at least 1 byte".into());
        }
        if self.window == 0 {
            return Err("window must be at least 1 message".into());
        }
        if self.streams == 0 {
            return Err("streams/clients must be at least 1".into());
        }
        if self.peers == 0 {
            return Err("at least one peer is needed".into());
        }
        match self.kind {
            WorkloadKind::Rr | WorkloadKind::Crr if self.response_size == 0 => Err("response size must be at least 1 byte".into()),
            WorkloadKind::HotSpot if self.peers != 1 => {
                Err(format!("hot-spot has one server: give one peer (got {}) and the number of clients with --clients", self.peers))
            }
            WorkloadKind::Latency
            | WorkloadKind::Bandwidth
            | WorkloadKind::Stream
            | WorkloadKind::BiBandwidth
            | WorkloadKind::MultiStream
            | WorkloadKind::Connect
            | WorkloadKind::Crr
            | WorkloadKind::Rr
                if self.peers != 1 =>
            {
                Err(format!("{} runs between two hosts: give one peer (got {})", self.kind.name(), self.peers))
            }
            _ => Ok(()),
        }
    }

    /// The channels, grouped by session.
    pub fn channels(&self) -> Vec<ChannelPlan> {
        let base = self.kind.base();
        let one = |session, peer, chan, initiator| ChannelPlan { session, peer, chan, initiator, base };
        match self.kind {
            WorkloadKind::BiBandwidth => vec![one(0, 0, 0, Side::Local), one(0, 0, 1, Side::Remote)],
            WorkloadKind::MultiStream => (0..self.streams).map(|c| one(0, 0, c, Side::Local)).collect(),
            WorkloadKind::HotSpot => (0..self.streams).map(|s| one(s, 0, 0, Side::Local)).collect(),
            WorkloadKind::FanIn | WorkloadKind::FanOut => {
                let side = if self.kind == WorkloadKind::FanIn { Side::Remote } else { Side::Local };
                (0..self.peers).flat_map(|p| (0..self.streams).map(move |k| (p, k))).enumerate().map(|(s, (p, _))| one(s as u32, p, 0, side)).collect()
            }
            _ => vec![one(0, 0, 0, Side::Local)],
        }
    }

    /// Number of sessions.
    pub fn sessions(&self) -> u32 {
        self.channels().iter().map(|c| c.session + 1).max().unwrap_or(0)
    }

    /// The [`PatternSpec`] of [`Program`](crate::Program)-driven channels.
    pub fn program_spec(&self, warmup: u32, iterations: u32) -> PatternSpec {
        let kind = if self.kind.base() == Base::PingPong { PatternKind::Latency } else { PatternKind::Bandwidth };
        PatternSpec { kind, op: Op::Send, size: self.size, window: self.window, warmup, iterations }
    }

    /// The [`TxnSpec`] of transaction channels.
    pub fn txn_spec(&self, warmup: u32, iterations: u32) -> Option<TxnSpec> {
        match self.kind.base() {
            Base::Txn(kind) => Some(TxnSpec { kind, request: self.size, response: self.response_size, warmup, iterations }),
            _ => None,
        }
    }

    /// Default warm-up and measured iterations (OSU's rules for latency and windows:
    /// <= 8 KiB: 100 + 10 000 round trips, 10 + 100 windows; larger: 10 + 1 000, 2 + 20;
    /// transactions: 100 + 2 000).
    pub fn default_counts(&self) -> (u32, u32) {
        let small = self.size <= 8192;
        match self.kind.base() {
            Base::PingPong if small => (100, 10_000),
            Base::PingPong => (10, 1_000),
            Base::Windowed if small => (10, 100),
            Base::Windowed => (2, 20),
            Base::Txn(_) => (100, 2_000),
            Base::Stream => (0, 0),
        }
    }

    /// Iterations that fill `duration_ps` at the rate seen in a calibration run of
    /// `done` iterations over `elapsed_ps`; at least 1.
    pub fn iterations_for(duration_ps: u64, done: u32, elapsed_ps: u64) -> u32 {
        if elapsed_ps == 0 {
            return done.max(1);
        }
        let n = duration_ps as f64 * done as f64 / elapsed_ps as f64;
        n.clamp(1.0, crate::limits::MAX_ITERATIONS as f64).round() as u32
    }

    /// The reported figure from every channel's samples (initiators' samples; stream
    /// channels: the receivers' measurement).
    pub fn report(&self, samples: &[Samples]) -> Result<Report, String> {
        match self.kind.base() {
            Base::PingPong | Base::Txn(_) => {
                let mut us = Vec::new();
                let mut rate = 0.0;
                for s in samples {
                    if let Samples::Latency(v) = s {
                        let total_ps: u64 = v.iter().sum();
                        // Ping-pong samples are one-way; a round trip is twice that.
                        let per_round = if self.kind.base() == Base::PingPong { 2 } else { 1 };
                        if total_ps > 0 {
                            rate += v.len() as f64 / (total_ps as f64 * per_round as f64 / 1e12);
                        }
                        us.extend(v.iter().map(|&ps| ps as f64 / 1e6));
                    }
                }
                if us.is_empty() {
                    return Err("no latency samples were measured".into());
                }
                let metric = match self.kind.base() {
                    Base::Txn(TxnKind::Connect) => "connect_us",
                    Base::Txn(_) => "transaction_us",
                    _ => "latency_us",
                };
                let value = us.iter().sum::<f64>() / us.len() as f64;
                Ok(Report { metric, unit: "us", value, samples_us: us, rate_per_s: Some(rate), bytes: 0 })
            }
            Base::Windowed | Base::Stream => {
                let mut mbps = 0.0;
                let mut bytes = 0;
                let mut any = false;
                for s in samples {
                    if let Samples::Bandwidth { bytes: b, elapsed_ps, .. } = s {
                        if *elapsed_ps > 0 {
                            mbps += *b as f64 / *elapsed_ps as f64 * 1e6;
                            bytes += b;
                            any = true;
                        }
                    }
                }
                if !any {
                    return Err("no bandwidth was measured (no channel moved data over a measurable time)".into());
                }
                Ok(Report { metric: "bandwidth_MBps", unit: "MB/s", value: mbps, samples_us: vec![], rate_per_s: None, bytes })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(kind: WorkloadKind, streams: u32, peers: u32) -> Workload {
        Workload { kind, size: 64, response_size: 64, window: 64, streams, peers }
    }

    #[test]
    fn names_round_trip() {
        for k in WorkloadKind::ALL {
            assert_eq!(WorkloadKind::from_name(k.name()), Some(k));
        }
        assert_eq!(WorkloadKind::from_name("nope"), None);
    }

    #[test]
    fn channel_plans() {
        let bi = w(WorkloadKind::BiBandwidth, 1, 1).channels();
        assert_eq!(bi.len(), 2);
        assert_eq!((bi[0].initiator, bi[1].initiator), (Side::Local, Side::Remote));
        let ms = w(WorkloadKind::MultiStream, 3, 1);
        assert_eq!(ms.channels().len(), 3);
        assert_eq!(ms.sessions(), 1);
        let hs = w(WorkloadKind::HotSpot, 4, 1);
        assert_eq!(hs.sessions(), 4);
        let fi = w(WorkloadKind::FanIn, 2, 3);
        assert_eq!(fi.sessions(), 6);
        assert!(fi.channels().iter().all(|c| c.initiator == Side::Remote));
        assert_eq!(fi.channels().iter().filter(|c| c.peer == 2).count(), 2);
        assert!(w(WorkloadKind::FanOut, 1, 2).channels().iter().all(|c| c.initiator == Side::Local));
        assert!(w(WorkloadKind::HotSpot, 2, 2).validate().is_err());
        assert!(w(WorkloadKind::Latency, 1, 2).validate().is_err());
        assert!(w(WorkloadKind::FanIn, 1, 2).validate().is_ok());
    }

    #[test]
    fn report_sums_bandwidth_and_pools_latency() {
        let bw = w(WorkloadKind::MultiStream, 2, 1);
        let s = vec![Samples::Bandwidth { bytes: 1_000_000, elapsed_ps: 1_000_000_000_000, messages: 1 }; 2];
        let r = bw.report(&s).unwrap();
        assert_eq!((r.metric, r.value), ("bandwidth_MBps", 2.0));
        let lat = w(WorkloadKind::HotSpot, 2, 1);
        let r = lat.report(&[Samples::Latency(vec![1_000_000; 4]), Samples::Latency(vec![3_000_000; 4])]).unwrap();
        assert_eq!(r.value, 2.0);
        // Round trips of 2 us and 6 us: 500 000 + 166 667 per second.
        assert!((r.rate_per_s.unwrap() - 666_666.7).abs() < 1.0);
        assert!(lat.report(&[Samples::None]).is_err());
        assert_eq!(w(WorkloadKind::Connect, 1, 1).report(&[Samples::Latency(vec![5_000_000])]).unwrap().metric, "connect_us");
    }

    #[test]
    fn counts_and_calibration() {
        assert_eq!(w(WorkloadKind::Latency, 1, 1).default_counts(), (100, 10_000));
        assert_eq!(Workload { size: 1 << 20, ..w(WorkloadKind::Bandwidth, 1, 1) }.default_counts(), (2, 20));
        assert_eq!(Workload::iterations_for(1_000, 10, 100), 100);
        assert_eq!(Workload::iterations_for(1, 10, 1_000_000), 1);
        let p = w(WorkloadKind::Latency, 1, 1).program_spec(1, 2);
        assert_eq!((p.kind, p.size, p.warmup, p.iterations), (PatternKind::Latency, 64, 1, 2));
    }
}

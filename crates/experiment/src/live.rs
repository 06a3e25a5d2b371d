//! Running an experiment spec on the live engine: each series' pattern becomes a live
//! workload against `interlab serve` daemons, measured point by point, with the model's
//! record schema (engine `live`).
//!
//! What maps (socket series only; the live engine measures the host's own sockets):
//!
//! | spec | live workload |
//! |---|---|
//! | `kind = "latency"` | `latency` (ping-pong); with `clients` > 1 `hot-spot` |
//! | `kind = "bandwidth"` | `bandwidth` (window, then a reply); with `window_bytes` `stream`; with `processes_per_node` > 1 `multi-stream`; with `clients` > 1 `fan-in`/`fan-out` by `initiator` over that many daemons |
//! | `kind = "bibw"` | `bibw` |
//! | `kind = "pipelined"` | `stream` |
//! | `measure = "connect"` | `connect` |
//!
//! A TCP/IP stack of the model (`eth`, `ipoib-ud`, `ipoib-rc`) runs as the host's TCP (or
//! the `[live] transport`) over whatever network reaches the daemon. MPI series (`mpi`) run
//! through the real MPI library under mpirun when the caller gives [`LiveTarget::mpi`] a
//! runner (the CLI does: `crate::live_mpi`); without one they are refused. What the live
//! engine cannot do is refused naming the key: verbs operations (no `socket`), SDP, two
//! stacks at once (`socket_mix`), wide-area distances.

use crate::live_mpi::{mpi_job, mpi_jobs, take_records, MpiSeriesJob};
use crate::run::SeriesResult;
use crate::spec::{Experiment, LiveSpec, Measure, PointSpec, SeriesSpec, XAxis};
use interlab_live::auth::Token;
use interlab_live::runner::{check, run_point, PointOptions, RunLength, DEFAULT_STREAM_S};
use interlab_live::{parse_peer, Peer, Transport, DEFAULT_PORT};
use interlab_model::params::ParamError;
use interlab_model::ulp::sock::SockKind;
use interlab_model::Initiator;
use interlab_patterns::{ExtendedRecord, PatternKind, Workload, WorkloadKind};
use std::time::Duration;

/// Runs one MPI series live and returns the JSON Lines records of `interlab mpi --json`
/// (the CLI: `mpirun -np 2 interlab mpi ...`).
pub type MpiRunner = std::sync::Arc<dyn Fn(&MpiSeriesJob) -> Result<String, String> + Send + Sync>;

/// How the live engine reaches its daemons (the command line over the `[live]` table).
#[derive(Clone)]
pub struct LiveTarget {
    pub peers: Vec<Peer>,
    pub transport: Transport,
    pub token: Option<Token>,
    pub connect_timeout: Duration,
    /// Measured time of streaming points, seconds.
    pub time_s: f64,
    /// How MPI series run live (None: they are refused).
    pub mpi: Option<MpiRunner>,
}

impl std::fmt::Debug for LiveTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveTarget").field("peers", &self.peers).field("transport", &self.transport).field("time_s", &self.time_s).field("mpi", &self.mpi.is_some()).finish()
    }
}

impl LiveTarget {
    /// From the spec's `[live]` table, with `peers` from the command line when given; MPI
    /// series are refused.
    pub fn new(exp: &Experiment, peers: &[String], token: Option<Token>, connect_timeout: Duration) -> Result<LiveTarget, String> {
        Self::with_mpi(exp, peers, token, connect_timeout, None)
    }

    /// As [`LiveTarget::new`], with MPI series run by `mpi`; a spec of MPI series only then
    /// needs no daemons.
    pub fn with_mpi(exp: &Experiment, peers: &[String], token: Option<Token>, connect_timeout: Duration, mpi: Option<MpiRunner>) -> Result<LiveTarget, String> {
        let LiveSpec { peers: spec_peers, transport, time_s } = &exp.live;
        let list = if peers.is_empty() { spec_peers.clone() } else { peers.to_vec() };
        let needs_daemons = mpi.is_none() || exp.series.iter().any(|s| s.setup.mpi.is_none());
        if list.is_empty() && needs_daemons {
            return Err(format!("{}: the live engine needs daemons: `--peer HOST[:PORT]` or `[live] peers = [\"HOST:PORT\"]` (start them with `interlab serve`)", exp.file));
        }
        let peers = list.iter().map(|p| parse_peer(p, DEFAULT_PORT)).collect::<Result<Vec<_>, _>>()?;
        let transport = Transport::from_name(if transport.is_empty() { "tcp" } else { transport }).ok_or_else(|| format!("{}: [live] transport `{transport}`: expected tcp, udp or unix", exp.file))?;
        Ok(LiveTarget { peers, transport, token, connect_timeout, time_s: time_s.unwrap_or(DEFAULT_STREAM_S), mpi })
    }
}

fn err(exp: &Experiment, s: &SeriesSpec, key: &str, message: impl Into<String>) -> ParamError {
    ParamError { file: exp.file.clone(), key: key.to_string(), message: format!("series `{}`: {}", s.label, message.into()) }
}

/// The live workload of one point of series `s` with `peers` daemons, or why live cannot
/// run it (naming the spec key).
pub fn live_workload(exp: &Experiment, s: &SeriesSpec, pt: &PointSpec, peers: usize) -> Result<Workload, ParamError> {
    let Some(sock) = s.setup.sock else {
        if let Some(m) = s.setup.mpi {
            return Err(err(exp, s, "mpi", format!("MPI over {}: live MPI runs under mpirun, which the interlab command line starts (`interlab run --engine live|both`); this caller has no MPI launcher: run it with --engine model", m.name())));
        }
        let what = format!("verbs {} over {}", s.pattern.op.name(), s.setup.service.name());
        return Err(err(exp, s, "socket", format!("{what}: the live engine measures sockets (tcp, udp, unix); give the series a TCP/IP `socket` stack (eth, ipoib-ud, ipoib-rc) or run it with --engine model")));
    };
    if sock.kind == SockKind::Sdp {
        return Err(err(exp, s, "socket", "sdp: the live engine has no Sockets Direct Protocol (AF_INET_SDP); use a TCP/IP stack or --engine model"));
    }
    if s.setup.sock_mix.is_some() {
        return Err(err(exp, s, "socket_mix", "two stacks at once over two ports is model-only"));
    }
    if pt.miles.is_some() {
        return Err(err(exp, s, "distance_miles", "the live engine measures the network it is given; a wide-area distance is model-only"));
    }
    let spec = s.pattern_at(pt.size);
    let (kind, streams, npeers) = if s.measure == Measure::Connect {
        (WorkloadKind::Connect, 1, 1)
    } else {
        match spec.kind {
            PatternKind::Latency if pt.clients > 1 => (WorkloadKind::HotSpot, pt.clients, 1),
            PatternKind::Latency if pt.procs > 1 => return Err(err(exp, s, "processes_per_node", "several latency pairs at once: live runs hot-spot (`clients`) instead")),
            PatternKind::Latency => (WorkloadKind::Latency, 1, 1),
            PatternKind::Bandwidth if pt.clients > 1 => {
                if pt.clients as usize != peers {
                    return Err(err(exp, s, "clients", format!("{} clients: the live engine needs one daemon per client node, and {peers} were given", pt.clients)));
                }
                let k = if s.setup.initiator == Initiator::Clients { WorkloadKind::FanIn } else { WorkloadKind::FanOut };
                (k, pt.procs, pt.clients)
            }
            PatternKind::Bandwidth if pt.procs > 1 => (WorkloadKind::MultiStream, pt.procs, 1),
            PatternKind::Bandwidth if s.window_bytes.is_some() => (WorkloadKind::Stream, 1, 1),
            PatternKind::Bandwidth => (WorkloadKind::Bandwidth, 1, 1),
            PatternKind::BiBandwidth => (WorkloadKind::BiBandwidth, 1, 1),
            PatternKind::Pipelined => (WorkloadKind::Stream, 1, 1),
            PatternKind::BiPipelined => return Err(err(exp, s, "kind", "bipipelined: live has bibw (windowed, both directions), no streaming in both directions")),
        }
    };
    if npeers == 1 && peers != 1 && !matches!(kind, WorkloadKind::FanIn | WorkloadKind::FanOut) {
        return Err(err(exp, s, "peers", format!("{} takes one daemon, {peers} were given", kind.name())));
    }
    Ok(Workload { kind, size: pt.size, response_size: pt.size, window: spec.window, streams, peers: npeers })
}

/// Every point's live options, checked before anything runs.
pub fn live_points(exp: &Experiment, target: &LiveTarget) -> Result<Vec<(usize, PointSpec, PointOptions)>, String> {
    let mut v = Vec::new();
    for (i, s) in exp.series.iter().enumerate() {
        if s.setup.mpi.is_some() && target.mpi.is_some() {
            mpi_job(exp, i).map_err(|e| e.to_string())?;
            continue;
        }
        for pt in s.points() {
            let workload = live_workload(exp, s, &pt, target.peers.len()).map_err(|e| e.to_string())?;
            let spec = s.pattern_at(pt.size);
            let length = if workload.kind.time_bounded() {
                RunLength::Time { warmup_s: interlab_live::runner::DEFAULT_STREAM_WARMUP_S, duration_s: target.time_s }
            } else {
                RunLength::Count { warmup: Some(spec.warmup), iterations: Some(spec.iterations) }
            };
            let o = PointOptions {
                workload,
                transport: target.transport,
                peers: target.peers.clone(),
                token: target.token.clone(),
                length,
                confidence: None,
                sockbuf: 0,
                experiment: exp.name.clone(),
                command: format!("interlab run {} --engine live", exp.file),
                connect_timeout: target.connect_timeout,
                extras: Default::default(),
            };
            check(&o).map_err(|e| format!("{}: series `{}`, size {} B: {e}", exp.file, s.label, pt.size))?;
            v.push((i, pt, o));
        }
    }
    Ok(v)
}

/// The x of a point on its series' axis (as the model's series hold it).
fn x_of(axis: XAxis, pt: &PointSpec) -> u64 {
    pt.x(axis).round() as u64
}

/// What a live run gives: the series (as the model's) and every extended record.
pub struct LiveRun {
    pub series: Vec<SeriesResult>,
    pub records: Vec<ExtendedRecord>,
    /// Points that failed, with their error (the others are kept).
    pub errors: Vec<String>,
}

/// Runs every point in spec order, one at a time (live points must not overlap);
/// `tick` is called after each. A daemon that cannot be reached stops the run.
pub fn run_live(exp: &Experiment, target: &LiveTarget, tick: &dyn Fn(&str)) -> Result<LiveRun, String> {
    let points = live_points(exp, target)?;
    let mut series: Vec<SeriesResult> = exp
        .series
        .iter()
        .map(|s| SeriesResult { label: s.label.clone(), points: vec![], x_axis: s.x_axis(), server_cpu: vec![], unit: String::new(), records: vec![] })
        .collect();
    let mut records = Vec::new();
    let mut errors = Vec::new();
    for (i, pt, o) in &points {
        let s = &exp.series[*i];
        tick(&format!("{} {} B", s.label, pt.size));
        let out = run_point(o)?;
        let mut r = out.record;
        r.record.series = s.label.clone();
        r.record.experiment = exp.name.clone();
        r.record.seed = exp.seed;
        r.record.spec = exp.file.clone();
        r.record.clients = (pt.clients > 1).then_some(pt.clients);
        r.record.processes = pt.procs;
        // The model's server is the node that serves the pattern: live, the daemon's host.
        r.record.server_cpu_percent = r.live.cpu_remote.as_ref().map(|c| c.system_pct);
        pt.mark_sweep(s.x_axis(), &mut r.record);
        let sr = &mut series[*i];
        sr.unit = r.record.unit.clone();
        if let Some(e) = out.error {
            errors.push(format!("series `{}`, size {} B: {}", s.label, pt.size, e.message));
            let stop = e.peer_level;
            records.push(r);
            if stop {
                break;
            }
            continue;
        }
        if r.record.value.is_finite() {
            sr.points.push((x_of(sr.x_axis, pt), r.record.value));
            if let Some(c) = r.live.cpu_remote.as_ref() {
                sr.server_cpu.push((x_of(sr.x_axis, pt), c.system_pct));
            }
        }
        sr.records.push(r.record.clone());
        records.push(r);
    }
    if let Some(runner) = &target.mpi {
        for job in mpi_jobs(exp)? {
            tick(&format!("{} (MPI {}, {} sizes, under mpirun)", exp.series[job.series].label, job.pattern, job.sizes.len()));
            match runner(&job).and_then(|text| take_records(exp, &job, &text, &mut series[job.series])) {
                Ok(rs) => records.extend(rs),
                Err(e) => errors.push(format!("series `{}`: live MPI: {e}", exp.series[job.series].label)),
            }
        }
    }
    Ok(LiveRun { series, records, errors })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_experiment;

    fn exp(series: &str) -> Experiment {
        let op = if series.contains("op =") { "" } else { "op = \"send\"\n" };
        let text = format!("[experiment]\nname = \"t\"\nprofile = \"r805-connectx-ddr\"\nengine = \"live\"\n[pattern]\nsizes = \"64\"\n{op}{series}");
        parse_experiment("t.toml", &text, None).unwrap()
    }

    fn kind_of(series: &str, peers: usize) -> Result<WorkloadKind, String> {
        let e = exp(series);
        let s = &e.series[0];
        live_workload(&e, s, &s.points()[0], peers).map(|w| w.kind).map_err(|e| e.to_string())
    }

    #[test]
    fn spec_patterns_map_to_live_workloads() {
        assert_eq!(kind_of("kind = \"latency\"\nsocket = \"eth\"", 1), Ok(WorkloadKind::Latency));
        assert_eq!(kind_of("kind = \"latency\"\nsocket = \"ipoib-ud\"\nclients = [4]", 1), Ok(WorkloadKind::HotSpot));
        assert_eq!(kind_of("kind = \"bandwidth\"\nsocket = \"eth\"", 1), Ok(WorkloadKind::Bandwidth));
        assert_eq!(kind_of("kind = \"bandwidth\"\nsocket = \"eth\"\nwindow_bytes = 1048576", 1), Ok(WorkloadKind::Stream));
        assert_eq!(kind_of("kind = \"bandwidth\"\nsocket = \"eth\"\nprocesses_per_node = [4]", 1), Ok(WorkloadKind::MultiStream));
        assert_eq!(kind_of("kind = \"bibw\"\nsocket = \"ipoib-rc\"", 1), Ok(WorkloadKind::BiBandwidth));
        assert_eq!(kind_of("kind = \"bandwidth\"\nsocket = \"eth\"\nclients = [2]\ninitiator = \"clients\"", 2), Ok(WorkloadKind::FanIn));
        assert_eq!(kind_of("kind = \"bandwidth\"\nsocket = \"eth\"\nclients = [2]", 2), Ok(WorkloadKind::FanOut));
        assert_eq!(kind_of("kind = \"latency\"\nsocket = \"eth\"\nmeasure = \"connect\"", 1), Ok(WorkloadKind::Connect));
    }

    #[test]
    fn what_live_cannot_do_is_refused_naming_the_key() {
        for (series, key) in [
            ("kind = \"latency\"\nop = \"rdma_write\"", "socket"),
            ("kind = \"latency\"\nsocket = \"sdp\"", "socket"),
            ("kind = \"bandwidth\"\nsocket = \"eth\"\nsocket_mix = \"ipoib-ud\"\nprocesses_per_node = [2]", "socket_mix"),
            ("kind = \"bandwidth\"\nsocket = \"eth\"\nclients = [3]", "clients"),
        ] {
            let e = kind_of(series, 2).unwrap_err();
            assert!(e.contains(&format!("key `{key}`")), "{series}: {e}");
        }
        let e = exp("kind = \"latency\"\nsocket = \"eth\"");
        let t = LiveTarget::new(&e, &[], None, Duration::from_secs(1)).unwrap_err();
        assert!(t.contains("--peer"), "{t}");
    }
}

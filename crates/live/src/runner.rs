//! Running one point: open the sessions a workload needs, run its phases (warm-up or
//! calibration, then repetitions until the confidence rule is satisfied), and turn what was
//! measured into one record. A failure ends the point with an error record; repetitions
//! already measured are kept.

use crate::auth::Token;
use crate::client::{ClientSession, Peer};
use crate::clock::{secs_to_ps, Clock, PS_PER_S};
use crate::conn::{Closer, UDP_MAX_PAYLOAD};
use crate::cpu::{add, usage, CpuSnapshot};
use crate::engine::{spawn_initiator, spawn_responder, ChanSpec, InitExtras, InitResult, IntervalTick, Target};
use crate::proto::{BaseCode, ChanSamples, ChanSetup, CpuWire, Msg, Phase, PhaseEnd, Setup, StreamMark, Transport};
use crate::record::{build, Base as RecBase};
use crate::LiveError;
use interlab_patterns::{
    Base, ConfidenceReport, ConfidenceRule, ExtendedRecord, Interval, IntervalReport, LiveFields, Samples, Side, Summary, Workload, WorkloadKind,
};
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long each repetition runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RunLength {
    /// Warm-up and measured iterations per repetition (None: the pattern's defaults).
    Count { warmup: Option<u32>, iterations: Option<u32> },
    /// Warm-up and measured time per repetition, seconds.
    Time { warmup_s: f64, duration_s: f64 },
}

/// Default measured time of streaming patterns, seconds.
pub const DEFAULT_STREAM_S: f64 = 2.0;
/// Default warm-up of streaming patterns, seconds.
pub const DEFAULT_STREAM_WARMUP_S: f64 = 0.2;
/// How long an initiator may make no progress before its channel is declared stalled.
const DATA_TIMEOUT: Duration = Duration::from_secs(60);
/// UDP initiators: a datagram not answered within this is taken as lost.
const UDP_REPLY_TIMEOUT: Duration = Duration::from_secs(2);
/// Most streams or clients of one point (the daemon's limit of channels per session).
pub const MAX_STREAMS: u32 = 256;
/// Longest --time or --warmup-time, seconds (the daemon's limit per phase).
pub const MAX_RUN_S: f64 = 86_400.0;
/// How often the watchdog looks at the initiators' progress.
const WATCH_EVERY: Duration = Duration::from_millis(100);

/// Everything one point needs.
#[derive(Debug, Clone)]
pub struct PointOptions {
    pub workload: Workload,
    pub transport: Transport,
    pub peers: Vec<Peer>,
    pub token: Option<Token>,
    pub length: RunLength,
    /// Repeat until confident (None: one repetition).
    pub confidence: Option<ConfidenceRule>,
    /// SO_SNDBUF/SO_RCVBUF for data sockets, bytes (0: kernel autotuning).
    pub sockbuf: u32,
    /// Experiment name for the record.
    pub experiment: String,
    /// The command line, for the record.
    pub command: String,
    pub connect_timeout: Duration,
    /// Intervals, pacing, pinning, sample log (all off by default).
    pub extras: PointExtras,
}

/// Shortest `--interval`.
pub const MIN_INTERVAL_S: f64 = 0.01;
/// Most intervals per repetition.
pub const MAX_INTERVALS: u64 = 100_000;
/// Lowest and highest `--rate`, bit/s.
pub const MIN_RATE_BPS: u64 = 1_000;
pub const MAX_RATE_BPS: u64 = 10_000_000_000_000;

/// Called with each interval as it finishes (every reporting channel finished it).
#[derive(Clone)]
pub struct IntervalHook(pub Arc<dyn Fn(&IntervalReport) + Send + Sync>);

impl std::fmt::Debug for IntervalHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("IntervalHook")
    }
}

/// What a point may do beyond measuring (`live --interval --rate --cpu --samples`).
#[derive(Debug, Clone, Default)]
pub struct PointExtras {
    /// Report each interval of this length: streams (the senders' bytes), ping-pong and rr
    /// (the samples finished in it).
    pub interval: Option<Duration>,
    /// Stream patterns: target sending rate of each stream, bit/s.
    pub rate_bps: Option<u64>,
    /// Pin this end's data threads to these CPUs, round-robin (empty: not pinned).
    pub cpus: Vec<usize>,
    /// Keep every latency sample, per repetition, in [`PointOutcome::samples`].
    pub keep_samples: bool,
    /// Called as each interval finishes.
    pub on_interval: Option<IntervalHook>,
}

/// A point's record, and the error that ended it early if any.
#[derive(Debug, Clone)]
pub struct PointOutcome {
    pub record: ExtendedRecord,
    pub error: Option<LiveError>,
    /// With `keep_samples`: every latency sample (us) of each repetition, channels pooled.
    pub samples: Vec<Vec<f64>>,
}

/// Sums the initiators' interval ticks over channels and turns them into reports.
struct Intervals {
    rx: Receiver<IntervalTick>,
    streams: u32,
    /// Repetition the running phase measures (from 1).
    rep: u32,
    /// Ticks of earlier phases (calibration) are not reported; set when measuring begins.
    from_phase: u32,
    /// Latency-like samples rather than stream bytes.
    latency: bool,
    /// (phase, index) -> (sources reported, start, latest end, bytes, samples, sum of samples in ps).
    pending: BTreeMap<(u32, u32), (u32, u64, u64, u64, u64, u64)>,
    reports: Vec<IntervalReport>,
    hook: Option<IntervalHook>,
}

impl Intervals {
    fn report(&mut self, start_ps: u64, end_ps: u64, bytes: u64, samples: u64, sum_ps: u64) {
        let secs = end_ps.saturating_sub(start_ps) as f64 / PS_PER_S as f64;
        let (start_s, end_s, repetition) = (start_ps as f64 / PS_PER_S as f64, end_ps as f64 / PS_PER_S as f64, self.rep);
        let r = if self.latency {
            let mean = if samples > 0 { sum_ps as f64 / samples as f64 / 1e6 } else { 0.0 };
            IntervalReport { repetition, start_s, end_s, bytes: None, samples: Some(samples), value: mean, unit: "us".into() }
        } else {
            IntervalReport { repetition, start_s, end_s, bytes: Some(bytes), samples: None, value: if secs > 0.0 { bytes as f64 / secs / 1e6 } else { 0.0 }, unit: "MB/s".into() }
        };
        if let Some(h) = &self.hook {
            (h.0)(&r);
        }
        self.reports.push(r);
    }

    /// Takes the ticks that arrived; reports every interval all streams have finished.
    fn drain(&mut self) {
        while let Ok(t) = self.rx.try_recv() {
            if t.phase < self.from_phase {
                continue;
            }
            let e = self.pending.entry((t.phase, t.index)).or_insert((0, t.start_ps, 0, 0, 0, 0));
            e.0 += 1;
            e.1 = e.1.min(t.start_ps);
            e.2 = e.2.max(t.end_ps);
            e.3 += t.bytes;
            e.4 += t.samples;
            e.5 += t.sum_ps;
            if e.0 >= self.streams {
                let (_, a, b, n, k, sum) = self.pending.remove(&(t.phase, t.index)).unwrap_or_default();
                self.report(a, b, n, k, sum);
            }
        }
    }

    /// End of a phase: reports what is left (a stream that failed did not finish its intervals).
    fn flush(&mut self) {
        self.drain();
        for (_, (_, a, b, n, k, sum)) in std::mem::take(&mut self.pending) {
            self.report(a, b, n, k, sum);
        }
    }
}

struct LocalInit {
    session: usize,
    chan: u32,
    stream: bool,
    tx: Sender<Phase>,
    rx: Receiver<InitResult>,
    handle: JoinHandle<()>,
    /// Iterations done so far (stored by the initiator, read by the watchdog).
    progress: Arc<AtomicU64>,
    /// Shuts the channel's connection down when it stalls (None: connect per transaction).
    closer: Option<Closer>,
    /// No progress for this long means stalled.
    stall: Duration,
}

/// What one phase measured.
struct PhaseOut {
    samples: Vec<Samples>,
    cpu_local: CpuWire,
    cpu_remote: Option<CpuWire>,
    wall_ps: u64,
}

/// The sessions, connections and workers of one point.
struct Rig {
    sessions: Vec<ClientSession>,
    inits: Vec<LocalInit>,
    responders: Vec<JoinHandle<Result<(), String>>>,
    closers: Vec<Closer>,
    stop: Arc<AtomicBool>,
    next_phase: u32,
    /// Stream channels: (session, chan) -> (bytes sent, bytes the daemon received), over the connection.
    stream_bytes: BTreeMap<(usize, u32), (u64, u64)>,
    /// `--interval`: the initiators' reports.
    intervals: Option<Intervals>,
}

impl Rig {
    fn build(o: &PointOptions) -> Result<Rig, LiveError> {
        let w = &o.workload;
        let plan = w.channels();
        let clock = Clock::default();
        let mut rig = Rig {
            sessions: vec![],
            inits: vec![],
            responders: vec![],
            closers: vec![],
            stop: Arc::new(AtomicBool::new(false)),
            next_phase: 0,
            stream_bytes: BTreeMap::new(),
            intervals: None,
        };
        let ex = &o.extras;
        let sources = plan.iter().filter(|c| interval_source(c.base) && c.initiator == Side::Local).count() as u32;
        let tick_tx = match ex.interval {
            Some(d) if sources > 0 => {
                let (tx, rx) = channel();
                let latency = w.kind.base() != Base::Stream;
                rig.intervals = Some(Intervals { rx, streams: sources, rep: 1, from_phase: u32::MAX, latency, pending: BTreeMap::new(), reports: vec![], hook: ex.on_interval.clone() });
                Some((tx, secs_to_ps(d.as_secs_f64())))
            }
            _ => None,
        };
        // Data threads of this end, in the order they are pinned.
        let mut threads = 0usize;
        for s in 0..w.sessions() {
            let chans: Vec<_> = plan.iter().filter(|c| c.session == s).copied().collect();
            let Some(first) = chans.first() else { continue };
            let peer = o.peers.get(first.peer as usize).ok_or_else(|| LiveError::point(format!("no peer #{} given", first.peer + 1)))?;
            let mut sess = ClientSession::connect(peer, o.token.as_ref(), o.connect_timeout)?;
            let setup = Setup {
                transport: o.transport,
                base: BaseCode::from_base(w.kind.base()),
                size: w.size,
                response_size: w.response_size,
                window: w.window,
                channels: chans.iter().map(|c| ChanSetup { chan: c.chan, server_initiates: c.initiator == Side::Remote }).collect(),
                sockbuf: o.sockbuf,
            };
            let (ok, conns) = sess.setup(&setup)?;
            let mut conns: BTreeMap<u32, _> = conns.into_iter().collect();
            let index = rig.sessions.len();
            for c in &chans {
                let spec = ChanSpec { chan: c.chan, base: setup.base, size: w.size, response_size: w.response_size, window: w.window };
                let conn = conns.remove(&c.chan);
                let stall = if o.transport == Transport::Udp { UDP_REPLY_TIMEOUT } else { DATA_TIMEOUT };
                let mut closer = None;
                if let Some(conn) = &conn {
                    // No read timeouts on data sockets (a timer armed on every blocking read
                    // costs latency): the watchdog in `phase` closes a stalled channel.
                    conn.set_read_timeout(None).map_err(|e| LiveError::point(e.to_string()))?;
                    conn.keepalive(DATA_TIMEOUT);
                    rig.closers.push(conn.closer().map_err(|e| LiveError::point(e.to_string()))?);
                    closer = Some(conn.closer().map_err(|e| LiveError::point(e.to_string()))?);
                }
                match c.initiator {
                    Side::Local => {
                        let target = match o.transport {
                            Transport::Unix => Some(Target::Unix(PathBuf::from(&ok.unix_path))),
                            _ => Some(Target::Tcp(sess.data_addr(&ok))),
                        };
                        let (ptx, prx) = channel();
                        let (rtx, rrx) = channel();
                        let progress = Arc::new(AtomicU64::new(0));
                        let stream = c.base == Base::Stream;
                        let ticks = interval_source(c.base);
                        let extras = InitExtras {
                            rate_bps: if stream { ex.rate_bps.unwrap_or(0) } else { 0 },
                            interval_ps: if ticks { tick_tx.as_ref().map_or(0, |t| t.1) } else { 0 },
                            intervals: if ticks { tick_tx.as_ref().map(|t| t.0.clone()) } else { None },
                            source: rig.inits.len() as u32,
                            cpu: crate::cpu::cpu_for(&ex.cpus, threads),
                        };
                        threads += 1;
                        let handle = spawn_initiator(spec, progress.clone(), conn, target, o.sockbuf, clock, prx, rtx, extras).map_err(|e| LiveError::point(e.to_string()))?;
                        rig.inits.push(LocalInit { session: index, chan: c.chan, stream: c.base == Base::Stream, tx: ptx, rx: rrx, handle, progress, closer, stall });
                    }
                    Side::Remote => {
                        let conn = conn.ok_or_else(|| LiveError::point(format!("channel {} has no data connection", c.chan)))?;
                        let cpu = crate::cpu::cpu_for(&ex.cpus, threads);
                        threads += 1;
                        let h = spawn_responder(spec, conn, clock, rig.stop.clone(), None, Arc::new(AtomicU64::new(0)), cpu).map_err(|e| LiveError::point(e.to_string()))?;
                        rig.responders.push(h);
                    }
                }
            }
            rig.sessions.push(sess);
        }
        Ok(rig)
    }

    /// Runs one phase on every channel.
    fn phase(&mut self, warmup: u32, iterations: u32, warmup_ps: u64, duration_ps: u64) -> Result<PhaseOut, LiveError> {
        self.next_phase += 1;
        let ph = Phase { id: self.next_phase, warmup, iterations, warmup_ps, duration_ps };
        for s in &mut self.sessions {
            s.send(&Msg::Phase(ph))?;
        }
        let before = CpuSnapshot::take();
        let t0 = Instant::now();
        for i in &self.inits {
            i.tx.send(ph).map_err(|_| LiveError::point(format!("channel {}: the initiator stopped after an earlier failure", i.chan)))?;
        }
        let mut local: Vec<(usize, InitResult)> = Vec::new();
        let mut errors: Vec<String> = Vec::new();
        for i in &self.inits {
            // The watchdog: a channel that makes no progress for its stall time is closed,
            // which ends its blocked read.
            let (mut seen, mut since) = (i.progress.load(Ordering::Relaxed), Instant::now());
            let mut stalled = false;
            let r = loop {
                match i.rx.recv_timeout(WATCH_EVERY) {
                    Ok(r) => break Some(r),
                    Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break None,
                    Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                        if let Some(iv) = &mut self.intervals {
                            iv.drain();
                        }
                        let now = i.progress.load(Ordering::Relaxed);
                        if now != seen {
                            (seen, since) = (now, Instant::now());
                        } else if !stalled && since.elapsed() >= i.stall {
                            stalled = true;
                            if let Some(c) = &i.closer {
                                c.close();
                            }
                        }
                    }
                }
            };
            match r {
                Some(mut r) => {
                    if stalled {
                        let why = if i.stall == UDP_REPLY_TIMEOUT { "a datagram was lost" } else { "the peer stopped answering" };
                        r.error = Some(format!("channel {}: no progress for {:.0} s ({why})", i.chan, i.stall.as_secs_f64()));
                    }
                    if let Some(e) = &r.error {
                        errors.push(e.clone());
                    }
                    local.push((i.session, r));
                }
                None => errors.push(format!("channel {}: the initiator thread ended", i.chan)),
            }
        }
        if let Some(iv) = &mut self.intervals {
            iv.flush();
        }
        let mut samples = Vec::new();
        let mut marks: Vec<Vec<StreamMark>> = vec![vec![]; self.sessions.len()];
        for (s, r) in &local {
            let stream = self.inits.iter().any(|i| i.session == *s && i.chan == r.chan && i.stream);
            match (stream, r.marks) {
                (true, Some((from, to))) => {
                    marks[*s].push(StreamMark { chan: r.chan, from, to });
                    self.stream_bytes.entry((*s, r.chan)).or_default().0 = to;
                }
                (true, None) => {}
                (false, _) => samples.push(r.samples.clone()),
            }
        }
        let mut cpu_remote = None;
        let mut remote_err: Option<LiveError> = None;
        for (k, s) in self.sessions.iter_mut().enumerate() {
            // Count-bounded phases of the daemon's initiators (fan-in, bibw) take as long as
            // they take; a dead daemon closes the connection or stalls its data sockets.
            let wait = if duration_ps > 0 { DATA_TIMEOUT + Duration::from_nanos((warmup_ps + duration_ps) / 1000) } else { Duration::from_secs(3600) };
            let r = s.send(&Msg::PhaseEnd(PhaseEnd { id: ph.id, marks: std::mem::take(&mut marks[k]) })).and_then(|_| s.recv(wait, "PhaseResult"));
            match r {
                Ok(Msg::PhaseResult(pr)) if pr.id == ph.id => {
                    if cpu_remote.is_none() {
                        cpu_remote = Some(pr.cpu);
                    }
                    for c in pr.channels {
                        if !c.error.is_empty() {
                            errors.push(format!("daemon at {}: {}", s.peer.label, c.error));
                        }
                        if let Some(e) = self.stream_bytes.get_mut(&(k, c.chan)) {
                            e.1 = c.received;
                        }
                        match c.samples {
                            ChanSamples::Latency(v) => samples.push(Samples::Latency(v)),
                            ChanSamples::Bandwidth { bytes, elapsed_ps, messages } => samples.push(Samples::Bandwidth { bytes, elapsed_ps, messages }),
                            ChanSamples::None => {}
                        }
                    }
                }
                Ok(other) => {
                    remote_err = Some(LiveError::peer(format!("daemon at {}: unexpected {} (expected PhaseResult)", s.peer.label, other.name())));
                    break;
                }
                Err(e) => {
                    remote_err = Some(e);
                    break;
                }
            }
        }
        let cpu_local = before.until(&CpuSnapshot::take());
        // Phase to PhaseResult: covers the daemons' initiators too (fan-in, bibw).
        let wall_ps = t0.elapsed().as_nanos() as u64 * 1000;
        if let Some(mut e) = remote_err {
            if !errors.is_empty() {
                e.message = format!("{}; {}", errors.join("; "), e.message);
            }
            return Err(e);
        }
        if !errors.is_empty() {
            return Err(LiveError::point(errors.join("; ")));
        }
        Ok(PhaseOut { samples, cpu_local, cpu_remote, wall_ps })
    }

    /// Ends the sessions and stops every worker.
    fn finish(self) {
        for s in self.sessions {
            s.bye();
        }
        self.stop.store(true, Ordering::Relaxed);
        for c in &self.closers {
            c.close();
        }
        for i in self.inits {
            drop(i.tx);
            let _ = i.handle.join();
        }
        for h in self.responders {
            let _ = h.join();
        }
    }

    fn loss_pct(&self) -> Option<f64> {
        let (sent, recv) = self.stream_bytes.values().fold((0u64, 0u64), |a, b| (a.0 + b.0, a.1 + b.1));
        if sent == 0 {
            return None;
        }
        Some(100.0 * sent.saturating_sub(recv) as f64 / sent as f64)
    }
}

/// Channels that report intervals: stream senders, ping-pong and request/response initiators.
fn interval_source(b: Base) -> bool {
    matches!(b, Base::Stream | Base::PingPong | Base::Txn(interlab_patterns::TxnKind::RequestResponse))
}

/// Checks what can be checked before connecting.
pub fn check(o: &PointOptions) -> Result<(), String> {
    let w = &o.workload;
    w.validate()?;
    if o.peers.len() as u32 != w.peers {
        return Err(format!("{} peers given, the workload expects {}", o.peers.len(), w.peers));
    }
    if o.transport == Transport::Udp {
        if w.kind.needs_connections() {
            return Err(format!("{} needs a connection-oriented transport (tcp or unix), not udp", w.kind.name()));
        }
        let biggest = w.size.max(if w.kind.base() == Base::Txn(interlab_patterns::TxnKind::RequestResponse) { w.response_size } else { 0 });
        if biggest > UDP_MAX_PAYLOAD {
            return Err(format!("UDP messages are single datagrams: {biggest} B exceeds the {UDP_MAX_PAYLOAD}-byte limit (use --sizes up to 32K)"));
        }
    }
    if o.transport == Transport::Unix && o.peers.iter().any(|p| !p.addr.ip().is_loopback()) {
        return Err("unix sockets need the daemon on this host: give a loopback --peer".into());
    }
    if let Some(r) = &o.confidence {
        r.validate()?;
    }
    let stream = w.kind.base() == Base::Stream;
    if let Some(d) = o.extras.interval {
        if !interval_source(w.kind.base()) {
            return Err(format!("--interval applies to stream, multi-stream, latency, hot-spot and rr, not {}", w.kind.name()));
        }
        let every = d.as_secs_f64();
        if every < MIN_INTERVAL_S {
            return Err(format!("--interval {every} s: at least {MIN_INTERVAL_S} s"));
        }
        if let RunLength::Time { duration_s, .. } = o.length {
            let n = crate::engine::stream::interval_count(secs_to_ps(duration_s), secs_to_ps(every));
            if n > MAX_INTERVALS {
                return Err(format!("--interval {every} s over {duration_s} s is {n} intervals: at most {MAX_INTERVALS} per repetition"));
            }
        }
    }
    if let Some(r) = o.extras.rate_bps {
        if !stream {
            return Err(format!("--rate applies to stream patterns (stream, multi-stream), not {}", w.kind.name()));
        }
        if !(MIN_RATE_BPS..=MAX_RATE_BPS).contains(&r) {
            return Err(format!("--rate {r} bit/s is out of range (1K to 10T bit/s)"));
        }
    }
    let max_msg = crate::dataplane::MAX_MESSAGE;
    if w.size > max_msg || w.response_size > max_msg {
        return Err(format!("message size {} B is out of range (1 B to {} MiB, the daemon's limit)", w.size.max(w.response_size), max_msg >> 20));
    }
    if w.window > interlab_patterns::limits::MAX_WINDOW {
        return Err(format!("window {} is out of range (1 to {} messages)", w.window, interlab_patterns::limits::MAX_WINDOW));
    }
    if w.streams > MAX_STREAMS {
        return Err(format!("{} streams/clients is out of range (1 to {MAX_STREAMS})", w.streams));
    }
    if let RunLength::Count { warmup, iterations } = o.length {
        let samples = matches!(w.kind.base(), Base::PingPong | Base::Txn(_));
        interlab_patterns::limits::check_iterations(warmup.unwrap_or(0) as u64, iterations.unwrap_or(1) as u64, samples).map_err(|e| format!("--iterations/--warmup: {e}"))?;
    }
    if let RunLength::Time { warmup_s, duration_s } = o.length {
        if duration_s > MAX_RUN_S || warmup_s > MAX_RUN_S {
            return Err(format!("run time {duration_s} s / warm-up {warmup_s} s: at most {MAX_RUN_S} s each"));
        }
    }
    match o.length {
        RunLength::Time { warmup_s, duration_s } if !(duration_s > 0.0 && warmup_s >= 0.0 && duration_s.is_finite() && warmup_s.is_finite()) => {
            Err(format!("run time {duration_s} s / warm-up {warmup_s} s: expected a positive time and a non-negative warm-up"))
        }
        RunLength::Count { iterations: Some(_), .. } if w.kind.time_bounded() => {
            Err(format!("{} is time-bounded: give --time SECONDS instead of --iterations", w.kind.name()))
        }
        RunLength::Count { warmup: Some(_), .. } if w.kind.time_bounded() => {
            Err(format!("{} is time-bounded: give --warmup-time SECONDS instead of --warmup", w.kind.name()))
        }
        RunLength::Count { iterations: Some(0), .. } => Err("--iterations must be at least 1".into()),
        _ => Ok(()),
    }
}

struct Collected {
    values: Vec<f64>,
    pooled_us: Vec<f64>,
    rates: Vec<f64>,
    bytes: u64,
    transactions: u64,
    cpu_local: Option<CpuWire>,
    cpu_remote: Option<CpuWire>,
    metric: &'static str,
    unit: &'static str,
}

/// Runs one point. A bad peer or a failed run gives an error record (Ok); Err only if a
/// record cannot be built at all (an internal schema mismatch).
pub fn run_point(o: &PointOptions) -> Result<PointOutcome, String> {
    let w = o.workload;
    let mut flags = Vec::new();
    let mut c = Collected {
        values: vec![],
        pooled_us: vec![],
        rates: vec![],
        bytes: 0,
        transactions: 0,
        cpu_local: None,
        cpu_remote: None,
        metric: "",
        unit: "",
    };
    let (mut warmup_rec, mut iters_rec, mut duration_s) = (0u32, 0u32, None);
    let mut host_local = None;
    let mut host_remote = None;
    let mut loss = None;
    let mut local_ip: Option<IpAddr> = None;
    let mut intervals: Vec<IntervalReport> = vec![];
    let mut per_rep: Vec<Vec<f64>> = vec![];
    let err: Option<LiveError> = (|| {
        check(o).map_err(LiveError::point)?;
        let mut rig = Rig::build(o)?;
        local_ip = rig.sessions.first().map(|s| s.local_ip);
        host_remote = rig.sessions.first().map(|s| s.remote_host.clone());
        let r = measure(o, &mut rig, &mut c, &mut flags, &mut warmup_rec, &mut iters_rec, &mut duration_s, &mut per_rep);
        if o.transport == Transport::Udp {
            loss = rig.loss_pct();
        }
        if let Some(iv) = rig.intervals.take() {
            intervals = iv.reports;
        }
        rig.finish();
        r
    })()
    .err();
    host_local = host_local.or_else(|| Some(crate::host::facts(local_ip)));
    let loopback = o.peers.iter().all(|p| p.addr.ip().is_loopback());
    // Defaults for an error before anything was measured.
    if c.metric.is_empty() {
        let r = w.report(&[]);
        let (m, u) = match w.kind.base() {
            Base::PingPong => ("latency_us", "us"),
            Base::Txn(interlab_patterns::TxnKind::Connect) => ("connect_us", "us"),
            Base::Txn(_) => ("transaction_us", "us"),
            _ => ("bandwidth_MBps", "MB/s"),
        };
        debug_assert!(r.is_err());
        c.metric = m;
        c.unit = u;
    }
    let mut error_text = None;
    if let Some(e) = &err {
        if c.values.is_empty() {
            error_text = Some(e.message.clone());
        } else {
            flags.push(format!("stopped after {} repetition(s): {}", c.values.len(), e.message));
        }
    }
    let value = if c.values.is_empty() { f64::NAN } else { c.values.iter().sum::<f64>() / c.values.len() as f64 };
    let summary: Option<Summary> = Summary::of(&c.pooled_us);
    let confidence = o.confidence.and_then(|rule| {
        Interval::of(&c.values, rule.level_pct).map(|interval| ConfidenceReport { interval, requested_width_pct: rule.width_pct, met: interval.width_pct <= rule.width_pct })
    });
    if let Some(ci) = &confidence {
        if !ci.met {
            flags.push(format!(
                "confidence not achieved: +-{:.2} % at {} % after {} repetitions (requested +-{:.2} %)",
                ci.interval.width_pct / 2.0,
                ci.interval.level_pct,
                ci.interval.repetitions,
                ci.requested_width_pct / 2.0
            ));
        }
    }
    let cpu_local = c.cpu_local.and_then(|w| usage(&w, c.bytes, c.transactions));
    let cpu_remote = c.cpu_remote.and_then(|w| usage(&w, c.bytes, c.transactions));
    if (cpu_local.is_none() || cpu_remote.is_none()) && !c.values.is_empty() {
        let side = if cpu_local.is_none() { "here" } else { "on the peer" };
        flags.push(format!("cpu not measured {side}: the run is shorter than /proc/stat's 10 ms tick"));
    }
    if let Some(u) = &cpu_local {
        if u.window_s < 1.0 {
            flags.push(format!("cpu window {:.2} s is short: /proc/stat counts 10 ms ticks, utilisation is coarse", u.window_s));
        }
        if loopback {
            flags.push("client and daemon share this machine: each system CPU figure includes both ends".into());
        }
    }
    if let Some(l) = loss {
        if l > 0.0 {
            flags.push(format!("{l:.2} % of the bytes sent were lost (datagrams dropped)"));
        }
    }
    let rate = if c.rates.is_empty() { None } else { Some(c.rates.iter().sum::<f64>() / c.rates.len() as f64) };
    let hl = host_local.unwrap_or_default();
    let profile = format!("{} ({})", hl.hostname, hl.kernel);
    let series = format!("{} {}", o.transport.name(), w.kind.name());
    let initiators = w.channels().iter().filter(|c| c.initiator == Side::Local).count().max(1) as u32;
    let live = LiveFields {
        peers: o.peers.iter().map(|p| p.label.clone()).collect(),
        streams: if w.streams > 1 || matches!(w.kind, WorkloadKind::MultiStream | WorkloadKind::HotSpot | WorkloadKind::FanIn | WorkloadKind::FanOut) { Some(w.streams) } else { None },
        response_bytes: if matches!(w.kind, WorkloadKind::Rr | WorkloadKind::Crr) { Some(w.response_size) } else { None },
        duration_s,
        repetitions: Some(c.values.len() as u32),
        rate_per_s: rate,
        loss_pct: loss,
        offered_rate_mbps: o.extras.rate_bps.map(|r| r as f64 * w.channels().iter().filter(|c| c.base == Base::Stream && c.initiator == Side::Local).count() as f64 / 1e6),
        achieved_rate_mbps: o.extras.rate_bps.and(value.is_finite().then_some(value * 8.0)),
        pinned_cpus: o.extras.cpus.iter().map(|&c| c as u32).collect(),
        intervals,
        confidence,
        cpu_local,
        cpu_remote,
        host_local: Some(hl),
        host_remote,
        flags,
        error: error_text,
    };
    let base = RecBase {
        experiment: &o.experiment,
        series: &series,
        profile: &profile,
        pattern: w.kind.name(),
        transport: o.transport.name(),
        processes: initiators,
        size: w.size,
        metric: c.metric,
        value,
        unit: c.unit,
        summary,
        warmup: warmup_rec,
        iterations: iters_rec,
        window: if w.kind.base() == Base::Windowed { w.window } else { 1 },
        spec: &o.command,
    };
    // Fails only if the model's record schema changed incompatibly (see record.rs).
    let record = build(&base, live)?;
    Ok(PointOutcome { record, error: err, samples: per_rep })
}

/// The phases of a point; fills `c`.
#[allow(clippy::too_many_arguments)]
fn measure(
    o: &PointOptions,
    rig: &mut Rig,
    c: &mut Collected,
    flags: &mut Vec<String>,
    warmup_rec: &mut u32,
    iters_rec: &mut u32,
    duration_rec: &mut Option<f64>,
    per_rep_samples: &mut Vec<Vec<f64>>,
) -> Result<(), LiveError> {
    let w = o.workload;
    // What each repetition runs: (warmup, iterations, warmup_ps, duration_ps).
    let per_rep: (u32, u32, u64, u64) = if w.kind.time_bounded() {
        let (wu, d) = match o.length {
            RunLength::Time { warmup_s, duration_s } => (warmup_s, duration_s),
            RunLength::Count { .. } => (DEFAULT_STREAM_WARMUP_S, DEFAULT_STREAM_S),
        };
        *duration_rec = Some(d);
        (0, 0, secs_to_ps(wu), secs_to_ps(d))
    } else {
        match o.length {
            RunLength::Count { warmup, iterations } => {
                let (dw, di) = w.default_counts();
                let (wu, it) = (warmup.unwrap_or(dw), iterations.unwrap_or(di));
                *warmup_rec = wu;
                *iters_rec = it;
                (wu, it, 0, 0)
            }
            RunLength::Time { warmup_s, duration_s } => {
                // Calibrate: double the iteration count until a phase lasts the warm-up
                // time (at least 20 ms); the rate seen sets the count for `duration_s`.
                let target_ps = secs_to_ps(warmup_s.max(0.02));
                let mut k: u32 = if w.kind.base() == Base::Windowed { 1 } else { 16 };
                let mut spent_ps = 0u64;
                // Each sample-keeping iteration costs 8 bytes: their count is bounded.
                let cap = if matches!(w.kind.base(), Base::PingPong | Base::Txn(_)) { interlab_patterns::limits::MAX_LATENCY_SAMPLES } else { interlab_patterns::limits::MAX_ITERATIONS };
                let n = loop {
                    let out = rig.phase(0, k, 0, 0)?;
                    spent_ps += out.wall_ps;
                    if spent_ps >= target_ps || k >= cap {
                        let n = Workload::iterations_for(secs_to_ps(duration_s), k, out.wall_ps);
                        if n > cap {
                            flags.push(format!("{n} iterations would fill {duration_s} s; capped at {cap} (the per-phase limit)"));
                        }
                        break n.min(cap);
                    }
                    let left = target_ps - spent_ps;
                    let grow = (left as f64 / out.wall_ps.max(1) as f64).clamp(2.0, 8.0);
                    k = ((k as f64 * grow) as u32).max(k + 1).min(cap);
                };
                *warmup_rec = 0;
                *iters_rec = n;
                *duration_rec = Some(duration_s);
                (0, n, 0, 0)
            }
        }
    };
    if let Some(iv) = &mut rig.intervals {
        iv.from_phase = rig.next_phase + 1;
    }
    loop {
        if let Some(iv) = &mut rig.intervals {
            iv.rep = c.values.len() as u32 + 1;
        }
        let out = rig.phase(per_rep.0, per_rep.1, per_rep.2, per_rep.3)?;
        let rep = o.workload.report(&out.samples).map_err(LiveError::point)?;
        if o.extras.keep_samples {
            per_rep_samples.push(rep.samples_us.clone());
        }
        c.metric = rep.metric;
        c.unit = rep.unit;
        c.values.push(rep.value);
        c.transactions += rep.samples_us.len() as u64;
        c.pooled_us.extend(rep.samples_us);
        if let Some(r) = rep.rate_per_s {
            c.rates.push(r);
        }
        c.bytes += rep.bytes;
        c.cpu_local = Some(match &c.cpu_local {
            Some(a) => add(a, &out.cpu_local),
            None => out.cpu_local,
        });
        if let Some(r) = out.cpu_remote {
            c.cpu_remote = Some(match &c.cpu_remote {
                Some(a) => add(a, &r),
                None => r,
            });
        }
        if out.wall_ps < PS_PER_S / 100 && !flags.iter().any(|f| f.starts_with("repetitions are short")) {
            flags.push(format!("repetitions are short ({:.1} ms): timer and scheduling noise weigh more; consider --time", out.wall_ps as f64 / 1e9));
        }
        let more = match &o.confidence {
            Some(rule) => rule.wants_more(&c.values),
            None => false,
        };
        if !more {
            return Ok(());
        }
    }
}

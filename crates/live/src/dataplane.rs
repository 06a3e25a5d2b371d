//! The daemon's side of one point: listeners for the data channels, accepting and checking
//! them (cookie, channel), the worker threads, and tearing all of it down.

use crate::clock::Clock;
use crate::conn::{parse_hello, DataConn, HELLO_BYTES, UDP_MAX_PAYLOAD};
use crate::engine::txn::{serve_connecting, Listener};
use crate::engine::{spawn_initiator, spawn_responder, ChanSpec, InitResult, SharedReceiver};
use crate::proto::{BaseCode, Phase, Setup, SetupOk, Transport};
use interlab_patterns::StreamReceiver;
use std::collections::BTreeMap;
use std::io::Read;
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Largest message a daemon accepts to carry, bytes.
pub const MAX_MESSAGE: u64 = 64 << 20;
/// Message buffers one session may make the daemon allocate, bytes: per channel the
/// largest message (or the stream receive buffer) plus one window of posted outputs.
pub const MAX_SESSION_BUFFERS: u64 = 256 << 20;
/// Latency samples the daemon's initiators may keep for one phase, bytes (8 per sample,
/// all channels together); the PhaseResult carrying them must fit the client's 64 MiB
/// frame limit.
pub const MAX_PHASE_SAMPLE_BYTES: u64 = 60 << 20;
/// Largest SO_SNDBUF/SO_RCVBUF a Setup may ask for, bytes (the kernel caps it further at
/// net.core.wmem_max/rmem_max).
pub const MAX_SOCKBUF: u32 = 1 << 30;
/// Longest warm-up or measured time of a streaming phase, picoseconds (24 h).
pub const MAX_PHASE_PS: u64 = 86_400 * crate::clock::PS_PER_S;
/// A daemon initiator on a datagram channel that sees no reply for this long takes the
/// datagram as lost and ends the phase on that channel with an error (no retransmission).
pub const UDP_STALL: Duration = Duration::from_secs(2);
/// Bytes one posted output of a window occupies while the window is being sent.
const OUTPUT_BYTES: u64 = std::mem::size_of::<interlab_patterns::Output>() as u64;

fn stream_buf() -> u64 {
    crate::engine::stream::RECV_BUF as u64
}

/// Checks a Setup before anything is created.
pub fn validate(s: &Setup) -> Result<(), String> {
    if s.size == 0 || s.size > MAX_MESSAGE {
        return Err(format!("message size {} B is out of range (1 B to {} MiB)", s.size, MAX_MESSAGE >> 20));
    }
    if s.response_size > MAX_MESSAGE {
        return Err(format!("response size {} B exceeds {} MiB", s.response_size, MAX_MESSAGE >> 20));
    }
    if matches!(s.base, BaseCode::Rr | BaseCode::Crr) && s.response_size == 0 {
        return Err("response size must be at least 1 byte".into());
    }
    if s.window == 0 || s.window > 1 << 20 {
        return Err(format!("window {} is out of range (1 to 1048576 messages)", s.window));
    }
    if s.sockbuf > MAX_SOCKBUF {
        return Err(format!("socket buffer of {} B is out of range (0 to {} MiB)", s.sockbuf, MAX_SOCKBUF >> 20));
    }
    if s.channels.is_empty() || s.channels.len() > 256 {
        return Err(format!("{} channels requested (1 to 256 per session)", s.channels.len()));
    }
    let per_chan = s.size.max(s.response_size).max(stream_buf()).saturating_add((s.window as u64).saturating_mul(OUTPUT_BYTES));
    if per_chan.saturating_mul(s.channels.len() as u64) > MAX_SESSION_BUFFERS {
        return Err(format!(
            "{} channels of {} B messages (window {}) need more than the {} MiB of buffers a session may use",
            s.channels.len(),
            s.size.max(s.response_size),
            s.window,
            MAX_SESSION_BUFFERS >> 20
        ));
    }
    let mut seen = std::collections::BTreeSet::new();
    for c in &s.channels {
        if !seen.insert(c.chan) {
            return Err(format!("channel {} listed twice", c.chan));
        }
        if c.server_initiates && s.base == BaseCode::Stream {
            return Err("stream channels are initiated by the client".into());
        }
        if c.server_initiates && matches!(s.base, BaseCode::Connect | BaseCode::Crr | BaseCode::Rr) {
            return Err("transaction channels are initiated by the client".into());
        }
    }
    if s.transport == Transport::Udp {
        if matches!(s.base, BaseCode::Connect | BaseCode::Crr) {
            return Err("connect and crr need a connection-oriented transport (tcp or unix), not udp".into());
        }
        if s.size.max(s.response_size) > UDP_MAX_PAYLOAD {
            return Err(format!("UDP messages are single datagrams: {} B exceeds the {UDP_MAX_PAYLOAD}-byte limit", s.size.max(s.response_size)));
        }
    }
    Ok(())
}

/// Checks a Phase against the point's Setup before any initiator starts on it.
pub fn check_phase(s: &Setup, p: &Phase) -> Result<(), String> {
    interlab_patterns::limits::check_iterations(p.warmup as u64, p.iterations as u64, false)?;
    for (what, ps) in [("warm-up time", p.warmup_ps), ("measured time", p.duration_ps)] {
        if ps > MAX_PHASE_PS {
            return Err(format!("{what} of {} s is out of range (0 to {} s)", ps / crate::clock::PS_PER_S, MAX_PHASE_PS / crate::clock::PS_PER_S));
        }
    }
    let sampling = s.channels.iter().filter(|c| c.server_initiates && s.base == BaseCode::PingPong).count() as u64;
    let bytes = sampling.saturating_mul(p.iterations as u64).saturating_mul(8);
    if bytes > MAX_PHASE_SAMPLE_BYTES {
        return Err(format!(
            "{} iterations on {sampling} daemon-initiated ping-pong channel(s) would keep {} MiB of samples; the limit is {} MiB ({} iterations on one channel)",
            p.iterations,
            bytes >> 20,
            MAX_PHASE_SAMPLE_BYTES >> 20,
            MAX_PHASE_SAMPLE_BYTES / 8
        ));
    }
    Ok(())
}

/// The watchdog's view of one of the daemon's initiators.
struct InitWatch {
    chan: u32,
    progress: Arc<AtomicU64>,
    closer: crate::conn::Closer,
    datagram: bool,
    /// In a phase and not yet reported.
    running: bool,
    seen: u64,
    since: Instant,
    /// Closed by the watchdog in this phase.
    stalled: Option<Duration>,
}

enum Listening {
    Tcp(TcpListener),
    Unix(UnixListener),
    Udp(Vec<(u32, UdpSocket)>),
}

/// A point being served.
pub struct DataPlane {
    setup: Setup,
    cookie: [u8; 16],
    listening: Option<Listening>,
    unix_path: Option<PathBuf>,
    wake: Option<SocketAddr>,
    stop: Arc<AtomicBool>,
    closers: Vec<crate::conn::Closer>,
    responders: Vec<JoinHandle<Result<(), String>>>,
    initiators: Vec<(u32, Sender<Phase>, JoinHandle<()>)>,
    results: Option<Receiver<InitResult>>,
    receivers: BTreeMap<u32, SharedReceiver>,
    txn_thread: Option<JoinHandle<Result<(), String>>>,
    pub clock: Clock,
    /// Progress counters of every worker (responders, initiators, the transaction server).
    progress: Vec<Arc<AtomicU64>>,
    last_total: u64,
    watch: Vec<InitWatch>,
    /// Initiator results of the running phase already collected.
    pending: Vec<InitResult>,
    /// Datagrams dropped because they came from another address than the control peer's
    /// or did not carry the session's cookie.
    pub dropped_datagrams: u64,
    /// `serve --cpu`: the data threads are pinned to these CPUs, round-robin (empty: not pinned).
    pub cpus: Vec<usize>,
}

impl DataPlane {
    /// Creates the listeners for `setup` on `bind`; returns the plane and where to connect.
    pub fn listen(setup: Setup, bind: IpAddr) -> Result<(DataPlane, SetupOk), String> {
        validate(&setup)?;
        let cookie = crate::auth::random_bytes::<16>()?;
        let mut ok = SetupOk { cookie, tcp_port: 0, udp_ports: vec![], unix_path: String::new() };
        let mut unix_path = None;
        let listening = match setup.transport {
            Transport::Tcp => {
                let l = TcpListener::bind((bind, 0)).map_err(|e| format!("cannot open a TCP data listener on {bind}: {e}"))?;
                ok.tcp_port = l.local_addr().map_err(|e| e.to_string())?.port();
                Listening::Tcp(l)
            }
            Transport::Unix => {
                let name: String = crate::auth::random_bytes::<6>()?.iter().map(|b| format!("{b:02x}")).collect();
                let p = std::env::temp_dir().join(format!("interlab-{}-{name}.sock", std::process::id()));
                let l = UnixListener::bind(&p).map_err(|e| format!("cannot open a Unix data listener at {}: {e}", p.display()))?;
                ok.unix_path = p.display().to_string();
                unix_path = Some(p.clone());
                Listening::Unix(l)
            }
            Transport::Udp => {
                let mut v = Vec::new();
                for c in &setup.channels {
                    let s = UdpSocket::bind((bind, 0)).map_err(|e| format!("cannot open a UDP data socket on {bind}: {e}"))?;
                    ok.udp_ports.push(s.local_addr().map_err(|e| e.to_string())?.port());
                    v.push((c.chan, s));
                }
                Listening::Udp(v)
            }
        };
        let wake = match &listening {
            Listening::Tcp(l) => l.local_addr().ok(),
            _ => None,
        };
        let plane = DataPlane {
            setup,
            cookie,
            listening: Some(listening),
            unix_path,
            wake,
            stop: Arc::new(AtomicBool::new(false)),
            closers: vec![],
            responders: vec![],
            initiators: vec![],
            results: None,
            receivers: BTreeMap::new(),
            txn_thread: None,
            clock: Clock::default(),
            progress: vec![],
            last_total: 0,
            watch: vec![],
            pending: vec![],
            dropped_datagrams: 0,
            cpus: vec![],
        };
        Ok((plane, ok))
    }

    fn spec(&self, chan: u32) -> ChanSpec {
        ChanSpec { chan, base: self.setup.base, size: self.setup.size, response_size: self.setup.response_size, window: self.setup.window }
    }

    /// Accepts and checks every data channel (within `timeout`), then starts the workers.
    /// UDP hellos are taken only from `peer` (the control connection's peer address):
    /// anything else is dropped and counted, so the daemon never sends to a third party.
    pub fn accept(&mut self, timeout: Duration, idle: Duration, peer: IpAddr) -> Result<(), String> {
        let listening = self.listening.take().ok_or("data plane already started")?;
        let connecting = matches!(self.setup.base, BaseCode::Connect | BaseCode::Crr);
        let mut conns: BTreeMap<u32, DataConn> = BTreeMap::new();
        let wanted: Vec<u32> = self.setup.channels.iter().map(|c| c.chan).collect();
        let deadline = Instant::now() + timeout;
        match listening {
            Listening::Tcp(l) if connecting => return self.start_txn(Listener::Tcp(l)),
            Listening::Unix(l) if connecting => return self.start_txn(Listener::Unix(l)),
            Listening::Tcp(l) => {
                l.set_nonblocking(true).map_err(|e| e.to_string())?;
                while conns.len() < wanted.len() {
                    match l.accept() {
                        Ok((s, _)) => {
                            if let Some(ch) = check_stream(&s, &self.cookie, &wanted, &conns, deadline) {
                                conns.insert(ch, DataConn::Tcp(s));
                            }
                            wait_or_fail(deadline, conns.len(), wanted.len(), false)?;
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => wait_or_fail(deadline, conns.len(), wanted.len(), true)?,
                        Err(e) => return Err(format!("accepting data connections: {e}")),
                    }
                }
            }
            Listening::Unix(l) => {
                l.set_nonblocking(true).map_err(|e| e.to_string())?;
                while conns.len() < wanted.len() {
                    match l.accept() {
                        Ok((s, _)) => {
                            if let Some(ch) = check_unix(&s, &self.cookie, &wanted, &conns, deadline) {
                                conns.insert(ch, DataConn::Unix(s));
                            }
                            wait_or_fail(deadline, conns.len(), wanted.len(), false)?;
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => wait_or_fail(deadline, conns.len(), wanted.len(), true)?,
                        Err(e) => return Err(format!("accepting data connections: {e}")),
                    }
                }
            }
            Listening::Udp(socks) => {
                for (chan, s) in socks {
                    let mut b = [0u8; HELLO_BYTES + 1];
                    loop {
                        let left = deadline.saturating_duration_since(Instant::now());
                        if left.is_zero() {
                            return Err(format!("channel {chan}: no UDP hello within {} s", timeout.as_secs_f64()));
                        }
                        s.set_read_timeout(Some(left)).map_err(|e| e.to_string())?;
                        match s.recv_from(&mut b) {
                            Ok((n, from)) if same_ip(from.ip(), peer) && n == HELLO_BYTES && parse_hello(&b[..n], &self.cookie) == Some(chan) => {
                                // Connected: the kernel now drops datagrams from any other source.
                                s.connect(from).map_err(|e| format!("channel {chan}: {e}"))?;
                                let _ = s.send(&self.cookie);
                                break;
                            }
                            Ok(_) => {
                                self.dropped_datagrams += 1;
                                continue;
                            }
                            Err(e) if crate::conn::is_timeout(&e) => continue,
                            Err(e) => return Err(format!("channel {chan}: UDP hello: {e}")),
                        }
                    }
                    conns.insert(chan, DataConn::Udp(s));
                }
            }
        }
        self.start_workers(conns, idle)
    }

    fn start_txn(&mut self, l: Listener) -> Result<(), String> {
        let spec = self.spec(self.setup.channels[0].chan);
        let stop = self.stop.clone();
        let sockbuf = self.setup.sockbuf;
        let progress = Arc::new(AtomicU64::new(0));
        self.progress.push(progress.clone());
        let cpu = crate::cpu::cpu_for(&self.cpus, 0);
        let h = std::thread::Builder::new()
            .name("txn-accept".into())
            .spawn(move || {
                if let Some(c) = cpu {
                    crate::cpu::pin_current_thread(c)?;
                }
                serve_connecting(&spec, &l, sockbuf, &stop, &progress)
            })
            .map_err(|e| e.to_string())?;
        self.txn_thread = Some(h);
        Ok(())
    }

    fn start_workers(&mut self, conns: BTreeMap<u32, DataConn>, idle: Duration) -> Result<(), String> {
        let (rtx, rrx) = channel();
        for (k, (chan, conn)) in conns.into_iter().enumerate() {
            let cpu = crate::cpu::cpu_for(&self.cpus, k);
            conn.tune(self.setup.sockbuf);
            if let DataConn::Udp(s) = &conn {
                // Hellos the client repeated before our acknowledgement reached it.
                let _ = s.set_nonblocking(true);
                let mut b = [0u8; HELLO_BYTES + 1];
                while s.recv(&mut b).is_ok() {}
                let _ = s.set_nonblocking(false);
            }
            let server_initiates = self.setup.channels.iter().any(|c| c.chan == chan && c.server_initiates);
            // No read timeout (it would arm a timer on every blocking read): workers are
            // stopped by shutting their sockets down, and a client that vanished without a
            // word is noticed by TCP keepalive.
            conn.set_read_timeout(None).map_err(|e| e.to_string())?;
            conn.keepalive(idle);
            self.closers.push(conn.closer().map_err(|e| e.to_string())?);
            let spec = self.spec(chan);
            let progress = Arc::new(AtomicU64::new(0));
            self.progress.push(progress.clone());
            if server_initiates {
                let (ptx, prx) = channel();
                self.watch.push(InitWatch {
                    chan,
                    progress: progress.clone(),
                    closer: conn.closer().map_err(|e| e.to_string())?,
                    datagram: conn.is_datagram(),
                    running: false,
                    seen: 0,
                    since: Instant::now(),
                    stalled: None,
                });
                let h = spawn_initiator(spec, progress, Some(conn), None, self.setup.sockbuf, self.clock, prx, rtx.clone(), crate::engine::InitExtras { cpu, ..Default::default() }).map_err(|e| e.to_string())?;
                self.initiators.push((chan, ptx, h));
            } else {
                let recv = if spec.base == BaseCode::Stream {
                    let r: SharedReceiver = Arc::new(Mutex::new(StreamReceiver::new(1_000_000)));
                    self.receivers.insert(chan, r.clone());
                    Some(r)
                } else {
                    None
                };
                let h = spawn_responder(spec, conn, self.clock, self.stop.clone(), recv, progress, cpu).map_err(|e| e.to_string())?;
                self.responders.push(h);
            }
        }
        self.results = Some(rrx);
        Ok(())
    }

    /// Starts the daemon's initiators on a phase.
    pub fn start_phase(&mut self, p: &Phase) -> Result<(), String> {
        check_phase(&self.setup, p)?;
        let res = StreamReceiver::resolution_for(p.warmup_ps.saturating_add(p.duration_ps));
        for r in self.receivers.values() {
            if let Ok(mut r) = r.lock() {
                r.set_resolution(res);
            }
        }
        self.pending.clear();
        let now = Instant::now();
        for w in &mut self.watch {
            (w.running, w.seen, w.since, w.stalled) = (true, w.progress.load(Ordering::Relaxed), now, None);
        }
        for (chan, tx, _) in &self.initiators {
            tx.send(*p).map_err(|_| format!("channel {chan}: the initiator has stopped (an earlier phase failed)"))?;
        }
        Ok(())
    }

    fn collected(&mut self, r: InitResult) {
        if let Some(w) = self.watch.iter_mut().find(|w| w.chan == r.chan) {
            w.running = false;
        }
        self.pending.push(r);
    }

    /// The watchdog, called every few hundred milliseconds by the control thread while a
    /// phase runs: collects finished initiators, closes the channel of a running datagram
    /// initiator that got no reply for [`UDP_STALL`] (capped at `idle`: the datagram is
    /// taken as lost and the channel reports an error), and tells whether any worker of the
    /// session made progress since the last call.
    pub fn poll(&mut self, idle: Duration) -> bool {
        if let Some(rx) = &self.results {
            let got: Vec<InitResult> = rx.try_iter().collect();
            for r in got {
                self.collected(r);
            }
        }
        let now = Instant::now();
        for w in &mut self.watch {
            // Stream channels have the session's rule only (nothing moved for `idle`).
            if !w.running || w.stalled.is_some() || !w.datagram {
                continue;
            }
            let v = w.progress.load(Ordering::Relaxed);
            let limit = UDP_STALL.min(idle);
            if v != w.seen {
                (w.seen, w.since) = (v, now);
            } else if now.duration_since(w.since) >= limit {
                w.stalled = Some(limit);
                w.closer.close();
            }
        }
        let total = self.progress.iter().fold(0u64, |a, p| a.wrapping_add(p.load(Ordering::Relaxed)));
        let moved = total != self.last_total;
        self.last_total = total;
        moved
    }

    /// Waits for the daemon's initiators to finish the phase, running the watchdog. Err when
    /// nothing in the session moved for `idle` since `last_progress` (which it updates).
    pub fn finish_initiators(&mut self, idle: Duration, last_progress: &mut Instant) -> Result<Vec<InitResult>, String> {
        loop {
            if self.pending.len() >= self.initiators.len() {
                break;
            }
            let Some(rx) = &self.results else { break };
            match rx.recv_timeout(Duration::from_millis(100)) {
                Ok(r) => {
                    self.collected(r);
                    *last_progress = Instant::now();
                }
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    if self.poll(idle) {
                        *last_progress = Instant::now();
                    } else if last_progress.elapsed() >= idle {
                        return Err(format!("no progress on any connection of the session for {} s", idle.as_secs_f64()));
                    }
                }
            }
        }
        let mut out = std::mem::take(&mut self.pending);
        for r in &mut out {
            if let Some(limit) = self.watch.iter().find(|w| w.chan == r.chan).and_then(|w| w.stalled) {
                let why = if self.setup.transport == Transport::Udp { "a datagram was lost" } else { "the peer stopped answering" };
                r.error = Some(format!("channel {}: no progress for {:.0} s ({why})", r.chan, limit.as_secs_f64()));
            }
        }
        Ok(out)
    }

    /// Stream receivers: waits (up to `wait`) until `to` bytes arrived on `chan`, then
    /// measures between the marks. Returns (samples, bytes received in total).
    pub fn measure_stream(&self, chan: u32, from: u64, to: u64, wait: Duration) -> Result<(interlab_patterns::Samples, u64), String> {
        let r = self.receivers.get(&chan).ok_or_else(|| format!("channel {chan} is not a stream this daemon receives"))?;
        let deadline = Instant::now() + wait;
        // Until every byte sent arrived, or nothing more arrives for 200 ms (datagrams lost).
        let (mut last_total, mut last_change) = (0u64, Instant::now());
        loop {
            let total = r.lock().map(|g| g.total()).unwrap_or(u64::MAX);
            let now = Instant::now();
            if total != last_total {
                (last_total, last_change) = (total, now);
            }
            if total >= to || now >= deadline || now.duration_since(last_change) >= Duration::from_millis(200) {
                break;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        let mut g = r.lock().map_err(|_| "stream receiver poisoned".to_string())?;
        let total = g.total();
        let s = g.measure(from, to).ok_or_else(|| format!("channel {chan}: nothing measurable arrived between bytes {from} and {to}"))?;
        g.forget_before(to.min(total));
        Ok((s, total))
    }

    /// Stream channels this daemon receives (each may get one mark per PhaseEnd).
    pub fn stream_channels(&self) -> usize {
        self.receivers.len()
    }

    /// Responder threads that already ended with an error.
    pub fn failed_responders(&mut self) -> Vec<String> {
        let mut errs = Vec::new();
        let mut keep = Vec::new();
        for h in self.responders.drain(..) {
            if h.is_finished() {
                if let Ok(Err(e)) = h.join() {
                    errs.push(e);
                }
            } else {
                keep.push(h);
            }
        }
        self.responders = keep;
        errs
    }

    /// Stops every worker and removes the Unix socket.
    pub fn shutdown(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for c in &self.closers {
            c.close();
        }
        let initiators = std::mem::take(&mut self.initiators);
        for (_, tx, h) in initiators {
            drop(tx);
            let _ = h.join();
        }
        if let Some(h) = self.txn_thread.take() {
            // Wake the blocking accept.
            match (&self.wake, &self.unix_path) {
                (Some(a), _) => {
                    let _ = TcpStream::connect_timeout(a, Duration::from_secs(1));
                }
                (None, Some(p)) => {
                    let _ = UnixStream::connect(p);
                }
                _ => {}
            }
            let _ = h.join();
        }
        for h in self.responders.drain(..) {
            let _ = h.join();
        }
        if let Some(p) = &self.unix_path {
            let _ = std::fs::remove_file(p);
        }
    }
}

impl Drop for DataPlane {
    fn drop(&mut self) {
        if let Some(p) = &self.unix_path {
            let _ = std::fs::remove_file(p);
        }
    }
}

fn wait_or_fail(deadline: Instant, have: usize, want: usize, sleep: bool) -> Result<(), String> {
    if Instant::now() >= deadline && have < want {
        return Err(format!("only {have} of {want} data connections arrived in time"));
    }
    if sleep {
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok(())
}

/// Same host address, an IPv4-mapped IPv6 address counting as its IPv4 address.
fn same_ip(a: IpAddr, b: IpAddr) -> bool {
    a.to_canonical() == b.to_canonical()
}

/// How long a data connection may take to send its hello: at most 2 s, and never past the deadline.
fn hello_wait(deadline: Instant) -> Option<Duration> {
    let left = deadline.saturating_duration_since(Instant::now()).min(Duration::from_secs(2));
    (!left.is_zero()).then_some(left)
}

/// Reads the hello within 2 s and before `deadline` as a whole (not per read: a connection
/// that drips it a byte at a time is dropped).
fn read_hello(r: &mut impl Read, set_timeout: impl Fn(Duration) -> std::io::Result<()>, deadline: Instant) -> Option<[u8; HELLO_BYTES]> {
    let until = Instant::now() + hello_wait(deadline)?;
    let mut h = [0u8; HELLO_BYTES];
    let mut got = 0;
    while got < HELLO_BYTES {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return None;
        }
        set_timeout(left).ok()?;
        match r.read(&mut h[got..]) {
            Ok(0) => return None,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    Some(h)
}

fn check_stream(s: &TcpStream, cookie: &[u8; 16], wanted: &[u32], have: &BTreeMap<u32, DataConn>, deadline: Instant) -> Option<u32> {
    s.set_nonblocking(false).ok()?;
    let h = read_hello(&mut &*s, |t| s.set_read_timeout(Some(t)), deadline)?;
    parse_hello(&h, cookie).filter(|c| wanted.contains(c) && !have.contains_key(c))
}

fn check_unix(s: &UnixStream, cookie: &[u8; 16], wanted: &[u32], have: &BTreeMap<u32, DataConn>, deadline: Instant) -> Option<u32> {
    s.set_nonblocking(false).ok()?;
    let h = read_hello(&mut &*s, |t| s.set_read_timeout(Some(t)), deadline)?;
    parse_hello(&h, cookie).filter(|c| wanted.contains(c) && !have.contains_key(c))
}

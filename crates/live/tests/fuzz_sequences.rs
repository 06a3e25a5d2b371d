//! Fuzzes the daemon with *sequences* of control frames after a valid handshake: well-formed
//! messages with hostile field values (huge counts, sizes, windows and times, channel lists,
//! stream marks), messages in the wrong order or direction, mutated frames (flipped bits,
//! wrong lengths, truncation) and random bytes, with the data connections of a Setup opened
//! (correctly or not) so that phases really start. A seeded generator makes every case
//! reproducible (`INTERLAB_FUZZ_SEED`).
//!
//! In `cargo test` it runs for about 3 s. The long run of docs/live.md:
//!
//! ```sh
//! INTERLAB_FUZZ_CASES=1000000 cargo test --profile test-opt -p interlab-live --test fuzz_sequences -- --nocapture
//! ```
//!
//! Against a separate `interlab serve` process instead (its RSS read from /proc/PID/status
//! before and after; start it with `--idle-timeout 0.4 --handshake-timeout 0.4 --quiet`):
//!
//! ```sh
//! INTERLAB_FUZZ_ADDR=127.0.0.1:7400 INTERLAB_FUZZ_PID=$(pgrep -n interlab) INTERLAB_FUZZ_CASES=1000000 \
//!     cargo test --profile test-opt -p interlab-live --test fuzz_sequences -- --nocapture
//! ```
//!
//! Checks: no panic in any daemon thread (a panic hook counts them), no crash (an abort ends
//! the test process), no hang (after the run every session ends within the idle timeout
//! and a real client is served), the daemon's threads return to their baseline and its
//! resident memory stays under a bound.

use interlab_live::conn::hello;
use interlab_live::proto::{encode, read_msg, write_msg, BaseCode, ChanSetup, Msg, Phase, PhaseEnd, Setup, StreamMark, Transport, MAX_TO_CLIENT};
use interlab_live::runner::{run_point, PointOptions, RunLength};
use interlab_live::{parse_peer, ServeConfig, Server};
use interlab_patterns::{Workload, WorkloadKind};
use std::io::Write;
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

static PANICS: AtomicUsize = AtomicUsize::new(0);
/// How far cases got: SetupOk, DataReady, PhaseResult received.
static SETUP_OK: AtomicUsize = AtomicUsize::new(0);
static DATA_READY: AtomicUsize = AtomicUsize::new(0);
static PHASE_RESULTS: AtomicUsize = AtomicUsize::new(0);

/// xorshift64*: small, seeded, good enough to pick cases.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn chance(&mut self, pct: u64) -> bool {
        self.below(100) < pct
    }
    /// A number biased to the edges: 0, 1, small, powers of two and their neighbours, max.
    fn edgy(&mut self, max: u64) -> u64 {
        match self.below(8) {
            0 => 0,
            1 => 1,
            2 => self.below(64),
            3 => max,
            4 => max.saturating_sub(self.below(3)),
            5 => {
                let b = self.below(64) as u32;
                (1u64 << b.min(63)).saturating_add(self.below(3)).saturating_sub(1).min(max)
            }
            _ => self.next() % max.saturating_add(1).max(1),
        }
    }
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmRSS:")).and_then(|l| l.split_whitespace().nth(1)?.parse().ok()))
        .unwrap_or(0)
}

/// Resident memory of another process (the external daemon), KiB.
fn rss_of(pid: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmRSS:")).and_then(|l| l.split_whitespace().nth(1)?.parse().ok()))
        .unwrap_or(0)
}

fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").map(|d| d.count()).unwrap_or(0)
}

fn small_setup(r: &mut Rng) -> Setup {
    let transport = [Transport::Tcp, Transport::Udp, Transport::Unix][r.below(3) as usize];
    let base = [BaseCode::PingPong, BaseCode::Windowed, BaseCode::Stream, BaseCode::Connect, BaseCode::Crr, BaseCode::Rr][r.below(6) as usize];
    let n = if r.chance(90) { 1 + r.below(3) } else { r.edgy(300) };
    let channels = (0..n).map(|k| ChanSetup { chan: if r.chance(90) { k as u32 } else { r.edgy(u32::MAX as u64) as u32 }, server_initiates: r.chance(50) }).collect();
    let size = if r.chance(80) { 1 + r.below(2048) } else { r.edgy(u64::MAX) };
    let response_size = if r.chance(80) { r.below(2048) } else { r.edgy(u64::MAX) };
    let window = if r.chance(80) { 1 + r.below(32) as u32 } else { r.edgy(u32::MAX as u64) as u32 };
    let sockbuf = if r.chance(80) { 0 } else { r.edgy(u32::MAX as u64) as u32 };
    Setup { transport, base, size, response_size, window, channels, sockbuf }
}

fn phase(r: &mut Rng) -> Phase {
    let small = r.chance(70);
    Phase {
        id: if r.chance(80) { 1 } else { r.edgy(u32::MAX as u64) as u32 },
        warmup: if small { r.below(4) as u32 } else { r.edgy(u32::MAX as u64) as u32 },
        iterations: if small { r.below(8) as u32 } else { r.edgy(u32::MAX as u64) as u32 },
        warmup_ps: if small { r.below(1_000_000) } else { r.edgy(u64::MAX) },
        duration_ps: if small { r.below(5_000_000_000) } else { r.edgy(u64::MAX) },
    }
}

fn message(r: &mut Rng) -> Msg {
    match r.below(12) {
        0..=2 => Msg::Setup(small_setup(r)),
        3..=5 => Msg::Phase(phase(r)),
        6 | 7 => {
            let n = if r.chance(90) { r.below(3) } else { r.edgy(3000) };
            Msg::PhaseEnd(PhaseEnd {
                id: if r.chance(80) { 1 } else { r.edgy(u32::MAX as u64) as u32 },
                marks: (0..n).map(|_| StreamMark { chan: r.below(4) as u32, from: r.edgy(u64::MAX), to: r.edgy(u64::MAX) }).collect(),
            })
        }
        8 => Msg::Bye,
        9 => Msg::Hello { client_version: "again".into(), client_nonce: [r.next() as u8; 16] },
        10 => Msg::DataReady,
        _ => Msg::Error { message: "x".repeat(r.below(100) as usize) },
    }
}

/// One frame: a message, mutated or not, or noise.
fn frame(r: &mut Rng) -> (Vec<u8>, Option<Msg>) {
    let m = message(r);
    let mut f = encode(&m);
    match r.below(10) {
        0 => {
            // Flip some bits anywhere.
            for _ in 0..1 + r.below(4) {
                let i = r.below(f.len() as u64) as usize;
                f[i] ^= 1 << r.below(8);
            }
            (f, None)
        }
        1 => {
            // A length field that lies.
            let len = r.edgy(u32::MAX as u64) as u32;
            f[4..8].copy_from_slice(&len.to_be_bytes());
            (f, None)
        }
        2 => {
            f.truncate(r.below(f.len() as u64) as usize);
            (f, None)
        }
        3 if r.chance(30) => ((0..r.below(64)).map(|_| r.next() as u8).collect(), None),
        _ => (f, Some(m)),
    }
}

/// Opens a Setup's data connections (or some of them, or wrong ones) so phases really run.
fn open_data(r: &mut Rng, ctl: &TcpStream, setup: &Setup, ok: &interlab_live::proto::SetupOk, keep: &mut Vec<Box<dyn std::any::Any>>) {
    if matches!(setup.base, BaseCode::Connect | BaseCode::Crr) || r.chance(10) {
        return;
    }
    let Ok(peer) = ctl.peer_addr() else { return };
    let ip = peer.ip();
    for (i, c) in setup.channels.iter().enumerate().take(4) {
        let cookie = if r.chance(95) { ok.cookie } else { [r.next() as u8; 16] };
        let h = hello(&cookie, c.chan);
        match setup.transport {
            Transport::Tcp => {
                if let Ok(mut s) = TcpStream::connect_timeout(&SocketAddr::new(ip, ok.tcp_port), Duration::from_millis(200)) {
                    let _ = s.write_all(&h);
                    keep.push(Box::new(s));
                }
            }
            Transport::Unix => {
                if let Ok(mut s) = UnixStream::connect(&ok.unix_path) {
                    let _ = s.write_all(&h);
                    keep.push(Box::new(s));
                }
            }
            Transport::Udp => {
                let Some(port) = ok.udp_ports.get(i) else { return };
                if let Ok(s) = UdpSocket::bind("127.0.0.1:0") {
                    let _ = s.connect(SocketAddr::new(ip, *port));
                    let _ = s.set_read_timeout(Some(Duration::from_millis(20)));
                    let mut b = [0u8; 32];
                    for _ in 0..5 {
                        let _ = s.send(&h);
                        if s.recv(&mut b).is_ok() {
                            break;
                        }
                    }
                    keep.push(Box::new(s));
                }
            }
        }
    }
}

/// One case: handshake, then a sequence of frames; reads what the daemon answers.
fn case(addr: SocketAddr, r: &mut Rng) -> Result<(), String> {
    let mut s = TcpStream::connect(addr).map_err(|e| e.to_string())?;
    let _ = s.set_nodelay(true);
    s.set_read_timeout(Some(Duration::from_secs(2))).map_err(|e| e.to_string())?;
    write_msg(&mut s, &Msg::Hello { client_version: "fuzz".into(), client_nonce: [7; 16] }).map_err(|e| e.to_string())?;
    match read_msg(&mut s, MAX_TO_CLIENT) {
        Ok(Msg::Welcome { .. }) => {}
        other => return Err(format!("handshake: {other:?}")),
    }
    let mut keep: Vec<Box<dyn std::any::Any>> = Vec::new();
    let steps = 1 + r.below(8);
    for _ in 0..steps {
        let (bytes, msg) = frame(r);
        if s.write_all(&bytes).is_err() {
            break;
        }
        // Read what comes back within a short time; SetupOk leads to data connections.
        s.set_read_timeout(Some(Duration::from_millis(if matches!(msg, Some(Msg::Setup(_))) { 300 } else { 2 }))).map_err(|e| e.to_string())?;
        match read_msg(&mut s, MAX_TO_CLIENT) {
            Ok(Msg::SetupOk(ok)) => {
                if let Some(Msg::Setup(setup)) = &msg {
                    open_data(r, &s, setup, &ok, &mut keep);
                }
                SETUP_OK.fetch_add(1, Ordering::Relaxed);
                s.set_read_timeout(Some(Duration::from_millis(100))).map_err(|e| e.to_string())?;
                if let Ok(Msg::DataReady) = read_msg(&mut s, MAX_TO_CLIENT) {
                    DATA_READY.fetch_add(1, Ordering::Relaxed);
                    if r.chance(60) {
                        // A phase that can finish: few iterations, a short stream, marks.
                        let id = 1 + r.below(3) as u32;
                        let ph = Phase { id, warmup: 0, iterations: r.below(3) as u32, warmup_ps: 0, duration_ps: r.below(2_000_000_000) };
                        let n = r.below(3);
                        let marks = (0..n).map(|_| StreamMark { chan: r.below(3) as u32, from: r.edgy(1 << 20), to: r.edgy(1 << 20) }).collect();
                        let _ = write_msg(&mut s, &Msg::Phase(ph));
                        let _ = write_msg(&mut s, &Msg::PhaseEnd(PhaseEnd { id, marks }));
                        s.set_read_timeout(Some(Duration::from_millis(300))).map_err(|e| e.to_string())?;
                        if let Ok(Msg::PhaseResult(_)) = read_msg(&mut s, MAX_TO_CLIENT) {
                            PHASE_RESULTS.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            }
            Ok(Msg::PhaseResult(_)) => {
                PHASE_RESULTS.fetch_add(1, Ordering::Relaxed);
            }
            Ok(Msg::Error { .. }) => break,
            Ok(_) => {}
            Err(interlab_live::proto::ProtoError::Timeout) => {}
            Err(_) => break,
        }
    }
    if r.chance(20) {
        let _ = write_msg(&mut s, &Msg::Bye);
    }
    Ok(())
}

fn served(addr: SocketAddr) -> Result<(), String> {
    let o = PointOptions {
        workload: Workload { kind: WorkloadKind::Latency, size: 64, response_size: 64, window: 1, streams: 1, peers: 1 },
        transport: Transport::Tcp,
        peers: vec![parse_peer(&addr.to_string(), 0).unwrap()],
        token: None,
        length: RunLength::Count { warmup: Some(5), iterations: Some(50) },
        confidence: None,
        sockbuf: 0,
        experiment: "fuzz".into(),
        command: "fuzz".into(),
        connect_timeout: Duration::from_secs(2),
        extras: Default::default(),
    };
    let out = run_point(&o)?;
    match out.error {
        None => Ok(()),
        Some(e) => Err(e.message),
    }
}

#[test]
fn frame_sequences_after_a_handshake() {
    let prev = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        PANICS.fetch_add(1, Ordering::SeqCst);
        prev(info);
    }));
    let idle = Duration::from_millis(400);
    let cfg = ServeConfig { port: 0, handshake_timeout: Duration::from_millis(400), idle_timeout: idle, verbose: false, ..ServeConfig::default() };
    let external: Option<SocketAddr> = std::env::var("INTERLAB_FUZZ_ADDR").ok().map(|a| a.parse().expect("INTERLAB_FUZZ_ADDR is HOST:PORT"));
    let ext_pid = std::env::var("INTERLAB_FUZZ_PID").unwrap_or_default();
    let (addr, stop, t) = Server::bind(cfg).unwrap().spawn();
    let addr = external.unwrap_or(addr);
    served(addr).expect("daemon serves before fuzzing");
    let ext_rss0 = rss_of(&ext_pid);
    let seed: u64 = std::env::var("INTERLAB_FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x1157_2026);
    let cases: Option<u64> = std::env::var("INTERLAB_FUZZ_CASES").ok().and_then(|s| s.parse().ok());
    let budget = Duration::from_secs(3);
    let workers: u64 = std::env::var("INTERLAB_FUZZ_WORKERS").ok().and_then(|s| s.parse().ok()).unwrap_or(8).clamp(1, 32);
    let (rss0, threads0) = (rss_kib(), threads());
    let t0 = Instant::now();
    let done = Arc::new(AtomicUsize::new(0));
    let hs: Vec<_> = (0..workers)
        .map(|w| {
            let done = done.clone();
            std::thread::spawn(move || {
                let mut r = Rng(seed ^ (w + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
                let mut n = 0u64;
                let mut errors = 0u64;
                loop {
                    match cases {
                        Some(c) if n >= c.div_ceil(workers) => break,
                        None if t0.elapsed() >= budget => break,
                        _ => {}
                    }
                    if case(addr, &mut r).is_err() {
                        errors += 1;
                    }
                    n += 1;
                    let total = done.fetch_add(1, Ordering::Relaxed) + 1;
                    if total % 100_000 == 0 {
                        eprintln!("fuzz: {total} cases, {:.0} s, daemon RSS {} KiB, {} threads", t0.elapsed().as_secs_f64(), rss_kib(), threads());
                    }
                }
                errors
            })
        })
        .collect();
    let handshake_errors: u64 = hs.into_iter().map(|h| h.join().unwrap()).sum();
    let n = done.load(Ordering::Relaxed);
    // Every session ends within the idle timeout (plus the watchdog's tick and the UDP stall).
    let settle = Instant::now();
    while threads() > threads0 + 2 && settle.elapsed() < idle + Duration::from_secs(4) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let leaked = threads().saturating_sub(threads0);
    served(addr).expect("daemon serves after fuzzing");
    let rss1 = rss_kib();
    eprintln!(
        "fuzz: {n} cases in {:.1} s (seed {seed}, {workers} workers; {} SetupOk, {} DataReady, {} PhaseResult), {handshake_errors} handshakes refused, {} panics, RSS {rss0} -> {rss1} KiB, threads {threads0} -> {}",
        t0.elapsed().as_secs_f64(),
        SETUP_OK.load(Ordering::Relaxed),
        DATA_READY.load(Ordering::Relaxed),
        PHASE_RESULTS.load(Ordering::Relaxed),
        PANICS.load(Ordering::SeqCst),
        threads()
    );
    if external.is_some() {
        eprintln!("fuzz: external daemon (pid {ext_pid}) RSS {ext_rss0} -> {} KiB", rss_of(&ext_pid));
    }
    stop.stop();
    let _ = t.join();
    assert_eq!(PANICS.load(Ordering::SeqCst), 0, "a daemon thread panicked");
    assert!(leaked <= 2, "{leaked} threads still running {:?} after the sessions should have ended", settle.elapsed());
    assert!(n >= 50, "only {n} cases ran");
    // Memory: what the daemon holds after the run, whatever the number of cases.
    assert!(rss1 < 256 * 1024, "resident memory {rss1} KiB after {n} cases");
}

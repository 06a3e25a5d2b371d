//! The daemon's side of one control connection: handshake and authentication, then points
//! (Setup ... Bye) and their phases. Any protocol violation ends this session with an Error
//! message to the client; other sessions are untouched.
//!
//! Time limits are deadlines, not per-read timeouts: the whole handshake (accept to the
//! first Setup) must finish within `handshake_timeout`, every later control message must
//! arrive whole within `idle_timeout`, and a session in which nothing moves on any of its
//! connections for `idle_timeout` is ended (sockets closed, slot freed).

use crate::auth::{mac_ok, random_bytes, Token};
use crate::cpu::CpuSnapshot;
use crate::dataplane::DataPlane;
use crate::proto::{read_msg, ChanResult, ChanSamples, Msg, PhaseResult, ProtoError, MAX_TO_SERVER};
use interlab_patterns::Samples;
use std::io::Read;
use std::net::{IpAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

/// Session limits and credentials.
#[derive(Debug, Clone)]
pub struct SessionConfig {
    pub token: Option<Token>,
    /// The whole handshake (Hello, authentication, the first Setup) and the arrival of a
    /// point's data connections must finish within this.
    pub handshake_timeout: Duration,
    /// A session in which nothing moves on any connection for this long is ended; a control
    /// message must also arrive whole within it.
    pub idle_timeout: Duration,
    pub version: String,
    /// `serve --cpu`: CPUs the data threads are pinned to, round-robin (empty: not pinned).
    pub cpus: Vec<usize>,
}

/// Reads from a socket until an absolute deadline: each read waits at most for what is left,
/// so a peer that drips one byte at a time cannot stretch the wait.
pub struct DeadlineRead<'a> {
    pub s: &'a TcpStream,
    pub until: Instant,
}

impl Read for DeadlineRead<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = self.until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(std::io::ErrorKind::TimedOut.into());
        }
        self.s.set_read_timeout(Some(left))?;
        (&mut &*self.s).read(buf)
    }
}

/// How long a control message may take to be written whole (a client that stops reading
/// cannot hold the session thread in a blocked write); set per connection from the idle time.
fn write_deadline(s: &TcpStream) -> Instant {
    let t = s.write_timeout().ok().flatten().unwrap_or(Duration::from_secs(60));
    Instant::now() + t
}

/// Writes one message whole before the deadline.
fn write_by(s: &mut TcpStream, m: &Msg) -> Result<(), String> {
    let until = write_deadline(s);
    let limit = s.write_timeout().ok().flatten();
    let bytes = crate::proto::encode(m);
    let mut done = 0;
    let r = (|| {
        while done < bytes.len() {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(format!("client did not read a {} message within {} s; closing the session", m.name(), fmt_s(limit.unwrap_or_default())));
            }
            s.set_write_timeout(Some(left)).map_err(|e| e.to_string())?;
            match std::io::Write::write(s, &bytes[done..]) {
                Ok(0) => return Err("control connection closed".to_string()),
                Ok(n) => done += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
                Err(e) => return Err(format!("cannot send control message: {e}")),
            }
        }
        Ok(())
    })();
    let _ = s.set_write_timeout(limit);
    r
}

fn send(s: &mut TcpStream, m: &Msg) -> Result<(), String> {
    write_by(s, m)
}

/// Tells the client what went wrong (best effort) and returns the error.
fn fail(s: &mut TcpStream, msg: String) -> Result<(), String> {
    let _ = write_by(s, &Msg::Error { message: msg.clone() });
    Err(msg)
}

/// Reads one message that must arrive whole by `until`; `limit` names the limit in errors.
fn recv(s: &mut TcpStream, until: Instant, limit: (&str, Duration), waiting_for: &str) -> Result<Msg, String> {
    let r = read_msg(&mut DeadlineRead { s, until }, MAX_TO_SERVER);
    match r {
        Ok(m) => Ok(m),
        Err(ProtoError::Timeout) => {
            let m = format!("no {waiting_for} within {} s ({}); closing the session", fmt_s(limit.1), limit.0);
            let _ = write_by(s, &Msg::Error { message: m.clone() });
            Err(m)
        }
        Err(ProtoError::Closed) => Err(format!("client closed the connection while the daemon waited for {waiting_for}")),
        Err(e) => {
            let m = format!("{e} (while waiting for {waiting_for})");
            let _ = write_by(s, &Msg::Error { message: m.clone() });
            Err(m)
        }
    }
}

fn fmt_s(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0}")
    } else {
        format!("{s}")
    }
}

fn unexpected(s: &mut TcpStream, got: &Msg, expected: &str) -> Result<(), String> {
    if let Msg::Error { message } = got {
        return Err(format!("client reported: {message}"));
    }
    fail(s, format!("unexpected {} message: expected {expected}", got.name()))
}

/// Runs one session to its end with no admission control (tests, embedding).
pub fn serve(s: TcpStream, cfg: &SessionConfig) -> Result<(), String> {
    serve_admitted(s, cfg, Instant::now(), || Ok(()))
}

/// Runs one session accepted at `accepted`. `admit` is called once the client is
/// authenticated: it takes the connection out of the pre-authentication budget and gives
/// it a session slot (its result is held until the session ends), or refuses with a reason
/// sent to the client. Ok(()) after Bye or a clean close between points.
pub fn serve_admitted<G>(mut s: TcpStream, cfg: &SessionConfig, accepted: Instant, admit: impl FnOnce() -> Result<G, String>) -> Result<(), String> {
    let _ = s.set_nodelay(true);
    // Every control message must be written whole within the idle time (see `write_by`).
    let _ = s.set_write_timeout(Some(cfg.idle_timeout));
    let local_ip = s.local_addr().ok().map(|a| a.ip());
    let peer_ip = s.peer_addr().map_err(|e| format!("control socket has no peer address: {e}"))?.ip();
    let hs = accepted + cfg.handshake_timeout;
    let hs_limit = ("--handshake-timeout", cfg.handshake_timeout);
    let client_nonce = match recv(&mut s, hs, hs_limit, "Hello")? {
        Msg::Hello { client_nonce, .. } => client_nonce,
        other => return unexpected(&mut s, &other, "Hello"),
    };
    let server_mac = match &cfg.token {
        None => None,
        Some(token) => {
            let nonce = random_bytes::<16>()?;
            send(&mut s, &Msg::Challenge { server_nonce: nonce })?;
            match recv(&mut s, hs, hs_limit, "Auth")? {
                Msg::Auth { mac } if mac_ok(&token.client_mac(&nonce, &client_nonce), &mac) => Some(token.server_mac(&nonce, &client_nonce)),
                Msg::Auth { .. } => return fail(&mut s, "authentication failed: wrong token".into()),
                other => return unexpected(&mut s, &other, "Auth"),
            }
        }
    };
    let _slot = match admit() {
        Ok(g) => g,
        Err(e) => return fail(&mut s, e),
    };
    send(&mut s, &Msg::Welcome { server_version: cfg.version.clone(), server_mac, host: crate::host::facts(local_ip) })?;
    let bind = local_ip.ok_or("control socket has no local address")?;
    let mut plane: Option<DataPlane> = None;
    let result = points(&mut s, cfg, bind, peer_ip, hs, &mut plane);
    if let Some(p) = plane.take() {
        if p.dropped_datagrams > 0 {
            eprintln!("interlab serve: {peer_ip}: {} datagram(s) from other sources or without the session cookie dropped", p.dropped_datagrams);
        }
        p.shutdown();
    }
    result
}

fn points(s: &mut TcpStream, cfg: &SessionConfig, bind: IpAddr, peer: IpAddr, handshake_until: Instant, plane: &mut Option<DataPlane>) -> Result<(), String> {
    let mut first = true;
    let idle_limit = ("--idle-timeout", cfg.idle_timeout);
    loop {
        // The first Setup ends the handshake; then each message has the idle time.
        let (until, limit) = if first { (handshake_until, ("--handshake-timeout", cfg.handshake_timeout)) } else { (Instant::now() + cfg.idle_timeout, idle_limit) };
        let m = match recv(s, until, limit, "Setup, Phase or Bye") {
            Ok(m) => m,
            // A client that goes away between points ends its session quietly.
            Err(e) if e.starts_with("client closed") && plane.is_none() => return Ok(()),
            Err(e) => return Err(e),
        };
        first = false;
        match m {
            Msg::Setup(setup) => {
                if let Some(p) = plane.take() {
                    p.shutdown();
                }
                let (mut p, ok) = match DataPlane::listen(setup, bind) {
                    Ok(x) => x,
                    Err(e) => return fail(s, format!("setup refused: {e}")),
                };
                p.cpus = cfg.cpus.clone();
                send(s, &Msg::SetupOk(ok))?;
                if let Err(e) = p.accept(cfg.handshake_timeout, cfg.idle_timeout, peer) {
                    p.shutdown();
                    return fail(s, format!("data connections: {e}"));
                }
                *plane = Some(p);
                send(s, &Msg::DataReady)?;
            }
            Msg::Phase(ph) => {
                let Some(p) = plane.as_mut() else {
                    return fail(s, "unexpected Phase message: expected Setup first".into());
                };
                let before = CpuSnapshot::take();
                if let Err(e) = p.start_phase(&ph) {
                    return fail(s, format!("phase refused: {e}"));
                }
                let mut last_progress = Instant::now();
                let end = match wait_phase_end(s, cfg, p, &mut last_progress)? {
                    Msg::PhaseEnd(e) if e.id == ph.id => e,
                    Msg::PhaseEnd(e) => return fail(s, format!("PhaseEnd for phase {} while phase {} runs", e.id, ph.id)),
                    other => return unexpected(s, &other, "PhaseEnd"),
                };
                if end.marks.len() > p.stream_channels() {
                    return fail(s, format!("PhaseEnd carries {} stream marks; this point has {} stream channel(s)", end.marks.len(), p.stream_channels()));
                }
                let done = match p.finish_initiators(cfg.idle_timeout, &mut last_progress) {
                    Ok(d) => d,
                    Err(e) => return fail(s, e),
                };
                let mut channels: Vec<ChanResult> = done
                    .into_iter()
                    .map(|r| ChanResult { chan: r.chan, samples: wire_samples(r.samples), received: 0, error: r.error.unwrap_or_default() })
                    .collect();
                for mk in &end.marks {
                    let (samples, received, error) = match p.measure_stream(mk.chan, mk.from, mk.to, Duration::from_millis(2000)) {
                        Ok((smp, total)) => (wire_samples(smp), total, String::new()),
                        Err(e) => (ChanSamples::None, 0, e),
                    };
                    channels.push(ChanResult { chan: mk.chan, samples, received, error });
                }
                for e in p.failed_responders() {
                    channels.push(ChanResult { chan: u32::MAX, samples: ChanSamples::None, received: 0, error: e });
                }
                let cpu = before.until(&CpuSnapshot::take());
                send(s, &Msg::PhaseResult(PhaseResult { id: ph.id, channels, cpu }))?;
            }
            Msg::Bye => return Ok(()),
            other => return unexpected(s, &other, "Setup, Phase or Bye"),
        }
    }
}

/// True when the control socket has bytes (or an end of stream) to read within `wait`.
fn readable(s: &TcpStream, wait: Duration) -> bool {
    let mut fds = libc::pollfd { fd: s.as_raw_fd(), events: libc::POLLIN, revents: 0 };
    let ms = wait.as_millis().min(i32::MAX as u128) as libc::c_int;
    // SAFETY: poll on one pollfd we own, for at most `ms` milliseconds.
    let n = unsafe { libc::poll(&mut fds, 1, ms) };
    n > 0 && fds.revents != 0
}

/// Waits for PhaseEnd while the phase's channels make progress: a count-bounded phase may
/// run for any time, but a session in which nothing moved for `idle_timeout` (the client
/// and its data connections silent), or whose data channels died, is not waited for.
fn wait_phase_end(s: &mut TcpStream, cfg: &SessionConfig, p: &mut DataPlane, last_progress: &mut Instant) -> Result<Msg, String> {
    let idle = cfg.idle_timeout;
    let tick = Duration::from_millis(200).min(idle);
    loop {
        if readable(s, tick) {
            *last_progress = Instant::now();
            return recv(s, Instant::now() + idle, ("--idle-timeout", idle), "PhaseEnd");
        }
        let failed = p.failed_responders();
        if !failed.is_empty() {
            return fail_msg(s, format!("data channel failed while waiting for PhaseEnd: {}", failed.join("; ")));
        }
        if p.poll(idle) {
            *last_progress = Instant::now();
        } else if last_progress.elapsed() >= idle {
            return fail_msg(s, format!("no progress on any connection of the session for {} s (--idle-timeout); closing it", fmt_s(idle)));
        }
    }
}

fn fail_msg(s: &mut TcpStream, m: String) -> Result<Msg, String> {
    let _ = write_by(s, &Msg::Error { message: m.clone() });
    Err(m)
}

fn wire_samples(s: Samples) -> ChanSamples {
    match s {
        Samples::Latency(v) => ChanSamples::Latency(v),
        Samples::Bandwidth { bytes, elapsed_ps, messages } => ChanSamples::Bandwidth { bytes, elapsed_ps, messages },
        Samples::None => ChanSamples::None,
    }
}

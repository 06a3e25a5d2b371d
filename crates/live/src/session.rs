//! The daemon's side of one control connection: handshake and authentication, then points
//! (Setup ... Bye) and their phases. Any protocol violation ends this session with an Error
//! message to the client; other sessions are untouched.

use crate::auth::{mac_ok, random_bytes, Token};
use crate::cpu::CpuSnapshot;
use crate::dataplane::DataPlane;
use crate::proto::{read_msg, write_msg, ChanResult, ChanSamples, Msg, PhaseResult, ProtoError, MAX_TO_SERVER};
use interlab_patterns::Samples;
use std::net::TcpStream;
use std::time::Duration;

/// Session limits and credentials.
#[derive(Debug, Clone)]
pub struct SessionConfig {
    pub token: Option<Token>,
    /// How long a new client may take to say Hello (and authenticate).
    pub handshake_timeout: Duration,
    /// How long a session may sit idle between messages (and data sockets between reads).
    pub idle_timeout: Duration,
    pub version: String,
}

fn send(s: &mut TcpStream, m: &Msg) -> Result<(), String> {
    write_msg(s, m).map_err(|e| e.to_string())
}

/// Tells the client what went wrong (best effort) and returns the error.
fn fail(s: &mut TcpStream, msg: String) -> Result<(), String> {
    let _ = write_msg(s, &Msg::Error { message: msg.clone() });
    Err(msg)
}

fn recv(s: &mut TcpStream, timeout: Duration, waiting_for: &str) -> Result<Msg, String> {
    let _ = s.set_read_timeout(Some(timeout));
    match read_msg(s, MAX_TO_SERVER) {
        Ok(m) => Ok(m),
        Err(ProtoError::Timeout) => {
            let m = format!("no {waiting_for} within {:.0} s; closing the session", timeout.as_secs_f64());
            let _ = write_msg(s, &Msg::Error { message: m.clone() });
            Err(m)
        }
        Err(ProtoError::Closed) => Err(format!("client closed the connection while the daemon waited for {waiting_for}")),
        Err(e) => {
            let m = format!("{e} (while waiting for {waiting_for})");
            let _ = write_msg(s, &Msg::Error { message: m.clone() });
            Err(m)
        }
    }
}

fn unexpected(s: &mut TcpStream, got: &Msg, expected: &str) -> Result<(), String> {
    if let Msg::Error { message } = got {
        return Err(format!("client reported: {message}"));
    }
    fail(s, format!("unexpected {} message: expected {expected}", got.name()))
}

/// Runs one session to its end. Ok(()) after Bye or a clean close between points.
pub fn serve(mut s: TcpStream, cfg: &SessionConfig) -> Result<(), String> {
    let _ = s.set_nodelay(true);
    let local_ip = s.local_addr().ok().map(|a| a.ip());
    let client_nonce = match recv(&mut s, cfg.handshake_timeout, "Hello")? {
        Msg::Hello { client_nonce, .. } => client_nonce,
        other => return unexpected(&mut s, &other, "Hello"),
    };
    let server_mac = match &cfg.token {
        None => None,
        Some(token) => {
            let nonce = random_bytes::<16>()?;
            send(&mut s, &Msg::Challenge { server_nonce: nonce })?;
            match recv(&mut s, cfg.handshake_timeout, "Auth")? {
                Msg::Auth { mac } if mac_ok(&token.client_mac(&nonce, &client_nonce), &mac) => Some(token.server_mac(&nonce, &client_nonce)),
                Msg::Auth { .. } => return fail(&mut s, "authentication failed: wrong token".into()),
                other => return unexpected(&mut s, &other, "Auth"),
            }
        }
    };
    send(&mut s, &Msg::Welcome { server_version: cfg.version.clone(), server_mac, host: crate::host::facts(local_ip) })?;
    let bind = local_ip.ok_or("control socket has no local address")?;
    let mut plane: Option<DataPlane> = None;
    let result = points(&mut s, cfg, bind, &mut plane);
    if let Some(p) = plane.take() {
        p.shutdown();
    }
    result
}

fn points(s: &mut TcpStream, cfg: &SessionConfig, bind: std::net::IpAddr, plane: &mut Option<DataPlane>) -> Result<(), String> {
    loop {
        let m = match recv(s, cfg.idle_timeout, "Setup, Phase or Bye") {
            Ok(m) => m,
            // A client that goes away between points ends its session quietly.
            Err(e) if e.starts_with("client closed") && plane.is_none() => return Ok(()),
            Err(e) => return Err(e),
        };
        match m {
            Msg::Setup(setup) => {
                if let Some(p) = plane.take() {
                    p.shutdown();
                }
                let (mut p, ok) = match DataPlane::listen(setup, bind) {
                    Ok(x) => x,
                    Err(e) => return fail(s, format!("setup refused: {e}")),
                };
                send(s, &Msg::SetupOk(ok))?;
                if let Err(e) = p.accept(Duration::from_secs(10), cfg.idle_timeout) {
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
                    return fail(s, e);
                }
                let end = match wait_phase_end(s, cfg, p)? {
                    Msg::PhaseEnd(e) if e.id == ph.id => e,
                    Msg::PhaseEnd(e) => return fail(s, format!("PhaseEnd for phase {} while phase {} runs", e.id, ph.id)),
                    other => return unexpected(s, &other, "PhaseEnd"),
                };
                let mut channels: Vec<ChanResult> = p
                    .finish_initiators()
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

/// Waits for PhaseEnd as long as the phase's data channels are alive: a count-bounded phase
/// may run for any time, but a client whose data connections died is not waited for.
fn wait_phase_end(s: &mut TcpStream, cfg: &SessionConfig, p: &mut DataPlane) -> Result<Msg, String> {
    let _ = s.set_read_timeout(Some(cfg.idle_timeout));
    loop {
        match read_msg(s, MAX_TO_SERVER) {
            Ok(m) => return Ok(m),
            Err(ProtoError::Timeout) => {
                let failed = p.failed_responders();
                if !failed.is_empty() {
                    let m = format!("data channel failed while waiting for PhaseEnd: {}", failed.join("; "));
                    let _ = write_msg(s, &Msg::Error { message: m.clone() });
                    return Err(m);
                }
            }
            Err(ProtoError::Closed) => return Err("client closed the connection in the middle of a phase".into()),
            Err(e) => {
                let m = format!("{e} (while waiting for PhaseEnd)");
                let _ = write_msg(s, &Msg::Error { message: m.clone() });
                return Err(m);
            }
        }
    }
}

fn wire_samples(s: Samples) -> ChanSamples {
    match s {
        Samples::Latency(v) => ChanSamples::Latency(v),
        Samples::Bandwidth { bytes, elapsed_ps, messages } => ChanSamples::Bandwidth { bytes, elapsed_ps, messages },
        Samples::None => ChanSamples::None,
    }
}

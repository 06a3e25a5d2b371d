//! Transactions: request/response on a persistent connection, and connect-per-transaction
//! (connect, connect/request/response/close), driven by [`TxnInitiator`] and
//! [`TxnResponder`].

use super::{io_err, recv_until_stop, ChanSpec, InitExtras, LatencyIntervals, Target};
use crate::clock::Clock;
use crate::conn::DataConn;
use crate::proto::{BaseCode, Phase};
use interlab_patterns::{Samples, TxnInitiator, TxnInput, TxnKind, TxnOutput, TxnResponder, TxnSpec};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

fn txn_spec(spec: &ChanSpec, warmup: u32, iterations: u32) -> TxnSpec {
    let kind = match spec.base {
        BaseCode::Connect => TxnKind::Connect,
        BaseCode::Crr => TxnKind::ConnectRequestResponse,
        _ => TxnKind::RequestResponse,
    };
    TxnSpec { kind, request: spec.size, response: spec.response_size, warmup, iterations }
}

/// Request/response on the channel's connection for one phase.
pub fn initiate_rr(spec: &ChanSpec, phase: &Phase, conn: &mut DataConn, clock: &Clock, buf: &mut [u8], progress: &AtomicU64, extras: &InitExtras) -> Result<Samples, String> {
    let mut p = TxnInitiator::new(txn_spec(spec, phase.warmup, phase.iterations));
    let mut out = Vec::with_capacity(2);
    let mut iv = LatencyIntervals::new(extras, phase, false);
    let mut prev = clock.now_ps();
    p.on(prev, TxnInput::Start, &mut out);
    let resp = spec.response_size as usize;
    loop {
        let mut done = false;
        for o in &out {
            match *o {
                TxnOutput::Send { bytes } => conn.send_msg(&buf[..bytes as usize]).map_err(|e| io_err(spec.chan, "send request", e))?,
                TxnOutput::Done => done = true,
                TxnOutput::Connect | TxnOutput::Close => {}
            }
        }
        out.clear();
        if done {
            if let Some(iv) = &mut iv {
                iv.done(prev);
            }
            return Ok(p.samples());
        }
        conn.recv_msg(&mut buf[..resp]).map_err(|e| io_err(spec.chan, "receive response", e))?;
        progress.store(progress.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        let now = clock.now_ps();
        if let Some(iv) = &mut iv {
            iv.finished(prev, now);
        }
        prev = now;
        p.on(now, TxnInput::Arrived { bytes: resp as u64 }, &mut out);
    }
}

/// Answers requests on a persistent connection until it ends.
pub fn respond_rr(spec: &ChanSpec, conn: &mut DataConn, stop: &AtomicBool, progress: &AtomicU64) -> Result<(), String> {
    let mut r = TxnResponder::new(txn_spec(spec, 0, 0));
    let mut buf = vec![0u8; spec.max_message()];
    let req = spec.size as usize;
    let mut out = Vec::with_capacity(2);
    let mut steps = 0u64;
    loop {
        if !recv_until_stop(conn, &mut buf[..req], stop, spec.chan, "receive request")? {
            return Ok(());
        }
        steps += 1;
        progress.store(steps, Ordering::Relaxed);
        r.on(TxnInput::Arrived { bytes: req as u64 }, &mut out);
        for o in &out {
            if let TxnOutput::Send { bytes } = *o {
                conn.send_msg(&buf[..bytes as usize]).map_err(|e| io_err(spec.chan, "send response", e))?;
            }
        }
        out.clear();
    }
}

fn connect(t: &Target, sockbuf: u32) -> std::io::Result<DataConn> {
    let c = match t {
        Target::Tcp(a) => DataConn::Tcp(TcpStream::connect_timeout(a, Duration::from_secs(5))?),
        Target::Unix(p) => DataConn::Unix(UnixStream::connect(p)?),
    };
    c.tune(sockbuf);
    // A connection lives for one transaction: a timeout costs little here, and there is no
    // watchdog handle for it.
    c.set_read_timeout(Some(Duration::from_secs(10)))?;
    Ok(c)
}

/// Connect or connect/request/response/close transactions for one phase.
pub fn initiate_connecting(
    spec: &ChanSpec,
    phase: &Phase,
    target: &Target,
    sockbuf: u32,
    clock: &Clock,
    buf: &mut [u8],
    progress: &AtomicU64,
) -> Result<Samples, String> {
    let mut p = TxnInitiator::new(txn_spec(spec, phase.warmup, phase.iterations));
    let mut out = Vec::with_capacity(2);
    let mut conn: Option<DataConn> = None;
    p.on(clock.now_ps(), TxnInput::Start, &mut out);
    let resp = spec.response_size as usize;
    loop {
        let Some(o) = out.pop() else {
            return Err(format!("channel {}: transaction program stalled", spec.chan));
        };
        debug_assert!(out.is_empty());
        let input = match o {
            TxnOutput::Connect => {
                conn = Some(connect(target, sockbuf).map_err(|e| io_err(spec.chan, "connect", e))?);
                TxnInput::Connected
            }
            TxnOutput::Send { bytes } => {
                let c = conn.as_mut().ok_or_else(|| format!("channel {}: send without a connection", spec.chan))?;
                c.send_msg(&buf[..bytes as usize]).map_err(|e| io_err(spec.chan, "send request", e))?;
                c.recv_msg(&mut buf[..resp]).map_err(|e| io_err(spec.chan, "receive response", e))?;
                TxnInput::Arrived { bytes: resp as u64 }
            }
            TxnOutput::Close => {
                if let Some(mut c) = conn.take() {
                    if spec.base == BaseCode::Crr {
                        // The responder closes first; wait for its end of stream.
                        let mut b = [0u8; 1];
                        let _ = c.recv_some(&mut b);
                    }
                }
                TxnInput::Closed
            }
            TxnOutput::Done => return Ok(p.samples()),
        };
        progress.store(progress.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        p.on(clock.now_ps(), input, &mut out);
    }
}

/// Serves connect-per-transaction channels: accepts, answers (CRR: reads the request,
/// writes the response, closes first), until `stop` is set and the listener is woken.
pub fn serve_connecting(spec: &ChanSpec, listener: &Listener, sockbuf: u32, stop: &AtomicBool, progress: &AtomicU64) -> Result<(), String> {
    let mut r = TxnResponder::new(txn_spec(spec, 0, 0));
    let mut buf = vec![0u8; spec.max_message()];
    let mut out = Vec::with_capacity(2);
    loop {
        let accepted = listener.accept();
        if stop.load(Ordering::Relaxed) {
            return Ok(());
        }
        let mut c = match accepted {
            Ok(c) => c,
            Err(e) => return Err(format!("accept: {e}")),
        };
        progress.store(progress.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        c.tune(sockbuf);
        let _ = c.set_read_timeout(Some(Duration::from_secs(10)));
        let req = r.request_bytes() as usize;
        if req > 0 {
            if c.recv_msg(&mut buf[..req]).is_err() {
                continue;
            }
            r.on(TxnInput::Arrived { bytes: req as u64 }, &mut out);
        } else {
            r.on(TxnInput::Connected, &mut out);
        }
        for o in out.drain(..) {
            match o {
                TxnOutput::Send { bytes } => {
                    let _ = c.send_msg(&buf[..bytes as usize]);
                }
                TxnOutput::Close => break,
                _ => {}
            }
        }
        drop(c);
    }
}

/// A TCP or Unix listener.
pub enum Listener {
    Tcp(std::net::TcpListener),
    Unix(std::os::unix::net::UnixListener),
}

impl Listener {
    pub fn accept(&self) -> std::io::Result<DataConn> {
        Ok(match self {
            Listener::Tcp(l) => DataConn::Tcp(l.accept()?.0),
            Listener::Unix(l) => DataConn::Unix(l.accept()?.0),
        })
    }
}

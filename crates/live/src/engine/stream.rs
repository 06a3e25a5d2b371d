//! Streaming bandwidth: [`StreamSender`] posts back-to-back writes; the receiver logs
//! arrivals in a shared [`StreamReceiver`] that the control side measures between the
//! sender's marks.

use super::{io_err, ChanSpec, SharedReceiver};
use crate::clock::Clock;
use crate::conn::{is_clean_close, is_timeout, DataConn};
use crate::proto::Phase;
use interlab_patterns::{Input, Output, Samples, StreamSender, StreamSpec, TAG_DATA};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Read buffer of stream receivers, bytes.
pub const RECV_BUF: usize = 256 * 1024;

/// Sends for the phase's warm-up + duration; returns the sender's view and the byte offsets
/// (from the start of this phase) bounding the measured part.
pub fn send(spec: &ChanSpec, phase: &Phase, conn: &mut DataConn, clock: &Clock, buf: &[u8], progress: &AtomicU64) -> Result<(Samples, (u64, u64)), String> {
    let sspec = StreamSpec { size: spec.size, warmup_ps: phase.warmup_ps, duration_ps: phase.duration_ps };
    let mut s = StreamSender::new(sspec, spec.chan);
    let mut out = Vec::with_capacity(2);
    s.on(clock.now_ps(), Input::Start, &mut out);
    let msg = &buf[..spec.size as usize];
    loop {
        let mut posted = false;
        for o in &out {
            match *o {
                Output::Post(_) => {
                    match conn.send_msg(msg) {
                        Ok(()) => {}
                        // UDP: a full socket buffer or a receiver not yet there; the datagram
                        // is lost and counted as such by the receiver.
                        Err(e) if conn.is_datagram() && e.raw_os_error() == Some(libc::ECONNREFUSED) => {}
                        Err(e) => return Err(io_err(spec.chan, "send", e)),
                    }
                    posted = true;
                }
                Output::Done => {}
            }
        }
        out.clear();
        if !posted {
            return Ok((s.samples(), s.marks()));
        }
        progress.store(progress.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        s.on(clock.now_ps(), Input::Completed { chan: spec.chan, tag: TAG_DATA }, &mut out);
    }
}

/// Receives until the connection ends (Ok) or fails, logging arrivals.
pub fn receive(conn: &mut DataConn, clock: &Clock, recv: &SharedReceiver, stop: &AtomicBool, progress: &AtomicU64) -> Result<(), String> {
    let mut buf = vec![0u8; RECV_BUF];
    let mut reads = 0u64;
    loop {
        match conn.recv_some(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => {
                reads += 1;
                progress.store(reads, Ordering::Relaxed);
                let now = clock.now_ps();
                if let Ok(mut r) = recv.lock() {
                    r.on(now, Input::Arrived { chan: 0, bytes: n as u64, tag: TAG_DATA });
                }
            }
            Err(e) if is_clean_close(&e) => return Ok(()),
            Err(e) if is_timeout(&e) && conn.is_datagram() => {
                if stop.load(Ordering::Relaxed) {
                    return Ok(());
                }
            }
            Err(_) if stop.load(Ordering::Relaxed) => return Ok(()),
            Err(e) => return Err(io_err(0, "receive", e)),
        }
    }
}

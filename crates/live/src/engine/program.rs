//! Ping-pong and windowed bandwidth over a data connection: the very [`Program`] state
//! machines the model runs, with `Op::Send` turned into socket writes. The framing needs no
//! header: on a channel the initiator sends data messages of `size` bytes; the responder
//! answers each with `size` bytes (ping-pong) or each window with a `REPLY_BYTES` reply.

use super::{io_err, recv_until_stop, ChanSpec, InitExtras, LatencyIntervals};
use crate::clock::Clock;
use crate::conn::DataConn;
use crate::proto::Phase;
use interlab_patterns::{Input, Output, PatternKind, Program, Role, Samples, REPLY_BYTES, TAG_DATA, TAG_REPLY};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Runs one initiator program for a phase; returns what it measured.
pub fn initiate(spec: &ChanSpec, phase: &Phase, conn: &mut DataConn, clock: &Clock, buf: &mut [u8], progress: &AtomicU64, extras: &InitExtras) -> Result<Samples, String> {
    let pspec = spec.pattern(phase.warmup, phase.iterations);
    let mut prog = Program::new(pspec, Role::Initiator, spec.chan);
    // What arrives back: the echoed message, or the window's reply.
    let (expect, tag) = if pspec.kind == PatternKind::Latency { (pspec.size as usize, TAG_DATA) } else { (REPLY_BYTES as usize, TAG_REPLY) };
    // Grows to one window of posts (the window is bounded where it enters).
    let mut out = Vec::with_capacity((pspec.window as usize).min(1024) + 2);
    // `--interval` (ping-pong only): each arrival ends the iteration posted at the previous input.
    let mut iv = if pspec.kind == PatternKind::Latency { LatencyIntervals::new(extras, phase, true) } else { None };
    let mut prev = clock.now_ps();
    prog.on(prev, Input::Start, &mut out);
    let mut steps = progress.load(Ordering::Relaxed);
    loop {
        let mut done = false;
        for o in &out {
            match *o {
                Output::Post(m) => conn.send_msg(&buf[..m.bytes as usize]).map_err(|e| io_err(spec.chan, "send", e))?,
                Output::Done => done = true,
            }
        }
        out.clear();
        if done {
            if let Some(iv) = &mut iv {
                iv.done(prev);
            }
            return Ok(prog.samples());
        }
        conn.recv_msg(&mut buf[..expect]).map_err(|e| io_err(spec.chan, "receive", e))?;
        steps += 1;
        progress.store(steps, Ordering::Relaxed);
        let now = clock.now_ps();
        if let Some(iv) = &mut iv {
            iv.finished(prev, now);
        }
        prev = now;
        prog.on(now, Input::Arrived { chan: spec.chan, bytes: expect as u64, tag }, &mut out);
    }
}

/// Answers as the responder program says until the connection ends cleanly (Ok) or fails.
pub fn respond(spec: &ChanSpec, conn: &mut DataConn, stop: &AtomicBool, progress: &AtomicU64) -> Result<(), String> {
    let mut prog = Program::new(spec.pattern(0, 1), Role::Responder, spec.chan);
    let mut buf = vec![0u8; spec.max_message()];
    let size = spec.size as usize;
    let mut out = Vec::with_capacity(2);
    let mut steps = 0u64;
    loop {
        if !recv_until_stop(conn, &mut buf[..size], stop, spec.chan, "receive")? {
            return Ok(());
        }
        steps += 1;
        progress.store(steps, Ordering::Relaxed);
        prog.on(0, Input::Arrived { chan: spec.chan, bytes: spec.size, tag: TAG_DATA }, &mut out);
        for o in &out {
            if let Output::Post(m) = *o {
                conn.send_msg(&buf[..m.bytes as usize]).map_err(|e| io_err(spec.chan, "send", e))?;
            }
        }
        out.clear();
    }
}

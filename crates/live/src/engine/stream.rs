//! Streaming bandwidth: [`StreamSender`] posts back-to-back writes; the receiver logs
//! arrivals in a shared [`StreamReceiver`] that the control side measures between the
//! sender's marks.

use super::{io_err, ChanSpec, InitExtras, IntervalTick, SharedReceiver};
use crate::clock::{Clock, PS_PER_S};
use crate::conn::{is_clean_close, is_timeout, DataConn};
use crate::proto::Phase;
use interlab_patterns::{Input, Output, Samples, StreamSender, StreamSpec, TAG_DATA};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Read buffer of stream receivers, bytes.
pub const RECV_BUF: usize = 256 * 1024;

/// Sends for the phase's warm-up + duration; returns the sender's view and the byte offsets
/// (from the start of this phase) bounding the measured part.
/// With `extras.rate_bps`, paces the sender (message k leaves k * size * 8 / rate seconds
/// after the start); with `extras.interval_ps`, reports each interval of the measured part.
pub fn send(spec: &ChanSpec, phase: &Phase, conn: &mut DataConn, clock: &Clock, buf: &[u8], progress: &AtomicU64, extras: &InitExtras) -> Result<(Samples, (u64, u64)), String> {
    let sspec = StreamSpec { size: spec.size, warmup_ps: phase.warmup_ps, duration_ps: phase.duration_ps };
    let mut s = StreamSender::new(sspec, spec.chan);
    let mut out = Vec::with_capacity(2);
    let t0 = clock.now_ps();
    s.on(t0, Input::Start, &mut out);
    let mut iv = IntervalClock::new(extras, phase, t0);
    let msg = &buf[..spec.size as usize];
    let mut sent: u64 = 0;
    loop {
        let mut posted = false;
        for o in &out {
            match *o {
                Output::Post(_) => {
                    if extras.rate_bps > 0 {
                        // Never past the end of the phase: a rate too low for one more
                        // message sends it at the end, and the sender stops.
                        let end = t0.saturating_add(phase.warmup_ps).saturating_add(phase.duration_ps);
                        wait_until(clock, t0.saturating_add(pace_offset_ps(sent, extras.rate_bps)).min(end));
                    }
                    sent += spec.size;
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
        let now = clock.now_ps();
        s.on(now, Input::Completed { chan: spec.chan, tag: TAG_DATA, at: now }, &mut out);
        iv.completed(now, sent, s.is_done());
    }
}

/// When a paced sender may post the message that follows `bytes_before` bytes, picoseconds
/// after it started: `bytes_before * 8 / rate_bps` seconds (so over any stretch it sends at
/// `rate_bps`, never faster; a late sender catches up without waiting).
pub fn pace_offset_ps(bytes_before: u64, rate_bps: u64) -> u64 {
    if rate_bps == 0 {
        return 0;
    }
    let ps = bytes_before as u128 * 8 * PS_PER_S as u128 / rate_bps as u128;
    ps.min(u64::MAX as u128) as u64
}

/// Below this much time left the sender spins (yielding) instead of sleeping: the kernel's
/// sleep overshoots by tens of microseconds.
const SPIN_PS: u64 = 100_000_000;

/// Waits until the clock reads `deadline_ps`: sleeps while the deadline is far, yields the CPU
/// for the last [`SPIN_PS`] (so a low rate does not burn a core).
fn wait_until(clock: &Clock, deadline_ps: u64) {
    loop {
        let now = clock.now_ps();
        if now >= deadline_ps {
            return;
        }
        let left = deadline_ps - now;
        if left > SPIN_PS {
            std::thread::sleep(std::time::Duration::from_nanos((left - SPIN_PS) / 1000));
        } else {
            std::thread::yield_now();
        }
    }
}

/// Number of reporting intervals of a measured time: the last one may be shorter (and
/// takes the sender's overshoot past the end).
pub fn interval_count(duration_ps: u64, interval_ps: u64) -> u64 {
    if interval_ps == 0 {
        return 0;
    }
    duration_ps.div_ceil(interval_ps).max(1)
}

/// Splits a sender's measured part into intervals: the measured part starts, as in
/// [`StreamSender`], at the first completion at or after the warm-up; a completion that
/// crosses an interval boundary closes that interval with every byte completed so far, so
/// the intervals' bytes add up to exactly the sender's measured bytes (its marks).
struct IntervalClock<'a> {
    extras: &'a InitExtras,
    phase: u32,
    warmup_ps: u64,
    t_start: u64,
    count: u64,
    /// Start of the measured part (time, bytes).
    measuring: Option<u64>,
    index: u64,
    last_bytes: u64,
}

impl<'a> IntervalClock<'a> {
    fn new(extras: &'a InitExtras, phase: &Phase, t_start: u64) -> Self {
        let count = if extras.intervals.is_some() { interval_count(phase.duration_ps, extras.interval_ps) } else { 0 };
        let measuring = (phase.warmup_ps == 0).then_some(t_start);
        IntervalClock { extras, phase: phase.id, warmup_ps: phase.warmup_ps, t_start, count, measuring, index: 0, last_bytes: 0 }
    }

    fn emit(&mut self, start_ps: u64, end_ps: u64, bytes: u64) {
        if let Some(tx) = &self.extras.intervals {
            let _ = tx.send(IntervalTick { source: self.extras.source, phase: self.phase, index: self.index as u32, start_ps, end_ps, bytes: bytes - self.last_bytes, samples: 0, sum_ps: 0 });
        }
        self.last_bytes = bytes;
        self.index += 1;
    }

    fn completed(&mut self, now: u64, bytes: u64, done: bool) {
        if self.count == 0 {
            return;
        }
        let every = self.extras.interval_ps;
        let Some(tm) = self.measuring else {
            if now.saturating_sub(self.t_start) >= self.warmup_ps {
                self.measuring = Some(now);
                self.last_bytes = bytes;
                if done {
                    while self.index < self.count {
                        self.emit(0, 0, bytes);
                    }
                }
            }
            return;
        };
        let rel = now.saturating_sub(tm);
        while self.index + 1 < self.count && rel >= (self.index + 1) * every {
            self.emit(self.index * every, (self.index + 1) * every, bytes);
        }
        if done {
            while self.index < self.count {
                let start = self.index * every;
                self.emit(start, rel.max(start), bytes);
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pacing_arithmetic() {
        // 100 Mbit/s: 1250 bytes take 100 us.
        assert_eq!(pace_offset_ps(1250, 100_000_000), 100_000_000);
        assert_eq!(pace_offset_ps(0, 1), 0);
        assert_eq!(pace_offset_ps(123, 0), 0);
        // 50 Mbit/s over 2 s is 12.5 MB: the message after 12.5 MB leaves at 2 s.
        assert_eq!(pace_offset_ps(12_500_000, 50_000_000), 2 * PS_PER_S);
        // No overflow at the extremes.
        assert_eq!(pace_offset_ps(u64::MAX, 1), u64::MAX);
        assert!(pace_offset_ps(u64::MAX, u64::MAX) > 0);
    }

    #[test]
    fn paced_waits_sleep_then_land_on_time() {
        let c = Clock::default();
        let t = c.now_ps() + 5 * 1_000_000_000; // 5 ms
        let cpu0 = std::time::Instant::now();
        wait_until(&c, t);
        assert!(c.now_ps() >= t);
        assert!(cpu0.elapsed() < std::time::Duration::from_millis(100));
    }

    #[test]
    fn intervals_add_up_to_the_measured_bytes() {
        assert_eq!(interval_count(2_000, 500), 4);
        assert_eq!(interval_count(2_100, 500), 5);
        assert_eq!(interval_count(100, 500), 1);
        let (tx, rx) = std::sync::mpsc::channel();
        let extras = InitExtras { interval_ps: 500, intervals: Some(tx), source: 7, ..Default::default() };
        let phase = Phase { id: 3, warmup: 0, iterations: 0, warmup_ps: 300, duration_ps: 2_000 };
        // A sender completing 10 bytes every 70 ps, as the stream program decides.
        let sspec = StreamSpec { size: 10, warmup_ps: 300, duration_ps: 2_000 };
        let mut s = StreamSender::new(sspec, 0);
        let mut out = vec![];
        s.on(0, Input::Start, &mut out);
        let mut iv = IntervalClock::new(&extras, &phase, 0);
        let (mut t, mut sent) = (0, 0);
        while !s.is_done() {
            t += 70;
            sent += 10;
            out.clear();
            s.on(t, Input::Completed { chan: 0, tag: TAG_DATA, at: t }, &mut out);
            iv.completed(t, sent, s.is_done());
        }
        drop(iv);
        let ticks: Vec<IntervalTick> = rx.try_iter().collect();
        assert_eq!(ticks.len(), 4);
        assert!(ticks.iter().enumerate().all(|(i, k)| k.index == i as u32 && k.source == 7 && k.phase == 3));
        let (from, to) = s.marks();
        assert_eq!(ticks.iter().map(|k| k.bytes).sum::<u64>(), to - from);
        assert_eq!((ticks[1].start_ps, ticks[1].end_ps), (500, 1000));
        assert!(ticks[3].end_ps >= 1500);
    }
}

//! Streaming bandwidth (as netperf `TCP_STREAM` and iperf3 do): the sender posts messages
//! back to back for a warm-up time plus a measured time, with no replies; the receiver logs
//! when bytes arrive, and the bandwidth is measured at the receiver between the byte offsets
//! the sender had reached when its warm-up ended and when it stopped.
//!
//! Both programs are sans-IO, like [`crate::Program`]: the engine feeds them inputs stamped
//! with its clock in picoseconds.

use crate::{Input, Message, Op, Output, Samples, TAG_DATA};

/// One streaming point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamSpec {
    /// Bytes per posted message (the write size).
    pub size: u64,
    /// Sending time before measuring starts, picoseconds.
    pub warmup_ps: u64,
    /// Measured sending time, picoseconds.
    pub duration_ps: u64,
}

/// The sending side: posts `size`-byte messages until warm-up + duration have elapsed. The
/// engine answers every post with [`Input::Completed`] once the message has been handed to
/// the transport (a blocking write returned).
#[derive(Debug, Clone)]
pub struct StreamSender {
    spec: StreamSpec,
    chan: u32,
    t_start: u64,
    t_measure: Option<u64>,
    t_end: u64,
    bytes: u64,
    bytes_at_measure: u64,
    messages_at_measure: u64,
    messages: u64,
    done: bool,
}

impl StreamSender {
    /// A sender on channel `chan`.
    pub fn new(spec: StreamSpec, chan: u32) -> Self {
        StreamSender { spec, chan, t_start: 0, t_measure: None, t_end: 0, bytes: 0, bytes_at_measure: 0, messages_at_measure: 0, messages: 0, done: false }
    }

    fn data(&self) -> Message {
        Message { chan: self.chan, bytes: self.spec.size, op: Op::Send, tag: TAG_DATA }
    }

    /// True once the sender has stopped.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Feeds one input at engine time `now` (picoseconds).
    pub fn on(&mut self, now: u64, input: Input, out: &mut Vec<Output>) {
        if self.done {
            return;
        }
        match input {
            Input::Start => {
                self.t_start = now;
                if self.spec.warmup_ps == 0 {
                    self.t_measure = Some(now);
                }
                out.push(Output::Post(self.data()));
            }
            Input::Completed { tag: TAG_DATA, .. } => {
                self.bytes += self.spec.size;
                self.messages += 1;
                let since = now.saturating_sub(self.t_start);
                if self.t_measure.is_none() && since >= self.spec.warmup_ps {
                    self.t_measure = Some(now);
                    self.bytes_at_measure = self.bytes;
                    self.messages_at_measure = self.messages;
                }
                if since >= self.spec.warmup_ps.saturating_add(self.spec.duration_ps) {
                    self.done = true;
                    self.t_end = now;
                    out.push(Output::Done);
                } else {
                    out.push(Output::Post(self.data()));
                }
            }
            _ => {}
        }
    }

    /// Byte offsets (from this program's start) that bound the measured part: the receiver
    /// measures from `.0` to `.1`.
    pub fn marks(&self) -> (u64, u64) {
        (self.bytes_at_measure, self.bytes)
    }

    /// The sender's own view (bytes handed to the transport over the measured time); the
    /// receiver's view ([`StreamReceiver::measure`]) is the one reported.
    pub fn samples(&self) -> Samples {
        let start = self.t_measure.unwrap_or(self.t_end);
        Samples::Bandwidth {
            bytes: self.bytes - self.bytes_at_measure,
            elapsed_ps: self.t_end.saturating_sub(start),
            messages: self.messages - self.messages_at_measure,
        }
    }
}

/// The receiving side: logs (cumulative bytes, time) as data arrives. To bound memory the
/// log keeps at most one point per `resolution_ps` (the latest arrival in that interval), so
/// a measured interval is exact in bytes and within `resolution_ps` in time; and at most
/// [`MAX_LOG_POINTS`] points (16 bytes each): beyond that every other point is dropped and
/// the resolution doubles, however long data keeps arriving between measurements.
#[derive(Debug, Clone)]
pub struct StreamReceiver {
    resolution_ps: u64,
    total: u64,
    log: Vec<(u64, u64)>,
    last_push: u64,
}

/// Most points a [`StreamReceiver`] log holds (16 MiB).
pub const MAX_LOG_POINTS: usize = 1 << 20;

impl StreamReceiver {
    /// A receiver logging at most one point per `resolution_ps` picoseconds.
    pub fn new(resolution_ps: u64) -> Self {
        StreamReceiver { resolution_ps, total: 0, log: Vec::new(), last_push: 0 }
    }

    /// Suggested log resolution for a run of `run_ps` picoseconds: at most ~200 000 points,
    /// never coarser than needed (1 us minimum).
    pub fn resolution_for(run_ps: u64) -> u64 {
        (run_ps / 200_000).max(1_000_000)
    }

    /// Changes the log resolution (between phases).
    pub fn set_resolution(&mut self, resolution_ps: u64) {
        self.resolution_ps = resolution_ps;
    }

    /// Feeds one input at `now` (picoseconds). Only [`Input::Arrived`] matters; `bytes` may
    /// be any amount (a stream read returns what is there).
    pub fn on(&mut self, now: u64, input: Input) {
        if let Input::Arrived { bytes, .. } = input {
            self.total = self.total.saturating_add(bytes);
            match self.log.last_mut() {
                Some(last) if now.saturating_sub(self.last_push) < self.resolution_ps => *last = (self.total, now),
                _ => {
                    if self.log.len() >= MAX_LOG_POINTS {
                        self.coarsen();
                    }
                    self.log.push((self.total, now));
                    self.last_push = now;
                }
            }
        }
    }

    /// Halves the log (keeps every other point, and the last) and doubles the resolution.
    fn coarsen(&mut self) {
        let last = self.log.last().copied();
        let mut k = 0;
        self.log.retain(|_| {
            k += 1;
            k % 2 == 0
        });
        if let (Some(l), Some(now_last)) = (last, self.log.last()) {
            if *now_last != l {
                self.log.push(l);
            }
        }
        self.resolution_ps = self.resolution_ps.saturating_mul(2).max(1);
    }

    /// Bytes received since this receiver was created.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Bandwidth measured here between absolute byte offsets `from` and `to` (as counted by
    /// [`StreamReceiver::total`]). If fewer than `to` bytes arrived (datagrams lost), measures
    /// up to the last arrival. None if nothing arrived after `from`.
    pub fn measure(&self, from: u64, to: u64) -> Option<Samples> {
        let i = self.log.iter().position(|&(b, _)| b >= from.max(1))?;
        let j = self.log.iter().position(|&(b, _)| b >= to).unwrap_or(self.log.len() - 1);
        let (b0, t0) = self.log[i];
        let (b1, t1) = self.log[j];
        // When the warm-up mark is 0, the first logged arrival starts the clock; its bytes
        // are not counted (they arrived before the interval began).
        if j <= i || t1 <= t0 {
            return None;
        }
        Some(Samples::Bandwidth { bytes: b1 - b0, elapsed_ps: t1 - t0, messages: 0 })
    }

    /// Forgets log points before absolute byte offset `upto` (after a phase was measured).
    pub fn forget_before(&mut self, upto: u64) {
        let keep = self.log.iter().position(|&(b, _)| b >= upto).unwrap_or(self.log.len());
        // Keep one point before `upto` so a following interval can start there.
        let cut = keep.saturating_sub(1);
        self.log.drain(..cut);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sender_stops_after_warmup_plus_duration() {
        let spec = StreamSpec { size: 100, warmup_ps: 1_000, duration_ps: 4_000 };
        let mut s = StreamSender::new(spec, 0);
        let mut out = Vec::new();
        s.on(0, Input::Start, &mut out);
        let mut t = 0;
        let mut posts = 1;
        while !s.is_done() {
            t += 500;
            out.clear();
            s.on(t, Input::Completed { chan: 0, tag: TAG_DATA, at: t }, &mut out);
            posts += out.iter().filter(|o| matches!(o, Output::Post(_))).count();
        }
        assert_eq!(t, 5_000);
        // Completions at 500, 1000 (warm-up ends: 2 messages), ..., 5000 (10 messages).
        assert_eq!(s.marks(), (200, 1000));
        assert_eq!(posts, 10);
        match s.samples() {
            Samples::Bandwidth { bytes, elapsed_ps, messages } => {
                assert_eq!((bytes, elapsed_ps, messages), (800, 4_000, 8));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn receiver_measures_between_marks() {
        let mut r = StreamReceiver::new(1);
        for k in 1..=10u64 {
            r.on(k * 1000, Input::Arrived { chan: 0, bytes: 100, tag: TAG_DATA });
        }
        match r.measure(200, 1000).unwrap() {
            Samples::Bandwidth { bytes, elapsed_ps, .. } => assert_eq!((bytes, elapsed_ps), (800, 8000)),
            other => panic!("{other:?}"),
        }
        // Lost tail: measures up to the last arrival.
        match r.measure(200, 5000).unwrap() {
            Samples::Bandwidth { bytes, .. } => assert_eq!(bytes, 800),
            other => panic!("{other:?}"),
        }
        r.forget_before(900);
        assert!(r.measure(900, 1000).is_some());
        assert!(r.measure(2000, 3000).is_none());
    }

    #[test]
    fn receiver_log_is_bounded_however_long_data_arrives() {
        let mut r = StreamReceiver::new(1);
        for t in 0..(3 * MAX_LOG_POINTS as u64) {
            r.on(t * 10, Input::Arrived { chan: 0, bytes: 1, tag: TAG_DATA });
        }
        assert!(r.log.len() <= MAX_LOG_POINTS, "{}", r.log.len());
        assert_eq!(r.total(), 3 * MAX_LOG_POINTS as u64);
        // Still measures, exact in bytes at the logged points.
        assert!(r.measure(1, r.total()).is_some());
    }

    #[test]
    fn receiver_log_is_bounded_by_resolution() {
        let mut r = StreamReceiver::new(1_000_000);
        for k in 0..100_000u64 {
            r.on(k * 1000, Input::Arrived { chan: 0, bytes: 1, tag: TAG_DATA });
        }
        assert!(r.log.len() <= 101, "{}", r.log.len());
        assert_eq!(r.total(), 100_000);
        assert_eq!(StreamReceiver::resolution_for(1_000_000_000_000), 5_000_000);
    }
}

//! Drivers: run the sans-IO pattern programs of `interlab_patterns` over data connections.
//! The same drivers serve both ends (the `live` client and the `serve` daemon): an
//! initiator runs one program per phase, a responder answers until its connection ends.

pub mod program;
pub mod stream;
pub mod txn;

use crate::clock::Clock;
use crate::conn::DataConn;
use crate::proto::{BaseCode, Phase};
use interlab_patterns::{PatternKind, PatternSpec, Op, Samples, StreamReceiver};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::{Arc, Mutex};

/// What a channel runs, the same on both ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChanSpec {
    pub chan: u32,
    pub base: BaseCode,
    /// Message (request) size, bytes.
    pub size: u64,
    /// Response size, bytes (rr, crr).
    pub response_size: u64,
    /// Messages per window.
    pub window: u32,
}

impl ChanSpec {
    /// The `Program` spec for ping-pong and windowed channels.
    pub fn pattern(&self, warmup: u32, iterations: u32) -> PatternSpec {
        let kind = if self.base == BaseCode::PingPong { PatternKind::Latency } else { PatternKind::Bandwidth };
        PatternSpec { kind, op: Op::Send, size: self.size, window: self.window, warmup, iterations }
    }

    /// Largest message either side of this channel sends or receives, bytes.
    pub fn max_message(&self) -> usize {
        self.size.max(self.response_size).max(interlab_patterns::REPLY_BYTES) as usize
    }
}

/// What an initiator reports after a phase.
#[derive(Debug, Clone)]
pub struct InitResult {
    pub chan: u32,
    pub samples: Samples,
    /// Stream senders: absolute byte offsets on the connection bounding the measured part.
    pub marks: Option<(u64, u64)>,
    pub error: Option<String>,
}

/// What a client-side initiator does beyond its program: pace a stream, report its
/// intervals, run pinned to a CPU. The daemon's initiators use the default (none of it).
#[derive(Debug, Clone, Default)]
pub struct InitExtras {
    /// Stream senders: target sending rate, bit/s (0: as fast as the transport takes it).
    pub rate_bps: u64,
    /// Stream senders: length of a reporting interval, picoseconds (0: no intervals).
    pub interval_ps: u64,
    /// Where stream senders report each finished interval.
    pub intervals: Option<Sender<IntervalTick>>,
    /// Which initiator of the point this is (identifies its ticks).
    pub source: u32,
    /// Pin the thread to this CPU.
    pub cpu: Option<usize>,
}

/// One finished reporting interval of one stream sender, in the sender's view (bytes handed
/// to the transport). Times are from the start of the measured part of the phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IntervalTick {
    pub source: u32,
    pub phase: u32,
    pub index: u32,
    pub start_ps: u64,
    pub end_ps: u64,
    /// Streams: bytes completed in the interval.
    pub bytes: u64,
    /// Latency-like channels: samples finished in the interval and their sum, picoseconds.
    pub samples: u64,
    pub sum_ps: u64,
}

/// Most intervals one initiator reports per phase; later ones are folded into the last.
pub const MAX_INTERVALS: u64 = 100_000;

/// Splits the samples of a ping-pong or request/response initiator into intervals of wall
/// time: a sample belongs to the interval in which it finished; the measured part starts when
/// the first measured iteration was posted. Sums the samples as the program computes them
/// (round trip / 2 for ping-pong, the transaction time for rr), so the intervals hold exactly
/// the program's samples.
pub struct LatencyIntervals<'a> {
    extras: &'a InitExtras,
    phase: u32,
    warmup: u32,
    halve: bool,
    seen: u32,
    t_measure: Option<u64>,
    index: u64,
    samples: u64,
    sum_ps: u64,
}

impl<'a> LatencyIntervals<'a> {
    /// None when the initiator reports no intervals.
    pub fn new(extras: &'a InitExtras, phase: &Phase, halve: bool) -> Option<Self> {
        (extras.intervals.is_some() && extras.interval_ps > 0).then_some(LatencyIntervals {
            extras,
            phase: phase.id,
            warmup: phase.warmup,
            halve,
            seen: 0,
            t_measure: None,
            index: 0,
            samples: 0,
            sum_ps: 0,
        })
    }

    fn emit(&mut self, end_ps: u64) {
        if self.samples > 0 {
            if let Some(tx) = &self.extras.intervals {
                let every = self.extras.interval_ps;
                let start_ps = self.index * every;
                let _ = tx.send(IntervalTick { source: self.extras.source, phase: self.phase, index: self.index as u32, start_ps, end_ps: end_ps.max(start_ps), bytes: 0, samples: self.samples, sum_ps: self.sum_ps });
            }
        }
        self.samples = 0;
        self.sum_ps = 0;
    }

    /// One iteration finished at `now`; it was posted at `posted`.
    pub fn finished(&mut self, posted: u64, now: u64) {
        self.seen = self.seen.saturating_add(1);
        if self.seen <= self.warmup {
            return;
        }
        let tm = *self.t_measure.get_or_insert(posted);
        let every = self.extras.interval_ps;
        let k = (now.saturating_sub(tm) / every).min(MAX_INTERVALS - 1);
        if k > self.index {
            self.emit((self.index + 1) * every);
            self.index = k;
        }
        let e = now.saturating_sub(posted);
        self.sum_ps += if self.halve { e / 2 } else { e };
        self.samples += 1;
    }

    /// The phase ended at `now`: reports the last interval.
    pub fn done(&mut self, now: u64) {
        if let Some(tm) = self.t_measure {
            self.emit(now.saturating_sub(tm));
        }
    }
}

/// Where connect-per-transaction channels connect.
#[derive(Debug, Clone)]
pub enum Target {
    Tcp(std::net::SocketAddr),
    Unix(PathBuf),
}

/// Spawns the initiator of one channel: it waits for phases on `phases` and answers each on
/// `results`, until `phases` closes or a phase fails. It stores a growing count in
/// `progress` as it goes (a plain store, no timer on the hot path), so a watchdog can tell
/// a stalled channel (a lost datagram, a vanished peer) and close its connection.
#[allow(clippy::too_many_arguments)]
pub fn spawn_initiator(
    spec: ChanSpec,
    progress: Arc<AtomicU64>,
    conn: Option<DataConn>,
    target: Option<Target>,
    sockbuf: u32,
    clock: Clock,
    phases: Receiver<Phase>,
    results: Sender<InitResult>,
    extras: InitExtras,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new().name(format!("init-{}", spec.chan)).spawn(move || {
        let pinned = extras.cpu.map(crate::cpu::pin_current_thread).unwrap_or(Ok(()));
        let mut conn = conn;
        let mut sent_total: u64 = 0;
        let mut buf = vec![0u8; spec.max_message().max(1)];
        let p = &*progress;
        while let Ok(phase) = phases.recv() {
            let r = match (spec.base, conn.as_mut()) {
                _ if pinned.is_err() => Err(pinned.clone().unwrap_err()),
                (BaseCode::PingPong | BaseCode::Windowed, Some(c)) => program::initiate(&spec, &phase, c, &clock, &mut buf, p, &extras).map(|s| (s, None)),
                (BaseCode::Stream, Some(c)) => stream::send(&spec, &phase, c, &clock, &buf, p, &extras).map(|(s, (from, to))| {
                    let marks = (sent_total + from, sent_total + to);
                    sent_total += to;
                    (s, Some(marks))
                }),
                (BaseCode::Rr, Some(c)) => txn::initiate_rr(&spec, &phase, c, &clock, &mut buf, p, &extras).map(|s| (s, None)),
                (BaseCode::Connect | BaseCode::Crr, _) => match &target {
                    Some(t) => txn::initiate_connecting(&spec, &phase, t, sockbuf, &clock, &mut buf, p).map(|s| (s, None)),
                    None => Err("no connect target for a connect-per-transaction channel".into()),
                },
                _ => Err("no data connection for this channel".into()),
            };
            let failed = r.is_err();
            let res = match r {
                Ok((samples, marks)) => InitResult { chan: spec.chan, samples, marks, error: None },
                Err(e) => InitResult { chan: spec.chan, samples: Samples::None, marks: None, error: Some(e) },
            };
            if results.send(res).is_err() || failed {
                break;
            }
        }
    })
}

/// Shared state of a stream receiver, read by the control thread at the end of a phase.
pub type SharedReceiver = Arc<Mutex<StreamReceiver>>;

/// Spawns the responder of one channel; it runs until the connection ends or `stop` is set
/// (checked on read timeouts). Its final error, if any, is returned by the thread. Like an
/// initiator it stores a growing count in `progress` (messages or reads), which the daemon
/// reads to tell a live session from one that makes no progress.
pub fn spawn_responder(
    spec: ChanSpec,
    conn: DataConn,
    clock: Clock,
    stop: Arc<AtomicBool>,
    receiver: Option<SharedReceiver>,
    progress: Arc<AtomicU64>,
    cpu: Option<usize>,
) -> std::io::Result<std::thread::JoinHandle<Result<(), String>>> {
    std::thread::Builder::new().name(format!("resp-{}", spec.chan)).spawn(move || {
        if let Some(c) = cpu {
            crate::cpu::pin_current_thread(c)?;
        }
        let mut conn = conn;
        let p = &*progress;
        match spec.base {
            BaseCode::PingPong | BaseCode::Windowed => program::respond(&spec, &mut conn, &stop, p),
            BaseCode::Rr => txn::respond_rr(&spec, &mut conn, &stop, p),
            BaseCode::Stream => match receiver {
                Some(r) => stream::receive(&mut conn, &clock, &r, &stop, p),
                None => Err("stream responder without a receiver".into()),
            },
            BaseCode::Connect | BaseCode::Crr => Err("connect-per-transaction channels have no persistent responder".into()),
        }
    })
}

/// Maps an I/O error on a data connection to a message naming the channel.
/// A responder's receive: Ok(true) when a message arrived, Ok(false) when the peer closed
/// cleanly or the run was stopped; datagram timeouts are retried until then.
pub(crate) fn recv_until_stop(
    conn: &mut crate::conn::DataConn,
    buf: &mut [u8],
    stop: &std::sync::atomic::AtomicBool,
    chan: u32,
    what: &str,
) -> Result<bool, String> {
    use crate::conn::{is_clean_close, is_timeout};
    use std::sync::atomic::Ordering;
    loop {
        match conn.recv_msg(buf) {
            Ok(()) => return Ok(true),
            Err(e) if is_clean_close(&e) => return Ok(false),
            Err(e) if is_timeout(&e) && conn.is_datagram() => {
                if stop.load(Ordering::Relaxed) {
                    return Ok(false);
                }
            }
            Err(_) if stop.load(Ordering::Relaxed) => return Ok(false),
            Err(e) => return Err(io_err(chan, what, e)),
        }
    }
}

pub(crate) fn io_err(chan: u32, what: &str, e: std::io::Error) -> String {
    if crate::conn::is_timeout(&e) {
        format!("channel {chan}: {what}: no data within the timeout (peer stalled, or a datagram was lost)")
    } else {
        format!("channel {chan}: {what}: {e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_intervals_split_samples_by_finish_time() {
        let (tx, rx) = std::sync::mpsc::channel();
        let extras = InitExtras { interval_ps: 1_000, intervals: Some(tx), source: 2, ..Default::default() };
        let phase = Phase { id: 5, warmup: 2, iterations: 6, warmup_ps: 0, duration_ps: 0 };
        let mut iv = LatencyIntervals::new(&extras, &phase, true).unwrap();
        // Round trips of 400 ps back to back from t = 0: two warm-up, then six measured
        // (posted at 800, finished at 1200, 1600, ..., 3200).
        let mut t = 0;
        for _ in 0..8 {
            iv.finished(t, t + 400);
            t += 400;
        }
        iv.done(t);
        let ticks: Vec<IntervalTick> = rx.try_iter().collect();
        // Measured part from 800: samples finish 400, 800 | 1200, 1600 | 2000, 2400 after it.
        assert_eq!(ticks.iter().map(|k| k.samples).collect::<Vec<_>>(), vec![2, 2, 2]);
        assert!(ticks.iter().all(|k| k.sum_ps == k.samples * 200 && k.source == 2 && k.phase == 5));
        assert_eq!((ticks[1].start_ps, ticks[1].end_ps), (1_000, 2_000));
        assert_eq!((ticks[2].start_ps, ticks[2].end_ps), (2_000, 2_400));
        let none = InitExtras::default();
        assert!(LatencyIntervals::new(&none, &phase, true).is_none());
    }
}

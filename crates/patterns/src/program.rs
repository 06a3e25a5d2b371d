//! The pattern programs: ping-pong latency, operation latency, windowed bandwidth.

use serde::{Deserialize, Serialize};

/// The operation a message is carried by. Socket engines only know [`Op::Send`]; the verbs
/// model knows all of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    /// Two-sided send/receive (the receiver consumes a posted receive and a completion).
    Send,
    /// One-sided RDMA write; the receiver polls the last byte of the buffer.
    RdmaWrite,
    /// One-sided RDMA read: a request and a response; completes at the initiator.
    RdmaRead,
    /// Atomic fetch-and-add on 8 bytes.
    FetchAdd,
    /// Atomic compare-and-swap on 8 bytes.
    CmpSwap,
}

impl Op {
    /// All operations, in display order.
    pub const ALL: [Op; 5] = [Op::Send, Op::RdmaWrite, Op::RdmaRead, Op::FetchAdd, Op::CmpSwap];

    /// Spec/CLI name.
    pub fn name(self) -> &'static str {
        match self {
            Op::Send => "send",
            Op::RdmaWrite => "rdma_write",
            Op::RdmaRead => "rdma_read",
            Op::FetchAdd => "fetch_add",
            Op::CmpSwap => "cmp_swap",
        }
    }

    /// Parses a spec/CLI name.
    pub fn from_name(s: &str) -> Option<Op> {
        Op::ALL.into_iter().find(|o| o.name() == s)
    }

    /// True for operations that complete at the initiator after a response (read, atomics):
    /// the target's process takes no part.
    pub fn is_request_response(self) -> bool {
        matches!(self, Op::RdmaRead | Op::FetchAdd | Op::CmpSwap)
    }
}

/// Tag of data messages.
pub const TAG_DATA: u32 = 0;
/// Tag of the small reply that closes a bandwidth window.
pub const TAG_REPLY: u32 = 1;
/// Size of that reply in bytes (OSU and the pcie study use a small message).
pub const REPLY_BYTES: u64 = 4;

/// A message a program asks its engine to carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Message {
    /// Logical channel (the engine maps it to a connection, QP or set of ports).
    pub chan: u32,
    /// Payload in bytes.
    pub bytes: u64,
    /// Carrying operation.
    pub op: Op,
    /// [`TAG_DATA`] or [`TAG_REPLY`].
    pub tag: u32,
}

/// What the engine tells a program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Input {
    /// The run begins.
    Start,
    /// A message from the peer was seen complete by this process.
    Arrived { chan: u32, bytes: u64, tag: u32 },
    /// An operation this process posted completed locally (read and atomics: the data is back).
    /// `at`: when it completed where it happened, ps (the model: when the adapter's completion
    /// entry was in memory, which a busy CPU may take later; engines without that distinction
    /// give the time they report it).
    Completed { chan: u32, tag: u32, at: u64 },
}

/// What a program asks of the engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// Post this message.
    Post(Message),
    /// This program has finished measuring.
    Done,
}

/// Which pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PatternKind {
    /// Ping-pong (send, RDMA write: one-way = round trip / 2) or operation latency (read, atomics).
    Latency,
    /// Windowed uni-directional bandwidth: `window` messages back to back, then a reply.
    Bandwidth,
    /// Both directions at once, each as [`PatternKind::Bandwidth`]; the sum is reported.
    BiBandwidth,
    /// perftest-style bandwidth: `window` operations kept outstanding, a new one posted at
    /// each local completion; `warmup` and `iterations` count operations. Bandwidth =
    /// measured bytes / (last completion - completion of the last warm-up operation).
    Pipelined,
    /// Both directions at once, each as [`PatternKind::Pipelined`]; the sum is reported.
    BiPipelined,
}

impl PatternKind {
    /// Spec/CLI name.
    pub fn name(self) -> &'static str {
        match self {
            PatternKind::Latency => "latency",
            PatternKind::Bandwidth => "bandwidth",
            PatternKind::BiBandwidth => "bibw",
            PatternKind::Pipelined => "pipelined",
            PatternKind::BiPipelined => "bipipelined",
        }
    }

    /// True for the two-direction variants.
    pub fn is_bidirectional(self) -> bool {
        matches!(self, PatternKind::BiBandwidth | PatternKind::BiPipelined)
    }

    /// True when the initiator is driven by local completions of every operation it posts
    /// (engines must report them as [`Input::Completed`]).
    pub fn needs_completions(self) -> bool {
        matches!(self, PatternKind::Pipelined | PatternKind::BiPipelined)
    }
}

/// One point of a pattern: everything a program needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PatternSpec {
    pub kind: PatternKind,
    pub op: Op,
    /// Message size in bytes.
    pub size: u64,
    /// Messages per window (bandwidth patterns).
    pub window: u32,
    /// Iterations run before measuring.
    pub warmup: u32,
    /// Measured iterations.
    pub iterations: u32,
}

/// The side a program plays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Starts iterations and measures.
    Initiator,
    /// Answers.
    Responder,
}

/// What a finished initiator measured.
#[derive(Debug, Clone, PartialEq)]
pub enum Samples {
    /// Per-iteration latency in picoseconds (one-way for ping-pong, whole operation otherwise).
    Latency(Vec<u64>),
    /// Bytes moved during the measured iterations and how long they took (picoseconds).
    Bandwidth { bytes: u64, elapsed_ps: u64, messages: u64 },
    /// Nothing measured (responders).
    None,
}

/// A pattern program for one process and one channel.
#[derive(Debug, Clone)]
pub struct Program {
    spec: PatternSpec,
    role: Role,
    chan: u32,
    iter: u32,
    in_window: u32,
    t_iter: u64,
    t_measure: Option<u64>,
    latencies: Vec<u64>,
    done: bool,
    /// When an initiator finished (its last completion or reply), or when a responder last
    /// got an input, ps.
    t_active: u64,
}

impl Program {
    /// A program playing `role` of `spec` on channel `chan`.
    pub fn new(spec: PatternSpec, role: Role, chan: u32) -> Self {
        Program {
            spec,
            role,
            chan,
            iter: 0,
            in_window: 0,
            t_iter: 0,
            t_measure: None,
            // Grows as samples arrive: the count may come from a peer (bounded by
            // `limits::MAX_LATENCY_SAMPLES` where it enters, but never trusted for an allocation).
            latencies: Vec::with_capacity(if spec.kind == PatternKind::Latency { (spec.iterations as usize).min(crate::limits::SAMPLE_PREALLOC) } else { 0 }),
            done: false,
            t_active: 0,
        }
    }

    /// The role played.
    pub fn role(&self) -> Role {
        self.role
    }

    /// The channel used.
    pub fn chan(&self) -> u32 {
        self.chan
    }

    /// True once an initiator has finished.
    pub fn is_done(&self) -> bool {
        self.done
    }

    fn data(&self) -> Message {
        Message { chan: self.chan, bytes: self.spec.size, op: self.spec.op, tag: TAG_DATA }
    }

    fn window(&self) -> u32 {
        self.spec.window.max(1)
    }

    fn total_iters(&self) -> u32 {
        self.spec.warmup.saturating_add(self.spec.iterations)
    }

    fn start_window(&mut self, now: u64, out: &mut Vec<Output>) {
        if self.iter == self.spec.warmup && self.t_measure.is_none() {
            self.t_measure = Some(now);
        }
        self.in_window = 0;
        for _ in 0..self.window() {
            out.push(Output::Post(self.data()));
        }
    }

    /// Feeds one input at engine time `now` (picoseconds); outputs are appended to `out`.
    pub fn on(&mut self, now: u64, input: Input, out: &mut Vec<Output>) {
        if self.done {
            return;
        }
        if self.role == Role::Responder {
            self.t_active = now;
        }
        match (self.spec.kind, self.role) {
            (PatternKind::Pipelined | PatternKind::BiPipelined, Role::Initiator) => self.pipelined_initiator(now, input, out),
            (PatternKind::Pipelined | PatternKind::BiPipelined, Role::Responder) => {}
            (PatternKind::Latency, Role::Initiator) => self.latency_initiator(now, input, out),
            (PatternKind::Latency, Role::Responder) => {
                if let Input::Arrived { tag: TAG_DATA, .. } = input {
                    if !self.spec.op.is_request_response() {
                        out.push(Output::Post(self.data()));
                    }
                }
            }
            (_, Role::Initiator) => self.bw_initiator(now, input, out),
            (_, Role::Responder) => {
                if let Input::Arrived { tag: TAG_DATA, .. } = input {
                    self.in_window += 1;
                    if self.in_window == self.window() {
                        self.in_window = 0;
                        out.push(Output::Post(Message { chan: self.chan, bytes: REPLY_BYTES, op: Op::Send, tag: TAG_REPLY }));
                    }
                }
            }
        }
    }

    fn latency_initiator(&mut self, now: u64, input: Input, out: &mut Vec<Output>) {
        let finished_one = match input {
            Input::Start => false,
            Input::Arrived { tag: TAG_DATA, .. } if !self.spec.op.is_request_response() => true,
            Input::Completed { tag: TAG_DATA, .. } if self.spec.op.is_request_response() => true,
            _ => return,
        };
        if finished_one {
            let elapsed = now - self.t_iter;
            let sample = if self.spec.op.is_request_response() { elapsed } else { elapsed / 2 };
            if self.iter >= self.spec.warmup {
                self.latencies.push(sample);
            }
            self.iter += 1;
            if self.iter >= self.total_iters() {
                self.done = true;
                self.t_active = now;
                out.push(Output::Done);
                return;
            }
        }
        self.t_iter = now;
        out.push(Output::Post(self.data()));
    }

    /// `iter` counts completions, `in_window` counts posts.
    fn pipelined_initiator(&mut self, now: u64, input: Input, out: &mut Vec<Output>) {
        let total = self.total_iters();
        match input {
            Input::Start => {
                if self.spec.warmup == 0 {
                    self.t_measure = Some(now);
                }
                while self.in_window < total && self.in_window < self.window() {
                    self.in_window += 1;
                    out.push(Output::Post(self.data()));
                }
            }
            // Timed by when the adapter completed each operation, not when the CPU took the
            // completion: perftest times its first post to its last completion over 1,000
            // operations, where the CPU's lag behind its completion queue (after posting a whole
            // window at once, before the last polls) is a small part; over this pattern's shorter
            // measured run it would not be.
            Input::Completed { tag: TAG_DATA, at, .. } => {
                self.iter += 1;
                if self.iter == self.spec.warmup {
                    self.t_measure = Some(at);
                }
                if self.iter >= total {
                    self.done = true;
                    self.t_iter = at;
                    self.t_active = at;
                    out.push(Output::Done);
                } else if self.in_window < total {
                    self.in_window += 1;
                    out.push(Output::Post(self.data()));
                }
            }
            _ => {}
        }
    }

    fn bw_initiator(&mut self, now: u64, input: Input, out: &mut Vec<Output>) {
        let window_closed = match input {
            Input::Start => {
                self.start_window(now, out);
                return;
            }
            // Reads and atomics need no reply: the window closes when all completed.
            Input::Completed { tag: TAG_DATA, .. } if self.spec.op.is_request_response() => {
                self.in_window += 1;
                self.in_window == self.window()
            }
            Input::Arrived { tag: TAG_REPLY, .. } if !self.spec.op.is_request_response() => true,
            _ => false,
        };
        if window_closed {
            self.iter += 1;
            if self.iter >= self.total_iters() {
                self.done = true;
                self.t_iter = now;
                self.t_active = now;
                out.push(Output::Done);
            } else {
                self.start_window(now, out);
            }
        }
    }

    /// Engine times (picoseconds) at which the measured part began and ended (bandwidth
    /// initiators, once done): lets an engine aggregate several programs over their union.
    pub fn measured_window(&self) -> Option<(u64, u64)> {
        match (self.role, self.spec.kind) {
            (Role::Initiator, k) if k != PatternKind::Latency && self.done => Some((self.t_measure.unwrap_or(self.t_iter), self.t_iter)),
            _ => None,
        }
    }

    /// When an initiator finished: its last completion (pipelined), reply (windowed) or
    /// response (latency), ps; `None` while it runs.
    pub fn finished_at(&self) -> Option<u64> {
        (self.role == Role::Initiator && self.done).then_some(self.t_active)
    }

    /// When this program last took part in the traffic, ps: an initiator when it finished
    /// (`None` while it runs), a responder when it last got an input (0 if none yet). With
    /// unreliable transports the last data reaches the responder after its initiator
    /// finished (its sends complete locally).
    pub fn last_active_at(&self) -> Option<u64> {
        match self.role {
            Role::Initiator => self.finished_at(),
            Role::Responder => Some(self.t_active),
        }
    }

    /// What was measured (initiators, once done).
    pub fn samples(&self) -> Samples {
        match (self.role, self.spec.kind) {
            (Role::Responder, _) => Samples::None,
            (_, PatternKind::Latency) => Samples::Latency(self.latencies.clone()),
            _ => {
                let start = self.t_measure.unwrap_or(self.t_iter);
                let messages = if self.spec.kind.needs_completions() {
                    self.spec.iterations as u64
                } else {
                    self.spec.iterations as u64 * self.window() as u64
                };
                Samples::Bandwidth { bytes: messages * self.spec.size, elapsed_ps: self.t_iter.saturating_sub(start), messages }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(kind: PatternKind, op: Op) -> PatternSpec {
        PatternSpec { kind, op, size: 8, window: 4, warmup: 2, iterations: 5 }
    }

    /// Drives an initiator and a responder over a perfect channel with fixed one-way delay.
    fn drive(s: PatternSpec, delay: u64) -> Samples {
        let mut a = Program::new(s, Role::Initiator, 0);
        let mut b = Program::new(s, Role::Responder, 0);
        // (time, to_b, input)
        let mut q: std::collections::VecDeque<(u64, bool, Input)> = [(0, false, Input::Start)].into();
        let mut out = Vec::new();
        let mut steps = 0;
        while let Some((t, to_b, inp)) = q.pop_front() {
            steps += 1;
            assert!(steps < 10_000);
            out.clear();
            if to_b { b.on(t, inp, &mut out) } else { a.on(t, inp, &mut out) }
            for o in &out {
                if let Output::Post(m) = o {
                    if m.op.is_request_response() {
                        q.push_back((t + 2 * delay, to_b, Input::Completed { chan: m.chan, tag: m.tag, at: t + 2 * delay }));
                    } else {
                        q.push_back((t + delay, !to_b, Input::Arrived { chan: m.chan, bytes: m.bytes, tag: m.tag }));
                    }
                }
            }
        }
        assert!(a.is_done());
        a.samples()
    }

    #[test]
    fn a_program_knows_when_it_last_took_part_in_the_traffic() {
        // Windowed bandwidth: 4 messages then a reply, 7 windows; one-way delay 1000 ps.
        let s = spec(PatternKind::Bandwidth, Op::Send);
        let (mut a, mut b) = (Program::new(s, Role::Initiator, 0), Program::new(s, Role::Responder, 0));
        assert_eq!((a.last_active_at(), b.last_active_at()), (None, Some(0)));
        let mut out = Vec::new();
        let mut t = 0;
        a.on(t, Input::Start, &mut out);
        while !a.is_done() {
            assert_eq!(a.finished_at(), None, "an initiator that runs has not finished");
            t += 1000;
            for _ in 0..4 {
                b.on(t, Input::Arrived { chan: 0, bytes: 8, tag: TAG_DATA }, &mut out);
            }
            t += 1000;
            a.on(t, Input::Arrived { chan: 0, bytes: 8, tag: TAG_REPLY }, &mut out);
        }
        assert_eq!(a.finished_at(), Some(14_000), "seven windows of one round trip each");
        assert_eq!(a.last_active_at(), Some(14_000));
        assert_eq!(b.last_active_at(), Some(13_000), "the responder's last message");
        // Later inputs (a late completion) do not move a finished initiator's time.
        a.on(99_000, Input::Arrived { chan: 0, bytes: 8, tag: TAG_REPLY }, &mut out);
        assert_eq!(a.finished_at(), Some(14_000));
    }

    #[test]
    fn ping_pong_measures_half_round_trip() {
        match drive(spec(PatternKind::Latency, Op::Send), 1000) {
            Samples::Latency(v) => assert_eq!(v, vec![1000; 5]),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn read_latency_is_whole_operation() {
        match drive(spec(PatternKind::Latency, Op::RdmaRead), 1000) {
            Samples::Latency(v) => assert_eq!(v, vec![2000; 5]),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn pipelined_times_completions_by_when_they_happened_not_when_the_cpu_took_them() {
        // The adapter completes one operation every 100 ps; the CPU takes the first ones late
        // (it was still posting its window) and the last ones in a quick drain. The measured
        // interval is that of the completions themselves: 4 operations in 400 ps.
        let s = PatternSpec { kind: PatternKind::Pipelined, op: Op::Send, size: 8, window: 8, warmup: 4, iterations: 4 };
        let mut p = Program::new(s, Role::Initiator, 0);
        let mut out = Vec::new();
        p.on(0, Input::Start, &mut out);
        let cpu_takes = [900, 910, 920, 930, 940, 945, 950, 955];
        for (i, now) in cpu_takes.into_iter().enumerate() {
            out.clear();
            p.on(now, Input::Completed { chan: 0, tag: TAG_DATA, at: 100 * (i as u64 + 1) }, &mut out);
        }
        assert!(p.is_done());
        match p.samples() {
            Samples::Bandwidth { bytes, elapsed_ps, messages } => {
                assert_eq!((bytes, messages), (32, 4));
                assert_eq!(elapsed_ps, 400, "by the CPU's times it would be 15 ps");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn pipelined_keeps_window_outstanding() {
        // Completion 2 delays after posting; window 4: after the first 2 units of time a
        // completion arrives every unit/4... drive() completes each op 2*delay later.
        match drive(PatternSpec { kind: PatternKind::Pipelined, op: Op::RdmaRead, size: 8, window: 4, warmup: 4, iterations: 8 }, 500) {
            Samples::Bandwidth { bytes, elapsed_ps, messages } => {
                assert_eq!(messages, 8);
                assert_eq!(bytes, 64);
                // Windows of 4 complete together every 1000 ps: warm-up ends at 1000, 8 more take 2000.
                assert_eq!(elapsed_ps, 2000);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn windowed_bandwidth_counts_measured_windows_only() {
        match drive(spec(PatternKind::Bandwidth, Op::RdmaWrite), 1000) {
            // Each window: data arrives at +1000, reply at +2000.
            Samples::Bandwidth { bytes, elapsed_ps, messages } => {
                assert_eq!(messages, 20);
                assert_eq!(bytes, 160);
                assert_eq!(elapsed_ps, 5 * 2000);
            }
            other => panic!("{other:?}"),
        }
    }
}

//! The replay engine: a discrete-event simulation of closed-loop browsers and server tiers
//! with cores, joined by links with connection pools, run by its own loop over its own
//! queue (`queue.rs`: the kernel's `(time, seq)` order, events ahead in a wheel). A workload
//! turns each request into a small program of steps (take a connection, send a message,
//! run on a tier's cores, give the connection back, fork parallel image fetches); the
//! engine executes the programs.
//!
//! * **CPU**: each tier has `cores`; a CPU job takes the core that frees first (FCFS).
//!   Tiers marked `shared` instead run on one host of `host_cores` cores together (all
//!   tiers and the browsers on one machine, as in a live run over loopback).
//! * **Messages** on a link cost the protocol's model-derived send-side CPU at the sender
//!   (on the sender tier's cores), then the rest of the one-way latency as a delay, then
//!   the receive-side CPU at the receiver: unloaded, a message takes exactly the model's
//!   one-way latency. Each end pays its own side's cost (`NetCost::send_cpu`, `recv_cpu`).
//! * **Connections**: a link's pool has `pool` connections (a request waits, FIFO, for a
//!   free one; the most recently used is reused first), or, with `pool = 0`, each browser
//!   has its own (slot numbers chosen by the workload). `Connect` opens a fresh connection
//!   (the protocol's set-up time as a delay; each end sends and receives a small message).
//! * **SDP idle connections**: a message on a connection silent for longer than the
//!   protocol's idle threshold first pays a control round trip: two small-message one-way
//!   latencies and their CPU at both ends.

use crate::msgcost::{us, MsgMemo};
pub use crate::program::{Program, Step};
use crate::program::{program_end, step_at};
use crate::netcost::NetCost;
use crate::queue::{slab_put, Queue};
use crate::runs::{Run, Runs};
use interlab_kernel::{Rng, Time, PS_PER_S};
use std::collections::VecDeque;
use std::sync::Arc;

/// Links a workload may use.
pub const MAX_LINKS: usize = 4;
/// Time stamps a program may record.
pub const MARKS: usize = 4;
const NONE: u32 = u32::MAX;

/// A tier.
#[derive(Debug, Clone)]
pub struct TierCfg {
    pub name: String,
    /// Cores (0 = unlimited: the client machines).
    pub cores: u32,
    /// Runs on the shared host (`Config::host_cores`) instead of its own cores.
    pub shared: bool,
}

/// A link between tier `from` (the requesting side) and tier `to`.
#[derive(Debug, Clone)]
pub struct LinkCfg {
    pub name: String,
    pub from: usize,
    pub to: usize,
    pub cost: Arc<NetCost>,
    /// Connections in the shared pool; 0 = dedicated connections per slot.
    pub pool: u32,
}

/// What generates the requests. A workload is `Clone` (see [`WorkloadClone`]).
pub trait Workload: WorkloadClone {
    /// Names of the request classes (interactions).
    fn classes(&self) -> Vec<String>;
    /// The next request of browser `b` at time `now`: its class; its program appended to
    /// `program` (empty when called).
    fn next(&mut self, b: u32, now: Time, rng: &mut Rng, program: &mut Program) -> usize;
    /// Think time after browser `b`'s request completed, ps.
    fn think(&mut self, b: u32, rng: &mut Rng) -> Time;
}

/// A boxed copy of a workload in its present state (a replay whose folded run turns out
/// not to be exact reruns from the start with it: see [`run`]); every `Clone` workload has it.
pub trait WorkloadClone {
    fn boxed_clone(&self) -> Box<dyn Workload>;
}

impl<W: Workload + Clone + 'static> WorkloadClone for W {
    fn boxed_clone(&self) -> Box<dyn Workload> {
        Box::new(self.clone())
    }
}

/// A replay run.
#[derive(Debug, Clone)]
pub struct Config {
    pub tiers: Vec<TierCfg>,
    /// Cores of the host the `shared` tiers run on together.
    pub host_cores: u32,
    pub links: Vec<LinkCfg>,
    pub browsers: u32,
    pub seed: u64,
    /// Browsers start at uniform instants in [0, start_spread).
    pub start_spread: Time,
    /// Ramp-up before the measurement interval.
    pub warmup: Time,
    /// Measurement interval.
    pub measure: Time,
    /// After the interval: stop issuing and run until every request has completed (true),
    /// or stop at once (false).
    pub drain: bool,
    /// Guard against runaway runs.
    pub max_events: u64,
}

/// A completed request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Completion {
    pub class: u16,
    pub start: Time,
    pub end: Time,
    pub marks: [Time; MARKS],
}

/// What a run produced.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub classes: Vec<String>,
    pub issued: u64,
    pub completed: u64,
    /// Requests still in progress when the run stopped.
    pub in_flight: u64,
    /// Completions whose end fell inside the measurement interval.
    pub measured: Vec<Completion>,
    pub measure_s: f64,
    /// Busy core time per tier, seconds, and utilisation over the whole run.
    pub tier_busy_s: Vec<f64>,
    pub tier_util: Vec<f64>,
    /// The part of each tier's busy core time spent in the network stack (the socket
    /// model's send- and receive-side CPU of its messages, SDP idle round trips and
    /// connection set-ups), seconds: what a protocol between the tiers can change.
    pub tier_net_busy_s: Vec<f64>,
    pub messages: u64,
    pub idle_penalties: u64,
    pub connects: u64,
    pub events: u64,
    pub end_time_s: f64,
}

/// A duration in ps as seconds (monotone: a longer duration is never fewer seconds).
fn secs_of(d: Time) -> f64 {
    d as f64 / PS_PER_S as f64
}

impl Outcome {
    /// Completions per second in the interval.
    pub fn throughput(&self) -> f64 {
        self.measured.len() as f64 / self.measure_s
    }

    /// Response times (ps) of class `c` (None = all), unsorted.
    fn durations(&self, c: Option<usize>) -> Vec<Time> {
        self.measured.iter().filter(|x| c.is_none_or(|c| x.class as usize == c)).map(|x| x.end - x.start).collect()
    }

    /// Response times (seconds) of class `c` (None = all), sorted. Sorted as integers (ps)
    /// and then converted: the conversion keeps the order, so the list is the one sorting
    /// the seconds gives, at the cost of an integer sort.
    pub fn times(&self, c: Option<usize>) -> Vec<f64> {
        let mut v = self.durations(c);
        v.sort_unstable();
        v.into_iter().map(secs_of).collect()
    }

    /// Nearest-rank percentile (0..100) of class `c`, seconds: the k-th least time, found
    /// by selection (no sort).
    pub fn percentile(&self, c: Option<usize>, p: f64) -> Option<f64> {
        let mut v = self.durations(c);
        if v.is_empty() {
            return None;
        }
        let k = ((p / 100.0 * v.len() as f64).ceil() as usize).clamp(1, v.len());
        let (_, &mut x, _) = v.select_nth_unstable(k - 1);
        Some(secs_of(x))
    }

    /// Mean response time of class `c`, seconds.
    pub fn mean(&self, c: Option<usize>) -> Option<f64> {
        let v = self.times(c);
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    }

    /// Fraction of class `c`'s requests slower than `limit_s` (a count: the times need no
    /// sorting).
    pub fn over(&self, c: Option<usize>, limit_s: f64) -> f64 {
        let (mut n, mut slower) = (0usize, 0usize);
        for x in self.measured.iter().filter(|x| c.is_none_or(|c| x.class as usize == c)) {
            n += 1;
            slower += usize::from((x.end - x.start) as f64 / PS_PER_S as f64 > limit_s);
        }
        if n == 0 {
            return 0.0;
        }
        slower as f64 / n as f64
    }

    /// CCDF of class `c`: (response time s, fraction of requests slower) at each distinct time.
    pub fn ccdf(&self, c: Option<usize>) -> Vec<(f64, f64)> {
        let v = self.times(c);
        let n = v.len() as f64;
        let mut out = Vec::new();
        for (i, &t) in v.iter().enumerate() {
            if i + 1 == v.len() || v[i + 1] > t {
                out.push((t, (v.len() - i - 1) as f64 / n));
            }
        }
        out
    }

    /// Requests still in flight when the run stopped, per request completed in the
    /// measurement interval. In a closed loop in steady state that is the mean response
    /// time over the interval's length (Little's law: in flight = X R, completed = X T):
    /// above about 0.1 the interval is short against the response times, and the requests
    /// that both start and end in it are biased to the cheap interactions, which biases
    /// WIPS upward. The remedy is a longer `measure_s`.
    pub fn window_bias(&self) -> f64 {
        self.in_flight as f64 / self.measured.len().max(1) as f64
    }

    /// Mean time between marks `a` and `b` (seconds) over the measured requests.
    pub fn mean_between(&self, a: usize, b: usize) -> f64 {
        let n = self.measured.len().max(1) as f64;
        self.measured.iter().map(|x| x.marks[b].saturating_sub(x.marks[a]) as f64).sum::<f64>() / n / PS_PER_S as f64
    }
}

/// A connection: when its last message arrived (ps; [`NEVER`] before the first, and after
/// a fresh set-up). Kept only on links with an idle threshold, the one reader (see
/// [`Dc::set_last`]).
struct Conn {
    last: Time,
}

/// [`Conn::last`] of a connection that has carried no message: `now - NEVER` saturates to
/// 0, which is above no threshold, so it never counts as idle (as `None` did).
const NEVER: Time = Time::MAX;

struct Pool {
    dedicated: bool,
    conns: Vec<Conn>,
    free: Vec<u32>,
    waiters: VecDeque<u32>,
}

/// A request's program, or one of the programs it forked, being run.
struct Flow {
    /// The request's program (an index into `Dc::programs`), shared by the programs it forks.
    prog: u32,
    /// The chunk of `Dc::chunks` the program is in.
    chunk: u32,
    /// The next step, and the end of this flow's steps (its `Join`, or the program's end),
    /// as places in the chunk.
    pc: u32,
    end: u32,
    /// The flow that forked this one, or `NONE`.
    parent: u32,
    pending: u32,
    browser: u32,
    conns: [u32; MAX_LINKS],
    class: u16,
    /// Receive-side CPU of the message in flight (`NetCost::recv_cpu` of its size, and a
    /// small message's at both ends if it pays an SDP idle round trip), ps.
    recv_cpu: Time,
    /// The CPU step the receiver runs right after the message in flight (its ns as ps; 0 if
    /// the step after the message is not CPU on the receiving tier): taken at the send,
    /// while the program's steps are in the caches, and run in the arrival's reservation.
    cpu_after: Time,
    start: Time,
    marks: [Time; MARKS],
}

#[derive(Debug, Clone, Copy)]
enum Ev {
    Start(u32),
    Next(u32),
    /// The flow's message arrives (its receive-side CPU is the flow's `recv_cpu`).
    Arrive { flow: u32, link: u8, up: bool },
    End,
}

/// What every message on a link shares, taken from its cost table once per run.
struct LinkConst {
    /// CPU of a small (1-byte) message at both ends, us (`send_cpu(1) + recv_cpu(1)`).
    small_cpu_us: f64,
    /// One-way latency of a small message, us.
    small_latency_us: f64,
    /// `small_cpu_us` in ps.
    small_cpu: Time,
    /// The SDP idle threshold, ps.
    idle: Option<Time>,
    /// Connection set-up time, ps.
    connect: Time,
}

struct Dc {
    cfg: Config,
    consts: Vec<LinkConst>,
    /// Each link's message costs, remembered by size.
    memos: Vec<MsgMemo>,
    wl: Box<dyn Workload>,
    rngs: Vec<Rng>,
    /// Core pools: one per tier, then the shared host's; each its cores' free times,
    /// ascending.
    cores: Vec<Vec<Time>>,
    /// Each tier's pool.
    pool_of: Vec<usize>,
    busy: Vec<u128>,
    /// Of `busy`, the network stack's part (ps).
    net_busy: Vec<u128>,
    pools: Vec<Pool>,
    flows: Vec<Flow>,
    free_flows: Vec<u32>,
    /// The programs of requests in progress: each one's run in `runs` and its length (the
    /// places of finished ones listed in `free_programs`).
    programs: Vec<(Run, u32)>,
    free_programs: Vec<u32>,
    /// The steps of the programs in progress.
    runs: Runs,
    /// Where the workload writes a request's program.
    scratch: Program,
    stopping: bool,
    issued: u64,
    completed: u64,
    measured: Vec<Completion>,
    messages: u64,
    idle_penalties: u64,
    connects: u64,
    /// Per tier: arrivals there are folded into their sends (folding, and no cores).
    foldable: Vec<bool>,
    /// Arrivals are folded only before this time (the end of the run, `warmup + measure`:
    /// the run without folding handles one there only if it is earlier).
    fold_before: Time,
    /// Arrivals folded (events the run without folding handles and this one does not).
    folded: u64,
}

/// Runs `dur` of work from `now` on the core of `cores` that frees first (no cores: at
/// once); returns when it ends. The cores are alike, so a pool is kept as their free times
/// in ascending order: the first is the one to take, and its new free time moves to its
/// place among the others (the times an unordered pool searched for its least would give).
fn take_core(cores: &mut [Time], now: Time, dur: Time) -> Time {
    let Some(&first) = cores.first() else { return now + dur };
    let end = first.max(now) + dur;
    // `end` goes in among the others, c_1 <= .. <= c_{n-1}, without a branch on where:
    // place i - 1 gets max(c_{i-1}, min(c_i, end)) (c_0 taken as below everything), the
    // last max(c_{n-1}, end).
    let n = cores.len();
    let mut below = 0;
    for i in 1..n {
        let c = cores[i];
        cores[i - 1] = below.max(c.min(end));
        below = c;
    }
    cores[n - 1] = below.max(end);
    end
}

impl Dc {
    /// Reserves `dur` of CPU on `tier` from `now`; returns when the work ends.
    #[inline(always)]
    fn reserve(&mut self, tier: usize, now: Time, dur: Time) -> Time {
        self.busy[tier] += dur as u128;
        take_core(&mut self.cores[self.pool_of[tier]], now, dur)
    }

    /// Reserves `dur` of network-stack CPU on `tier` (counted in `busy` and `net_busy`).
    fn reserve_net(&mut self, tier: usize, now: Time, dur: Time) -> Time {
        self.net_busy[tier] += dur as u128;
        self.reserve(tier, now, dur)
    }

    fn new_flow(&mut self, f: Flow) -> u32 {
        slab_put(&mut self.flows, &mut self.free_flows, f)
    }

    fn conn_mut(&mut self, link: usize, c: u32) -> &mut Conn {
        let p = &mut self.pools[link];
        while p.conns.len() <= c as usize {
            p.conns.push(Conn { last: NEVER });
        }
        &mut p.conns[c as usize]
    }

    /// Notes that connection `c` (or none: `NONE`) of link `l` last carried a message at
    /// `t` (`NEVER`: it was set up afresh). Only the idle check of a link with an idle
    /// threshold reads it, so on other links nothing is written (a store into tens of
    /// thousands of dedicated connections, mostly a cache miss).
    #[inline(always)]
    fn set_last(&mut self, l: usize, c: u32, t: Time) {
        if c != NONE && self.consts[l].idle.is_some() {
            self.conn_mut(l, c).last = t;
        }
    }

    fn finish(&mut self, f: u32, now: Time, q: &mut Queue<Ev>) {
        let flow = &self.flows[f as usize];
        let (parent, prog, browser, class, start, marks) = (flow.parent, flow.prog, flow.browser, flow.class, flow.start, flow.marks);
        self.free_flows.push(f);
        if parent != NONE {
            let pf = &mut self.flows[parent as usize];
            pf.pending -= 1;
            if pf.pending == 0 {
                q.push(now, Ev::Next(parent));
            }
            return;
        }
        // The request is done, and every flow it forked before it: its program is freed.
        let (run, len) = self.programs[prog as usize];
        self.runs.free(run, len as usize);
        self.free_programs.push(prog);
        self.completed += 1;
        let (w0, w1) = (self.cfg.warmup, self.cfg.warmup + self.cfg.measure);
        if now >= w0 && now <= w1 {
            self.measured.push(Completion { class, start, end: now, marks });
        }
        if !self.stopping {
            let t = self.wl.think(browser, &mut self.rngs[browser as usize]);
            q.push(now + t, Ev::Start(browser));
        }
    }

    fn run_flow(&mut self, f: u32, now: Time, q: &mut Queue<Ev>) {
        loop {
            let flow = &mut self.flows[f as usize];
            if flow.pc >= flow.end {
                self.finish(f, now, q);
                return;
            }
            let pc = flow.pc;
            let (step, words) = step_at(self.runs.chunk(flow.chunk), pc as usize);
            flow.pc += words;
            match step {
                Step::Mark(k) => flow.marks[k as usize % MARKS] = now,
                Step::Acquire { link, slot } => {
                    let l = link as usize;
                    let pool = &mut self.pools[l];
                    if pool.dedicated {
                        flow.conns[l] = slot;
                    } else if let Some(c) = pool.free.pop() {
                        flow.conns[l] = c;
                    } else {
                        flow.pc = pc; // retried when a connection is handed over
                        pool.waiters.push_back(f);
                        return;
                    }
                }
                Step::Release { link } => {
                    let l = link as usize;
                    let c = std::mem::replace(&mut flow.conns[l], NONE);
                    let pool = &mut self.pools[l];
                    if !pool.dedicated && c != NONE {
                        if let Some(w) = pool.waiters.pop_front() {
                            let wf = &mut self.flows[w as usize];
                            wf.conns[l] = c;
                            wf.pc += 1; // an `Acquire` is one word (its slot is 32 bits)
                            q.push(now, Ev::Next(w));
                        } else {
                            pool.free.push(c);
                        }
                    }
                }
                Step::Connect { link } => {
                    let l = link as usize;
                    let c = flow.conns[l];
                    self.set_last(l, c, NEVER);
                    self.connects += 1;
                    let (from, to, k) = (self.cfg.links[l].from, self.cfg.links[l].to, &self.consts[l]);
                    let (small, connect) = (k.small_cpu, k.connect);
                    self.reserve_net(from, now, small);
                    self.reserve_net(to, now, small);
                    q.push(now + connect, Ev::Next(f));
                    return;
                }
                Step::Cpu { tier, ns } => {
                    let end = self.reserve(tier as usize, now, ns * 1000);
                    q.push(end.max(now), Ev::Next(f));
                    return;
                }
                Step::Send { link, bytes, up } => {
                    let l = link as usize;
                    let c = flow.conns[l];
                    let idle = match (self.consts[l].idle, c) {
                        (Some(th), c) if c != NONE => now.saturating_sub(self.conn_mut(l, c).last) > th,
                        _ => false,
                    };
                    let lk = &self.cfg.links[l];
                    let (m, slot) = self.memos[l].get(&lk.cost, bytes);
                    let sender = if up { lk.to } else { lk.from };
                    let (cpu, wire, recv_cpu) = if idle {
                        // The control round trip: each end sends one small message and receives one.
                        self.idle_penalties += 1;
                        let k = &self.consts[l];
                        let m = self.memos[l].msg(slot);
                        let small = k.small_cpu_us;
                        let wire = m.wire_us + (2.0 * k.small_latency_us - 2.0 * small).max(0.0);
                        (us(m.cost.send_cpu_us + small), us(wire), us(m.cost.recv_cpu_us + small))
                    } else {
                        (m.send_cpu, m.wire, m.recv_cpu)
                    };
                    // Work the receiver does next on the same tier joins the arrival's
                    // reservation (one event fewer; the core runs both back to back).
                    let receiver = if up { lk.from } else { lk.to };
                    let flow = &mut self.flows[f as usize];
                    flow.recv_cpu = recv_cpu;
                    flow.cpu_after = 0;
                    if flow.pc < flow.end {
                        if let (Step::Cpu { tier, ns }, words) = step_at(self.runs.chunk(flow.chunk), flow.pc as usize) {
                            if tier as usize == receiver {
                                flow.cpu_after = ns * 1000;
                                flow.pc += words;
                            }
                        }
                    }
                    self.messages += 1;
                    let end = self.reserve_net(sender, now, cpu);
                    let at = (end + wire).max(now);
                    // An arrival at a tier without cores (the browsers) changes nothing
                    // another event reads: its sums, its flow's own connection, and its
                    // `Next` at the end of its CPU. It is done now and its `Next` pushed
                    // in its place, if the run reaches it (it ends at `warmup + measure`)
                    // and the queue can track the fold (see `run`).
                    if self.foldable[receiver] && at < self.fold_before {
                        let flow = &self.flows[f as usize];
                        let (net, dur, c) = (flow.recv_cpu, flow.recv_cpu + flow.cpu_after, flow.conns[l]);
                        // A tier without cores runs the work from the arrival on.
                        let next_at = at + dur;
                        if q.try_push_folded(at, next_at, Ev::Next(f)) {
                            self.net_busy[receiver] += net as u128;
                            self.busy[receiver] += dur as u128;
                            self.set_last(l, c, next_at);
                            self.folded += 1;
                            return;
                        }
                    }
                    q.push(at, Ev::Arrive { flow: f, link, up });
                    return;
                }
                Step::Fork(n) => {
                    if n == 0 {
                        continue;
                    }
                    let (prog, chunk, browser, class, start) = (flow.prog, flow.chunk, flow.browser, flow.class, flow.start);
                    flow.pending = n;
                    // The forked programs follow the `Fork`, each up to its `Join`.
                    let mut at = pc as usize + 1; // a `Fork` is one word
                    let ((_, base), len) = self.programs[prog as usize];
                    let prog_end = (base + len) as usize;
                    for _ in 0..n {
                        let end = program_end(&self.runs.chunk(chunk)[..prog_end], at);
                        let cf = self.new_flow(Flow {
                            prog,
                            chunk,
                            pc: at as u32,
                            end: end as u32,
                            parent: f,
                            pending: 0,
                            browser,
                            conns: [NONE; MAX_LINKS],
                            class,
                            recv_cpu: 0,
                            cpu_after: 0,
                            start,
                            marks: [0; MARKS],
                        });
                        q.push(now, Ev::Next(cf));
                        at = end + 1;
                    }
                    // Once they are all done, this flow goes on after the last one.
                    self.flows[f as usize].pc = at as u32;
                    return;
                }
                // A forked program's end (its flow's `end` stops it before): nothing to do.
                Step::Join => {}
            }
        }
    }

    /// Handles one event at `now`; false: the run stops.
    fn handle(&mut self, ev: Ev, now: Time, q: &mut Queue<Ev>) -> bool {
        match ev {
            Ev::Start(b) => {
                if self.stopping {
                    return true;
                }
                // Built in a vector kept from request to request, then copied to a run
                // of its size class (a request's program lives until it completes, and
                // thousands may be waiting at once).
                self.scratch.clear();
                let class = self.wl.next(b, now, &mut self.rngs[b as usize], &mut self.scratch);
                let len = self.scratch.len();
                let (chunk, base) = self.runs.put(self.scratch.codes());
                let p = slab_put(&mut self.programs, &mut self.free_programs, ((chunk, base), len as u32));
                let end = base + len as u32;
                self.issued += 1;
                let f = self.new_flow(Flow {
                    prog: p,
                    chunk,
                    pc: base,
                    end,
                    parent: NONE,
                    pending: 0,
                    browser: b,
                    conns: [NONE; MAX_LINKS],
                    class: class as u16,
                    recv_cpu: 0,
                    cpu_after: 0,
                    start: now,
                    marks: [now; MARKS],
                });
                self.run_flow(f, now, q);
            }
            Ev::Next(f) => self.run_flow(f, now, q),
            Ev::Arrive { flow, link, up } => {
                let l = link as usize;
                let lk = &self.cfg.links[l];
                let receiver = if up { lk.from } else { lk.to };
                let fl = &self.flows[flow as usize];
                // The receive-side CPU and the CPU step after it (taken at the send).
                let net = fl.recv_cpu;
                self.net_busy[receiver] += net as u128;
                let dur = net + fl.cpu_after;
                let c = fl.conns[l];
                let end = self.reserve(receiver, now, dur);
                self.set_last(l, c, end);
                q.push(end.max(now), Ev::Next(flow));
            }
            Ev::End => {
                self.stopping = true;
                if !self.cfg.drain {
                    return false;
                }
            }
        }
        true
    }
}

/// Runs one replay.
pub fn run(cfg: &Config, wl: Box<dyn Workload>) -> Result<Outcome, String> {
    if cfg.links.len() > MAX_LINKS {
        return Err(format!("at most {MAX_LINKS} links"));
    }
    for l in &cfg.links {
        if l.from >= cfg.tiers.len() || l.to >= cfg.tiers.len() {
            return Err(format!("link {} joins a tier that does not exist", l.name));
        }
    }
    if cfg.tiers.iter().any(|t| t.shared) && cfg.host_cores == 0 {
        return Err("tiers share a host but the host has no cores".into());
    }
    if cfg.measure == 0 {
        return Err("the measurement interval must be longer than 0".into());
    }
    // Folded first; if the queue saw a push whose order against a folded event the run
    // without folding would give otherwise, that run, from the start, on a copy of the
    // workload as it was.
    let spare = wl.boxed_clone();
    match run_once(cfg, wl, true) {
        Some(o) => Ok(o),
        None => run_once(cfg, spare, false).ok_or_else(|| "a replay without folding found a fold".to_string()),
    }
}

/// One replay, with arrivals at tiers without cores folded into their sends (`fold`) or
/// not. None: folded, and not provably the run without folding (see `Queue::conflict`), or
/// it might have reached `max_events` at another event.
pub(crate) fn run_once(cfg: &Config, wl: Box<dyn Workload>, fold: bool) -> Option<Outcome> {
    let classes = wl.classes();
    let pools = cfg
        .links
        .iter()
        .map(|l| Pool {
            dedicated: l.pool == 0,
            conns: (0..l.pool).map(|_| Conn { last: NEVER }).collect(),
            free: (0..l.pool).rev().collect(),
            waiters: VecDeque::new(),
        })
        .collect();
    let consts = cfg
        .links
        .iter()
        .map(|l| {
            let c = &l.cost;
            let small_cpu_us = c.send_cpu(1) + c.recv_cpu(1);
            LinkConst { small_cpu_us, small_latency_us: c.latency(1), small_cpu: us(small_cpu_us), idle: c.idle_us.map(us), connect: us(c.connect_us) }
        })
        .collect();
    let mut dc = Dc {
        cfg: cfg.clone(),
        consts,
        memos: cfg.links.iter().map(|_| MsgMemo::new()).collect(),
        wl,
        rngs: (0..cfg.browsers).map(|b| Rng::stream(cfg.seed, b as u64 + 1)).collect(),
        cores: cfg.tiers.iter().map(|t| vec![0; if t.shared { 0 } else { t.cores as usize }]).chain([vec![0; cfg.host_cores as usize]]).collect(),
        pool_of: cfg.tiers.iter().enumerate().map(|(i, t)| if t.shared { cfg.tiers.len() } else { i }).collect(),
        busy: vec![0; cfg.tiers.len()],
        net_busy: vec![0; cfg.tiers.len()],
        pools,
        flows: Vec::new(),
        free_flows: Vec::new(),
        programs: Vec::new(),
        free_programs: Vec::new(),
        runs: Runs::new(),
        scratch: Program::new(),
        stopping: false,
        issued: 0,
        completed: 0,
        measured: Vec::new(),
        messages: 0,
        idle_penalties: 0,
        connects: 0,
        foldable: cfg.tiers.iter().map(|t| fold && !t.shared && t.cores == 0).collect(),
        fold_before: cfg.warmup + cfg.measure,
        folded: 0,
    };
    // The run loop: one component, so no dispatch; events in `(time, seq)` order.
    let mut q: Queue<Ev> = Queue::new();
    let mut start_rng = Rng::stream(cfg.seed, 0);
    for b in 0..cfg.browsers {
        let at = (start_rng.next_f64() * cfg.start_spread as f64) as Time;
        q.push(at, Ev::Start(b));
    }
    q.push(cfg.warmup + cfg.measure, Ev::End);
    let (mut events, mut now) = (0u64, 0 as Time);
    while events < cfg.max_events {
        let Some((t, ev)) = q.pop() else { break };
        now = t;
        events += 1;
        if !dc.handle(ev, now, &mut q) || q.conflict {
            break;
        }
    }
    let end = now.max(1) as f64;
    // The run without folding handles every folded arrival as an event: past its guard on
    // events it would have stopped elsewhere.
    if q.conflict || (dc.folded > 0 && events + dc.folded >= cfg.max_events) {
        return None;
    }
    let events = events + dc.folded;
    // The completions are kept for the whole of a `reproduce` (the largest results it
    // keeps): without the slack of their vector's growth.
    let mut measured = std::mem::take(&mut dc.measured);
    measured.shrink_to_fit();
    Some(Outcome {
        classes,
        issued: dc.issued,
        completed: dc.completed,
        in_flight: dc.issued - dc.completed,
        measured,
        measure_s: cfg.measure as f64 / PS_PER_S as f64,
        tier_busy_s: dc.busy.iter().map(|&b| b as f64 / PS_PER_S as f64).collect(),
        tier_net_busy_s: dc.net_busy.iter().map(|&b| b as f64 / PS_PER_S as f64).collect(),
        tier_util: dc
            .busy
            .iter()
            .zip(&cfg.tiers)
            .map(|(&b, t)| {
                let cores = if t.shared { cfg.host_cores } else { t.cores };
                if cores == 0 { 0.0 } else { b as f64 / (end * cores as f64) }
            })
            .collect(),
        messages: dc.messages,
        idle_penalties: dc.idle_penalties,
        connects: dc.connects,
        events,
        end_time_s: end / PS_PER_S as f64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ordered pool gives the end times a search of an unordered pool for its
    /// earliest-free core gives, and stays ordered.
    #[test]
    fn an_ordered_core_pool_gives_the_times_of_a_search() {
        let mut rng = Rng::stream(7, 0);
        for n in [1usize, 2, 3, 8, 16] {
            let mut sorted = vec![0 as Time; n];
            let mut plain = vec![0 as Time; n];
            let mut now: Time = 0;
            for _ in 0..20_000 {
                now += rng.below(40);
                let dur = [0, rng.below(10), rng.below(200)][rng.below(3) as usize];
                let (i, _) = plain.iter().enumerate().min_by_key(|(_, &t)| t).unwrap();
                let want = plain[i].max(now) + dur;
                plain[i] = want;
                assert_eq!(take_core(&mut sorted, now, dur), want);
                assert!(sorted.windows(2).all(|w| w[0] <= w[1]));
                let mut p = plain.clone();
                p.sort();
                assert_eq!(p, sorted);
            }
        }
        assert_eq!(take_core(&mut [], 5, 3), 8);
    }

    /// Times sorted as integers and percentiles by selection equal sorting the seconds
    /// (the definition they replace), ties and all.
    #[test]
    fn times_and_percentiles_equal_sorting_the_seconds() {
        let mut rng = Rng::stream(3, 0);
        let measured: Vec<Completion> = (0..5000)
            .map(|_| {
                let start = rng.below(1 << 40);
                // Many equal durations, and some a few ps apart (equal as seconds or not).
                let d = [rng.below(50) * 1_000_000_000, rng.below(1 << 45), 7 + rng.below(3)][rng.below(3) as usize];
                Completion { class: rng.below(3) as u16, start, end: start + d, marks: [0; MARKS] }
            })
            .collect();
        let o = Outcome { classes: vec![], issued: 0, completed: 0, in_flight: 0, measured, measure_s: 1.0, tier_busy_s: vec![], tier_util: vec![], tier_net_busy_s: vec![], messages: 0, idle_penalties: 0, connects: 0, events: 0, end_time_s: 0.0 };
        for c in [None, Some(0), Some(2), Some(7)] {
            let mut want: Vec<f64> = o.measured.iter().filter(|x| c.is_none_or(|c| x.class as usize == c)).map(|x| (x.end - x.start) as f64 / PS_PER_S as f64).collect();
            want.sort_by(f64::total_cmp);
            let got = o.times(c);
            assert_eq!(got.iter().map(|x| x.to_bits()).collect::<Vec<_>>(), want.iter().map(|x| x.to_bits()).collect::<Vec<_>>());
            for p in [0.0, 0.01, 50.0, 90.0, 99.0, 99.99, 100.0] {
                let k = ((p / 100.0 * want.len() as f64).ceil() as usize).clamp(1, want.len().max(1));
                assert_eq!(o.percentile(c, p).map(f64::to_bits), want.get(k - 1).map(|x| x.to_bits()), "class {c:?} p {p}");
            }
        }
    }
}

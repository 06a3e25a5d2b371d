//! MPI over the verbs model, after MVAPICH.
//!
//! * **RC** (MVAPICH): messages up to the eager threshold are copied into pre-registered
//!   buffers and written by RDMA into the peer's persistent buffers (the "fast path": the
//!   receiver polls, then copies out). Larger ones use the RPUT rendezvous: RTS, CTS, the
//!   data by RDMA write straight from the user buffer, then FIN on the same queue pair.
//!   With several rails (ports or QPs), rendezvous data above the striping threshold is
//!   split evenly, with a FIN per rail; smaller messages use the first rail.
//! * **UD**: the library fragments every message into datagrams of one MTU, copies in and
//!   out, and provides reliability itself: a sliding window of unacknowledged fragments,
//!   acknowledgements from the receiver.
//! * **UC**: every message is one UC send (copied through buffers, no rendezvous
//!   handshake); the receiver acknowledges each, and a message completes at the sender only
//!   then.

use crate::hw::cycles::HostClock;
use crate::params::{ParamError, Table};
use crate::transport::packet::{MsgMeta, UlpKind};
use crate::ulp::{Ulp, UlpEv, UlpHost, UlpId};
use interlab_kernel::Time;
use interlab_patterns::{Input, Message, Op};
use std::collections::{BTreeMap, VecDeque};

use interlab_kernel::from_ns as ns;

/// The MPI library's parameters (profile section `[mpi]`).
#[derive(Debug, Clone, PartialEq)]
pub struct MpiSpec {
    /// Largest message sent eagerly (RC), bytes.
    pub eager_threshold_bytes: u64,
    /// Host memory copy bandwidth for copies through library buffers, MB/s.
    pub copy_mbytes_per_s: f64,
    /// Library CPU time per message at each end (matching, progress, headers), ns: the
    /// profile's `overhead_ns`, or its `overhead_cycles` at the host's `clock_ghz` and
    /// `ipc_factor` (a software cost that follows the host rather than a time fitted on one
    /// machine).
    pub overhead_ns: f64,
    /// MPI header on every data message, bytes.
    pub header_bytes: u64,
    /// Control message (RTS, CTS, FIN, ACK) size, bytes.
    pub ctrl_bytes: u64,
    /// UD design: unacknowledged fragments allowed per peer.
    pub ud_window_packets: u64,
    /// UD design: messages of at least this many bytes use the zero-copy rendezvous (RTS,
    /// the receiver lends a QP from its pool and posts receives straight into the user
    /// buffer, CTS, the datagrams outside the fragment window, one acknowledgement per
    /// message); 0 = never (every message goes through the copy path and its window).
    pub ud_zcopy_threshold_bytes: u64,
    /// UD design: QPs in the receiver's zero-copy pool (one per message in flight); an RTS
    /// that finds none free waits for one.
    pub ud_zcopy_qps: u64,
    /// UD design: receives a zero-copy QP can hold; larger messages take the copy path.
    pub ud_zcopy_rq_size: u64,
    /// Work requests the library keeps on one RC send queue; more wait in its backlog until
    /// completions free slots. 0 = unlimited.
    pub sq_depth_wqes: u64,
    /// Largest payload (header included) the library posts inline, bytes. Optional: absent
    /// = the adapter's `inline_bytes`.
    pub inline_bytes: Option<u64>,
}

impl MpiSpec {
    /// Reads `[mpi]` of a host whose clock is `clock`: the per-message cost is
    /// `overhead_ns` or `overhead_cycles` (which needs `[host] clock_ghz`).
    pub fn from_table(t: &mut Table, clock: &HostClock) -> Result<Self, ParamError> {
        let overhead_ns = clock.cost(t, "overhead_ns")?;
        Ok(MpiSpec {
            eager_threshold_bytes: t.param_u64("eager_threshold_bytes", "bytes", 0)?,
            copy_mbytes_per_s: t.param("copy_mbytes_per_s", "MB/s")?,
            overhead_ns,
            header_bytes: t.param_u64("header_bytes", "bytes", 0)?,
            ctrl_bytes: t.param_u64("ctrl_bytes", "bytes", 1)?,
            ud_window_packets: t.param_u64("ud_window_packets", "packets", 1)?,
            ud_zcopy_threshold_bytes: opt_u64(t, "ud_zcopy_threshold_bytes", "bytes", 0, 0)?,
            ud_zcopy_qps: opt_u64(t, "ud_zcopy_qps", "QPs", 1, 64)?,
            ud_zcopy_rq_size: opt_u64(t, "ud_zcopy_rq_size", "receives", 1, 4096)?,
            sq_depth_wqes: opt_u64(t, "sq_depth_wqes", "work requests", 0, 0)?,
            inline_bytes: t.opt_param_u64("inline_bytes", "bytes", 0)?,
        })
    }

    /// True when a UD-design message of `bytes` goes by zero copy over a link of `mtu` bytes.
    pub fn ud_zcopy(&self, bytes: u64, mtu: u64) -> bool {
        self.ud_zcopy_threshold_bytes > 0 && bytes >= self.ud_zcopy_threshold_bytes && bytes.div_ceil(mtu) <= self.ud_zcopy_rq_size
    }

    fn copy_ps(&self, bytes: u64) -> Time {
        (bytes as f64 * 1e6 / self.copy_mbytes_per_s).round() as Time
    }
}

/// An optional `[mpi]` parameter with provenance: `default` when absent.
fn opt_u64(t: &mut Table, key: &str, unit: &str, min: u64, default: u64) -> Result<u64, ParamError> {
    if t.has(key) {
        t.param_u64(key, unit, min)
    } else {
        Ok(default)
    }
}

/// Which MPI design a channel uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MpiDesign {
    Rc,
    Ud,
    Uc,
}

impl MpiDesign {
    /// Spec name.
    pub fn name(self) -> &'static str {
        match self {
            MpiDesign::Rc => "rc",
            MpiDesign::Ud => "ud",
            MpiDesign::Uc => "uc",
        }
    }
}

/// One end of an MPI connection: protocol state.
#[derive(Debug, Clone)]
pub struct MpiEnd {
    pub design: MpiDesign,
    /// Rendezvous data above this is striped over all rails (None: never).
    pub stripe_threshold: Option<u64>,
    /// The process owning this end.
    proc: u16,
    /// Queue pairs (rails), the first carrying everything that is not striped.
    rails: Vec<u32>,
    /// Next message number.
    next_msg: u64,
    /// Sender: rendezvous messages waiting for their CTS.
    waiting_cts: BTreeMap<u64, Message>,
    /// Receiver: FINs (RC) or fragments (UD) seen per message.
    parts_seen: BTreeMap<u64, u64>,
    /// UD sender: fragments waiting for window room, and fragments unacknowledged.
    ud_queue: VecDeque<(u64, MsgMeta)>,
    ud_unacked: u64,
    /// UD receiver: fragments since the last acknowledgement.
    ud_since_ack: u64,
    /// UD receiver: zero-copy QPs free in the pool, and RTSs waiting for one.
    zcopy_free: u64,
    zcopy_waiting: VecDeque<MsgMeta>,
    /// RC: work requests on each rail's send queue, and those waiting for room, by rail.
    sq_out: BTreeMap<u32, u64>,
    sq_backlog: BTreeMap<u32, VecDeque<(Op, u64, MsgMeta)>>,
}

impl MpiEnd {
    /// A fresh end of process `proc` over the queue pairs `rails`.
    pub fn new(design: MpiDesign, stripe_threshold: Option<u64>, spec: &MpiSpec, proc: u16, rails: Vec<u32>) -> Self {
        MpiEnd {
            zcopy_free: spec.ud_zcopy_qps,
            zcopy_waiting: VecDeque::new(),
            sq_out: BTreeMap::new(),
            sq_backlog: BTreeMap::new(),
            design,
            stripe_threshold,
            proc,
            rails,
            next_msg: 0,
            waiting_cts: BTreeMap::new(),
            parts_seen: BTreeMap::new(),
            ud_queue: VecDeque::new(),
            ud_unacked: 0,
            ud_since_ack: 0,
        }
    }

    /// Whether the library bounds this end's send queues (RC with `sq_depth_wqes`), so it
    /// must hear when a completion frees a slot ([`UlpEv::SqFree`]).
    pub fn bounds_send_queue(&self, spec: &MpiSpec) -> bool {
        self.design == MpiDesign::Rc && spec.sq_depth_wqes > 0
    }
}

/// The MPI library of one node: its ends, by channel.
#[derive(Debug, Default)]
pub struct Mpi {
    ends: BTreeMap<u32, MpiEnd>,
}

fn mpi_spec<H: UlpHost>(h: &H) -> &MpiSpec {
    h.profile().mpi.as_ref().expect("validated: MPI channels need a profile [mpi] section")
}

impl Mpi {
    /// Declares this node's end of MPI channel `chan`.
    pub fn add(&mut self, chan: u32, end: MpiEnd) {
        self.ends.insert(chan, end);
    }

    fn end_mut(&mut self, chan: u32) -> &mut MpiEnd {
        self.ends.get_mut(&chan).expect("MPI channel")
    }

    /// Posts a work request of the library on `qp`, or queues it while the RC send queue
    /// holds `sq_depth_wqes` (MVAPICH's backlog, drained as completions free slots).
    fn post<H: UlpHost>(&mut self, h: &mut H, chan: u32, qp: u32, op: Op, bytes: u64, meta: MsgMeta, t: Time) -> Time {
        let depth = mpi_spec(h).sq_depth_wqes;
        if depth > 0 && self.end_mut(chan).design == MpiDesign::Rc {
            let end = self.end_mut(chan);
            let out = end.sq_out.entry(qp).or_insert(0);
            if *out >= depth {
                end.sq_backlog.entry(qp).or_default().push_back((op, bytes, meta));
                return t;
            }
            *out += 1;
        }
        h.post(qp, op, bytes, meta, t)
    }

    /// Posts backlogged work requests of `chan` on `qp` into the slots completions freed.
    fn sq_free<H: UlpHost>(&mut self, h: &mut H, chan: u32, qp: u32) {
        let core = h.proc_core(self.end_mut(chan).proc);
        h.on_cpu(core, h.now(), |h, start| {
            let mut t = start;
            let end = self.end_mut(chan);
            let out = end.sq_out.entry(qp).or_insert(1);
            *out -= 1;
            if let Some((op, bytes, meta)) = end.sq_backlog.get_mut(&qp).and_then(|b| b.pop_front()) {
                *end.sq_out.get_mut(&qp).expect("entry") += 1;
                t = h.post(qp, op, bytes, meta, t);
            }
            t
        });
    }

    /// Sends queued UD fragments while the window allows.
    fn ud_pump<H: UlpHost>(&mut self, h: &mut H, chan: u32, mut t: Time) -> Time {
        let window = mpi_spec(h).ud_window_packets;
        let rail0 = self.end_mut(chan).rails[0];
        loop {
            let end = self.end_mut(chan);
            if end.ud_unacked >= window {
                break;
            }
            let Some((bytes, meta)) = end.ud_queue.pop_front() else { break };
            end.ud_unacked += 1;
            t = h.post(rail0, Op::Send, bytes, meta, t);
        }
        t
    }

    /// Lends a zero-copy QP to the message `rts` announced: posts a receive per datagram into
    /// the user buffer and answers with a CTS; returns when the CPU is done.
    fn zcopy_grant<H: UlpHost>(&mut self, h: &mut H, rts: MsgMeta, mut t: Time) -> Time {
        let ctrl_bytes = mpi_spec(h).ctrl_bytes;
        let rail0 = self.end_mut(rts.chan).rails[0];
        let n = rts.bytes.div_ceil(h.qp_mtu(rail0)).max(1);
        t += n * ns(h.profile().host.post_ns);
        let cts = MsgMeta { ulp: UlpKind::Cts, parts: 1, notify: true, ..rts };
        h.post(rail0, Op::Send, ctrl_bytes, cts, t)
    }

    /// An MPI message reached the library (after the poll noticed it).
    fn arrival<H: UlpHost>(&mut self, h: &mut H, meta: MsgMeta, cqe: bool) {
        let spec = mpi_spec(h).clone();
        let chan = meta.chan;
        let proc = self.end_mut(chan).proc;
        let core = h.proc_core(proc);
        h.on_cpu(core, h.now(), |h, start| self.arrival_on_cpu(h, &spec, proc, meta, cqe, start));
    }

    /// The library's work on an arrival, on the process's core from `start`; returns when
    /// it is done.
    fn arrival_on_cpu<H: UlpHost>(&mut self, h: &mut H, spec: &MpiSpec, proc: u16, meta: MsgMeta, cqe: bool, start: Time) -> Time {
        let mut t = start + if cqe { ns(h.profile().host.cqe_poll_ns) } else { 0 };
        let chan = meta.chan;
        let rail0 = self.end_mut(chan).rails[0];
        let deliver = Input::Arrived { chan, bytes: meta.bytes, tag: meta.tag };
        let ctrl = |ulp| MsgMeta { bytes: meta.bytes, ulp, parts: 1, notify: true, ..meta };
        match meta.ulp {
            UlpKind::Eager => {
                t += ns(spec.overhead_ns) + spec.copy_ps(meta.bytes);
                if self.end_mut(chan).design == MpiDesign::Uc {
                    // The UC design acknowledges every message; the sender completes on it.
                    t = h.post(rail0, Op::Send, spec.ctrl_bytes, ctrl(UlpKind::Ack { packets: 1 }), t);
                }
                t = self.deliver(h, proc, deliver, t);
            }
            UlpKind::Rts if self.end_mut(chan).design == MpiDesign::Ud => {
                t += ns(spec.overhead_ns);
                let end = self.end_mut(chan);
                if end.zcopy_free == 0 {
                    end.zcopy_waiting.push_back(meta);
                } else {
                    end.zcopy_free -= 1;
                    t = self.zcopy_grant(h, meta, t);
                }
            }
            UlpKind::Rts => {
                t += ns(spec.overhead_ns);
                t = self.post(h, chan, rail0, Op::Send, spec.ctrl_bytes, ctrl(UlpKind::Cts), t);
            }
            UlpKind::Cts if self.end_mut(chan).design == MpiDesign::Ud => {
                // Zero copy granted: every datagram straight from the user buffer.
                t += ns(spec.overhead_ns);
                let m = self.end_mut(chan).waiting_cts.remove(&meta.msg_id).expect("CTS for a pending RTS");
                let n = m.bytes.div_ceil(h.qp_mtu(rail0)).max(1);
                let data = MsgMeta { parts: n as u16, ..ctrl(UlpKind::ZcopyData { datagrams: 1 }) };
                t = h.post_datagrams(rail0, m.bytes, data, t);
            }
            UlpKind::ZcopyData { datagrams } => {
                // One completion per datagram to poll.
                t += (datagrams as u64).saturating_sub(1) * ns(h.profile().host.cqe_poll_ns);
                let end = self.end_mut(chan);
                let seen = end.parts_seen.entry(meta.msg_id).or_insert(0);
                *seen += datagrams as u64;
                if *seen >= meta.parts as u64 {
                    end.parts_seen.remove(&meta.msg_id);
                    // One acknowledgement for the message; its QP goes back to the pool.
                    t = h.post(rail0, Op::Send, spec.ctrl_bytes, ctrl(UlpKind::Ack { packets: 0 }), t);
                    let end = self.end_mut(chan);
                    match end.zcopy_waiting.pop_front() {
                        Some(rts) => t = self.zcopy_grant(h, rts, t),
                        None => end.zcopy_free += 1,
                    }
                    t += ns(spec.overhead_ns);
                    t = self.deliver(h, proc, deliver, t);
                }
            }
            UlpKind::Cts => {
                t += ns(spec.overhead_ns);
                let end = self.end_mut(chan);
                let m = end.waiting_cts.remove(&meta.msg_id).expect("CTS for a pending RTS");
                let qps = end.rails.clone();
                let stripe = end.stripe_threshold.is_some_and(|th| m.bytes > th) && qps.len() > 1;
                let rails: Vec<u32> = if stripe { qps } else { vec![qps[0]] };
                let n = rails.len() as u64;
                for (i, &q) in rails.iter().enumerate() {
                    let share = m.bytes / n + u64::from((i as u64) < m.bytes % n);
                    let data = MsgMeta { notify: false, parts: n as u16, ..ctrl(UlpKind::RndvData) };
                    t = self.post(h, chan, q, Op::RdmaWrite, share, data, t);
                    t = self.post(h, chan, q, Op::Send, spec.ctrl_bytes, MsgMeta { parts: n as u16, ..ctrl(UlpKind::Fin) }, t);
                }
            }
            UlpKind::Fin | UlpKind::Frag { .. } => {
                let end = self.end_mut(chan);
                let seen = end.parts_seen.entry(meta.msg_id).or_insert(0);
                *seen += 1;
                let complete = *seen >= meta.parts as u64;
                if complete {
                    end.parts_seen.remove(&meta.msg_id);
                }
                if let UlpKind::Frag { .. } = meta.ulp {
                    let frag = h.qp_mtu(rail0) - spec.header_bytes;
                    t += spec.copy_ps(frag.min(meta.bytes));
                    let end = self.end_mut(chan);
                    end.ud_since_ack += 1;
                    // Acknowledge every quarter window, and at the end of each message.
                    if complete || end.ud_since_ack >= (spec.ud_window_packets / 4).max(1) {
                        let packets = end.ud_since_ack as u32;
                        end.ud_since_ack = 0;
                        t = h.post(rail0, Op::Send, spec.ctrl_bytes, ctrl(UlpKind::Ack { packets }), t);
                    }
                }
                if complete {
                    t += ns(spec.overhead_ns);
                    t = self.deliver(h, proc, deliver, t);
                }
            }
            UlpKind::Ack { packets: 0 } => {} // a zero-copy message is confirmed: its buffer is free
            UlpKind::Ack { packets } => {
                let end = self.end_mut(chan);
                if end.design == MpiDesign::Ud {
                    end.ud_unacked = end.ud_unacked.saturating_sub(packets as u64);
                    t = self.ud_pump(h, chan, t);
                }
            }
            UlpKind::RndvData | UlpKind::Raw | UlpKind::Segment { .. } | UlpKind::Sdp(_) => {}
        }
        t
    }
}

impl Ulp for Mpi {
    const ID: UlpId = UlpId::Mpi;

    /// The program posted `m` (an MPI send) at CPU time `t`; returns when the CPU is done.
    fn send<H: UlpHost>(&mut self, h: &mut H, m: Message, mut t: Time) -> Time {
        let spec = mpi_spec(h).clone();
        let end = self.end_mut(m.chan);
        let msg_id = end.next_msg;
        end.next_msg += 1;
        let rail0 = end.rails[0];
        let mtu = h.qp_mtu(rail0);
        let design = end.design;
        let meta = |ulp, bytes| MsgMeta { chan: m.chan, tag: m.tag, msg_id, parts: 1, bytes, notify: true, ulp };
        t += ns(spec.overhead_ns);
        match design {
            MpiDesign::Rc if m.bytes <= spec.eager_threshold_bytes => {
                t += spec.copy_ps(m.bytes);
                t = self.post(h, m.chan, rail0, Op::RdmaWrite, m.bytes + spec.header_bytes, meta(UlpKind::Eager, m.bytes), t);
            }
            MpiDesign::Rc => {
                self.end_mut(m.chan).waiting_cts.insert(msg_id, m);
                t = self.post(h, m.chan, rail0, Op::Send, spec.ctrl_bytes, meta(UlpKind::Rts, m.bytes), t);
            }
            MpiDesign::Ud if spec.ud_zcopy(m.bytes, mtu) => {
                // Zero copy: ask the receiver for a QP and receives in the user buffer.
                self.end_mut(m.chan).waiting_cts.insert(msg_id, m);
                t = h.post(rail0, Op::Send, spec.ctrl_bytes, meta(UlpKind::Rts, m.bytes), t);
            }
            MpiDesign::Uc => {
                t += spec.copy_ps(m.bytes);
                t = h.post(rail0, Op::Send, m.bytes + spec.header_bytes, meta(UlpKind::Eager, m.bytes), t);
            }
            MpiDesign::Ud => {
                t += spec.copy_ps(m.bytes);
                let frag = mtu - spec.header_bytes;
                let n = m.bytes.div_ceil(frag).max(1);
                for i in 0..n {
                    let bytes = (m.bytes - i * frag).min(frag);
                    let fm = MsgMeta { parts: n as u16, ..meta(UlpKind::Frag { last: i + 1 == n }, m.bytes) };
                    self.end_mut(m.chan).ud_queue.push_back((bytes + spec.header_bytes, fm));
                }
                t = self.ud_pump(h, m.chan, t);
            }
        }
        t
    }

    fn handle<H: UlpHost>(&mut self, h: &mut H, ev: UlpEv) {
        match ev {
            UlpEv::Arrived { meta, cqe, .. } => self.arrival(h, meta, cqe),
            UlpEv::SqFree { chan, qp } => self.sq_free(h, chan, qp),
            UlpEv::Done { .. } | UlpEv::Timer { .. } | UlpEv::PollEnd { .. } => {}
        }
    }
}

//! A host: processes on CPU cores, the host bus, and the adapter with its send and receive
//! engines and queue pairs. One component per node; the layers inside are the structs of
//! `hw` and `transport`.

use crate::event::Ev;
use crate::fileio::{FileIo, FileStore};
use crate::hw::bus::Bus;
use crate::hw::cpu::{Cores, CpuPool};
use crate::hw::link::LinkSpec;
use crate::hw::memory::{self, Memory};
use crate::ulp::sock::SockHost;
use crate::profile::Profile;
use crate::transport::packet::{ext_bytes, Kind, MsgMeta, Packet, Service, UlpKind};
use crate::transport::qp::{packets_for, Active, Qp, RespJob, RespKind, Wr};
use interlab_kernel::{Component, ComponentId, Ctx, Time};
use interlab_patterns::{Input, Message, Op, Output, Program};
use std::collections::BTreeMap;
use std::sync::Arc;

use interlab_kernel::from_ns as ns;

/// How a channel uses the adapter's ports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PortUse {
    /// Every message on one QP.
    Single,
    /// Messages above `threshold` bytes split evenly over all the channel's QPs (one per
    /// port), each stripe followed by a control message on its QP; smaller ones on the first.
    Stripe { threshold: u64 },
}

/// A channel's end on this node.
#[derive(Debug, Clone)]
pub struct ChanEnd {
    /// QPs, one per port used.
    pub qps: Vec<u32>,
    pub ports: PortUse,
    /// Process owning this end.
    pub proc: u16,
    /// Next message number.
    pub next_msg: u64,
    /// Report local completions of sends and writes to the process (pipelined patterns).
    pub completions: bool,
    /// The MPI library on this end, when the channel is an MPI connection.
    pub mpi: Option<crate::ulp::mpi::MpiEnd>,
    /// The socket stack on this end, when the channel is a stream socket.
    pub sock: Option<crate::ulp::sock::SockEnd>,
}

/// Packets to send as one train when `left` packets of a message remain: whole trains only
/// in the bulk of long messages, single packets for short messages and message tails, so
/// interleaving between queue pairs stays packet-grained wherever it can matter.
fn train_len(train_max: u64, left: u64) -> u64 {
    if left >= 4 * train_max {
        train_max
    } else {
        1
    }
}

/// The packets of one train as the send engine cuts them: their number, payload and wire
/// bytes, and the kinds of the first and last (which describe the train). Summed as they are
/// pushed, so cutting a train allocates nothing.
struct TrainSum {
    service: Service,
    /// Bytes the port's link layer adds to every packet (`LinkLayer::header_bytes`).
    link_header: u64,
    count: u64,
    payload: u64,
    /// Wire bytes (every header included, framing excluded) of all the packets.
    wire_bytes: u64,
    first: Option<Kind>,
    last: Option<Kind>,
}

impl TrainSum {
    fn new(service: Service, link: &LinkSpec) -> Self {
        TrainSum { service, link_header: link.layer.header_bytes(), count: 0, payload: 0, wire_bytes: 0, first: None, last: None }
    }

    /// Adds the next packet: its kind and payload bytes.
    fn push(&mut self, (kind, payload): (Kind, u64)) {
        self.count += 1;
        self.payload += payload;
        self.wire_bytes += self.link_header + crate::transport::headers::transport_bytes(ext_bytes(kind, self.service), payload);
        self.first.get_or_insert(kind);
        self.last = Some(kind);
    }

    /// The train's kind, from its first and last packets.
    fn kind(&self) -> Kind {
        let (first, last) = (self.first.expect("a train has a packet"), self.last.expect("a train has a packet"));
        match (first, last) {
            (Kind::Data { op, first, .. }, Kind::Data { last, .. }) => Kind::Data { op, first, last },
            (Kind::ReadResp { first, .. }, Kind::ReadResp { last, .. }) => Kind::ReadResp { first, last },
            (k, _) => k,
        }
    }
}

/// Counts one part of `meta`'s message in `seen`; true when it was the last (always for
/// single-part messages), and the message's entry is then forgotten.
fn last_part(seen: &mut BTreeMap<(u32, u64), u16>, meta: &MsgMeta) -> bool {
    if meta.parts <= 1 {
        return true;
    }
    let k = (meta.chan, meta.msg_id);
    let c = seen.entry(k).or_insert(0);
    *c += 1;
    if *c < meta.parts {
        return false;
    }
    seen.remove(&k);
    true
}

/// Reorders a process's outputs to take one message of each channel in turn, keeping each
/// channel's own order (a select() loop over sockets that accept about one message each).
fn in_turn(out: &mut Vec<Output>) {
    let chan = |o: &Output| if let Output::Post(m) = o { m.chan } else { u32::MAX };
    let mut chans: Vec<u32> = Vec::new();
    for o in out.iter() {
        if !chans.contains(&chan(o)) {
            chans.push(chan(o));
        }
    }
    if chans.len() < 2 {
        return;
    }
    let mut queues: Vec<std::collections::VecDeque<Output>> = vec![Default::default(); chans.len()];
    for o in out.drain(..) {
        let i = chans.iter().position(|&c| c == chan(&o)).expect("listed");
        queues[i].push_back(o);
    }
    while queues.iter().any(|q| !q.is_empty()) {
        for q in queues.iter_mut() {
            out.extend(q.pop_front());
        }
    }
}

/// Bytes of the control message sent after each stripe.
pub const STRIPE_CTRL_BYTES: u64 = 16;

/// A process: a core and the pattern programs it runs (one per channel).
#[derive(Debug, Clone)]
pub struct Proc {
    pub core: u32,
    pub programs: Vec<Program>,
}

/// Counters of one node.
#[derive(Debug, Clone, Default)]
pub struct NodeStats {
    pub packets_sent: u64,
    pub packets_received: u64,
    /// Payload bytes placed in this node's memory by the adapter.
    pub payload_bytes_received: u64,
    /// Payload bytes read from this node's memory and sent.
    pub payload_bytes_sent: u64,
    /// Busy time per core, picoseconds.
    pub core_busy_ps: Vec<Time>,
}

/// One host with its adapter.
pub struct Node {
    /// Index among nodes.
    pub index: u32,
    pub(crate) prof: Arc<Profile>,
    switch: ComponentId,
    /// Switch port of this node's adapter port 0.
    switch_port_base: u16,
    /// The host bus.
    pub bus: Bus,
    tx_engine_free: Time,
    rx_engine_free: Time,
    port_free: Vec<Time>,
    tx_inflight: u32,
    rr: usize,
    /// Queue pairs.
    pub qps: Vec<Qp>,
    pub(crate) procs: Vec<Proc>,
    /// The cores processes and interrupts run on (own, or a shared machine's).
    pub(crate) cores: Cores,
    pub(crate) chans: BTreeMap<u32, ChanEnd>,
    reassembly: BTreeMap<(u32, u64), u16>,
    completion_parts: BTreeMap<(u32, u64), u16>,
    next_wr: u64,
    /// Counters.
    pub stats: NodeStats,
    /// Most packets the send engine hands on as one train (see [`Node::send_one`]).
    pub train_max: u64,
    out: Vec<Output>,
    /// The link behind each adapter port (InfiniBand, or Ethernet on a VPI port).
    pub links: Vec<LinkSpec>,
    /// Socket receive queues (interrupt contexts).
    pub sock: SockHost,
    /// An I/O server's daemon: its file store (parallel file I/O).
    pub file_io: Option<FileIo>,
    /// The memory system all cores' copies share (`[host] memory_mbytes_per_s`).
    pub memory: Option<Memory>,
    /// The bytes the application's buffer spans when it is larger than one message (a PVFS
    /// client reads its whole region into one buffer; a read daemon sends from its mapped
    /// file): the working set of socket copies from or into it.
    pub app_buffer_bytes: Option<u64>,
    /// The processes serve their channels in turn, one message each, rather than one
    /// channel's window after another (a select() loop over non-blocking sockets whose
    /// buffers hold about one message: the PVFS I/O daemon and client library).
    pub serve_in_turn: bool,
}

impl Node {
    /// A node attached to `switch` at ports `switch_port_base..+ports`.
    pub fn new(index: u32, prof: Arc<Profile>, switch: ComponentId, switch_port_base: u16) -> Self {
        let cores = prof.host.cores as usize;
        let ports = prof.adapter.ports as usize;
        // Trains small enough that every port keeps a train on the wire while the next ones
        // are fetched: prefetch depth / (4 x ports).
        let train_max = (prof.adapter.tx_depth as u64 / (4 * prof.adapter.ports as u64)).max(1);
        Node {
            index,
            bus: Bus::new(&prof.bus),
            prof: prof.clone(),
            switch,
            switch_port_base,
            tx_engine_free: 0,
            rx_engine_free: 0,
            port_free: vec![0; ports],
            tx_inflight: 0,
            rr: 0,
            qps: Vec::new(),
            procs: Vec::new(),
            cores: Cores::own(cores),
            chans: BTreeMap::new(),
            reassembly: BTreeMap::new(),
            completion_parts: BTreeMap::new(),
            next_wr: 0,
            stats: NodeStats { core_busy_ps: vec![0; cores], ..Default::default() },
            train_max,
            out: Vec::new(),
            links: (0..ports)
                .map(|p| match &prof.eth {
                    Some(e) if e.port as usize == p => e.link.clone(),
                    _ => prof.link.clone(),
                })
                .collect(),
            sock: SockHost::default(),
            file_io: None,
            memory: prof.host.memory_mbytes_per_s.map(Memory::new),
            app_buffer_bytes: None,
            serve_in_turn: false,
        }
    }

    /// Runs this node on a machine shared with other nodes (`[host] shared`): its core 0 is
    /// the machine's CPU `offset` (see [`Cores`]).
    pub fn share_cores(&mut self, pool: CpuPool, offset: usize) {
        self.cores = Cores::shared(pool, offset);
    }

    /// Adds a queue pair; returns its index.
    pub fn add_qp(&mut self, port: u8, service: Service, remote_node: u32, remote_port: u8, remote_qp: u32) -> u32 {
        let id = self.qps.len() as u32;
        self.qps.push(Qp::new(id, port, service, remote_node, remote_port, remote_qp));
        id
    }

    /// Adds a process bound to `core`; returns its index.
    pub fn add_proc(&mut self, core: u32) -> u16 {
        self.procs.push(Proc { core: core % self.cores.len() as u32, programs: Vec::new() });
        (self.procs.len() - 1) as u16
    }

    /// Gives process `proc` a program.
    pub fn add_program(&mut self, proc: u16, p: Program) {
        self.procs[proc as usize].programs.push(p);
    }

    /// Declares this node's end of a channel.
    pub fn add_chan(&mut self, chan: u32, end: ChanEnd) {
        self.chans.insert(chan, end);
    }

    /// The processes (to read their programs' samples after a run).
    pub fn procs(&self) -> &[Proc] {
        &self.procs
    }

    // ---------------------------------------------------------------- processes (CPU)

    fn run_programs(&mut self, proc: u16, input: Input, cqe: bool, ctx: &mut Ctx<'_, Ev>) {
        let core = self.procs[proc as usize].core as usize;
        let (slot, start) = self.cores.start(core, ctx.now());
        let mut t = start;
        if cqe {
            t += ns(self.prof.host.cqe_poll_ns);
        }
        let t = self.feed(proc, input, t, ctx);
        self.cores.finish(slot, t);
        self.stats.core_busy_ps[core] += t - start;
    }

    /// Gives `input` to process `proc`'s programs at CPU time `t` and posts what they ask
    /// for; returns when the CPU is done. The caller owns the core's accounting.
    pub(crate) fn feed(&mut self, proc: u16, input: Input, mut t: Time, ctx: &mut Ctx<'_, Ev>) -> Time {
        let mut out = std::mem::take(&mut self.out);
        out.clear();
        let chan = match input {
            Input::Start => None,
            Input::Arrived { chan, .. } | Input::Completed { chan, .. } => Some(chan),
        };
        // A file daemon stores what arrived before it goes on.
        if let (Some(f), Input::Arrived { bytes, .. }) = (self.file_io, input) {
            if !f.serves_reads {
                let cost = f.cost_ps(bytes, self.prof.stack.as_ref());
                // Over native verbs the adapter wrote the strip straight into the daemon's
                // buffer (its source was written by DMA and is read from memory); over a socket the
                // stack's own copy-out carried that traffic and left the strip in the cache.
                let verbs = chan.is_some_and(|c| self.chans.get(&c).is_some_and(|c| c.sock.is_none()));
                let miss = self.prof.stack.as_ref().map_or(1.0, |s| s.miss(f.file_bytes));
                let traffic = memory::copy_traffic(bytes, if verbs { 1.0 } else { 0.0 }, miss, verbs);
                t = if f.store == FileStore::Ram { self.copy_end(t, cost, traffic) } else { t + cost };
            }
        }
        for prog in self.procs[proc as usize].programs.iter_mut() {
            if chan.is_none_or(|c| c == prog.chan()) {
                prog.on(t, input, &mut out);
            }
        }
        if self.serve_in_turn {
            in_turn(&mut out);
        }
        for o in out.iter() {
            if let Output::Post(m) = o {
                // A file daemon reads each strip out of its store before sending it.
                if let Some(f) = self.file_io.filter(|f| f.serves_reads) {
                    let cost = f.cost_ps(m.bytes, self.prof.stack.as_ref());
                    // From the file (beyond the cache) into a registered buffer of a small
                    // pool (cached), which the adapter then reads.
                    let miss = self.prof.stack.as_ref().map_or(1.0, |s| s.miss(f.file_bytes));
                    let traffic = memory::copy_traffic(m.bytes, miss, 0.0, true);
                    t = if f.store == FileStore::Ram && f.copies_reads { self.copy_end(t, cost, traffic) } else { t + cost };
                }
                t = if self.chans.get(&m.chan).is_some_and(|c| c.mpi.is_some()) {
                    self.mpi_send(*m, t, ctx)
                } else if self.chans.get(&m.chan).is_some_and(|c| c.sock.is_some()) {
                    self.sock_send(*m, t, ctx)
                } else {
                    self.post_message(*m, t, ctx)
                };
            }
        }
        self.out = out;
        t
    }

    /// A CPU copy from `t` taking `cpu_ps` on an idle memory system and moving `traffic`
    /// bytes through it ([`memory::copy_traffic`]); returns its end (the node's memory system
    /// is shared by all cores and the adapter, see [`Memory`]).
    pub(crate) fn copy_end(&mut self, t: Time, cpu_ps: Time, traffic: u64) -> Time {
        memory::copy_end(self.memory.as_mut(), t, traffic, cpu_ps)
    }

    /// The bytes the application's buffer spans for a message of `msg_bytes`: the message,
    /// unless the node's program works on a larger region ([`Node::app_buffer_bytes`]).
    pub(crate) fn app_buffer(&self, msg_bytes: u64) -> u64 {
        self.app_buffer_bytes.unwrap_or(msg_bytes)
    }

    /// Posts one work request at CPU time `t` (the post costs CPU; the doorbell crosses the
    /// bus); returns when the CPU is done.
    pub(crate) fn post_wr(&mut self, qp: u32, op: Op, bytes: u64, meta: MsgMeta, t: Time, ctx: &mut Ctx<'_, Ev>) -> Time {
        let t = t + ns(self.prof.host.post_ns);
        let a = &self.prof.adapter;
        let inline = matches!(op, Op::Send | Op::RdmaWrite) && bytes <= a.inline_bytes;
        let wr = Wr { id: self.next_wr, op, bytes, meta, inline, datagrams: false };
        self.next_wr += 1;
        // BlueFlame: the WQE (with any inline data) goes with the doorbell.
        let mmio = if a.blueflame { a.wqe_bytes + if inline { bytes.div_ceil(16) * 16 } else { 0 } } else { a.doorbell_bytes };
        let arrive = self.bus.mmio_write(t, mmio);
        ctx.send_at(ctx.me(), arrive, Ev::Doorbell { qp, wr });
        t
    }

    /// Posts `bytes` as a list of one-MTU UD send WQEs with one doorbell (each WQE still
    /// costs the CPU a post and the adapter a fetch and its engine time); returns when the
    /// CPU is done.
    pub(crate) fn post_datagrams(&mut self, qp: u32, bytes: u64, meta: MsgMeta, t: Time, ctx: &mut Ctx<'_, Ev>) -> Time {
        let mtu = self.links[self.qps[qp as usize].port as usize].mtu_bytes as u64;
        let n = bytes.div_ceil(mtu).max(1);
        let t = t + n * ns(self.prof.host.post_ns);
        let wr = Wr { id: self.next_wr, op: Op::Send, bytes, meta, inline: false, datagrams: true };
        self.next_wr += 1;
        let arrive = self.bus.mmio_write(t, self.prof.adapter.doorbell_bytes);
        ctx.send_at(ctx.me(), arrive, Ev::Doorbell { qp, wr });
        t
    }

    /// Posts the work requests carrying `m`, starting on the CPU at `t`; returns when the CPU is done.
    fn post_message(&mut self, m: Message, mut t: Time, ctx: &mut Ctx<'_, Ev>) -> Time {
        let end = self.chans.get_mut(&m.chan).unwrap_or_else(|| panic!("node {}: no channel {}", self.index, m.chan));
        let msg_id = end.next_msg;
        end.next_msg += 1;
        let striped = matches!(end.ports, PortUse::Stripe { threshold } if m.bytes > threshold && end.qps.len() > 1
            && matches!(m.op, Op::Send | Op::RdmaWrite));
        let qps = end.qps.clone();
        let mut wrs: Vec<(u32, Op, u64, MsgMeta)> = Vec::new();
        let meta = MsgMeta { chan: m.chan, tag: m.tag, msg_id, parts: 1, bytes: m.bytes, notify: true, ulp: UlpKind::Raw };
        if striped {
            let n = qps.len() as u64;
            let parts = n as u16;
            for (i, &q) in qps.iter().enumerate() {
                let share = m.bytes / n + if (i as u64) < m.bytes % n { 1 } else { 0 };
                let pm = MsgMeta { parts, ..meta };
                if m.op == Op::Send {
                    wrs.push((q, Op::Send, share, pm));
                } else {
                    wrs.push((q, Op::RdmaWrite, share, MsgMeta { notify: false, ..pm }));
                    wrs.push((q, Op::Send, STRIPE_CTRL_BYTES, pm));
                }
            }
        } else {
            let bytes = if matches!(m.op, Op::FetchAdd | Op::CmpSwap) { 8 } else { m.bytes };
            wrs.push((qps[0], m.op, bytes, meta));
        }
        for (qp, op, bytes, meta) in wrs {
            t = self.post_wr(qp, op, bytes, meta, t, ctx);
        }
        t
    }

    fn notify(&mut self, at: Time, proc: u16, input: Input, cqe: bool, ctx: &mut Ctx<'_, Ev>) {
        let detect = at + ns(self.prof.host.poll_detect_ns);
        ctx.send_at(ctx.me(), detect, Ev::Notify { proc, input, cqe });
    }

    fn arrived(&mut self, at: Time, meta: MsgMeta, cqe: bool, ctx: &mut Ctx<'_, Ev>) {
        if self.chans.get(&meta.chan).is_some_and(|c| c.sock.is_some()) {
            // The completion raises an interrupt: the stack runs on the interrupt core.
            let bytes = match meta.ulp {
                UlpKind::Segment { bytes } => bytes,
                _ => 0,
            };
            ctx.send_at(ctx.me(), at, Ev::SockArrival { meta, packets: 1, bytes });
            return;
        }
        if let Some(end) = self.chans.get(&meta.chan).filter(|c| c.mpi.is_some()) {
            // The MPI library's progress engine sees it first.
            let proc = end.proc;
            let detect = at + ns(self.prof.host.poll_detect_ns);
            ctx.send_at(ctx.me(), detect, Ev::MpiArrival { proc, meta, cqe });
            return;
        }
        if !last_part(&mut self.reassembly, &meta) {
            return;
        }
        let proc = self.chans.get(&meta.chan).map(|c| c.proc).unwrap_or(0);
        self.notify(at, proc, Input::Arrived { chan: meta.chan, bytes: meta.bytes, tag: meta.tag }, cqe, ctx);
    }

    // ---------------------------------------------------------------- adapter: send side

    fn pump_tx(&mut self, ctx: &mut Ctx<'_, Ev>) {
        let a = &self.prof.adapter;
        let (depth, unacked, rd) = (a.tx_depth, a.rc_max_unacked_packets, a.max_rd_atomic);
        let n = self.qps.len();
        // Wait for room for a whole train: partial trains would only fragment the pipeline.
        while self.tx_inflight as u64 + self.train_max <= depth as u64 {
            let Some(q) = (0..n).map(|k| (self.rr + k) % n).find(|&q| self.qps[q].can_send(unacked, rd)) else {
                break;
            };
            self.rr = (q + 1) % n;
            self.send_one(q, ctx);
        }
    }

    /// Hands the engine the next packets of QP `q`: a *train* of up to [`Node::train_max`]
    /// consecutive packets of one message, processed and sent back to back. Every packet
    /// keeps its own headers, framing, engine time and PSN; only the events are shared.
    fn send_one(&mut self, q: usize, ctx: &mut Ctx<'_, Ev>) {
        let now = ctx.now();
        let port = self.qps[q].port as usize;
        let eth = self.is_eth(port);
        // Borrow the profile and the link beside the queue pair (disjoint fields of `self`).
        let a = &self.prof.adapter;
        let link = &self.links[port];
        let mtu = link.mtu_bytes as u64;
        let train_max = self.train_max;
        let qp = &mut self.qps[q];
        let service = qp.service;
        let mut engine = 0;
        // The packets of the train, summed as they are cut (no list kept).
        let mut pkts = TrainSum::new(service, link);
        let (wr_id, meta, psn, ack_req, atomic_rmw);
        let mut local_done = None;
        let mut inline_data = false;
        if let Some(job) = qp.resp.front_mut() {
            // Responder traffic first: read responses and atomic ACKs.
            if job.sent == 0 {
                engine += ns(a.responder_setup_ns);
            }
            wr_id = job.wr_id;
            meta = job.meta;
            psn = job.psn;
            ack_req = false;
            match job.kind {
                RespKind::Read { len } => {
                    let total = len.div_ceil(mtu).max(1);
                    let k = train_len(train_max, total - job.sent);
                    for j in 0..k {
                        let i = job.sent + j;
                        pkts.push((Kind::ReadResp { first: i == 0, last: i + 1 == total }, (len - i * mtu).min(mtu)));
                    }
                    job.sent += k;
                    atomic_rmw = false;
                    if job.sent == total {
                        qp.resp.pop_front();
                    }
                }
                RespKind::Atomic => {
                    pkts.push((Kind::AtomicAck, 0));
                    atomic_rmw = true;
                    qp.resp.pop_front();
                }
            }
        } else {
            let window_room = if service == Service::Rc {
                (a.rc_max_unacked_packets as u64).saturating_sub(qp.next_psn - qp.acked_psn).max(1)
            } else {
                u64::MAX
            };
            let head = qp.sq.front_mut().expect("can_send checked");
            let wr = head.wr;
            let k = train_len(train_max, head.packets - head.sent).min(window_room);
            if wr.datagrams {
                engine += k * ns(a.tx_wqe_ns);
            } else if head.sent == 0 {
                engine += ns(a.tx_wqe_ns);
            }
            inline_data = wr.inline;
            for j in 0..k {
                let i = head.sent + j;
                let (first, last) = (i == 0, i + 1 == head.packets);
                pkts.push(match wr.op {
                    Op::Send | Op::RdmaWrite => (Kind::Data { op: wr.op, first, last }, (wr.bytes - i * mtu).min(mtu)),
                    Op::RdmaRead => (Kind::ReadReq { len: wr.bytes }, 0),
                    Op::FetchAdd | Op::CmpSwap => (Kind::AtomicReq, 0),
                });
            }
            head.sent += k;
            let last = head.sent == head.packets;
            wr_id = wr.id;
            meta = wr.meta;
            atomic_rmw = false;
            let first_psn = qp.next_psn;
            psn = first_psn + k - 1;
            qp.next_psn += k;
            // The requester asks for an ACK on the last packet of a message and every half
            // window, so a long message never stalls on its own window.
            let half = (a.rc_max_unacked_packets as u64 / 2).max(1);
            ack_req = service == Service::Rc && (last || (first_psn / half != (psn + 1) / half));
            if last {
                qp.sq.pop_front();
                if wr.op.is_request_response() {
                    qp.reads_out += 1;
                }
                if service == Service::Rc && !wr.op.is_request_response() {
                    qp.unacked.push_back((psn, wr));
                }
                local_done = (service != Service::Rc && !wr.op.is_request_response()).then_some(wr.meta);
            }
        }
        let count = pkts.count;
        engine += count * ns(a.tx_packet_ns);
        let payload = pkts.payload;
        // Ethernet frames carry IP packets; MAC header, FCS, preamble and gap are framing.
        let wire: u64 = if eth { payload } else { pkts.wire_bytes };
        let kind = pkts.kind();
        let (dst_node, dst_port, dst_qp) = (qp.remote_node, qp.remote_port, qp.remote_qp);
        let (ser, prop) = (link.ser_ps(wire, count), link.prop_ps());
        // Send engine, then the payload's DMA read, then the port.
        let start = now.max(self.tx_engine_free);
        self.tx_engine_free = start + engine;
        let mut ready = self.tx_engine_free;
        if payload > 0 && !inline_data {
            ready = self.bus.dma_read(ready, payload);
        }
        if atomic_rmw {
            ready = self.bus.dma_read(ready, 8);
            self.bus.dma_write(ready, 8);
        }
        let depart = ready.max(self.port_free[port]);
        self.port_free[port] = depart + ser;
        let pkt = Packet { dst_node, dst_port, dst_qp, kind, service, psn, ack_req, payload, wire_bytes: wire, count: count as u32, wr_id, meta };
        ctx.send_at(self.switch, depart + prop, Ev::PktAtSwitch { in_port: self.switch_port_base + port as u16, ser_ps: ser, pkt });
        self.stats.packets_sent += count;
        self.stats.payload_bytes_sent += payload;
        self.tx_inflight += count as u32;
        ctx.send_at(ctx.me(), depart + ser, Ev::TxSlot { packets: count as u32 });
        if let Some(meta) = local_done {
            ctx.send_at(ctx.me(), depart + ser, Ev::LocalDone { meta });
        }
    }

    /// Sends an RC ACK for `psn` on `qp`'s port, ready at `t` (generated by the receive engine).
    fn send_ack(&mut self, q: usize, psn: u64, t: Time, ctx: &mut Ctx<'_, Ev>) {
        let qp = &self.qps[q];
        let kind = Kind::Ack;
        let port = qp.port as usize;
        let wire = self.links[port].packet_bytes(ext_bytes(kind, qp.service), 0);
        let ser = self.links[port].ser_ps(wire, 1);
        let depart = t.max(self.port_free[port]);
        self.port_free[port] = depart + ser;
        let pkt = Packet {
            dst_node: qp.remote_node,
            dst_port: qp.remote_port,
            dst_qp: qp.remote_qp,
            kind,
            service: qp.service,
            psn,
            ack_req: false,
            payload: 0,
            wire_bytes: wire,
            count: 1,
            wr_id: 0,
            meta: MsgMeta { chan: 0, tag: 0, msg_id: 0, parts: 1, bytes: 0, notify: false, ulp: UlpKind::Raw },
        };
        self.stats.packets_sent += 1;
        ctx.send_at(self.switch, depart + self.links[port].prop_ps(), Ev::PktAtSwitch { in_port: self.switch_port_base + port as u16, ser_ps: ser, pkt });
    }

    /// True when adapter port `port` runs Ethernet.
    pub(crate) fn is_eth(&self, port: usize) -> bool {
        self.prof.eth.as_ref().is_some_and(|e| e.port as usize == port)
    }

    // ---------------------------------------------------------------- adapter: receive side

    /// Every PSN up to `psn` on QP `q` is acknowledged at `t`: slide the window and write
    /// completions for the requests it retires.
    fn acknowledge(&mut self, q: usize, psn: u64, t: Time, ctx: &mut Ctx<'_, Ev>) {
        let qp = &mut self.qps[q];
        qp.acked_psn = qp.acked_psn.max(psn + 1);
        let mut retired = Vec::new();
        while qp.unacked.front().is_some_and(|(last, _)| *last <= psn) {
            retired.push(qp.unacked.pop_front().expect("checked").1.meta);
        }
        for meta in retired {
            self.complete_locally(t, meta, ctx);
            self.mpi_wqe_done(meta.chan, q as u32, t, ctx);
        }
    }

    /// A send or write completed at the requester at `t`: write its CQE and, when the
    /// process polls for completions, tell it.
    fn complete_locally(&mut self, t: Time, meta: MsgMeta, ctx: &mut Ctx<'_, Ev>) {
        let cqe = self.bus.dma_write(t, self.prof.adapter.cqe_bytes);
        if matches!(meta.ulp, UlpKind::Sdp(crate::transport::packet::SdpMsg::WrCompl { .. })) {
            ctx.send_at(ctx.me(), cqe, Ev::SockDone { meta });
            return;
        }
        if let Some(end) = self.chans.get(&meta.chan).filter(|c| c.completions) {
            // A stripe's control message completes the message; data stripes do not.
            if meta.notify {
                let proc = end.proc;
                if !last_part(&mut self.completion_parts, &meta) {
                    return;
                }
                self.notify(cqe, proc, Input::Completed { chan: meta.chan, tag: meta.tag }, true, ctx);
            }
        }
    }

    fn receive(&mut self, pkt: Packet, ctx: &mut Ctx<'_, Ev>) {
        let now = ctx.now();
        // The adapter's costs this needs, copied out so `self` stays free to borrow.
        let (rx_packet_ns, wqe_bytes, cqe_bytes, prefetch) = {
            let a = &self.prof.adapter;
            (a.rx_packet_ns, a.wqe_bytes, a.cqe_bytes, a.rx_wqe_prefetch)
        };
        self.stats.packets_received += pkt.count as u64;
        let start = now.max(self.rx_engine_free);
        let mut t = start + pkt.count as u64 * ns(rx_packet_ns);
        let q = pkt.dst_qp as usize;
        match pkt.kind {
            Kind::Data { op, first, last } => {
                let mut pkt = pkt;
                let datagram_list = matches!(pkt.meta.ulp, UlpKind::ZcopyData { .. });
                if datagram_list {
                    // Every datagram lands in a receive WQE of its own and completes alone.
                    t = self.bus.dma_read(t, pkt.count as u64 * wqe_bytes);
                    pkt.meta.ulp = UlpKind::ZcopyData { datagrams: pkt.count as u16 };
                } else if op == Op::Send && first {
                    // Fetch the receive WQE the message lands in; a prefetching adapter
                    // fetched it ahead (the bus still carries it, the message does not wait).
                    let fetched = self.bus.dma_read(t, wqe_bytes);
                    if !prefetch {
                        t = fetched;
                    }
                }
                self.rx_engine_free = t;
                let visible = if pkt.payload > 0 { self.bus.dma_write(t, pkt.payload) } else { t };
                self.stats.payload_bytes_received += pkt.payload;
                if pkt.service == Service::Ud && self.chans.get(&pkt.meta.chan).is_some_and(|c| c.sock.is_some()) {
                    // Datagrams (IPoIB-UD, Ethernet frames): every packet is its own receive
                    // completion, even when the sender's adapter cut them from one LSO request.
                    let cqe = self.bus.dma_write_behind(visible, cqe_bytes * pkt.count as u64);
                    ctx.send_at(ctx.me(), cqe, Ev::SockArrival { meta: pkt.meta, packets: pkt.count, bytes: pkt.payload });
                } else if (last || datagram_list) && pkt.meta.notify {
                    if op == Op::Send {
                        let cqes = if datagram_list { pkt.count as u64 } else { 1 };
                        let cqe = self.bus.dma_write_behind(visible, cqe_bytes * cqes);
                        self.arrived(cqe, pkt.meta, true, ctx);
                    } else {
                        self.arrived(visible, pkt.meta, false, ctx);
                    }
                }
                if pkt.ack_req {
                    self.send_ack(q, pkt.psn, t, ctx);
                }
            }
            Kind::ReadReq { len } => {
                self.rx_engine_free = t;
                let job = RespJob { kind: RespKind::Read { len }, wr_id: pkt.wr_id, psn: pkt.psn, meta: pkt.meta, sent: 0 };
                ctx.send_at(ctx.me(), t, Ev::RespReady { qp: pkt.dst_qp, job });
            }
            Kind::AtomicReq => {
                self.rx_engine_free = t;
                let job = RespJob { kind: RespKind::Atomic, wr_id: pkt.wr_id, psn: pkt.psn, meta: pkt.meta, sent: 0 };
                ctx.send_at(ctx.me(), t, Ev::RespReady { qp: pkt.dst_qp, job });
            }
            Kind::ReadResp { .. } | Kind::AtomicAck => {
                self.rx_engine_free = t;
                let bytes = if pkt.kind == Kind::AtomicAck { 8 } else { pkt.payload };
                let visible = self.bus.dma_write(t, bytes);
                self.stats.payload_bytes_received += pkt.payload;
                let done = match pkt.kind {
                    Kind::ReadResp { last, .. } => last,
                    _ => true,
                };
                if done {
                    // A response also acknowledges its request and everything before it.
                    self.acknowledge(q, pkt.psn, t, ctx);
                    let cqe = self.bus.dma_write_behind(visible, cqe_bytes);
                    let qp = &mut self.qps[q];
                    qp.reads_out -= 1;
                    if self.chans.get(&pkt.meta.chan).is_some_and(|c| c.sock.is_some()) {
                        ctx.send_at(ctx.me(), cqe, Ev::SockDone { meta: pkt.meta });
                        self.pump_tx(ctx);
                        return;
                    }
                    let proc = self.chans.get(&pkt.meta.chan).map(|c| c.proc).unwrap_or(0);
                    self.notify(cqe, proc, Input::Completed { chan: pkt.meta.chan, tag: pkt.meta.tag }, true, ctx);
                    self.pump_tx(ctx);
                }
            }
            Kind::Ack => {
                self.rx_engine_free = t;
                self.acknowledge(q, pkt.psn, t, ctx);
                self.pump_tx(ctx);
            }
        }
    }
}

impl Component<Ev> for Node {
    fn handle(&mut self, ev: Ev, ctx: &mut Ctx<'_, Ev>) {
        self.bus.advance(ctx.now());
        if let Some(m) = self.memory.as_mut() {
            m.advance(ctx.now());
        }
        match ev {
            Ev::Start => {
                let sdp: Vec<u32> = self.chans.iter().filter(|(_, c)| c.sock.as_ref().is_some_and(|s| s.stack.kind == crate::ulp::sock::SockKind::Sdp)).map(|(&k, _)| k).collect();
                for chan in sdp {
                    self.sdp_start(chan, ctx);
                }
                for p in 0..self.procs.len() {
                    self.run_programs(p as u16, Input::Start, false, ctx);
                }
            }
            Ev::Notify { proc, input, cqe } => self.run_programs(proc, input, cqe, ctx),
            Ev::MpiArrival { proc, meta, cqe } => self.mpi_arrival(proc, meta, cqe, ctx),
            Ev::SockArrival { meta, packets, bytes } => self.sock_arrival(meta, packets, bytes, ctx),
            Ev::SockPollEnd { queue, seq } => self.sock_poll_end(queue as usize, seq, ctx),
            Ev::SockTimer { chan, seq } => self.tcp_delack(chan, seq, ctx),
            Ev::SockDone { meta } => self.sdp_local_done(meta, ctx),
            Ev::SockKick { chan } => self.sdp_kick(chan, ctx),
            Ev::Doorbell { qp, wr } => {
                let a = &self.prof.adapter;
                let fetched = if a.blueflame {
                    ctx.now()
                } else {
                    // The WQE (with inline data, if any) is read from host memory.
                    let extra = if wr.inline { wr.bytes.div_ceil(16) * 16 } else { 0 };
                    let wqes = if wr.datagrams { packets_for(wr.op, wr.bytes, self.links[self.qps[qp as usize].port as usize].mtu_bytes as u64) } else { 1 };
                    self.bus.dma_read(ctx.now(), wqes * a.wqe_bytes + extra)
                };
                ctx.send_at(ctx.me(), fetched, Ev::WqeFetched { qp, wr });
            }
            Ev::WqeFetched { qp, wr } => {
                let port = self.qps[qp as usize].port as usize;
                let packets = packets_for(wr.op, wr.bytes, self.links[port].mtu_bytes as u64);
                self.qps[qp as usize].sq.push_back(Active { wr, packets, sent: 0 });
                self.pump_tx(ctx);
            }
            Ev::RespReady { qp, job } => {
                self.qps[qp as usize].resp.push_back(job);
                self.pump_tx(ctx);
            }
            Ev::TxSlot { packets } => {
                self.tx_inflight -= packets;
                self.pump_tx(ctx);
            }
            Ev::PktAtNode { pkt, .. } => self.receive(pkt, ctx),
            Ev::LocalDone { meta } => self.complete_locally(ctx.now(), meta, ctx),
            Ev::MpiSqFree { proc, chan, qp } => self.mpi_sq_free(proc, chan, qp, ctx),
            Ev::Stall { port, until } => {
                let p = &mut self.port_free[port as usize];
                *p = (*p).max(until);
            }
            Ev::PktAtSwitch { .. } => unreachable!("switch event delivered to a node"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use interlab_patterns::{Message, Op};

    #[test]
    fn serving_in_turn_takes_one_message_per_channel_and_keeps_each_channels_order() {
        let post = |chan, tag| Output::Post(Message { chan, bytes: 1, op: Op::Send, tag });
        let mut out = vec![post(0, 1), post(0, 2), post(0, 3), post(1, 1), post(2, 1), post(2, 2)];
        in_turn(&mut out);
        let order: Vec<(u32, u32)> = out.iter().map(|o| if let Output::Post(m) = o { (m.chan, m.tag) } else { unreachable!() }).collect();
        assert_eq!(order, vec![(0, 1), (1, 1), (2, 1), (0, 2), (2, 2), (0, 3)]);
    }
}

//! An InfiniBand adapter (HCA) on its host bus: send and receive engines, queue pairs,
//! ports and the links behind them. It carries raw verbs channels itself (a pattern's
//! messages as work requests, striped over ports if asked) and tells the host of what
//! completes through events: [`Ev::Notify`] for raw channels, [`Ev::Ulp`] for a channel an
//! upper-layer protocol runs (see [`crate::ulp`]).

use crate::event::Ev;
use crate::hw::bus::Bus;
use crate::hw::cqe::RxCqes;
use crate::hw::doorbell::{inline_limit, post_path};
use crate::hw::link::{LinkLayer, LinkSpec};
use crate::hw::memo::Memo2;
use crate::hw::switch::SharedSwitch;
use crate::hw::switch_link::SwitchLink;
use crate::hw::wire_queue::{Cut, Next, WireQueue};
use crate::profile::Profile;
use crate::transport::packet::{ext_bytes, Kind, MsgMeta, Packet, Service, UlpKind};
use crate::transport::qp::{packets_for, Active, Qp, RespJob, RespKind, Wr};
use crate::transport::rq::{Admit, RecvQueues};
use crate::ulp::{UlpEv, UlpId};
use interlab_kernel::{ComponentId, Ctx, Time};
use interlab_patterns::{Input, Message, Op};
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

/// A channel's end on this adapter: its queue pairs, and how the host hears of it.
#[derive(Debug, Clone)]
pub struct ChanEnd {
    /// QPs, one per port used (and per QP of a port).
    pub qps: Vec<u32>,
    pub ports: PortUse,
    /// Process owning this end.
    pub proc: u16,
    /// Next message number (raw channels).
    pub next_msg: u64,
    /// Report local completions of sends and writes to the process (pipelined patterns).
    pub completions: bool,
    /// The protocol the channel runs ([`UlpId::Raw`]: the pattern's messages on verbs).
    pub ulp: UlpId,
    /// The protocol bounds its send queues and hears when a completion frees a slot.
    pub sq_free: bool,
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
    /// The port's link layer, which frames every packet.
    layer: LinkLayer,
    count: u64,
    payload: u64,
    /// Wire bytes (every header included, framing excluded) of all the packets.
    wire_bytes: u64,
    first: Option<Kind>,
    last: Option<Kind>,
}

impl TrainSum {
    fn new(service: Service, link: &LinkSpec) -> Self {
        TrainSum { service, layer: link.layer, count: 0, payload: 0, wire_bytes: 0, first: None, last: None }
    }

    /// Adds the next packet: its kind and payload bytes.
    fn push(&mut self, packet: (Kind, u64)) {
        self.push_n(packet, 1);
    }

    /// Adds `n` packets alike, as `n` calls of [`TrainSum::push`] would.
    #[inline]
    fn push_n(&mut self, (kind, payload): (Kind, u64), n: u64) {
        self.count += n;
        self.payload += n * payload;
        self.wire_bytes += n * self.layer.packet_bytes(ext_bytes(kind, self.service), payload);
        self.first.get_or_insert(kind);
        self.last = Some(kind);
    }

    /// Adds packets `from..to` of a message of `total` packets, packet `i` being
    /// `packet(i)`, as pushing each in turn would. Every packet but the message's first
    /// and last is alike (neither first nor last, a full unit of payload), so those between
    /// are summed at once: a train's cost does not grow with its length.
    #[inline]
    fn push_packets(&mut self, from: u64, to: u64, total: u64, packet: impl Fn(u64) -> (Kind, u64)) {
        let mut i = from;
        if i == 0 && i < to {
            self.push(packet(0));
            i = 1;
        }
        let mid_end = to.min(total.saturating_sub(1)).max(i);
        if i < mid_end {
            debug_assert!((i..mid_end).all(|j| packet(j) == packet(i)), "packets between the first and last are alike");
            self.push_n(packet(i), mid_end - i);
            i = mid_end;
        }
        while i < to {
            self.push(packet(i));
            i += 1;
        }
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

/// Counters of one adapter.
#[derive(Debug, Clone, Default)]
pub struct AdapterStats {
    pub packets_sent: u64,
    pub packets_received: u64,
    /// Payload bytes placed in this node's memory by the adapter.
    pub payload_bytes_received: u64,
    /// Payload bytes read from this node's memory and sent.
    pub payload_bytes_sent: u64,
}

/// The profile's per-event costs in integer picoseconds, converted once when the adapter
/// is built: the same integers a conversion per use gives (`ns` is a pure function), without
/// a float multiply and rounding per packet.
#[derive(Debug, Clone, Copy)]
struct CostsPs {
    /// `[host] post_ns`.
    post: Time,
    /// `[host] poll_detect_ns`.
    poll_detect: Time,
    /// `[host] poll_detect_ns + cqe_poll_ns + post_ns` (summed as real numbers, then
    /// converted): the program takes a receive completion and posts the WQE again.
    repost: Time,
    /// `[adapter] responder_setup_ns`, `tx_wqe_ns`, `tx_packet_ns`, `rx_packet_ns`.
    responder_setup: Time,
    tx_wqe: Time,
    tx_packet: Time,
    rx_packet: Time,
}

impl CostsPs {
    fn new(prof: &Profile) -> Self {
        let (h, a) = (&prof.host, &prof.adapter);
        CostsPs {
            post: ns(h.post_ns),
            poll_detect: ns(h.poll_detect_ns),
            repost: ns(h.poll_detect_ns + h.cqe_poll_ns + h.post_ns),
            responder_setup: ns(a.responder_setup_ns),
            tx_wqe: ns(a.tx_wqe_ns),
            tx_packet: ns(a.tx_packet_ns),
            rx_packet: ns(a.rx_packet_ns),
        }
    }
}

/// Timing of one adapter port's link, computed once or remembered: its propagation delay
/// and the serialisation times of the last two train shapes `(wire_bytes, packets)` it sent,
/// most recent first (a stream's data trains and its ACKs). Serialisation is a pure
/// function of the shape, so a hit returns exactly what [`LinkSpec::ser_ps`] gives.
#[derive(Debug, Clone)]
struct PortClock {
    prop_ps: Time,
    /// `(0, 0)` is never looked up (a train has at least one packet).
    memo: Memo2<(u64, u64), Time>,
}

impl PortClock {
    fn new(link: &LinkSpec) -> Self {
        PortClock { prop_ps: link.prop_ps(), memo: Memo2::new(((0, 0), 0)) }
    }

    /// `link.ser_ps(wire_bytes, packets)` for this port's `link`.
    #[inline]
    fn ser_ps(&mut self, link: &LinkSpec, wire_bytes: u64, packets: u64) -> Time {
        self.memo.get_or((wire_bytes, packets), || link.ser_ps(wire_bytes, packets))
    }
}

/// When the adapter takes a work request whose doorbell has arrived ([`Adapter::fetch`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fetch {
    /// A BlueFlame socket train: it joins the send queue in the doorbell's event.
    WithDoorbell,
    /// At this time: the doorbell's (BlueFlame) or when the WQE read from memory arrived.
    At(Time),
}

/// Bytes of the control message sent after each stripe.
pub const STRIPE_CTRL_BYTES: u64 = 16;

/// One adapter on its host bus.
pub struct Adapter {
    /// Index of the node among nodes.
    pub index: u32,
    prof: Arc<Profile>,
    switch: ComponentId,
    /// Switch port of this adapter's port 0.
    pub switch_port_base: u16,
    /// The host bus.
    pub bus: Bus,
    tx_engine_free: Time,
    rx_engine_free: Time,
    port_free: Vec<Time>,
    /// Trains cut and waiting to leave, per port (a credit stall holds them).
    wire: Vec<WireQueue>,
    tx_inflight: u32,
    rr: usize,
    /// Queue pairs.
    pub qps: Vec<Qp>,
    /// Bit `q % 64` of word `q / 64` set while queue pair `q` has work for the send engine
    /// (send queue or responder jobs not empty): [`Adapter::pump_tx`] looks at those only.
    work: Vec<u64>,
    /// Channel ends by channel number (a scenario numbers its channels densely from 0, so
    /// a vector indexed by number, looked up per packet without a tree search).
    chans: Vec<Option<ChanEnd>>,
    reassembly: BTreeMap<(u32, u64), u16>,
    completion_parts: BTreeMap<(u32, u64), u16>,
    next_wr: u64,
    /// Counters.
    pub stats: AdapterStats,
    /// Most packets the send engine hands on as one train (see [`Adapter::send_one`]).
    pub train_max: u64,
    /// Socket trains (TCP over a datagram link in trains): 0 off; otherwise the most packets
    /// a socket stack hands the adapter as one datagram list, and the adapter sends a
    /// socket channel's datagram send as one train (tail included). Set by the scenario.
    pub sock_train_max: u64,
    /// The link behind each adapter port (InfiniBand, or Ethernet on a VPI port): the one
    /// place a port's MTU is read.
    pub links: Vec<LinkSpec>,
    /// Receive completions on their way to memory (CQE compression).
    rx_cqes: RxCqes,
    /// Receive queues (or the shared one) and RNR NAKs.
    pub rqs: RecvQueues,
    /// The profile sets an inline limit per software (else `inline_bytes` for all).
    inline_by_software: bool,
    /// The profile's per-event costs in picoseconds.
    costs: CostsPs,
    /// Per port: propagation and remembered serialisation times of `links`.
    clocks: Vec<PortClock>,
    /// Sends packets to the switch (through it, where it is shared).
    switch_link: SwitchLink,
    /// Take the next step of a work request's doorbell chain (doorbell write, doorbell,
    /// WQE fetched) in the same event where the kernel's queue shows that its own event
    /// would be the next one taken, nothing between ([`Ctx::advance_to`]): the same
    /// simulation in fewer events. False: one event per step (the reference the merged
    /// chain is tested against).
    pub merge_doorbells: bool,
    /// Doorbells taken in their write's event, and WQEs that joined the send queue in
    /// their doorbell's event: counters of the merges.
    pub merged_doorbells: u64,
    pub merged_fetches: u64,
}

impl Adapter {
    /// An adapter attached to `switch` at ports `switch_port_base..+ports`, with the links
    /// `links` behind its ports.
    pub fn new(index: u32, prof: Arc<Profile>, switch: ComponentId, switch_port_base: u16, links: Vec<LinkSpec>) -> Self {
        let ports = prof.adapter.ports as usize;
        // Trains small enough that every port keeps a train on the wire while the next ones
        // are fetched: prefetch depth / (4 x ports).
        let train_max = (prof.adapter.tx_depth as u64 / (4 * prof.adapter.ports as u64)).max(1);
        let rx_cqes = RxCqes::new(prof.adapter.cqe_bytes, prof.adapter.cqe_compression);
        let a = &prof.adapter;
        let rqs = RecvQueues::new(a.rq_wqes, a.srq, (a.rnr_timer_us * 1e6).round() as Time);
        let inline_by_software = a.inline_send_bytes.is_some()
            || prof.mpi.as_ref().is_some_and(|m| m.inline_bytes.is_some())
            || prof.stack.as_ref().is_some_and(|s| s.inline_bytes.is_some());
        let costs = CostsPs::new(&prof);
        let clocks = links.iter().map(PortClock::new).collect();
        Adapter {
            index,
            bus: Bus::new(&prof.bus),
            prof,
            switch,
            switch_port_base,
            tx_engine_free: 0,
            rx_engine_free: 0,
            port_free: vec![0; ports],
            wire: links.iter().map(|l| WireQueue::new(2 * l.prop_ps())).collect(),
            tx_inflight: 0,
            rr: 0,
            qps: Vec::new(),
            work: Vec::new(),
            chans: Vec::new(),
            reassembly: BTreeMap::new(),
            completion_parts: BTreeMap::new(),
            next_wr: 0,
            stats: AdapterStats::default(),
            train_max,
            sock_train_max: 0,
            links,
            rx_cqes,
            rqs,
            inline_by_software,
            costs,
            clocks,
            switch_link: SwitchLink::new(),
            merge_doorbells: true,
            merged_doorbells: 0,
            merged_fetches: 0,
        }
    }

    /// Adds a queue pair; returns its index.
    pub fn add_qp(&mut self, port: u8, service: Service, remote_node: u32, remote_port: u8, remote_qp: u32) -> u32 {
        let id = self.qps.len() as u32;
        self.qps.push(Qp::new(id, port, service, remote_node, remote_port, remote_qp));
        self.work.resize(self.qps.len().div_ceil(64), 0);
        id
    }

    /// Declares this adapter's end of a channel.
    pub fn add_chan(&mut self, chan: u32, end: ChanEnd) {
        let i = chan as usize;
        if self.chans.len() <= i {
            self.chans.resize(i + 1, None);
        }
        self.chans[i] = Some(end);
    }

    /// The protocol channel `chan` runs, if the channel is known.
    pub fn chan_ulp(&self, chan: u32) -> Option<UlpId> {
        self.chan(chan).map(|c| c.ulp)
    }

    /// Channel `chan`'s end on this adapter, if it has one.
    #[inline]
    fn chan(&self, chan: u32) -> Option<&ChanEnd> {
        self.chans.get(chan as usize).and_then(Option::as_ref)
    }

    /// The profile the adapter was built from.
    pub fn profile(&self) -> &Profile {
        &self.prof
    }

    /// The MTU of the link behind queue pair `qp`'s port, bytes.
    pub fn qp_mtu(&self, qp: u32) -> u64 {
        self.links[self.qps[qp as usize].port as usize].mtu_bytes as u64
    }

    /// Posts one work request at CPU time `t` (the post costs CPU; the doorbell crosses the
    /// bus); returns when the CPU is done.
    pub fn post_wr(&mut self, qp: u32, op: Op, bytes: u64, meta: MsgMeta, t: Time, ctx: &mut Ctx<'_, Ev>) -> Time {
        let t = t + self.costs.post;
        let a = &self.prof.adapter;
        let inline = matches!(op, Op::Send | Op::RdmaWrite)
            && bytes <= if self.inline_by_software {
                let ulp = self.chan(meta.chan).map_or(UlpId::Raw, |c| c.ulp);
                inline_limit(&self.prof, ulp, op)
            } else {
                a.inline_bytes
            };
        let wr = Wr { id: self.next_wr, op, bytes, meta, inline, datagram_bytes: 0 };
        self.next_wr += 1;
        // BlueFlame: the WQE (with any inline data) goes with the doorbell.
        let mmio = post_path(a, op, inline, bytes).mmio_bytes;
        ctx.send_at(ctx.me(), t, Ev::DoorbellWrite { qp, wr, bytes: mmio });
        t
    }

    /// Posts `bytes` as a list of one-MTU UD send WQEs with one doorbell (each WQE still
    /// costs the CPU a post and the adapter a fetch and its engine time); returns when the
    /// CPU is done.
    pub fn post_datagrams(&mut self, qp: u32, bytes: u64, meta: MsgMeta, t: Time, ctx: &mut Ctx<'_, Ev>) -> Time {
        let mtu = self.links[self.qps[qp as usize].port as usize].mtu_bytes as u64;
        let n = bytes.div_ceil(mtu).max(1);
        let t = t + n * self.costs.post;
        let wr = Wr { id: self.next_wr, op: Op::Send, bytes, meta, inline: false, datagram_bytes: mtu as u32 };
        self.next_wr += 1;
        ctx.send_at(ctx.me(), t, Ev::DoorbellWrite { qp, wr, bytes: self.prof.adapter.doorbell_bytes });
        t
    }

    /// A socket train: `bytes` as a list of UD send WQEs of `packet_bytes` each (the last
    /// may be shorter) with one doorbell written at CPU time `t`. The caller has charged
    /// the CPU each WQE's post ([`Adapter::post_ps`]) where the stack built it, so the
    /// train costs the CPU what the same requests posted one by one cost.
    pub fn post_train(&mut self, qp: u32, packet_bytes: u64, bytes: u64, meta: MsgMeta, t: Time, ctx: &mut Ctx<'_, Ev>) {
        debug_assert!(packet_bytes > 0 && packet_bytes <= self.qp_mtu(qp), "a socket train's datagrams fit the MTU");
        // Every datagram's WQE takes the path it would posted alone (inline data, BlueFlame):
        // their writes go together.
        let a = &self.prof.adapter;
        let inline = packet_bytes <= if self.inline_by_software { inline_limit(&self.prof, UlpId::Sock, Op::Send) } else { a.inline_bytes };
        let n = packets_for(Op::Send, bytes, packet_bytes);
        let mmio = n * post_path(a, Op::Send, inline, packet_bytes).mmio_bytes;
        let wr = Wr { id: self.next_wr, op: Op::Send, bytes, meta, inline, datagram_bytes: packet_bytes as u32 };
        self.next_wr += 1;
        ctx.send_at(ctx.me(), t, Ev::DoorbellWrite { qp, wr, bytes: mmio });
    }

    /// The CPU's cost of posting one work request (`[host] post_ns`), ps.
    pub fn post_ps(&self) -> Time {
        self.costs.post
    }

    /// The CPU writes a doorbell of `bytes` for `wr` now. A post is computed when its CPU
    /// work starts, often ahead of the simulation (a loop of posts in one CPU slot); booking
    /// the write on the bus only when the CPU gets there keeps later posts from fencing off
    /// the link ahead of transfers that come first (a transfer takes one idle gap, so
    /// doorbells booked ahead every microsecond would leave no gap for a 2 KiB payload read).
    ///
    /// Where no event at all is due by the doorbell's arrival, its own event would be the
    /// next one taken, with the bus as this one leaves it: the adapter takes it here, at
    /// its arrival ([`Adapter::merge_doorbells`]).
    pub fn doorbell_write(&mut self, qp: u32, wr: Wr, bytes: u64, ctx: &mut Ctx<'_, Ev>) {
        let arrive = self.bus.mmio_write(ctx.now(), bytes);
        if self.merge_doorbells && self.advance(arrive, ctx) {
            self.merged_doorbells += 1;
            self.doorbell(qp, wr, ctx);
        } else {
            ctx.send_at(ctx.me(), arrive, Ev::Doorbell { qp, wr });
        }
    }

    /// Moves the handler's clock on to `t` when no event is due by then (see
    /// [`Ctx::advance_to`]), and catches up the adapter as an event at `t` would first
    /// (the node's other catch-up, the host memory's, only forgets what ended).
    fn advance(&mut self, t: Time, ctx: &mut Ctx<'_, Ev>) -> bool {
        if !ctx.advance_to(t) {
            return false;
        }
        self.catch_up(t);
        true
    }

    /// Brings the adapter to `now` before anything happens then: the credit stalls that
    /// reached its ports are put in force and the bus forgets what ended.
    #[inline]
    pub fn catch_up(&mut self, now: Time) {
        self.stalls_before(now);
        self.bus.advance(now);
    }

    /// Posts the work requests carrying `m`, starting on the CPU at `t`; returns when the CPU is done.
    pub fn post_message(&mut self, m: Message, mut t: Time, ctx: &mut Ctx<'_, Ev>) -> Time {
        let end = self.chans.get_mut(m.chan as usize).and_then(Option::as_mut).unwrap_or_else(|| panic!("node {}: no channel {}", self.index, m.chan));
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
        let detect = at + self.costs.poll_detect;
        ctx.send_at(ctx.me(), detect, Ev::Notify { proc, input, cqe });
    }

    /// A message of `meta.chan` is in memory at `at` (`cqe`: with a completion): the
    /// channel's protocol is told (after the poll's detection delay if it polls); a raw
    /// channel's process is told once every part of the message is in.
    fn arrived(&mut self, at: Time, meta: MsgMeta, cqe: bool, ctx: &mut Ctx<'_, Ev>) {
        let route = self.chan(meta.chan).map(|c| (c.ulp, c.proc));
        if let Some((ulp, _)) = route.filter(|r| r.0 != UlpId::Raw) {
            let at = if ulp.polls() { at + self.costs.poll_detect } else { at };
            ctx.send_at(ctx.me(), at, Ev::Ulp { ulp, ev: UlpEv::Arrived { meta, packets: 1, bytes: 0, cqe } });
            return;
        }
        if !last_part(&mut self.reassembly, &meta) {
            return;
        }
        let proc = route.map_or(0, |r| r.1);
        self.notify(at, proc, Input::Arrived { chan: meta.chan, bytes: meta.bytes, tag: meta.tag }, cqe, ctx);
    }

    // ---------------------------------------------------------------- adapter: send side
    // ---------------------------------------------------------------- adapter: send side

    /// The send engine looks for work: hands queue pairs' packets to the engine while it has
    /// room. Most calls (a freed slot, an ACK, a doorbell while trains are still out) find
    /// no queue pair with work at all; that answer (what the search finds first) is read
    /// from the work bits here, without the call.
    #[inline]
    fn pump_tx(&mut self, ctx: &mut Ctx<'_, Ev>) {
        if self.has_work() {
            self.pump_work(ctx);
        }
    }

    /// True when some queue pair has work for the send engine ([`Adapter::work`]).
    #[inline]
    fn has_work(&self) -> bool {
        match self.work.as_slice() {
            [] => false,
            [w] => *w != 0,
            words => words.iter().any(|&w| w != 0),
        }
    }

    /// [`Adapter::pump_tx`] when some queue pair has work.
    #[inline(never)]
    fn pump_work(&mut self, ctx: &mut Ctx<'_, Ev>) {
        let a = &self.prof.adapter;
        let (depth, unacked, rd) = (a.tx_depth, a.rc_max_unacked_packets, a.max_rd_atomic);
        let n = self.qps.len();
        let depth = depth as u64;
        // Verbs traffic waits for room for a whole train: partial trains would only fragment
        // the pipeline. A socket channel's datagrams go as soon as one packet has room, as
        // they would packet by packet (see [`Adapter::sock_datagrams`]).
        while (self.tx_inflight as u64) < depth {
            // Round robin from `rr`: the first queue pair that can send among those with work.
            let Some(q) = self.next_sender(self.rr.min(n), n, unacked, rd) else { break };
            if self.tx_inflight as u64 + self.train_max > depth && !self.sock_datagrams(q) {
                break;
            }
            self.rr = if q + 1 == n { 0 } else { q + 1 };
            self.send_one(q, ctx);
            self.note_work(q);
        }
    }

    /// Sets or clears queue pair `q`'s bit in [`Adapter::work`] after its queues changed.
    #[inline]
    fn note_work(&mut self, q: usize) {
        let qp = &self.qps[q];
        let bit = 1 << (q % 64);
        if qp.sq.is_empty() && qp.resp.is_empty() {
            self.work[q / 64] &= !bit;
        } else {
            self.work[q / 64] |= bit;
        }
    }

    /// The first queue pair that can send in round-robin order from `rr` (`rr`..`n`, then
    /// `0`..`rr`), looking only at those with work ([`Adapter::work`]): the one a scan of
    /// every queue pair finds, since one without work cannot send.
    #[inline]
    fn next_sender(&self, rr: usize, n: usize, unacked: u32, rd: u32) -> Option<usize> {
        if n <= 64 {
            // One word (every scenario so far): those at or after `rr`, then those before.
            let all = self.work.first().copied().unwrap_or(0);
            let after = !0u64 << (rr % 64);
            return [all & after, all & !after].into_iter().find_map(|bits| self.first_sender(0, bits, unacked, rd));
        }
        for (lo, hi) in [(rr, n), (0, rr)] {
            for w in lo / 64..hi.div_ceil(64) {
                let mut bits = self.work[w];
                if w == lo / 64 {
                    bits &= !0u64 << (lo % 64);
                }
                if (w + 1) * 64 > hi {
                    bits &= (1u64 << (hi % 64)) - 1;
                }
                if let Some(q) = self.first_sender(w, bits, unacked, rd) {
                    return Some(q);
                }
            }
        }
        None
    }

    /// The first queue pair that can send among those of bits `bits` of word `w`.
    #[inline]
    fn first_sender(&self, w: usize, mut bits: u64, unacked: u32, rd: u32) -> Option<usize> {
        while bits != 0 {
            let q = w * 64 + bits.trailing_zeros() as usize;
            if self.qps[q].can_send(unacked, rd) {
                return Some(q);
            }
            bits &= bits - 1;
        }
        None
    }

    /// True when QP `q` next sends a socket channel's datagrams (IPoIB-UD, Ethernet): a UD
    /// queue pair of a socket channel with no responder work. Their packets each end in a
    /// receive completion of their own that the stack takes one by one, so the send engine
    /// keeps their pipeline packet-grained: it starts one as soon as the engine has room for
    /// one packet, and without socket trains sends them one packet at a time (a socket
    /// train, sized by the stack, is taken whole: cut to the room it fragments into many
    /// short trains and loses most of its saving in events).
    fn sock_datagrams(&self, q: usize) -> bool {
        let qp = &self.qps[q];
        qp.service == Service::Ud
            && qp.resp.is_empty()
            && qp.sq.front().is_some_and(|h| self.sock_chan(h.wr.meta.chan))
    }

    /// True when channel `chan` belongs to a socket stack.
    fn sock_chan(&self, chan: u32) -> bool {
        self.chan(chan).is_some_and(|c| c.ulp == UlpId::Sock)
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
        let costs = self.costs;
        let mtu = link.mtu_bytes as u64;
        let train_max = self.train_max;
        let sock_train_max = self.sock_train_max;
        // Socket trains: a UD send of a socket channel leaves in trains of up to
        // `sock_train_max` packets (see [`Adapter::sock_train_max`]).
        let sock = self.sock_datagrams(q);
        let sock_trains = sock_train_max > 1 && sock;
        let qp = &mut self.qps[q];
        let service = qp.service;
        let mut engine = 0;
        // The packets of the train, summed as they are cut (no list kept).
        let mut pkts = TrainSum::new(service, link);
        let (wr_id, meta, psn, ack_req, atomic_rmw);
        let mut local_done = false;
        let mut inline_data = false;
        if let Some(job) = qp.resp.front_mut() {
            // Responder traffic first: read responses and atomic ACKs.
            if job.sent == 0 {
                engine += costs.responder_setup;
            }
            wr_id = job.wr_id;
            meta = job.meta;
            psn = job.psn;
            ack_req = false;
            match job.kind {
                RespKind::Read { len } => {
                    let total = len.div_ceil(mtu).max(1);
                    let k = train_len(train_max, total - job.sent);
                    pkts.push_packets(job.sent, job.sent + k, total, |i| (Kind::ReadResp { first: i == 0, last: i + 1 == total }, (len - i * mtu).min(mtu)));
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
            let unit = wr.packet_unit(mtu);
            let left = head.packets - head.sent;
            let k = match (sock, sock_trains, wr.datagram_bytes > 0) {
                // A socket train as the stack sized it.
                (true, true, true) => left.min(sock_train_max),
                // An LSO request with socket trains: trains of a port's prefetch share in
                // its bulk only.
                (true, true, false) => train_len(sock_train_max, left),
                // A socket channel's datagrams without socket trains: packet by packet (the
                // receiving stack takes a train as one completion: one interrupt, one TCP
                // input, fewer ACKs; 14 % more IPoIB-UD LSO bandwidth than packet by packet).
                (true, false, _) => 1,
                (false, _, _) => train_len(train_max, left).min(window_room),
            };
            if wr.datagram_bytes > 0 {
                engine += k * costs.tx_wqe;
            } else if head.sent == 0 {
                engine += costs.tx_wqe;
            }
            inline_data = wr.inline;
            let total = head.packets;
            pkts.push_packets(head.sent, head.sent + k, total, |i| {
                let (first, last) = (i == 0, i + 1 == total);
                match wr.op {
                    Op::Send | Op::RdmaWrite => (Kind::Data { op: wr.op, first, last }, (wr.bytes - i * unit).min(unit)),
                    Op::RdmaRead => (Kind::ReadReq { len: wr.bytes }, 0),
                    Op::FetchAdd | Op::CmpSwap => (Kind::AtomicReq, 0),
                }
            });
            head.sent += k;
            let last = head.sent == head.packets;
            wr_id = wr.id;
            meta = wr.meta;
            atomic_rmw = false;
            let first_psn = qp.next_psn;
            psn = first_psn + k - 1;
            qp.next_psn += k;
            // The requester asks for an ACK on the last packet of a message and every half
            // window, so a long message never stalls on its own window: when the train's
            // PSNs `first_psn..=psn` reach a multiple of `half`, that is when
            // `first_psn / half != (psn + 1) / half`, or (one division, or none for the
            // power of two every profile has) `first_psn % half + k >= half`.
            let half = (a.rc_max_unacked_packets as u64 / 2).max(1);
            ack_req = service == Service::Rc
                && (last || {
                    let rem = if half.is_power_of_two() { first_psn & (half - 1) } else { first_psn % half };
                    rem + k >= half
                });
            if last {
                qp.sq.pop_front();
                if wr.op.is_request_response() {
                    qp.reads_out += 1;
                }
                if service == Service::Rc && !wr.op.is_request_response() {
                    qp.unacked.push_back((psn, wr));
                }
                // The packet's `meta` is the request's (see `Cut::local_done`).
                local_done = service != Service::Rc && !wr.op.is_request_response();
            }
        }
        let count = pkts.count;
        engine += count * costs.tx_packet;
        let payload = pkts.payload;
        // Ethernet frames carry IP packets; MAC header, FCS, preamble and gap are framing.
        let wire: u64 = if eth { payload } else { pkts.wire_bytes };
        let kind = pkts.kind();
        let (dst_node, dst_port, dst_qp) = (qp.remote_node, qp.remote_port, qp.remote_qp);
        let ser = self.clocks[port].ser_ps(link, wire, count);
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
        let mut depart = ready.max(self.port_free[port]);
        if sock_trains && count > 1 {
            // A socket train leaves as its datagrams would one by one (pipelined, not stored
            // and forwarded whole): the first after its share of the engine and DMA time,
            // the rest back to back, the last no earlier than the whole train is read.
            let first = start + (ready - start) / count;
            depart = first.max(self.port_free[port]).max(ready.saturating_sub(ser / count * (count - 1)));
        }
        self.port_free[port] = depart + ser;
        let pkt = Packet { dst_node, dst_port, dst_qp, kind, service, psn, ack_req, payload, wire_bytes: wire, count: count as u32, wr_id, meta };
        self.stats.packets_sent += count;
        self.stats.payload_bytes_sent += payload;
        self.tx_inflight += count as u32;
        // The train is handed on at once where `push` then `launch` would hand it on first
        // thing (no train waits before it, no stall can come before it leaves): the same
        // steps without its copy into the queue and out again.
        if self.wire[port].leaves_at_once(depart, now) {
            self.leave(port, depart, ser, pkt, local_done, ctx);
        } else {
            self.wire[port].push(Cut { depart, ser, pkt, local_done });
            self.launch(port, ctx);
        }
    }

    /// Sends the trains of `port` that are due now; otherwise makes sure an event will look
    /// again when the next one is.
    #[inline]
    fn launch(&mut self, port: usize, ctx: &mut Ctx<'_, Ev>) {
        // Nothing waiting (what `WireQueue::next` answers first), without the call.
        if !self.wire[port].is_empty() {
            self.launch_cuts(port, ctx);
        }
    }

    /// [`Adapter::launch`] when trains are waiting.
    #[inline(never)]
    fn launch_cuts(&mut self, port: usize, ctx: &mut Ctx<'_, Ev>) {
        let now = ctx.now();
        loop {
            match self.wire[port].next(now) {
                Next::Leave(c) => self.leave(port, c.depart, c.ser, c.pkt, c.local_done, ctx),
                Next::WakeAt(t) => {
                    ctx.send_at(ctx.me(), t, Ev::Depart { port: port as u8 });
                    return;
                }
                Next::Idle => return,
            }
        }
    }

    /// A train handed on from `port`: it leaves at `depart`, `ser` long; `local_done`: it
    /// ends an unacknowledged request, which completes with its slot. The slot's event looks
    /// at the port's queue ([`WireQueue::woken_at`]).
    #[inline(always)]
    fn leave(&mut self, port: usize, depart: Time, ser: Time, pkt: Packet, local_done: bool, ctx: &mut Ctx<'_, Ev>) {
        let prop = self.clocks[port].prop_ps;
        let end = depart + ser;
        let packets = pkt.count;
        let done = local_done.then_some(pkt.meta);
        // Trains leave in the order they were cut: in order of arrival.
        self.send_to_switch(port, depart + prop, ser, pkt, true, ctx);
        // The slot frees when the train has left; that event looks at the queue, then
        // completes the request the train ended, if unacknowledged. One event for both, in
        // that order: as two events pushed back to back at one time nothing else could run
        // between them but the node's own catch-up to that same time (stalls, bus, memory),
        // which finds nothing new to do.
        ctx.send_at(ctx.me(), end, Ev::TxSlot { packets, done });
        self.wire[port].woken_at(end);
    }

    /// A train of `port` may be due to leave.
    pub fn depart(&mut self, port: u8, ctx: &mut Ctx<'_, Ev>) {
        self.launch(port as usize, ctx);
    }

    /// Sends an RC ACK for `psn` on `qp`'s port, ready at `t` (generated by the receive engine).
    fn send_ack(&mut self, q: usize, psn: u64, t: Time, ctx: &mut Ctx<'_, Ev>) {
        let qp = &self.qps[q];
        let kind = Kind::Ack;
        let port = qp.port as usize;
        let wire = self.links[port].packet_bytes(ext_bytes(kind, qp.service), 0);
        let ser = self.clocks[port].ser_ps(&self.links[port], wire, 1);
        let depart = t.max(self.port_free[port]);
        self.port_free[port] = depart + ser;
        self.wire[port].sent_directly(depart);
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
        // Trains still waiting to leave would reach the switch before the ACK.
        let in_order = self.wire[port].is_empty();
        self.send_to_switch(port, depart + self.clocks[port].prop_ps, ser, pkt, in_order, ctx);
    }

    /// Sends `pkt` from `port` to the switch, its first bit there at `at` ([`SwitchLink`]).
    fn send_to_switch(&mut self, port: usize, at: Time, ser: Time, pkt: Packet, in_order: bool, ctx: &mut Ctx<'_, Ev>) {
        self.switch_link.send(self.switch, self.switch_port_base + port as u16, port, at, ser, pkt, in_order, ctx);
    }

    /// Puts in force the stalls the switch handed back that reached their ports before
    /// `now`; called before every event of the node.
    #[inline]
    pub fn stalls_before(&mut self, now: Time) {
        while let Some((port, until)) = self.switch_link.due_stall(now) {
            self.stall(port, until);
        }
    }

    /// Lets the send engine forward packets through `switch` as it sends them.
    pub fn share_switch(&mut self, switch: SharedSwitch) {
        self.switch_link.share(switch);
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
        // The requests retired, oldest first (completing one reads nothing of the queue).
        while let Some(&(last, wr)) = self.qps[q].unacked.front() {
            if last > psn {
                break;
            }
            self.qps[q].unacked.pop_front();
            let meta = wr.meta;
            self.complete_locally(t, meta, ctx);
            // A protocol that bounds its send queue hears of the free slot when it polls.
            if let Some(c) = self.chan(meta.chan).filter(|c| c.sq_free) {
                let detect = t + self.costs.poll_detect;
                ctx.send_at(ctx.me(), detect, Ev::Ulp { ulp: c.ulp, ev: UlpEv::SqFree { chan: meta.chan, qp: q as u32 } });
            }
        }
    }

    /// A send or write completed at the requester at `t`: write its CQE and, when the
    /// process polls for completions, tell it.
    fn complete_locally(&mut self, t: Time, meta: MsgMeta, ctx: &mut Ctx<'_, Ev>) {
        let cqe = self.bus.dma_write(t, self.prof.adapter.cqe_bytes);
        if let Some(ulp) = UlpId::wanting_local_completion(&meta) {
            ctx.send_at(ctx.me(), cqe, Ev::Ulp { ulp, ev: UlpEv::Done { meta } });
            return;
        }
        if let Some(end) = self.chan(meta.chan).filter(|c| c.completions) {
            // A stripe's control message completes the message; data stripes do not.
            if meta.notify {
                let proc = end.proc;
                if !last_part(&mut self.completion_parts, &meta) {
                    return;
                }
                self.notify(cqe, proc, Input::Completed { chan: meta.chan, tag: meta.tag, at: cqe }, true, ctx);
            }
        }
    }

    /// A packet (train) reached one of the adapter's ports.
    pub fn receive(&mut self, pkt: &Packet, ctx: &mut Ctx<'_, Ev>) {
        let now = ctx.now();
        if let (Service::Rc, Kind::Data { op, first, .. }) = (pkt.service, pkt.kind) {
            // A send needs a posted receive WQE; without one it comes again after an RNR
            // NAK, and the queue pair's later packets with it.
            if let Admit::Later(at) = self.rqs.admit(pkt.dst_qp as usize, op == Op::Send && first, now) {
                ctx.send_at(ctx.me(), at, Ev::PktAtNode { port: 0, pkt: *pkt });
                return;
            }
        }
        // The adapter's costs this needs, copied out so `self` stays free to borrow.
        let (wqe_bytes, cqe_bytes, prefetch) = {
            let a = &self.prof.adapter;
            (a.wqe_bytes, a.cqe_bytes, a.rx_wqe_prefetch)
        };
        self.stats.packets_received += pkt.count as u64;
        // A socket train's datagrams came in one wire time apart, the last now: the engine
        // (and below, the payload's DMA) starts with the first, as one by one.
        let sock_train = pkt.count > 1 && self.sock_train_max > 1 && pkt.service == Service::Ud && self.sock_chan(pkt.meta.chan);
        let first_in = if sock_train {
            let port = self.qps[pkt.dst_qp as usize].port as usize;
            let ser = self.clocks[port].ser_ps(&self.links[port], pkt.wire_bytes, pkt.count as u64);
            now.saturating_sub(ser / pkt.count as u64 * (pkt.count as u64 - 1))
        } else {
            now
        };
        let start = first_in.max(self.rx_engine_free);
        let mut t = (start + pkt.count as u64 * self.costs.rx_packet).max(now + self.costs.rx_packet);
        let q = pkt.dst_qp as usize;
        match pkt.kind {
            Kind::Data { op, first, last } => {
                // The packet's `meta` as the receiver sees it (a datagram list's count stamped).
                let mut meta = pkt.meta;
                let datagram_list = matches!(meta.ulp, UlpKind::ZcopyData { .. });
                if datagram_list {
                    // Every datagram lands in a receive WQE of its own and completes alone.
                    t = self.bus.dma_read(t, pkt.count as u64 * wqe_bytes);
                    meta.ulp = UlpKind::ZcopyData { datagrams: pkt.count as u16 };
                } else if op == Op::Send && first {
                    // Fetch the receive WQE the message lands in; a prefetching adapter
                    // fetched it ahead (the bus still carries it, the message does not wait).
                    let fetched = self.bus.dma_read(t, wqe_bytes);
                    if !prefetch {
                        t = fetched;
                    }
                }
                self.rx_engine_free = t;
                let visible = if sock_train && pkt.payload > 0 {
                    // Written as the datagrams come: from the first's on, the last's after it.
                    let from = start + self.costs.rx_packet;
                    let end = self.bus.dma_write(from, pkt.payload);
                    end.max(t + (end - from) / pkt.count as u64)
                } else if pkt.payload > 0 { self.bus.dma_write(t, pkt.payload) } else { t };
                self.stats.payload_bytes_received += pkt.payload;
                if op == Op::Send && last && pkt.service == Service::Rc {
                    // The program takes the completion and posts the receive WQE again.
                    self.rqs.repost(q, visible + self.costs.repost);
                }
                if pkt.service == Service::Ud && self.chan_ulp(meta.chan) == Some(UlpId::Sock) {
                    // Datagrams (IPoIB-UD, Ethernet frames): every packet is its own receive
                    // completion, even when the sender's adapter cut them from one LSO request.
                    let cqe = self.bus.dma_write_behind(visible, self.rx_cqes.bytes(t, pkt.count as u64));
                    self.rx_cqes.written(cqe);
                    let ev = UlpEv::Arrived { meta, packets: pkt.count, bytes: pkt.payload, cqe: true };
                    ctx.send_at(ctx.me(), cqe, Ev::Ulp { ulp: UlpId::Sock, ev });
                } else if (last || datagram_list) && meta.notify {
                    if op == Op::Send {
                        let cqes = if datagram_list { pkt.count as u64 } else { 1 };
                        let cqe = self.bus.dma_write_behind(visible, self.rx_cqes.bytes(t, cqes));
                        self.rx_cqes.written(cqe);
                        self.arrived(cqe, meta, true, ctx);
                    } else {
                        self.arrived(visible, meta, false, ctx);
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
                    // A protocol's RDMA reads (SDP zero copy) complete to the protocol.
                    if let Some(ulp) = self.chan_ulp(pkt.meta.chan).filter(|&u| u != UlpId::Raw) {
                        ctx.send_at(ctx.me(), cqe, Ev::Ulp { ulp, ev: UlpEv::Done { meta: pkt.meta } });
                        self.pump_tx(ctx);
                        return;
                    }
                    let proc = self.chan(pkt.meta.chan).map(|c| c.proc).unwrap_or(0);
                    self.notify(cqe, proc, Input::Completed { chan: pkt.meta.chan, tag: pkt.meta.tag, at: cqe }, true, ctx);
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
    /// How the adapter takes `wr` when its doorbell arrives at `at`: with BlueFlame at once,
    /// otherwise when the WQE (or WQE list) it reads from host memory has arrived. Books
    /// that read on the bus.
    fn fetch(&mut self, wr: &Wr, at: Time) -> Fetch {
        let a = &self.prof.adapter;
        let path = post_path(a, wr.op, wr.inline, wr.bytes);
        if wr.datagram_bytes > 0 && self.sock_chan(wr.meta.chan) {
            // A socket train: each datagram's WQE as if posted alone.
            let path = post_path(a, wr.op, wr.inline, wr.datagram_bytes as u64);
            if path.blueflame {
                // The WQEs came with the doorbell: the train joins the send queue with it.
                return Fetch::WithDoorbell;
            }
            let wqes = packets_for(wr.op, wr.bytes, wr.datagram_bytes as u64);
            Fetch::At(self.bus.dma_read(at, wqes * path.fetch_bytes))
        } else if wr.datagram_bytes > 0 {
            // A list of datagram WQEs behind one doorbell: all read from host memory.
            let wqes = packets_for(wr.op, wr.bytes, wr.datagram_bytes as u64);
            let bf = if a.bf_buf_bytes.is_none() { a.blueflame } else { wqes == 1 && path.blueflame };
            Fetch::At(if bf { at } else { self.bus.dma_read(at, wqes * a.wqe_bytes) })
        } else if path.blueflame {
            Fetch::At(at)
        } else {
            // The WQE (with inline data, if any) is read from host memory.
            Fetch::At(self.bus.dma_read(at, path.fetch_bytes))
        }
    }

    /// A doorbell for `wr` on `qp` reached the adapter: fetch the work request (with
    /// BlueFlame it came with the doorbell). The WQE joins the send queue in this event
    /// when no other event is due by its arrival: its own event would be the next one
    /// taken, with nothing between (see [`Adapter::merge_doorbells`]).
    pub fn doorbell(&mut self, qp: u32, wr: Wr, ctx: &mut Ctx<'_, Ev>) {
        match self.fetch(&wr, ctx.now()) {
            Fetch::WithDoorbell => self.wqe_fetched(qp, wr, ctx),
            Fetch::At(t) if self.merge_doorbells && self.advance(t, ctx) => {
                self.merged_fetches += 1;
                self.wqe_fetched(qp, wr, ctx);
            }
            Fetch::At(t) => ctx.send_at(ctx.me(), t, Ev::WqeFetched { qp, wr }),
        }
    }

    /// The adapter has fetched `wr` of `qp`: it joins the send queue.
    pub fn wqe_fetched(&mut self, qp: u32, wr: Wr, ctx: &mut Ctx<'_, Ev>) {
        let port = self.qps[qp as usize].port as usize;
        let packets = packets_for(wr.op, wr.bytes, wr.packet_unit(self.links[port].mtu_bytes as u64));
        self.qps[qp as usize].sq.push_back(Active { wr, packets, sent: 0 });
        self.note_work(qp as usize);
        self.pump_tx(ctx);
    }

    /// A responder job of `qp` is ready for the send engine.
    pub fn resp_ready(&mut self, qp: u32, job: RespJob, ctx: &mut Ctx<'_, Ev>) {
        self.qps[qp as usize].resp.push_back(job);
        self.note_work(qp as usize);
        self.pump_tx(ctx);
    }

    /// `packets` prepared packets left their port: the engine may prepare more.
    pub fn tx_slot(&mut self, packets: u32, ctx: &mut Ctx<'_, Ev>) {
        self.tx_inflight -= packets;
        for port in 0..self.wire.len() {
            self.launch(port, ctx);
        }
        self.pump_tx(ctx);
    }

    /// The last packet of an unacknowledged request left: it completes locally.
    pub fn local_done(&mut self, meta: MsgMeta, ctx: &mut Ctx<'_, Ev>) {
        self.complete_locally(ctx.now(), meta, ctx);
    }

    /// Link-level flow control: port `port` may send no packet before `until`, neither new
    /// ones nor those already cut and waiting to leave.
    pub fn stall(&mut self, port: u16, until: Time) {
        let end = self.wire[port as usize].hold(until);
        let p = &mut self.port_free[port as usize];
        *p = (*p).max(end);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use interlab_kernel::Rng;

    /// `next_sender` finds the queue pair a scan of every queue pair in round-robin order
    /// finds, for any start, with queue pairs with and without work and some that have work
    /// but cannot send (a full RC window), for one word of them and several; and
    /// `has_work` (which lets `pump_tx` skip the search) says whether any has work.
    #[test]
    fn the_next_sender_is_the_one_a_scan_of_every_queue_pair_finds() {
        let prof = std::sync::Arc::new(Profile::load("r805-connectx-ddr").expect("profile"));
        let (unacked, rd) = (prof.adapter.rc_max_unacked_packets, prof.adapter.max_rd_atomic);
        let mut rng = Rng::new(5);
        let mut found = 0;
        for n in [1usize, 3, 63, 64, 65, 130] {
            for _ in 0..20 {
                let mut a = Adapter::new(0, prof.clone(), ComponentId(1), 0, vec![prof.link.clone()]);
                for _ in 0..n {
                    let service = [Service::Rc, Service::Ud][rng.below(2) as usize];
                    a.add_qp(0, service, 1, 0, 0);
                }
                for q in 0..n {
                    if rng.below(3) == 0 {
                        let meta = MsgMeta { chan: 0, tag: 0, msg_id: 0, parts: 1, bytes: 1, notify: false, ulp: UlpKind::Raw };
                        let wr = Wr { id: 0, op: Op::Send, bytes: 1, meta, inline: false, datagram_bytes: 0 };
                        a.qps[q].sq.push_back(Active { wr, packets: 1, sent: 0 });
                        if rng.below(2) == 0 {
                            // Work, but a full window (RC): it cannot send.
                            a.qps[q].next_psn = unacked as u64;
                        }
                    }
                    a.note_work(q);
                }
                let with_work = (0..n).any(|q| !a.qps[q].sq.is_empty() || !a.qps[q].resp.is_empty());
                assert_eq!(a.has_work(), with_work, "{n} queue pairs: some with work");
                for rr in 0..n {
                    let scan = (0..n).map(|i| (rr + i) % n).find(|&q| a.qps[q].can_send(unacked, rd));
                    assert_eq!(a.next_sender(rr, n, unacked, rd), scan, "{n} queue pairs from {rr}");
                    found += usize::from(scan.is_some());
                }
            }
        }
        assert!(found > 1000, "senders found: {found}");
        // Work in the last word only: `pump_tx` must not answer "none" from the first.
        let mut a = Adapter::new(0, prof.clone(), ComponentId(1), 0, vec![prof.link.clone()]);
        for _ in 0..130 {
            a.add_qp(0, Service::Ud, 1, 0, 0);
        }
        assert!(!a.has_work());
        let meta = MsgMeta { chan: 0, tag: 0, msg_id: 0, parts: 1, bytes: 1, notify: false, ulp: UlpKind::Raw };
        let wr = Wr { id: 0, op: Op::Send, bytes: 1, meta, inline: false, datagram_bytes: 0 };
        a.qps[129].sq.push_back(Active { wr, packets: 1, sent: 0 });
        a.note_work(129);
        assert!(a.has_work());
    }

    #[test]
    fn a_train_summed_in_one_step_equals_its_packets_pushed_one_by_one() {
        let mut rng = Rng::new(21);
        let link = |layer| LinkSpec { lane_gbps: 2.5, lanes: 4, code: crate::hw::link::LineCode::B8B10, mtu_bytes: 2048, framing_bytes: 0, cable_m: 2.0, prop_ns_per_m: 5.0, layer };
        for case in 0..3000 {
            let layer = [LinkLayer::InfiniBand, LinkLayer::RoceV2][case % 2];
            let service = [Service::Rc, Service::Uc, Service::Ud][case % 3];
            let op = [Op::Send, Op::RdmaWrite][case / 2 % 2];
            let unit = [256u64, 1024, 2048][case % 3];
            let bytes = rng.next_u64() % (40 * unit) + 1;
            let total = packets_for(op, bytes, unit);
            let from = rng.next_u64() % total;
            let to = from + 1 + rng.next_u64() % (total - from);
            let packet = |i: u64| (Kind::Data { op, first: i == 0, last: i + 1 == total }, (bytes - i * unit).min(unit));
            let (mut one, mut all) = (TrainSum::new(service, &link(layer)), TrainSum::new(service, &link(layer)));
            for i in from..to {
                one.push(packet(i));
            }
            all.push_packets(from, to, total, packet);
            let got = (all.count, all.payload, all.wire_bytes, all.first, all.last);
            assert_eq!(got, (one.count, one.payload, one.wire_bytes, one.first, one.last), "case {case}: {bytes} bytes, packets {from}..{to} of {total}");
        }
    }
}

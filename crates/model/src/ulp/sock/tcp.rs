//! Kernel TCP/IP as the model runs it over IPoIB (datagram or connected mode) and over the
//! adapter's Ethernet port.
//!
//! * **Send**: send() is a system call and a copy into the socket (with a software checksum
//!   where the device has no checksum offload); then the stack cuts the stream into
//!   segments of one MSS (MTU minus IP/TCP headers) or, with LSO, into work requests of up to
//!   64 KiB that the adapter cuts into MSS-sized packets. Each segment (or LSO request) costs
//!   TCP output and driver work. Nagle's rule holds a small segment while data is
//!   unacknowledged; the window bounds unacknowledged bytes; acknowledgements push more.
//! * **Receive**: per packet, driver work; with LRO, packets of a connection are merged (up
//!   to 64 KiB) until the poll loop finds the queue empty, and TCP input runs once per
//!   aggregate instead of once per packet. TCP acknowledges every second segment (or
//!   aggregate) at once, otherwise after the delayed-ACK timer; data going back carries
//!   the acknowledgement. Acknowledgements cost their receiver driver and TCP work.

use super::delack::Queued;
use super::{stack, SockEnd, SockKind, Sockets, Transport, TxCosts};
use crate::transport::packet::{MsgMeta, Service, UlpKind};
use crate::ulp::stack_spec::ns;
use crate::ulp::{UlpEv, UlpHost, UlpId};
use interlab_kernel::Time;
use interlab_patterns::{Message, Op};

/// Kernel TCP/IP (over IPoIB datagram or connected mode, or Ethernet).
pub(super) struct Tcp;

/// Segment geometry of a TCP stack on this node.
#[derive(Debug, Clone, Copy)]
pub(super) struct Geometry {
    /// Payload bytes per packet (MSS).
    mss: u64,
    /// Largest segment handed to the driver (MSS, or the LSO size).
    seg_max: u64,
    /// Header bytes the adapter carries per packet beyond the payload (IP/TCP and IPoIB).
    hdr: u64,
    /// Software segmentation (GSO): segments of `seg_max` go to the driver as MSS packets,
    /// each its own work request.
    gso: bool,
    /// Software checksum on send.
    csum: bool,
    /// The per-segment costs of the stack and its driver, in picoseconds, converted once:
    /// TCP output, driver work per segment sent (per packet with GSO), both together,
    /// driver work per packet received, IP input per packet, IP and TCP input of a pure
    /// ACK, a pure ACK's output.
    tcp_tx_ps: Time,
    tx_ps: Time,
    seg_tx_ps: Time,
    rx_ps: Time,
    ip_rx_ps: Time,
    ack_rx_ps: Time,
    ack_tx_ps: Time,
    /// LRO is on; its largest aggregate, bytes; the window of unacknowledged bytes.
    lro: bool,
    lro_max: u64,
    window: u64,
}

/// Packets the stack sends as one socket train: back-to-back datagrams of one message, each
/// charged its own CPU, driver and post where it was built, posted with one doorbell when
/// the train is full, a short packet ends it or anything else must go first. Off (every
/// packet its own request, as without trains) unless socket trains are on and the link is
/// a datagram link whose MTU holds a full segment.
struct TxTrain {
    /// Most packets in a train; 0 off.
    max: u64,
    qp: u32,
    /// Full packet: MSS and headers, bytes.
    unit: u64,
    hdr: u64,
    mss: u64,
    /// Post cost the CPU was charged per packet, ps.
    post: Time,
    /// Packets and IP bytes gathered, and stream bytes.
    n: u64,
    bytes: u64,
    stream: u64,
    meta: MsgMeta,
    /// When the CPU posted the first and the last packet gathered.
    t0: Time,
    t: Time,
}

impl TxTrain {
    fn new<H: UlpHost>(h: &H, g: Geometry, qp: u32, service: Service) -> Self {
        let unit = g.mss + g.hdr;
        let on = service == Service::Ud && h.sock_train_max() > 1 && unit <= h.qp_mtu(qp);
        let meta = MsgMeta { chan: 0, tag: 0, msg_id: 0, parts: 1, bytes: 0, notify: true, ulp: UlpKind::Raw };
        TxTrain { max: if on { h.sock_train_max() } else { 0 }, qp, unit, hdr: g.hdr, mss: g.mss, post: h.post_ps(), n: 0, bytes: 0, stream: 0, meta, t0: 0, t: 0 }
    }

    /// A packet of `p` stream bytes, its CPU work done at `t` up to its post, with `left`
    /// stream bytes written and not yet sent from its start on and `flight` bytes sent and
    /// unacknowledged before it; returns when the CPU has posted it. A train starts only in
    /// the bulk of a stream in full flow: at least four trains' worth unacknowledged and
    /// four to send. The pipeline of sender, wire and receiver then has a queue wherever it
    /// is slowest, which a train only shifts, while a stream starting after a pause fills
    /// it, and ends, packet by packet as without trains.
    fn post<H: UlpHost>(&mut self, h: &mut H, p: u64, meta: MsgMeta, t: Time, left: u64, flight: u64) -> Time {
        if self.n > 0 && (meta.tag, meta.bytes, meta.msg_id) != (self.meta.tag, self.meta.bytes, self.meta.msg_id) {
            self.flush(h);
        }
        let bulk = 4 * self.max * self.mss;
        if self.max == 0 || (self.n == 0 && (left < bulk || flight < bulk)) {
            return h.post(self.qp, Op::Send, p + self.hdr, meta, t);
        }
        let t = t + self.post;
        self.n += 1;
        self.bytes += p + self.hdr;
        self.stream += p;
        self.meta = meta;
        if self.n == 1 {
            self.t0 = t;
        }
        self.t = t;
        if self.n == self.max || p < self.mss {
            self.flush(h);
        }
        t
    }

    /// Posts the packets gathered, at the CPU time the last was: a lone packet as the
    /// request it is, more as one datagram list carrying the mean spacing of their posts,
    /// ns, as `parts` (a socket channel's data has no parts otherwise).
    fn flush<H: UlpHost>(&mut self, h: &mut H) {
        match self.n {
            0 => return,
            1 => {
                h.post(self.qp, Op::Send, self.bytes, self.meta, self.t - self.post);
            }
            n => {
                let gap_ns = ((self.t - self.t0) / (n - 1) / 1000).clamp(1, u16::MAX as Time) as u16;
                let meta = MsgMeta { ulp: UlpKind::Segment { bytes: self.stream }, parts: gap_ns, ..self.meta };
                h.post_train(self.qp, self.unit, self.bytes, meta, self.t);
            }
        }
        (self.n, self.bytes, self.stream) = (0, 0, 0);
    }
}

/// The ACKs a socket train triggers while the interrupt core takes it in: they leave as one
/// train of as many ACK packets when it is done (see [`Tcp::send_ack`]).
#[derive(Debug, Clone)]
pub(super) struct AckTrain {
    chan: u32,
    qp: u32,
    hdr: u64,
    /// ACK packets gathered, the last one's meta (its acknowledgement) and when its post
    /// was done on the CPU.
    acks: u64,
    meta: MsgMeta,
    t: Time,
    /// The first ACK's acknowledgement (stream offset) and when its post was done.
    first_ack: u64,
    first_t: Time,
    /// The first delayed-ACK timer set for the latest acknowledgement state: (when, seq).
    timer: Option<(Time, u64)>,
}

impl AckTrain {
    /// Posts the ACKs gathered (their CPU already charged).
    fn flush<H: UlpHost>(&mut self, h: &mut H) {
        match self.acks {
            0 => return,
            1 => {
                h.post(self.qp, Op::Send, self.hdr, self.meta, self.t - h.post_ps());
            }
            // The train carries its first acknowledgement beside its last (an ACK has no
            // message bytes) and, as its tag, the mean spacing of its ACKs' posts, ps.
            n => {
                let gap = ((self.t - self.first_t) / (n - 1)).min(u32::MAX as Time) as u32;
                h.post_train(self.qp, self.hdr, n * self.hdr, MsgMeta { bytes: self.first_ack, tag: gap, ..self.meta }, self.t)
            }
        }
        self.acks = 0;
    }
}

impl Tcp {
    /// The geometry of channel `chan`: worked out at start and kept with the end (it
    /// depends only on the end's stack, the profile and the queue pair's link, fixed for the
    /// run).
    #[inline]
    fn geometry(s: &Sockets, chan: u32) -> Geometry {
        s.end_ref(chan).tcp_geometry.expect("worked out at start")
    }

    fn work_out_geometry<H: UlpHost>(s: &Sockets, h: &H, chan: u32) -> Geometry {
        let st = stack(h);
        let stack = s.end_ref(chan).stack;
        let ip = st.ip_header_bytes;
        // The driver's work per packet sent and received, ns, beside the geometry.
        let costs = |(g, tx_ns, rx_ns): (Geometry, f64, f64)| Geometry {
            tcp_tx_ps: ns(st.tcp_tx_ns),
            tx_ps: ns(tx_ns),
            seg_tx_ps: ns(st.tcp_tx_ns + tx_ns),
            rx_ps: ns(rx_ns),
            ip_rx_ps: ns(st.ip_rx_ns),
            ack_rx_ps: ns(st.ip_rx_ns + st.tcp_ack_rx_ns),
            ack_tx_ps: ns(st.tcp_ack_tx_ns),
            lro: stack.lro_on(h.profile().eth.as_ref()),
            lro_max: st.offload_max_bytes,
            window: st.tcp_window_bytes,
            ..g
        };
        let none = Geometry { mss: 0, seg_max: 0, hdr: 0, gso: false, csum: false, tcp_tx_ps: 0, tx_ps: 0, seg_tx_ps: 0, rx_ps: 0, ip_rx_ps: 0, ack_rx_ps: 0, ack_tx_ps: 0, lro: false, lro_max: 0, window: 0 };
        costs(match stack.kind {
            SockKind::IpoibUd => {
                let mss = st.ipoib_mtu_bytes - ip;
                let hdr = ip + st.ipoib_header_bytes;
                // IPoIB advertises scatter-gather only with checksum offload (ipoib_add_port).
                let lso = stack.lso_on(h.profile().eth.as_ref());
                let gso = !lso && st.gso && st.ipoib_ud_csum_offload;
                let seg_max = if lso || gso { (st.offload_max_bytes / (mss + hdr)).max(1) * mss } else { mss };
                (Geometry { mss, seg_max, hdr, csum: !st.ipoib_ud_csum_offload, gso, ..none }, st.ipoib_tx_ns, st.ipoib_rx_ns)
            }
            SockKind::IpoibRc => {
                let mss = st.ipoib_cm_mtu_bytes - ip;
                (Geometry { mss, seg_max: mss, hdr: ip + st.ipoib_header_bytes, csum: true, gso: false, ..none }, st.ipoib_tx_ns, st.ipoib_rx_ns)
            }
            SockKind::Eth => {
                let e = h.profile().eth.as_ref().expect("validated: [eth]");
                let mtu = h.qp_mtu(s.end_ref(chan).qp);
                let mss = mtu - ip;
                let lso = stack.lso_on(Some(e));
                let gso = !lso && st.gso;
                let seg_max = if lso || gso { (st.offload_max_bytes / mtu).max(1) * mss } else { mss };
                (Geometry { mss, seg_max, hdr: ip, csum: false, gso, ..none }, e.tx_ns, e.rx_ns)
            }
            other => unreachable!("{other:?} is not a TCP stack"),
        })
    }

    /// The length of the next segment the window and Nagle's rule let `end` hand the
    /// driver; 0 when none.
    #[inline]
    fn next_segment(end: &SockEnd, g: &Geometry) -> u64 {
        let avail = end.app_bytes - end.snd_nxt;
        let room = g.window.saturating_sub(end.snd_nxt - end.snd_una);
        if avail == 0 || room == 0 {
            return 0;
        }
        let len = avail.min(g.seg_max).min(room);
        // Wait for room for a full segment rather than send a runt (silly-window
        // avoidance), and hold a runt while an earlier runt is unacknowledged (Nagle's
        // rule in Minshall's form, as Linux has it).
        if len < g.mss && (len < avail || end.snd_sml > end.snd_una) {
            return 0;
        }
        // With segmentation offload, Linux defers a request smaller than the largest
        // while data is in flight and more may come (tcp_tso_should_defer): the next ACK
        // or write lets it grow. (Only while more than a segment is unacknowledged, so an
        // ACK is sure to come rather than a delayed one; and only a request of more than
        // one packet: tcp_write_xmit applies tcp_tso_should_defer when tso_segs > 1, a
        // one-packet tail passes Nagle's test alone.)
        if g.seg_max > g.mss && len > g.mss && len < g.seg_max && end.snd_nxt - end.snd_una > g.mss {
            return 0;
        }
        len
    }

    /// Hands the driver every segment the window and Nagle's rule allow, on the current
    /// core from `t`; returns when that core is done.
    #[inline]
    fn push<H: UlpHost>(s: &mut Sockets, h: &mut H, chan: u32, t: Time) -> Time {
        // Mostly there is nothing to send (an ACK or a write while the window is full or a
        // runt is held): checked before the train is set up.
        if Tcp::next_segment(s.end_ref(chan), &Tcp::geometry(s, chan)) == 0 {
            return t;
        }
        Tcp::push_segments(s, h, chan, t)
    }

    /// [`Tcp::push`] when there is at least one segment to send.
    #[inline(never)]
    fn push_segments<H: UlpHost>(s: &mut Sockets, h: &mut H, chan: u32, mut t: Time) -> Time {
        let g = Tcp::geometry(s, chan);
        let end = s.end_ref(chan);
        let mut train = TxTrain::new(h, g, end.qp, end.stack.service());
        let qp = end.qp;
        loop {
            let end = s.end_mut(chan);
            let len = Tcp::next_segment(end, &g);
            if len == 0 {
                break;
            }
            let avail = end.app_bytes - end.snd_nxt;
            let flight = end.snd_nxt - end.snd_una;
            if len < g.mss {
                end.snd_sml = end.snd_nxt + len;
            }
            let last = end.snd_nxt + len;
            while end.tx_msgs.front().is_some_and(|&(e, _, _)| e < last) && end.tx_msgs.len() > 1 {
                end.tx_msgs.pop_front();
            }
            let &(_, tag, size) = end.tx_msgs.front().expect("written data has a message");
            end.snd_nxt = last;
            // The segment acknowledges what this end has received.
            let ack = end.rcv;
            end.unacked_segs = 0;
            end.unacked_bytes = 0;
            end.delack_seq += 1;
            let nseg = len.div_ceil(g.mss);
            let meta = MsgMeta { chan, tag, msg_id: ack, parts: 1, bytes: size, notify: true, ulp: UlpKind::Segment { bytes: len } };
            if g.gso {
                // dev_hard_start_xmit cuts the segment (skb_gso_segment) and hands the
                // driver one MSS packet at a time.
                t += g.tcp_tx_ps;
                let mut left = len;
                while left > 0 {
                    let p = left.min(g.mss);
                    left -= p;
                    t += g.tx_ps;
                    let meta = MsgMeta { ulp: UlpKind::Segment { bytes: p }, ..meta };
                    let at = len - left - p;
                    t = train.post(h, p, meta, t, avail - at, flight + at);
                }
                continue;
            }
            t += g.seg_tx_ps;
            if nseg == 1 {
                t = train.post(h, len, meta, t, avail, flight);
            } else {
                // An LSO request: one work request the adapter cuts.
                train.flush(h);
                t = h.post(qp, Op::Send, len + nseg * g.hdr, meta, t);
            }
        }
        train.flush(h);
        t
    }

    /// Sends a pure acknowledgement standing for `segs` delayed ACKs, from the current core at `t`.
    fn send_ack<H: UlpHost>(s: &mut Sockets, h: &mut H, chan: u32, segs: u64, t: Time) -> Time {
        let g = Tcp::geometry(s, chan);
        let end = s.end_mut(chan);
        let qp = end.qp;
        end.unacked_segs = 0;
        end.unacked_bytes = 0;
        end.delack_seq += 1;
        let meta = MsgMeta { chan, tag: 0, msg_id: end.rcv, parts: 1, bytes: 0, notify: true, ulp: UlpKind::Ack { packets: segs.max(1) as u32 } };
        let t = t + g.ack_tx_ps;
        if s.ack_train.as_ref().is_some_and(|b| b.chan == chan) {
            // Taking a train in: the ACK joins the ACK train that leaves after it.
            let post = h.post_ps();
            let b = s.ack_train.as_mut().expect("checked");
            if b.acks > 0 && b.meta.ulp != meta.ulp {
                b.flush(h);
            }
            if b.acks == 0 {
                b.first_ack = meta.msg_id;
                b.first_t = t + post;
            }
            b.acks += 1;
            b.meta = meta;
            b.t = b.t.max(t + post);
            return t + post;
        }
        h.post(qp, Op::Send, g.hdr, meta, t)
    }

    /// Sets `chan`'s delayed-ACK timer for `at` with the end's acknowledgement state `seq`:
    /// queued as the end's chain has it ([`super::delack`]), or at once with
    /// `Sockets::delack_queued_all`.
    fn set_delack<H: UlpHost>(s: &mut Sockets, h: &mut H, chan: u32, at: Time, seq: u64) {
        let q = if s.delack_queued_all { Some(Queued { at, seq, chain: false }) } else { s.end_mut(chan).delack.set(at, seq) };
        if let Some(Queued { at, seq, chain }) = q {
            h.schedule(at, UlpId::Sock, UlpEv::Timer { chan, seq, chain });
        }
    }

    /// The queued timer of `chan`'s chain fires: queue its next.
    pub(super) fn delack_fired<H: UlpHost>(s: &mut Sockets, h: &mut H, chan: u32) {
        if let Some(Queued { at, seq, chain }) = s.end_mut(chan).delack.fired(h.now()) {
            h.schedule(at, UlpId::Sock, UlpEv::Timer { chan, seq, chain });
        }
    }

    /// The poll loop of queue `q` may have found it empty: flush LRO aggregates if nothing
    /// arrived since the poll that scheduled this check.
    pub(super) fn poll_end<H: UlpHost>(s: &mut Sockets, h: &mut H, q: usize, seq: u64) {
        if s.queues[q].seq != seq {
            return;
        }
        Tcp::poll_ended(s, h, q, h.now());
    }

    /// The poll loop of queue `q` found it empty at `t`: flush the LRO aggregates.
    fn poll_ended<H: UlpHost>(s: &mut Sockets, h: &mut H, q: usize, t: Time) {
        let chans = std::mem::take(&mut s.queues[q].lro_chans);
        let core = s.k.irq_core;
        let done = h.on_cpu(core, t, |h, mut t| {
            for chan in chans {
                t = Tcp::lro_flush(s, h, chan, t);
            }
            t
        });
        s.rx_polled(q, done);
    }

    /// Hands `chan`'s LRO aggregate to TCP as one segment.
    fn lro_flush<H: UlpHost>(s: &mut Sockets, h: &mut H, chan: u32, t: Time) -> Time {
        let Some((bytes, _pkts, meta)) = s.end_mut(chan).lro.take() else {
            return t;
        };
        let t = t + Tcp::geometry(s, chan).ip_rx_ps;
        Tcp::input(s, h, chan, bytes, 1, meta, t)
    }

    /// TCP input of `segs` segments (or aggregates) from the interrupt core at `t`: there,
    /// or with prequeue in the woken application's context. Returns when the interrupt
    /// core is done.
    fn input<H: UlpHost>(s: &mut Sockets, h: &mut H, chan: u32, bytes: u64, segs: u64, meta: MsgMeta, t: Time) -> Time {
        let (prequeue, tcp_rx, wakeup) = (s.k.prequeue, s.k.tcp_rx, s.k.wakeup);
        if !prequeue {
            let t = t + segs * tcp_rx;
            let t = Tcp::data(s, h, chan, bytes, segs, meta, t);
            s.deliver_bytes(h, chan, t, true);
            return t;
        }
        let asleep = s.app_asleep(h, chan, t);
        let a = s.on_app_cpu(h, chan, t, |s, h, a| {
            let a = a + if asleep { wakeup } else { 0 } + segs * tcp_rx;
            Tcp::data(s, h, chan, bytes, segs, meta, a)
        });
        s.deliver_bytes_from(h, chan, a, true, false);
        t
    }

    /// TCP input of `bytes` in `segs` segments: take the data and acknowledge. Runs on the
    /// current core at `t`; returns when it is done there.
    fn data<H: UlpHost>(s: &mut Sockets, h: &mut H, chan: u32, bytes: u64, segs: u64, meta: MsgMeta, t: Time) -> Time {
        let (every, delack) = (s.k.ack_every, s.k.delack);
        let end = s.end_mut(chan);
        end.rcv += bytes;
        end.rx_msg = (meta.tag, meta.bytes);
        end.unacked_segs += segs;
        end.unacked_bytes += bytes;
        let mut t = t;
        let mss = Tcp::geometry(s, chan).mss;
        let end = s.end_mut(chan);
        end.rx_pushed = !bytes.is_multiple_of(mss);
        // Linux acknowledges at once when more than one full segment is unacknowledged
        // (every second segment), otherwise it delays the ACK.
        if end.unacked_bytes > (every - 1) * mss {
            let n = (end.unacked_segs / every).max(1);
            t = Tcp::send_ack(s, h, chan, n, t);
        } else {
            let seq = end.delack_seq;
            let at = t + delack;
            match s.ack_train.as_mut().filter(|b| b.chan == chan) {
                // Taking a train in: only a timer no later ACK voids is set, at its end.
                Some(b) => {
                    if b.timer.is_none_or(|(_, q)| q != seq) {
                        b.timer = Some((at, seq));
                    }
                }
                None => Tcp::set_delack(s, h, chan, at, seq),
            }
        }
        t
    }

    /// A completion of `packets` datagrams carrying `bytes` of IP packets (datagram links),
    /// or of one connected-mode IP packet, that reached the host at `at` (now, or earlier
    /// for an ACK of an ACK train), taken by the interrupt core; returns when that core is
    /// done with it.
    fn arrival_one<H: UlpHost>(s: &mut Sockets, h: &mut H, meta: MsgMeta, packets: u64, bytes: u64, at: Time) -> Time {
        let chan = meta.chan;
        let g = Tcp::geometry(s, chan);
        let stack = s.end_mut(chan).stack;
        let (lro_max, ip_rx, ack_rx, rx) = (g.lro_max, g.ip_rx_ps, g.ack_rx_ps, g.rx_ps);
        let q = stack.rxq();
        let eth_aic = (stack.kind == SockKind::Eth).then_some(stack.aic);
        let (ready, irq) = s.rx_ready(h, q, at, packets, eth_aic);
        let core = s.k.irq_core;
        let lro = g.lro;
        let done = h.on_cpu(core, ready, |h, start| {
            let mut t = start + irq + packets * rx;
            // Piggybacked or pure acknowledgement.
            let ack = meta.msg_id;
            match meta.ulp {
                UlpKind::Ack { packets: acks } => {
                    t += acks as u64 * ack_rx;
                    t += (acks as u64).saturating_sub(1) * rx;
                    t = Tcp::acked(s, h, chan, ack, t);
                }
                UlpKind::Segment { bytes: seg } => {
                    // A datagram train carries its share of the request's stream bytes.
                    let bytes = if stack.service() == Service::Ud { bytes - packets * g.hdr } else { seg };
                    if ack > s.end_mut(chan).snd_una {
                        t = Tcp::acked(s, h, chan, ack, t);
                    }
                    if lro {
                        let end = s.end_mut(chan);
                        let agg = end.lro.get_or_insert((0, 0, meta));
                        agg.0 += bytes;
                        agg.1 += packets;
                        agg.2 = meta;
                        if agg.0 >= lro_max {
                            t = Tcp::lro_flush(s, h, chan, t);
                        } else if !s.queues[q].lro_chans.contains(&chan) {
                            s.queues[q].lro_chans.push(chan);
                        }
                    } else {
                        t += packets * ip_rx;
                        t = Tcp::input(s, h, chan, bytes, packets, meta, t);
                    }
                }
                _ => {}
            }
            t
        });
        s.rx_polled(q, done);
        done
    }

    /// The peer acknowledged the stream up to `ack`: slide the window and push more.
    fn acked<H: UlpHost>(s: &mut Sockets, h: &mut H, chan: u32, ack: u64, t: Time) -> Time {
        let end = s.end_mut(chan);
        if ack <= end.snd_una {
            return t;
        }
        end.snd_una = ack;
        Tcp::push(s, h, chan, t)
    }
}

impl Transport for Tcp {
    /// send(): system call, copy into the socket, then push what the window allows.
    fn send<H: UlpHost>(s: &mut Sockets, h: &mut H, m: Message, t: Time) -> Time {
        let g = Tcp::geometry(s, m.chan);
        let buf = h.app_buffer(m.bytes);
        let c = match s.end_ref(m.chan).tx_costs.filter(|c| (c.bytes, c.buf) == (m.bytes, buf)) {
            Some(c) => c,
            None => {
                let st = stack(h);
                // Into socket buffers that stay in the cache, which the adapter then reads.
                let traffic = crate::hw::memory::copy_traffic(m.bytes, st.miss(buf), 0.0, true);
                let c = TxCosts { bytes: m.bytes, buf, copy: st.copy_ps(m.bytes, buf), traffic, csum: st.csum_ps(m.bytes) };
                s.end_mut(m.chan).tx_costs = Some(c);
                c
            }
        };
        let mut t = h.copy_end(t + s.k.syscall, c.copy, c.traffic);
        if g.csum {
            t += c.csum;
        }
        let end = s.end_mut(m.chan);
        end.app_bytes += m.bytes;
        let e = end.app_bytes;
        end.tx_msgs.push_back((e, m.tag, m.bytes));
        Tcp::push(s, h, m.chan, t)
    }

    /// A TCP completion reached the host: `packets` datagrams carrying `bytes` of IP
    /// packets (datagram links), or one connected-mode IP packet.
    fn arrival<H: UlpHost>(s: &mut Sockets, h: &mut H, meta: MsgMeta, packets: u64, bytes: u64) {
        let chan = meta.chan;
        let stack = s.end_ref(chan).stack;
        let q = stack.rxq();
        let mut done = h.now();
        if packets > 1 && h.sock_train_max() > 1 && stack.service() == Service::Ud {
            // A socket train: every datagram as if it had arrived alone (the same
            // interrupt, driver, IP, TCP and delivery work, one after another), as long
            // before the train's completion as the sender posted it before the last (the
            // spacing the train carries: `parts`, ns, for data, `tag`, ps, for ACKs); the
            // poll loop ends between two (flushing LRO aggregates) when the core is done
            // before the next comes, as the `PollEnd` event would find. The ACKs it
            // triggers are gathered into one ACK train and a delayed-ACK timer set once.
            let g = Tcp::geometry(s, chan);
            let unit = if matches!(meta.ulp, UlpKind::Ack { .. }) { g.hdr } else { g.mss + g.hdr };
            s.ack_train = Some(AckTrain { chan, qp: s.end_ref(chan).qp, hdr: g.hdr, acks: 0, meta, t: 0, first_ack: 0, first_t: 0, timer: None });
            let mut left = bytes;
            for i in 0..packets {
                let b = if i + 1 == packets { left } else { unit.min(left) };
                left -= b;
                let (meta, at) = match meta.ulp {
                    // An ACK train's acknowledgements, from its first to its last evenly
                    // (the data segments they acknowledge are of one size), each taken as
                    // if it had come alone, as long before the train as it was posted
                    // before the last (the tag's spacing): the receiver spread them over
                    // its input of a data train, and each may raise an interrupt of its own.
                    UlpKind::Ack { .. } => (MsgMeta { msg_id: meta.bytes + meta.msg_id.saturating_sub(meta.bytes) * i / (packets - 1), bytes: 0, tag: 0, ..meta }, h.now().saturating_sub((packets - 1 - i) * meta.tag as Time)),
                    _ => (meta, h.now().saturating_sub((packets - 1 - i) * meta.parts as Time * 1000)),
                };
                if i > 0 && done < at && !s.queues[q].lro_chans.is_empty() {
                    Tcp::poll_ended(s, h, q, done);
                }
                done = Tcp::arrival_one(s, h, meta, 1, b, at);
            }
            let mut b = s.ack_train.take().expect("set above");
            b.flush(h);
            if let Some((at, seq)) = b.timer.filter(|&(_, seq)| s.end_ref(chan).delack_seq == seq) {
                Tcp::set_delack(s, h, chan, at, seq);
            }
        } else {
            done = Tcp::arrival_one(s, h, meta, packets, bytes, h.now());
        }
        if !s.queues[q].lro_chans.is_empty() {
            let seq = s.queues[q].seq;
            h.schedule(done, UlpId::Sock, UlpEv::PollEnd { queue: q as u8, seq });
        }
    }

    /// The delayed-ACK timer of `chan` fired. (A timer whose `seq` is no longer the end's
    /// `delack_seq`, or that finds nothing unacknowledged, does nothing.)
    fn timer<H: UlpHost>(s: &mut Sockets, h: &mut H, chan: u32, seq: u64) {
        let end = s.end_mut(chan);
        if end.delack_seq != seq || end.unacked_segs == 0 {
            return;
        }
        let segs = end.unacked_segs;
        let core = s.k.irq_core;
        h.on_cpu(core, h.now(), |h, t| Tcp::send_ack(s, h, chan, segs, t));
    }

    /// Works out the connection's segment geometry.
    fn start<H: UlpHost>(s: &mut Sockets, h: &mut H, chan: u32) {
        let g = Tcp::work_out_geometry(s, h, chan);
        s.end_mut(chan).tcp_geometry = Some(g);
    }

    /// Linux: a read that drains the socket after a pushed runt acknowledges at once unless
    /// data going back carried the ACK (tcp_cleanup_rbuf); this is what keeps Nagle's rule
    /// and delayed ACKs from stalling a stream.
    fn after_read<H: UlpHost>(s: &mut Sockets, h: &mut H, chan: u32, t: Time) -> Time {
        let end = s.end_mut(chan);
        if end.unacked_bytes > 0 && end.rx_pushed && end.rcv == end.delivered {
            end.rx_pushed = false;
            let segs = end.unacked_segs;
            return Tcp::send_ack(s, h, chan, segs, t);
        }
        t
    }
}

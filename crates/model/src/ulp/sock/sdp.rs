//! The Sockets Direct Protocol over RC, bypassing TCP/IP.
//!
//! * **Buffered copy** (messages below the zero-copy threshold): send() copies the data into
//!   pre-registered private buffers of up to `sdp_chunk_bytes` and posts one RC send per
//!   buffer with a BSDH header. Each needs a credit (a receive buffer the peer posted);
//!   without one it waits. The receiver's stack takes the completion (interrupt, SDP work),
//!   the application copies the data out and the freed buffers go back as credits: carried
//!   by any message going the other way, or by an explicit credit update once half the
//!   buffers are owed.
//! * **Zero copy** (at or above the threshold): send() registers the user buffer and blocks
//!   until the data has moved. If the receiver has advertised its buffer for this message
//!   (SinkAvail, posted whenever its application waits in recv()), the sender RDMA-writes
//!   into it and follows with a completion message; otherwise it advertises its own buffer
//!   (SrcAvail), the receiver registers its buffer, RDMA-reads the data and answers
//!   RdmaRdCompl. No copies at either end.
//! * An end idle for longer than `sdp_idle_us` first exchanges a control message pair
//!   with its peer (an RDMA control round trip) before it sends again.

use super::{stack, Sockets, Transport, TxCosts};
use crate::hw::memory;
use crate::transport::packet::{MsgMeta, SdpMsg, UlpKind};
use crate::ulp::{UlpEv, UlpHost, UlpId};
use interlab_kernel::Time;
use interlab_patterns::{Message, Op};

/// The Sockets Direct Protocol.
pub(super) struct Sdp;

/// Bytes an SDP control message carries after the BSDH (SrcAvail/SinkAvail: length, key,
/// address; OFED `sdp.h`, docs/references.md [D1]).
const SDP_AVAIL_BYTES: u64 = 16;

/// One SDP work request: the verb, its bytes, the SDP message, and the pattern message it
/// belongs to (tag, size).
struct Post {
    op: Op,
    bytes: u64,
    msg: SdpMsg,
    tag: u32,
    size: u64,
    notify: bool,
}

impl Sdp {
    fn post<H: UlpHost>(s: &mut Sockets, h: &mut H, chan: u32, p: Post, t: Time) -> Time {
        let end = s.end_mut(chan);
        let qp = end.qp;
        // Every message advertises the buffers this end has freed.
        let credits = std::mem::take(&mut end.owed);
        let meta = MsgMeta { chan, tag: p.tag, msg_id: credits, parts: 1, bytes: p.size, notify: p.notify, ulp: UlpKind::Sdp(p.msg) };
        h.post(qp, p.op, p.bytes, meta, t)
    }

    /// Buffered copy of `m` from `t`.
    fn bcopy<H: UlpHost>(s: &mut Sockets, h: &mut H, m: Message, mut t: Time) -> Time {
        let (chunk, sdp_tx, hdr) = (s.k.sdp_chunk, s.k.sdp_tx, s.k.sdp_header);
        let n = m.bytes.div_ceil(chunk).max(1);
        for i in 0..n {
            let len = (m.bytes - i * chunk).min(chunk);
            let buf = h.app_buffer(m.bytes);
            let c = Sdp::copy_costs(s, h, m.chan, len, buf);
            t = h.copy_end(t, c.copy, c.traffic) + sdp_tx;
            let end = s.end_mut(m.chan);
            end.sent_msgs += u64::from(i + 1 == n);
            if end.credits == 0 || !end.bc_queue.is_empty() {
                let meta = MsgMeta { chan: m.chan, tag: m.tag, msg_id: 0, parts: 1, bytes: m.bytes, notify: true, ulp: UlpKind::Sdp(SdpMsg::Data { bytes: len }) };
                end.bc_queue.push_back((len, meta));
                continue;
            }
            end.credits -= 1;
            t = Sdp::post(s, h, m.chan, Post { op: Op::Send, bytes: len + hdr, msg: SdpMsg::Data { bytes: len }, tag: m.tag, size: m.bytes, notify: true }, t);
        }
        t
    }

    /// The costs of copying `len` bytes of a message whose application buffer spans `buf`
    /// bytes into a private buffer of the ring, which the adapter then reads; a ring larger
    /// than the cache, cycled through, never hits in it. Kept with the end for the next
    /// chunk of as many bytes.
    fn copy_costs<H: UlpHost>(s: &mut Sockets, h: &H, chan: u32, len: u64, buf: u64) -> TxCosts {
        if let Some(c) = s.end_ref(chan).tx_costs.filter(|c| (c.bytes, c.buf) == (len, buf)) {
            return c;
        }
        let st = stack(h);
        let traffic = memory::copy_traffic(len, st.miss(buf), s.k.sdp_ring_miss, true);
        let c = TxCosts { bytes: len, buf, copy: st.copy_ps(len, buf), traffic, csum: 0 };
        s.end_mut(chan).tx_costs = Some(c);
        c
    }

    /// Starts the next queued blocking send (zero copy, or buffered copy queued behind one).
    fn next<H: UlpHost>(s: &mut Sockets, h: &mut H, chan: u32, t: Time) -> Time {
        let (sdp_tx, hdr) = (s.k.sdp_tx, s.k.sdp_header);
        let end = s.end_mut(chan);
        let Some(m) = end.zc_queue.pop_front() else {
            end.zc_busy = false;
            return t;
        };
        if m.bytes < end.stack.sdp_zcopy_threshold {
            end.zc_busy = false;
            let t = Sdp::bcopy(s, h, m, t);
            return if s.end_mut(chan).zc_queue.is_empty() { t } else { Sdp::next(s, h, chan, t) };
        }
        end.zc_busy = true;
        let idx = end.sent_msgs;
        end.sent_msgs += 1;
        while end.sinks.front().is_some_and(|&i| i < idx) {
            end.sinks.pop_front();
        }
        let sink = end.sinks.front() == Some(&idx);
        let mut t = t + stack(h).reg_ps(m.bytes) + sdp_tx;
        if sink {
            s.end_mut(chan).sinks.pop_front();
            // Write-based zero copy into the advertised buffer, then the completion message.
            t = Sdp::post(s, h, chan, Post { op: Op::RdmaWrite, bytes: m.bytes, msg: SdpMsg::ZcData, tag: m.tag, size: m.bytes, notify: false }, t);
            Sdp::post(s, h, chan, Post { op: Op::Send, bytes: hdr, msg: SdpMsg::WrCompl { bytes: m.bytes }, tag: m.tag, size: m.bytes, notify: true }, t)
        } else {
            Sdp::post(s, h, chan, Post { op: Op::Send, bytes: hdr + SDP_AVAIL_BYTES, msg: SdpMsg::SrcAvail { index: idx }, tag: m.tag, size: m.bytes, notify: true }, t)
        }
    }

    /// After the application received a message, it waits in recv() again: with a buffer
    /// large enough for zero copy it registers it and advertises it (SinkAvail).
    fn post_sink<H: UlpHost>(s: &mut Sockets, h: &mut H, chan: u32, t: Time) -> Time {
        let (sdp_tx, hdr) = (s.k.sdp_tx, s.k.sdp_header);
        let end = s.end_mut(chan);
        if end.recv_size < end.stack.sdp_zcopy_threshold {
            return t;
        }
        let (idx, size) = (end.recv_msgs, end.recv_size);
        let t = t + stack(h).reg_ps(size) + sdp_tx;
        Sdp::post(s, h, chan, Post { op: Op::Send, bytes: hdr + SDP_AVAIL_BYTES, msg: SdpMsg::SinkAvail { index: idx }, tag: 0, size: 0, notify: true }, t)
    }

    /// Buffered-copy data is in the socket at `t`: the application copies it out (woken
    /// if `wake` and it sleeps) and the freed buffers go back as credits.
    fn data_in<H: UlpHost>(s: &mut Sockets, h: &mut H, chan: u32, meta: MsgMeta, bytes: u64, t: Time, wake: bool) {
        let (sdp_tx, hdr, rx_buffers) = (s.k.sdp_tx, s.k.sdp_header, s.k.sdp_rx_buffers);
        let end = s.end_mut(chan);
        end.rcv += bytes;
        end.rx_msg = (meta.tag, meta.bytes);
        let app = Sdp::deliver(s, h, chan, t, true, wake);
        // The copied-out buffers are free again: return them as credits.
        let end = s.end_mut(chan);
        end.owed += 1;
        if end.owed * 2 >= rx_buffers {
            s.on_app_cpu(h, chan, app, |s, h, a| {
                let a = a + sdp_tx;
                Sdp::post(s, h, chan, Post { op: Op::Send, bytes: hdr, msg: SdpMsg::Credit, tag: 0, size: 0, notify: true }, a)
            });
        }
    }

    /// Whether the application of `chan` is still polling its completion queue in recv()
    /// at `now` (OFED SDP `sdp_recvmsg` calls `poll_recv_cq`, `recv_poll` empty polls,
    /// before `sk_wait_data`): its core has been idle since it entered recv(), for no
    /// longer than the polls take.
    fn recv_polling<H: UlpHost>(s: &Sockets, h: &H, chan: u32, now: Time) -> bool {
        if s.k.sdp_polls == 0 {
            return false;
        }
        let since = h.core_free_at(s.app_core(h, chan));
        since <= now && now - since <= s.k.sdp_poll_window
    }

    /// Sends buffered-copy messages that were waiting for credits.
    fn drain<H: UlpHost>(s: &mut Sockets, h: &mut H, chan: u32, mut t: Time) -> Time {
        let hdr = s.k.sdp_header;
        loop {
            let end = s.end_mut(chan);
            if end.credits == 0 {
                return t;
            }
            let Some((len, meta)) = end.bc_queue.pop_front() else { return t };
            end.credits -= 1;
            let UlpKind::Sdp(msg) = meta.ulp else { unreachable!() };
            t = Sdp::post(s, h, chan, Post { op: Op::Send, bytes: len + hdr, msg, tag: meta.tag, size: meta.bytes, notify: true }, t);
        }
    }

    /// Data is in the socket (or the user's buffer): the application takes it, then waits
    /// in recv() again and advertises its buffer for zero copy.
    fn deliver<H: UlpHost>(s: &mut Sockets, h: &mut H, chan: u32, t: Time, copy: bool, wake: bool) -> Time {
        let before = s.end_mut(chan).recv_msgs;
        let a = s.deliver_bytes_from(h, chan, t, copy, wake);
        if s.end_mut(chan).recv_msgs == before {
            return a;
        }
        s.on_app_cpu(h, chan, a, |s, h, a| Sdp::post_sink(s, h, chan, a))
    }

    /// The application's blocked send() resumes at `t`: start the next queued send then.
    fn kick_at<H: UlpHost>(h: &mut H, chan: u32, t: Time) {
        h.schedule(t, UlpId::Sock, UlpEv::Timer { chan, seq: 0, chain: false });
    }
}

impl Transport for Sdp {
    /// send() of `m` by the application at `t`; returns when its core is done.
    fn send<H: UlpHost>(s: &mut Sockets, h: &mut H, m: Message, t: Time) -> Time {
        let k = s.k;
        let now = h.now();
        let end = s.end_mut(m.chan);
        let idle = end.sent_msgs + end.recv_msgs > 0 && now.saturating_sub(end.last_active) > k.sdp_idle;
        end.last_active = now;
        let mut t = t + k.syscall;
        if idle {
            // An idle connection re-establishes its RDMA control state with a round trip
            // before data moves: queue the message behind the exchange.
            let end = s.end_mut(m.chan);
            end.zc_queue.push_back(m);
            if end.zc_busy {
                return t;
            }
            end.zc_busy = true;
            t += k.sdp_tx;
            return Sdp::post(s, h, m.chan, Post { op: Op::Send, bytes: k.sdp_header, msg: SdpMsg::Ctrl, tag: m.tag, size: 0, notify: true }, t);
        }
        let end = s.end_mut(m.chan);
        if m.bytes >= end.stack.sdp_zcopy_threshold || end.zc_busy {
            end.zc_queue.push_back(m);
            if !end.zc_busy {
                // Whether the peer's buffer is known is decided when the CPU gets there.
                end.zc_busy = true;
                Sdp::kick_at(h, m.chan, t);
            }
            return t;
        }
        Sdp::bcopy(s, h, m, t)
    }

    /// An SDP message's completion reached the host.
    fn arrival<H: UlpHost>(s: &mut Sockets, h: &mut H, meta: MsgMeta, _packets: u64, _bytes: u64) {
        let chan = meta.chan;
        let k = s.k;
        if let UlpKind::Sdp(SdpMsg::Data { bytes }) = meta.ulp {
            if Sdp::recv_polling(s, h, chan, h.now()) {
                // The receiver's own poll finds the completion: SDP receive work in its
                // context, no interrupt and no wake-up.
                let t = s.on_app_cpu(h, chan, h.now(), |s, h, start| {
                    let t = start + k.sdp_poll_rx;
                    s.end_mut(chan).credits += meta.msg_id;
                    Sdp::drain(s, h, chan, t)
                });
                Sdp::data_in(s, h, chan, meta, bytes, t, false);
                return;
            }
        }
        let (ready, irq) = s.rx_ready(h, 0, h.now(), 1, None);
        let core = k.irq_core;
        let UlpKind::Sdp(msg) = meta.ulp else { return };
        let done = h.on_cpu(core, ready, |h, start| {
            let t = start + irq + k.sdp_rx;
            s.end_mut(chan).credits += meta.msg_id;
            let t = Sdp::drain(s, h, chan, t);
            match msg {
                SdpMsg::Data { bytes } => {
                    Sdp::data_in(s, h, chan, meta, bytes, t, true);
                    t
                }
                SdpMsg::Credit | SdpMsg::ZcData | SdpMsg::ZcRead => t,
                SdpMsg::Ctrl => {
                    // The peer re-establishes its control state: answer at once.
                    let t = t + k.sdp_tx;
                    Sdp::post(s, h, chan, Post { op: Op::Send, bytes: k.sdp_header, msg: SdpMsg::CtrlAck, tag: 0, size: 0, notify: true }, t)
                }
                SdpMsg::CtrlAck => {
                    Sdp::kick_at(h, chan, t + k.wakeup);
                    t
                }
                SdpMsg::SinkAvail { index } => {
                    s.end_mut(chan).sinks.push_back(index);
                    t
                }
                SdpMsg::WrCompl { bytes } => {
                    let end = s.end_mut(chan);
                    end.rcv += bytes;
                    end.rx_msg = (meta.tag, meta.bytes);
                    Sdp::deliver(s, h, chan, t, false, true);
                    t
                }
                SdpMsg::SrcAvail { .. } => {
                    // The application (woken in recv()) registers its buffer and reads.
                    let qp = s.end_mut(chan).qp;
                    let asleep = s.app_asleep(h, chan, t);
                    s.on_app_cpu(h, chan, t, |_, h, a| {
                        let a = a + k.syscall + if asleep { k.wakeup } else { 0 } + stack(h).reg_ps(meta.bytes);
                        let rmeta = MsgMeta { ulp: UlpKind::Sdp(SdpMsg::ZcRead), msg_id: 0, ..meta };
                        h.post(qp, Op::RdmaRead, meta.bytes, rmeta, a)
                    });
                    t
                }
                SdpMsg::RdCompl => {
                    // The sender's blocking send() returns.
                    Sdp::kick_at(h, chan, t + k.wakeup);
                    t
                }
            }
        });
        s.rx_polled(0, done);
    }

    /// A zero-copy transfer's local completion: the receiver's RDMA read finished, or the
    /// sender's write-completion message was acknowledged.
    fn done<H: UlpHost>(s: &mut Sockets, h: &mut H, meta: MsgMeta) {
        let chan = meta.chan;
        let k = s.k;
        let (ready, irq) = s.rx_ready(h, 0, h.now(), 1, None);
        let core = k.irq_core;
        let t = h.on_cpu(core, ready, |_, s| s + irq);
        s.rx_polled(0, t);
        match meta.ulp {
            UlpKind::Sdp(SdpMsg::ZcRead) => {
                // Receiver: the data is in the user's buffer; tell the sender, return.
                s.on_app_cpu(h, chan, t, |s, h, a| {
                    let a = a + k.sdp_wake_tx;
                    Sdp::post(s, h, chan, Post { op: Op::Send, bytes: k.sdp_header + 4, msg: SdpMsg::RdCompl, tag: meta.tag, size: meta.bytes, notify: true }, a)
                });
                let end = s.end_mut(chan);
                end.rcv += meta.bytes;
                end.rx_msg = (meta.tag, meta.bytes);
                Sdp::deliver(s, h, chan, t, false, true);
            }
            UlpKind::Sdp(SdpMsg::WrCompl { .. }) => Sdp::kick_at(h, chan, t + k.wakeup),
            _ => {}
        }
    }

    /// The application's core reaches the next queued blocking send of `chan` (the timer
    /// [`Sdp::kick_at`] set).
    fn timer<H: UlpHost>(s: &mut Sockets, h: &mut H, chan: u32, _seq: u64) {
        s.on_app_cpu(h, chan, h.now(), |s, h, t| Sdp::next(s, h, chan, t));
    }

    /// Posts the first SinkAvail of an end whose application starts in recv().
    fn start<H: UlpHost>(s: &mut Sockets, h: &mut H, chan: u32) {
        s.on_app_cpu(h, chan, h.now(), |s, h, t| Sdp::post_sink(s, h, chan, t));
    }
}

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

use crate::event::Ev;
use crate::hw::memory;
use crate::node::Node;
use crate::transport::packet::{MsgMeta, SdpMsg, UlpKind};
use crate::ulp::stack_spec::ns;
use interlab_kernel::{Ctx, Time};
use interlab_patterns::{Message, Op};

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

impl Node {
    fn sdp_post(&mut self, chan: u32, p: Post, t: Time, ctx: &mut Ctx<'_, Ev>) -> Time {
        let qp = self.chans[&chan].qps[0];
        let end = self.sock_end(chan);
        // Every message advertises the buffers this end has freed.
        let credits = std::mem::take(&mut end.owed);
        let meta = MsgMeta { chan, tag: p.tag, msg_id: credits, parts: 1, bytes: p.size, notify: p.notify, ulp: UlpKind::Sdp(p.msg) };
        self.post_wr(qp, p.op, p.bytes, meta, t, ctx)
    }

    /// send() of `m` by the application at `t`; returns when its core is done.
    pub(crate) fn sdp_send(&mut self, m: Message, t: Time, ctx: &mut Ctx<'_, Ev>) -> Time {
        let st = self.stack().clone();
        let end = self.sock_end(m.chan);
        let idle = end.sent_msgs + end.recv_msgs > 0 && ctx.now().saturating_sub(end.last_active) > ns(st.sdp_idle_us * 1000.0);
        end.last_active = ctx.now();
        let mut t = t + ns(st.syscall_ns);
        if idle {
            // An idle connection re-establishes its RDMA control state with a round trip
            // before data moves: queue the message behind the exchange.
            let end = self.sock_end(m.chan);
            end.zc_queue.push_back(m);
            if end.zc_busy {
                return t;
            }
            end.zc_busy = true;
            t += ns(st.sdp_tx_ns);
            return self.sdp_post(m.chan, Post { op: Op::Send, bytes: st.sdp_header_bytes, msg: SdpMsg::Ctrl, tag: m.tag, size: 0, notify: true }, t, ctx);
        }
        let end = self.sock_end(m.chan);
        if m.bytes >= end.stack.sdp_zcopy_threshold || end.zc_busy {
            end.zc_queue.push_back(m);
            if !end.zc_busy {
                // Whether the peer's buffer is known is decided when the CPU gets there.
                end.zc_busy = true;
                ctx.send_at(ctx.me(), t, Ev::SockKick { chan: m.chan });
            }
            return t;
        }
        self.sdp_bcopy(m, t, ctx)
    }

    /// Buffered copy of `m` from `t`.
    fn sdp_bcopy(&mut self, m: Message, mut t: Time, ctx: &mut Ctx<'_, Ev>) -> Time {
        let st = self.stack().clone();
        let chunk = st.sdp_chunk_bytes;
        let n = m.bytes.div_ceil(chunk).max(1);
        for i in 0..n {
            let len = (m.bytes - i * chunk).min(chunk);
            // From the user's buffer into a private buffer of the ring, which the adapter
            // then reads; a ring larger than the cache, cycled through, never hits in it.
            let buf = self.app_buffer(m.bytes);
            let ring_miss = if st.sdp_rx_buffers * chunk > st.cache_bytes { 1.0 } else { 0.0 };
            let traffic = memory::copy_traffic(len, st.miss(buf), ring_miss, true);
            t = self.copy_end(t, st.copy_ps(len, buf), traffic) + ns(st.sdp_tx_ns);
            let end = self.sock_end(m.chan);
            end.sent_msgs += u64::from(i + 1 == n);
            if end.credits == 0 || !end.bc_queue.is_empty() {
                let meta = MsgMeta { chan: m.chan, tag: m.tag, msg_id: 0, parts: 1, bytes: m.bytes, notify: true, ulp: UlpKind::Sdp(SdpMsg::Data { bytes: len }) };
                end.bc_queue.push_back((len, meta));
                continue;
            }
            end.credits -= 1;
            t = self.sdp_post(m.chan, Post { op: Op::Send, bytes: len + st.sdp_header_bytes, msg: SdpMsg::Data { bytes: len }, tag: m.tag, size: m.bytes, notify: true }, t, ctx);
        }
        t
    }

    /// Starts the next queued blocking send (zero copy, or buffered copy queued behind one).
    fn sdp_next(&mut self, chan: u32, t: Time, ctx: &mut Ctx<'_, Ev>) -> Time {
        let st = self.stack().clone();
        let end = self.sock_end(chan);
        let Some(m) = end.zc_queue.pop_front() else {
            end.zc_busy = false;
            return t;
        };
        if m.bytes < end.stack.sdp_zcopy_threshold {
            end.zc_busy = false;
            let t = self.sdp_bcopy(m, t, ctx);
            return if self.sock_end(chan).zc_queue.is_empty() { t } else { self.sdp_next(chan, t, ctx) };
        }
        end.zc_busy = true;
        let idx = end.sent_msgs;
        end.sent_msgs += 1;
        while end.sinks.front().is_some_and(|&i| i < idx) {
            end.sinks.pop_front();
        }
        let sink = end.sinks.front() == Some(&idx);
        let mut t = t + st.reg_ps(m.bytes) + ns(st.sdp_tx_ns);
        if sink {
            self.sock_end(chan).sinks.pop_front();
            // Write-based zero copy into the advertised buffer, then the completion message.
            t = self.sdp_post(chan, Post { op: Op::RdmaWrite, bytes: m.bytes, msg: SdpMsg::ZcData, tag: m.tag, size: m.bytes, notify: false }, t, ctx);
            self.sdp_post(chan, Post { op: Op::Send, bytes: st.sdp_header_bytes, msg: SdpMsg::WrCompl { bytes: m.bytes }, tag: m.tag, size: m.bytes, notify: true }, t, ctx)
        } else {
            self.sdp_post(chan, Post { op: Op::Send, bytes: st.sdp_header_bytes + SDP_AVAIL_BYTES, msg: SdpMsg::SrcAvail { index: idx }, tag: m.tag, size: m.bytes, notify: true }, t, ctx)
        }
    }

    /// After the application received a message, it waits in recv() again: with a buffer
    /// large enough for zero copy it registers it and advertises it (SinkAvail).
    pub(crate) fn sdp_post_sink(&mut self, chan: u32, t: Time, ctx: &mut Ctx<'_, Ev>) -> Time {
        let st = self.stack().clone();
        let end = self.sock_end(chan);
        if end.recv_size < end.stack.sdp_zcopy_threshold {
            return t;
        }
        let (idx, size) = (end.recv_msgs, end.recv_size);
        let t = t + st.reg_ps(size) + ns(st.sdp_tx_ns);
        self.sdp_post(chan, Post { op: Op::Send, bytes: st.sdp_header_bytes + SDP_AVAIL_BYTES, msg: SdpMsg::SinkAvail { index: idx }, tag: 0, size: 0, notify: true }, t, ctx)
    }

    /// Buffered-copy data is in the socket at `t`: the application copies it out (woken
    /// if `wake` and it sleeps) and the freed buffers go back as credits.
    fn sdp_data_in(&mut self, chan: u32, meta: MsgMeta, bytes: u64, t: Time, wake: bool, ctx: &mut Ctx<'_, Ev>) {
        let st = self.stack().clone();
        let end = self.sock_end(chan);
        end.rcv += bytes;
        end.rx_msg = (meta.tag, meta.bytes);
        let app = self.sdp_deliver(chan, t, true, wake, ctx);
        // The copied-out buffers are free again: return them as credits.
        let end = self.sock_end(chan);
        end.owed += 1;
        if end.owed * 2 >= st.sdp_rx_buffers {
            let core = self.app_core(chan);
            self.on_cpu(core, app, |n, a| {
                let a = a + ns(st.sdp_tx_ns);
                n.sdp_post(chan, Post { op: Op::Send, bytes: st.sdp_header_bytes, msg: SdpMsg::Credit, tag: 0, size: 0, notify: true }, a, ctx)
            });
        }
    }

    /// Whether the application of `chan` is still polling its completion queue in recv()
    /// at `now` (OFED SDP `sdp_recvmsg` calls `poll_recv_cq`, `recv_poll` empty polls,
    /// before `sk_wait_data`): its core has been idle since it entered recv(), for no
    /// longer than the polls take.
    fn sdp_recv_polling(&self, chan: u32, now: Time) -> bool {
        let polls = self.stack().sdp_recv_polls;
        if polls == 0 {
            return false;
        }
        let since = self.cores.free_at(self.app_core(chan));
        since <= now && now - since <= polls * ns(self.prof.host.cqe_poll_ns)
    }

    /// An SDP message's completion reached the host.
    pub(crate) fn sdp_arrival(&mut self, meta: MsgMeta, ctx: &mut Ctx<'_, Ev>) {
        let chan = meta.chan;
        let st = self.stack().clone();
        if let UlpKind::Sdp(SdpMsg::Data { bytes }) = meta.ulp {
            if self.sdp_recv_polling(chan, ctx.now()) {
                // The receiver's own poll finds the completion: SDP receive work in its
                // context, no interrupt and no wake-up.
                let app = self.app_core(chan);
                let t = self.on_cpu(app, ctx.now(), |n, s| {
                    let t = s + ns(n.prof.host.cqe_poll_ns + st.sdp_rx_ns);
                    n.sock_end(chan).credits += meta.msg_id;
                    n.sdp_drain(chan, t, ctx)
                });
                self.sdp_data_in(chan, meta, bytes, t, false, ctx);
                return;
            }
        }
        let (ready, irq) = self.rx_ready(0, ctx.now(), 1, None);
        let core = self.irq_core();
        let UlpKind::Sdp(msg) = meta.ulp else { return };
        let done = self.on_cpu(core, ready, |n, start| {
            let t = start + irq + ns(st.sdp_rx_ns);
            n.sock_end(chan).credits += meta.msg_id;
            let t = n.sdp_drain(chan, t, ctx);
            match msg {
                SdpMsg::Data { bytes } => {
                    n.sdp_data_in(chan, meta, bytes, t, true, ctx);
                    t
                }
                SdpMsg::Credit | SdpMsg::ZcData | SdpMsg::ZcRead => t,
                SdpMsg::Ctrl => {
                    // The peer re-establishes its control state: answer at once.
                    let t = t + ns(st.sdp_tx_ns);
                    n.sdp_post(chan, Post { op: Op::Send, bytes: st.sdp_header_bytes, msg: SdpMsg::CtrlAck, tag: 0, size: 0, notify: true }, t, ctx)
                }
                SdpMsg::CtrlAck => {
                    n.sdp_kick_at(chan, t + ns(st.wakeup_ns), ctx);
                    t
                }
                SdpMsg::SinkAvail { index } => {
                    n.sock_end(chan).sinks.push_back(index);
                    t
                }
                SdpMsg::WrCompl { bytes } => {
                    let end = n.sock_end(chan);
                    end.rcv += bytes;
                    end.rx_msg = (meta.tag, meta.bytes);
                    n.sdp_deliver(chan, t, false, true, ctx);
                    t
                }
                SdpMsg::SrcAvail { .. } => {
                    // The application (woken in recv()) registers its buffer and reads.
                    let core = n.app_core(chan);
                    let qp = n.chans[&chan].qps[0];
                    n.on_cpu(core, t, |n, a| {
                        let idle = n.cores.free_at(core) <= t;
                        let a = a + ns(st.syscall_ns) + if idle { ns(st.wakeup_ns) } else { 0 } + st.reg_ps(meta.bytes);
                        let rmeta = MsgMeta { ulp: UlpKind::Sdp(SdpMsg::ZcRead), msg_id: 0, ..meta };
                        n.post_wr(qp, Op::RdmaRead, meta.bytes, rmeta, a, ctx)
                    });
                    t
                }
                SdpMsg::RdCompl => {
                    // The sender's blocking send() returns.
                    n.sdp_kick_at(chan, t + ns(st.wakeup_ns), ctx);
                    t
                }
            }
        });
        self.rx_polled(0, done);
    }

    /// Sends buffered-copy messages that were waiting for credits.
    fn sdp_drain(&mut self, chan: u32, mut t: Time, ctx: &mut Ctx<'_, Ev>) -> Time {
        let hdr = self.stack().sdp_header_bytes;
        loop {
            let end = self.sock_end(chan);
            if end.credits == 0 {
                return t;
            }
            let Some((len, meta)) = end.bc_queue.pop_front() else { return t };
            end.credits -= 1;
            let UlpKind::Sdp(msg) = meta.ulp else { unreachable!() };
            t = self.sdp_post(chan, Post { op: Op::Send, bytes: len + hdr, msg, tag: meta.tag, size: meta.bytes, notify: true }, t, ctx);
        }
    }

    /// Data is in the socket (or the user's buffer): the application takes it, then waits
    /// in recv() again and advertises its buffer for zero copy.
    fn sdp_deliver(&mut self, chan: u32, t: Time, copy: bool, wake: bool, ctx: &mut Ctx<'_, Ev>) -> Time {
        let before = self.sock_end(chan).recv_msgs;
        let a = self.sock_deliver_from(chan, t, copy, wake, ctx);
        if self.sock_end(chan).recv_msgs == before {
            return a;
        }
        let core = self.app_core(chan);
        self.on_cpu(core, a, |n, a| n.sdp_post_sink(chan, a, ctx))
    }

    /// A zero-copy transfer's local completion: the receiver's RDMA read finished, or the
    /// sender's write-completion message was acknowledged.
    pub(crate) fn sdp_local_done(&mut self, meta: MsgMeta, ctx: &mut Ctx<'_, Ev>) {
        let chan = meta.chan;
        let st = self.stack().clone();
        let (ready, irq) = self.rx_ready(0, ctx.now(), 1, None);
        let core = self.irq_core();
        let t = self.on_cpu(core, ready, |_, s| s + irq);
        self.rx_polled(0, t);
        match meta.ulp {
            UlpKind::Sdp(SdpMsg::ZcRead) => {
                // Receiver: the data is in the user's buffer; tell the sender, return.
                let app = self.app_core(chan);
                self.on_cpu(app, t, |n, a| {
                    let a = a + ns(st.wakeup_ns + st.sdp_tx_ns);
                    n.sdp_post(chan, Post { op: Op::Send, bytes: st.sdp_header_bytes + 4, msg: SdpMsg::RdCompl, tag: meta.tag, size: meta.bytes, notify: true }, a, ctx)
                });
                let end = self.sock_end(chan);
                end.rcv += meta.bytes;
                end.rx_msg = (meta.tag, meta.bytes);
                self.sdp_deliver(chan, t, false, true, ctx);
            }
            UlpKind::Sdp(SdpMsg::WrCompl { .. }) => self.sdp_kick_at(chan, t + ns(st.wakeup_ns), ctx),
            _ => {}
        }
    }

    /// The application's blocked send() resumes at `t`: start the next queued send then.
    fn sdp_kick_at(&mut self, chan: u32, t: Time, ctx: &mut Ctx<'_, Ev>) {
        ctx.send_at(ctx.me(), t, Ev::SockKick { chan });
    }

    /// The application's core reaches the next queued blocking send of `chan`.
    pub(crate) fn sdp_kick(&mut self, chan: u32, ctx: &mut Ctx<'_, Ev>) {
        let core = self.app_core(chan);
        self.on_cpu(core, ctx.now(), |n, t| n.sdp_next(chan, t, ctx));
    }

    /// Posts the first SinkAvail of an end whose application starts in recv().
    pub(crate) fn sdp_start(&mut self, chan: u32, ctx: &mut Ctx<'_, Ev>) {
        let core = self.app_core(chan);
        self.on_cpu(core, ctx.now(), |n, t| n.sdp_post_sink(chan, t, ctx));
    }
}

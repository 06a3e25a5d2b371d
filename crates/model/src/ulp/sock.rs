//! Stream sockets over the verbs model: which stack a connection uses, its per-connection
//! state, and the host work every stack shares: the application's cores, the receive
//! interrupt with NAPI polling and (static or adaptive) coalescing, and delivery of stream
//! bytes to a process blocked in recv(). The stacks themselves are [`crate::ulp::tcp`]
//! (kernel TCP/IP over IPoIB or Ethernet) and [`crate::ulp::sdp`].
//!
//! Receive path: the adapter's completion raises an interrupt on the interrupt core unless
//! that core is still polling the same queue (NAPI) or a coalesced interrupt is pending; the
//! stack then does its per-packet (or per-aggregate) work there, and the application, on
//! its own core, is woken, makes its system call and copies the data out.

use crate::event::Ev;
use crate::node::Node;
use crate::transport::packet::{MsgMeta, Service};
use crate::ulp::stack_spec::{ns, StackSpec};
use interlab_kernel::{Ctx, Time};
use interlab_patterns::{Input, Message};
use std::collections::VecDeque;

/// Which kind of socket stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SockKind {
    /// TCP/IP over IPoIB datagram mode (UD, 2 KiB MTU; LSO and LRO optional).
    IpoibUd,
    /// TCP/IP over IPoIB connected mode (RC, 64 KiB MTU, no offloads).
    IpoibRc,
    /// TCP/IP over the adapter's 10GigE port.
    Eth,
    /// Sockets Direct Protocol over RC: buffered copy below the zero-copy threshold.
    Sdp,
}

/// A socket stack and its switches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SockStack {
    pub kind: SockKind,
    /// Large send offload (IPoIB-UD, Ethernet); `None`: the device's default (off for
    /// IPoIB, the profile's `[eth]` setting for Ethernet).
    pub lso: Option<bool>,
    /// Large receive offload, likewise.
    pub lro: Option<bool>,
    /// Adaptive receive interrupt coalescing (Ethernet); off: the static setting.
    pub aic: bool,
    /// Ethernet MTU (IP bytes per frame); 0 takes the profile's.
    pub eth_mtu: u32,
    /// SDP: messages of at least this many bytes go zero copy (`u64::MAX`: never).
    pub sdp_zcopy_threshold: u64,
}

/// OFED's default SDP zero-copy threshold (OFED `sdp_main.c` sdp_zcopy_thresh 64 KiB; docs/references.md [D2]).
pub const SDP_DEFAULT_THRESHOLD: u64 = 65536;

impl SockStack {
    /// A stack with its defaults: no IPoIB offloads, adaptive coalescing and the profile's
    /// offload settings on Ethernet, SDP with the default threshold.
    pub fn new(kind: SockKind) -> Self {
        SockStack { kind, lso: None, lro: None, aic: true, eth_mtu: 0, sdp_zcopy_threshold: SDP_DEFAULT_THRESHOLD }
    }

    /// TCP/IP over IPoIB datagram mode without offloads.
    pub fn ipoib_ud() -> Self {
        Self::new(SockKind::IpoibUd)
    }

    /// SDP in buffered-copy mode only.
    pub fn sdp_bc() -> Self {
        SockStack { sdp_zcopy_threshold: u64::MAX, ..Self::new(SockKind::Sdp) }
    }

    /// Every socket stack by name: the one table experiment specs (`socket`), the
    /// data-center replay (`protocol`) and PVFS specs (`protocol`) read. `10gige` is an alias
    /// of `eth`.
    pub const NAMES: [&'static str; 7] = ["eth", "ipoib-ud", "ipoib-ud-lro-lso", "ipoib-rc", "sdp", "sdp-bc", "sdp-zc"];

    /// The stack named `name` (one of [`SockStack::NAMES`] or `10gige`) with its defaults.
    pub fn named(name: &str) -> Option<SockStack> {
        Some(match name {
            "eth" | "10gige" => SockStack::new(SockKind::Eth),
            "ipoib-ud" => SockStack::ipoib_ud(),
            "ipoib-ud-lro-lso" => SockStack { lro: Some(true), lso: Some(true), ..SockStack::ipoib_ud() },
            "ipoib-rc" => SockStack::new(SockKind::IpoibRc),
            "sdp" => SockStack::new(SockKind::Sdp),
            "sdp-bc" => SockStack::sdp_bc(),
            "sdp-zc" => SockStack { sdp_zcopy_threshold: 1, ..SockStack::new(SockKind::Sdp) },
            _ => return None,
        })
    }

    /// [`SockStack::named`] with an error listing the names.
    pub fn parse_name(name: &str) -> Result<SockStack, String> {
        SockStack::named(name).ok_or_else(|| format!("unknown socket stack `{name}` (expected one of {}, or 10gige)", SockStack::NAMES.join(", ")))
    }

    /// Spec name of the kind.
    pub fn name(self) -> &'static str {
        match self.kind {
            SockKind::IpoibUd => "ipoib-ud",
            SockKind::IpoibRc => "ipoib-rc",
            SockKind::Eth => "eth",
            SockKind::Sdp if self.sdp_zcopy_threshold == u64::MAX => "sdp-bc",
            SockKind::Sdp if self.sdp_zcopy_threshold <= 1 => "sdp-zc",
            SockKind::Sdp => "sdp",
        }
    }

    /// Whether LSO is on, given the profile's Ethernet port.
    pub fn lso_on(self, eth: Option<&crate::hw::eth_spec::EthSpec>) -> bool {
        self.lso.unwrap_or(self.kind == SockKind::Eth && eth.is_some_and(|e| e.lso))
    }

    /// Whether LRO is on, given the profile's Ethernet port.
    pub fn lro_on(self, eth: Option<&crate::hw::eth_spec::EthSpec>) -> bool {
        self.lro.unwrap_or(self.kind == SockKind::Eth && eth.is_some_and(|e| e.lro))
    }

    /// Name with the switches that differ from the defaults, for records.
    pub fn describe(self) -> String {
        let mut s = self.name().to_string();
        for (name, v) in [("lso", self.lso), ("lro", self.lro)] {
            match v {
                Some(true) => s.push_str(&format!("+{name}")),
                Some(false) => s.push_str(&format!("-{name}")),
                None => {}
            }
        }
        if self.kind == SockKind::Eth {
            if !self.aic {
                s.push_str("+static-coalescing");
            }
            if self.eth_mtu > 0 {
                s.push_str(&format!("+mtu{}", self.eth_mtu));
            }
        }
        if self.kind == SockKind::Sdp && self.sdp_zcopy_threshold > 1 && self.sdp_zcopy_threshold != u64::MAX && self.sdp_zcopy_threshold != SDP_DEFAULT_THRESHOLD {
            s.push_str(&format!("+zcopy{}", self.sdp_zcopy_threshold));
        }
        s
    }

    /// The InfiniBand (or raw Ethernet) service the stack's queue pairs use.
    pub fn service(self) -> Service {
        match self.kind {
            SockKind::IpoibUd | SockKind::Eth => Service::Ud,
            SockKind::IpoibRc | SockKind::Sdp => Service::Rc,
        }
    }

    /// Receive queue (interrupt context): 0 InfiniBand completions, 1 Ethernet.
    pub(crate) fn rxq(self) -> usize {
        usize::from(self.kind == SockKind::Eth)
    }
}

/// One end of a socket connection.
#[derive(Debug, Clone)]
pub struct SockEnd {
    pub stack: SockStack,
    /// Bytes the application asks recv() for (the pattern's message size).
    pub recv_size: u64,
    // ---- TCP, sending
    /// Stream bytes the application has written.
    pub(crate) app_bytes: u64,
    /// Stream bytes handed to the driver.
    pub(crate) snd_nxt: u64,
    /// Stream bytes acknowledged by the peer.
    pub(crate) snd_una: u64,
    /// End of the last segment shorter than the MSS that was sent (Minshall's Nagle).
    pub(crate) snd_sml: u64,
    /// (stream end offset, tag, size) of written messages not yet fully segmented.
    pub(crate) tx_msgs: VecDeque<(u64, u32, u64)>,
    // ---- receiving (TCP and SDP buffered copy)
    /// Stream bytes the stack has received in order.
    pub(crate) rcv: u64,
    /// Stream bytes copied to the application.
    pub(crate) delivered: u64,
    /// End offset of the message the application is reading, once known.
    pub(crate) rx_msg_end: Option<u64>,
    /// (tag, size) of the messages being received.
    pub(crate) rx_msg: (u32, u64),
    /// TCP segments (and bytes) received and not yet acknowledged.
    pub(crate) unacked_segs: u64,
    pub(crate) unacked_bytes: u64,
    /// The last segment received was shorter than the MSS (the sender pushed a runt).
    pub(crate) rx_pushed: bool,
    /// Bumped on every acknowledgement: a delayed-ACK timer with an older value is void.
    pub(crate) delack_seq: u64,
    /// LRO aggregate being built: (bytes, packets, meta of the last packet).
    pub(crate) lro: Option<(u64, u64, MsgMeta)>,
    // ---- SDP
    /// Receive buffers the peer has posted for us (buffered-copy credits).
    pub(crate) credits: u64,
    /// Buffers we have freed and not yet advertised to the peer.
    pub(crate) owed: u64,
    /// Buffered-copy messages waiting for a credit: (bytes, meta).
    pub(crate) bc_queue: VecDeque<(u64, MsgMeta)>,
    /// Zero-copy sends waiting for the one in progress (send() blocks until done).
    pub(crate) zc_queue: VecDeque<Message>,
    pub(crate) zc_busy: bool,
    /// Messages this end has started sending / finished receiving.
    pub(crate) sent_msgs: u64,
    pub(crate) recv_msgs: u64,
    /// SinkAvail advertisements from the peer: message indices whose receive buffer is
    /// registered and known to us.
    pub(crate) sinks: VecDeque<u64>,
    /// Last time this end sent or received anything (SDP idle detection).
    pub(crate) last_active: Time,
}

impl SockEnd {
    /// A fresh end whose application receives `recv_size`-byte messages.
    pub fn new(stack: SockStack, recv_size: u64, sdp_credits: u64) -> Self {
        SockEnd {
            stack,
            recv_size,
            app_bytes: 0,
            snd_nxt: 0,
            snd_una: 0,
            snd_sml: 0,
            tx_msgs: VecDeque::new(),
            rcv: 0,
            delivered: 0,
            rx_msg_end: None,
            rx_msg: (0, 0),
            unacked_segs: 0,
            unacked_bytes: 0,
            rx_pushed: false,
            delack_seq: 0,
            lro: None,
            credits: sdp_credits,
            owed: 0,
            bc_queue: VecDeque::new(),
            zc_queue: VecDeque::new(),
            zc_busy: false,
            sent_msgs: 0,
            recv_msgs: 0,
            sinks: VecDeque::new(),
            last_active: 0,
        }
    }
}

/// A receive queue's interrupt context (NAPI instance) and its interrupt counter.
#[derive(Debug, Clone, Default)]
pub struct RxQueue {
    /// A coalesced interrupt is pending until then.
    irq_at: Time,
    /// The poll loop is busy with this queue until then.
    poll_until: Time,
    /// Packet-rate estimate for adaptive coalescing, packets/s, at `rate_t`.
    rate_pps: f64,
    rate_t: Time,
    /// Arrivals so far (an LRO flush at the end of a poll checks none came since).
    pub(crate) seq: u64,
    /// Channels with an LRO aggregate waiting for the end of the poll.
    pub(crate) lro_chans: Vec<u32>,
    /// Interrupts taken.
    pub interrupts: u64,
}

/// Per-host socket state beside the adapter: the receive queues.
#[derive(Debug, Clone, Default)]
pub struct SockHost {
    pub queues: [RxQueue; 2],
}

impl Node {
    pub(crate) fn stack(&self) -> &StackSpec {
        self.prof.stack.as_ref().expect("validated: socket channels need a profile [stack] section")
    }

    /// The core that takes the adapter's interrupts: the last one (one completion vector
    /// for both ports); applications are placed from core 0.
    pub(crate) fn irq_core(&self) -> usize {
        self.cores.len() - 1
    }

    pub(crate) fn sock_end(&mut self, chan: u32) -> &mut SockEnd {
        self.chans.get_mut(&chan).and_then(|c| c.sock.as_mut()).expect("socket channel")
    }

    /// The application core of channel `chan`'s end here.
    pub(crate) fn app_core(&self, chan: u32) -> usize {
        self.procs[self.chans[&chan].proc as usize].core as usize
    }

    /// Runs `f` on `core` from no earlier than `ready`; `f` gets the start time and returns
    /// when the work ends. The core is busy in between.
    pub(crate) fn on_cpu(&mut self, core: usize, ready: Time, f: impl FnOnce(&mut Self, Time) -> Time) -> Time {
        let (slot, start) = self.cores.start(core, ready);
        let end = f(self, start).max(start);
        self.stats.core_busy_ps[core] += end - start;
        // Work `f` started on this core itself (an application sharing the interrupt
        // core) ran after `f`'s own and has already moved the core's clock.
        self.cores.finish(slot, end);
        end
    }

    /// When a completion of `packets` packets arriving at `t` on queue `q` is handled, and the
    /// interrupt cost it brings: joins a pending coalesced interrupt, rides an active poll,
    /// or raises an interrupt after the queue's coalescing delay.
    pub(crate) fn rx_ready(&mut self, q: usize, t: Time, packets: u64, eth_aic: Option<bool>) -> (Time, Time) {
        let irq_ns = self.stack().interrupt_ns;
        let ipoib_delay_us = self.stack().ipoib_rx_usecs;
        let napi = self.stack().napi;
        let qu = &mut self.sock.queues[q];
        qu.seq += 1;
        let delay_us = match eth_aic {
            Some(aic) => {
                let e = self.prof.eth.as_ref().expect("validated: Ethernet stacks need [eth]");
                // Exponentially weighted packet rate with the scheme's time constant.
                let tau_ps = e.aic_sample_us * 1e6;
                let dt = t.saturating_sub(qu.rate_t) as f64;
                qu.rate_pps = qu.rate_pps * (-dt / tau_ps).exp() + packets as f64 / (tau_ps * 1e-12);
                qu.rate_t = t;
                if aic {
                    e.aic_delay_us(qu.rate_pps)
                } else {
                    e.rx_usecs
                }
            }
            None => ipoib_delay_us,
        };
        if t < qu.irq_at {
            return (qu.irq_at, 0);
        }
        if t <= qu.poll_until && napi {
            return (t, 0);
        }
        qu.interrupts += 1;
        qu.irq_at = t + (delay_us * 1e6).round() as Time;
        (qu.irq_at, ns(irq_ns))
    }

    /// The poll loop of queue `q` worked until `until`.
    pub(crate) fn rx_polled(&mut self, q: usize, until: Time) {
        let qu = &mut self.sock.queues[q];
        qu.poll_until = qu.poll_until.max(until);
    }

    /// A socket completion (data, acknowledgement or protocol message) reached the host.
    pub(crate) fn sock_arrival(&mut self, meta: MsgMeta, packets: u32, bytes: u64, ctx: &mut Ctx<'_, Ev>) {
        let stack = self.sock_end(meta.chan).stack;
        self.sock_end(meta.chan).last_active = ctx.now();
        if stack.kind == SockKind::Sdp {
            self.sdp_arrival(meta, ctx);
        } else {
            self.tcp_arrival(meta, packets as u64, bytes, ctx);
        }
    }

    /// The application sends `m` at CPU time `t` on its core; returns when the CPU is done.
    pub(crate) fn sock_send(&mut self, m: Message, t: Time, ctx: &mut Ctx<'_, Ev>) -> Time {
        let end = self.sock_end(m.chan);
        if end.stack.kind == SockKind::Sdp {
            self.sdp_send(m, t, ctx)
        } else {
            self.tcp_send(m, t, ctx)
        }
    }

    /// `new` more stream bytes of `chan` are in the socket at `t`: the application (woken if
    /// it sleeps in recv()) copies them out, and every message they complete is delivered
    /// to its program. `copy` is false when the data already sits in the user's buffer
    /// (zero copy). Returns when the application's core is done.
    pub(crate) fn sock_deliver(&mut self, chan: u32, t: Time, copy: bool, ctx: &mut Ctx<'_, Ev>) -> Time {
        self.sock_deliver_from(chan, t, copy, true, ctx)
    }

    /// [`Node::sock_deliver`]; `wake` false when the caller already woke the application.
    pub(crate) fn sock_deliver_from(&mut self, chan: u32, t: Time, copy: bool, wake: bool, ctx: &mut Ctx<'_, Ev>) -> Time {
        let end = self.sock_end(chan);
        let new = end.rcv - end.delivered;
        if new == 0 {
            return t;
        }
        let size = end.rx_msg.1;
        let core = self.app_core(chan);
        let proc = self.chans[&chan].proc;
        let st = self.stack().clone();
        self.on_cpu(core, t, |n, start| {
            let idle = wake && n.cores.free_at(core) <= t;
            let mut c = start + ns(st.syscall_ns) + if idle { ns(st.wakeup_ns) } else { 0 };
            if copy {
                // Out of buffers the adapter wrote (its DMA left them in memory, not in the
                // cache) into the user's buffer.
                let buf = n.app_buffer(size);
                let traffic = crate::hw::memory::copy_traffic(new, 1.0, st.miss(buf), true);
                c = n.copy_end(c, st.rx_copy_ps(new, buf), traffic);
                // IPoIB: every datagram (connected-mode packet) is its own socket buffer,
                // released by the process once copied (tcp_recvmsg: sk_eat_skb; an LRO
                // aggregate's chained datagrams in skb_drop_fraglist).
                let kind = n.sock_end(chan).stack.kind;
                if st.ipoib_rx_free_ns > 0.0 && matches!(kind, SockKind::IpoibUd | SockKind::IpoibRc) {
                    let mss = if kind == SockKind::IpoibUd { st.ipoib_mtu_bytes } else { st.ipoib_cm_mtu_bytes } - st.ip_header_bytes;
                    c += new.div_ceil(mss) * ns(st.ipoib_rx_free_ns);
                }
            }
            let end = n.sock_end(chan);
            end.delivered += new;
            let mut done = Vec::new();
            loop {
                let e = *end.rx_msg_end.get_or_insert(end.rx_msg.1);
                if end.delivered < e {
                    break;
                }
                done.push(end.rx_msg);
                end.rx_msg_end = Some(e + end.rx_msg.1);
            }
            for (tag, bytes) in done {
                n.sock_end(chan).recv_msgs += 1;
                c = n.feed(proc, Input::Arrived { chan, bytes, tag }, c, ctx);
            }
            // Linux: a read that drains the socket after a pushed runt acknowledges at once
            // unless data going back carried the ACK (tcp_cleanup_rbuf); this is what keeps
            // Nagle's rule and delayed ACKs from stalling a stream.
            let end = n.sock_end(chan);
            if end.stack.kind != SockKind::Sdp && end.unacked_bytes > 0 && end.rx_pushed && end.rcv == end.delivered {
                end.rx_pushed = false;
                let segs = end.unacked_segs;
                c = n.tcp_send_ack(chan, segs, c, ctx);
            }
            c
        })
    }
}

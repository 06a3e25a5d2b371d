//! Stream sockets over the verbs model: which stack a connection uses, its per-connection
//! state, and the host work every stack shares: the application's cores, the receive
//! interrupt with NAPI polling and (static or adaptive) coalescing, and delivery of stream
//! bytes to a process blocked in recv(). The transports themselves are [`tcp`] (kernel
//! TCP/IP over IPoIB or Ethernet) and [`sdp`], each a [`Transport`]; [`Sockets`] dispatches
//! to them by [`SockKind`] with a `match`.
//!
//! Receive path: the adapter's completion raises an interrupt on the interrupt core unless
//! that core is still polling the same queue (NAPI) or a coalesced interrupt is pending; the
//! stack then does its per-packet (or per-aggregate) work there, and the application, on
//! its own core, is woken, makes its system call and copies the data out.

mod delack;
mod sdp;
mod tcp;

use crate::profile::Profile;
use crate::transport::packet::{MsgMeta, SdpMsg, Service, UlpKind};
use crate::ulp::stack_spec::{ns, StackSpec};
use crate::ulp::{Ulp, UlpEv, UlpHost, UlpId};
use interlab_kernel::Time;
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

    /// Whether `prof` can run this stack with these switches; the reason when not.
    pub fn check(self, prof: &Profile) -> Result<(), String> {
        match self.kind {
            SockKind::Eth => {
                let Some(e) = &prof.eth else {
                    return Err(format!("profile {} has no Ethernet port ([eth] section)", prof.id));
                };
                if self.eth_mtu != 0 && !(576..=9216).contains(&self.eth_mtu) {
                    return Err(format!("Ethernet MTU must be 576..=9216 bytes, found {}", self.eth_mtu));
                }
                if self.eth_mtu == 0 && e.link.mtu_bytes == 0 {
                    return Err("the profile's Ethernet MTU is 0".into());
                }
            }
            SockKind::IpoibRc | SockKind::Sdp if self.lso == Some(true) || self.lro == Some(true) => {
                return Err(format!("LSO and LRO are datagram-mode offloads; {} has neither", self.name()));
            }
            _ => {}
        }
        if self.kind == SockKind::Sdp && self.sdp_zcopy_threshold == 0 {
            return Err("the SDP zero-copy threshold must be at least 1 byte".into());
        }
        Ok(())
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
    /// The process owning this end.
    pub(crate) proc: u16,
    /// The queue pair the connection uses.
    pub(crate) qp: u32,
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
    /// TCP: the delayed-ACK timers, queued as a chain ([`delack`]).
    delack: delack::DelackChain,
    /// TCP: the segment geometry, worked out at start.
    tcp_geometry: Option<tcp::Geometry>,
    /// The costs of the last delivery to the application (see [`Sockets::deliver_bytes`]).
    rx_costs: Option<RxCosts>,
    /// The costs of the last copy into the socket (see [`TxCosts`]).
    tx_costs: Option<TxCosts>,
}

/// What delivering `new` stream bytes of `size`-byte messages costs the application: the
/// system call, a wake-up, the copy (CPU ps and memory traffic, bytes) and freeing IPoIB
/// buffers, ps. Pure functions of the two sizes and the profile, kept between deliveries.
#[derive(Debug, Clone, Copy)]
struct RxCosts {
    new: u64,
    size: u64,
    syscall: Time,
    wakeup: Time,
    copy: Time,
    traffic: u64,
    free: Time,
}

/// What copying `bytes` of a message whose application buffer spans `buf` bytes into the
/// socket costs: the copy's CPU time and memory traffic, and (TCP) the software checksum,
/// ps. Pure functions of the two sizes and the profile, kept between sends (a stream's
/// messages, an SDP message's full chunks).
#[derive(Debug, Clone, Copy)]
struct TxCosts {
    bytes: u64,
    buf: u64,
    copy: Time,
    traffic: u64,
    csum: Time,
}

/// The profile's `[stack]` values a socket event needs, converted to picoseconds once when
/// the node starts (every conversion as the stack did it per event before): pure functions
/// of the profile and of where the node's processes run, fixed for the run.
#[derive(Debug, Clone, Copy, Default)]
struct Costs {
    /// The application runs on the interrupt core ([`Sockets::shares_irq_core`]).
    shares_irq: bool,
    /// The interrupt core.
    irq_core: usize,
    /// `ns(interrupt_ns)`; `ipoib_rx_usecs` in ps (rounded); `napi`.
    irq: Time,
    ipoib_delay: Time,
    napi: bool,
    /// `prequeue`; `ns(tcp_rx_ns)`; `ns(wakeup_ns)`; `ns(syscall_ns)`.
    prequeue: bool,
    tcp_rx: Time,
    wakeup: Time,
    syscall: Time,
    /// `ack_every_packets`; `delack_us` in ps (truncated).
    ack_every: u64,
    delack: Time,
    /// SDP: `ns(sdp_tx_ns)`, `ns(sdp_rx_ns)`, `ns(cqe_poll_ns + sdp_rx_ns)`,
    /// `ns(wakeup_ns + sdp_tx_ns)`, `ns(sdp_idle_us * 1000)`, `sdp_recv_polls` times
    /// `ns(cqe_poll_ns)`.
    sdp_tx: Time,
    sdp_rx: Time,
    sdp_poll_rx: Time,
    sdp_wake_tx: Time,
    sdp_idle: Time,
    sdp_polls: u64,
    sdp_poll_window: Time,
    /// SDP: header bytes, chunk bytes, receive buffers, and the miss ratio of a copy into
    /// the private ring (1 when the ring exceeds the cache).
    sdp_header: u64,
    sdp_chunk: u64,
    sdp_rx_buffers: u64,
    sdp_ring_miss: f64,
}

impl Costs {
    fn new<H: UlpHost>(h: &H, shares_irq_core: bool) -> Costs {
        let st = stack(h);
        let cqe_poll_ns = h.profile().host.cqe_poll_ns;
        Costs {
            shares_irq: shares_irq_core,
            irq_core: irq_core(h),
            irq: ns(st.interrupt_ns),
            ipoib_delay: (st.ipoib_rx_usecs * 1e6).round() as Time,
            napi: st.napi,
            prequeue: st.prequeue,
            tcp_rx: ns(st.tcp_rx_ns),
            wakeup: ns(st.wakeup_ns),
            syscall: ns(st.syscall_ns),
            ack_every: st.ack_every_packets,
            delack: (st.delack_us * 1e6) as Time,
            sdp_tx: ns(st.sdp_tx_ns),
            sdp_rx: ns(st.sdp_rx_ns),
            sdp_poll_rx: ns(cqe_poll_ns + st.sdp_rx_ns),
            sdp_wake_tx: ns(st.wakeup_ns + st.sdp_tx_ns),
            sdp_idle: ns(st.sdp_idle_us * 1000.0),
            sdp_polls: st.sdp_recv_polls,
            sdp_poll_window: st.sdp_recv_polls * ns(cqe_poll_ns),
            sdp_header: st.sdp_header_bytes,
            sdp_chunk: st.sdp_chunk_bytes,
            sdp_rx_buffers: st.sdp_rx_buffers,
            sdp_ring_miss: if st.sdp_rx_buffers * st.sdp_chunk_bytes > st.cache_bytes { 1.0 } else { 0.0 },
        }
    }
}

impl SockEnd {
    /// A fresh end of process `proc` over queue pair `qp` whose application receives
    /// `recv_size`-byte messages.
    pub fn new(stack: SockStack, recv_size: u64, sdp_credits: u64, proc: u16, qp: u32) -> Self {
        SockEnd {
            stack,
            proc,
            qp,
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
            delack: delack::DelackChain::default(),
            tcp_geometry: None,
            rx_costs: None,
            tx_costs: None,
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


/// The socket layer of one host: the receive queues (interrupt contexts) and every
/// connection's end, by channel.
#[derive(Debug, Clone, Default)]
pub struct Sockets {
    pub queues: [RxQueue; 2],
    /// Every end, in the order they were declared; `slot[chan]` is channel `chan`'s index
    /// there plus one (0: not a socket here).
    ends: Vec<SockEnd>,
    slot: Vec<u32>,
    /// Every socket end here belongs to one process (set at start).
    lone_proc: bool,
    /// When the application's own work last ended, ps: whether it sleeps when it shares
    /// the interrupt core (affine wake-ups), where the core's clock cannot tell.
    app_until: Time,
    /// TCP: the ACKs of a socket train being taken in.
    ack_train: Option<tcp::AckTrain>,
    /// The stack's costs, set at start.
    k: Costs,
    /// Every delayed-ACK timer set is queued (as before the chain, for tests); off (the
    /// default): one per connection end at a time ([`delack`]).
    pub delack_queued_all: bool,
}

/// A socket transport: what a stack does when the application sends, when its
/// completions reach the host, and on its timers. The methods get the socket layer
/// (every end, the receive queues) and the node's [`UlpHost`] handle.
trait Transport {
    /// send() of `m` by the application at `t`; returns when its core is done.
    fn send<H: UlpHost>(s: &mut Sockets, h: &mut H, m: Message, t: Time) -> Time;
    /// A completion of `packets` packets carrying `bytes` (datagram links) reached the host.
    fn arrival<H: UlpHost>(s: &mut Sockets, h: &mut H, meta: MsgMeta, packets: u64, bytes: u64);
    /// A request of the stack's own completed locally.
    fn done<H: UlpHost>(_s: &mut Sockets, _h: &mut H, _meta: MsgMeta) {}
    /// A timer the stack set on `chan` fired.
    fn timer<H: UlpHost>(_s: &mut Sockets, _h: &mut H, _chan: u32, _seq: u64) {}
    /// The application of `chan` is about to start.
    fn start<H: UlpHost>(_s: &mut Sockets, _h: &mut H, _chan: u32) {}
    /// The application has read everything the socket held, at `t` on its core; returns
    /// when that core is done.
    fn after_read<H: UlpHost>(_s: &mut Sockets, _h: &mut H, _chan: u32, t: Time) -> Time {
        t
    }
}

/// Whether the local completion of a request carrying `meta` is news for a socket stack:
/// SDP's zero-copy write completion message was acknowledged.
pub(crate) fn wants_local_completion(meta: &MsgMeta) -> bool {
    matches!(meta.ulp, UlpKind::Sdp(SdpMsg::WrCompl { .. }))
}

/// The profile's `[stack]` section.
fn stack<H: UlpHost>(h: &H) -> &StackSpec {
    h.profile().stack.as_ref().expect("validated: socket channels need a profile [stack] section")
}

/// The core that takes the adapter's interrupts: the last one (one completion vector for
/// both ports); applications are placed from core 0.
fn irq_core<H: UlpHost>(h: &H) -> usize {
    h.cores() - 1
}

impl Sockets {
    /// Declares this node's end of socket channel `chan`.
    pub fn add(&mut self, chan: u32, end: SockEnd) {
        let c = chan as usize;
        if self.slot.len() <= c {
            self.slot.resize(c + 1, 0);
        }
        match self.slot[c] {
            0 => {
                self.ends.push(end);
                self.slot[c] = self.ends.len() as u32;
            }
            i => self.ends[i as usize - 1] = end,
        }
    }

    /// This node's end of channel `chan`, if it is a socket.
    pub fn end(&self, chan: u32) -> Option<&SockEnd> {
        self.position(chan).map(|i| &self.ends[i])
    }

    /// Index of channel `chan`'s end in `ends`, if it is a socket here.
    #[inline]
    fn position(&self, chan: u32) -> Option<usize> {
        match self.slot.get(chan as usize) {
            Some(&i) if i > 0 => Some(i as usize - 1),
            _ => None,
        }
    }

    /// Index of channel `chan`'s end in `ends`.
    #[inline]
    fn index(&self, chan: u32) -> usize {
        self.position(chan).unwrap_or_else(|| panic!("channel {chan} is not a socket channel of this node"))
    }

    #[inline]
    fn end_ref(&self, chan: u32) -> &SockEnd {
        &self.ends[self.index(chan)]
    }

    #[inline]
    fn end_mut(&mut self, chan: u32) -> &mut SockEnd {
        let i = self.index(chan);
        &mut self.ends[i]
    }

    /// The core channel `chan`'s application runs on when the stack wakes it: its own, or
    /// with affine wake-ups (`[stack] wake_affine`) the interrupt core when it is the
    /// node's only socket process (the scheduler pulls a task woken from the softirq to
    /// the waking CPU when that CPU runs nothing else: Linux `wake_affine`).
    fn app_core<H: UlpHost>(&self, h: &H, chan: u32) -> usize {
        if self.k.shares_irq {
            return self.k.irq_core;
        }
        h.proc_core(self.end_ref(chan).proc)
    }

    /// Whether the application of `chan` sleeps (blocked in recv() or send()) at `t`, so
    /// the stack must wake it: its core has nothing left to do; or, when it shares the
    /// interrupt core, its own last work had ended when the completion reached the host
    /// (the interrupt work then waits for the core, but a process that was still running
    /// finds the data before it sleeps).
    fn app_asleep<H: UlpHost>(&self, h: &H, chan: u32, t: Time) -> bool {
        if self.k.shares_irq {
            return self.app_until <= h.now().min(t);
        }
        h.core_free_at(self.app_core(h, chan)) <= t
    }

    /// Runs `f` on the core of channel `chan`'s application from `t` ([`Sockets::app_core`])
    /// and notes when the application's work ended; returns that end.
    fn on_app_cpu<H: UlpHost>(&mut self, h: &mut H, chan: u32, t: Time, f: impl FnOnce(&mut Self, &mut H, Time) -> Time) -> Time {
        let core = self.app_core(h, chan);
        let end = h.on_cpu(core, t, |h, start| f(self, h, start));
        self.app_ran(end)
    }

    /// The application's work ran until `end`.
    fn app_ran(&mut self, end: Time) -> Time {
        self.app_until = self.app_until.max(end);
        end
    }

    /// The node's application runs on the interrupt core (affine wake-ups of a lone process;
    /// kept in [`Costs::shares_irq`] at start).
    fn shares_irq_core<H: UlpHost>(&self, h: &H) -> bool {
        self.lone_proc && stack(h).wake_affine
    }

    /// When a completion of `packets` packets arriving at `t` on queue `q` is handled, and the
    /// interrupt cost it brings: joins a pending coalesced interrupt, rides an active poll,
    /// or raises an interrupt after the queue's coalescing delay.
    fn rx_ready<H: UlpHost>(&mut self, h: &H, q: usize, t: Time, packets: u64, eth_aic: Option<bool>) -> (Time, Time) {
        let (irq, napi) = (self.k.irq, self.k.napi);
        let qu = &mut self.queues[q];
        qu.seq += 1;
        let delay = match eth_aic {
            Some(aic) => {
                let e = h.profile().eth.as_ref().expect("validated: Ethernet stacks need [eth]");
                // Exponentially weighted packet rate with the scheme's time constant.
                let tau_ps = e.aic_sample_us * 1e6;
                let dt = t.saturating_sub(qu.rate_t) as f64;
                // (No decay between packets of one train: exp(0) is 1 exactly.)
                let decay = if dt == 0.0 { 1.0 } else { (-dt / tau_ps).exp() };
                qu.rate_pps = qu.rate_pps * decay + packets as f64 / (tau_ps * 1e-12);
                qu.rate_t = t;
                let delay_us = if aic { e.aic_delay_us(qu.rate_pps) } else { e.rx_usecs };
                (delay_us * 1e6).round() as Time
            }
            None => self.k.ipoib_delay,
        };
        if t < qu.irq_at {
            return (qu.irq_at, 0);
        }
        if t <= qu.poll_until && napi {
            return (t, 0);
        }
        qu.interrupts += 1;
        qu.irq_at = t + delay;
        (qu.irq_at, irq)
    }

    /// The poll loop of queue `q` worked until `until`.
    fn rx_polled(&mut self, q: usize, until: Time) {
        let qu = &mut self.queues[q];
        qu.poll_until = qu.poll_until.max(until);
    }

    /// `new` more stream bytes of `chan` are in the socket at `t`: the application (woken if
    /// it sleeps in recv()) copies them out, and every message they complete is delivered
    /// to its program. `copy` is false when the data already sits in the user's buffer
    /// (zero copy). Returns when the application's core is done.
    fn deliver_bytes<H: UlpHost>(&mut self, h: &mut H, chan: u32, t: Time, copy: bool) -> Time {
        self.deliver_bytes_from(h, chan, t, copy, true)
    }

    /// [`Sockets::deliver_bytes`]; `wake` false when the caller already woke the application.
    fn deliver_bytes_from<H: UlpHost>(&mut self, h: &mut H, chan: u32, t: Time, copy: bool, wake: bool) -> Time {
        let end = self.end_mut(chan);
        let new = end.rcv - end.delivered;
        if new == 0 {
            return t;
        }
        let size = end.rx_msg.1;
        let proc = end.proc;
        let kind = end.stack.kind;
        let memo = end.rx_costs.filter(|m| (m.new, m.size) == (new, size));
        let asleep = wake && self.app_asleep(h, chan, t);
        // The costs, worked out before the core is taken (the profile is borrowed from `h`),
        // and kept for the next delivery of as many bytes (a stream's segments).
        let c = memo.unwrap_or_else(|| {
            let st = stack(h);
            // Out of buffers the adapter wrote (its DMA left them in memory, not in the
            // cache) into the user's buffer.
            let buf = h.app_buffer(size);
            let traffic = crate::hw::memory::copy_traffic(new, 1.0, st.miss(buf), true);
            // IPoIB: every datagram (connected-mode packet) is its own socket buffer,
            // released by the process once copied (tcp_recvmsg: sk_eat_skb; an LRO
            // aggregate's chained datagrams in skb_drop_fraglist).
            let free = if st.ipoib_rx_free_ns > 0.0 && matches!(kind, SockKind::IpoibUd | SockKind::IpoibRc) {
                let mss = if kind == SockKind::IpoibUd { st.ipoib_mtu_bytes } else { st.ipoib_cm_mtu_bytes } - st.ip_header_bytes;
                new.div_ceil(mss) * ns(st.ipoib_rx_free_ns)
            } else {
                0
            };
            let c = RxCosts { new, size, syscall: ns(st.syscall_ns), wakeup: ns(st.wakeup_ns), copy: st.rx_copy_ps(new, buf), traffic, free };
            self.end_mut(chan).rx_costs = Some(c);
            c
        });
        let entry = c.syscall + if asleep { c.wakeup } else { 0 };
        let copy = copy.then_some((c.copy, c.traffic, c.free));
        self.on_app_cpu(h, chan, t, |this, h, start| {
            let mut c = start + entry;
            if let Some((copy_ps, traffic, free)) = copy {
                c = h.copy_end(c, copy_ps, traffic) + free;
            }
            let end = this.end_mut(chan);
            end.delivered += new;
            // The messages the bytes complete (all of the one size and tag being received).
            let mut done = 0;
            loop {
                let e = *end.rx_msg_end.get_or_insert(end.rx_msg.1);
                if end.delivered < e {
                    break;
                }
                done += 1;
                end.rx_msg_end = Some(e + end.rx_msg.1);
            }
            let (tag, bytes) = end.rx_msg;
            for _ in 0..done {
                this.end_mut(chan).recv_msgs += 1;
                c = this.deliver(h, proc, Input::Arrived { chan, bytes, tag }, c);
            }
            this.after_read(h, chan, c)
        })
    }

    fn after_read<H: UlpHost>(&mut self, h: &mut H, chan: u32, t: Time) -> Time {
        match self.end_mut(chan).stack.kind {
            SockKind::Sdp => sdp::Sdp::after_read(self, h, chan, t),
            SockKind::IpoibUd | SockKind::IpoibRc | SockKind::Eth => tcp::Tcp::after_read(self, h, chan, t),
        }
    }
}

impl Ulp for Sockets {
    const ID: UlpId = UlpId::Sock;

    /// The application sends `m` at CPU time `t` on its core; returns when the CPU is done.
    fn send<H: UlpHost>(&mut self, h: &mut H, m: Message, t: Time) -> Time {
        let end = match self.end_mut(m.chan).stack.kind {
            SockKind::Sdp => sdp::Sdp::send(self, h, m, t),
            SockKind::IpoibUd | SockKind::IpoibRc | SockKind::Eth => tcp::Tcp::send(self, h, m, t),
        };
        self.app_ran(end)
    }

    fn handle<H: UlpHost>(&mut self, h: &mut H, ev: UlpEv) {
        match ev {
            UlpEv::Arrived { meta, packets, bytes, .. } => {
                // A socket completion (data, acknowledgement or protocol message).
                let end = self.end_mut(meta.chan);
                end.last_active = h.now();
                match end.stack.kind {
                    SockKind::Sdp => sdp::Sdp::arrival(self, h, meta, packets as u64, bytes),
                    SockKind::IpoibUd | SockKind::IpoibRc | SockKind::Eth => tcp::Tcp::arrival(self, h, meta, packets as u64, bytes),
                }
            }
            UlpEv::Done { meta } => match self.end_mut(meta.chan).stack.kind {
                SockKind::Sdp => sdp::Sdp::done(self, h, meta),
                SockKind::IpoibUd | SockKind::IpoibRc | SockKind::Eth => tcp::Tcp::done(self, h, meta),
            },
            UlpEv::Timer { chan, seq, chain } => match self.end_mut(chan).stack.kind {
                SockKind::Sdp => sdp::Sdp::timer(self, h, chan, seq),
                SockKind::IpoibUd | SockKind::IpoibRc | SockKind::Eth => {
                    if chain {
                        tcp::Tcp::delack_fired(self, h, chan);
                    }
                    tcp::Tcp::timer(self, h, chan, seq)
                }
            },
            // Only TCP's LRO waits for the end of a poll.
            UlpEv::PollEnd { queue, seq } => tcp::Tcp::poll_end(self, h, queue as usize, seq),
            UlpEv::SqFree { .. } => {}
        }
    }

    fn start<H: UlpHost>(&mut self, h: &mut H) {
        let mut procs = self.ends.iter().map(|e| e.proc);
        let first = procs.next();
        self.lone_proc = first.is_some() && procs.all(|p| Some(p) == first);
        if self.ends.is_empty() {
            return;
        }
        self.k = Costs::new(h, self.shares_irq_core(h));
        // In channel order.
        let chans: Vec<(u32, SockKind)> = (0..self.slot.len() as u32).filter_map(|c| self.end(c).map(|e| (c, e.stack.kind))).collect();
        for (chan, kind) in chans {
            match kind {
                SockKind::Sdp => sdp::Sdp::start(self, h, chan),
                SockKind::IpoibUd | SockKind::IpoibRc | SockKind::Eth => tcp::Tcp::start(self, h, chan),
            }
        }
    }
}

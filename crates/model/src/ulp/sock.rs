//! Stream sockets over the verbs model: kernel TCP/IP over IPoIB (datagram mode) and the
//! Sockets Direct Protocol in buffered-copy mode, with the host CPU work that shapes them.
//!
//! * **Send** (the application's core): a system call, a copy of the message into kernel
//!   (or SDP's registered) buffers, then per IP packet (MSS = IPoIB MTU - IP/TCP headers) the
//!   TCP/IP and driver work and a UD send; or per SDP chunk (up to 64 KiB) the SDP work and an
//!   RC send.
//! * **Receive** (the interrupt core): an interrupt and the stack's per-packet (or SDP's
//!   per-chunk) work for every arrival; TCP acknowledges every second packet with a packet
//!   of its own, which costs both ends. Once the whole message is in the socket, the
//!   application is woken, makes its system call and copies the message out.

use crate::event::Ev;
use crate::node::Node;
use crate::params::{ParamError, Table};
use crate::transport::packet::{MsgMeta, UlpKind};
use interlab_kernel::{Ctx, Time};
use interlab_patterns::{Input, Message, Op};
use std::collections::BTreeMap;

fn ns(x: f64) -> Time {
    (x * 1000.0).round() as Time
}

/// Host kernel and socket-stack costs (profile section `[stack]`).
#[derive(Debug, Clone, PartialEq)]
pub struct StackSpec {
    /// One send() or recv() system call, ns.
    pub syscall_ns: f64,
    /// Copy between user and kernel (or SDP) buffers, MB/s.
    pub copy_mbytes_per_s: f64,
    /// TCP/IP and IPoIB driver work per IP packet sent, ns.
    pub ip_tx_packet_ns: f64,
    /// TCP/IP and IPoIB driver work per IP packet received, ns.
    pub ip_rx_packet_ns: f64,
    /// Taking one interrupt, ns.
    pub interrupt_ns: f64,
    /// Waking a process blocked in recv(), ns.
    pub wakeup_ns: f64,
    /// SDP work per message (chunk) sent, ns.
    pub sdp_tx_ns: f64,
    /// SDP work per message (chunk) received, ns.
    pub sdp_rx_ns: f64,
    /// IPoIB datagram-mode MTU, bytes.
    pub ipoib_mtu_bytes: u64,
    /// IP + TCP (+ options) header bytes per packet.
    pub ip_header_bytes: u64,
    /// Largest SDP buffered-copy message, bytes.
    pub sdp_chunk_bytes: u64,
    /// SDP base header, bytes.
    pub sdp_header_bytes: u64,
    /// TCP sends an acknowledgement every this many packets.
    pub ack_every_packets: u64,
}

impl StackSpec {
    /// Reads `[stack]`.
    pub fn from_table(t: &mut Table) -> Result<Self, ParamError> {
        Ok(StackSpec {
            syscall_ns: t.param("syscall_ns", "ns")?,
            copy_mbytes_per_s: t.param("copy_mbytes_per_s", "MB/s")?,
            ip_tx_packet_ns: t.param("ip_tx_packet_ns", "ns")?,
            ip_rx_packet_ns: t.param("ip_rx_packet_ns", "ns")?,
            interrupt_ns: t.param("interrupt_ns", "ns")?,
            wakeup_ns: t.param("wakeup_ns", "ns")?,
            sdp_tx_ns: t.param("sdp_tx_ns", "ns")?,
            sdp_rx_ns: t.param("sdp_rx_ns", "ns")?,
            ipoib_mtu_bytes: t.param_u64("ipoib_mtu_bytes", "bytes", 256)?,
            ip_header_bytes: t.param_u64("ip_header_bytes", "bytes", 20)?,
            sdp_chunk_bytes: t.param_u64("sdp_chunk_bytes", "bytes", 512)?,
            sdp_header_bytes: t.param_u64("sdp_header_bytes", "bytes", 0)?,
            ack_every_packets: t.param_u64("ack_every_packets", "packets", 1)?,
        })
    }

    fn copy_ps(&self, bytes: u64) -> Time {
        (bytes as f64 * 1e6 / self.copy_mbytes_per_s).round() as Time
    }
}

/// Which socket stack a channel uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SockStack {
    /// TCP/IP over IPoIB in datagram mode (UD), no offloads.
    IpoibUd,
    /// SDP in buffered-copy mode over RC.
    SdpBc,
}

impl SockStack {
    /// Spec name.
    pub fn name(self) -> &'static str {
        match self {
            SockStack::IpoibUd => "ipoib-ud",
            SockStack::SdpBc => "sdp-bc",
        }
    }
}

/// One end of a socket connection.
#[derive(Debug, Clone)]
pub struct SockEnd {
    pub stack: SockStack,
    /// Receiver: bytes of each message that have arrived.
    got: BTreeMap<u64, u64>,
    /// Receiver: packets since the last acknowledgement.
    unacked: u64,
}

impl SockEnd {
    /// A fresh end.
    pub fn new(stack: SockStack) -> Self {
        SockEnd { stack, got: BTreeMap::new(), unacked: 0 }
    }
}

impl Node {
    fn stack(&self) -> StackSpec {
        self.prof.stack.clone().expect("validated: socket channels need a profile [stack] section")
    }

    /// The core that takes the adapter's interrupts (the last one; applications start at 0).
    fn irq_core(&self) -> usize {
        self.core_free.len() - 1
    }

    /// Runs `cost` on `core` no earlier than `ready`; returns when it is done.
    fn on_core(&mut self, core: usize, ready: Time, cost: Time) -> Time {
        let start = ready.max(self.core_free[core]);
        self.core_free[core] = start + cost;
        self.stats.core_busy_ps[core] += cost;
        start + cost
    }

    /// The application sends `m` at CPU time `t` (its core); returns when the CPU is done.
    pub(crate) fn sock_send(&mut self, m: Message, mut t: Time, ctx: &mut Ctx<'_, Ev>) -> Time {
        let st = self.stack();
        let end = self.chans.get_mut(&m.chan).expect("channel");
        let msg_id = end.next_msg;
        end.next_msg += 1;
        let qp = end.qps[0];
        let stack = end.sock.as_ref().expect("socket").stack;
        t += ns(st.syscall_ns) + st.copy_ps(m.bytes);
        let (seg, hdr, per) = match stack {
            SockStack::IpoibUd => (st.ipoib_mtu_bytes - st.ip_header_bytes, st.ip_header_bytes, st.ip_tx_packet_ns),
            SockStack::SdpBc => (st.sdp_chunk_bytes, st.sdp_header_bytes, st.sdp_tx_ns),
        };
        let n = m.bytes.div_ceil(seg).max(1);
        for i in 0..n {
            let bytes = (m.bytes - i * seg).min(seg);
            t += ns(per);
            let meta = MsgMeta { chan: m.chan, tag: m.tag, msg_id, parts: 1, bytes: m.bytes, notify: true, ulp: UlpKind::Segment { bytes } };
            t = self.post_wr(qp, Op::Send, bytes + hdr, meta, t, ctx);
        }
        t
    }

    /// A segment (or acknowledgement) completed at `now`: the interrupt core handles it.
    pub(crate) fn sock_arrival(&mut self, meta: MsgMeta, ctx: &mut Ctx<'_, Ev>) {
        let st = self.stack();
        let irq = self.irq_core();
        let chan = meta.chan;
        let (stack, qp, proc) = {
            let end = &self.chans[&chan];
            (end.sock.as_ref().expect("socket").stack, end.qps[0], end.proc)
        };
        let rx = match stack {
            SockStack::IpoibUd => st.ip_rx_packet_ns,
            SockStack::SdpBc => st.sdp_rx_ns,
        };
        let mut t = self.on_core(irq, ctx.now(), ns(st.interrupt_ns + rx));
        let UlpKind::Segment { bytes } = meta.ulp else {
            return; // a TCP acknowledgement: interrupt and stack work only
        };
        let end = self.chans.get_mut(&chan).and_then(|c| c.sock.as_mut()).expect("socket");
        let got = end.got.entry(meta.msg_id).or_insert(0);
        *got += bytes;
        let complete = *got >= meta.bytes;
        if complete {
            end.got.remove(&meta.msg_id);
        }
        let mut ack = false;
        if stack == SockStack::IpoibUd {
            end.unacked += 1;
            if end.unacked >= st.ack_every_packets {
                end.unacked = 0;
                ack = true;
            }
        }
        if ack {
            t = self.on_core(irq, t, ns(st.ip_tx_packet_ns));
            let ameta = MsgMeta { ulp: UlpKind::Ack { packets: st.ack_every_packets as u32 }, parts: 1, notify: true, ..meta };
            let core_t = self.core_free[irq];
            let done = self.post_wr(qp, Op::Send, st.ip_header_bytes, ameta, core_t, ctx);
            self.core_free[irq] = done;
        }
        if complete {
            // Wake the application: it returns from recv() with the message copied out.
            let core = self.procs[proc as usize].core as usize;
            let cost = ns(st.wakeup_ns + st.syscall_ns) + st.copy_ps(meta.bytes);
            let start = t.max(self.core_free[core]);
            self.stats.core_busy_ps[core] += cost;
            let t = self.feed(proc, Input::Arrived { chan, bytes: meta.bytes, tag: meta.tag }, start + cost, ctx);
            self.core_free[core] = t;
        }
    }
}

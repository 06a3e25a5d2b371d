//! Host kernel and socket-stack primitives (profile section `[stack]`): system calls, copies
//! (cache-warm and from memory), interrupts, per-packet TCP/IP and IPoIB driver work, the
//! SDP protocol's per-message work and buffers, and connection set-up steps. Every value is
//! a physical primitive with its provenance in the profile; nothing here names a figure.

use crate::hw::cycles::HostClock;
use crate::params::{ParamError, Table};
use interlab_kernel::Time;

/// Picoseconds in `x` nanoseconds.
/// Nanoseconds (a real number, as profiles give them) to picoseconds: the kernel's [`interlab_kernel::from_ns`].
pub(crate) use interlab_kernel::from_ns as ns;

/// Host kernel and socket-stack costs.
#[derive(Debug, Clone, PartialEq)]
pub struct StackSpec {
    /// One send() or recv() system call, ns.
    pub syscall_ns: f64,
    /// Copy between user and kernel (or SDP) buffers when the data is cache-warm, MB/s.
    pub copy_mbytes_per_s: f64,
    /// Copy rate when the data comes from (or goes to) memory, MB/s.
    pub mem_copy_mbytes_per_s: f64,
    /// Cache a copy's working set fits in (per core, bytes); a message's working set is
    /// taken as twice its size (user buffer plus kernel buffer).
    pub cache_bytes: u64,
    /// Software TCP checksum folded into the send copy when the device has no checksum
    /// offload (IPoIB connected mode), MB/s.
    pub csum_mbytes_per_s: f64,
    /// The adapter checksums IPoIB datagram-mode packets (otherwise software does).
    pub ipoib_ud_csum_offload: bool,
    /// Taking one interrupt and scheduling the stack's poll, ns.
    pub interrupt_ns: f64,
    /// The drivers poll (NAPI): completions that arrive while the poll loop runs take no
    /// interrupt of their own. Off: an interrupt per completion.
    pub napi: bool,
    /// Software segmentation offload (GSO): with large send offload off, TCP still builds
    /// segments of up to `offload_max_bytes` when the device does scatter-gather, and the
    /// kernel cuts them into MTU packets just before the driver (TCP/IP output once per
    /// large segment, driver work per packet). Optional, default off.
    pub gso: bool,
    /// Waking a process blocked in recv() or send() and switching to it, ns.
    pub wakeup_ns: f64,
    /// Affine wake-ups: a node's lone socket process, woken by the receive softirq on the
    /// interrupt core while that core runs no other process, is moved there by the
    /// scheduler (Linux `wake_affine`), so its stack and copy work share the interrupt
    /// core; with a process on every core each stays on its own. Optional, default off.
    pub wake_affine: bool,
    /// TCP input runs in the receiving process's context when it waits in recv() (Linux
    /// prequeue): the interrupt core does only driver work, the application's core the
    /// TCP input and acknowledgements. Off: all of it on the interrupt core.
    pub prequeue: bool,
    /// TCP/IP output work per segment (per 64 KiB super-segment with LSO), ns.
    pub tcp_tx_ns: f64,
    /// TCP/IP input work per segment delivered to TCP (per aggregate with LRO), ns.
    pub tcp_rx_ns: f64,
    /// IP-layer input per packet (per aggregate with LRO), in the interrupt context, ns.
    pub ip_rx_ns: f64,
    /// TCP output of a pure acknowledgement (with its driver work), ns.
    pub tcp_ack_tx_ns: f64,
    /// TCP input work for a pure acknowledgement, ns.
    pub tcp_ack_rx_ns: f64,
    /// IPoIB driver work per IP packet (or LSO work request) sent, ns.
    pub ipoib_tx_ns: f64,
    /// IPoIB driver work per IB datagram (or connected-mode IP packet) received, in the
    /// interrupt context, ns.
    pub ipoib_rx_ns: f64,
    /// IPoIB receive work per datagram (or connected-mode IP packet) paid by the process
    /// that copies the data out: each datagram is its own socket buffer (with LRO chained
    /// into the aggregate), released after the copy. Optional, default 0 ns.
    pub ipoib_rx_free_ns: f64,
    /// The adapter's DMA writes go to memory and invalidate cached lines (no cache
    /// injection): a receive copy finds its source beyond the cache whatever the message
    /// size. Optional, default off (the source is cached when the working set fits).
    pub dma_writes_memory: bool,
    /// Receive interrupt coalescing on IPoIB, us (0: an interrupt per completion when idle).
    pub ipoib_rx_usecs: f64,
    /// IPoIB datagram-mode MTU, bytes.
    pub ipoib_mtu_bytes: u64,
    /// IPoIB connected-mode MTU, bytes.
    pub ipoib_cm_mtu_bytes: u64,
    /// IPoIB encapsulation header, bytes.
    pub ipoib_header_bytes: u64,
    /// IP + TCP (+ options) header bytes per packet.
    pub ip_header_bytes: u64,
    /// Largest LSO work request and largest LRO aggregate, bytes.
    pub offload_max_bytes: u64,
    /// TCP acknowledges every this many segments (delayed ACK).
    pub ack_every_packets: u64,
    /// Delayed-ACK timer, us.
    pub delack_us: f64,
    /// TCP window (socket buffer) bytes in flight per connection.
    pub tcp_window_bytes: u64,
    /// SDP work per message sent, ns.
    pub sdp_tx_ns: f64,
    /// Times an SDP receiver blocked in recv() polls its completion queue before it sleeps
    /// (OFED `recv_poll`); each poll of an empty queue costs the host's `cqe_poll_ns`. A
    /// message arriving within that window is taken by the receiving process itself: no
    /// interrupt, no wake-up. Optional, default 0 (the receiver sleeps at once).
    pub sdp_recv_polls: u64,
    /// SDP work per message received, ns.
    pub sdp_rx_ns: f64,
    /// Largest SDP buffered-copy message (private buffer size), bytes.
    pub sdp_chunk_bytes: u64,
    /// SDP base header (BSDH), bytes.
    pub sdp_header_bytes: u64,
    /// SDP receive buffers posted per connection (the sender's credits).
    pub sdp_rx_buffers: u64,
    /// Registering (pinning and mapping) a user buffer for zero copy: fixed part, ns.
    pub reg_ns: f64,
    /// Registering a user buffer: per 4 KiB page, ns.
    pub reg_page_ns: f64,
    /// A connection idle longer than this must exchange SDP control messages before it
    /// sends again, us.
    pub sdp_idle_us: f64,
    /// An adapter firmware command (create/modify QP or CQ, register memory), us.
    pub hca_cmd_us: f64,
    /// Kernel work per communication-manager or subnet-administration MAD handled, us.
    pub mad_us: f64,
    /// Kernel work per TCP connection-handshake segment at each end (SYN, SYN-ACK, ACK:
    /// socket and request-queue handling beyond ordinary segment input), us.
    pub tcp_handshake_us: f64,
    /// Largest payload the socket drivers (IPoIB, SDP) post inline, bytes. Optional:
    /// absent = the adapter's `inline_bytes`.
    pub inline_bytes: Option<u64>,
}

impl StackSpec {
    /// Reads `[stack]` of a host whose clock is `clock`: every CPU cost (system calls,
    /// interrupts, wake-ups, protocol and driver work, registration, MAD and handshake work)
    /// may be given in cycles instead (`syscall_cycles` for `syscall_ns`, `mad_cycles` for
    /// `mad_us`, ...; see [`crate::hw::cycles`]).
    pub fn from_table(t: &mut Table, clock: &HostClock) -> Result<Self, ParamError> {
        let s = StackSpec {
            syscall_ns: clock.cost(t, "syscall_ns")?,
            copy_mbytes_per_s: t.param("copy_mbytes_per_s", "MB/s")?,
            mem_copy_mbytes_per_s: t.param("mem_copy_mbytes_per_s", "MB/s")?,
            cache_bytes: t.param_u64("cache_bytes", "bytes", 1024)?,
            csum_mbytes_per_s: t.param("csum_mbytes_per_s", "MB/s")?,
            ipoib_ud_csum_offload: t.param_u64("ipoib_ud_csum_offload", "flag", 0)? != 0,
            interrupt_ns: clock.cost(t, "interrupt_ns")?,
            napi: t.param_u64("napi", "flag", 0)? != 0,
            gso: t.flag("gso")?,
            sdp_recv_polls: t.opt_param_u64("sdp_recv_polls", "polls", 0)?.unwrap_or(0),
            wakeup_ns: clock.cost(t, "wakeup_ns")?,
            wake_affine: t.flag("wake_affine")?,
            prequeue: t.param_u64("prequeue", "flag", 0)? != 0,
            tcp_tx_ns: clock.cost(t, "tcp_tx_ns")?,
            tcp_rx_ns: clock.cost(t, "tcp_rx_ns")?,
            ip_rx_ns: clock.cost(t, "ip_rx_ns")?,
            tcp_ack_tx_ns: clock.cost(t, "tcp_ack_tx_ns")?,
            tcp_ack_rx_ns: clock.cost(t, "tcp_ack_rx_ns")?,
            ipoib_tx_ns: clock.cost(t, "ipoib_tx_ns")?,
            ipoib_rx_ns: clock.cost(t, "ipoib_rx_ns")?,
            ipoib_rx_free_ns: clock.opt_cost(t, "ipoib_rx_free_ns", 0.0)?,
            dma_writes_memory: t.flag("dma_writes_memory")?,
            ipoib_rx_usecs: t.param("ipoib_rx_usecs", "us")?,
            ipoib_mtu_bytes: t.param_u64("ipoib_mtu_bytes", "bytes", 256)?,
            ipoib_cm_mtu_bytes: t.param_u64("ipoib_cm_mtu_bytes", "bytes", 256)?,
            ipoib_header_bytes: t.param_u64("ipoib_header_bytes", "bytes", 0)?,
            ip_header_bytes: t.param_u64("ip_header_bytes", "bytes", 20)?,
            offload_max_bytes: t.param_u64("offload_max_bytes", "bytes", 4096)?,
            ack_every_packets: t.param_u64("ack_every_packets", "packets", 1)?,
            delack_us: t.param("delack_us", "us")?,
            tcp_window_bytes: t.param_u64("tcp_window_bytes", "bytes", 4096)?,
            sdp_tx_ns: clock.cost(t, "sdp_tx_ns")?,
            sdp_rx_ns: clock.cost(t, "sdp_rx_ns")?,
            sdp_chunk_bytes: t.param_u64("sdp_chunk_bytes", "bytes", 512)?,
            sdp_header_bytes: t.param_u64("sdp_header_bytes", "bytes", 0)?,
            sdp_rx_buffers: t.param_u64("sdp_rx_buffers", "buffers", 2)?,
            reg_ns: clock.cost(t, "reg_ns")?,
            reg_page_ns: clock.cost(t, "reg_page_ns")?,
            sdp_idle_us: t.param("sdp_idle_us", "us")?,
            hca_cmd_us: t.param("hca_cmd_us", "us")?,
            mad_us: clock.cost(t, "mad_us")?,
            tcp_handshake_us: clock.cost(t, "tcp_handshake_us")?,
            inline_bytes: t.opt_param_u64("inline_bytes", "bytes", 0)?,
        };
        for (key, v) in [("copy_mbytes_per_s", s.copy_mbytes_per_s), ("mem_copy_mbytes_per_s", s.mem_copy_mbytes_per_s), ("csum_mbytes_per_s", s.csum_mbytes_per_s)] {
            if v <= 0.0 {
                return Err(t.err(key, "must be > 0"));
            }
        }
        if s.ipoib_mtu_bytes <= s.ip_header_bytes || s.ipoib_cm_mtu_bytes <= s.ip_header_bytes {
            return Err(t.err("ipoib_mtu_bytes", "the IPoIB MTUs must exceed ip_header_bytes"));
        }
        Ok(s)
    }

    /// Picoseconds to copy `bytes` of a message of `msg_bytes` (the working set is twice
    /// the message: what exceeds the cache is copied at memory speed).
    pub fn copy_ps(&self, bytes: u64, msg_bytes: u64) -> Time {
        let miss = self.miss(msg_bytes);
        let us_per_byte = (1.0 - miss) / self.copy_mbytes_per_s + miss / self.mem_copy_mbytes_per_s;
        (bytes as f64 * us_per_byte * 1e6).round() as Time
    }

    /// Picoseconds to copy `bytes` of a received message of `msg_bytes` out of the buffers
    /// the adapter wrote: with `dma_writes_memory` the source half of the working set is
    /// never in the cache, so at least half of it is copied at memory speed.
    pub fn rx_copy_ps(&self, bytes: u64, msg_bytes: u64) -> Time {
        let miss = self.rx_miss(msg_bytes);
        let us_per_byte = (1.0 - miss) / self.copy_mbytes_per_s + miss / self.mem_copy_mbytes_per_s;
        (bytes as f64 * us_per_byte * 1e6).round() as Time
    }

    /// The part of a received message's copy working set beyond the cache, 0 to 1.
    pub fn rx_miss(&self, msg_bytes: u64) -> f64 {
        let miss = self.miss(msg_bytes);
        if self.dma_writes_memory {
            miss.max(0.5)
        } else {
            miss
        }
    }

    /// The part of a message of `msg_bytes` a copy finds beyond the cache (its working set is
    /// twice the message), 0 to 1.
    pub fn miss(&self, msg_bytes: u64) -> f64 {
        let ws = 2.0 * msg_bytes.max(1) as f64;
        (1.0 - self.cache_bytes as f64 / ws).max(0.0)
    }

    /// Picoseconds to checksum `bytes` in software.
    pub fn csum_ps(&self, bytes: u64) -> Time {
        (bytes as f64 * 1e6 / self.csum_mbytes_per_s).round() as Time
    }

    /// Registering a user buffer of `bytes` for zero copy, picoseconds.
    pub fn reg_ps(&self, bytes: u64) -> Time {
        ns(self.reg_ns + self.reg_page_ns * bytes.div_ceil(4096) as f64)
    }
}

#[cfg(test)]
mod tests {
    use crate::profile::Profile;

    #[test]
    fn copies_beyond_the_cache_are_slower() {
        let p = Profile::load("r805-connectx-ddr").unwrap();
        let s = p.stack.unwrap();
        let small = s.copy_ps(4096, 4096) as f64 / 4096.0;
        let large = s.copy_ps(4 << 20, 4 << 20) as f64 / (4 << 20) as f64;
        assert!(large > small * 1.2, "per-byte copy {small} ps vs {large} ps");
        assert_eq!(s.copy_ps(0, 100), 0);
    }
}

//! Host channel adapter parameters.

use crate::hw::cycles::{read_ipc_factor, HostClock};
use crate::params::{ParamError, Table};

/// An InfiniBand adapter (HCA): engines, queues and limits.
#[derive(Debug, Clone, PartialEq)]
pub struct AdapterSpec {
    /// Physical ports.
    pub ports: u32,
    /// Send engine time per work request (WQE parsing, QP context), ns.
    pub tx_wqe_ns: f64,
    /// Send engine time per packet, ns.
    pub tx_packet_ns: f64,
    /// Receive engine time per packet (checks, placement, ACK generation), ns.
    pub rx_packet_ns: f64,
    /// Responder work to start an RDMA read or atomic response (context, key and address
    /// translation), ns.
    pub responder_setup_ns: f64,
    /// Work-queue entry size fetched by DMA, bytes.
    pub wqe_bytes: u64,
    /// Completion-queue entry size written by DMA, bytes.
    pub cqe_bytes: u64,
    /// Doorbell write, bytes.
    pub doorbell_bytes: u64,
    /// Packets the send engine may have prepared but not yet sent (prefetch depth).
    pub tx_depth: u32,
    /// RC: unacknowledged packets allowed per QP.
    pub rc_max_unacked_packets: u32,
    /// RC: outstanding RDMA reads/atomics per QP (initiator depth).
    pub max_rd_atomic: u32,
    /// Largest send/write payload posted inline in the WQE, bytes (0: never): the raw verbs
    /// programs' RDMA writes, and every other request whose software has no limit of its
    /// own ([`crate::hw::doorbell::inline_limit`]).
    pub inline_bytes: u64,
    /// Largest send payload the raw verbs programs post inline, bytes. Optional: absent =
    /// `inline_bytes`.
    pub inline_send_bytes: Option<u64>,
    /// The CPU writes the whole WQE with the doorbell (BlueFlame): no WQE fetch by DMA.
    pub blueflame: bool,
    /// The adapter keeps the receive queue's next WQEs fetched ahead of arrivals, so an
    /// arriving send finds its receive WQE on chip: the fetch still crosses the bus but is
    /// off the message's path (`rx_wqe_prefetch = 1`; default 0: fetched on arrival).
    pub rx_wqe_prefetch: bool,
    /// The BlueFlame buffer, bytes (`bf->buf_size` of the verbs provider): with it, only a
    /// single WQE that fits goes by BlueFlame, the rest ring a doorbell and are fetched
    /// ([`crate::hw::doorbell`]). Optional: absent = `blueflame` applies to every WQE.
    pub bf_buf_bytes: Option<u64>,
    /// BlueFlame only for WQEs with inline data (mlx4). Optional, default 0.
    pub bf_needs_inline: bool,
    /// Receive completions written while an earlier one is on its way go as mini CQEs
    /// ([`crate::hw::cqe`]). Optional, default 0.
    pub cqe_compression: bool,
    /// Receive WQEs each queue pair's receive queue (or the shared one) holds posted; RC
    /// sends beyond them meet RNR NAKs ([`crate::transport::rq`]). Optional: absent =
    /// receives never run out.
    pub rq_wqes: Option<u64>,
    /// All queue pairs draw from one shared receive queue (SRQ) of `rq_wqes`. Optional,
    /// default 0.
    pub srq: bool,
    /// RNR NAK timer: how long a requester waits before it sends a refused message again,
    /// us. Required with `rq_wqes`.
    pub rnr_timer_us: f64,
}

impl AdapterSpec {
    /// Reads `[adapter]`.
    pub fn from_table(t: &mut Table) -> Result<Self, ParamError> {
        Ok(AdapterSpec {
            ports: t.param_u64("ports", "ports", 1)? as u32,
            tx_wqe_ns: t.param("tx_wqe_ns", "ns")?,
            tx_packet_ns: t.param("tx_packet_ns", "ns")?,
            rx_packet_ns: t.param("rx_packet_ns", "ns")?,
            responder_setup_ns: t.param("responder_setup_ns", "ns")?,
            wqe_bytes: t.param_u64("wqe_bytes", "bytes", 1)?,
            cqe_bytes: t.param_u64("cqe_bytes", "bytes", 1)?,
            doorbell_bytes: t.param_u64("doorbell_bytes", "bytes", 1)?,
            tx_depth: t.param_u64("tx_depth", "packets", 1)? as u32,
            rc_max_unacked_packets: t.param_u64("rc_max_unacked_packets", "packets", 1)? as u32,
            max_rd_atomic: t.param_u64("max_rd_atomic", "requests", 1)? as u32,
            inline_bytes: t.param_u64("inline_bytes", "bytes", 0)?,
            inline_send_bytes: t.opt_param_u64("inline_send_bytes", "bytes", 0)?,
            blueflame: match t.param_u64("blueflame", "0 or 1", 0)? {
                0 => false,
                1 => true,
                _ => return Err(t.err("blueflame", "expected 0 (doorbell only) or 1 (WQE written with the doorbell)")),
            },
            rx_wqe_prefetch: t.flag("rx_wqe_prefetch")?,
            bf_buf_bytes: t.opt_param_u64("bf_buf_bytes", "bytes", 64)?,
            bf_needs_inline: t.flag("bf_needs_inline")?,
            cqe_compression: t.flag("cqe_compression")?,
            rq_wqes: t.opt_param_u64("rq_wqes", "WQEs", 1)?,
            srq: t.flag("srq")?,
            rnr_timer_us: if t.has("rq_wqes") || t.has("rnr_timer_us") { t.param("rnr_timer_us", "us")? } else { 0.0 },
        })
    }
}

/// The host CPU as seen by verbs programs.
#[derive(Debug, Clone, PartialEq)]
pub struct HostSpec {
    /// Logical CPUs processes can be bound to.
    pub cores: u32,
    /// All modelled nodes run on one machine's `cores` CPUs (client and daemon on one host:
    /// loopback, or network namespaces of one kernel) instead of `cores` each. Node `i`'s
    /// core `c` is the machine's CPU `(c + i) mod cores`, so two nodes' applications start
    /// on different CPUs and one node's interrupt core is where the other's application runs
    /// (as loopback receive processing runs in the sender's context). Optional, default 0.
    pub shared: bool,
    /// CPU time to build a work request and ring the doorbell, ns (`post_ns`, or
    /// `post_cycles` at this host's clock and IPC factor).
    pub post_ns: f64,
    /// CPU time to read and consume one completion-queue entry, ns (`cqe_poll_ns` or
    /// `cqe_poll_cycles`).
    pub cqe_poll_ns: f64,
    /// Mean delay for a spinning poller to see a memory update, ns.
    pub poll_detect_ns: f64,
    /// Core clock, GHz: converts software costs given in cycles (`[mpi] overhead_cycles`)
    /// into time on this host. Optional.
    pub clock_ghz: Option<f64>,
    /// Instructions per cycle of this host's microarchitecture relative to the reference
    /// (Skylake-SP): a cost in cycles takes cycles / (clock x factor). Optional, default 1
    /// (the profile's cycles are its own microarchitecture's); see [`crate::hw::cycles`].
    pub ipc_factor: f64,
    /// Memory-system bandwidth (reads plus writes) that every core's copies and the adapter's
    /// DMA of the copied data share, MB/s; what a copy moves depends on what its buffers miss
    /// in the cache (hw/memory.rs). Optional: absent = each core copies at its own rate
    /// whatever the others do.
    pub memory_mbytes_per_s: Option<f64>,
}

impl HostSpec {
    /// Reads `[host]`.
    pub fn from_table(t: &mut Table) -> Result<Self, ParamError> {
        let clock_ghz = if t.has("clock_ghz") {
            let v = t.param("clock_ghz", "GHz")?;
            if !(v.is_finite() && (0.1..=10.0).contains(&v)) {
                return Err(t.err("clock_ghz", format!("expected a core clock of 0.1..10 GHz, found {v}")));
            }
            Some(v)
        } else {
            None
        };
        let ipc_factor = read_ipc_factor(t)?;
        let clock = HostClock { ghz: clock_ghz, ipc_factor };
        Ok(HostSpec {
            cores: t.param_u64("cores", "logical CPUs", 1)? as u32,
            shared: if t.has("shared") {
                match t.param_u64("shared", "flag", 0)? {
                    0 => false,
                    1 => true,
                    _ => return Err(t.err("shared", "expected 0 (a machine per node) or 1 (all nodes on one machine)")),
                }
            } else {
                false
            },
            post_ns: clock.cost(t, "post_ns")?,
            cqe_poll_ns: clock.cost(t, "cqe_poll_ns")?,
            poll_detect_ns: t.param("poll_detect_ns", "ns")?,
            clock_ghz,
            ipc_factor,
            memory_mbytes_per_s: if t.has("memory_mbytes_per_s") {
                let v = t.param("memory_mbytes_per_s", "MB/s")?;
                if !(v.is_finite() && v > 0.0) {
                    return Err(t.err("memory_mbytes_per_s", format!("expected a rate above 0 MB/s, found {v}")));
                }
                Some(v)
            } else {
                None
            },
        })
    }

    /// How this host turns costs in cycles into time.
    pub fn clock(&self) -> HostClock {
        HostClock { ghz: self.clock_ghz, ipc_factor: self.ipc_factor }
    }
}

//! Packets as the model moves them: headers are accounted in `wire_bytes`; the rest is
//! simulation metadata (which message, which part) the real packet would carry implicitly.

use crate::transport::headers::*;
use interlab_patterns::Op;

/// Transport service of a queue pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Service {
    /// Reliable connected: PSNs, ACKs, a window, reads and atomics.
    Rc,
    /// Unreliable connected: no ACKs; send and RDMA write.
    Uc,
    /// Unreliable datagram: one packet per message, send only.
    Ud,
}

impl Service {
    /// Spec name.
    pub fn name(self) -> &'static str {
        match self {
            Service::Rc => "rc",
            Service::Uc => "uc",
            Service::Ud => "ud",
        }
    }

    /// Parses a spec name.
    pub fn from_name(s: &str) -> Option<Service> {
        match s {
            "rc" => Some(Service::Rc),
            "uc" => Some(Service::Uc),
            "ud" => Some(Service::Ud),
            _ => None,
        }
    }
}

/// Which message a packet belongs to, end to end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MsgMeta {
    /// Logical channel.
    pub chan: u32,
    /// Pattern tag (data or reply).
    pub tag: u32,
    /// Sender's message number on this channel.
    pub msg_id: u64,
    /// Work requests the message was split into (striping) that carry a notification.
    pub parts: u16,
    /// Message size, bytes.
    pub bytes: u64,
    /// True when the receiver is told of this work request's arrival (last byte polled or
    /// a receive completion).
    pub notify: bool,
    /// Upper-layer message kind (MPI protocol messages); [`UlpKind::Raw`] for plain verbs.
    pub ulp: UlpKind,
}

/// What an upper-layer (MPI) message is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UlpKind {
    /// A verbs message straight from the pattern.
    #[default]
    Raw,
    /// MPI eager message (data copied through pre-registered buffers).
    Eager,
    /// Rendezvous request to send.
    Rts,
    /// Rendezvous clear to send.
    Cts,
    /// Rendezvous data (RDMA write into the receiver's buffer).
    RndvData,
    /// Rendezvous finish, one per rail that carried data.
    Fin,
    /// MPI-over-datagram fragment; `last` closes the message.
    Frag { last: bool },
    /// MPI-over-datagram zero-copy data: one datagram of a message into a lent QP.
    /// `datagrams` is how many arrived together (the receiving adapter stamps it).
    ZcopyData { datagrams: u16 },
    /// MPI-level (or TCP) acknowledgement of `packets` fragments, messages or segments.
    Ack { packets: u32 },
    /// A TCP segment (or LSO request, or LRO-merged train) carrying `bytes` of the stream;
    /// `msg_id` carries the acknowledgement (stream offset received).
    Segment { bytes: u64 },
    /// An SDP message; `msg_id` carries the credits (buffers) it returns.
    Sdp(SdpMsg),
}

/// What an SDP message is (message ids of OFED `sdp.h`, docs/references.md [D1]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SdpMsg {
    /// Buffered-copy data (mid Data).
    Data { bytes: u64 },
    /// A credit update without data.
    Credit,
    /// Receive buffer advertised for the peer's message number `index` (SinkAvail).
    SinkAvail { index: u64 },
    /// Send buffer advertised for message number `index` (SrcAvail).
    SrcAvail { index: u64 },
    /// Zero-copy data written by RDMA into an advertised buffer.
    ZcData,
    /// Zero-copy data read by RDMA from an advertised buffer.
    ZcRead,
    /// The write into the advertised buffer is complete: `bytes` are there.
    WrCompl { bytes: u64 },
    /// The read from the advertised buffer is complete (RdmaRdCompl).
    RdCompl,
    /// Control exchange of an idle connection, and its answer.
    Ctrl,
    CtrlAck,
}

/// What a packet is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Send or RDMA-write data (request) packet.
    Data { op: Op, first: bool, last: bool },
    /// RDMA read request for `len` bytes.
    ReadReq { len: u64 },
    /// RDMA read response data.
    ReadResp { first: bool, last: bool },
    /// Atomic request.
    AtomicReq,
    /// Atomic acknowledgement carrying the original value.
    AtomicAck,
    /// RC acknowledgement of every PSN up to `psn`.
    Ack,
}

/// One InfiniBand packet in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packet {
    /// Destination node index and port.
    pub dst_node: u32,
    pub dst_port: u8,
    /// Queue pair at the destination.
    pub dst_qp: u32,
    pub kind: Kind,
    pub service: Service,
    /// Packet sequence number (for ACKs: the PSN acknowledged).
    pub psn: u64,
    /// RC: the requester asks for an acknowledgement.
    pub ack_req: bool,
    /// Payload bytes.
    pub payload: u64,
    /// Bytes on the wire before physical framing (all packets of the train).
    pub wire_bytes: u64,
    /// Packets in this train (consecutive packets of one message sent back to back; 1 for
    /// control packets). `psn` is the last one's; `kind` says whether the train holds the
    /// message's first and last packets.
    pub count: u32,
    /// Work request id at the requester (responses echo it).
    pub wr_id: u64,
    pub meta: MsgMeta,
}

/// Extension-header bytes for a packet.
pub fn ext_bytes(kind: Kind, service: Service) -> u64 {
    let dgram = if service == Service::Ud { DETH } else { 0 };
    dgram
        + match kind {
            Kind::Data { op: Op::RdmaWrite, first: true, .. } => RETH,
            Kind::Data { .. } => 0,
            Kind::ReadReq { .. } => RETH,
            Kind::ReadResp { first, last } => {
                if first || last {
                    AETH
                } else {
                    0
                }
            }
            Kind::AtomicReq => ATOMIC_ETH,
            Kind::AtomicAck => AETH + ATOMIC_ACK_ETH,
            Kind::Ack => AETH,
        }
}

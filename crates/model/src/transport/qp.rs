//! Queue pair state: the send queue as the adapter works through it, the RC window of
//! unacknowledged packets, outstanding reads/atomics, and responder jobs.

use crate::transport::packet::{MsgMeta, Service};
use interlab_patterns::Op;
use std::collections::VecDeque;

/// A work request as posted by a process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wr {
    /// Adapter-wide id.
    pub id: u64,
    pub op: Op,
    /// Payload bytes (read: bytes to read; atomics: 8).
    pub bytes: u64,
    pub meta: MsgMeta,
    /// The payload travels inside the WQE (inline data): no payload DMA read.
    pub inline: bool,
    /// 0: one request. Otherwise a list of datagram WQEs of this many bytes each (the last
    /// may be shorter) posted with one doorbell (UD): the adapter fetches, processes and
    /// completes each datagram's WQE; the receiver consumes a receive WQE and writes a
    /// completion per datagram.
    pub datagram_bytes: u32,
}

/// A work request the send engine has fetched and is transmitting.
#[derive(Debug, Clone, Copy)]
pub struct Active {
    pub wr: Wr,
    /// Packets this request needs on the wire.
    pub packets: u64,
    /// Packets already handed to the engine.
    pub sent: u64,
}

/// Work a responder owes its requester.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RespKind {
    /// RDMA read response of `len` bytes.
    Read { len: u64 },
    /// Atomic: read-modify-write of 8 bytes, then an atomic ACK.
    Atomic,
}

/// A responder job (read response or atomic ACK) in progress.
#[derive(Debug, Clone, Copy)]
pub struct RespJob {
    pub kind: RespKind,
    /// Requester's work request id (echoed so it can complete).
    pub wr_id: u64,
    /// PSN of the request: a response acknowledges it and everything before it.
    pub psn: u64,
    pub meta: MsgMeta,
    /// Packets sent so far.
    pub sent: u64,
}

/// One queue pair.
#[derive(Debug, Clone)]
pub struct Qp {
    /// Index on its adapter.
    pub id: u32,
    /// Local port (0-based).
    pub port: u8,
    pub service: Service,
    /// Peer: node index, port, QP index.
    pub remote_node: u32,
    pub remote_port: u8,
    pub remote_qp: u32,
    /// Fetched work requests not yet fully transmitted.
    pub sq: VecDeque<Active>,
    /// Next PSN to send.
    pub next_psn: u64,
    /// Every PSN below this is acknowledged.
    pub acked_psn: u64,
    /// RC: sent requests waiting for their ACK: (last PSN, request).
    pub unacked: VecDeque<(u64, Wr)>,
    /// Reads and atomics waiting for their response.
    pub reads_out: u32,
    /// Responder jobs to transmit.
    pub resp: VecDeque<RespJob>,
}

impl Qp {
    /// A fresh queue pair.
    pub fn new(id: u32, port: u8, service: Service, remote_node: u32, remote_port: u8, remote_qp: u32) -> Self {
        Qp {
            id,
            port,
            service,
            remote_node,
            remote_port,
            remote_qp,
            sq: VecDeque::new(),
            next_psn: 0,
            acked_psn: 0,
            unacked: VecDeque::new(),
            reads_out: 0,
            resp: VecDeque::new(),
        }
    }

    /// True when the send engine may take a packet from this QP now.
    pub fn can_send(&self, max_unacked: u32, max_rd_atomic: u32) -> bool {
        if !self.resp.is_empty() {
            return true;
        }
        let Some(head) = self.sq.front() else { return false };
        if self.service == Service::Rc {
            if self.next_psn - self.acked_psn >= max_unacked as u64 {
                return false;
            }
            if head.sent == 0 && head.wr.op.is_request_response() && self.reads_out >= max_rd_atomic {
                return false;
            }
        }
        true
    }
}

impl Wr {
    /// Bytes of each packet the request is cut into on a path of MTU `mtu`: the datagram
    /// size of a datagram list, else the MTU.
    pub fn packet_unit(&self, mtu: u64) -> u64 {
        if self.datagram_bytes > 0 {
            self.datagram_bytes as u64
        } else {
            mtu
        }
    }
}

/// Packets a request of `op` and `bytes` needs with path MTU `mtu`.
pub fn packets_for(op: Op, bytes: u64, mtu: u64) -> u64 {
    if op.is_request_response() {
        1
    } else {
        bytes.div_ceil(mtu).max(1)
    }
}

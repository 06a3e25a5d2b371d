//! Packets in flight between adapters: the body waits in a [`PacketPool`] shared by every
//! node of one simulation, the event carries a [`PktRef`]: the slot, and the header
//! fields the fabric (switches, wide-area hops) reads on the way.

use crate::slab::{Held, Slab};
use crate::transport::packet::Packet;
use std::cell::RefCell;
use std::rc::Rc;

/// A packet (train) in flight: what the fabric needs of it, and where its body waits.
#[derive(Debug)]
pub struct PktRef {
    body: Held<Packet>,
    /// Destination node index and port (the switches route on them).
    pub dst_node: u32,
    pub dst_port: u8,
    /// Packets in the train.
    pub count: u32,
    /// Bytes on the wire before physical framing (all packets of the train).
    pub wire_bytes: u64,
}

/// The packets in flight of one simulation, shared by its nodes (a clone shares the pool).
#[derive(Debug, Clone, Default)]
pub struct PacketPool(Rc<RefCell<Slab<Packet>>>);

impl PacketPool {
    /// Puts `pkt` in flight.
    #[inline]
    pub fn put(&self, pkt: Packet) -> PktRef {
        let (dst_node, dst_port, count, wire_bytes) = (pkt.dst_node, pkt.dst_port, pkt.count, pkt.wire_bytes);
        PktRef { body: self.0.borrow_mut().put(pkt), dst_node, dst_port, count, wire_bytes }
    }

    /// The packet `r` refers to, out of flight.
    #[inline]
    pub fn take(&self, r: PktRef) -> Packet {
        self.0.borrow_mut().take(r.body)
    }

    /// Brings `r`'s packet into the cache (a hint).
    #[inline]
    pub fn prefetch(&self, r: &PktRef) {
        self.0.borrow().prefetch(&r.body)
    }

    /// Packets in flight now.
    pub fn len(&self) -> usize {
        self.0.borrow().len()
    }

    /// True when no packet is in flight.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::packet::{Kind, MsgMeta, Service, UlpKind};

    #[test]
    fn a_packet_comes_back_whole_from_a_shared_pool() {
        let meta = MsgMeta { chan: 3, tag: 1, msg_id: 1 << 40, parts: 1, bytes: 5 << 32, notify: true, ulp: UlpKind::Segment { bytes: 9000 } };
        let pkt = Packet { dst_node: 7, dst_port: 1, dst_qp: 4, kind: Kind::ReadReq { len: 1 << 33 }, service: Service::Rc, psn: 99, ack_req: true, payload: 2048, wire_bytes: 2100, count: 3, wr_id: 12, meta };
        let a = PacketPool::default();
        let b = a.clone();
        let r = a.put(pkt);
        assert_eq!((r.dst_node, r.dst_port, r.count, r.wire_bytes), (7, 1, 3, 2100));
        assert_eq!(b.len(), 1);
        assert_eq!(b.take(r), pkt);
        assert!(a.is_empty());
    }
}

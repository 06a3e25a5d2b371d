//! An adapter port's queue of trains cut and waiting to leave. The send engine schedules a
//! train's departure when it cuts it (after its payload read and behind the trains before
//! it), but the train leaves only when that time comes: a link-level credit stall that
//! arrives meanwhile holds it, and every train behind it, until the receiver has credit
//! again, as a link without credits holds whatever the adapter has already prepared.

use crate::transport::packet::{MsgMeta, Packet};
use interlab_kernel::Time;
use std::collections::VecDeque;

/// A train cut by the send engine, due to leave its port at `depart`.
#[derive(Debug, Clone)]
pub struct Cut {
    pub depart: Time,
    /// Serialisation time on the port's link.
    pub ser: Time,
    pub pkt: Packet,
    /// The unacknowledged (UC/UD) request this train ends, completing when it has left.
    pub local_done: Option<MsgMeta>,
}

/// One port's trains waiting to leave, in order.
#[derive(Debug, Clone, Default)]
pub struct WireQueue {
    cuts: VecDeque<Cut>,
    /// Time of the latest event already due to look at this queue (0: none).
    wake: Time,
}

/// What the queue wants at `now`.
#[derive(Debug)]
pub enum Next {
    /// The head leaves now.
    Leave(Cut),
    /// Nothing to do until an event at this time (to be scheduled by the caller).
    WakeAt(Time),
    /// Empty, or an event already due will look again.
    Idle,
}

impl WireQueue {
    /// Queues a train behind the others.
    pub fn push(&mut self, cut: Cut) {
        debug_assert!(self.cuts.back().is_none_or(|b| b.depart + b.ser <= cut.depart));
        self.cuts.push_back(cut);
    }

    /// The next thing to do at `now`. When the head leaves, the caller's event at the end of
    /// its serialisation counts as a wake-up (`woken_at`).
    pub fn next(&mut self, now: Time) -> Next {
        let Some(head) = self.cuts.front() else { return Next::Idle };
        if head.depart <= now {
            return Next::Leave(self.cuts.pop_front().expect("checked"));
        }
        if self.wake > now && self.wake <= head.depart {
            return Next::Idle;
        }
        self.wake = head.depart;
        Next::WakeAt(head.depart)
    }

    /// An event at `at` will look at this queue.
    pub fn woken_at(&mut self, at: Time) {
        self.wake = at;
    }

    /// The receiver has no credit until `until`: trains not yet gone leave no earlier, in
    /// order. Returns when the last of them has left (the port is busy until then).
    pub fn hold(&mut self, until: Time) -> Time {
        let mut end = until;
        for c in self.cuts.iter_mut() {
            c.depart = c.depart.max(end);
            end = c.depart + c.ser;
        }
        end
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::packet::{Kind, Service, UlpKind};

    fn cut(depart: Time, ser: Time) -> Cut {
        let meta = MsgMeta { chan: 0, tag: 0, msg_id: 0, parts: 1, bytes: 0, notify: false, ulp: UlpKind::Raw };
        let pkt = Packet { dst_node: 0, dst_port: 0, dst_qp: 0, kind: Kind::Ack, service: Service::Uc, psn: 0, ack_req: false, payload: 0, wire_bytes: 1, count: 1, wr_id: 0, meta };
        Cut { depart, ser, pkt, local_done: None }
    }

    #[test]
    fn trains_leave_in_order_at_their_time_and_a_stall_holds_every_one_not_gone() {
        let mut q = WireQueue::default();
        q.push(cut(10, 5));
        q.push(cut(15, 5));
        q.push(cut(40, 5));
        assert!(matches!(q.next(0), Next::WakeAt(10)));
        assert!(matches!(q.next(5), Next::Idle), "a wake-up is already due at 10");
        let Next::Leave(a) = q.next(10) else { panic!() };
        assert_eq!(a.depart, 10);
        q.woken_at(15);
        // A stall until 30 arrives at 12: the two trains not gone wait, back to back.
        assert_eq!(q.hold(30), 45);
        assert!(matches!(q.next(15), Next::WakeAt(30)));
        let Next::Leave(b) = q.next(30) else { panic!() };
        assert_eq!((b.depart, b.ser), (30, 5));
        assert!(matches!(q.next(30), Next::WakeAt(40)));
        let Next::Leave(c) = q.next(40) else { panic!() };
        assert_eq!(c.depart, 40);
        assert!(matches!(q.next(40), Next::Idle));
    }
}

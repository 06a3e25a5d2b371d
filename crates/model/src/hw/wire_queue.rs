//! An adapter port's queue of trains cut and waiting to leave. The send engine schedules a
//! train's departure when it cuts it (after its payload read and behind the trains before
//! it), but the train leaves only when that time comes: a link-level credit stall that
//! arrives meanwhile holds it, and every train behind it, until the receiver has credit
//! again, as a link without credits holds whatever the adapter has already prepared.
//!
//! A stall answers one of the port's own packets reaching the switch: it can arrive until
//! one link round trip (`guard`) after the port's last departure, and never later. A train
//! is therefore handed on (its events scheduled) as soon as no stall can arrive before it
//! leaves: when it is due, or when the last train has been gone longer than `guard` (the
//! usual case at the end of the previous train, so back-to-back trains and trains with gaps
//! cost no event of their own); otherwise it waits in the queue.

use crate::transport::packet::Packet;
use interlab_kernel::Time;
use std::collections::VecDeque;

/// A train cut by the send engine, due to leave its port at `depart`.
#[derive(Debug, Clone)]
pub struct Cut {
    pub depart: Time,
    /// Serialisation time on the port's link.
    pub ser: Time,
    pub pkt: Packet,
    /// The train ends an unacknowledged (UC/UD) request (the packet's `meta`), which
    /// completes when it has left. A flag, not the request's `MsgMeta` again: a train is
    /// copied out of the queue whole, and a smaller one is copied without a `memcpy` call.
    pub local_done: bool,
}

/// One port's trains waiting to leave, in order.
#[derive(Debug, Clone, Default)]
pub struct WireQueue {
    cuts: VecDeque<Cut>,
    /// Time of the latest event already due to look at this queue (0: none).
    wake: Time,
    /// Departure of the last train handed on.
    last_depart: Time,
    /// Longest time after a departure that a stall for it can arrive: the link's
    /// propagation there and back.
    guard: Time,
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
    /// An empty queue for a port whose stalls arrive within `guard` of a departure.
    pub fn new(guard: Time) -> Self {
        WireQueue { guard, ..Default::default() }
    }

    /// No train waits to leave.
    pub fn is_empty(&self) -> bool {
        self.cuts.is_empty()
    }

    /// Queues a train behind the others.
    pub fn push(&mut self, cut: Cut) {
        debug_assert!(self.cuts.back().is_none_or(|b| b.depart + b.ser <= cut.depart));
        self.cuts.push_back(cut);
    }

    /// The next thing to do at `now`: a train handed on leaves at its `depart` (possibly
    /// later than `now`, when no stall can come before then). When it is handed on, the
    /// caller's event at the end of its serialisation counts as a wake-up (`woken_at`).
    pub fn next(&mut self, now: Time) -> Next {
        let Some(head) = self.cuts.front() else { return Next::Idle };
        if self.may_leave(head.depart, now) {
            self.last_depart = head.depart;
            return Next::Leave(self.cuts.pop_front().expect("checked"));
        }
        if self.wake > now && self.wake <= head.depart {
            return Next::Idle;
        }
        self.wake = head.depart;
        Next::WakeAt(head.depart)
    }

    /// A train cut at `now` to leave at `depart`: true when [`WireQueue::push`] then
    /// [`WireQueue::next`] at `now` would hand it on at once (no train waits before it and
    /// it is due, or no stall can come before it leaves); the queue then notes its
    /// departure as `next` would, and the caller hands it on instead of queueing it (and
    /// notes its wake-up, [`WireQueue::woken_at`]). False: the caller queues it.
    #[inline]
    pub fn leaves_at_once(&mut self, depart: Time, now: Time) -> bool {
        if self.cuts.is_empty() && self.may_leave(depart, now) {
            self.last_depart = depart;
            return true;
        }
        false
    }

    /// Whether the first train waiting, to leave at `depart`, is handed on at `now`: it is
    /// due, or no stall can come before it leaves (`now` is past the guard of the last
    /// departure).
    #[inline(always)]
    fn may_leave(&self, depart: Time, now: Time) -> bool {
        depart <= now || now > self.last_depart + self.guard
    }

    /// A packet left at `depart` without queueing (an ACK): a stall may answer it too.
    pub fn sent_directly(&mut self, depart: Time) {
        self.last_depart = self.last_depart.max(depart);
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
    use crate::transport::packet::{Kind, MsgMeta, Service, UlpKind};

    fn cut(depart: Time, ser: Time) -> Cut {
        let meta = MsgMeta { chan: 0, tag: 0, msg_id: 0, parts: 1, bytes: 0, notify: false, ulp: UlpKind::Raw };
        let pkt = Packet { dst_node: 0, dst_port: 0, dst_qp: 0, kind: Kind::Ack, service: Service::Uc, psn: 0, ack_req: false, payload: 0, wire_bytes: 1, count: 1, wr_id: 0, meta };
        Cut { depart, ser, pkt, local_done: false }
    }

    /// `leaves_at_once` answers as `push` then `next` at the same time would (a train
    /// handed on at once, or queued), and leaves the queue as they would, over random
    /// trains, stalls, wake-ups and departures; fails if it ignores the queue, the guard or
    /// the departure it notes.
    #[test]
    fn a_train_handed_on_at_once_is_the_one_push_then_next_hands_on() {
        let mut rng = interlab_kernel::Rng::new(3);
        let (mut at_once, mut queued) = (0, 0);
        for _ in 0..200 {
            let mut q = WireQueue::new(1 + rng.below(50));
            let mut now = 0;
            let mut free = 0;
            for _ in 0..100 {
                now += rng.below(40);
                match rng.below(4) {
                    0 => {
                        let _ = q.hold(now + rng.below(60));
                    }
                    1 => {
                        if let Next::Leave(c) = q.next(now) {
                            q.woken_at(c.depart + c.ser);
                        }
                    }
                    _ => {
                        let depart = free.max(now + rng.below(30));
                        let ser = 1 + rng.below(20);
                        free = depart + ser;
                        let mut reference = q.clone();
                        reference.push(cut(depart, ser));
                        let expect = reference.next(now);
                        if q.leaves_at_once(depart, now) {
                            at_once += 1;
                            let Next::Leave(c) = expect else { panic!("handed on at once, but push then next gives {expect:?}") };
                            assert_eq!((c.depart, c.ser), (depart, ser));
                        } else {
                            queued += 1;
                            assert!(!matches!(expect, Next::Leave(ref c) if c.depart == depart && q.is_empty()), "queued, but push then next hands it on");
                            q.push(cut(depart, ser));
                            // The caller's `launch` then looks at the queue as usual.
                            let got = q.next(now);
                            assert_eq!(format!("{got:?}"), format!("{expect:?}"));
                        }
                        assert_eq!((q.cuts.len(), q.last_depart, q.wake), (reference.cuts.len(), reference.last_depart, reference.wake));
                    }
                }
            }
        }
        assert!(at_once > 1000 && queued > 1000, "handed on at once {at_once}, queued {queued}");
    }

    #[test]
    fn trains_leave_in_order_at_their_time_and_a_stall_holds_every_one_not_gone() {
        let mut q = WireQueue::new(2);
        q.push(cut(10, 5));
        q.push(cut(15, 5));
        q.push(cut(40, 5));
        // Nothing has left for longer than the guard: the first train is handed on at once.
        let Next::Leave(a) = q.next(3) else { panic!() };
        assert_eq!(a.depart, 10);
        q.woken_at(15);
        // It has not left yet, so a stall may still come: the second waits.
        assert!(matches!(q.next(5), Next::Idle), "a wake-up is already due at 15");
        // A stall until 30 arrives at 12: the two trains not gone wait, back to back.
        assert_eq!(q.hold(30), 45);
        // At 15 the first train has been gone 5 > 2: no stall can come any more; the held
        // train is handed on for 30, the last one waits behind it.
        let Next::Leave(b) = q.next(15) else { panic!() };
        assert_eq!((b.depart, b.ser), (30, 5));
        q.woken_at(35);
        assert!(matches!(q.next(16), Next::Idle));
        // Within the guard after the held train left, the last one waits for its time.
        let mut r = q.clone();
        r.woken_at(0);
        assert!(matches!(r.next(31), Next::WakeAt(40)));
        let Next::Leave(c) = q.next(35) else { panic!() };
        assert_eq!(c.depart, 40);
        assert!(matches!(q.next(40), Next::Idle));
    }
}

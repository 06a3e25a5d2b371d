//! An adapter's side of the cable to its switch: sends its packets to the switch, as events
//! or, where the switch is shared with the adapter, forwarded through it as they are sent
//! ([`crate::hw::switch::Switch::forward_at_send`]); and keeps the credit stalls the switch hands back for
//! those until they reach the port.

use crate::event::Ev;
use crate::hw::switch::SharedSwitch;
use crate::transport::packet::Packet;
use interlab_kernel::{ComponentId, Ctx, Time};
use std::collections::VecDeque;

/// One adapter's link to its switch.
#[derive(Default)]
pub struct SwitchLink {
    /// The switch, when packets may be forwarded through it as they are sent.
    shared: Option<SharedSwitch>,
    /// Per adapter port: stalls the switch computed as packets were sent, not yet in force:
    /// `(when it reaches the port, until when)`, in time order.
    stalls: Vec<VecDeque<(Time, Time)>>,
    /// The earliest time in `stalls` (`Time::MAX`: none).
    due: Time,
}

impl SwitchLink {
    /// A link over which every packet goes as an event.
    pub fn new() -> Self {
        SwitchLink { shared: None, stalls: Vec::new(), due: Time::MAX }
    }

    /// Packets may be forwarded through `switch` as they are sent.
    pub fn share(&mut self, switch: SharedSwitch) {
        self.shared = Some(switch);
    }

    /// Sends `pkt` from adapter `port` (switch input `in_port`, of component `switch`), its
    /// first bit at the switch at `at` and its last `ser` later; `in_order`: nothing the
    /// adapter has yet to send on the port arrives earlier.
    #[allow(clippy::too_many_arguments)]
    pub fn send(&mut self, switch: ComponentId, in_port: u16, port: usize, at: Time, ser: Time, pkt: Packet, in_order: bool, ctx: &mut Ctx<'_, Ev>) {
        if let Some(sw) = &self.shared {
            let mut sw = sw.borrow_mut();
            if let Some(out) = sw.sole_output(in_port, pkt.dst_node, pkt.dst_port, in_order) {
                if let Some((at, until)) = sw.forward_at_send(in_port, out, at, ser, pkt, ctx) {
                    drop(sw);
                    self.hand_back(port, at, until);
                }
                return;
            }
            sw.event_sent(in_port);
        }
        ctx.send_at(switch, at, Ev::PktAtSwitch { in_port, ser_ps: ser, pkt });
    }

    /// Keeps a stall the switch handed back for adapter `port`: it reaches the port at
    /// `at` and lasts until `until`.
    #[inline]
    fn hand_back(&mut self, port: usize, at: Time, until: Time) {
        if self.stalls.len() <= port {
            self.stalls.resize(port + 1, VecDeque::new());
        }
        debug_assert!(self.stalls[port].back().is_none_or(|&(t, _)| t <= at));
        self.stalls[port].push_back((at, until));
        self.due = self.due.min(at);
    }

    /// The next stall to put in force before an event at `now`, `(port, until)`, taken off
    /// the list: one that reached its port before `now`. One that reaches it at `now` is in
    /// force only after the events of that time (hop by hop the switch sends its event after
    /// they were scheduled, except those scheduled within a cable's propagation of it).
    #[inline]
    pub fn due_stall(&mut self, now: Time) -> Option<(u16, Time)> {
        if now <= self.due {
            return None;
        }
        let mut due = Time::MAX;
        let mut found = None;
        for (port, q) in self.stalls.iter_mut().enumerate() {
            if found.is_none() && q.front().is_some_and(|&(at, _)| at < now) {
                let (_, until) = q.pop_front().expect("checked");
                found = Some((port as u16, until));
            }
            if let Some(&(at, _)) = q.front() {
                due = due.min(at);
            }
        }
        self.due = due;
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stall_handed_back_is_in_force_only_for_events_after_it_reaches_the_port() {
        let mut l = SwitchLink::new();
        l.stalls = vec![VecDeque::from([(10, 50), (12, 60)]), VecDeque::from([(11, 70)])];
        l.due = 10;
        assert_eq!(l.due_stall(10), None, "the events at its own time come first");
        assert_eq!(l.due_stall(12), Some((0, 50)));
        assert_eq!(l.due_stall(12), Some((1, 70)));
        assert_eq!(l.due_stall(12), None);
        assert_eq!(l.due, 12);
        assert_eq!(l.due_stall(30), Some((0, 60)));
        assert_eq!(l.due_stall(30), None);
        assert_eq!(l.due, Time::MAX);
    }
}

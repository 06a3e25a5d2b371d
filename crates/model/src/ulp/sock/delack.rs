//! TCP's delayed-ACK timers of one connection end, queued as a chain.
//!
//! A delayed-ACK timer does something only if no acknowledgement left the end between its
//! setting and its firing (the end's `delack_seq` still the `seq` it was set with): of the
//! timers set, only the one set last can (an older `seq` is void once a newer one is set;
//! of timers of one `seq` only the first to fire can, as it acknowledges and voids the
//! rest). In a stream nearly all are void: the next segment's ACK comes microseconds after
//! a timer is set, 40 ms before it fires. So an end keeps one timer of its chain in the
//! event queue at a time: a timer set while the queued one fires no later is kept aside
//! (the latest of those, or the first of one `seq`) and queued when the queued one fires;
//! one set to fire earlier than the queued one is queued at once, outside the chain. Every
//! timer that can act thus fires at its time with its `seq`; and the chain last fires at
//! the latest time any timer was set for, so a run's last event (which its records' CPU
//! shares are averaged over) does not move. What changes is the event count, and, for a
//! timer kept aside, its place among events of the very same picosecond (it is queued when
//! its predecessor fires, not when it was set).

use interlab_kernel::Time;

/// The `seq` of the chain's closing timer, at the latest time any was set for: it never
/// matches an end's acknowledgement state, so it never acts.
pub(super) const VOID_SEQ: u64 = u64::MAX;

/// A timer to queue: when, with which acknowledgement state, and whether it is the
/// chain's (its firing must be reported with [`DelackChain::fired`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Queued {
    pub at: Time,
    pub seq: u64,
    pub chain: bool,
}

/// The delayed-ACK timers of one connection end.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct DelackChain {
    /// When the chain's timer in the queue fires, if one is.
    armed: Option<Time>,
    /// The timer set since that is not queued yet: (when, seq).
    aside: Option<(Time, u64)>,
    /// The latest time any timer was set for.
    tail: Time,
}

impl DelackChain {
    /// A timer is set for `at` with acknowledgement state `seq` (never lower than any set
    /// before): the timer to queue now, if any.
    pub(super) fn set(&mut self, at: Time, seq: u64) -> Option<Queued> {
        self.tail = self.tail.max(at);
        match self.armed {
            None => {
                self.armed = Some(at);
                Some(Queued { at, seq, chain: true })
            }
            Some(armed) if at < armed => Some(Queued { at, seq, chain: false }),
            Some(_) => {
                // Kept aside unless a timer of the same `seq` set before fires no later.
                if self.aside.is_none_or(|(a_at, a_seq)| a_seq != seq || a_at > at) {
                    self.aside = Some((at, seq));
                }
                None
            }
        }
    }

    /// The chain's queued timer fired at `now`: the next one to queue (the one kept
    /// aside, or else the closing one), if any.
    pub(super) fn fired(&mut self, now: Time) -> Option<Queued> {
        self.armed = None;
        let (at, seq) = match self.aside.take() {
            Some(a) => a,
            None if self.tail > now => (self.tail, VOID_SEQ),
            None => return None,
        };
        self.armed = Some(at);
        Some(Queued { at, seq, chain: true })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    /// A connection end's timers in a queue of (time, push order): `ops` set timers and
    /// acknowledge at given times; a timer whose `seq` is current when it fires
    /// acknowledges. Returns the timers that acted (time, seq), the last event's time and
    /// the events, with every timer queued or with the chain.
    fn run(ops: &[(Time, Option<Time>)], chained: bool) -> (Vec<(Time, u64)>, Time, usize) {
        let mut q: BinaryHeap<Reverse<(Time, u64, u64, bool)>> = BinaryHeap::new();
        let (mut pushes, mut seq, mut acted, mut last, mut events) = (0u64, 0u64, Vec::new(), 0, 0);
        let mut chain = DelackChain::default();
        let mut push = |q: &mut BinaryHeap<_>, t: Queued| {
            q.push(Reverse((t.at, pushes, t.seq, t.chain)));
            pushes += 1;
        };
        let mut i = 0;
        loop {
            // Operations at a time before the next timer go first (ties: the timer).
            let next_timer = q.peek().map(|Reverse(e)| e.0);
            if i < ops.len() && next_timer.is_none_or(|t| ops[i].0 < t) {
                let (now, set) = ops[i];
                i += 1;
                match set {
                    Some(delay) if chained => {
                        if let Some(t) = chain.set(now + delay, seq) {
                            push(&mut q, t);
                        }
                    }
                    Some(delay) => push(&mut q, Queued { at: now + delay, seq, chain: false }),
                    None => seq += 1,
                }
                continue;
            }
            let Some(Reverse((at, _, s, is_chain))) = q.pop() else { break };
            (last, events) = (at, events + 1);
            if is_chain {
                if let Some(t) = chain.fired(at) {
                    push(&mut q, t);
                }
            }
            if s == seq {
                acted.push((at, s));
                seq += 1;
            }
        }
        (acted, last, events)
    }

    #[test]
    fn a_chain_fires_the_timers_that_act_at_their_times_and_ends_at_the_last_in_fewer_events() {
        // Pseudo-random streams of timer settings (delays 30-50 time units, some shorter
        // than an earlier one's) and acknowledgements, sparse and dense.
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut saved = 0;
        for case in 0..200 {
            let mut ops = Vec::new();
            let mut now = 0;
            for _ in 0..300 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                now += 1 + x % if case % 2 == 0 { 4 } else { 60 };
                let set = (x >> 8) % 3 != 0;
                ops.push((now, set.then_some(30 + (x >> 16) % 21)));
            }
            let (all, chained) = (run(&ops, false), run(&ops, true));
            assert_eq!((&chained.0, chained.1), (&all.0, all.1), "case {case}: timers acting and the last event");
            assert!(chained.2 <= all.2, "case {case}: {} events chained against {}", chained.2, all.2);
            saved += all.2 - chained.2;
            assert!(!all.0.is_empty() || case % 2 == 0, "case {case}: sparse settings let timers act");
        }
        assert!(saved > 10_000, "the chain saved {saved} events only");
    }

    #[test]
    fn a_timer_set_earlier_than_the_queued_one_is_queued_at_once_and_the_chain_closes_at_the_latest() {
        let mut c = DelackChain::default();
        assert_eq!(c.set(100, 1), Some(Queued { at: 100, seq: 1, chain: true }));
        assert_eq!(c.set(90, 1), Some(Queued { at: 90, seq: 1, chain: false }));
        assert_eq!(c.set(150, 2), None);
        assert_eq!(c.set(140, 2), None, "the first of one seq is kept");
        assert_eq!(c.set(160, 2), None);
        assert_eq!(c.fired(100), Some(Queued { at: 140, seq: 2, chain: true }));
        assert_eq!(c.fired(140), Some(Queued { at: 160, seq: VOID_SEQ, chain: true }));
        assert_eq!(c.fired(160), None);
    }
}

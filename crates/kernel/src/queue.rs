//! The event queue: a binary min-heap keyed by `(time_ps, seq)`.
//!
//! Payloads live in a slab beside the heap so the heap itself moves only 16-byte keys.

use crate::Time;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// An event taken from the queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scheduled<E> {
    /// When it fires, in picoseconds.
    pub time: Time,
    /// Insertion sequence number: the tie-breaker between equal times.
    pub seq: u64,
    /// The payload.
    pub event: E,
}

/// Min-queue of events; equal times pop in insertion order (FIFO), which makes runs
/// deterministic.
#[derive(Debug)]
pub struct EventQueue<E> {
    heap: BinaryHeap<Reverse<(Time, u64, u32)>>,
    slab: Vec<Option<E>>,
    free: Vec<u32>,
    next_seq: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    /// An empty queue.
    pub fn new() -> Self {
        EventQueue { heap: BinaryHeap::new(), slab: Vec::new(), free: Vec::new(), next_seq: 0 }
    }

    /// Schedules `event` at absolute time `time` (picoseconds); returns its sequence number.
    pub fn push(&mut self, time: Time, event: E) -> u64 {
        let slot = match self.free.pop() {
            Some(s) => {
                self.slab[s as usize] = Some(event);
                s
            }
            None => {
                self.slab.push(Some(event));
                (self.slab.len() - 1) as u32
            }
        };
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Reverse((time, seq, slot)));
        seq
    }

    /// Removes and returns the earliest event (ties: lowest sequence number).
    pub fn pop(&mut self) -> Option<Scheduled<E>> {
        let Reverse((time, seq, slot)) = self.heap.pop()?;
        let event = self.slab[slot as usize].take().expect("slab slot filled for queued key");
        self.free.push(slot);
        Some(Scheduled { time, seq, event })
    }

    /// Time of the earliest event, if any.
    pub fn peek_time(&self) -> Option<Time> {
        self.heap.peek().map(|Reverse((t, _, _))| *t)
    }

    /// Number of pending events.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// True when no event is pending.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn equal_times_pop_fifo() {
        let mut q = EventQueue::new();
        for i in 0..10 {
            q.push(5, i);
        }
        let order: Vec<i32> = std::iter::from_fn(|| q.pop().map(|s| s.event)).collect();
        assert_eq!(order, (0..10).collect::<Vec<_>>());
    }

    proptest! {
        /// Popped times never decrease and every pushed event comes out exactly once.
        #[test]
        fn pops_are_sorted_and_complete(times in proptest::collection::vec(0u64..1_000, 0..300)) {
            let mut q = EventQueue::new();
            for (i, t) in times.iter().enumerate() { q.push(*t, i); }
            let mut last = (0u64, 0u64);
            let mut seen = vec![false; times.len()];
            while let Some(s) = q.pop() {
                prop_assert!((s.time, s.seq) >= last);
                last = (s.time, s.seq);
                prop_assert_eq!(s.time, times[s.event]);
                prop_assert!(!seen[s.event]);
                seen[s.event] = true;
            }
            prop_assert!(seen.iter().all(|x| *x));
        }
    }
}

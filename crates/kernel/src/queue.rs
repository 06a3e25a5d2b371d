//! The event queue: an implicit 4-ary min-heap keyed by `(time_ps, seq)`.
//!
//! Payloads live in a slab beside the heap so the heap itself moves only 24-byte keys
//! (`time`, `seq`, slab slot); this matters for the model's events, which are over 100 bytes.
//! A 4-ary heap is half as deep as a binary one, and choosing the least of four children
//! compiles to conditional moves rather than unpredictable branches.

use crate::Time;

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

/// Heap arity.
const D: usize = 4;

/// What the heap orders: `(time, seq)`, unique because `seq` is, plus the payload's slot.
#[derive(Debug, Clone, Copy)]
struct Key {
    time: Time,
    seq: u64,
    slot: u32,
}

impl Key {
    /// `(time, seq)` as one integer: lexicographic order on the pair, compared without branches.
    #[inline(always)]
    fn rank(&self) -> u128 {
        ((self.time as u128) << 64) | self.seq as u128
    }
}

/// Min-queue of events; equal times pop in insertion order (FIFO), which makes runs
/// deterministic.
#[derive(Debug)]
pub struct EventQueue<E> {
    heap: Vec<Key>,
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
        EventQueue { heap: Vec::new(), slab: Vec::new(), free: Vec::new(), next_seq: 0 }
    }

    /// Schedules `event` at absolute time `time` (picoseconds); returns its sequence number.
    #[inline]
    pub fn push(&mut self, time: Time, event: E) -> u64 {
        let slot = match self.free.pop() {
            Some(s) => {
                self.slab[s as usize] = Some(event);
                s
            }
            None => {
                let s = u32::try_from(self.slab.len()).expect("more than 2^32 pending events");
                self.slab.push(Some(event));
                s
            }
        };
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Key { time, seq, slot });
        self.sift_up(self.heap.len() - 1);
        seq
    }

    /// Removes and returns the earliest event (ties: lowest sequence number).
    #[inline]
    pub fn pop(&mut self) -> Option<Scheduled<E>> {
        if self.heap.is_empty() {
            return None;
        }
        Some(self.pop_nonempty())
    }

    /// Removes and returns the earliest event if it fires at or before `until`.
    #[inline]
    pub(crate) fn pop_until(&mut self, until: Time) -> Option<Scheduled<E>> {
        match self.heap.first() {
            Some(k) if k.time <= until => Some(self.pop_nonempty()),
            _ => None,
        }
    }

    /// Time of the earliest event, if any.
    #[inline]
    pub fn peek_time(&self) -> Option<Time> {
        self.heap.first().map(|k| k.time)
    }

    /// Number of pending events.
    #[inline]
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// True when no event is pending.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Pops the root; the heap must not be empty.
    #[inline]
    fn pop_nonempty(&mut self) -> Scheduled<E> {
        let top = self.heap[0];
        let last = self.heap.pop().expect("heap not empty");
        if !self.heap.is_empty() {
            self.sift_down_from_root(last);
        }
        let event = self.slab[top.slot as usize].take().expect("slab slot filled for queued key");
        self.free.push(top.slot);
        Scheduled { time: top.time, seq: top.seq, event }
    }

    /// Moves the key at `pos` up to its place.
    #[inline]
    fn sift_up(&mut self, mut pos: usize) {
        let heap = &mut self.heap[..];
        let key = heap[pos];
        let rank = key.rank();
        while pos > 0 {
            let parent = (pos - 1) / D;
            if heap[parent].rank() <= rank {
                break;
            }
            heap[pos] = heap[parent];
            pos = parent;
        }
        heap[pos] = key;
    }

    /// Puts `key` at the (vacated) root and restores the heap: the hole walks down along
    /// least children to a leaf, then `key` rises from there (Floyd's bottom-up variant;
    /// `key` came from the last leaf so it rarely rises far).
    #[inline]
    fn sift_down_from_root(&mut self, key: Key) {
        let heap = &mut self.heap[..];
        let n = heap.len();
        let mut pos = 0;
        loop {
            let first = D * pos + 1;
            if first + D <= n {
                // All D children present: pick the least without branches.
                let c = &heap[first..first + D];
                let (a, ra) = if c[1].rank() < c[0].rank() { (1, c[1].rank()) } else { (0, c[0].rank()) };
                let (b, rb) = if c[3].rank() < c[2].rank() { (3, c[3].rank()) } else { (2, c[2].rank()) };
                let m = if rb < ra { b } else { a };
                heap[pos] = heap[first + m];
                pos = first + m;
            } else {
                if first < n {
                    let mut m = first;
                    for i in first + 1..n {
                        if heap[i].rank() < heap[m].rank() {
                            m = i;
                        }
                    }
                    heap[pos] = heap[m];
                    pos = m;
                }
                break;
            }
        }
        let rank = key.rank();
        while pos > 0 {
            let parent = (pos - 1) / D;
            if heap[parent].rank() <= rank {
                break;
            }
            heap[pos] = heap[parent];
            pos = parent;
        }
        heap[pos] = key;
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

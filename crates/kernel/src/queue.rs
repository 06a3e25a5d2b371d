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
///
/// Popping takes the payload out of the root but leaves the root's key in place (the root
/// is then *vacant*); the next push drops its key into the vacant root and sifts it down,
/// so the usual "handle one event, schedule one more" step costs one sift instead of two.
/// If a pop comes first, the vacant root is removed the ordinary way. Either way the order
/// of pops is the same: it is fixed by the keys, which are unique.
#[derive(Debug)]
pub struct EventQueue<E> {
    /// 4-ary min-heap on [`Key::rank`]; if `vacant_root`, `heap[0]` is the stale key of an
    /// event already popped and only the subtrees below it are heaps.
    heap: Vec<Key>,
    vacant_root: bool,
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
        EventQueue { heap: Vec::new(), vacant_root: false, slab: Vec::new(), free: Vec::new(), next_seq: 0 }
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
        let key = Key { time, seq, slot };
        if self.vacant_root {
            self.vacant_root = false;
            self.sift_down(key);
        } else {
            self.heap.push(key);
            self.sift_up(self.heap.len() - 1);
        }
        seq
    }

    /// Removes and returns the earliest event (ties: lowest sequence number).
    #[inline]
    pub fn pop(&mut self) -> Option<Scheduled<E>> {
        let key = self.pop_key(Time::MAX)?;
        Some(Scheduled { time: key.time, seq: key.seq, event: self.take(key.slot) })
    }

    /// Removes the earliest event if it fires at or before `until` (a later one stays queued,
    /// untouched); returns its time and the slot to [`EventQueue::take`] its payload from.
    /// Split from `take` so the run loop moves the payload once, straight to the handler.
    #[inline]
    pub(crate) fn pop_until(&mut self, until: Time) -> Option<(Time, u32)> {
        let key = self.pop_key(until)?;
        Some((key.time, key.slot))
    }

    /// Takes the payload of a popped event out of its slot and frees the slot. Call it right
    /// after the pop, once per popped event.
    #[inline]
    pub(crate) fn take(&mut self, slot: u32) -> E {
        let event = self.slab[slot as usize].take().expect("slot of a popped event holds its payload");
        self.free.push(slot);
        event
    }

    /// Removes the earliest key if its time is at most `until`, leaving the root vacant.
    #[inline(always)]
    fn pop_key(&mut self, until: Time) -> Option<Key> {
        self.settle();
        let top = *self.heap.first()?;
        if top.time > until {
            return None;
        }
        self.vacant_root = true;
        Some(top)
    }

    /// Time of the earliest event, if any.
    #[inline]
    pub fn peek_time(&self) -> Option<Time> {
        if self.vacant_root {
            // The earliest is among the root's children.
            self.heap.iter().skip(1).take(D).map(|k| k.time).min()
        } else {
            self.heap.first().map(|k| k.time)
        }
    }

    /// Number of pending events.
    #[inline]
    pub fn len(&self) -> usize {
        self.heap.len() - usize::from(self.vacant_root)
    }

    /// True when no event is pending.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Removes a vacant root, if any, so that `heap[0]` is the earliest pending event.
    #[inline]
    fn settle(&mut self) {
        if self.vacant_root {
            self.vacant_root = false;
            let last = self.heap.pop().expect("a vacant root is in the heap");
            if !self.heap.is_empty() {
                self.sift_down_to_bottom(last);
            }
        }
    }

    /// Moves the key at `pos` up to its place.
    #[inline]
    fn sift_up(&mut self, pos: usize) {
        let key = self.heap[pos];
        Self::rise(&mut self.heap, pos, key);
    }

    /// Puts `key` at `pos` (a hole: its old content is dropped) or above, restoring the heap
    /// on the path from `pos` to the root.
    #[inline(always)]
    fn rise(heap: &mut [Key], mut pos: usize, key: Key) {
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

    /// Index of the least of the `D` children starting at `first` (all present).
    #[inline(always)]
    fn least_of_full(heap: &[Key], first: usize) -> usize {
        let c: &[Key; D] = heap[first..first + D].try_into().expect("D children");
        let mut r = [(0usize, 0u128); D];
        for i in 0..D { r[i] = (i, c[i].rank()); }
        let mut w = D;
        while w > 1 {
            for i in 0..w / 2 {
                let (a, b) = (r[2 * i], r[2 * i + 1]);
                r[i] = if b.1 < a.1 { b } else { a };
            }
            w /= 2;
        }
        first + r[0].0
    }

    /// Index of the least of the children from `first` to the end of the heap (fewer than `D`).
    #[inline(always)]
    fn least_of_partial(heap: &[Key], first: usize) -> usize {
        let mut m = first;
        for i in first + 1..heap.len() {
            if heap[i].rank() < heap[m].rank() {
                m = i;
            }
        }
        m
    }

    /// Puts `key` at the vacant root and sifts it down (top-down: stops as soon as `key` is
    /// no later than the least child, cheap for events due soon).
    #[inline]
    fn sift_down(&mut self, key: Key) {
        let heap = &mut self.heap[..];
        let n = heap.len();
        let rank = key.rank();
        let mut pos = 0;
        loop {
            let first = D * pos + 1;
            let m = if first + D <= n {
                Self::least_of_full(heap, first)
            } else if first < n {
                Self::least_of_partial(heap, first)
            } else {
                break;
            };
            if rank <= heap[m].rank() {
                break;
            }
            heap[pos] = heap[m];
            pos = m;
        }
        heap[pos] = key;
    }

    /// Puts `key` at the root (vacant) and restores the heap bottom-up: the hole walks down
    /// along least children to a leaf, then `key` rises from there (Floyd; `key` came from
    /// the last leaf so it rarely rises far).
    #[inline]
    fn sift_down_to_bottom(&mut self, key: Key) {
        let heap = &mut self.heap[..];
        let n = heap.len();
        let mut pos = 0;
        loop {
            let first = D * pos + 1;
            let m = if first + D <= n {
                Self::least_of_full(heap, first)
            } else if first < n {
                Self::least_of_partial(heap, first)
            } else {
                break;
            };
            heap[pos] = heap[m];
            pos = m;
        }
        Self::rise(heap, pos, key);
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

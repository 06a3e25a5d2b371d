//! The replay's event queue: events pop in `(time, seq)` order, `seq` the order they were
//! pushed in (equal times first in, first out), exactly as the kernel's queue orders them.
//!
//! Most pending events of a replay are browsers thinking: thousands of `Start` timers a
//! fraction of a second to seconds ahead, against a few hundred events of the requests in
//! progress. Events ahead of the bucket being popped therefore wait in a timer wheel
//! (buckets of [`BUCKET_PS`], a ring of [`WHEEL_BUCKETS`]) and only the events of requests
//! in progress due soon in a heap, which stays small and in the caches. When the wheel's earliest bucket
//! comes due it is sorted once into a run popped from its end; each pop takes the earlier
//! of the heap's least and that run's least by `(time, seq)`. An event due in the bucket
//! being popped (or an earlier one), or beyond the wheel's reach, goes into the heap: any
//! event may wait in either structure, the order of pops is fixed by the keys alone. (The
//! wheel took think timers only until a request waiting for a tier's cores booked far
//! ahead at saturation went there too: thousands of them had deepened the heap.) Events
//! pushed for the current instant itself (a request's forked programs, a connection
//! handed to a waiter) skip the heap: they wait in a first-in first-out list,
//! which is in `(time, seq)` order by construction.

use interlab_kernel::Time;
use std::collections::VecDeque;
use std::mem::MaybeUninit;

/// Width of a wheel bucket: 2^30 ps, about 1.07 ms.
pub(crate) const BUCKET_PS: Time = 1 << 30;
const BUCKET_SHIFT: u32 = BUCKET_PS.trailing_zeros();
/// Buckets in the ring: 8192, about 8.8 s ahead (TPC-W's think times are truncated at 10
/// means; at the studies' 0.1 scale of its 7 s mean, 7 s).
pub(crate) const WHEEL_BUCKETS: u64 = 1 << 13;

/// One pending event with its key.
#[derive(Debug, Clone, Copy)]
struct Entry<E> {
    time: Time,
    seq: u64,
    ev: E,
}

impl<E> Entry<E> {
    /// `(time, seq)` as one integer (lexicographic order on the pair).
    #[inline(always)]
    fn rank(&self) -> u128 {
        ((self.time as u128) << 64) | self.seq as u128
    }
}

/// A 4-ary min-heap on [`Entry::rank`]: half as deep as a binary one, and the least of four
/// children is found without unpredictable branches.
///
/// A pop moves the hole the root leaves down along least children to a leaf, where it
/// stays; the next push drops its entry into that hole and lets it rise (the usual "pop
/// one, push one" step costs one walk down and a short climb, and the walk down compares
/// children only). A peek or pop with a hole outstanding first fills it with the last
/// entry. The order of pops is the keys' either way.
struct Heap<E> {
    /// The heap, but for the entry at `hole` (if any): stale, at a leaf.
    v: Vec<Entry<E>>,
    hole: usize,
}

const NO_HOLE: usize = usize::MAX;

impl<E: Copy> Heap<E> {
    fn new() -> Self {
        Heap { v: Vec::new(), hole: NO_HOLE }
    }

    /// Entries (the hole not counted).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.v.len() - usize::from(self.hole != NO_HOLE)
    }

    /// Lets `e`, placed at `i` (below `v.len()`; what the slot held is not read), rise to
    /// its place.
    #[inline(always)]
    fn rise(&mut self, mut i: usize, e: Entry<E>) {
        debug_assert!(i < self.v.len());
        let r = e.rank();
        let v = self.v.as_mut_ptr();
        // SAFETY: `i` is below the length and every parent of a place is below it; the
        // slot at `i` is written (never read) before it is part of the heap.
        unsafe {
            while i > 0 {
                let p = (i - 1) / 4;
                let pe = *v.add(p);
                if pe.rank() <= r {
                    break;
                }
                v.add(i).write(pe);
                i = p;
            }
            v.add(i).write(e);
        }
    }

    /// Inlined, so the new entry is built in registers: built in memory by the caller and
    /// read back whole, it stalls store forwarding. The entry goes into the hole the last
    /// pop left, or else a new slot at the end, chosen without a branch (whether a hole is
    /// there follows the order of pushes and pops, which no predictor learns).
    #[inline(always)]
    fn push(&mut self, e: Entry<E>) {
        self.v.reserve(1);
        let len = self.v.len();
        // A hole is always below the length; `NO_HOLE` is above every length.
        let i = self.hole.min(len);
        // SAFETY: the capacity is above `len`; a new slot at `len` is written by `rise`
        // before anything reads it.
        unsafe { self.v.set_len(len + usize::from(self.hole == NO_HOLE)) };
        self.hole = NO_HOLE;
        self.rise(i, e);
    }

    /// Fills the hole, if any, with the last entry.
    #[inline(always)]
    fn settle(&mut self) {
        if self.hole != NO_HOLE {
            let h = self.hole;
            self.hole = NO_HOLE;
            let last = self.v.pop().expect("a hole is in the heap");
            if h < self.v.len() {
                self.rise(h, last);
            }
        }
    }

    #[inline]
    fn peek(&mut self) -> Option<&Entry<E>> {
        self.settle();
        self.v.first()
    }

    #[inline]
    fn pop(&mut self) -> Option<Entry<E>> {
        self.settle();
        let top = *self.v.first()?;
        let n = self.v.len();
        let v = self.v.as_mut_ptr();
        // Walk the hole down along least children to a leaf.
        let mut i = 0;
        loop {
            let c = 4 * i + 1;
            if c >= n {
                break;
            }
            // SAFETY: every place read is below `n` (children `c..c + 4` only when
            // `c + 4 <= n`), and `i` is a place already read.
            unsafe {
                let m = if c + 4 <= n {
                    let ch = std::slice::from_raw_parts(v.add(c), 4);
                    let (a, ra) = if ch[1].rank() < ch[0].rank() { (1, ch[1].rank()) } else { (0, ch[0].rank()) };
                    let (b, rb) = if ch[3].rank() < ch[2].rank() { (3, ch[3].rank()) } else { (2, ch[2].rank()) };
                    c + if rb < ra { b } else { a }
                } else {
                    (c..n).min_by_key(|&k| (*v.add(k)).rank()).unwrap_or(c)
                };
                *v.add(i) = *v.add(m);
                i = m;
            }
        }
        if i == n - 1 {
            self.v.pop();
        } else {
            self.hole = i;
        }
        Some(top)
    }
}

/// "No node": the end of a bucket's list.
const NO_SLOT: u32 = u32::MAX;

/// Entries of a wheel node.
const NODE_ENTRIES: usize = 5;

/// A node of a bucket's list: up to [`NODE_ENTRIES`] entries (all but a bucket's first node
/// full; the first holds the count its bucket keeps) and the next node. Two cache lines:
/// walking a bucket's list at its refill misses once a node, not once an entry (the misses
/// of a list follow one another: each holds the place of the next).
#[repr(align(64))]
struct Node<E> {
    entries: [MaybeUninit<Entry<E>>; NODE_ENTRIES],
    next: u32,
}

/// The event queue of a replay (see the module's note).
pub(crate) struct Queue<E> {
    next_seq: u64,
    heap: Heap<E>,
    /// The ring: bucket `b` (absolute number `time >> BUCKET_SHIFT`) at `b % WHEEL_BUCKETS`;
    /// only buckets after `cur` and within `WHEEL_BUCKETS` of it hold entries. Each bucket
    /// is a list of nodes (its first node here, [`NO_SLOT`] if empty, and the entries in
    /// that node, so a push writes the node without reading it): memory in proportion to
    /// the timers pending, not to the buckets (a vector per bucket kept its capacity:
    /// megabytes per replay).
    buckets: Vec<(u32, u32)>,
    /// The nodes of the buckets' lists.
    nodes: Vec<Node<E>>,
    free_nodes: Vec<u32>,
    /// Entries in `buckets`.
    in_buckets: usize,
    /// Absolute number of the bucket whose entries are in `ready` (if the wheel is empty,
    /// at least that of the last event popped).
    cur: u64,
    /// Bucket `cur`'s entries, sorted latest first (popped from the end).
    ready: Vec<Entry<E>>,
    /// Time of the last event popped.
    now: Time,
    /// Events pushed for `now` itself (in push order, so in `(time, seq)` order).
    at_now: VecDeque<Entry<E>>,
    /// Rank of the event being handled (the last popped).
    cur_rank: u128,
    /// Folds whose skipped event is still ahead: per slot (by the folded event's time) that
    /// time, and in `fold_ranks` the greatest rank of a skipped event folded into an event
    /// at that time. Apart: every push reads its slot's time (8 KB in all, which stays in
    /// the first-level cache; the pairs together, 32 KB, missed it on most pushes) and the
    /// rank only when the time is its own.
    fold_times: Box<[Time; FOLD_SLOTS]>,
    fold_ranks: Box<[u128; FOLD_SLOTS]>,
    /// A push may have taken a place before a folded event that the run without folding
    /// gives it after (or the other way round): the run is not exact.
    pub(crate) conflict: bool,
}

/// Slots of [`Queue::fold_times`] and [`Queue::fold_ranks`].
const FOLD_SLOTS: usize = 1 << 10;

#[inline(always)]
fn fold_slot(t: Time) -> usize {
    (t.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - FOLD_SLOTS.trailing_zeros())) as usize & (FOLD_SLOTS - 1)
}

impl<E: Copy> Queue<E> {
    pub(crate) fn new() -> Self {
        Queue { next_seq: 0, heap: Heap::new(), buckets: vec![(NO_SLOT, 0); WHEEL_BUCKETS as usize], nodes: Vec::new(), free_nodes: Vec::new(), in_buckets: 0, cur: 0, ready: Vec::new(), now: 0, at_now: VecDeque::new(), cur_rank: 0, fold_times: Box::new([0; FOLD_SLOTS]), fold_ranks: Box::new([0; FOLD_SLOTS]), conflict: false }
    }

    /// Schedules `ev` at `time` (not before the last event popped): with the events for
    /// now if at now, into the wheel if in a bucket ahead of the one being popped and
    /// within reach, else into the heap. At saturation a tier's cores are booked far
    /// ahead, and the events waiting for them (thousands) would deepen the heap that every
    /// pop walks; in the wheel they cost a list push now and a place in one bucket's sort.
    /// Inlined: the event is built in registers (see [`Heap::push`]).
    #[inline(always)]
    pub(crate) fn push(&mut self, time: Time, ev: E) {
        self.check(time, self.cur_rank);
        self.push_unchecked(time, ev);
    }

    /// Flags a conflict if an event pushed now at `time` by an event of rank `by` goes in
    /// before a folded event at `time` whose skipped event has a greater rank.
    #[inline(always)]
    fn check(&mut self, time: Time, by: u128) {
        let s = fold_slot(time);
        if self.fold_times[s] == time {
            self.conflict |= self.fold_ranks[s] > by;
        }
    }

    /// Folds an event at `at` (not pushed: done now by the caller) into its successor `ev`
    /// at `time`, which is pushed as the skipped event would have pushed it. False (and
    /// nothing done) if the table of folds has no room for it at `time`'s slot.
    #[inline(always)]
    pub(crate) fn try_push_folded(&mut self, at: Time, time: Time, ev: E) -> bool {
        let s = fold_slot(time);
        let (t, open) = (self.fold_times[s], self.fold_ranks[s]);
        if t != time && open > self.cur_rank {
            return false;
        }
        // The skipped event takes its sequence number, as pushed now.
        let seq = self.next_seq;
        self.next_seq += 1;
        let ka = ((at as u128) << 64) | seq as u128;
        // A fold at `time` whose skipped event comes after this one: pushed earlier, its
        // successor now comes first, but not in the run without folding.
        self.conflict |= (t == time) & (open > ka);
        self.fold_times[s] = time;
        self.fold_ranks[s] = if t == time { open.max(ka) } else { ka };
        self.push_unchecked(time, ev);
        true
    }

    #[inline(always)]
    fn push_unchecked(&mut self, time: Time, ev: E) {
        debug_assert!(time >= self.now, "time runs back");
        let seq = self.next_seq;
        self.next_seq += 1;
        if time == self.now {
            self.at_now.push_back(Entry { time, seq, ev });
        } else {
            let b = time >> BUCKET_SHIFT;
            if b > self.cur && b - self.cur < WHEEL_BUCKETS {
                let (head, n) = &mut self.buckets[(b % WHEEL_BUCKETS) as usize];
                if *head == NO_SLOT || *n as usize == NODE_ENTRIES {
                    let next = *head;
                    *head = match self.free_nodes.pop() {
                        Some(k) => {
                            self.nodes[k as usize].next = next;
                            k
                        }
                        None => {
                            self.nodes.push(Node { entries: [MaybeUninit::uninit(); NODE_ENTRIES], next });
                            (self.nodes.len() - 1) as u32
                        }
                    };
                    *n = 0;
                }
                self.nodes[*head as usize].entries[*n as usize].write(Entry { time, seq, ev });
                *n += 1;
                self.in_buckets += 1;
            } else {
                self.heap.push(Entry { time, seq, ev });
            }
        }
    }

    /// Makes `ready` hold the wheel's earliest entries if it is empty and the wheel is not.
    #[inline]
    fn refill(&mut self) {
        if !self.ready.is_empty() || self.in_buckets == 0 {
            return;
        }
        let (mut k, mut n) = loop {
            self.cur += 1;
            let head = &mut self.buckets[(self.cur % WHEEL_BUCKETS) as usize];
            if head.0 != NO_SLOT {
                break std::mem::replace(head, (NO_SLOT, 0));
            }
        };
        while k != NO_SLOT {
            let node = &self.nodes[k as usize];
            // SAFETY: a bucket's first node holds `n` entries (its count), the others are
            // full; every one was written by `push_unchecked`.
            self.ready.extend(node.entries[..n as usize].iter().map(|e| unsafe { e.assume_init() }));
            self.free_nodes.push(k);
            k = node.next;
            n = NODE_ENTRIES as u32;
        }
        self.in_buckets -= self.ready.len();
        self.ready.sort_unstable_by_key(|e| std::cmp::Reverse(e.rank()));
    }

    /// Removes and returns the earliest event and its time: the least of the heap's, the
    /// wheel's and those pushed for the current instant.
    #[inline]
    pub(crate) fn pop(&mut self) -> Option<(Time, E)> {
        self.refill();
        // 0: the heap, 1: the wheel, 2: the events for now.
        let mut from = 0;
        let mut best = self.heap.peek().map_or(u128::MAX, |e| e.rank());
        if let Some(r) = self.ready.last() {
            if r.rank() < best {
                (from, best) = (1, r.rank());
            }
        }
        if let Some(n) = self.at_now.front() {
            if n.rank() < best {
                from = 2;
            }
        }
        let e = match from {
            0 => self.heap.pop(),
            1 => self.ready.pop(),
            _ => self.at_now.pop_front(),
        }?;
        if self.in_buckets == 0 && self.ready.is_empty() {
            // The wheel is empty: its reach starts from now on (no bucket is skipped).
            self.cur = self.cur.max(e.time >> BUCKET_SHIFT);
        }
        self.now = e.time;
        self.cur_rank = e.rank();
        Some((e.time, e.ev))
    }

    /// Pending events.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.heap.len() + self.in_buckets + self.ready.len() + self.at_now.len()
    }
}


/// Stores `v` in `items` at an index `free` hands back (one freed earlier), or at the end;
/// returns its index. The replay's slabs (wheel slots, flows, request programs) share it.
#[inline]
pub(crate) fn slab_put<T>(items: &mut Vec<T>, free: &mut Vec<u32>, v: T) -> u32 {
    match free.pop() {
        Some(k) => {
            items[k as usize] = v;
            k
        }
        None => {
            items.push(v);
            (items.len() - 1) as u32
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use interlab_kernel::{EventQueue, Rng};

    /// Random pushes (far and near, equal times) interleaved with pops:
    /// the order of pops is the kernel queue's, event for event.
    #[test]
    fn pops_in_the_kernels_order() {
        for seed in 1..6 {
            let mut rng = Rng::stream(seed, 0);
            let mut q: Queue<u64> = Queue::new();
            let mut k: EventQueue<u64> = EventQueue::new();
            let mut now: Time = 0;
            let (mut id, mut popped, mut timers_in_wheel) = (0u64, 0u64, 0u64);
            // A backlog, like thousands of browsers thinking.
            for _ in 0..5000 {
                let t = (rng.next_f64() * (WHEEL_BUCKETS * BUCKET_PS) as f64) as Time;
                q.push(t, id);
                k.push(t, id);
                id += 1;
            }
            for step in 0..200_000u64 {
                // Mostly one pop per push, with bursts of each.
                let pushes = if step % 1000 < 500 { 1 } else { (step % 3) as u32 };
                for _ in 0..pushes {
                    let r = rng.next_f64();
                    let delay = if r < 0.1 {
                        0
                    } else if r < 0.2 {
                        // Ties on purpose: a few distinct instants.
                        (rng.below(4) * BUCKET_PS / 3) as Time
                    } else if r < 0.6 {
                        (rng.next_f64() * 1e6) as Time
                    } else if r < 0.98 {
                        (rng.next_f64() * 1.2 * (WHEEL_BUCKETS * BUCKET_PS) as f64) as Time
                    } else {
                        (WHEEL_BUCKETS + rng.below(3)) * BUCKET_PS - 1 + rng.below(3) * BUCKET_PS
                    };
                    let t = now + delay;
                    let before = q.in_buckets;
                    q.push(t, id);
                    timers_in_wheel += (q.in_buckets > before) as u64;
                    k.push(t, id);
                    id += 1;
                }
                if step % 1000 >= 500 || step % 2 == 0 {
                    let a = q.pop();
                    let b = k.pop().map(|s| (s.time, s.event));
                    assert_eq!(a, b, "seed {seed} step {step}");
                    if let Some((t, _)) = a {
                        assert!(t >= now, "time ran back");
                        now = t;
                        popped += 1;
                    }
                }
                assert_eq!(q.len(), k.len());
            }
            while let Some(b) = k.pop() {
                assert_eq!(q.pop(), Some((b.time, b.event)));
                popped += 1;
            }
            assert_eq!(q.pop(), None);
            assert!(popped > 100_000 && timers_in_wheel > 30_000, "the test exercised the wheel: {popped} pops, {timers_in_wheel} timers in the wheel");
        }
    }

    /// A bucket of many entries (several nodes of its list, pushed in an order unlike their
    /// times, with ties) pops in `(time, seq)` order, as the kernel's queue does; its nodes
    /// are the ones a later bucket reuses.
    #[test]
    fn a_bucket_of_several_nodes_pops_in_order() {
        let mut rng = Rng::stream(4, 0);
        let mut q: Queue<u64> = Queue::new();
        let mut k: EventQueue<u64> = EventQueue::new();
        for round in 1..40u64 {
            let n = rng.below(4 * NODE_ENTRIES as u64) + 1;
            let base = 3 * round * BUCKET_PS;
            for id in 0..n {
                let t = base + rng.below(4) * (BUCKET_PS / 4) + rng.below(2);
                q.push(t, round * 1000 + id);
                k.push(t, round * 1000 + id);
            }
            // The round's bucket in the wheel, in nodes of at most NODE_ENTRIES.
            let (head, in_head) = q.buckets[((base >> BUCKET_SHIFT) % WHEEL_BUCKETS) as usize];
            assert_ne!(head, NO_SLOT);
            assert_eq!(in_head as u64, (n - 1) % NODE_ENTRIES as u64 + 1, "entries in the first node");
            assert_eq!(q.nodes.len() as u64 - q.free_nodes.len() as u64, n.div_ceil(NODE_ENTRIES as u64));
            while let Some(b) = k.pop() {
                assert_eq!(q.pop(), Some((b.time, b.event)), "round {round}");
            }
            assert_eq!(q.pop(), None);
            assert_eq!(q.free_nodes.len(), q.nodes.len(), "every node freed");
        }
        assert!(q.nodes.len() <= 4, "nodes reused: {}", q.nodes.len());
    }

    /// An event for the bucket being popped, or beyond the ring's reach, goes into the heap;
    /// one ahead within reach into the wheel.
    #[test]
    fn events_outside_the_wheels_reach_go_into_the_heap() {
        let mut q: Queue<u32> = Queue::new();
        q.push(5, 0); // bucket 0: the one being popped
        assert_eq!((q.heap.len(), q.in_buckets), (1, 0));
        q.push(BUCKET_PS, 1);
        assert_eq!((q.heap.len(), q.in_buckets), (1, 1));
        q.push(WHEEL_BUCKETS * BUCKET_PS, 2); // a whole ring ahead
        assert_eq!((q.heap.len(), q.in_buckets), (2, 1));
        assert_eq!(q.pop(), Some((5, 0)));
        assert_eq!(q.pop(), Some((BUCKET_PS, 1)));
        // Bucket 1 is being popped now: an event in it goes into the heap, one for this very
        // instant with the events for now, behind one pushed for it before.
        q.push(BUCKET_PS + 7, 3);
        assert_eq!((q.heap.len(), q.in_buckets), (2, 0));
        q.push(BUCKET_PS + 9, 4);
        assert_eq!(q.pop(), Some((BUCKET_PS + 7, 3)));
        q.push(BUCKET_PS + 7, 5);
        q.push(BUCKET_PS + 7, 6);
        assert_eq!((q.heap.len(), q.at_now.len()), (2, 2));
        assert_eq!(q.pop(), Some((BUCKET_PS + 7, 5)));
        assert_eq!(q.pop(), Some((BUCKET_PS + 7, 6)));
        assert_eq!(q.pop(), Some((BUCKET_PS + 9, 4)));
        assert_eq!(q.pop(), Some((WHEEL_BUCKETS * BUCKET_PS, 2)));
        assert_eq!(q.pop(), None);
    }
}

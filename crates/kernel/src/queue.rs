//! The event queue: a radix wheel (a monotone bucket queue) keyed by `(time_ps, seq)`.
//!
//! Every event is scheduled no earlier than the last one popped (the run loop clamps to
//! `now`), and sequence numbers only grow, so the keys popped never decrease. The queue
//! exploits that: it keeps a reference time `cur` (the last popped time) and files each
//! pending event by the highest 8-bit digit in which its time differs from `cur` (its
//! *level*) and that digit's value (its *bucket*): 8 levels of 256 buckets, one bit per
//! bucket in 32 mask words, and one word marking the non-empty mask words. Buckets are
//! numbered level by level, so the lowest set bit is the lowest bucket of the lowest level.
//! A push is a XOR, a leading-zero count and an append to a list. A pop takes the front
//! of the lowest bucket if it is at level 0, where every event of a bucket has the same
//! time; a bucket of a higher level is popped at once if it holds one event, else spread
//! over the levels below it (an event moves down at most once per level; in the hold model
//! of `bench kernel` about once in all). No comparison of keys decides the order: the
//! digits do, and ties the order of appends (see [`EventQueue`]).
//!
//! A bucket is a singly linked list through per-event nodes (`next`, with each bucket's
//! own node first, so an append has no branch), so moving an event between buckets
//! rewrites two 4-byte links and copies nothing. A node holds an event's time, link and
//! tag in 16 bytes (one cache line read per move); a bucket's own node holds its head
//! (`next`) and its tail (`tag`) in one 8-byte word; a free slot's node links it into the
//! free list. The lowest non-empty bucket is kept in a field, so a pop starts from it.
//! Payloads live in a slab beside the nodes (the model's events are 128 bytes), written
//! at the push and moved out once at the pop.

use crate::Time;
use std::mem::MaybeUninit;

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

/// Bits of a time per level of the wheel, buckets per level, and levels.
const DIGIT_BITS: u32 = 8;
const FANOUT: usize = 1 << DIGIT_BITS;
const LEVELS: usize = 64usize.div_ceil(DIGIT_BITS as usize);
/// Buckets in all; also the index of the first event's node (the buckets' own come first).
const BUCKETS: usize = LEVELS * FANOUT;
/// Words of the bucket mask (one bit per bucket), at most 32 so that one `u32` marks the
/// non-empty ones.
const WORDS: usize = BUCKETS / 64;
const _: () = assert!(FANOUT.is_multiple_of(64) && WORDS <= 32 && DIGIT_BITS.is_power_of_two());

/// Most events of one bucket [`EventQueue::none_by`] looks at before it answers false.
const QUIET_WALK: usize = 8;

/// At most this many events pending at once (node indices are `u32`).
const MAX_SLOTS: usize = u32::MAX as usize - BUCKETS;

/// Slab size from which [`EventQueue::prefetch_next`] prefetches: above a typical per-core
/// L2 cache (256 KiB to 2 MiB), where a payload pushed long ago has likely been evicted.
const PREFETCH_FROM_BYTES: usize = 256 << 10;

/// Level of a time `t >= cur` relative to `cur`: the index of the highest digit in which
/// they differ (0 if none). The reference formula; the queue files by [`bucket_at`].
#[cfg(test)]
fn level_of(t: Time, cur: Time) -> usize {
    ((63 - ((t ^ cur) | 1).leading_zeros()) / DIGIT_BITS) as usize
}

/// Index of the bucket of time `t` at level `k`. The reference formula; the queue files by
/// [`bucket_at`].
#[cfg(test)]
fn bucket_of(t: Time, k: usize) -> usize {
    k * FANOUT + ((t >> (k as u32 * DIGIT_BITS)) as usize & (FANOUT - 1))
}

/// Index of the bucket of a time `t >= cur`: `bucket_of(t, level_of(t, cur))`, computed
/// from the level's shift (the highest differing bit's index rounded down to a digit) without
/// the level itself: a bit scan, a mask, a shift, instead of turning the leading-zero count
/// into a level and the level back into a shift (x86-64-v2 has no `lzcnt`: the count is a
/// `bsr` and two `xor`s, and the level two more shifts). `shift / DIGIT_BITS * FANOUT` is a
/// single shift left (`shift` is a multiple of `DIGIT_BITS`, both powers of two).
#[inline(always)]
fn bucket_at(t: Time, cur: Time) -> usize {
    let shift = ((t ^ cur) | 1).ilog2() & !(DIGIT_BITS - 1);
    ((shift as usize) << (FANOUT.ilog2() - DIGIT_BITS.ilog2())) | ((t >> shift) as usize & (FANOUT - 1))
}

/// Appends node `n` to bucket `b`'s list (a bucket's own node holds its tail in `tag`).
#[inline(always)]
fn append(nodes: &mut [Node], b: usize, n: u32) {
    debug_assert!(b < BUCKETS && (n as usize) < nodes.len());
    // SAFETY: `b` is a bucket (below `BUCKETS`, whose own nodes come first) and a bucket's
    // tail is an existing node's index (see [`EventQueue`]'s doc).
    unsafe {
        let last = std::mem::replace(&mut nodes.get_unchecked_mut(b).tag, n);
        debug_assert!((last as usize) < nodes.len());
        nodes.get_unchecked_mut(last as usize).next = n;
    }
}

/// One node of the wheel's lists: a bucket's own node or a pending event's.
#[derive(Debug, Clone, Copy)]
struct Node {
    /// When the event fires (unused for a bucket's own node).
    time: Time,
    /// The next node in its bucket (meaningless at the bucket's tail); for a free slot's
    /// node, the next free slot's node ([`NO_FREE`] at the end).
    next: u32,
    /// An event's: the caller's word (see [`EventQueue::pop_tagged_until`]). A bucket's
    /// own node: the bucket's last node (the bucket's own node when empty), so a bucket's
    /// first and last node share one 8-byte word and one cache line.
    tag: u32,
}

/// End of the free list: bucket 0's own node, never a slot's, so every link stored in a
/// node or a tail is the index of an existing node (the unchecked indexing relies on it).
const NO_FREE: u32 = 0;

/// Min-queue of events; equal times pop in insertion order (FIFO), which makes runs
/// deterministic.
///
/// *Why the order is exact*: every pending time is at least `cur`; an event's level and
/// bucket are those of its time against `cur`, so a bucket of a lower level, or a lower
/// bucket of the same level, holds only earlier times, and a bucket of level 0 holds one
/// time. Within each bucket, events of equal time are in `seq` order: a push appends the
/// highest `seq` yet, and a bucket is spread only into buckets that are empty (all lower
/// levels are), in its own order. So the front of the lowest bucket of level 0 is the least
/// `(time, seq)`, and an event alone in the lowest bucket of the lowest level is too.
/// `cur` moves only when an event is popped (to its time), or forward to the start of a
/// bucket about to be spread when the pop that follows is sure to succeed; so a later push
/// at or after the last popped time is never earlier than `cur`. A push that is (only a
/// direct user of the queue can make one: the run loop clamps to `now`) rebuilds the wheel
/// around the new time, in `(time, seq)` order.
///
/// *Why the unchecked indexing is sound*: `nodes` never shrinks and holds `BUCKETS` nodes
/// plus one per slab slot; every value ever stored in a node's `next`, in a bucket's tail or in
/// `free` is the index of an existing node (a bucket's own, a pushed event's, or
/// [`NO_FREE`], bucket 0's), and a bucket index is below `BUCKETS` by construction
/// (`bucket_at`: a shift below 64 rounded down to a digit, times `FANOUT / DIGIT_BITS`, plus a digit below `FANOUT`; a mask word < `WORDS`). Debug builds check
/// every such index.
///
/// `COUNTED`: whether the queue numbers its events and counts them: each event's sequence
/// number is stored, for [`EventQueue::pop`], which returns it, and the pending events are
/// counted, for [`EventQueue::len`]. The run loop needs neither (ties are ordered by the
/// buckets' append order, not by a stored number, and it stops on an empty wheel, not a
/// count), so a [`crate::Simulation`]'s queue skips the number's store and the counters'
/// updates on every push and pop.
#[derive(Debug)]
pub struct EventQueue<E, const COUNTED: bool = true> {
    /// The wheel's reference time: at most every pending time, and at most the last popped
    /// time once a pop has returned.
    cur: Time,
    /// Bit `b % 64` of word `b / 64` set when bucket `b` holds a pending event. Buckets are
    /// numbered level by level, so the lowest set bit is the lowest bucket of the lowest
    /// level.
    /// Word `WORDS` is a sentinel with its bit 0 always set, standing for bucket `BUCKETS`
    /// ("none"): the lowest set bit of an empty wheel.
    masks: [u64; WORDS + 1],
    /// Bit `w` set when `masks[w]` is not 0 (for `w < WORDS`).
    words: u32,
    /// The lowest non-empty bucket, `BUCKETS` if none: kept up to date by every change of
    /// the masks, so a pop starts from one load of a value computed while the previous
    /// event's handler ran, instead of the two dependent loads and bit scans that find it.
    low: usize,
    /// The buckets' own nodes first (bucket `b`'s is `b`: its `next` is the bucket's first
    /// event), then one per slab slot (slot `s` at `BUCKETS + s`). Time, link and tag of an
    /// event share one 16-byte node: a move between buckets reads one cache line.
    nodes: Vec<Node>,
    /// Per slot: the sequence number, read only by [`EventQueue::pop`]; empty unless `COUNTED`.
    seqs: Vec<u64>,
    /// Per slot: the payload, initialised exactly while the slot's event is pending (the
    /// buckets list them; [`Drop`] drops them).
    slab: Vec<MaybeUninit<E>>,
    /// First node of the list of free slots, linked through `next`; [`NO_FREE`] if none.
    free: u32,
    /// Pending events (0 unless `COUNTED`).
    pending: usize,
    /// The slab has grown past [`PREFETCH_FROM_BYTES`] (see [`EventQueue::prefetch_next`]).
    prefetch: bool,
    /// The next push's sequence number (0 unless `COUNTED`).
    next_seq: u64,
}

impl<E, const COUNTED: bool> Default for EventQueue<E, COUNTED> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E, const COUNTED: bool> Drop for EventQueue<E, COUNTED> {
    /// Drops the payloads of the pending events (the only initialised slots).
    fn drop(&mut self) {
        if !std::mem::needs_drop::<E>() {
            return;
        }
        for b in 0..BUCKETS {
            for n in self.nodes_of(b) {
                // SAFETY: a pending event's slot holds its payload, dropped once here.
                unsafe { self.slab[n as usize - BUCKETS].assume_init_drop() };
            }
        }
    }
}

impl<E, const COUNTED: bool> EventQueue<E, COUNTED> {
    /// An empty queue.
    pub fn new() -> Self {
        EventQueue {
            cur: 0,
            masks: std::array::from_fn(|w| u64::from(w == WORDS)),
            words: 0,
            low: BUCKETS,
            nodes: (0..BUCKETS as u32).map(|b| Node { time: 0, next: 0, tag: b }).collect(),
            seqs: Vec::new(),
            slab: Vec::new(),
            free: NO_FREE,
            pending: 0,
            prefetch: false,
            next_seq: 0,
        }
    }

    /// Node `n` (an index taken from a link, a tail, the free list or a bucket number).
    #[inline(always)]
    fn node(&self, n: u32) -> &Node {
        debug_assert!((n as usize) < self.nodes.len());
        // SAFETY: see the type's doc: every index passed here is an existing node's.
        unsafe { self.nodes.get_unchecked(n as usize) }
    }

    /// Node `n`, mutably (same indices as [`EventQueue::node`]).
    #[inline(always)]
    fn node_mut(&mut self, n: u32) -> &mut Node {
        debug_assert!((n as usize) < self.nodes.len());
        // SAFETY: as in `node`.
        unsafe { self.nodes.get_unchecked_mut(n as usize) }
    }

    /// Schedules `event` at absolute time `time` (picoseconds); returns its sequence number.
    #[inline]
    pub fn push(&mut self, time: Time, event: E) -> u64 {
        let seq = self.next_seq;
        self.push_tagged(time, 0, event);
        seq
    }

    /// Schedules `event` at `time` with the caller's word `tag` beside it (see
    /// [`EventQueue::pop_tagged_until`]); numbers and counts it if `COUNTED`.
    #[inline]
    pub(crate) fn push_tagged(&mut self, time: Time, tag: u32, event: E) {
        let seq = self.next_seq;
        if COUNTED {
            self.next_seq = seq + 1;
            self.pending += 1;
        }
        let n = self.free;
        let n = if n != NO_FREE {
            let s = (n - BUCKETS as u32) as usize;
            // SAFETY: a free node is a slot's (`n >= BUCKETS`), and every slot has its
            // payload entry, and its sequence entry if `COUNTED`.
            unsafe {
                self.slab.get_unchecked_mut(s).write(event);
                if COUNTED {
                    *self.seqs.get_unchecked_mut(s) = seq;
                }
            }
            let node = self.node_mut(n);
            let after = node.next;
            node.time = time;
            node.tag = tag;
            self.free = after;
            n
        } else {
            self.grow(time, tag, seq, event)
        };
        if time < self.cur {
            self.rewind(time);
        }
        self.file::<true>(n, time);
    }

    /// A new slot at the end of the slab, for a push with no free slot; returns its node.
    #[inline(never)]
    fn grow(&mut self, time: Time, tag: u32, seq: u64, event: E) -> u32 {
        assert!(self.slab.len() < MAX_SLOTS, "more than 2^32 - {BUCKETS} pending events");
        let n = self.nodes.len() as u32;
        self.slab.push(MaybeUninit::new(event));
        self.nodes.push(Node { time, next: 0, tag });
        if COUNTED {
            self.seqs.push(seq);
        }
        self.prefetch = self.slab.len() * std::mem::size_of::<E>() >= PREFETCH_FROM_BYTES;
        n
    }

    /// Appends node `n` (its event due at `time`, no earlier than `cur`) to its bucket.
    ///
    /// `PUSH`: called from a push, which writes the masks only if the bucket was empty (a
    /// test, well predicted: most pushes join a bucket that has events). A store to them on
    /// every push, of a value that depends on the handler's result (the time), would make
    /// the next pop's first load wait for the whole handler; without it the processor
    /// starts the next pop while the handler's arithmetic (the hold model's logarithm) is
    /// still in flight. A spread writes them unconditionally (about half its events start
    /// a bucket, so a test would be a coin toss).
    #[inline(always)]
    fn file<const PUSH: bool>(&mut self, n: u32, time: Time) {
        debug_assert!(time >= self.cur);
        let b = bucket_at(time, self.cur);
        append(&mut self.nodes, b, n);
        let bit = 1 << (b % 64);
        if !PUSH || self.masks[b / 64] & bit == 0 {
            self.masks[b / 64] |= bit;
            self.words |= 1 << (b / 64);
            if PUSH {
                self.low = self.low.min(b);
            }
        }
    }

    /// The earliest time bucket `b` can hold: `cur`'s digits above the bucket's level, the
    /// bucket's own digit at it, zeros below (every time filed there has the same digits
    /// as `cur` above its level).
    #[inline(always)]
    fn bucket_start(&self, b: usize) -> Time {
        let shift = (b / FANOUT) as u32 * DIGIT_BITS;
        (((self.cur >> shift >> DIGIT_BITS) << DIGIT_BITS) | (b % FANOUT) as Time) << shift
    }

    /// The lowest non-empty bucket, `BUCKETS` if none (from the masks; no branch).
    #[inline(always)]
    fn lowest(&self) -> usize {
        // An empty `words` has 32 trailing zeros: the sentinel word, whose bit 0 is set.
        let w = self.words.trailing_zeros() as usize % (WORDS + 1);
        // Never 0: the lowest word marked in `words`, or the sentinel. As a `NonZeroU64`,
        // its trailing zeros are one bit scan (`bsf`/`tzcnt`), without the fix-up for a
        // zero input (x86-64-v2 has no `tzcnt` of its own: its encoding runs as `bsf`, which
        // leaves a zero input's result undefined, so the compiler loads 64 first).
        let mask = std::num::NonZeroU64::new(self.masks[w]);
        debug_assert!(mask.is_some(), "word {w} marked non-empty is empty");
        // SAFETY: `words` marks exactly the non-empty mask words (every change of a mask
        // word updates it: `mark`, `clear_lowest`, the spread, the rebuild; checked by
        // `check_invariants`), and the sentinel word `WORDS` always has bit 0 set.
        let mask = unsafe { mask.unwrap_unchecked() };
        w * 64 + mask.trailing_zeros() as usize
    }


    /// Marks bucket `b`, the lowest non-empty one (`low`), empty in the masks (not `low`).
    /// Being the lowest, `b`'s bit is the lowest set bit of its mask word, and its word's the
    /// lowest set bit of `words`: each is cleared by `x & (x - 1)`, without a shift by `b` or
    /// by the word's index (variable shifts are `cl` shifts on x86-64-v2).
    #[inline(always)]
    fn clear_lowest(&mut self, b: usize) {
        debug_assert_eq!(b, self.lowest());
        let w = b / 64 % WORDS;
        let mask = self.masks[w];
        let mask = mask & mask.wrapping_sub(1);
        self.masks[w] = mask;
        self.words &= self.words.wrapping_sub(u32::from(mask == 0));
    }

    /// The last node of bucket `b` (its own node when empty).
    #[inline(always)]
    fn tail(&self, b: usize) -> u32 {
        self.node(b as u32).tag
    }

    /// Nodes of bucket `b`, in list order.
    fn nodes_of(&self, b: usize) -> Vec<u32> {
        let mut out = vec![];
        if self.masks[b / 64] & (1 << (b % 64)) != 0 {
            let mut n = b as u32;
            while n != self.tail(b) {
                n = self.node(n).next;
                out.push(n);
            }
        }
        out
    }

    /// Rebuilds the wheel around `to`, earlier than `cur`: every pending event is filed
    /// again in `(time, seq)` order. Only a direct user of the queue pushes into the past.
    #[cold]
    #[inline(never)]
    fn rewind(&mut self, to: Time) {
        // Events of equal time share a bucket (the same level and digit against `cur`), where
        // they are in `seq` order: a stable sort by time of the buckets' lists, concatenated,
        // is in `(time, seq)` order without the stored numbers.
        let mut all: Vec<u32> = (0..BUCKETS).flat_map(|b| self.nodes_of(b)).collect();
        all.sort_by_key(|&n| self.node(n).time);
        for b in 0..BUCKETS as u32 {
            self.node_mut(b).tag = b;
        }
        self.masks = std::array::from_fn(|w| u64::from(w == WORDS));
        self.words = 0;
        self.cur = to;
        for n in all {
            self.file::<false>(n, self.node(n).time);
        }
        self.low = self.lowest();
    }

    /// Removes the earliest event if it fires at or before `until` (a later one stays queued,
    /// untouched); returns its time and the slot to [`EventQueue::take`] its payload from.
    /// Split from `take` so the run loop copies a large payload one time fewer on its way to
    /// the handler.
    #[inline]
    fn pop_until(&mut self, until: Time) -> Option<(Time, u32)> {
        let n = loop {
            // The lowest non-empty bucket of the lowest level.
            let b = self.low;
            if b >= BUCKETS {
                return None;
            }
            let Node { next: head, tag: tail, .. } = *self.node(b as u32);
            if head == tail {
                // Alone in the lowest bucket of the lowest level (a level-0 bucket or not):
                // the earliest event. The most common pop in a hold-like run (most buckets
                // an event pops from hold it alone), so it is the first test; the bucket's
                // own `next` is left as it is (meaningless in an empty bucket).
                let t = self.node(head).time;
                if t > until {
                    return None;
                }
                self.cur = t;
                self.node_mut(b as u32).tag = b as u32;
                self.clear_lowest(b);
                self.low = self.lowest();
                break head;
            }
            if b < FANOUT {
                // Level 0 (one time, in `seq` order): its front is the earliest event.
                let Node { time: t, next: after, .. } = *self.node(head);
                if t > until {
                    return None;
                }
                self.cur = t;
                self.node_mut(b as u32).next = after;
                break head;
            }
            // Level 0 is empty and this bucket holds several of the earliest events:
            // spread them over the levels below from the bucket's first time on.
            let shift = (b / FANOUT) as u32 * DIGIT_BITS;
            let lo = self.bucket_start(b);
            if lo > until {
                return None;
            }
            if lo + ((1 << shift) - 1) > until && self.nodes_of(b).iter().all(|&n| self.node(n).time > until) {
                return None;
            }
            self.clear_lowest(b);
            self.node_mut(b as u32).tag = b as u32;
            self.cur = lo;
            // `file` inlined, with the word of non-empty mask words in a register: the
            // compiler cannot tell the nodes' stores from `self.words`, and would load and
            // store it around every move, a chain through memory from move to move.
            // The nodes as a local slice, for the same reason: a store to a node's `u32`
            // could be to the `Vec`'s own pointer, which would be loaded again every move.
            let mut words = self.words;
            let (nodes, masks) = (&mut self.nodes[..], &mut self.masks);
            let mut n = head;
            loop {
                debug_assert!((n as usize) < nodes.len());
                // SAFETY: `n` is a link of bucket `b`'s list (see the type's doc).
                let Node { time, next, .. } = unsafe { *nodes.get_unchecked(n as usize) };
                let b = bucket_at(time, lo);
                append(nodes, b, n);
                masks[b / 64] |= 1 << (b % 64);
                words |= 1 << (b / 64);
                if n == tail {
                    break;
                }
                n = next;
            }
            self.words = words;
            self.low = self.lowest();
        };
        self.prefetch_next();
        Some((self.cur, n - BUCKETS as u32))
    }

    /// Removes the earliest event if it fires at or before `until` (a later one stays
    /// queued, untouched); returns its time, the tag it was pushed with and its payload.
    #[inline]
    pub(crate) fn pop_tagged_until(&mut self, until: Time) -> Option<(Time, u32, E)> {
        let (time, slot) = self.pop_until(until)?;
        let tag = self.node(slot + BUCKETS as u32).tag;
        // SAFETY: `slot` was just popped, and is taken once.
        Some((time, tag, unsafe { self.take(slot) }))
    }

    /// Takes the payload of a popped event out of its slot and frees the slot.
    ///
    /// # Safety
    /// `slot` must be the one the last [`EventQueue::pop_until`] returned, taken once: its
    /// payload is then initialised, and is not read again.
    #[inline]
    unsafe fn take(&mut self, slot: u32) -> E {
        let n = slot + BUCKETS as u32;
        let free = self.free;
        self.node_mut(n).next = free;
        self.free = n;
        if COUNTED {
            self.pending -= 1;
        }
        debug_assert!((slot as usize) < self.slab.len());
        // SAFETY: the caller's contract; the slot exists (popped slots are the slab's).
        unsafe { self.slab.get_unchecked(slot as usize).assume_init_read() }
    }

    /// Asks the CPU to start loading the payload of the likely next event (the front of
    /// the lowest bucket: the next to pop if the bucket is at level 0 or alone at its
    /// level, unless the handler about to run schedules an earlier one) while that handler
    /// runs. In runs with thousands of pending events the payload slab is megabytes and the
    /// load at the next pop otherwise misses the caches. A hint only: it changes no state
    /// and no result. Skipped while the slab is small enough to stay in the core's caches.
    #[inline(always)]
    fn prefetch_next(&self) {
        if !self.prefetch || self.low >= BUCKETS {
            return;
        }
        let next = self.node(self.low as u32).next as usize - BUCKETS;
        let p = self.slab[next..].as_ptr();
        #[cfg(target_arch = "x86_64")]
        // SAFETY: a prefetch is a hint: it reads nothing into the program, cannot fault,
        // and `p` points into the slab anyway.
        unsafe {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            _mm_prefetch::<_MM_HINT_T0>(p as *const i8);
            _mm_prefetch::<_MM_HINT_T0>((p as *const i8).wrapping_add(std::mem::size_of::<E>().max(1) - 1));
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = p;
    }

    /// Time of the earliest event, if any.
    #[inline]
    pub fn peek_time(&self) -> Option<Time> {
        let b = self.low;
        if b >= BUCKETS {
            return None;
        }
        if b < FANOUT {
            return Some(self.bucket_start(b));
        }
        self.nodes_of(b).iter().map(|&n| self.node(n).time).min()
    }

    /// True when no pending event fires at or before `t`. Exact but conservative where it
    /// would have to walk a long list: it may answer false for a quiet window when the lowest
    /// bucket is not at level 0 and holds more than a few events, never true for a busy one.
    #[inline]
    pub fn none_by(&self, t: Time) -> bool {
        let b = self.low;
        if b >= BUCKETS {
            return true;
        }
        if self.bucket_start(b) > t {
            return true;
        }
        if b < FANOUT {
            return false;
        }
        // The bucket's events, a few at most: any at or before `t`?
        let tail = self.tail(b);
        let mut n = b as u32;
        for _ in 0..QUIET_WALK {
            n = self.node(n).next;
            if self.node(n).time <= t {
                return false;
            }
            if n == tail {
                return true;
            }
        }
        false
    }

}

impl<E> EventQueue<E, true> {
    /// Number of pending events.
    #[inline]
    pub fn len(&self) -> usize {
        self.pending
    }

    /// True when no event is pending.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Removes and returns the earliest event (ties: lowest sequence number).
    #[inline]
    pub fn pop(&mut self) -> Option<Scheduled<E>> {
        let (time, slot) = self.pop_until(Time::MAX)?;
        let seq = self.seqs[slot as usize];
        // SAFETY: `slot` was just popped, and is taken once.
        Some(Scheduled { time, seq, event: unsafe { self.take(slot) } })
    }
}

#[cfg(test)]
impl<E, const COUNTED: bool> EventQueue<E, COUNTED> {
    /// Checks every structural invariant; panics with a message on the first violation.
    /// Returns the number of pending events (what `len` counts when `COUNTED`).
    fn check_invariants(&self) -> usize {
        // Each pending event in the bucket of its time against `cur`, masks and levels
        // exactly the non-empty buckets, an empty bucket's tail its own node, equal times in
        // `seq` order within a bucket.
        let mut pending: Vec<u32> = vec![];
        let words = (0..WORDS).filter(|&w| self.masks[w] != 0).fold(0u32, |acc, w| acc | 1 << w);
        assert_eq!(self.words, words, "words");
        assert_eq!(self.masks[WORDS], 1, "sentinel word");
        assert_eq!(self.low, self.lowest(), "low");
        assert_eq!(self.low, (0..BUCKETS).find(|&b| self.tail(b) != b as u32).unwrap_or(BUCKETS), "low is the lowest");
        for k in 0..LEVELS {
            for d in 0..FANOUT {
                let b = k * FANOUT + d;
                let nodes = self.nodes_of(b);
                assert_eq!(nodes.is_empty(), self.tail(b) == b as u32, "bucket {b}: tail and mask disagree");
                for (i, &n) in nodes.iter().enumerate() {
                    assert!(n as usize >= BUCKETS, "a bucket's node in bucket {b}");
                    let t = self.node(n).time;
                    assert!(t >= self.cur, "event at {t} before cur {}", self.cur);
                    assert_eq!(bucket_of(t, level_of(t, self.cur)), b, "event at {t} misfiled");
                    if let Some(&p) = i.checked_sub(1).map(|j| &nodes[j]).filter(|_| COUNTED) {
                        let (pt, ps) = (self.node(p).time, self.seqs[p as usize - BUCKETS]);
                        assert!(pt != t || ps < self.seqs[n as usize - BUCKETS], "equal times out of seq order in bucket {b}");
                    }
                    pending.push(n - BUCKETS as u32);
                }
            }
        }
        // Pending slots and free slots partition the slab; live slots are filled, free ones empty.
        let mut owner = vec![0u8; self.slab.len()];
        for &s in &pending {
            owner[s as usize] += 1;
            assert!(!COUNTED || self.seqs[s as usize] < self.next_seq);
        }
        let mut f = self.free;
        while f != NO_FREE {
            assert!(f as usize >= BUCKETS && (f as usize) < self.nodes.len(), "free list holds node {f}");
            let slot = (f as usize) - BUCKETS;
            owner[slot] += 1;
            assert!(owner[slot] == 1, "free slot {slot} listed twice or also pending");
            f = self.node(f).next;
        }
        // Every stored link is an existing node's index (what the unchecked indexing needs).
        assert!(self.nodes.iter().all(|n| (n.next as usize) < self.nodes.len()), "a link beyond the nodes");
        assert_eq!(self.nodes.len(), BUCKETS + self.slab.len());
        assert_eq!(self.seqs.len(), if COUNTED { self.slab.len() } else { 0 });
        assert!(owner.iter().all(|&n| n == 1), "slab slots not partitioned: {owner:?}");
        assert_eq!(self.pending, if COUNTED { pending.len() } else { 0 });
        assert!(COUNTED || self.next_seq == 0, "an uncounted queue numbered its events");
        assert_eq!(self.peek_time(), pending.iter().map(|&s| self.node(BUCKETS as u32 + s).time).min());
        pending.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    #[test]
    fn bucket_at_is_the_bucket_of_the_level() {
        // Every highest differing bit against a few references, and random pairs.
        let mut rng = crate::Rng::new(9);
        let mut pairs: Vec<(Time, Time)> = vec![(0, 0), (Time::MAX, Time::MAX), (Time::MAX, 0), (255, 0), (256, 0), (256, 255)];
        for cur in [0, 1, 255, 0x1234_5678_9abc_def0, Time::MAX >> 1, Time::MAX - 1] {
            for bit in 0..64 {
                let t = cur | 1 << bit;
                pairs.extend([(t, cur), (t | ((1u64 << bit) - 1), cur), (cur.max(t ^ (1 << bit)), cur)]);
            }
        }
        for _ in 0..100_000 {
            let (a, b) = (rng.next_u64() >> rng.below(64), rng.next_u64() >> rng.below(64));
            pairs.push((a.max(b), a.min(b)));
        }
        for (t, cur) in pairs {
            assert!(t >= cur);
            assert_eq!(bucket_at(t, cur), bucket_of(t, level_of(t, cur)), "t {t:#x}, cur {cur:#x}");
        }
    }

    #[test]
    fn equal_times_pop_fifo() {
        let mut q = EventQueue::new();
        for i in 0..10 {
            q.push(5, i);
        }
        let order: Vec<i32> = std::iter::from_fn(|| q.pop().map(|s| s.event)).collect();
        assert_eq!(order, (0..10).collect::<Vec<_>>());
    }

    #[test]
    fn equal_times_stay_fifo_across_pops_and_pushes() {
        // Pushes at the popped time, into the bucket being popped, must still queue behind
        // the older events of that time.
        let mut q = EventQueue::new();
        for i in 0..20 {
            q.push(7, i);
        }
        let mut order = vec![];
        let mut next = 20;
        while let Some(s) = q.pop() {
            order.push(s.event);
            if next < 60 {
                q.push(7, next);
                next += 1;
            }
            q.check_invariants();
        }
        assert_eq!(order, (0..60).collect::<Vec<_>>());
    }

    #[test]
    fn len_and_peek_follow_pops_and_pushes() {
        let mut q = EventQueue::new();
        assert_eq!((q.len(), q.is_empty(), q.peek_time()), (0, true, None));
        assert_eq!(q.push(30, "c"), 0);
        assert_eq!(q.push(10, "a"), 1);
        assert_eq!(q.push(20, "b"), 2);
        assert_eq!(q.pop(), Some(Scheduled { time: 10, seq: 1, event: "a" }));
        assert_eq!((q.len(), q.is_empty(), q.peek_time()), (2, false, Some(20)));
        q.check_invariants();
        assert_eq!(q.push(15, "d"), 3);
        assert_eq!((q.len(), q.peek_time()), (3, Some(15)));
        q.check_invariants();
        let rest: Vec<_> = std::iter::from_fn(|| q.pop().map(|s| (s.time, s.seq, s.event))).collect();
        assert_eq!(rest, vec![(15, 3, "d"), (20, 2, "b"), (30, 0, "c")]);
        assert_eq!((q.len(), q.is_empty(), q.peek_time()), (0, true, None));
        assert_eq!(q.pop(), None);
        q.check_invariants();
        assert_eq!(q.push(1, "e"), 4, "sequence numbers keep counting");
    }

    #[test]
    fn far_future_events_and_the_top_level() {
        // Times that differ from each other only in high digits, up to the largest time.
        let mut q = EventQueue::new();
        let times = [Time::MAX, 1 << 63, 0, (1 << 63) + 1, 1 << 40, Time::MAX, 3, (1 << 60) - 1, 1 << 60, Time::MAX - 64];
        let mut want: Vec<(Time, u64)> = times.iter().map(|&t| (t, q.push(t, ()))).collect();
        q.check_invariants();
        want.sort();
        let mut got = vec![];
        while let Some(s) = q.pop() {
            got.push((s.time, s.seq));
            q.check_invariants();
            if s.time == 1 << 40 && s.seq == 4 {
                // Pushed at the popped time while far-future events wait: pops next.
                let seq = q.push(1 << 40, ());
                want.insert(want.iter().position(|w| w.0 > 1 << 40).unwrap(), (1 << 40, seq));
            }
        }
        assert_eq!(got, want);
    }

    #[test]
    fn a_bound_that_stops_short_moves_nothing() {
        // The earliest event shares a wide bucket with the bound: the bounded pop looks
        // into it and leaves it; a push after it, between the last pop and that event,
        // pops first.
        let mut q = EventQueue::new();
        q.push(10, 'a');
        q.push(5000, 'b');
        q.push(4100, 'c');
        assert_eq!(q.pop().map(|s| s.event), Some('a'));
        assert!(q.pop_until(4000).is_none());
        q.check_invariants();
        q.push(11, 'd');
        q.push(4100, 'e');
        q.check_invariants();
        let rest: Vec<_> = std::iter::from_fn(|| q.pop().map(|s| (s.time, s.event))).collect();
        assert_eq!(rest, vec![(11, 'd'), (4100, 'c'), (4100, 'e'), (5000, 'b')]);
    }

    #[test]
    fn a_push_into_the_past_rebuilds_the_wheel_in_order() {
        let mut q = EventQueue::new();
        for (i, t) in [100u64, 200, 100, 300, 250].into_iter().enumerate() {
            q.push(t, i);
        }
        assert_eq!(q.pop().map(|s| (s.time, s.event)), Some((100, 0)));
        // Earlier than the last pop (only a direct user of the queue can do this).
        q.push(50, 5);
        q.push(100, 6);
        q.check_invariants();
        let rest: Vec<_> = std::iter::from_fn(|| q.pop().map(|s| (s.time, s.event))).collect();
        assert_eq!(rest, vec![(50, 5), (100, 2), (100, 6), (200, 1), (250, 4), (300, 3)]);
    }

    #[test]
    fn a_hold_loop_matches_a_reference_map() {
        // Pop one, push one at an exponential delay (the hold model), with every tenth delay
        // zero (ties at the popped time) and every hundredth far ahead.
        let mut q = EventQueue::new();
        let mut reference: BTreeMap<(Time, u64), u32> = BTreeMap::new();
        let mut rng = crate::Rng::new(5);
        for i in 0..1024u32 {
            let t = rng.below(1_000_000);
            reference.insert((t, q.push(t, i)), i);
        }
        for i in 0..200_000u32 {
            let s = q.pop().unwrap();
            assert_eq!(Some(((s.time, s.seq), s.event)), reference.pop_first());
            let delay = match i % 100 { 0 => 1 << 45, n if n % 10 == 0 => 0, _ => rng.exp(1_000_000.0) as Time };
            reference.insert((s.time + delay, q.push(s.time + delay, i)), i);
            if i % 20_000 == 0 {
                q.check_invariants();
            }
        }
        q.check_invariants();
        while let Some(want) = reference.pop_first() {
            assert_eq!(q.pop().map(|s| ((s.time, s.seq), s.event)), Some(want));
        }
        assert!(q.is_empty());
    }

    #[test]
    fn none_by_never_calls_a_busy_window_quiet_and_sees_every_quiet_one_of_few_events() {
        // A hold loop of a varying population, asking at every step about windows ending
        // before, at and after the earliest pending time, and far ahead.
        let mut q = EventQueue::new();
        let mut reference: BTreeMap<(Time, u64), u32> = BTreeMap::new();
        let mut rng = crate::Rng::new(11);
        let (mut quiet, mut busy) = (0, 0);
        for i in 0..100_000u32 {
            let pending = reference.len();
            if pending == 0 || (rng.below(3) > 0 && pending < 2 + (i as usize / 7000) % 40) {
                let now = reference.first_key_value().map_or(0, |(&(t, _), _)| t);
                let base = q.cur.max(now.saturating_sub(1));
                let t = base + match rng.below(4) { 0 => 0, 1 => rng.below(300), 2 => rng.below(1 << 20), _ => rng.below(1 << 36) };
                reference.insert((t, q.push(t, i)), i);
            } else {
                let s = q.pop().unwrap();
                assert_eq!(Some(((s.time, s.seq), s.event)), reference.pop_first());
            }
            let min = reference.first_key_value().map(|(&(t, _), _)| t);
            for t in [min.map_or(0, |m| m.saturating_sub(1)), min.unwrap_or(0), min.map_or(5, |m| m + rng.below(1 << 30)), Time::MAX] {
                let truth = min.is_none_or(|m| m > t);
                let got = q.none_by(t);
                assert!(!got || truth, "step {i}: window to {t} called quiet with an event at {min:?}");
                if reference.len() <= QUIET_WALK {
                    assert_eq!(got, truth, "step {i}: window to {t}, earliest {min:?}, {} pending", reference.len());
                }
                if truth { quiet += 1 } else { busy += 1 }
            }
        }
        assert!(quiet > 10_000 && busy > 10_000, "both answers exercised: {quiet} quiet, {busy} busy");
    }

    #[test]
    fn pop_until_leaves_later_events_untouched() {
        let mut q = EventQueue::new();
        q.push(10, 'a');
        q.push(20, 'b');
        assert_eq!(q.pop_tagged_until(15), Some((10, 0, 'a')));
        assert!(q.pop_until(15).is_none());
        assert!(q.pop_until(19).is_none());
        assert_eq!(q.len(), 1);
        q.check_invariants();
        q.push(20, 'c');
        assert_eq!(q.pop(), Some(Scheduled { time: 20, seq: 1, event: 'b' }));
        assert_eq!(q.pop_tagged_until(20), Some((20, 0, 'c')));
        assert!(q.pop_until(Time::MAX).is_none());
    }

    #[test]
    fn payloads_are_dropped_exactly_once() {
        use std::rc::Rc;
        let token = Rc::new(());
        {
            let mut q = EventQueue::new();
            for t in 0..100u64 {
                q.push((t * 7919) % 101, token.clone());
            }
            for _ in 0..40 {
                drop(q.pop());
            }
            // Dropped with 60 pending.
            assert_eq!(Rc::strong_count(&token), 61);
        }
        assert_eq!(Rc::strong_count(&token), 1);
    }

    #[test]
    fn many_events_come_out_sorted() {
        let mut rng = crate::Rng::new(3);
        let mut q = EventQueue::new();
        let mut reference = vec![];
        for i in 0..20_000u32 {
            let t = rng.below(5_000);
            let seq = q.push(t, i);
            reference.push((t, seq, i));
        }
        reference.sort();
        let out: Vec<_> = std::iter::from_fn(|| q.pop().map(|s| (s.time, s.seq, s.event))).collect();
        assert_eq!(out, reference);
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

        /// Random interleavings of pushes, pops and the bounded pop agree with a reference
        /// ordered map keyed by `(time, seq)`, and every invariant holds after every step.
        /// Small time ranges force many ties; the hold-like pushes (`now + delay`) keep the
        /// wheel's monotone case, pushes far ahead fill its high levels, and pushes before
        /// the last pop exercise its rebuild.
        #[test]
        fn matches_a_reference_model(
            ops in proptest::collection::vec((0u8..6, 0u64..40), 0..400),
            spread in prop_oneof![Just(3u64), Just(40), Just(1_000_000)],
        ) {
            let mut q = EventQueue::new();
            // The same operations on a queue that stores no sequence numbers (a
            // `Simulation`'s): it must pop the same events in the same order.
            let mut q2: EventQueue<u32, false> = EventQueue::new();
            let mut reference: BTreeMap<(Time, u64), u32> = BTreeMap::new();
            let mut next_seq = 0u64;
            let mut now = 0;
            // The tag each payload was pushed with.
            let mut tag_of = vec![0u32; ops.len()];
            for (i, (op, x)) in ops.into_iter().enumerate() {
                tag_of[i] = x as u32;
                let payload = i as u32;
                match op {
                    // Push at an arbitrary time (may be before `now`: the queue allows it, and
                    // rebuilds the wheel).
                    0 => {
                        let t = x * spread / 40;
                        q.push_tagged(t, x as u32, payload);
                        prop_assert_eq!(q.next_seq, next_seq + 1);
                        q2.push_tagged(t, x as u32, payload);
                        reference.insert((t, next_seq), payload);
                        next_seq += 1;
                    }
                    // Push relative to the last popped time, as handlers do: at it (ties with
                    // older events of that time), near it, or far ahead (high levels).
                    1 | 2 => {
                        let t = match x % 4 { 0 => now, 1 | 2 => now + x % spread, _ => now.saturating_add((x + 1) << (20 + x % 44)) };
                        q.push_tagged(t, x as u32, payload);
                        prop_assert_eq!(q.next_seq, next_seq + 1);
                        q2.push_tagged(t, x as u32, payload);
                        reference.insert((t, next_seq), payload);
                        next_seq += 1;
                    }
                    3 | 4 => {
                        let got = q.pop();
                        let want = reference.pop_first().map(|((time, seq), event)| Scheduled { time, seq, event });
                        if let Some(s) = &got { now = s.time; }
                        prop_assert_eq!(q2.pop_tagged_until(Time::MAX), want.clone().map(|s| (s.time, tag_of[s.event as usize], s.event)));
                        prop_assert_eq!(got, want);
                    }
                    _ => {
                        let until = now.saturating_add(x * spread / 40);
                        let got = q.pop_tagged_until(until);
                        let want = match reference.first_key_value() {
                            Some((&(t, _), _)) if t <= until => reference.pop_first().map(|((t, _), e)| (t, tag_of[e as usize], e)),
                            _ => None,
                        };
                        if let Some((t, _, _)) = got { now = t; }
                        prop_assert_eq!(q2.pop_tagged_until(until), got);
                        prop_assert_eq!(got, want);
                    }
                }
                prop_assert_eq!(q.check_invariants(), reference.len());
                prop_assert_eq!(q2.check_invariants(), reference.len());
                prop_assert_eq!(q2.peek_time(), q.peek_time());
                prop_assert_eq!(q.len(), reference.len());
                prop_assert_eq!(q.is_empty(), reference.is_empty());
                prop_assert_eq!(q.peek_time(), reference.keys().next().map(|k| k.0));
            }
            // Drain: the rest comes out in reference order.
            while let Some(((time, seq), event)) = reference.pop_first() {
                prop_assert_eq!(q.pop(), Some(Scheduled { time, seq, event }));
                prop_assert_eq!(q2.pop_tagged_until(Time::MAX), Some((time, tag_of[event as usize], event)));
            }
            prop_assert_eq!(q.pop(), None);
            prop_assert!(q2.pop_tagged_until(Time::MAX).is_none());
        }
    }
}

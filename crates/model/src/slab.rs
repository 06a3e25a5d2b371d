//! Slots for the parts of an event too large to travel in it: the event carries a 4-byte
//! [`Held`] handle, the value waits in a [`Slab`] owned by the model (no allocation per
//! event: freed slots are reused, most recently freed first, so the slot an event fills is
//! usually still in the cache). Keeps the model's event ([`crate::event::Ev`]) in one
//! cache line (docs/performance.md, "Event size").

use std::fmt;
use std::marker::PhantomData;

/// A value of type `T` held in a [`Slab`]; taking it back consumes the handle, so a value
/// is taken at most once. Not `Clone`: one handle per value.
pub struct Held<T> {
    slot: u32,
    _t: PhantomData<fn() -> T>,
}

impl<T> fmt::Debug for Held<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Held({})", self.slot)
    }
}

/// Values waiting in numbered slots.
#[derive(Debug)]
pub struct Slab<T> {
    slots: Vec<T>,
    /// Free slots, the most recently freed last.
    free: Vec<u32>,
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Slab { slots: Vec::new(), free: Vec::new() }
    }
}

impl<T: Copy> Slab<T> {
    /// Stores `v`; the handle takes it back.
    #[inline]
    pub fn put(&mut self, v: T) -> Held<T> {
        let slot = match self.free.pop() {
            Some(s) => {
                self.slots[s as usize] = v;
                s
            }
            None => {
                let s = u32::try_from(self.slots.len()).expect("more than 2^32 values held at once");
                self.slots.push(v);
                s
            }
        };
        Held { slot, _t: PhantomData }
    }

    /// The value `h` holds, its slot freed.
    #[inline]
    pub fn take(&mut self, h: Held<T>) -> T {
        let v = self.slots[h.slot as usize];
        self.free.push(h.slot);
        v
    }

    /// Asks the processor to bring `h`'s value into the cache (a hint).
    #[inline]
    pub fn prefetch(&self, h: &Held<T>) {
        if let Some(v) = self.slots.get(h.slot as usize) {
            let p = v as *const T as *const i8;
            #[cfg(target_arch = "x86_64")]
            // SAFETY: a prefetch is a hint: it reads nothing into the program and cannot
            // fault; `p` points at a slot anyway.
            unsafe {
                use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
                _mm_prefetch::<_MM_HINT_T0>(p);
                _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(std::mem::size_of::<T>().max(1) - 1));
            }
            #[cfg(not(target_arch = "x86_64"))]
            let _ = p;
        }
    }

    /// Values held now.
    pub fn len(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    /// True when no value is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_come_back_and_slots_are_reused_last_freed_first() {
        let mut s: Slab<u64> = Slab::default();
        let a = s.put(10);
        let b = s.put(20);
        let c = s.put(30);
        assert_eq!(s.len(), 3);
        assert_eq!(s.take(b), 20);
        assert_eq!(s.take(a), 10);
        assert_eq!(s.len(), 1);
        // The last freed slot (a's) is filled first, then b's; no new slot.
        let d = s.put(40);
        let e = s.put(50);
        assert_eq!(format!("{d:?} {e:?}"), "Held(0) Held(1)");
        assert_eq!(s.slots.len(), 3);
        assert_eq!(s.take(c), 30);
        assert_eq!(s.take(e), 50);
        assert_eq!(s.take(d), 40);
        assert!(s.is_empty());
    }

    #[test]
    fn a_handle_is_four_bytes() {
        assert_eq!(std::mem::size_of::<Held<[u64; 16]>>(), 4);
    }
}

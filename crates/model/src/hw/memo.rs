//! Small memos of a pure function of a packet's shape: a port serialises few shapes in
//! turn (a stream's data trains and its ACKs), so remembering the last few turns a float
//! conversion per packet into a compare or two, with exactly the value the function gives.

/// The last two `(key, value)` pairs asked for; `recent` is the slot asked for last, so a
/// new key replaces the other one (the least recently used), and a hit moves nothing.
#[derive(Debug, Clone, Copy)]
pub struct Memo2<K, V> {
    slots: [(K, V); 2],
    recent: usize,
}

impl<K: PartialEq + Copy, V: Copy> Memo2<K, V> {
    /// A memo holding `empty` in both slots: a key that is never asked for (or whose value
    /// `empty` holds truly).
    pub fn new(empty: (K, V)) -> Self {
        Memo2 { slots: [empty; 2], recent: 0 }
    }

    /// The value for `key`: remembered, or `f()` (then remembered, the entry used less
    /// recently dropped).
    #[inline(always)]
    pub fn get_or(&mut self, key: K, f: impl FnOnce() -> V) -> V {
        if self.slots[0].0 == key {
            self.recent = 0;
            return self.slots[0].1;
        }
        if self.slots[1].0 == key {
            self.recent = 1;
            return self.slots[1].1;
        }
        let v = f();
        self.recent ^= 1;
        self.slots[self.recent] = (key, v);
        v
    }
}

/// The last `N` `(key, value)` pairs computed, replaced in turn (the oldest computed goes):
/// for a port that carries more shapes than two (several streams' trains of a few lengths).
#[derive(Debug, Clone, Copy)]
pub struct MemoN<K, V, const N: usize> {
    slots: [(K, V); N],
    next: usize,
}

impl<K: PartialEq + Copy, V: Copy, const N: usize> MemoN<K, V, N> {
    /// A memo holding `empty` in every slot: a key that is never asked for (or whose value
    /// `empty` holds truly).
    pub fn new(empty: (K, V)) -> Self {
        MemoN { slots: [empty; N], next: 0 }
    }

    /// The value for `key`: remembered, or `f()` (then remembered in place of the entry
    /// computed longest ago).
    #[inline(always)]
    pub fn get_or(&mut self, key: K, f: impl FnOnce() -> V) -> V {
        if let Some(&(_, v)) = self.slots.iter().find(|s| s.0 == key) {
            return v;
        }
        let v = f();
        self.slots[self.next] = (key, v);
        self.next = (self.next + 1) % N;
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_remembered_key_is_not_computed_again_and_the_third_key_drops_the_least_recent() {
        let mut m = Memo2::new((0u64, 0u64));
        let calls = std::cell::Cell::new(0);
        let get = |m: &mut Memo2<u64, u64>, k: u64| m.get_or(k, || { calls.set(calls.get() + 1); k * 10 });
        assert_eq!(get(&mut m, 1), 10);
        assert_eq!(get(&mut m, 2), 20);
        assert_eq!(get(&mut m, 1), 10);
        assert_eq!(get(&mut m, 3), 30); // drops 2, used less recently than 1
        assert_eq!(get(&mut m, 1), 10);
        assert_eq!(get(&mut m, 3), 30);
        assert_eq!(get(&mut m, 2), 20); // drops 1
        assert_eq!(get(&mut m, 3), 30);
        assert_eq!(get(&mut m, 1), 10); // drops 2
        assert_eq!(calls.get(), 5);
    }

    #[test]
    fn four_keys_in_turn_are_computed_once_and_a_fifth_drops_the_first_computed() {
        let mut m: MemoN<u64, u64, 4> = MemoN::new((0, 0));
        let calls = std::cell::Cell::new(0);
        let get = |m: &mut MemoN<u64, u64, 4>, k: u64| m.get_or(k, || { calls.set(calls.get() + 1); k * 10 });
        for _ in 0..3 {
            for k in 1..=4 {
                assert_eq!(get(&mut m, k), k * 10);
            }
        }
        assert_eq!(get(&mut m, 5), 50); // drops 1
        assert_eq!(get(&mut m, 2), 20);
        assert_eq!(get(&mut m, 1), 10); // drops 2
        assert_eq!(get(&mut m, 2), 20); // drops 3
        assert_eq!(calls.get(), 7);
    }
}

//! What a message of a size costs on one link, in the engine's units, remembered: a
//! replay sends millions of messages of the few hundred sizes its trace holds, and each
//! costs a search of the cost table's size grid, three interpolations and three
//! conversions to picoseconds. A direct-mapped memo keyed by the size returns the same
//! values (a pure function of the size; a miss computes and stores them).

use crate::netcost::{MsgCost, NetCost};
use interlab_kernel::{Time, PS_PER_US};

/// Microseconds to picoseconds, rounded (negative: 0).
pub(crate) fn us(x: f64) -> Time {
    (x.max(0.0) * PS_PER_US as f64).round() as Time
}

/// One message's costs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Msg {
    /// The cost table's values, us.
    pub cost: MsgCost,
    /// `us(send_cpu_us)`, `us(recv_cpu_us)`.
    pub send_cpu: Time,
    pub recv_cpu: Time,
    /// The latency not spent in either end's CPU, us (at least 0).
    pub wire_us: f64,
    /// `us(wire_us)`.
    pub wire: Time,
}

impl Msg {
    fn hot(&self) -> Hot {
        Hot { send_cpu: self.send_cpu, recv_cpu: self.recv_cpu, wire: self.wire }
    }

    fn of(cost: MsgCost) -> Msg {
        let wire_us = (cost.latency_us - cost.send_cpu_us - cost.recv_cpu_us).max(0.0);
        Msg { cost, send_cpu: us(cost.send_cpu_us), recv_cpu: us(cost.recv_cpu_us), wire_us, wire: us(wire_us) }
    }
}

/// Slots of the memo (a power of two).
const SLOTS: usize = 256;

/// What every message reads of its costs: [`Msg`]'s picosecond fields.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Hot {
    pub send_cpu: Time,
    pub recv_cpu: Time,
    pub wire: Time,
}

#[derive(Clone, Copy)]
struct Slot {
    /// The size the slot holds, plus one (0: empty; a size of `u64::MAX` is never kept).
    key: u64,
    hot: Hot,
}

/// The memo of one link's cost table. A slot's key and picosecond costs (32 bytes, two
/// slots a cache line) apart from the rest of its [`Msg`], which only a message paying an
/// SDP idle round trip reads: the whole `Msg` beside its key (72 bytes) made three links'
/// memos 55 KB, more than the first-level cache.
pub(crate) struct MsgMemo {
    slots: Vec<Slot>,
    /// Each slot's whole `Msg`.
    msgs: Vec<Msg>,
}

impl MsgMemo {
    pub(crate) fn new() -> MsgMemo {
        let empty = Msg::of(MsgCost { latency_us: 0.0, send_cpu_us: 0.0, recv_cpu_us: 0.0 });
        MsgMemo { slots: vec![Slot { key: 0, hot: empty.hot() }; SLOTS], msgs: vec![empty; SLOTS] }
    }

    /// The picosecond costs of a message of `bytes` on a link whose table is `cost` (always
    /// those of `Msg::of(cost.at(bytes))`: the memo must serve one table only), and the
    /// slot that holds its whole `Msg` (see [`MsgMemo::msg`]) until the next `get`.
    #[inline]
    pub(crate) fn get(&mut self, cost: &NetCost, bytes: u64) -> (Hot, usize) {
        let key = bytes.wrapping_add(1);
        let i = (bytes.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - SLOTS.trailing_zeros())) as usize;
        let s = &mut self.slots[i];
        if s.key == key && key != 0 {
            return (s.hot, i);
        }
        let m = Msg::of(cost.at(bytes));
        *s = Slot { key, hot: m.hot() };
        self.msgs[i] = m;
        (m.hot(), i)
    }

    /// The whole `Msg` in slot `i` (as [`MsgMemo::get`] returned it).
    #[inline]
    pub(crate) fn msg(&self, i: usize) -> Msg {
        self.msgs[i]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::netcost::Protocol;
    use interlab_kernel::Rng;

    /// Sizes that hit, miss, collide and the extremes: always what the table gives.
    #[test]
    fn the_memo_returns_what_the_table_gives() {
        let c = NetCost::from_split_points(Protocol::Eth, &[(1, 10.0, 1.0, 3.0), (1001, 20.0, 3.0, 5.0), (5001, 70.0, 9.0, 4.0), (9000, 1.0, 9.0, 4.0)], 50.0, None);
        let mut m = MsgMemo::new();
        let mut rng = Rng::stream(3, 0);
        let mut hits = 0;
        for i in 0..100_000u64 {
            let b = match i % 4 {
                0 => rng.below(600),
                1 => rng.below(20_000),
                2 => [0, 1, u64::MAX, u64::MAX - 1][rng.below(4) as usize],
                _ => rng.below(1 << 40),
            };
            let before = m.slots.iter().filter(|s| s.key == b.wrapping_add(1) && s.key != 0).count();
            hits += before;
            let want = Msg::of(c.at(b));
            let (hot, i) = m.get(&c, b);
            assert_eq!((hot, m.msg(i)), (want.hot(), want), "{b} B");
        }
        assert!(hits > 10_000, "the memo was hit: {hits}");
        // The wire share is never negative (here latency 1 us at 9000 B, below the CPU).
        assert_eq!(m.get(&c, 9000).0.wire, 0);
    }
}

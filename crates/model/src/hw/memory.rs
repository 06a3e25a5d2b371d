//! A host's memory system as one resource shared by all its CPUs and its adapter: the
//! memory controller every cache miss, write-back and DMA transfer crosses.
//!
//! What a copy moves through it depends on where its buffers live ([`copy_traffic`]): a
//! source beyond the cache is read from memory (one byte per byte); a destination beyond the
//! cache is read for ownership and later written back (two); data the adapter sends or
//! received crosses once more by DMA. A buffer that stays in the cache costs nothing. So a
//! buffered-copy send (a cached user buffer into a private ring far larger than the cache,
//! then read by the adapter) moves three bytes per byte, and the receive (the adapter writes
//! the ring, the CPU reads it into the cached user buffer) two.
//!
//! The rate is booked, never exceeded: a copy takes, over time, what the copies booked before
//! it left free, up to its own CPU-limited rate. Copies are booked when they start (the model
//! fixes a copy's end when it begins), so the one that started first keeps its rate and a
//! copy starting beside it gets the rest; the sum of all rates never exceeds the memory
//! system's, whatever the number of cores copying.

use interlab_kernel::Time;

/// Memory bandwidth shared by the copies (and the adapter traffic they carry) of one node.
#[derive(Debug, Clone)]
pub struct Memory {
    /// Reads plus writes the memory system sustains, bytes per ps.
    bytes_per_ps: f64,
    /// Traffic booked by copies: (from, to, bytes per ps), ps.
    booked: Vec<(Time, Time, f64)>,
    /// No copy starts before this (the node's current time), ps.
    floor: Time,
    /// Scratch space of [`Memory::copy_end`] (kept so that a copy beside others allocates
    /// nothing): the instants at which the booked rate changes, and the new copy's pieces.
    edges: Vec<Time>,
    pieces: Vec<(Time, Time, f64)>,
}

impl Memory {
    /// A memory system that sustains `mbytes_per_s` MB/s of reads plus writes.
    pub fn new(mbytes_per_s: f64) -> Self {
        Memory { bytes_per_ps: mbytes_per_s * 1e-6, booked: Vec::new(), floor: 0, edges: Vec::new(), pieces: Vec::new() }
    }

    /// The node's time has reached `now`: bookings that ended before it are forgotten.
    pub fn advance(&mut self, now: Time) {
        if now > self.floor {
            self.floor = now;
            if self.booked.iter().any(|b| b.1 <= now) {
                self.booked.retain(|b| b.1 > now);
            }
        }
    }

    /// Bytes per ps booked at instant `at`.
    fn used(&self, at: Time) -> f64 {
        self.booked.iter().filter(|b| b.0 <= at && at < b.1).map(|b| b.2).sum()
    }

    /// A copy that starts at `t`, would take `cpu_ps` on an idle memory system and moves
    /// `traffic` bytes through it ([`copy_traffic`]): returns when it ends. It moves them at
    /// its CPU-limited rate or at what the copies booked before it leave free, whichever is
    /// lower.
    pub fn copy_end(&mut self, t: Time, traffic: u64, cpu_ps: Time) -> Time {
        let traffic = traffic as f64;
        if traffic == 0.0 {
            return t + cpu_ps;
        }
        let want = if cpu_ps > 0 { traffic / cpu_ps as f64 } else { f64::INFINITY };
        if self.booked.iter().all(|b| b.1 <= t) {
            // The memory system is free from `t` on: one piece.
            let rate = want.min(self.bytes_per_ps);
            let end = t + ((traffic / rate).ceil() as Time).max(1);
            self.booked.push((t, end, rate));
            return end.max(t + cpu_ps);
        }
        // Instants at which the booked rate changes, from `t` on.
        let mut edges = std::mem::take(&mut self.edges);
        edges.clear();
        edges.extend(self.booked.iter().flat_map(|b| [b.0, b.1]).filter(|&e| e > t));
        edges.sort_unstable();
        edges.dedup();
        let (mut at, mut left) = (t, traffic);
        let mut pieces = std::mem::take(&mut self.pieces);
        pieces.clear();
        let mut i = 0;
        let end = loop {
            let rate = want.min((self.bytes_per_ps - self.used(at)).max(0.0));
            let next = edges.get(i).copied();
            if rate > 0.0 {
                let need = (left / rate).ceil() as Time;
                if next.is_none_or(|n| at + need <= n) {
                    pieces.push((at, at + need.max(1), rate));
                    break at + need.max(1);
                }
            }
            let n = next.expect("the last interval has the whole memory system free");
            if rate > 0.0 {
                left -= rate * (n - at) as f64;
                pieces.push((at, n, rate));
            }
            at = n;
            i += 1;
        };
        self.booked.extend_from_slice(&pieces);
        (self.edges, self.pieces) = (edges, pieces);
        end.max(t + cpu_ps)
    }
}

/// Bytes a copy of `bytes` moves through the memory system: `src_miss` and `dst_miss` are the
/// parts of its source and destination beyond the cache (0 to 1; a missed destination line is
/// read for ownership and written back), `dma` whether the adapter moves the data through
/// memory too (it sends the copy, or it wrote the source).
pub fn copy_traffic(bytes: u64, src_miss: f64, dst_miss: f64, dma: bool) -> u64 {
    let per_byte = src_miss + 2.0 * dst_miss + if dma { 1.0 } else { 0.0 };
    (bytes as f64 * per_byte).round() as u64
}

/// A copy on a node with or without a shared memory limit (see [`Memory`]).
pub fn copy_end(memory: Option<&mut Memory>, t: Time, traffic: u64, cpu_ps: Time) -> Time {
    match memory {
        Some(m) => m.copy_end(t, traffic, cpu_ps),
        None => t + cpu_ps,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_share_the_memory_system_without_exceeding_it() {
        // 1000 MB/s of traffic: one core alone copies at most 500 MB/s.
        let mut m = Memory::new(1000.0);
        let cpu = 2_500_000_000; // 1 MB at 400 MB/s, ps
        let a = m.copy_end(0, 2_000_000, cpu);
        assert_eq!(a, cpu); // 800 MB/s of traffic: memory alone would take 2 ms
        // A second copy beside it gets the 200 MB/s left until the first ends, then all of
        // it up to its own 800: 2 MB of traffic, 0.5 MB by 2.5 ms, the rest at 800 MB/s.
        let b = m.copy_end(0, 2_000_000, cpu);
        assert_eq!(b, 4_375_000_000);
        // Once both are done, a copy has the memory to itself again.
        m.advance(b);
        assert_eq!(m.copy_end(b, 2_000_000, cpu), b + cpu);
        // Sending from a cached buffer through a ring beyond the cache: 3 MB at 1000 MB/s.
        let c = 2 * b + cpu;
        m.advance(c);
        assert_eq!(copy_traffic(1_000_000, 0.0, 1.0, true), 3_000_000);
        assert_eq!(copy_traffic(1_000_000, 1.0, 0.0, true), 2_000_000);
        assert_eq!(m.copy_end(c, copy_traffic(1_000_000, 0.0, 1.0, true), cpu), c + 3_000_000_000);
        assert_eq!(copy_end(None, 5, 1_000_000, 7), 12);
    }
}

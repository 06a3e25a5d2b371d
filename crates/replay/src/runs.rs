//! Where the replay keeps the programs of requests in progress: each in a run of places in
//! one chunk of steps, the runs of finished programs handed to later ones of their size
//! class. No allocation per request (a program was a boxed slice of its own: a malloc and a
//! free per request), and a step is found through a table of a few chunks that stays in
//! the caches, not through a pointer per program. Chunks, not one growing vector: growing
//! it copied megabytes and raised `reproduce`'s peak memory.

use crate::program::Code;

/// Steps of a chunk (a program longer than this has a chunk of its own length).
const CHUNK_STEPS: usize = 1 << 13;

/// Runs come in multiples of this many steps: a finished program's run serves any later
/// one of its size class (by exact length, the many lengths of TPC-W's pages each kept
/// runs of their own).
const RUN_STEPS: usize = 16;

/// A run of places: (chunk, first place in it).
pub(crate) type Run = (u32, u32);

/// The size class of a program of `len` steps: the multiples of [`RUN_STEPS`] its run holds.
fn class(len: usize) -> usize {
    len.div_ceil(RUN_STEPS)
}

/// The chunks of steps and the free runs.
pub(crate) struct Runs {
    chunks: Vec<Box<[Code]>>,
    /// Steps used of the last chunk.
    fill: usize,
    /// Free runs by size class.
    free: Vec<Vec<Run>>,
}

impl Runs {
    pub(crate) fn new() -> Runs {
        Runs { chunks: Vec::new(), fill: 0, free: Vec::new() }
    }

    /// Stores `steps` in a run (a free one of their class, else a new one); returns it.
    pub(crate) fn put(&mut self, steps: &[Code]) -> Run {
        let c = class(steps.len());
        if self.free.len() <= c {
            self.free.resize_with(c + 1, Vec::new);
        }
        let (chunk, first) = match self.free[c].pop() {
            Some(r) => r,
            None => {
                let n = c * RUN_STEPS;
                if self.chunks.last().is_none_or(|k| self.fill + n > k.len()) {
                    self.chunks.push(vec![Code::JOIN; n.max(CHUNK_STEPS)].into_boxed_slice());
                    self.fill = 0;
                }
                self.fill += n;
                ((self.chunks.len() - 1) as u32, (self.fill - n) as u32)
            }
        };
        self.chunks[chunk as usize][first as usize..first as usize + steps.len()].copy_from_slice(steps);
        (chunk, first)
    }

    /// Hands `run`, which held a program of `len` steps, to later programs of its class.
    pub(crate) fn free(&mut self, run: Run, len: usize) {
        self.free[class(len)].push(run);
    }

    /// Chunk `k`'s steps (a program's step is at its run's first place plus its index).
    #[inline(always)]
    pub(crate) fn chunk(&self, k: u32) -> &[Code] {
        &self.chunks[k as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::program::{Program, Step};
    use interlab_kernel::Rng;

    /// Programs of random lengths (some longer than a chunk) put and freed in random order
    /// read back intact while in use, no two in use overlap, and freed runs are reused
    /// (the chunks stay near the peak of the steps in use).
    #[test]
    fn programs_read_back_intact_and_runs_are_reused() {
        let mut rng = Rng::stream(11, 0);
        let mut runs = Runs::new();
        // In use: (run, the steps put there).
        let mut live: Vec<(Run, Vec<Code>)> = Vec::new();
        let (mut peak, mut in_use, mut id) = (0usize, 0usize, 0u64);
        for round in 0..20_000 {
            if live.len() < 300 && (rng.below(2) == 0 || live.is_empty()) {
                let len = if round % 997 == 0 { CHUNK_STEPS + 5 } else { rng.below(200) as usize };
                let mut p = Program::new();
                p.extend((0..len).map(|i| Step::Cpu { tier: (i % 4) as u8, ns: id + i as u64 }));
                let steps = p.codes().to_vec();
                id += 1000;
                let r = runs.put(&steps);
                in_use += class(len) * RUN_STEPS;
                peak = peak.max(in_use);
                live.push((r, steps));
            } else {
                let (r, steps) = live.swap_remove(rng.below(live.len() as u64) as usize);
                assert_eq!(&runs.chunk(r.0)[r.1 as usize..r.1 as usize + steps.len()], &steps[..]);
                runs.free(r, steps.len());
                in_use -= class(steps.len()) * RUN_STEPS;
            }
            if round % 1000 == 0 {
                for (r, steps) in &live {
                    assert_eq!(&runs.chunk(r.0)[r.1 as usize..r.1 as usize + steps.len()], &steps[..]);
                }
                let mut spans: Vec<(u32, u32, u32)> = live.iter().map(|(r, s)| (r.0, r.1, r.1 + (class(s.len()) * RUN_STEPS) as u32)).collect();
                spans.sort();
                assert!(spans.windows(2).all(|w| w[0].0 != w[1].0 || w[0].2 <= w[1].1), "runs in use overlap");
            }
        }
        let total: usize = runs.chunks.iter().map(|c| c.len()).sum();
        assert!(total < 4 * peak + 2 * CHUNK_STEPS, "{total} steps in chunks for a peak of {peak} in use");
    }
}

//! A host's memory system as one resource shared by all its CPUs: the front-side bus and
//! memory controller every copy crosses. A copy of `n` bytes moves `2n` bytes through it (the
//! read and the write). Cores copying at the same time share its rate equally (processor
//! sharing, judged when each copy starts), so a second core adds copy throughput only while
//! the memory system has room.

use interlab_kernel::Time;

/// Memory bandwidth shared by the copies of every core of one node.
#[derive(Debug, Clone)]
pub struct Memory {
    /// Reads plus writes the memory system sustains, MB/s.
    mbytes_per_s: f64,
    /// When each core's current copy ends, ps.
    copying_until: Vec<Time>,
}

impl Memory {
    /// A memory system of `cores` CPUs that sustains `mbytes_per_s` MB/s of reads plus writes.
    pub fn new(mbytes_per_s: f64, cores: usize) -> Self {
        Memory { mbytes_per_s, copying_until: vec![0; cores.max(1)] }
    }

    /// A copy of `bytes` by `core` that starts at `t` and would take `cpu_ps` on an idle
    /// memory system: returns when it ends. The copy gets an equal share of the memory
    /// system with the cores still copying at `t`.
    pub fn copy_end(&mut self, core: usize, t: Time, bytes: u64, cpu_ps: Time) -> Time {
        let core = core % self.copying_until.len();
        let sharing = 1 + self.copying_until.iter().enumerate().filter(|&(c, &u)| c != core && u > t).count();
        let share_mbytes_per_s = self.mbytes_per_s / sharing as f64;
        let mem_ps = (2.0 * bytes as f64 * 1e6 / share_mbytes_per_s).round() as Time;
        let end = t + cpu_ps.max(mem_ps);
        self.copying_until[core] = end;
        end
    }
}

/// A copy on a node with or without a shared memory limit (see [`Memory`]).
pub fn copy_end(memory: Option<&mut Memory>, core: usize, t: Time, bytes: u64, cpu_ps: Time) -> Time {
    match memory {
        Some(m) => m.copy_end(core, t, bytes, cpu_ps),
        None => t + cpu_ps,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_copier_runs_at_its_own_speed_two_share_the_memory() {
        // 1000 MB/s of traffic: one core alone copies at most 500 MB/s.
        let mut m = Memory::new(1000.0, 2);
        let cpu = 2_500_000_000; // 1 MB at 400 MB/s, ps
        let a = m.copy_end(0, 0, 1_000_000, cpu);
        assert_eq!(a, cpu); // memory alone would take 2 ms
        // The second core copies while the first does: 500 MB/s of traffic each, 4 ms.
        let b = m.copy_end(1, 0, 1_000_000, cpu);
        assert_eq!(b, 4_000_000_000);
        // Once both are done, a copy has the memory to itself again.
        assert_eq!(m.copy_end(1, b, 1_000_000, cpu), b + cpu);
        assert_eq!(copy_end(None, 0, 5, 1_000_000, 7), 12);
    }
}

//! Host CPUs. A node's work runs on its cores (processes bound to a core, the interrupt
//! context on the last core), each busy until some time. Normally the cores are the node's
//! own. With profile `[host] shared = 1` every node runs on one machine (a client and a
//! daemon on one host: loopback, or network namespaces of one kernel): node `i`'s core `c`
//! is then the machine's CPU `(c + i) mod n`. Two nodes' applications start on different
//! CPUs, and one node's interrupt core is the CPU where the other's application runs, as
//! loopback receive processing runs in the sending process's context.

use interlab_kernel::Time;
use std::cell::RefCell;
use std::rc::Rc;

/// One machine's CPUs shared by several nodes: when each is next free, picoseconds.
pub type CpuPool = Rc<RefCell<Vec<Time>>>;

/// The cores of one node.
#[derive(Debug)]
pub struct Cores {
    /// Per core: busy until, ps (own cores).
    own: Vec<Time>,
    /// The shared machine and this node's rotation, if any.
    pool: Option<(CpuPool, usize)>,
}

/// Work in progress on a core.
#[derive(Debug, Clone, Copy)]
pub struct Slot {
    core: usize,
}

impl Cores {
    /// `n` cores of the node's own.
    pub fn own(n: usize) -> Cores {
        Cores { own: vec![0; n.max(1)], pool: None }
    }

    /// The machine's CPUs in `pool`, this node's core 0 being CPU `offset`.
    pub fn shared(pool: CpuPool, offset: usize) -> Cores {
        let n = pool.borrow().len().max(1);
        Cores { own: vec![0; n], pool: Some((pool, offset % n)) }
    }

    /// A new machine of `n` CPUs, all free.
    pub fn pool(n: usize) -> CpuPool {
        Rc::new(RefCell::new(vec![0; n.max(1)]))
    }

    /// Cores the node's processes can be bound to.
    pub fn len(&self) -> usize {
        self.own.len()
    }

    /// Never true (a node has at least one core); for the `len` convention.
    pub fn is_empty(&self) -> bool {
        self.own.is_empty()
    }

    /// When core `c` is next free, ps.
    pub fn free_at(&self, c: usize) -> Time {
        match &self.pool {
            Some((p, off)) => {
                let p = p.borrow();
                p[(c + off) % p.len()]
            }
            None => self.own[c],
        }
    }

    fn set(&mut self, c: usize, t: Time) {
        match &self.pool {
            Some((p, off)) => {
                let mut p = p.borrow_mut();
                let n = p.len();
                p[(c + off) % n] = t;
            }
            None => self.own[c] = t,
        }
    }

    /// Starts work on core `c` no earlier than `ready`: the slot and the start time.
    pub fn start(&mut self, c: usize, ready: Time) -> (Slot, Time) {
        let t = ready.max(self.free_at(c));
        self.set(c, t);
        (Slot { core: c }, t)
    }

    /// The work in `s` ends at `end` (the core stays busy until then, or later if work
    /// nested inside it already moved it on).
    pub fn finish(&mut self, s: Slot, end: Time) {
        let t = self.free_at(s.core).max(end);
        self.set(s.core, t);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_cores_are_independent_timelines() {
        let mut c = Cores::own(2);
        let (s, t) = c.start(1, 5);
        assert_eq!(t, 5);
        c.finish(s, 9);
        assert_eq!((c.free_at(0), c.free_at(1)), (0, 9));
        // The same core again waits for it; the other does not.
        assert_eq!(c.start(1, 6).1, 9);
        assert_eq!(c.start(0, 6).1, 6);
    }

    #[test]
    fn shared_cores_rotate_over_one_machine() {
        let pool = Cores::pool(2);
        let (mut a, mut b) = (Cores::shared(pool.clone(), 0), Cores::shared(pool, 1));
        assert_eq!((a.len(), b.len()), (2, 2));
        // Node a's core 0 is CPU 0, which is node b's core 1 (b's interrupt core).
        let (s, t) = a.start(0, 0);
        a.finish(s, 10);
        assert_eq!(t, 0);
        assert_eq!((b.free_at(1), b.free_at(0)), (10, 0));
        assert_eq!(b.start(1, 3).1, 10, "b's interrupt work waits for a's application");
        assert_eq!(b.start(0, 3).1, 3);
    }
}

//! Receive queues and shared receive queues (SRQ), with receiver-not-ready (RNR) retries.
//!
//! An arriving RC send consumes a receive WQE the program posted; the program posts it again
//! once it has taken the completion (the completion visible, seen by its poll, consumed,
//! and a post). With `[adapter] rq_wqes` each queue pair's receive queue holds that many
//! posted WQEs; with `srq = 1` all the adapter's queue pairs draw from one shared receive
//! queue of that many ([IBA] 10.2.9 and 11.2.3, `ibv_create_srq`; rdma-core
//! `providers/mlx5/srq.c` `mlx5_post_srq_recv`: one WQE list any QP attached to the SRQ
//! takes its next WQE from). A send that finds its queue empty is not lost: the responder
//! answers with an RNR NAK and the requester sends it again after the RNR timer the
//! responder advertised (`rnr_timer_us`, the QP's `min_rnr_timer`; [K6]
//! `enum ib_rnr_timeout`), every later packet of that queue pair behind it (go-back-N).
//! The NAK's and the retry's flight times are not added (well below any RNR timer).
//!
//! What SRQ changes: the receive buffers a process must post for N peers fall from N x
//! depth to one pool sized for the traffic that arrives together (MVAPICH2's motivation);
//! one burst from one peer may use the whole pool; and RNR waits come from the pool running
//! dry rather than one peer's queue. The receive WQE fetch is unchanged (the mlx5 SRQ WQE's
//! 16-byte next segment is within the model's WQE fetch; prefetch applies to the shared
//! queue as to a QP's own). Without `rq_wqes` (every study profile) receives never run out.

use interlab_kernel::Time;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// One receive queue: WQEs posted now, and those on their way back (repost times).
#[derive(Debug, Clone, Default)]
struct Rq {
    posted: u64,
    reposts: BinaryHeap<Reverse<Time>>,
}

impl Rq {
    /// Takes a WQE at `now` (reposts due by then return first); false when none is posted.
    fn take(&mut self, now: Time) -> bool {
        while self.reposts.peek().is_some_and(|r| r.0 <= now) {
            self.reposts.pop();
            self.posted += 1;
        }
        if self.posted == 0 {
            return false;
        }
        self.posted -= 1;
        true
    }

    /// The earliest repost still to come.
    fn next_repost(&self) -> Option<Time> {
        self.reposts.peek().map(|r| r.0)
    }
}

/// Per queue pair: packets held back behind an RNR NAK (go-back-N).
#[derive(Debug, Clone, Default)]
struct Behind {
    /// Every packet of the QP arriving before `until` is delayed by `delay`.
    delay: Time,
    until: Time,
    /// When each held-back packet is delivered again, in order.
    redeliver: VecDeque<Time>,
}

/// The adapter's receive queues.
#[derive(Debug, Clone)]
pub struct RecvQueues {
    /// WQEs a queue holds posted (None: receives never run out).
    depth: Option<u64>,
    shared: bool,
    rnr_ps: Time,
    /// One per queue pair, or one (shared).
    rqs: Vec<Rq>,
    behind: Vec<Behind>,
    /// RNR NAKs sent.
    pub rnr_naks: u64,
}

/// What to do with an arriving packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admit {
    /// Process it now.
    Now,
    /// Deliver it again at this time (held behind an RNR NAK, or refused one itself).
    Later(Time),
}

impl RecvQueues {
    /// Queues of `depth` posted WQEs (None: unlimited), shared by every QP if `shared`; an
    /// RNR retry comes `rnr_ps` after the NAK.
    pub fn new(depth: Option<u64>, shared: bool, rnr_ps: Time) -> Self {
        RecvQueues { depth, shared, rnr_ps, rqs: Vec::new(), behind: Vec::new(), rnr_naks: 0 }
    }

    fn rq(&mut self, qp: usize, depth: u64) -> &mut Rq {
        let i = if self.shared { 0 } else { qp };
        if self.rqs.len() <= i {
            self.rqs.resize(i + 1, Rq { posted: depth, reposts: BinaryHeap::new() });
        }
        &mut self.rqs[i]
    }

    /// A packet of QP `qp` arrived at `now`; `consumes` when it is the first packet of a
    /// send (it needs a receive WQE).
    pub fn admit(&mut self, qp: usize, consumes: bool, now: Time) -> Admit {
        let Some(depth) = self.depth else { return Admit::Now };
        if self.behind.len() <= qp {
            self.behind.resize(qp + 1, Behind::default());
        }
        let b = &mut self.behind[qp];
        if b.redeliver.front() == Some(&now) {
            // A held-back packet coming back: it is processed as it arrives now.
            b.redeliver.pop_front();
        } else if now < b.until {
            let at = now + b.delay;
            b.until = b.until.max(at);
            b.redeliver.push_back(at);
            return Admit::Later(at);
        }
        if !consumes || self.rq(qp, depth).take(now) {
            return Admit::Now;
        }
        // Receiver not ready: the requester retries after the timer (or when the program
        // has reposted, if that is later), and the packets behind it wait as long.
        self.rnr_naks += 1;
        let rnr = self.rnr_ps;
        let retry = (now + rnr).max(self.rq(qp, depth).next_repost().unwrap_or(0));
        let b = &mut self.behind[qp];
        b.delay = retry - now;
        b.until = retry;
        b.redeliver.push_back(retry);
        Admit::Later(retry)
    }

    /// The program has taken the completion of a send on `qp` and posts its receive WQE
    /// again at `at`.
    pub fn repost(&mut self, qp: usize, at: Time) {
        if let Some(depth) = self.depth {
            self.rq(qp, depth).reposts.push(Reverse(at));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unlimited_queues_admit_everything() {
        let mut r = RecvQueues::new(None, false, 1000);
        for t in 0..10 {
            assert_eq!(r.admit(0, true, t), Admit::Now);
        }
        assert_eq!(r.rnr_naks, 0);
    }

    #[test]
    fn an_empty_queue_naks_and_holds_the_packets_behind() {
        let mut r = RecvQueues::new(Some(2), false, 1000);
        assert_eq!(r.admit(0, true, 10), Admit::Now);
        assert_eq!(r.admit(0, true, 20), Admit::Now);
        assert_eq!(r.admit(0, true, 30), Admit::Later(1030));
        // The next packet of that QP keeps its place behind the retried one.
        assert_eq!(r.admit(0, false, 40), Admit::Later(1040));
        // Another QP has its own queue.
        assert_eq!(r.admit(1, true, 50), Admit::Now);
        // The retry finds a WQE reposted meanwhile; the packet behind it follows.
        r.repost(0, 500);
        assert_eq!(r.admit(0, true, 1030), Admit::Now);
        assert_eq!(r.admit(0, false, 1040), Admit::Now);
        assert_eq!(r.rnr_naks, 1);
    }

    #[test]
    fn a_shared_queue_serves_whichever_qp_arrives() {
        let mut r = RecvQueues::new(Some(2), true, 1000);
        assert_eq!(r.admit(0, true, 10), Admit::Now);
        assert_eq!(r.admit(0, true, 20), Admit::Now);
        // Empty for every QP now.
        assert_eq!(r.admit(1, true, 30), Admit::Later(1030));
        r.repost(0, 100);
        assert_eq!(r.admit(2, true, 200), Admit::Now);
    }
}

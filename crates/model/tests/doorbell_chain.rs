//! The doorbell chain merged where the queue is quiet (`Adapter::merge_doorbells`): a work
//! request's doorbell write, doorbell and fetched WQE take one event each unless the next
//! step's own event would be the next one taken, nothing between; then it runs in the event
//! before it. The same runs with every step an event of its own must give every figure of
//! every point, event counts aside, and the merged runs must take exactly one event fewer
//! per merge.

use interlab_model::ulp::sock::{SockKind, SockStack};
use interlab_model::{MpiDesign, Point, Ports, Profile, Scenario, Service};
use interlab_patterns::{Op, PatternKind, PatternSpec};
use std::sync::Arc;

/// Every figure of a point but its event count.
fn figures(p: &Point) -> String {
    format!("{} {} {:?} {} {} {} {} {:?}", p.value, p.unit, p.summary, p.sim_time_ps, p.bytes_sent, p.bytes_received, p.server_cpu_percent, p.by_stack)
}

/// Runs `spec` on `s` merged and apart; checks they agree; returns the merges.
fn merges(s: &Scenario, kind: PatternKind, op: Op, size: u64, window: u32) -> u64 {
    let spec = PatternSpec { kind, op, size, window, warmup: 2, iterations: 8 };
    let what = format!("{} {:?} {:?} {op:?} {size} B x {window}, {:?} {:?}", s.profile.id, s.service, kind, s.mpi, s.sock.map(|k| k.describe()));
    let (on, merged) = s.run_doorbells(&spec, true).unwrap_or_else(|e| panic!("{what}: {e}"));
    let (off, none) = s.run_doorbells(&spec, false).unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(none, 0, "{what}: nothing merged when merging is off");
    assert_eq!(figures(&on), figures(&off), "{what}: merged against apart");
    assert_eq!(on.events + merged, off.events, "{what}: one event fewer per merge");
    merged
}

fn scenario(profile: &str) -> Scenario {
    Scenario::new(Arc::new(Profile::load(profile).expect("profile")), Service::Rc, Ports::One, 1)
}

#[test]
fn verbs_points_are_the_same_with_the_doorbell_chain_merged() {
    // BlueFlame for every WQE (r805), the provider's rule (cx5, cx3: only inline WQEs), and
    // doorbells the adapter answers by reading the WQE over PCIe with DLLPs (woodcrest,
    // mt25208) and over PCI-X (mt23108).
    let profiles = ["r805-connectx-ddr", "cx5-edr-pcie3", "cx3-fdr-pcie3", "woodcrest-infinihost-longbow", "xeon-mt25208-pcie", "xeon-mt23108-pcix"];
    for profile in profiles {
        let base = scenario(profile);
        let cases = [
            (base.clone(), PatternKind::Latency, Op::Send, 8, 1),
            (base.clone(), PatternKind::Latency, Op::RdmaWrite, 4096, 1),
            (base.clone(), PatternKind::Bandwidth, Op::RdmaWrite, 65536, 16),
            (base.clone(), PatternKind::BiBandwidth, Op::Send, 2048, 32),
            (base.clone(), PatternKind::Pipelined, Op::RdmaRead, 16384, 8),
            (Scenario { service: Service::Ud, ..base.clone() }, PatternKind::Bandwidth, Op::Send, 1024, 64),
            (Scenario { procs_per_node: 2, ..base.clone() }, PatternKind::BiPipelined, Op::Send, 1 << 16, 8),
            (Scenario { clients: 3, ..base.clone() }, PatternKind::Bandwidth, Op::Send, 8192, 8),
            (Scenario { mpi: Some(MpiDesign::Rc), ..base.clone() }, PatternKind::BiBandwidth, Op::Send, 1 << 16, 8),
            (Scenario { trains: false, ..base.clone() }, PatternKind::Bandwidth, Op::Send, 4096, 16),
        ];
        let mut merged = 0;
        // MPI only where the profile describes its library.
        for (s, kind, op, size, window) in cases.into_iter().filter(|c| c.0.mpi.is_none() || c.0.profile.mpi.is_some()) {
            merged += merges(&s, kind, op, size, window);
        }
        assert!(merged > 100, "{profile}: the chain merges ({merged} steps)");
    }
}

#[test]
fn socket_points_are_the_same_with_the_doorbell_chain_merged() {
    let base = scenario("r805-connectx-ddr");
    let sock = |stack: SockStack, tcp_trains| Scenario { sock: Some(stack), tcp_trains, ..base.clone() };
    let eth = SockStack::new(SockKind::Eth);
    let cases = [
        (sock(SockStack::ipoib_ud(), false), PatternKind::Bandwidth, 1 << 16, 8),
        (sock(SockStack::ipoib_ud(), false), PatternKind::Latency, 64, 1),
        (sock(SockStack { lso: Some(false), lro: Some(false), ..eth }, true), PatternKind::Bandwidth, 1 << 18, 8),
        (sock(eth, false), PatternKind::BiBandwidth, 1 << 16, 8),
        (sock(SockStack::new(SockKind::Sdp), false), PatternKind::Latency, 1 << 14, 1),
        (sock(SockStack::new(SockKind::Sdp), false), PatternKind::Bandwidth, 1 << 17, 4),
        (Scenario { procs_per_node: 4, ..sock(SockStack::ipoib_ud(), false) }, PatternKind::Bandwidth, 1 << 16, 8),
    ];
    let mut merged = 0;
    for (s, kind, size, window) in cases {
        merged += merges(&s, kind, Op::Send, size, window);
    }
    assert!(merged > 100, "socket stacks: the chain merges ({merged} steps)");
}

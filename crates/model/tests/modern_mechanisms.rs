//! Directions of change of the modern-adapter mechanisms (issue 22) on the built-in
//! what-if profiles, over random sizes and settings: BlueFlame, inline data, CQE
//! compression, receive-queue depth and shared receive queues, host speed (clock and IPC).

use interlab_model::bus::BusSpec;
use interlab_model::*;
use interlab_patterns::{Op, PatternKind, PatternSpec};
use proptest::prelude::*;
use std::sync::Arc;

fn prof(id: &str) -> Profile {
    Profile::load(id).unwrap()
}

fn scenario(p: Profile, clients: u32, mpi: Option<MpiDesign>, sock: Option<SockStack>) -> Scenario {
    let initiator = if clients > 1 { Initiator::Clients } else { Initiator::Server };
    Scenario { profile: Arc::new(p), topology: Topology::Lan, service: Service::Rc, ports: Ports::One, procs_per_node: 1, max_events: 200_000_000, trains: true, tcp_trains: false, mpi, qps_per_port: 1, clients, initiator, sock, sock_mix: None, io: None }
}

fn lat(p: Profile, op: Op, size: u64) -> f64 {
    let s = PatternSpec { kind: PatternKind::Latency, op, size, window: 1, warmup: 2, iterations: 6 };
    scenario(p, 1, None, None).run(&s).unwrap().value
}

fn bw(p: Profile, op: Op, size: u64, window: u32, clients: u32) -> f64 {
    let s = PatternSpec { kind: PatternKind::Bandwidth, op, size, window, warmup: 2, iterations: 8 };
    scenario(p, clients, None, None).run(&s).unwrap().value
}

const MODERN: [&str; 5] = ["cx3-fdr-pcie3", "cx5-edr-pcie3", "cx5-roce100-pcie3", "epyc-hdr-pcie4", "cx7-ndr-pcie5"];

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    #[test]
    fn blueflame_never_raises_latency(k in 0usize..5, size in 1u64..8192, write in any::<bool>()) {
        let base = prof(MODERN[k]);
        let mut off = base.clone();
        off.adapter.blueflame = false;
        let op = if write { Op::RdmaWrite } else { Op::Send };
        let (on, off) = (lat(base, op, size), lat(off, op, size));
        prop_assert!(on <= off, "{} {size} B: BlueFlame {on} us > doorbell {off} us", MODERN[k]);
    }

    #[test]
    fn inline_never_raises_latency(k in 0usize..5, size in 1u64..=220, write in any::<bool>()) {
        let base = prof(MODERN[k]);
        let mut off = base.clone();
        off.adapter.inline_bytes = 0;
        off.adapter.inline_send_bytes = Some(0);
        let op = if write { Op::RdmaWrite } else { Op::Send };
        let (on, off) = (lat(base, op, size), lat(off, op, size));
        prop_assert!(on < off, "{} {size} B: inline {on} us >= DMA read {off} us", MODERN[k]);
    }

    #[test]
    fn cqe_compression_never_lowers_bandwidth_nor_raises_latency(k in 1usize..5, lanes in prop::sample::select(vec![4u32, 8, 16]), size in 16u64..16384) {
        let mut base = prof(MODERN[k]);
        if let BusSpec::Pcie(p) = &mut base.bus {
            p.lanes = lanes;
        }
        let mut zip = base.clone();
        zip.adapter.cqe_compression = true;
        let (a, b) = (bw(base.clone(), Op::Send, size, 32, 1), bw(zip.clone(), Op::Send, size, 32, 1));
        prop_assert!(b >= a, "{} x{lanes} {size} B: compressed {b} MB/s < {a}", MODERN[k]);
        prop_assert_eq!(lat(base, Op::Send, size), lat(zip, Op::Send, size));
    }

    /// A receive queue that runs dry costs RNR waits (640 us each here); one that holds every
    /// message in flight never does. Between two queues that both run dry there is no order:
    /// a short run's bandwidth counts its whole RNR timer waits, and which of them fall in the
    /// measured window depends on the phase of the retries (cx5, SRQ of 12 against 24 WQEs,
    /// 4 clients x 16 x 256 B: one wait against two), so the direction tested is against a
    /// queue deep enough for everything in flight, which must also never send an RNR NAK.
    #[test]
    fn a_receive_queue_that_runs_dry_is_never_faster_than_one_that_holds_all_in_flight(depth in 2u64..24, size in prop::sample::select(vec![8u64, 256, 4096]), srq in any::<bool>()) {
        let mut shallow = prof("cx5-edr-pcie3");
        shallow.adapter.rq_wqes = Some(if srq { 4 * depth } else { depth });
        shallow.adapter.srq = srq;
        let mut deep = shallow.clone();
        // 4 clients x a window of 16: 64 messages in flight on the server, 16 per queue pair.
        deep.adapter.rq_wqes = Some(if srq { 64 } else { 16 });
        let unlimited = { let mut u = shallow.clone(); u.adapter.rq_wqes = None; u.adapter.srq = false; u };
        let (a, b, c) = (bw(shallow, Op::Send, size, 16, 4), bw(deep, Op::Send, size, 16, 4), bw(unlimited, Op::Send, size, 16, 4));
        prop_assert!(b >= a, "{depth} (srq {srq}) {size} B: deep enough {b} MB/s < {a}");
        prop_assert!((b - c).abs() <= 1e-9 * c, "{size} B (srq {srq}): a queue for all in flight {b} MB/s, receives that never run out {c}");
    }

    #[test]
    fn a_faster_host_never_raises_the_per_message_cost(k in 0usize..5, clock in 1.0f64..2.0, ipc in 1.0f64..2.0, size in 1u64..4096) {
        let base = prof(MODERN[k]);
        let fast = faster(MODERN[k], clock, ipc);
        for (mpi, sock) in [(Some(MpiDesign::Rc), None), (None, Some(SockStack::ipoib_ud()))] {
            if sock.is_some() && base.stack.is_none() {
                continue;
            }
            let s = PatternSpec { kind: PatternKind::Latency, op: Op::Send, size, window: 1, warmup: 2, iterations: 6 };
            let slow_us = scenario(base.clone(), 1, mpi, sock).run(&s).unwrap().value;
            let fast_us = scenario(fast.clone(), 1, mpi, sock).run(&s).unwrap().value;
            prop_assert!(fast_us <= slow_us, "{} {size} B ({mpi:?} {sock:?}): x{clock} clock, x{ipc} IPC {fast_us} us > {slow_us} us", MODERN[k]);
        }
    }
}

/// The built-in profile `id` on a host with `clock` times its clock and `ipc` times its IPC
/// factor, parsed from its text so that every cost in cycles follows.
fn faster(id: &str, clock: f64, ipc: f64) -> Profile {
    let base = prof(id);
    let text = interlab_model::profile::BUILTIN.iter().find(|(b, _)| *b == id).unwrap().1;
    let text = text
        .lines()
        .map(|l| {
            if l.starts_with("clock_ghz =") {
                format!("clock_ghz = {{ value = {}, src = \"test\" }}", base.host.clock_ghz.unwrap() * clock)
            } else if l.starts_with("ipc_factor =") {
                format!("ipc_factor = {{ value = {}, src = \"test\" }}", base.host.ipc_factor * ipc)
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    Profile::parse("test", &text).unwrap()
}

#[test]
fn a_shared_receive_queue_pools_the_buffers_of_per_qp_queues() {
    // Four clients with 16 sends outstanding each: per-QP queues of 8 meet RNR NAKs; the
    // same 32 buffers shared do better; 16 per QP, or 64 shared, never run dry.
    let with = |depth: u64, srq: bool| {
        let mut p = prof("cx5-edr-pcie3");
        p.adapter.rq_wqes = Some(depth);
        p.adapter.srq = srq;
        bw(p, Op::Send, 64, 16, 4)
    };
    let mut free = prof("cx5-edr-pcie3");
    free.adapter.rq_wqes = None;
    let unlimited = bw(free, Op::Send, 64, 16, 4);
    let (per8, srq32, per16, srq64) = (with(8, false), with(32, true), with(16, false), with(64, true));
    assert!(per8 < srq32 && srq32 < unlimited, "8 per QP {per8}, 32 shared {srq32}, unlimited {unlimited} MB/s");
    assert_eq!((per16, srq64), (unlimited, unlimited));
}

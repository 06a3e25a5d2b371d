//! Ablations of the socket stacks: turning a mechanism on or off moves results the way the
//! mechanism says (LRO, LSO, jumbo frames, adaptive coalescing, the SDP zero-copy
//! threshold), and the stacks conserve bytes.

use interlab_model::ulp::sock::{SockKind, SockStack};
use interlab_model::{Point, Ports, Profile, Service, Scenario};
use interlab_patterns::{Op, PatternKind, PatternSpec};
use std::sync::Arc;

fn run(stack: SockStack, kind: PatternKind, size: u64, procs: u32) -> Point {
    let p = Arc::new(Profile::load("r805-connectx-ddr").unwrap());
    let mut v = Scenario::new(p, Service::Rc, Ports::One, procs);
    v.sock = Some(stack);
    let (warmup, iterations, window) = if kind == PatternKind::Latency { (3, 20, 1) } else { (1, 3, 16) };
    let p = v.run(&PatternSpec { kind, op: Op::Send, size, window, warmup, iterations }).unwrap_or_else(|e| panic!("{}: {e}", stack.describe()));
    assert_eq!(p.bytes_sent, p.bytes_received, "{}: bytes conserved", stack.describe());
    p
}

fn ud(lro: bool, lso: bool) -> SockStack {
    SockStack { lro: Some(lro), lso: Some(lso), ..SockStack::ipoib_ud() }
}

#[test]
fn lro_merges_packets_so_large_messages_arrive_sooner_and_cost_less() {
    // With LSO the sender's packets come back to back, so the receiver's poll finds
    // several waiting and merges them. (Without LSO they trickle in slower than the
    // receiver handles them and LRO has nothing to merge.)
    let (off, on) = (run(ud(false, true), PatternKind::Latency, 65536, 1), run(ud(true, true), PatternKind::Latency, 65536, 1));
    assert!(on.value < off.value * 0.9, "LRO latency {:.1} us vs {:.1} us without", on.value, off.value);
    // Eight streams share one interrupt core: LRO relieves it.
    let (off, on) = (run(ud(false, true), PatternKind::Bandwidth, 65536, 8), run(ud(true, true), PatternKind::Bandwidth, 65536, 8));
    assert!(on.value > off.value * 1.2, "8 streams: LRO {:.0} vs {:.0} MB/s", on.value, off.value);
}

#[test]
fn lso_moves_segmentation_to_the_adapter() {
    // Against TCP output per packet (no software segmentation), LSO is a large gain.
    let mut p = Profile::load("r805-connectx-ddr").unwrap();
    p.stack.as_mut().unwrap().gso = false;
    let (off, on) = (run_on(p.clone(), ud(true, false), PatternKind::Bandwidth, 65536, 1), run_on(p, ud(true, true), PatternKind::Bandwidth, 65536, 1));
    assert!(on.value > off.value * 1.2, "LSO {:.0} vs {:.0} MB/s", on.value, off.value);
    // With GSO the host only cuts packets below TCP: one stream gains or loses little by
    // LSO (the study's best single stream is LRO without LSO).
    let (off, on) = (run(ud(true, false), PatternKind::Bandwidth, 65536, 1), run(ud(true, true), PatternKind::Bandwidth, 65536, 1));
    assert!((on.value - off.value).abs() < off.value * 0.2, "with GSO: LSO {:.0} vs {:.0} MB/s", on.value, off.value);
}

#[test]
fn jumbo_frames_beat_normal_frames() {
    let eth = SockStack::new(SockKind::Eth);
    let (jumbo, normal) = (run(eth, PatternKind::Bandwidth, 65536, 1), run(SockStack { eth_mtu: 1500, ..eth }, PatternKind::Bandwidth, 65536, 1));
    assert!(jumbo.value > normal.value, "9000: {:.0}, 1500: {:.0} MB/s", jumbo.value, normal.value);
    // Without LSO the stack handles every 1500-byte frame itself: much worse.
    let no_lso = run(SockStack { eth_mtu: 1500, lso: Some(false), ..eth }, PatternKind::Bandwidth, 65536, 1);
    assert!(no_lso.value < normal.value, "1500 without LSO {:.0} vs with {:.0}", no_lso.value, normal.value);
}

#[test]
fn adaptive_coalescing_takes_the_interrupt_delay_out_of_small_messages() {
    let eth = SockStack::new(SockKind::Eth);
    let (aic, fixed) = (run(eth, PatternKind::Latency, 1, 1), run(SockStack { aic: false, ..eth }, PatternKind::Latency, 1, 1));
    let p = Profile::load("r805-connectx-ddr").unwrap();
    let delay = p.eth.unwrap().rx_usecs;
    // Each one-way trip waits for the static timer once.
    assert!((fixed.value - aic.value - delay).abs() < 1.0, "static {:.1} us, adaptive {:.1} us, timer {delay} us", fixed.value, aic.value);
}

#[test]
fn sdp_zero_copy_threshold_trades_a_round_trip_for_the_copies() {
    let sdp = SockStack::new(SockKind::Sdp);
    let raised = SockStack { sdp_zcopy_threshold: 1 << 21, ..sdp };
    // At the 64 KiB default threshold every message pays zero copy's handshake unpipelined.
    let (zc, bc) = (run(sdp, PatternKind::Bandwidth, 65536, 1), run(raised, PatternKind::Bandwidth, 65536, 1));
    assert!(zc.value < bc.value, "64 KiB: zero copy {:.0} vs buffered {:.0} MB/s", zc.value, bc.value);
    // Large messages: zero copy spares the server (receiver) its copies.
    let (zc, bc) = (run(sdp, PatternKind::Bandwidth, 1 << 20, 1), run(raised, PatternKind::Bandwidth, 1 << 20, 1));
    assert!(zc.server_cpu_percent < bc.server_cpu_percent, "1 MiB CPU: zero copy {:.1}% vs buffered {:.1}%", zc.server_cpu_percent, bc.server_cpu_percent);
}

#[test]
fn sdp_bypasses_tcp_and_ipoib_connected_mode_needs_no_offloads() {
    let (sdp, rc) = (run(SockStack::sdp_bc(), PatternKind::Latency, 1, 1), run(SockStack::new(SockKind::IpoibRc), PatternKind::Latency, 1, 1));
    assert!(sdp.value < rc.value, "SDP {:.1} us vs IPoIB-RC {:.1} us", sdp.value, rc.value);
    let (rc, ud) = (run(SockStack::new(SockKind::IpoibRc), PatternKind::Bandwidth, 65536, 1), run(ud(false, false), PatternKind::Bandwidth, 65536, 1));
    assert!(rc.value > ud.value, "64 KiB MTU {:.0} vs 2 KiB MTU {:.0} MB/s", rc.value, ud.value);
}

#[test]
fn two_stacks_at_once_share_the_adapter() {
    let p = Arc::new(Profile::load("r805-connectx-ddr").unwrap());
    let mut v = Scenario::new(p, Service::Rc, Ports::One, 4);
    v.sock = Some(SockStack::new(SockKind::Eth));
    v.sock_mix = Some(SockStack::new(SockKind::IpoibRc));
    let pt = v.run(&PatternSpec { kind: PatternKind::Bandwidth, op: Op::Send, size: 65536, window: 16, warmup: 1, iterations: 3 }).unwrap();
    assert_eq!(pt.by_stack.len(), 2, "{:?}", pt.by_stack);
    let sum: f64 = pt.by_stack.iter().map(|s| s.1).sum();
    assert!((sum - pt.value).abs() < 1e-6 * pt.value, "shares {:?} add up to {}", pt.by_stack, pt.value);
    // Together they exceed either port alone, and stay within the PCIe link.
    let eth_alone = run(SockStack::new(SockKind::Eth), PatternKind::Bandwidth, 65536, 2).value;
    assert!(pt.value > eth_alone, "both {:.0} vs 10GigE alone {eth_alone:.0} MB/s", pt.value);
    assert!(pt.value < 2000.0, "{:.0} MB/s exceeds a PCIe 1.1 x8 link", pt.value);
}

#[test]
fn stacks_are_deterministic() {
    let a = run(ud(true, true), PatternKind::Bandwidth, 16384, 2);
    let b = run(ud(true, true), PatternKind::Bandwidth, 16384, 2);
    assert_eq!((a.value, a.events, a.sim_time_ps), (b.value, b.events, b.sim_time_ps));
}

#[test]
fn nodes_on_one_shared_machine_compete_for_its_cpus() {
    // Two TCP streams over the Ethernet port, CPU-bound: on two hosts of 2 cores each, vs
    // both nodes on one 2-CPU machine ([host] shared, as client and daemon on loopback).
    let run_with = |shared: bool| {
        let mut p = Profile::load("r805-connectx-ddr").unwrap();
        p.host.cores = 2;
        p.host.shared = shared;
        let mut v = Scenario::new(Arc::new(p), Service::Rc, Ports::One, 2);
        v.sock = Some(SockStack { eth_mtu: 1500, lso: Some(false), ..SockStack::new(SockKind::Eth) });
        let pt = v.run(&PatternSpec { kind: PatternKind::Bandwidth, op: Op::Send, size: 65536, window: 16, warmup: 1, iterations: 3 }).unwrap();
        assert_eq!(pt.bytes_sent, pt.bytes_received, "bytes conserved (shared {shared})");
        pt
    };
    let (own, shared) = (run_with(false), run_with(true));
    assert!(shared.value < own.value * 0.9, "one machine {:.0} MB/s vs two {:.0} MB/s", shared.value, own.value);
    // Deterministic.
    assert_eq!(run_with(true).value, shared.value);
}

/// SDP buffered-copy aggregate bandwidth of `procs` streams on the 2004 SDP cluster with the
/// shared memory system at `memory` MB/s (None: every core copies at its own rate).
fn sdp_streams(memory: Option<f64>, procs: u32) -> f64 {
    let mut prof = Profile::load("xeon24-mt23108-pcix").unwrap();
    prof.host.memory_mbytes_per_s = memory;
    let mut v = Scenario::new(Arc::new(prof), Service::Rc, Ports::One, procs);
    v.sock = Some(SockStack::sdp_bc());
    let p = v.run(&PatternSpec { kind: PatternKind::Bandwidth, op: Op::Send, size: 32768, window: 16, warmup: 1, iterations: 3 }).unwrap();
    assert_eq!(p.bytes_sent, p.bytes_received);
    p.value
}

#[test]
fn cores_copying_at_once_share_the_memory_system() {
    // Without a shared memory limit a second stream (on the second core) adds bandwidth.
    let (one, two) = (sdp_streams(None, 1), sdp_streams(None, 2));
    assert!(two > one * 1.3, "no memory limit: 2 streams {two:.0} vs 1 stream {one:.0} MB/s");
    // A slower memory system never raises it, and with one it stays near one stream's peak.
    let mut last = two;
    for m in [2000.0, 1050.0, 800.0] {
        let b = sdp_streams(Some(m), 2);
        assert!(b <= last * 1.001, "memory {m} MB/s: {b:.0} > {last:.0}");
        last = b;
    }
    let shared = sdp_streams(Some(1050.0), 2);
    assert!(shared < one * 1.25, "1050 MB/s memory: 2 streams {shared:.0} vs 1 stream {one:.0}");
}

/// SDP buffered-copy aggregate bandwidth at 16 KiB between one server and `clients` client
/// nodes on the 2004 SDP cluster with the memory system at `memory` MB/s: the server sends
/// (fan-out, `Initiator::Server`) or receives (fan-in).
fn sdp_fan(memory: f64, clients: u32, initiator: interlab_model::Initiator) -> f64 {
    let mut prof = Profile::load("xeon24-mt23108-pcix").unwrap();
    prof.host.memory_mbytes_per_s = Some(memory);
    let mut v = Scenario::new(Arc::new(prof), Service::Rc, Ports::One, 1);
    v.sock = Some(SockStack::sdp_bc());
    v.clients = clients;
    v.initiator = initiator;
    let p = v.run(&PatternSpec { kind: PatternKind::Bandwidth, op: Op::Send, size: 16384, window: 64, warmup: 1, iterations: 3 }).unwrap();
    assert_eq!(p.bytes_sent, p.bytes_received);
    p.value
}

#[test]
fn copies_never_take_more_than_the_memory_system_and_sending_moves_more_than_receiving() {
    use interlab_model::Initiator;
    // A buffered-copy send moves 3 bytes per byte through the sender's memory (into a ring
    // beyond the cache, then the adapter's DMA read); a receive 2 (DMA write, then the ring
    // read into the cached user buffer). Both server CPUs copying never exceed that bound,
    // however many clients, and a slower memory never raises the aggregate.
    for memory in [1200.0, 1740.0] {
        for clients in [2, 4, 7] {
            let out = sdp_fan(memory, clients, Initiator::Server);
            assert!(out <= memory / 3.0 * 1.01, "fan-out {out:.0} MB/s with {clients} clients above memory {memory} / 3");
        }
    }
    for clients in [2, 7] {
        let (slow, fast) = (sdp_fan(1200.0, clients, Initiator::Server), sdp_fan(1740.0, clients, Initiator::Server));
        assert!(slow <= fast * 1.001, "{clients} clients: memory 1200 {slow:.0} > 1740 {fast:.0} MB/s");
        // With the memory system binding, the receiving server outruns the sending one.
        let (out, inn) = (sdp_fan(1200.0, clients, Initiator::Server), sdp_fan(1200.0, clients, Initiator::Clients));
        assert!(inn > out * 1.1, "{clients} clients: fan-in {inn:.0} vs fan-out {out:.0} MB/s");
    }
}

/// PVFS concurrent read over `stack` (None: native verbs) with `servers` I/O servers and
/// `clients` compute nodes, 2 MB per pair in 64 KiB strips: aggregate MB/s.
fn pvfs_read(stack: Option<SockStack>, servers: u32, clients: u32) -> f64 {
    let prof = Arc::new(Profile::load("xeon24-mt23108-pcix").unwrap());
    let mut v = Scenario::new(prof, Service::Rc, Ports::One, 1);
    v.sock = stack;
    v.clients = clients;
    v.initiator = interlab_model::Initiator::Server;
    v.io = Some(interlab_model::FileServers { servers, store: interlab_model::FileStore::Ram, bytes_per_pair: 2 << 20 });
    let p = v.run(&PatternSpec { kind: PatternKind::Bandwidth, op: Op::Send, size: 65536, window: 32, warmup: 0, iterations: 1 }).unwrap();
    assert_eq!(p.bytes_sent, p.bytes_received);
    p.value
}

#[test]
fn pvfs_daemons_serving_their_clients_in_turn_scale_with_the_servers_until_the_clients_bind() {
    // Every daemon serves its clients one strip each in turn, so no client is the target of
    // every server at once: while the clients have room, each added server adds its own rate.
    for stack in [None, Some(SockStack::sdp_bc())] {
        let (one, four) = (pvfs_read(stack, 1, 4), pvfs_read(stack, 4, 4));
        assert!(four > one * 3.5, "{stack:?}: 1 server {one:.0}, 4 servers {four:.0} MB/s");
    }
    // Fewer clients never raise it: each copies its whole region (beyond the cache) out of
    // the stack's buffers, and with 4 servers and 2 clients they bind.
    let sdp = Some(SockStack::sdp_bc());
    let (two, four) = (pvfs_read(sdp, 4, 2), pvfs_read(sdp, 4, 4));
    assert!(two < four * 0.75, "SDP, 4 servers: 2 clients {two:.0} vs 4 clients {four:.0} MB/s");
}

fn run_on(p: Profile, stack: SockStack, kind: PatternKind, size: u64, procs: u32) -> Point {
    let mut v = Scenario::new(Arc::new(p), Service::Rc, Ports::One, procs);
    v.sock = Some(stack);
    let (warmup, iterations, window) = if kind == PatternKind::Latency { (3, 20, 1) } else { (1, 3, 16) };
    v.run(&PatternSpec { kind, op: Op::Send, size, window, warmup, iterations }).unwrap_or_else(|e| panic!("{}: {e}", stack.describe()))
}

#[test]
fn gso_keeps_tcp_output_per_large_segment_when_lso_is_off() {
    // With LSO off, a scatter-gather device still gets 64 KiB segments from TCP, cut into
    // packets just before the driver: TCP/IP output once per segment, driver work per packet.
    let p = Profile::load("r805-connectx-ddr").unwrap();
    assert!(p.stack.as_ref().unwrap().gso);
    let mut no_gso = p.clone();
    no_gso.stack.as_mut().unwrap().gso = false;
    let (with, without) = (run_on(p.clone(), ud(true, false), PatternKind::Bandwidth, 65536, 1), run_on(no_gso, ud(true, false), PatternKind::Bandwidth, 65536, 1));
    assert!(with.value > without.value * 1.3, "LRO without LSO: GSO {:.0} vs per-packet TCP output {:.0} MB/s", with.value, without.value);
    assert_eq!(with.bytes_sent, with.bytes_received);
    // A one-packet message is the same either way.
    let (a, b) = (run_on(p.clone(), ud(false, false), PatternKind::Latency, 1, 1), run(ud(false, false), PatternKind::Latency, 1, 1));
    assert_eq!(a.value, b.value);
}


#[test]
fn sdp_receiver_polling_in_recv_takes_the_interrupt_and_wakeup_out_of_latency() {
    // OFED's sdp_recvmsg polls the receive CQ (recv_poll times) before it sleeps: a small
    // message arriving within that window is taken by the waiting process itself.
    // (Off in the r805 profile: see docs/model.md on the ConnectX host stacks.)
    let mut p = Profile::load("r805-connectx-ddr").unwrap();
    let sleeps = p.clone();
    assert_eq!(sleeps.stack.as_ref().unwrap().sdp_recv_polls, 0);
    p.stack.as_mut().unwrap().sdp_recv_polls = 1000;
    let st = p.stack.clone().unwrap();
    let (polled, slept) = (run_on(p.clone(), SockStack::sdp_bc(), PatternKind::Latency, 1, 1), run_on(sleeps.clone(), SockStack::sdp_bc(), PatternKind::Latency, 1, 1));
    let saved = slept.value - polled.value;
    let expect = (st.interrupt_ns + st.wakeup_ns - p.host.cqe_poll_ns) / 1000.0;
    assert!((saved - expect).abs() < 0.3, "polling saves {saved:.2} us, interrupt + wake-up {expect:.2} us");
    // Bulk buffered copy still moves every byte, and no faster than the sleeping receiver
    // allows by more than the saved per-message work.
    let (bp, bs) = (run_on(p, SockStack::sdp_bc(), PatternKind::Bandwidth, 65536, 1), run_on(sleeps, SockStack::sdp_bc(), PatternKind::Bandwidth, 65536, 1));
    assert_eq!(bp.bytes_sent, bp.bytes_received);
    assert!(bp.value >= bs.value * 0.99, "polling {:.0} vs sleeping {:.0} MB/s", bp.value, bs.value);
}

#[test]
fn a_receive_copy_out_of_dma_written_buffers_is_never_faster() {
    // Without cache injection the adapter's writes leave the received data in memory: the
    // copy out reads its source from there even when the message would fit the cache.
    // (Off in the r805 profile: see docs/model.md, "Eight streams", tried and not kept.)
    let p = Profile::load("r805-connectx-ddr").unwrap();
    assert!(!p.stack.as_ref().unwrap().dma_writes_memory);
    let mut dma = p.clone();
    dma.stack.as_mut().unwrap().dma_writes_memory = true;
    for stack in [SockStack::sdp_bc(), ud(true, true)] {
        let (cached, uncached) = (run_on(p.clone(), stack, PatternKind::Latency, 65536, 1), run_on(dma.clone(), stack, PatternKind::Latency, 65536, 1));
        assert!(uncached.value > cached.value, "{}: {:.1} us from memory vs {:.1} us cached", stack.describe(), uncached.value, cached.value);
    }
    // A message far beyond the cache is copied from memory either way.
    let st = dma.stack.as_ref().unwrap();
    let big = 4 * st.cache_bytes;
    assert_eq!(st.rx_copy_ps(big, big), p.stack.as_ref().unwrap().copy_ps(big, big));
}

#[test]
fn releasing_ipoib_buffers_in_the_receiving_process_relieves_the_interrupt_core() {
    // Moving part of the per-datagram receive cost from the interrupt core to the process
    // that copies the data out keeps a one-packet message's latency (both are on its path)
    // and lets eight streams, whose processes run on eight cores, carry more.
    // (Off in the r805 profile: see docs/model.md, "Eight streams", tried and not kept.)
    let p = Profile::load("r805-connectx-ddr").unwrap();
    assert_eq!(p.stack.as_ref().unwrap().ipoib_rx_free_ns, 0.0);
    let mut split = p.clone();
    let st = split.stack.as_mut().unwrap();
    st.ipoib_rx_ns -= 1000.0;
    st.ipoib_rx_free_ns = 1000.0;
    let (a, b) = (run_on(p.clone(), ud(true, true), PatternKind::Latency, 1, 1), run_on(split.clone(), ud(true, true), PatternKind::Latency, 1, 1));
    assert!((a.value - b.value).abs() < 0.01 * a.value, "latency {:.2} us vs {:.2} us split", a.value, b.value);
    let (a, b) = (run_on(p, ud(true, true), PatternKind::Bandwidth, 65536, 8), run_on(split, ud(true, true), PatternKind::Bandwidth, 65536, 8));
    assert!(b.value > a.value * 1.1, "8 streams: {:.0} MB/s split vs {:.0} on the interrupt core", b.value, a.value);
    assert_eq!(b.bytes_sent, b.bytes_received);
}

#[test]
fn a_lone_process_woken_on_the_interrupt_core_shares_it_and_eight_pinned_streams_do_not() {
    // Affine wake-ups (Linux wake_affine): the softirq wakes a node's only socket process on
    // the interrupt core, so one stream's driver, TCP and copy work share a core and it
    // carries less; with a process on every core nothing moves. A ping-pong is serial
    // either way. (On in the r805 profile: see docs/model.md, "Affine wake-ups".)
    let affine = Profile::load("r805-connectx-ddr").unwrap();
    assert!(affine.stack.as_ref().unwrap().wake_affine);
    let mut p = affine.clone();
    p.stack.as_mut().unwrap().wake_affine = false;
    for stack in [ud(true, true), SockStack::new(SockKind::IpoibRc), SockStack::sdp_bc()] {
        let (own, shared) = (run_on(p.clone(), stack, PatternKind::Bandwidth, 65536, 1), run_on(affine.clone(), stack, PatternKind::Bandwidth, 65536, 1));
        // TCP's per-packet receive work competes with the copy; SDP's per-message work is
        // small enough that its stream is bound elsewhere, but never gains.
        let tcp = stack.kind != SockKind::Sdp;
        assert!(shared.value < own.value || (!tcp && shared.value <= own.value), "{}: one stream {:.0} MB/s on the interrupt core vs {:.0} on its own", stack.describe(), shared.value, own.value);
        assert_eq!(shared.bytes_sent, shared.bytes_received);
        let (own, shared) = (run_on(p.clone(), stack, PatternKind::Latency, 1, 1), run_on(affine.clone(), stack, PatternKind::Latency, 1, 1));
        assert!((own.value - shared.value).abs() < 0.01 * own.value, "{}: latency {:.2} vs {:.2} us", stack.describe(), own.value, shared.value);
    }
    let (own, shared) = (run_on(p, ud(true, true), PatternKind::Bandwidth, 65536, 8), run_on(affine, ud(true, true), PatternKind::Bandwidth, 65536, 8));
    assert_eq!(own.value, shared.value, "eight pinned streams");
}

#[test]
fn doorbells_take_the_bus_when_written_so_a_burst_of_posts_does_not_fence_off_payload_reads() {
    // Software segmentation posts a 64 KiB segment as 32 one-packet sends, one every
    // microsecond or so, all computed in one CPU slot. Booked on the bus when the CPU
    // writes them, the doorbells leave the payload reads room and the packets leave at the
    // wire rate, so a large message without LSO is about as fast as with it (booked ahead,
    // the 0.9 us gaps between them could hold no 2 KiB read: GSO was 9 % slower at 1 MiB).
    let gso = run(ud(true, false), PatternKind::Latency, 1 << 20, 1);
    let lso = run(ud(true, true), PatternKind::Latency, 1 << 20, 1);
    assert!(gso.value < lso.value * 1.03, "1 MiB: GSO {:.0} us vs LSO {:.0} us", gso.value, lso.value);
}

#[test]
fn a_one_packet_tail_goes_out_at_once_rather_than_waiting_for_an_ack() {
    // Linux defers only a multi-segment TSO/GSO skb (tcp_write_xmit: tcp_tso_should_defer
    // when tso_segs > 1); a tail of one MSS or less passes Nagle's test (the earlier runt
    // was acknowledged) and leaves behind the full segment. So a message one LSO request
    // plus a one-packet tail long costs about one packet more than the request alone,
    // however long the receiver takes to acknowledge (with LRO, not before its aggregate).
    let st = Profile::load("r805-connectx-ddr").unwrap().stack.unwrap();
    let mss = st.ipoib_mtu_bytes - st.ip_header_bytes;
    let full = st.offload_max_bytes / (mss + st.ipoib_header_bytes + st.ip_header_bytes) * mss;
    for stack in [ud(false, false), ud(true, false), ud(false, true), ud(true, true)] {
        let (req, tail) = (run(stack, PatternKind::Latency, full, 1), run(stack, PatternKind::Latency, full + mss / 2, 1));
        assert!(tail.value < req.value + 8.0, "{}: {} B {:.1} us vs {} B {:.1} us", stack.describe(), full + mss / 2, tail.value, full, req.value);
    }
}

#[test]
fn server_cpu_is_a_share_of_the_traffic_not_of_the_timers_after_it() {
    // A short TCP stream of small messages keeps the receiving server busy while it runs;
    // the simulation then runs on to its last delayed-ACK timer, 40 ms after the data. The
    // share is taken over the traffic, as a benchmark's CPU figure covers its test's run.
    for stack in [SockStack::ipoib_ud(), SockStack::new(SockKind::IpoibRc), SockStack::new(SockKind::Eth)] {
        let p = run(stack, PatternKind::Bandwidth, 64, 1);
        let cores = Profile::load("r805-connectx-ddr").unwrap().host.cores as f64;
        let over_run = p.server_busy_ps as f64 / (p.sim_time_ps as f64 * cores) * 100.0;
        assert!(p.sim_time_ps > 40_000_000_000, "{}: the run ends with the delayed-ACK timer ({} ps)", stack.describe(), p.sim_time_ps);
        assert!(p.server_cpu_percent > 5.0 * over_run, "{}: {:.1} % over the traffic, {:.1} % over the whole run", stack.describe(), p.server_cpu_percent, over_run);
        assert!(p.server_cpu_percent <= 100.0);
    }
}

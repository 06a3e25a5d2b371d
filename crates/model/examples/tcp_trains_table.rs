//! TCP in socket trains against the same runs without: for five TCP stacks (Ethernet with the
//! profile's LSO and LRO, without them, without them at an MTU of 2100; IPoIB-UD without and
//! with LSO and LRO) and stream bandwidth and latency at several sizes and stream counts,
//! (eight streams of 64 KiB: ipoib-offload fig 4's set-up) the value packet by packet, with packet trains (`Scenario::trains`, TCP's datagrams one
//! by one) and with TCP's own trains too (`Scenario::tcp_trains`), and the events each took.
//! Usage: cargo run --release -p interlab-model --example tcp_trains_table
use interlab_model::ulp::sock::{SockKind, SockStack};
use interlab_model::{Ports, Profile, Scenario, Service};
use interlab_patterns::{Op, PatternKind, PatternSpec};
use std::sync::Arc;
fn main() {
    let eth = SockStack::new(SockKind::Eth);
    let ud = SockStack::ipoib_ud();
    let stacks = [eth, SockStack { lso: Some(false), lro: Some(false), ..eth }, SockStack { lso: Some(false), lro: Some(false), eth_mtu: 2100, ..eth }, ud, SockStack { lso: Some(true), lro: Some(true), ..ud }];
    for stack in stacks {
        for (kind, size, procs) in [(PatternKind::Bandwidth, 65536, 1), (PatternKind::Bandwidth, 1 << 20, 1), (PatternKind::Bandwidth, 1 << 20, 4), (PatternKind::Bandwidth, 65536, 8), (PatternKind::Latency, 4, 1), (PatternKind::Latency, 16384, 1), (PatternKind::Latency, 262144, 1), (PatternKind::Latency, 65536, 2)] {
            let mut r = Vec::new();
            for (tr, tcp) in [(false, false), (true, false), (true, true)] {
                let p = Arc::new(Profile::load("r805-connectx-ddr").unwrap());
                let mut v = Scenario::new(p, Service::Rc, Ports::One, procs);
                v.sock = Some(stack);
                (v.trains, v.tcp_trains) = (tr, tcp);
                let (warmup, iterations, window) = if kind == PatternKind::Latency { (2, 10, 1) } else { (1, 3, 16) };
                let p = v.run(&PatternSpec { kind, op: Op::Send, size, window, warmup, iterations }).unwrap();
                r.push((p.value, p.events));
            }
            println!("{:28} {:?} {size:8} x{procs}: pkt {:9.2} ({:7}) trains {:9.2} ({:+.2}%) tcp-trains {:9.2} ({:+.2}%, {:7} ev)", stack.describe(), kind, r[0].0, r[0].1, r[1].0, (r[1].0 / r[0].0 - 1.0) * 100.0, r[2].0, (r[2].0 / r[0].0 - 1.0) * 100.0, r[2].1);
        }
    }
}

//! The `bench model` TCP row on its own (for profiling): a bulk TCP stream of 1 MiB writes
//! over 8 Gb/s Ethernet with 2 KiB segments, in socket trains (`0` as the first argument:
//! packet by packet). Usage: tcp_bulk [trains 0|1] [MiB]
use interlab_model::hw::link::LineCode;
use interlab_model::ulp::sock::{SockKind, SockStack};
use interlab_model::{Ports, Profile, Scenario, Service};
use interlab_patterns::{Op, PatternKind, PatternSpec};
use std::sync::Arc;
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let trains = args.get(1).is_none_or(|a| a != "0");
    let mib: u32 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(191);
    let mut p = Profile::load("r805-connectx-ddr").unwrap();
    let e = p.eth.as_mut().unwrap();
    (e.link.lane_gbps, e.link.lanes, e.link.code) = (8.25, 1, LineCode::B64B66);
    e.link.framing_bytes = 2;
    e.link.cable_m = 1000.0 / e.link.prop_ns_per_m;
    let mut s = Scenario::new(Arc::new(p), Service::Rc, Ports::One, 1);
    s.sock = Some(SockStack { eth_mtu: 2100, lso: Some(false), lro: Some(false), ..SockStack::new(SockKind::Eth) });
    (s.trains, s.tcp_trains) = (trains, trains);
    let spec = PatternSpec { kind: PatternKind::Bandwidth, op: Op::Send, size: 1 << 20, window: mib, warmup: 0, iterations: 1 };
    let t = std::time::Instant::now();
    let r = s.run(&spec).unwrap();
    println!("trains {trains}: {:.1} MB/s, {} events, {:.3} s", r.value, r.events, t.elapsed().as_secs_f64());
}

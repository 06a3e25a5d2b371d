//! One socket point with per-core detail: `sock_one PROFILE STACK KIND SIZE [PROCS]`
//! (STACK: ipoib-ud[+lro][+lso] | ipoib-rc | eth[+mtu1500][+static] | sdp | sdp-bc | sdp-zc).
use interlab_model::ulp::sock::{SockKind, SockStack};
use interlab_model::{Ports, Profile, Service, Scenario};
use interlab_patterns::{Op, PatternKind, PatternSpec};
use std::sync::Arc;

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let p = Arc::new(Profile::load(&a[1]).expect("profile"));
    let mut parts = a[2].split('+');
    let mut s = match parts.next().unwrap() {
        "ipoib-ud" => SockStack::ipoib_ud(),
        "ipoib-rc" => SockStack::new(SockKind::IpoibRc),
        "eth" => SockStack::new(SockKind::Eth),
        "sdp-bc" => SockStack::sdp_bc(),
        "sdp-zc" => SockStack { sdp_zcopy_threshold: 1, ..SockStack::new(SockKind::Sdp) },
        _ => SockStack::new(SockKind::Sdp),
    };
    for x in parts {
        match x {
            "lro" => s.lro = Some(true),
            "lso" => s.lso = Some(true),
            "static" => s.aic = false,
            "nolso" => s.lso = Some(false),
            "nolro" => s.lro = Some(false),
            "mtu1500" => s.eth_mtu = 1500,
            _ => {}
        }
    }
    let kind = if a[3] == "lat" { PatternKind::Latency } else { PatternKind::Bandwidth };
    let size: u64 = a[4].parse().unwrap();
    let procs: u32 = a.get(5).map_or(1, |x| x.parse().unwrap());
    let mut v = Scenario::new(p, Service::Rc, Ports::One, procs);
    v.sock = Some(s);
    let window: u32 = std::env::var("W").ok().and_then(|w| w.parse().ok()).unwrap_or(64);
    let iters: u32 = std::env::var("IT").ok().and_then(|w| w.parse().ok()).unwrap_or(10);
    let spec = PatternSpec { kind, op: Op::Send, size, window, warmup: 2, iterations: iters };
    let pt = v.run(&spec).unwrap();
    println!("{} {} {size}: {:.2} {} ({:.0} Mb/s), events {}, sim {:.1} us", s.describe(), a[3], pt.value, pt.unit, pt.value * 8.0, pt.events, pt.sim_time_ps as f64 / 1e6);
}

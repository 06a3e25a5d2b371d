//! Prints the socket stacks' key figures on the vpi/ipoib-offload and sdp profiles (a quick
//! look while calibrating; the studies run the full curves).
//! `cargo run --release -p interlab-model --example sock_quick [profile]`

use interlab_model::ulp::sock::{SockKind, SockStack};
use interlab_model::{Ports, Profile, Service, Scenario};
use interlab_patterns::{Op, PatternKind, PatternSpec};
use std::sync::Arc;

fn run(p: &Arc<Profile>, s: SockStack, kind: PatternKind, size: u64, procs: u32) -> (f64, f64) {
    let mut v = Scenario::new(p.clone(), Service::Rc, Ports::One, procs);
    v.sock = Some(s);
    let (warmup, iterations) = if kind == PatternKind::Latency { (5, 50) } else { (2, 10) };
    let spec = PatternSpec { kind, op: Op::Send, size, window: 64, warmup, iterations };
    match v.run(&spec) {
        Ok(pt) => (pt.value, pt.server_cpu_percent),
        Err(e) => {
            eprintln!("{}: {e}", s.describe());
            (f64::NAN, 0.0)
        }
    }
}

fn main() {
    let id = std::env::args().nth(1).unwrap_or_else(|| "r805-connectx-ddr".into());
    let p = Arc::new(Profile::load(&id).expect("profile"));
    let eth = p.eth.is_some();
    let mut stacks = vec![
        SockStack::new(SockKind::IpoibRc),
        SockStack::ipoib_ud(),
        SockStack { lro: Some(true), ..SockStack::ipoib_ud() },
        SockStack { lso: Some(true), ..SockStack::ipoib_ud() },
        SockStack { lro: Some(true), lso: Some(true), ..SockStack::ipoib_ud() },
        SockStack::sdp_bc(),
        SockStack { sdp_zcopy_threshold: 1, ..SockStack::new(SockKind::Sdp) },
        SockStack::new(SockKind::Sdp),
    ];
    if eth {
        stacks.push(SockStack::new(SockKind::Eth));
        stacks.push(SockStack { aic: false, ..SockStack::new(SockKind::Eth) });
        stacks.push(SockStack { eth_mtu: 1500, ..SockStack::new(SockKind::Eth) });
    }
    let mbps = if eth { 8.0 } else { 1.0 };
    let unit = if eth { "Mb/s" } else { "MB/s" };
    let sizes = [1u64, 64, 512, 2048, 4096, 8192, 16384, 65536, 262144, 1 << 20];
    println!("latency (us) at sizes {sizes:?}");
    for &s in &stacks {
        let v: Vec<String> = sizes.iter().map(|&z| format!("{:7.1}", run(&p, s, PatternKind::Latency, z, 1).0)).collect();
        println!("{:24} {}", s.describe(), v.join(" "));
    }
    println!("bandwidth ({unit}) single stream");
    for &s in &stacks {
        let v: Vec<String> = sizes.iter().map(|&z| format!("{:7.0}", run(&p, s, PatternKind::Bandwidth, z, 1).0 * mbps)).collect();
        println!("{:24} {}", s.describe(), v.join(" "));
    }
    println!("bandwidth ({unit}) 8 streams (server CPU %)");
    for &s in &stacks {
        let v: Vec<String> = [4096u64, 65536, 1 << 20]
            .iter()
            .map(|&z| {
                let (b, c) = run(&p, s, PatternKind::Bandwidth, z, if eth { 8 } else { 4 });
                format!("{:7.0} ({c:3.0}%)", b * mbps)
            })
            .collect();
        println!("{:24} {}", s.describe(), v.join(" "));
    }
}

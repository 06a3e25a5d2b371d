//! The ipoib-offload fig2 LRO latency values (per size: the four LRO/LSO combinations, the
//! best-LRO against best-no-LRO reduction, its mean over 64 KiB and up, the LSO-off gain) on
//! the r805 profile, with `[stack]` costs overridden from the command line: a quick look at
//! which cost moves which value (docs/model.md, "LRO at 128 KiB-1 MiB").
//! `cargo run --release -p interlab-model --example lro_quick [key=value ...]`
//! (keys: tcp_rx_ns tcp_tx_ns ip_rx_ns ipoib_rx_ns ipoib_tx_ns wakeup_ns tcp_ack_tx_ns
//! tcp_ack_rx_ns syscall_ns interrupt_ns wake_affine mem_copy_mbytes_per_s cache_bytes);
//! FULL=1 adds the sizes below 2 KiB and the mean over all sizes, BW=1 one- and eight-stream
//! bandwidths at 64 KiB.

use interlab_model::ulp::sock::{SockKind, SockStack};
use interlab_model::{Ports, Profile, Service, Scenario};
use interlab_patterns::{Op, PatternKind, PatternSpec};
use std::sync::Arc;

fn run(p: &Arc<Profile>, s: SockStack, kind: PatternKind, size: u64, procs: u32) -> f64 {
    let mut v = Scenario::new(p.clone(), Service::Rc, Ports::One, procs);
    v.sock = Some(s);
    let (warmup, iterations) = if kind == PatternKind::Latency { (5, 30) } else { (2, 10) };
    let spec = PatternSpec { kind, op: Op::Send, size, window: 64, warmup, iterations };
    v.run(&spec).map(|p| p.value).unwrap_or(f64::NAN)
}

fn main() {
    let mut prof = Profile::load("r805-connectx-ddr").expect("built-in profile");
    for a in std::env::args().skip(1) {
        let Some((k, v)) = a.split_once('=') else {
            eprintln!("expected key=value, found `{a}`");
            std::process::exit(2);
        };
        let Ok(f) = v.parse::<f64>() else {
            eprintln!("{k}: `{v}` is not a number");
            std::process::exit(2);
        };
        let st = prof.stack.as_mut().expect("r805 has [stack]");
        match k {
            "tcp_rx_ns" => st.tcp_rx_ns = f,
            "tcp_tx_ns" => st.tcp_tx_ns = f,
            "ip_rx_ns" => st.ip_rx_ns = f,
            "ipoib_rx_ns" => st.ipoib_rx_ns = f,
            "ipoib_tx_ns" => st.ipoib_tx_ns = f,
            "wakeup_ns" => st.wakeup_ns = f,
            "tcp_ack_tx_ns" => st.tcp_ack_tx_ns = f,
            "tcp_ack_rx_ns" => st.tcp_ack_rx_ns = f,
            "syscall_ns" => st.syscall_ns = f,
            "interrupt_ns" => st.interrupt_ns = f,
            "wake_affine" => st.wake_affine = f != 0.0,
            "mem_copy_mbytes_per_s" => st.mem_copy_mbytes_per_s = f,
            "cache_bytes" => st.cache_bytes = f as u64,
            _ => {
                eprintln!("unknown key `{k}` (see the header of examples/lro_quick.rs)");
                std::process::exit(2);
            }
        }
    }
    let p = Arc::new(prof);
    let ud = |lro, lso| SockStack { lro: Some(lro), lso: Some(lso), ..SockStack::ipoib_ud() };
    let full = std::env::var("FULL").is_ok();
    // The sizes of studies/ipoib-offload/fig2.toml.
    let sizes: Vec<u64> = [1u64, 4, 16, 64, 256, 512, 1024].into_iter().chain((11..=20).map(|i| 1u64 << i)).filter(|&z| full || z >= 2048).collect();
    let (mut reds, mut nolso) = (vec![], vec![]);
    for &z in &sizes {
        let [a, b, c, d] = [ud(false, false), ud(true, false), ud(false, true), ud(true, true)].map(|s| run(&p, s, PatternKind::Latency, z, 1));
        let (off, on) = (a.min(c), b.min(d));
        let r = (off - on) / off * 100.0;
        reds.push((z, r));
        if z > 65536 {
            let (with, without) = (c.min(d), a.min(b));
            nolso.push((with - without) / with * 100.0);
        }
        println!("{z:8} B  none {a:8.1}  LRO {b:8.1}  LSO {c:8.1}  both {d:8.1} us  LRO reduction {r:5.1} %");
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    let large: Vec<f64> = reds.iter().filter(|p| p.0 >= 65536).map(|p| p.1).collect();
    let at64k = reds.iter().find(|p| p.0 == 65536).map_or(f64::NAN, |p| p.1);
    println!("LRO reduction: mean over >= 64 KiB {:.1} %, at 64 KiB {at64k:.1} %; LSO-off gain above 64 KiB {:.1} %", mean(&large), mean(&nolso));
    if full {
        println!("LRO reduction, mean over all {} sizes: {:.1} %", reds.len(), mean(&reds.iter().map(|p| p.1).collect::<Vec<_>>()));
    }
    println!("IPoIB-RC 1-byte latency {:.2} us", run(&p, SockStack::new(SockKind::IpoibRc), PatternKind::Latency, 1, 1));
    if std::env::var("BW").is_ok() {
        for s in [ud(false, false), ud(true, false), ud(true, true)] {
            let (one, eight) = (run(&p, s, PatternKind::Bandwidth, 65536, 1), run(&p, s, PatternKind::Bandwidth, 65536, 8));
            println!("{}: 64 KiB, one stream {:.0} Mb/s, eight {:.0} Mb/s", s.describe(), one * 8.0, eight * 8.0);
        }
    }
}

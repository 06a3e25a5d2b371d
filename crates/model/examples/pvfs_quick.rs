//! Parallel file I/O over the sdp study's profile: `pvfs_quick [CLIENTS] [STRIP]` prints the
//! aggregate read and write bandwidth for 1..4 I/O servers over IPoIB, SDP and verbs.
use interlab_model::ulp::sock::SockStack;
use interlab_model::{FileServers, FileStore, Initiator, Ports, Profile, Service, Scenario};
use interlab_patterns::{Op, PatternKind, PatternSpec};
use std::sync::Arc;

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let clients: u32 = a.get(1).map_or(4, |x| x.parse().unwrap());
    let strip: u64 = a.get(2).map_or(65536, |x| x.parse().unwrap());
    let p = Arc::new(Profile::load("xeon24-mt23108-pcix").unwrap());
    let per_pair = 2 << 20;
    for (name, sock) in [("ipoib", Some(SockStack::ipoib_ud())), ("sdp", Some(SockStack::sdp_bc())), ("verbs", None)] {
        for init in [Initiator::Server, Initiator::Clients] {
            let mut line = format!("{name:6} {}", if init == Initiator::Server { "read " } else { "write" });
            for servers in 1..=4 {
                let mut v = Scenario::new(p.clone(), Service::Rc, Ports::One, 1);
                v.sock = sock;
                v.clients = clients;
                v.initiator = init;
                v.io = Some(FileServers { servers, store: FileStore::Ram, bytes_per_pair: per_pair });
                let spec = PatternSpec { kind: PatternKind::Bandwidth, op: Op::Send, size: strip, window: (per_pair / strip) as u32, warmup: 0, iterations: 1 };
                let t0 = std::time::Instant::now();
                match v.run(&spec) {
                    Ok(pt) => line.push_str(&format!("  {servers}: {:7.1} MB/s ({:.2}s, cpu {:.0}%)", pt.value, t0.elapsed().as_secs_f64(), pt.server_cpu_percent)),
                    Err(e) => line.push_str(&format!("  {servers}: {e}")),
                }
            }
            println!("{line}");
        }
    }
}

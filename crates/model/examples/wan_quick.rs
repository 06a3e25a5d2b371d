use interlab_model::*;
use interlab_patterns::*;
use std::sync::Arc;

fn main() {
    let p = Arc::new(Profile::load("woodcrest-infinihost-longbow").unwrap());
    for miles in [0.0, 1400.0, 8600.0] {
        let setup = |service, procs| Scenario { profile: p.clone(), topology: Topology::Wan { miles }, service, ports: Ports::One, procs_per_node: procs, max_events: 2_000_000_000, trains: true, tcp_trains: false, mpi: None, qps_per_port: 1, clients: 1, initiator: Initiator::Server, sock: None, sock_mix: None, io: None };
        for (op, svc) in [(Op::Send, Service::Rc), (Op::RdmaWrite, Service::Rc), (Op::RdmaRead, Service::Rc)] {
            let s = PatternSpec { kind: PatternKind::Latency, op, size: 4, window: 1, warmup: 2, iterations: 5 };
            let r = setup(svc, 1).run(&s).unwrap();
            println!("{miles} lat {} {:.4} ms", op.name(), r.value / 1000.0);
        }
        for (op, svc, name) in [(Op::Send, Service::Rc, "rc send"), (Op::Send, Service::Uc, "uc send"), (Op::RdmaWrite, Service::Rc, "rc write"), (Op::RdmaRead, Service::Rc, "rc read")] {
            let mut line = String::new();
            for size in [2048u64, 65536, 1 << 20] {
                let s = PatternSpec { kind: PatternKind::Pipelined, op, size, window: 128, warmup: 128, iterations: 256 };
                let t = std::time::Instant::now();
                let r = setup(svc, 1).run(&s).unwrap();
                line += &format!(" {}:{:.0}({:.2}s)", size, r.value, t.elapsed().as_secs_f64());
            }
            println!("{miles} {name:10}{line}");
        }
    }
}

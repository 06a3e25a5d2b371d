use interlab_model::*;
use interlab_patterns::*;
use std::sync::Arc;

fn main() {
    for prof in ["xeon-mt25208-pcie", "xeon-mt23108-pcix"] {
        let p = Arc::new(Profile::load(prof).unwrap());
        let setup = |ports, procs| Scenario { profile: p.clone(), topology: Topology::Lan, service: Service::Rc, ports, procs_per_node: procs, max_events: 500_000_000, trains: true, tcp_trains: false, mpi: None, qps_per_port: 1, clients: 1, initiator: Initiator::Server, sock: None, sock_mix: None, io: None };
        for op in Op::ALL {
            let s = PatternSpec { kind: PatternKind::Latency, op, size: 4, window: 1, warmup: 10, iterations: 100 };
            let r = setup(Ports::One, 1).run(&s).unwrap();
            println!("{prof} lat {:10} {:.2} us", op.name(), r.value);
        }
        for (kind, ports, procs, name) in [
            (PatternKind::Bandwidth, Ports::One, 1, "uni"),
            (PatternKind::BiBandwidth, Ports::One, 1, "bi"),
            (PatternKind::Bandwidth, Ports::Stripe { threshold: 8192 }, 1, "2port uni stripe"),
            (PatternKind::BiBandwidth, Ports::Stripe { threshold: 8192 }, 1, "2port bi stripe"),
            (PatternKind::BiBandwidth, Ports::Bind, 1, "2port bi bind"),
            (PatternKind::Bandwidth, Ports::Bind, 2, "2proc uni bind"),
            (PatternKind::Bandwidth, Ports::Stripe { threshold: 8192 }, 2, "2proc uni stripe"),
            (PatternKind::BiBandwidth, Ports::Bind, 2, "2proc bi bind"),
            (PatternKind::BiBandwidth, Ports::Stripe { threshold: 8192 }, 2, "2proc bi stripe"),
        ] {
            let mut line = String::new();
            for size in [4u64, 1024, 4096, 16384, 65536, 1 << 20] {
                let s = PatternSpec { kind, op: Op::RdmaWrite, size, window: 64, warmup: 2, iterations: 5 };
                let t = std::time::Instant::now();
                let r = setup(ports, procs).run(&s).unwrap();
                line += &format!(" {}:{:.0}({:.2}s,{}ev)", size, r.value, t.elapsed().as_secs_f64(), r.events);
            }
            println!("{prof} {name:18}{line}");
        }
    }
}

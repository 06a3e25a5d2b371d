//! Topology building: the nodes (host, adapter, channels and their protocols, the
//! processes' programs), the switch or switches and the wide-area path of a scenario, as a
//! simulation ready to run.

use super::{Initiator, Ports, Scenario, Topology, DEFAULT_STRIPE_THRESHOLD};
use interlab_patterns::PatternKind;
use crate::adapter::PortUse;
use crate::event::Ev;
use crate::fileio::FileIo;
use crate::hw::cpu::Cores;
use crate::hw::extender::{SonetDir, WanPath};
use crate::hw::wan_hop::WanHop;
use crate::hw::switch::{SharedSwitch, Switch, SwitchComponent};
use std::cell::RefCell;
use std::rc::Rc;
use crate::node::{ChanUlp, Node};
use crate::transport::packet::Service;
use crate::ulp::mpi::{MpiDesign, MpiEnd};
use crate::ulp::sock::SockEnd;
use interlab_kernel::{ComponentId, Simulation};
use interlab_patterns::{PatternSpec, Program, Role};

/// A scenario's components, built and started.
pub(super) struct Fabric {
    pub sim: Simulation<Ev>,
    /// The nodes: the servers (one, or the I/O servers), then the clients.
    pub nodes: Vec<ComponentId>,
}

/// How a packet crosses the switches and the wide-area path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum WanHops {
    /// Computed ahead wherever that gives the hop-by-hop times: a switch forwards a packet
    /// as its adapter sends it ([`Switch::forward_at_send`]), the near switch computes the
    /// path and the far switch ([`WanHop`]).
    Inline,
    /// Every hop its own event: the switch, the path, the far switch (the reference the
    /// inline hops are tested against).
    #[cfg_attr(not(test), allow(dead_code))]
    Events,
}

/// Builds `s` for the pattern point `spec` (already validated).
pub(super) fn build(s: &Scenario, spec: &PatternSpec) -> Fabric {
    build_with(s, spec, WanHops::Inline)
}

/// Builds `s` for the pattern point `spec` (already validated), the wide-area hops as `hops`.
pub(super) fn build_with(s: &Scenario, spec: &PatternSpec, hops: WanHops) -> Fabric {
        let prof = s.profile.clone();
        let links = s.port_links();
        let ports = prof.adapter.ports;
        let mut sim: Simulation<Ev> = Simulation::new();
        // Components: the server nodes (one, or the I/O servers), then the clients, then the
        // switch(es), then the WAN path.
        let n_servers = s.io.map_or(1, |f| f.servers);
        let n_nodes = s.clients + n_servers;
        let node_ids: Vec<ComponentId> = (0..n_nodes).map(ComponentId).collect();
        let sw = |i: u32| ComponentId(n_nodes + i);
        let (switch_of, mut switches): (Vec<ComponentId>, Vec<Switch>) = match s.topology {
            Topology::Lan => (vec![sw(0); n_nodes as usize], vec![Switch::new(&prof.switch)]),
            Topology::Wan { .. } => (vec![sw(0), sw(1)], vec![Switch::new(&prof.switch), Switch::new(&prof.switch)]),
        };
        let mut nodes: Vec<Node> = Vec::new();
        // One machine's CPUs for every node (client and daemon on one host).
        let machine = prof.host.shared.then(|| Cores::pool(prof.host.cores as usize));
        for i in 0..n_nodes {
            let swi = &mut switches[(switch_of[i as usize].0 - n_nodes) as usize];
            let base = swi.ports.len() as u16;
            let mut n = Node::new(i, prof.clone(), switch_of[i as usize], base, links.clone());
            for p in 0..ports {
                swi.add_node_port(i, node_ids[i as usize], p as u8, &n.adapter.links[p as usize]);
            }
            // A latency point has one message in flight: a train's store-and-forward (its
            // whole engine and DMA time before its first packet leaves) would show in full
            // in every sample (+10 to +30 % at 32 and 64 KiB), where a stream amortises it.
            if !s.trains || spec.kind == PatternKind::Latency {
                n.adapter.train_max = 1;
            }
            if s.trains && s.tcp_trains {
                // A port's share of the packets the adapter prefetches: one train on the
                // wire while the next is fetched.
                n.adapter.sock_train_max = (prof.adapter.tx_depth as u64 / ports as u64).max(1);
            }
            if let Some(pool) = &machine {
                n.host.share_cores(pool.clone(), i as usize);
            }
            nodes.push(n);
        }
        let wan = if let Topology::Wan { miles } = s.topology {
            let w = prof.wan.as_ref().expect("validated");
            let wan_id = sw(2);
            let link = w.ib_link(&prof.link);
            let a = switches[0].add_uplink(wan_id, 0, &link);
            let b = switches[1].add_uplink(wan_id, 1, &link);
            // One node per site: a far switch's ports to its node are fed by its uplink alone.
            let one_node_per_site = switches.iter().all(|x| x.nodes_served() == 1);
            let inline = (hops == WanHops::Inline && one_node_per_site).then(|| {
                let far_of = |near: &Switch, far: &Switch| {
                    let (ports, routes) = far.node_ports();
                    WanHop::new(SonetDir::new(w, miles), near.timing().0, far.timing(), ports, routes, link.prop_ps())
                };
                (far_of(&switches[0], &switches[1]), far_of(&switches[1], &switches[0]))
            });
            match inline {
                Some((Some(ab), Some(ba))) => {
                    switches[0].set_far(ab);
                    switches[1].set_far(ba);
                    None
                }
                _ => Some(WanPath::new(w, miles, (sw(0), a), (sw(1), b))),
            }
        } else {
            None
        };
        // The server runs one process per client process (an I/O server: one daemon for
        // all); each client its own.
        for (i, n) in nodes.iter_mut().enumerate() {
            let procs = match (i < n_servers as usize, s.io) {
                (true, Some(_)) => 1,
                (true, None) => s.procs_per_node * s.clients,
                (false, _) => s.procs_per_node,
            };
            for k in 0..procs {
                n.host.add_proc(k);
            }
            if let (true, Some(io)) = (i < n_servers as usize, s.io) {
                let f = FileIo {
                    store: io.store,
                    serves_reads: s.initiator == Initiator::Server,
                    file_bytes: io.bytes_per_pair * u64::from(s.clients * s.procs_per_node),
                    copies_reads: s.sock.is_none(),
                };
                n.host.file_io = Some(f);
                // A read daemon's socket sends copy straight from its mapping of the file.
                if f.serves_reads {
                    n.host.app_buffer_bytes = Some(f.file_bytes);
                }
            }
            if let Some(io) = s.io {
                // PVFS: the iod's select() loop and the client library's both move one strip
                // per ready socket in turn (PVFS 1.5 iod.c main loop with jobs.c do_job;
                // socket buffers of IOD_SOCKET_BUFFER_SIZE = 65535 bytes, pvfs_config.h).
                n.host.serve_in_turn = true;
                // A client reads or writes its whole region (bytes_per_pair from each
                // server) with one call, into or out of one buffer (pvfs-test).
                if i >= n_servers as usize {
                    n.host.app_buffer_bytes = Some(io.bytes_per_pair * u64::from(n_servers));
                }
            }
        }
        let bidir = spec.kind.is_bidirectional();
        let completions = spec.kind.needs_completions();
        let chans_per_pair = if bidir { 2 } else { 1 };
        let pairs = (0..s.clients).flat_map(|c| (0..s.procs_per_node).flat_map(move |k| (0..n_servers).map(move |sv| (c, k, sv))));
        for (c, k, sv) in pairs {
            let client = (n_servers + c) as usize;
            let server = sv as usize;
            let server_proc = if s.io.is_some() { 0 } else { (c * s.procs_per_node + k) as u16 };
            for d in 0..chans_per_pair {
                let chan = ((c * s.procs_per_node + k) * n_servers + sv) * chans_per_pair + d;
                let stack = s.stack_of(k);
                let port_list: Vec<u8> = match s.ports {
                    Ports::One if stack.is_some() => vec![s.stack_port(stack.expect("checked"))],
                    Ports::One => vec![0],
                    // Each process pair on its own port; a single pair binds its two
                    // directions to different ports.
                    Ports::Bind if s.procs_per_node > 1 => vec![(k % ports) as u8],
                    Ports::Bind => vec![(chan % ports) as u8],
                    Ports::Stripe { .. } => (0..ports as u8).collect(),
                };
                let use_ = match s.ports {
                    Ports::Stripe { threshold } => PortUse::Stripe { threshold },
                    _ => PortUse::Single,
                };
                let service = match (stack, s.mpi) {
                    (Some(s), _) => s.service(),
                    (_, Some(d)) => match d {
                        MpiDesign::Rc => Service::Rc,
                        MpiDesign::Uc => Service::Uc,
                        MpiDesign::Ud => Service::Ud,
                    },
                    (None, None) => s.service,
                };
                let (mut qa, mut qb) = (Vec::new(), Vec::new());
                for &p in &port_list {
                    for _ in 0..s.qps_per_port.max(1) {
                        let ia = nodes[server].adapter.qps.len() as u32;
                        let ib = nodes[client].adapter.qps.len() as u32;
                        qa.push(nodes[server].adapter.add_qp(p, service, client as u32, p, ib));
                        qb.push(nodes[client].adapter.add_qp(p, service, server as u32, p, ia));
                    }
                }
                let rails = qa.len();
                let th = match s.ports {
                    Ports::Stripe { threshold } => threshold,
                    _ => DEFAULT_STRIPE_THRESHOLD,
                };
                let credits = prof.stack.as_ref().map_or(0, |s| s.sdp_rx_buffers);
                let end_ulp = |proc: u16, qps: &[u32]| match (s.mpi, stack) {
                    (Some(d), _) => ChanUlp::Mpi(MpiEnd::new(d, (rails > 1).then_some(th), prof.mpi.as_ref().expect("validated: MPI needs [mpi]"), proc, qps.to_vec())),
                    (None, Some(s)) => ChanUlp::Sock(SockEnd::new(s, spec.size, credits, proc, qps[0])),
                    (None, None) => ChanUlp::Raw,
                };
                let (ua, ub) = (end_ulp(server_proc, &qa), end_ulp(k as u16, &qb));
                nodes[server].add_chan(chan, qa, use_, server_proc, completions, ua);
                nodes[client].add_chan(chan, qb, use_, k as u16, completions, ub);
                // Direction 0: node 0 initiates; direction 1 (bi-directional): node 1.
                // Direction 0 is initiated by the chosen side; direction 1 (bi-directional) by the other.
                let server_first = (s.initiator == Initiator::Server) == (d == 0);
                let ((init, ip), (resp, rp)) =
                    if server_first { ((server, server_proc), (client, k as u16)) } else { ((client, k as u16), (server, server_proc)) };
                nodes[init].host.add_program(ip, Program::new(*spec, Role::Initiator, chan));
                nodes[resp].host.add_program(rp, Program::new(*spec, Role::Responder, chan));
            }
        }
        if hops == WanHops::Inline {
            // Which input feeds which output: every queue pair's route from its port.
            for (i, n) in nodes.iter().enumerate() {
                let swi = &mut switches[(switch_of[i].0 - n_nodes) as usize];
                let feeds: Vec<(u16, usize)> =
                    n.adapter.qps.iter().map(|q| (n.adapter.switch_port_base + q.port as u16, swi.output_to(q.remote_node, q.remote_port))).collect();
                swi.add_feeds(feeds);
            }
            let shared: Vec<SharedSwitch> = switches.into_iter().map(|x| Rc::new(RefCell::new(x))).collect();
            for (i, mut n) in nodes.into_iter().enumerate() {
                n.adapter.share_switch(shared[(switch_of[i].0 - n_nodes) as usize].clone());
                sim.add(n);
            }
            for x in shared {
                sim.add(SwitchComponent(x));
            }
        } else {
            for n in nodes {
                sim.add(n);
            }
            for s in switches {
                sim.add(s);
            }
        }
        if let Some(w) = wan {
            sim.add(w);
        }
        for &id in &node_ids {
            sim.schedule(id, 0, Ev::Start);
        }
        Fabric { sim, nodes: node_ids }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::Profile;
    use crate::scenario::reduce::{reduce, Point};
    use crate::scenario::Topology;
    use interlab_kernel::Time;
    use interlab_patterns::{Op, PatternKind};
    use std::sync::Arc;

    fn run(s: &Scenario, spec: &PatternSpec, hops: WanHops) -> Point {
        run_with(s, spec, hops, |_| {})
    }

    /// [`run`] with each node set up by `setup` before the run.
    fn run_with(s: &Scenario, spec: &PatternSpec, hops: WanHops, setup: impl Fn(&mut crate::node::Node)) -> Point {
        s.validate(spec).expect("valid");
        let mut f = build_with(s, spec, hops);
        for &id in &f.nodes {
            setup(f.sim.get_mut::<crate::node::Node>(id).expect("node"));
        }
        let stats = f.sim.run_bounded(Time::MAX, s.max_events);
        reduce(s, spec, &f, stats).expect("point")
    }

    /// Every figure of a point but its event count.
    fn figures(p: &Point) -> String {
        format!("{} {} {:?} {} {} {} {} {:?}", p.value, p.unit, p.summary, p.sim_time_ps, p.bytes_sent, p.bytes_received, p.server_cpu_percent, p.by_stack)
    }

    #[test]
    fn wide_area_points_are_the_same_with_the_far_hops_computed_inline_in_fewer_events() {
        let p = Arc::new(Profile::load("woodcrest-infinihost-longbow").expect("profile"));
        let mut checked = 0;
        for miles in [0.0, 1400.0] {
            let base = Scenario { topology: Topology::Wan { miles }, ..Scenario::new(p.clone(), Service::Rc, Ports::One, 1) };
            let cases = [
                (base.clone(), PatternKind::Latency, Op::Send, 4, 1),
                (base.clone(), PatternKind::BiBandwidth, Op::RdmaWrite, 65536, 16),
                (Scenario { service: Service::Ud, ..base.clone() }, PatternKind::Bandwidth, Op::Send, 2048, 64),
                (Scenario { service: Service::Uc, procs_per_node: 2, ..base.clone() }, PatternKind::BiPipelined, Op::Send, 1 << 18, 8),
                (Scenario { mpi: Some(MpiDesign::Ud), ..base.clone() }, PatternKind::BiBandwidth, Op::Send, 1 << 20, 4),
                (Scenario { mpi: Some(MpiDesign::Rc), ..base.clone() }, PatternKind::Bandwidth, Op::Send, 1 << 16, 16),
                (Scenario { trains: false, ..base.clone() }, PatternKind::Pipelined, Op::RdmaRead, 1 << 16, 16),
            ];
            for (s, kind, op, size, window) in cases {
                let spec = PatternSpec { kind, op, size, window, warmup: 2, iterations: 6 };
                let (hops, inline) = (run(&s, &spec, WanHops::Events), run(&s, &spec, WanHops::Inline));
                assert_eq!(figures(&inline), figures(&hops), "{miles} miles, {kind:?} {op:?} {size} bytes, {:?}", s.mpi);
                assert!(inline.events < hops.events, "{} events inline against {} hop by hop", inline.events, hops.events);
                checked += 1;
            }
        }
        assert_eq!(checked, 14);
    }

    /// [`run`] with every delayed-ACK timer queued when it is set (`Sockets::delack_queued_all`)
    /// instead of one per connection at a time.
    fn run_delack_queued_all(s: &Scenario, spec: &PatternSpec) -> Point {
        run_with(s, spec, WanHops::Inline, |n| n.ulps.sock.delack_queued_all = true)
    }

    #[test]
    fn socket_points_are_the_same_with_delayed_ack_timers_chained_in_fewer_events() {
        use crate::ulp::sock::{SockKind, SockStack};
        let p = Arc::new(Profile::load("r805-connectx-ddr").expect("profile"));
        // A stack that acknowledges only on its delayed-ACK timer (every 64th segment at
        // once, after 30 us otherwise): timers that fire, some of them queued by the chain.
        let mut lazy = (*p).clone();
        let st = lazy.stack.as_mut().expect("[stack]");
        (st.ack_every_packets, st.delack_us) = (64, 30.0);
        let lazy = Arc::new(lazy);
        let base = Scenario::new(p.clone(), Service::Rc, Ports::One, 1);
        let sock = |stack: SockStack, procs| Scenario { sock: Some(stack), procs_per_node: procs, ..base.clone() };
        let ud_lro = SockStack { lro: Some(true), ..SockStack::ipoib_ud() };
        let cases = [
            (sock(SockStack::ipoib_ud(), 8), PatternKind::Bandwidth, 4096, 16),
            (sock(ud_lro, 8), PatternKind::Bandwidth, 65536, 8),
            (sock(SockStack::new(SockKind::IpoibRc), 2), PatternKind::BiBandwidth, 1 << 16, 8),
            (sock(SockStack::new(SockKind::Eth), 1), PatternKind::Latency, 100, 1),
            (sock(SockStack::ipoib_ud(), 1), PatternKind::Latency, 1 << 17, 1),
            (Scenario { profile: lazy.clone(), ..sock(SockStack::new(SockKind::IpoibRc), 1) }, PatternKind::Bandwidth, 1 << 16, 8),
            (Scenario { profile: lazy.clone(), ..sock(SockStack::ipoib_ud(), 4) }, PatternKind::Bandwidth, 1 << 14, 8),
            (Scenario { profile: lazy, ..sock(SockStack::ipoib_ud(), 1) }, PatternKind::Latency, 1 << 15, 1),
        ];
        let mut fewer = 0;
        for (s, kind, size, window) in cases {
            let spec = PatternSpec { kind, op: Op::Send, size, window, warmup: 1, iterations: 4 };
            let (chained, all) = (run(&s, &spec, WanHops::Inline), run_delack_queued_all(&s, &spec));
            let what = format!("{kind:?} {size} bytes, {:?}, {} streams, ack every {}", s.sock, s.procs_per_node, s.profile.stack.as_ref().expect("[stack]").ack_every_packets);
            assert_eq!(figures(&chained), figures(&all), "{what}");
            assert!(chained.events <= all.events, "{what}: {} events chained against {} queued", chained.events, all.events);
            fewer += usize::from(chained.events < all.events);
        }
        assert!(fewer >= 5, "the chain saved events in {fewer} cases only");
    }

    #[test]
    fn lan_points_are_the_same_with_packets_forwarded_as_they_are_sent_in_fewer_events() {
        use crate::ulp::sock::{SockKind, SockStack};
        let p = Arc::new(Profile::load("r805-connectx-ddr").expect("profile"));
        let base = Scenario::new(p.clone(), Service::Rc, Ports::One, 1);
        let sock = |kind| Scenario { sock: Some(SockStack::new(kind)), ..base.clone() };
        // (scenario, pattern, op, bytes, window): with several clients the server's port is
        // fed by several inputs, so the packets to it stay events (those to the clients not).
        let cases = [
            (base.clone(), PatternKind::Latency, Op::RdmaWrite, 8, 1),
            (base.clone(), PatternKind::BiBandwidth, Op::Send, 65536, 16),
            (Scenario { ports: Ports::Stripe { threshold: 16384 }, ..base.clone() }, PatternKind::BiPipelined, Op::RdmaWrite, 1 << 20, 4),
            (Scenario { ports: Ports::Bind, procs_per_node: 2, ..base.clone() }, PatternKind::Bandwidth, Op::Send, 1 << 16, 8),
            (Scenario { trains: false, ..base.clone() }, PatternKind::Pipelined, Op::RdmaRead, 1 << 16, 16),
            (sock(SockKind::IpoibUd), PatternKind::BiBandwidth, Op::Send, 1 << 16, 8),
            (sock(SockKind::Eth), PatternKind::Bandwidth, Op::Send, 1 << 16, 8),
            (sock(SockKind::Sdp), PatternKind::Latency, Op::Send, 1 << 14, 1),
            (Scenario { clients: 3, ..base.clone() }, PatternKind::Bandwidth, Op::Send, 1 << 16, 8),
        ];
        for (s, kind, op, size, window) in cases {
            let spec = PatternSpec { kind, op, size, window, warmup: 2, iterations: 6 };
            let (hops, inline) = (run(&s, &spec, WanHops::Events), run(&s, &spec, WanHops::Inline));
            assert_eq!(figures(&inline), figures(&hops), "{kind:?} {op:?} {size} bytes, {:?} {:?} {} clients", s.ports, s.sock, s.clients);
            assert!(inline.events < hops.events, "{} events inline against {} hop by hop", inline.events, hops.events);
        }
    }
}

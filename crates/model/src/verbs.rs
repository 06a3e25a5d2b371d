//! Verbs experiments: two nodes through one switch, processes running a pattern over
//! channels mapped to queue pairs and ports. This is where a pattern point becomes a
//! simulation and a number.

use crate::event::Ev;
use crate::fileio::{FileIo, FileServers, FileStore};
use crate::hw::cpu::Cores;
use crate::hw::extender::WanPath;
use crate::hw::switch::Switch;
use crate::adapter::PortUse;
use crate::node::{ChanUlp, Node};
use crate::ulp::mpi::{MpiDesign, MpiEnd};
use crate::ulp::sock::{SockEnd, SockKind, SockStack};
use crate::profile::Profile;
use crate::transport::packet::Service;
use interlab_kernel::{ComponentId, Simulation, Time};
use interlab_patterns::{Op, PatternKind, PatternSpec, Program, Role, Samples, Summary};
use std::sync::Arc;

/// How processes use the adapter's ports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ports {
    /// Everything on port 1.
    One,
    /// Each message above `threshold` bytes striped evenly over all ports.
    Stripe { threshold: u64 },
    /// Process pair `k` bound to port `k mod ports`; with a single pair, its two directions
    /// are bound to different ports (node A sends on port 1 and receives on port 2).
    Bind,
}

impl Ports {
    /// Spec name.
    pub fn name(self) -> &'static str {
        match self {
            Ports::One => "one",
            Ports::Stripe { .. } => "stripe",
            Ports::Bind => "bind",
        }
    }
}

/// How the two nodes are joined.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Topology {
    /// Both nodes on one switch.
    Lan,
    /// Each node on its own switch; the switches joined by the profile's wide-area
    /// extenders over a loop of this many miles.
    Wan { miles: f64 },
}

/// Everything about a verbs experiment except the pattern point.
#[derive(Debug, Clone)]
pub struct VerbsSetup {
    pub profile: Arc<Profile>,
    pub topology: Topology,
    pub service: Service,
    pub ports: Ports,
    /// Process pairs (one process per node each).
    pub procs_per_node: u32,
    /// Stop after this many events (guards against a scenario that never ends).
    pub max_events: u64,
    /// Let adapters send the bulk of long messages as packet trains (fewer events, same
    /// per-packet accounting); false simulates every packet as its own event.
    pub trains: bool,
    /// Run the pattern through this MPI design instead of raw verbs.
    pub mpi: Option<MpiDesign>,
    /// Queue pairs per port and channel (MPI spreads rendezvous data over them).
    pub qps_per_port: u32,
    /// Client nodes around the server (node 0); 1 for a plain pair. With several, every
    /// client process has its own channel (and server process) to the server: hot-spot,
    /// fan-in and fan-out.
    pub clients: u32,
    /// Which side initiates the pattern on each channel.
    pub initiator: Initiator,
    /// Run the pattern over this socket stack instead of raw verbs or MPI.
    pub sock: Option<SockStack>,
    /// With `sock`: the second half of the process pairs use this stack instead (two
    /// protocols at once on one adapter, as on a VPI adapter's two ports).
    pub sock_mix: Option<SockStack>,
    /// Parallel file I/O: instead of one server, `servers` I/O nodes each running one
    /// daemon that serves every client process over its own channel (all-to-all), moving
    /// the data from or to its file store. [`Initiator::Server`] reads, `Clients` writes.
    pub io: Option<FileServers>,
}

/// Which side of each server-client channel runs the initiating program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Initiator {
    /// The server (node 0): a plain pair's sender, or fan-out.
    Server,
    /// The clients: fan-in (bandwidth) or hot-spot (latency).
    Clients,
}

/// MVAPICH's striping threshold when several QPs share a port (MVAPICH2 `ibv_param.c`:
/// the old MV2_STRIPING_THRESHOLD, 8192; docs/references.md [P2]).
pub const DEFAULT_STRIPE_THRESHOLD: u64 = 8192;

impl VerbsSetup {
    /// A raw-verbs set-up on one switch with the defaults of the other fields.
    pub fn new(profile: Arc<Profile>, service: Service, ports: Ports, procs_per_node: u32) -> Self {
        VerbsSetup {
            profile,
            topology: Topology::Lan,
            service,
            ports,
            procs_per_node,
            max_events: 2_000_000_000,
            trains: true,
            mpi: None,
            qps_per_port: 1,
            clients: 1,
            initiator: Initiator::Server,
            sock: None,
            sock_mix: None,
            io: None,
        }
    }

    /// The stack of process pair `k` (of `procs_per_node`).
    fn stack_of(&self, k: u32) -> Option<SockStack> {
        match (self.sock, self.sock_mix) {
            (Some(_), Some(b)) if k >= self.procs_per_node.div_ceil(2) => Some(b),
            (a, _) => a,
        }
    }
}

/// An invalid combination, explained.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelError(pub String);

impl std::fmt::Display for ModelError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ModelError {}

/// One modelled point.
#[derive(Debug, Clone)]
pub struct Point {
    /// Latency in microseconds or bandwidth in MB/s (10^6 bytes/s).
    pub value: f64,
    /// "us" or "MB/s".
    pub unit: &'static str,
    /// Latency distribution in microseconds (latency patterns).
    pub summary: Option<Summary>,
    /// Events simulated.
    pub events: u64,
    /// Simulated time, picoseconds.
    pub sim_time_ps: Time,
    /// Payload bytes the nodes' adapters sent (conservation checks).
    pub bytes_sent: u64,
    /// Payload bytes the nodes' adapters placed in memory.
    pub bytes_received: u64,
    /// CPU utilisation of the server (node 0) over the run: busy core time / (run time x
    /// cores), percent.
    pub server_cpu_percent: f64,
    /// With two socket stacks at once: each stack's aggregate bandwidth, MB/s.
    pub by_stack: Vec<(String, f64)>,
}

impl VerbsSetup {
    /// Checks the combination before running.
    pub fn validate(&self, spec: &PatternSpec) -> Result<(), ModelError> {
        if !matches!(
            spec.kind,
            PatternKind::Latency | PatternKind::Bandwidth | PatternKind::BiBandwidth | PatternKind::Pipelined | PatternKind::BiPipelined
        ) {
            return Err(ModelError(format!("the verbs model does not run the `{}` pattern yet", spec.kind.name())));
        }
        let mtu = self.profile.link.mtu_bytes as u64;
        if let Some(stack) = self.sock {
            let Some(st) = &self.profile.stack else {
                return Err(ModelError(format!("profile {} has no [stack] section: it cannot model sockets", self.profile.id)));
            };
            for s in [Some(stack), self.sock_mix].into_iter().flatten() {
                s.check(&self.profile).map_err(ModelError)?;
            }
            if self.sock_mix.is_some() && self.procs_per_node < 2 {
                return Err(ModelError("two stacks at once need at least two process pairs (one per stack)".into()));
            }
            if self.ports != Ports::One {
                return Err(ModelError("socket stacks use one port each (ports = \"one\")".into()));
            }
            if self.mpi.is_some() {
                return Err(ModelError("a channel is either MPI or a socket, not both".into()));
            }
            if spec.op != Op::Send {
                return Err(ModelError(format!("sockets send messages (op send), not {}", spec.op.name())));
            }
            if !matches!(spec.kind, PatternKind::Latency | PatternKind::Bandwidth | PatternKind::BiBandwidth) {
                return Err(ModelError(format!("{} runs latency, bandwidth and bibw patterns", stack.name())));
            }
            if stack.kind == SockKind::IpoibUd && st.ipoib_mtu_bytes + st.ipoib_header_bytes > mtu {
                return Err(ModelError(format!("IPoIB MTU {} exceeds the link MTU {mtu}", st.ipoib_mtu_bytes)));
            }
            if spec.size == 0 {
                return Err(ModelError("message size must be at least 1 byte".into()));
            }
            return Ok(());
        }
        if let Some(d) = self.mpi {
            if self.profile.mpi.is_none() {
                return Err(ModelError(format!("profile {} has no [mpi] section: it cannot model MPI", self.profile.id)));
            }
            if spec.op != Op::Send {
                return Err(ModelError(format!("MPI patterns send messages (op send), not {}", spec.op.name())));
            }
            if !matches!(spec.kind, PatternKind::Latency | PatternKind::Bandwidth | PatternKind::BiBandwidth) {
                return Err(ModelError(format!("MPI over {} runs latency, bandwidth and bibw patterns", d.name())));
            }
            if spec.size == 0 {
                return Err(ModelError("message size must be at least 1 byte".into()));
            }
            return Ok(());
        }
        if self.qps_per_port != 1 {
            return Err(ModelError("several QPs per port are used by MPI channels only (set mpi)".into()));
        }
        match self.service {
            Service::Ud if spec.op != Op::Send => {
                return Err(ModelError(format!("UD carries only send/receive, not {}", spec.op.name())))
            }
            Service::Ud if spec.size > mtu => {
                return Err(ModelError(format!("UD messages are single packets: {} bytes exceeds the {mtu}-byte MTU", spec.size)))
            }
            Service::Uc if spec.op.is_request_response() => {
                return Err(ModelError(format!("UC has no {} (RC only)", spec.op.name())))
            }
            _ => {}
        }
        if spec.op.is_request_response() && matches!(spec.kind, PatternKind::BiBandwidth | PatternKind::Bandwidth) {
            return Err(ModelError(format!(
                "windowed bandwidth ends each window with a reply message; use the pipelined pattern for {}",
                spec.op.name()
            )));
        }
        if spec.size == 0 {
            return Err(ModelError("message size must be at least 1 byte".into()));
        }
        if self.procs_per_node == 0 {
            return Err(ModelError("at least one process per node".into()));
        }
        if self.clients == 0 {
            return Err(ModelError("at least one client node".into()));
        }
        if let Some(io) = &self.io {
            if io.servers == 0 {
                return Err(ModelError("at least one I/O server".into()));
            }
            if self.topology != Topology::Lan || self.mpi.is_some() || self.sock_mix.is_some() {
                return Err(ModelError("parallel file I/O runs on one switch over verbs or one socket stack".into()));
            }
            if !matches!(spec.kind, PatternKind::Bandwidth) {
                return Err(ModelError("parallel file I/O moves data in bandwidth rounds: use the bandwidth pattern".into()));
            }
            if self.profile.stack.is_none() && io.store == FileStore::Ram {
                return Err(ModelError(format!("profile {} has no [stack] section: a RAM file store copies at its rates", self.profile.id)));
            }
            if let FileStore::SyncDisk { mbytes_per_s } = io.store {
                if !(mbytes_per_s.is_finite() && mbytes_per_s > 0.0) {
                    return Err(ModelError(format!("disk rate must be a positive number of MB/s, found {mbytes_per_s}")));
                }
            }
        }
        if let Topology::Wan { miles } = self.topology {
            if self.clients > 1 {
                return Err(ModelError("a wide-area path joins two nodes: use one client".into()));
            }
            if self.profile.wan.is_none() {
                return Err(ModelError(format!("profile {} has no [wan] section: it cannot model a wide-area path", self.profile.id)));
            }
            if !(miles.is_finite() && miles >= 0.0) {
                return Err(ModelError(format!("distance must be a non-negative number of miles, found {miles}")));
            }
        }
        if let Ports::Stripe { .. } = self.ports {
            if self.profile.adapter.ports < 2 {
                return Err(ModelError(format!("striping needs two ports; profile {} has one", self.profile.id)));
            }
        }
        Ok(())
    }

    /// The profile as this run uses it (an Ethernet MTU chosen by the stack applied).
    fn run_profile(&self) -> Arc<Profile> {
        let mtu = [self.sock, self.sock_mix].into_iter().flatten().find(|s| s.kind == SockKind::Eth && s.eth_mtu > 0).map(|s| s.eth_mtu);
        match (mtu, &self.profile.eth) {
            (Some(m), Some(_)) => {
                let mut p = (*self.profile).clone();
                p.eth.as_mut().expect("checked").link.mtu_bytes = m;
                Arc::new(p)
            }
            _ => self.profile.clone(),
        }
    }

    /// Adapter port a channel of `stack` uses (InfiniBand traffic avoids the Ethernet port).
    fn stack_port(&self, stack: SockStack) -> u8 {
        let eth = self.profile.eth.as_ref().map(|e| e.port);
        match (stack.kind, eth) {
            (SockKind::Eth, Some(p)) => p,
            (_, Some(0)) => 1,
            _ => 0,
        }
    }

    /// Runs one pattern point.
    pub fn run(&self, spec: &PatternSpec) -> Result<Point, ModelError> {
        self.validate(spec)?;
        let prof = self.run_profile();
        let ports = prof.adapter.ports;
        let mut sim: Simulation<Ev> = Simulation::new();
        // Components: the server nodes (one, or the I/O servers), then the clients, then the
        // switch(es), then the WAN path.
        let n_servers = self.io.map_or(1, |f| f.servers);
        let n_nodes = self.clients + n_servers;
        let node_ids: Vec<ComponentId> = (0..n_nodes).map(ComponentId).collect();
        let sw = |i: u32| ComponentId(n_nodes + i);
        let (switch_of, mut switches): (Vec<ComponentId>, Vec<Switch>) = match self.topology {
            Topology::Lan => (vec![sw(0); n_nodes as usize], vec![Switch::new(&prof.switch)]),
            Topology::Wan { .. } => (vec![sw(0), sw(1)], vec![Switch::new(&prof.switch), Switch::new(&prof.switch)]),
        };
        let mut nodes: Vec<Node> = Vec::new();
        // One machine's CPUs for every node (client and daemon on one host).
        let machine = prof.host.shared.then(|| Cores::pool(prof.host.cores as usize));
        for i in 0..n_nodes {
            let s = &mut switches[(switch_of[i as usize].0 - n_nodes) as usize];
            let base = s.ports.len() as u16;
            let mut n = Node::new(i, prof.clone(), switch_of[i as usize], base);
            for p in 0..ports {
                s.add_node_port(i, node_ids[i as usize], p as u8, &n.adapter.links[p as usize]);
            }
            if !self.trains {
                n.adapter.train_max = 1;
            }
            if let Some(pool) = &machine {
                n.host.share_cores(pool.clone(), i as usize);
            }
            nodes.push(n);
        }
        let wan = if let Topology::Wan { miles } = self.topology {
            let w = prof.wan.as_ref().expect("validated");
            let wan_id = sw(2);
            let link = w.ib_link(&prof.link);
            let a = switches[0].add_uplink(wan_id, 0, &link);
            let b = switches[1].add_uplink(wan_id, 1, &link);
            Some(WanPath::new(w, miles, (sw(0), a), (sw(1), b)))
        } else {
            None
        };
        // The server runs one process per client process (an I/O server: one daemon for
        // all); each client its own.
        for (i, n) in nodes.iter_mut().enumerate() {
            let procs = match (i < n_servers as usize, self.io) {
                (true, Some(_)) => 1,
                (true, None) => self.procs_per_node * self.clients,
                (false, _) => self.procs_per_node,
            };
            for k in 0..procs {
                n.host.add_proc(k);
            }
            if let (true, Some(io)) = (i < n_servers as usize, self.io) {
                let f = FileIo {
                    store: io.store,
                    serves_reads: self.initiator == Initiator::Server,
                    file_bytes: io.bytes_per_pair * u64::from(self.clients * self.procs_per_node),
                    copies_reads: self.sock.is_none(),
                };
                n.host.file_io = Some(f);
                // A read daemon's socket sends copy straight from its mapping of the file.
                if f.serves_reads {
                    n.host.app_buffer_bytes = Some(f.file_bytes);
                }
            }
            if let Some(io) = self.io {
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
        let pairs = (0..self.clients).flat_map(|c| (0..self.procs_per_node).flat_map(move |k| (0..n_servers).map(move |sv| (c, k, sv))));
        for (c, k, sv) in pairs {
            let client = (n_servers + c) as usize;
            let server = sv as usize;
            let server_proc = if self.io.is_some() { 0 } else { (c * self.procs_per_node + k) as u16 };
            for d in 0..chans_per_pair {
                let chan = ((c * self.procs_per_node + k) * n_servers + sv) * chans_per_pair + d;
                let stack = self.stack_of(k);
                let port_list: Vec<u8> = match self.ports {
                    Ports::One if stack.is_some() => vec![self.stack_port(stack.expect("checked"))],
                    Ports::One => vec![0],
                    // Each process pair on its own port; a single pair binds its two
                    // directions to different ports.
                    Ports::Bind if self.procs_per_node > 1 => vec![(k % ports) as u8],
                    Ports::Bind => vec![(chan % ports) as u8],
                    Ports::Stripe { .. } => (0..ports as u8).collect(),
                };
                let use_ = match self.ports {
                    Ports::Stripe { threshold } => PortUse::Stripe { threshold },
                    _ => PortUse::Single,
                };
                let service = match (stack, self.mpi) {
                    (Some(s), _) => s.service(),
                    (_, Some(d)) => match d {
                        MpiDesign::Rc => Service::Rc,
                        MpiDesign::Uc => Service::Uc,
                        MpiDesign::Ud => Service::Ud,
                    },
                    (None, None) => self.service,
                };
                let (mut qa, mut qb) = (Vec::new(), Vec::new());
                for &p in &port_list {
                    for _ in 0..self.qps_per_port.max(1) {
                        let ia = nodes[server].adapter.qps.len() as u32;
                        let ib = nodes[client].adapter.qps.len() as u32;
                        qa.push(nodes[server].adapter.add_qp(p, service, client as u32, p, ib));
                        qb.push(nodes[client].adapter.add_qp(p, service, server as u32, p, ia));
                    }
                }
                let rails = qa.len();
                let th = match self.ports {
                    Ports::Stripe { threshold } => threshold,
                    _ => DEFAULT_STRIPE_THRESHOLD,
                };
                let credits = prof.stack.as_ref().map_or(0, |s| s.sdp_rx_buffers);
                let end_ulp = |proc: u16, qps: &[u32]| match (self.mpi, stack) {
                    (Some(d), _) => ChanUlp::Mpi(MpiEnd::new(d, (rails > 1).then_some(th), prof.mpi.as_ref().expect("validated: MPI needs [mpi]"), proc, qps.to_vec())),
                    (None, Some(s)) => ChanUlp::Sock(SockEnd::new(s, spec.size, credits, proc, qps[0])),
                    (None, None) => ChanUlp::Raw,
                };
                let (ua, ub) = (end_ulp(server_proc, &qa), end_ulp(k as u16, &qb));
                nodes[server].add_chan(chan, qa, use_, server_proc, completions, ua);
                nodes[client].add_chan(chan, qb, use_, k as u16, completions, ub);
                // Direction 0: node 0 initiates; direction 1 (bi-directional): node 1.
                // Direction 0 is initiated by the chosen side; direction 1 (bi-directional) by the other.
                let server_first = (self.initiator == Initiator::Server) == (d == 0);
                let ((init, ip), (resp, rp)) =
                    if server_first { ((server, server_proc), (client, k as u16)) } else { ((client, k as u16), (server, server_proc)) };
                nodes[init].host.add_program(ip, Program::new(*spec, Role::Initiator, chan));
                nodes[resp].host.add_program(rp, Program::new(*spec, Role::Responder, chan));
            }
        }
        for n in nodes {
            sim.add(n);
        }
        for s in switches {
            sim.add(s);
        }
        if let Some(w) = wan {
            sim.add(w);
        }
        for &id in &node_ids {
            sim.schedule(id, 0, Ev::Start);
        }
        let stats = sim.run_bounded(Time::MAX, self.max_events);
        let mut latencies: Vec<f64> = Vec::new();
        let mut bw = 0.0;
        // Several flows: the aggregate is all measured bytes over the union of their
        // measured intervals (a sum of per-flow rates would count a flow that runs alone at
        // the end at full speed). A single bi-directional pair reports its two directions'
        // rates summed, as perftest and OSU do.
        let (mut union, mut total_bytes, mut flows) = (None, 0u64, 0u32);
        // Per stack (two stacks at once): (union window, bytes).
        let mut groups: Vec<(String, (u64, u64), u64)> = Vec::new();
        let mut unfinished = 0;
        let (mut sent, mut received) = (0, 0);
        for &id in &node_ids {
            let n = sim.get::<Node>(id).expect("node");
            sent += n.adapter.stats.payload_bytes_sent;
            received += n.adapter.stats.payload_bytes_received;
            for p in n.host.procs() {
                for prog in &p.programs {
                    if prog.role() != Role::Initiator {
                        continue;
                    }
                    if !prog.is_done() {
                        unfinished += 1;
                    }
                    match prog.samples() {
                        Samples::Latency(v) => latencies.extend(v.iter().map(|ps| *ps as f64 / 1e6)),
                        Samples::Bandwidth { bytes, elapsed_ps, .. } if elapsed_ps > 0 => {
                            bw += bytes as f64 / elapsed_ps as f64 * 1e6;
                            let (a, b) = prog.measured_window().expect("finished bandwidth initiator");
                            union = Some(union.map_or((a, b), |(x, y): (u64, u64)| (x.min(a), y.max(b))));
                            if self.sock_mix.is_some() {
                                let name = n.ulps.sock.end(prog.chan()).map_or_else(String::new, |s| s.stack.describe());
                                match groups.iter_mut().find(|g| g.0 == name) {
                                    Some(g) => {
                                        g.1 = (g.1 .0.min(a), g.1 .1.max(b));
                                        g.2 += bytes;
                                    }
                                    None => groups.push((name, (a, b), bytes)),
                                }
                            }
                            total_bytes += bytes;
                            flows += 1;
                        }
                        _ => {}
                    }
                }
            }
        }
        if unfinished > 0 {
            return Err(ModelError(format!(
                "{unfinished} initiator(s) did not finish within {} events (simulated {:.3} ms): the scenario stalls",
                self.max_events,
                stats.end_time as f64 / 1e9
            )));
        }
        if flows > 1 && !(bidir && flows == 2) {
            if let Some((a, b)) = union.filter(|(a, b)| b > a) {
                bw = total_bytes as f64 / (b - a) as f64 * 1e6;
            }
        }
        // Two stacks at once: the aggregate is all bytes over the union of the measured
        // intervals (as for any multi-flow point); it is split between the stacks in
        // proportion to each stack's rate over its own flows' interval. (Flows move fixed
        // byte counts, so the faster stack finishes first; its own-interval rate is the one
        // it had while both ran.)
        let rates: Vec<(String, f64)> = groups
            .into_iter()
            .map(|(name, (a, b), bytes)| (name, if b > a { bytes as f64 / (b - a) as f64 * 1e6 } else { 0.0 }))
            .collect();
        let sum: f64 = rates.iter().map(|g| g.1).sum();
        let by_stack: Vec<(String, f64)> = rates.into_iter().map(|(n, r)| (n, if sum > 0.0 { bw * r / sum } else { 0.0 })).collect();
        let (value, unit, summary) = if spec.kind == PatternKind::Latency {
            let s = Summary::of(&latencies).ok_or_else(|| ModelError("no latency samples (iterations = 0?)".into()))?;
            (s.mean, "us", Some(s))
        } else {
            (bw, "MB/s", None)
        };
        let server = sim.get::<Node>(node_ids[0]).expect("node");
        let busy: Time = server.host.core_busy_ps.iter().sum();
        let cores = server.host.core_busy_ps.len().max(1) as f64;
        let server_cpu_percent = if stats.end_time > 0 { busy as f64 / (stats.end_time as f64 * cores) * 100.0 } else { 0.0 };
        Ok(Point {
            value,
            unit,
            summary,
            events: stats.events,
            sim_time_ps: stats.end_time,
            bytes_sent: sent,
            bytes_received: received,
            server_cpu_percent,
            by_stack,
        })
    }
}

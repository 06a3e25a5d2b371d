//! Scenarios: what a pattern point runs on (profile, topology, transport, ports, processes,
//! protocol, clients, file servers). A scenario is validated against the point
//! ([`validate`]), built into nodes and switches ([`build`]), run, and its programs'
//! samples reduced to a [`Point`] ([`reduce`]).

mod build;
mod reduce;
mod validate;

pub use reduce::Point;

use crate::fileio::FileServers;
use crate::hw::link::LinkSpec;
use crate::profile::Profile;
use crate::transport::packet::Service;
use crate::ulp::mpi::MpiDesign;
use crate::ulp::sock::{SockKind, SockStack};
use interlab_kernel::Time;
use interlab_patterns::PatternSpec;
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
pub struct Scenario {
    pub profile: Arc<Profile>,
    pub topology: Topology,
    pub service: Service,
    pub ports: Ports,
    /// Process pairs (one process per node each).
    pub procs_per_node: u32,
    /// Stop after this many events (guards against a scenario that never ends).
    pub max_events: u64,
    /// Let adapters send the bulk of long messages as packet trains (fewer events, same
    /// per-packet accounting); false simulates every packet as its own event. Latency
    /// points run packet by packet either way: with one message in flight a train's
    /// store-and-forward would add its whole engine and DMA time to every sample.
    pub trains: bool,
    /// With `trains`: TCP over a datagram link (Ethernet, IPoIB-UD) moves its bulk as
    /// socket trains too: the stack hands the adapter up to a port's prefetch depth of
    /// back-to-back packets as one datagram list (each packet's CPU, driver and post costs
    /// charged as if posted alone), the adapter sends it as one train, and the receiver's
    /// interrupt core takes it in one event, packet by packet at the same costs, its
    /// delayed ACKs leaving as one train of as many ACK packets.
    pub tcp_trains: bool,
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

impl Scenario {
    /// A raw-verbs set-up on one switch with the defaults of the other fields.
    pub fn new(profile: Arc<Profile>, service: Service, ports: Ports, procs_per_node: u32) -> Self {
        Scenario {
            profile,
            topology: Topology::Lan,
            service,
            ports,
            procs_per_node,
            max_events: 2_000_000_000,
            trains: true,
            tcp_trains: false,
            mpi: None,
            qps_per_port: 1,
            clients: 1,
            initiator: Initiator::Server,
            sock: None,
            sock_mix: None,
            io: None,
        }
    }

    /// Whether socket trains ([`Scenario::tcp_trains`]) give this set-up's results packet by
    /// packet's within a fraction of a percent for `spec`: a socket stack and one socket
    /// connection (one process pair, one client, one server, one direction). With several
    /// connections, packet by packet the send engine's round robin interleaves their
    /// datagrams on the wire and in the receiver's queue, so the receiver's ACKs of several
    /// streams leave in bursts that share the sender's interrupts; a train takes one
    /// connection's datagrams in a row and its ACKs come evenly, one interrupt each (eight
    /// IPoIB-UD streams of 256 KiB messages: the sender's CPU share +1.1 %). See
    /// docs/performance.md, "Socket trains in the studies (branch h-st2)".
    pub fn socket_trains_exact(&self, spec: &PatternSpec) -> bool {
        self.sock.is_some()
            && self.sock_mix.is_none()
            && self.io.is_none()
            && self.procs_per_node == 1
            && self.clients == 1
            && !spec.kind.is_bidirectional()
    }

    /// The stack of process pair `k` (of `procs_per_node`).
    fn stack_of(&self, k: u32) -> Option<SockStack> {
        match (self.sock, self.sock_mix) {
            (Some(_), Some(b)) if k >= self.procs_per_node.div_ceil(2) => Some(b),
            (a, _) => a,
        }
    }

    /// The link behind each adapter port as this scenario runs it: the profile's InfiniBand
    /// link, or on the Ethernet port its link with the MTU a stack chose. The one place a
    /// port's MTU comes from (the adapter, the protocols and validation read it here).
    pub fn port_links(&self) -> Vec<LinkSpec> {
        let eth_mtu = [self.sock, self.sock_mix].into_iter().flatten().find(|s| s.kind == SockKind::Eth && s.eth_mtu > 0).map(|s| s.eth_mtu);
        (0..self.profile.adapter.ports as usize)
            .map(|p| match &self.profile.eth {
                Some(e) if e.port as usize == p => LinkSpec { mtu_bytes: eth_mtu.unwrap_or(e.link.mtu_bytes), ..e.link.clone() },
                _ => self.profile.link.clone(),
            })
            .collect()
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

    /// Checks the combination before running.
    pub fn validate(&self, spec: &PatternSpec) -> Result<(), ModelError> {
        validate::validate(self, spec)
    }

    /// Runs one pattern point with each node's doorbell chain merged where exact (`merge`,
    /// as [`Scenario::run`] does) or as one event per step (see
    /// `Adapter::merge_doorbells`); also returns how many steps the nodes merged. The
    /// reference the merged chain is tested against.
    pub fn run_doorbells(&self, spec: &PatternSpec, merge: bool) -> Result<(Point, u64), ModelError> {
        self.validate(spec)?;
        let mut fabric = build::build(self, spec);
        for &id in &fabric.nodes {
            fabric.sim.get_mut::<crate::node::Node>(id).expect("a node").adapter.merge_doorbells = merge;
        }
        let stats = fabric.sim.run_bounded(Time::MAX, self.max_events);
        let merged = fabric.nodes.iter().map(|&id| fabric.sim.get::<crate::node::Node>(id).map_or(0, |n| n.adapter.merged_doorbells + n.adapter.merged_fetches)).sum();
        Ok((reduce::reduce(self, spec, &fabric, stats)?, merged))
    }

    /// Runs one pattern point.
    pub fn run(&self, spec: &PatternSpec) -> Result<Point, ModelError> {
        self.validate(spec)?;
        let mut fabric = build::build(self, spec);
        let stats = fabric.sim.run_bounded(Time::MAX, self.max_events);
        reduce::reduce(self, spec, &fabric, stats)
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


#[cfg(test)]
mod tests {
    use super::*;
    use interlab_patterns::{Op, PatternKind};

    fn vpi() -> Arc<Profile> {
        Arc::new(Profile::load("r805-connectx-ddr").expect("profile"))
    }

    #[test]
    fn socket_trains_are_exact_for_one_socket_connection_only() {
        let spec = PatternSpec { kind: PatternKind::Bandwidth, op: Op::Send, size: 1 << 17, window: 32, warmup: 1, iterations: 4 };
        let one = Scenario { sock: Some(SockStack::ipoib_ud()), ..Scenario::new(vpi(), Service::Rc, Ports::One, 1) };
        assert!(one.socket_trains_exact(&spec));
        assert!(one.socket_trains_exact(&PatternSpec { kind: PatternKind::Latency, window: 1, ..spec }));
        assert!(!one.socket_trains_exact(&PatternSpec { kind: PatternKind::BiBandwidth, ..spec }), "two directions");
        assert!(!Scenario { procs_per_node: 8, ..one.clone() }.socket_trains_exact(&spec), "eight streams");
        assert!(!Scenario { clients: 2, ..one.clone() }.socket_trains_exact(&spec), "two clients");
        assert!(!Scenario { sock_mix: Some(SockStack::new(SockKind::IpoibRc)), ..one.clone() }.socket_trains_exact(&spec), "two stacks");
        assert!(!Scenario { sock: None, ..one }.socket_trains_exact(&spec), "verbs");
    }

    #[test]
    fn a_stacks_ethernet_mtu_is_the_eth_ports_link_mtu_and_leaves_the_profile_and_other_ports() {
        let p = vpi();
        let e = p.eth.as_ref().expect("[eth]");
        let mut s = Scenario::new(p.clone(), Service::Rc, Ports::One, 1);
        assert_eq!(s.port_links()[e.port as usize].mtu_bytes, e.link.mtu_bytes);
        s.sock = Some(SockStack { eth_mtu: 1500, ..SockStack::new(SockKind::Eth) });
        let links = s.port_links();
        assert_eq!(links.len(), p.adapter.ports as usize);
        for (i, l) in links.iter().enumerate() {
            let want = if i == e.port as usize { 1500 } else { p.link.mtu_bytes };
            assert_eq!(l.mtu_bytes, want, "port {i}");
        }
        assert_eq!(p.eth.as_ref().expect("[eth]").link.mtu_bytes, e.link.mtu_bytes, "the profile is not patched");
    }

    #[test]
    fn raw_datagrams_are_checked_against_the_mtu_of_the_ports_they_may_use() {
        // Port 1 is InfiniBand (2048-byte MTU); binding may also use the Ethernet port, here
        // with a 1500-byte MTU, which then bounds a datagram.
        let mut p = (*vpi()).clone();
        p.eth.as_mut().expect("[eth]").link.mtu_bytes = 1500;
        let p = Arc::new(p);
        let spec = PatternSpec { kind: PatternKind::Latency, op: Op::Send, size: 2048, window: 1, warmup: 0, iterations: 1 };
        let one = Scenario::new(p.clone(), Service::Ud, Ports::One, 1);
        assert!(one.validate(&spec).is_ok(), "{:?}", one.validate(&spec));
        let bind = Scenario::new(p, Service::Ud, Ports::Bind, 1);
        let err = bind.validate(&spec).expect_err("larger than the Ethernet port's MTU");
        assert!(err.0.contains("1500-byte MTU"), "{err}");
        assert!(bind.validate(&PatternSpec { size: 1500, ..spec }).is_ok());
    }
}

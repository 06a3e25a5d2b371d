//! The switch component: cut-through forwarding with a port-to-port latency and output
//! queueing (one serialiser per output port). Ports lead to node adapters or to a
//! wide-area extender; a routing table maps destination (node, port) to an output.

use crate::event::Ev;
use crate::hw::link::LinkSpec;
use crate::hw::memo::Memo2;
use crate::hw::switch_spec::SwitchSpec;
use interlab_kernel::{Component, ComponentId, Ctx, Time};

/// What an output port is cabled to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peer {
    /// Adapter port `port` of a node component.
    Node { id: ComponentId, port: u8 },
    /// Input `port` of another packet element (range extender).
    Element { id: ComponentId, port: u16 },
}

/// One output port.
#[derive(Debug, Clone)]
pub struct SwitchPort {
    pub peer: Peer,
    /// The cable's rate and length.
    pub link: LinkSpec,
    /// When the output serialiser is free.
    free: Time,
    /// Busy picoseconds (utilisation).
    pub busy_ps: Time,
    /// `link.prop_ps()`, computed once.
    prop_ps: Time,
    /// The last two packet shapes this port serialised: `(wire_bytes, count)` and their
    /// `(ser_ps, buffer_ps)`, most recent first (a stream's data packets and its ACKs).
    /// Both figures are pure functions of the shape, so a hit returns exactly what the
    /// floating-point formulas would.
    memo: Memo2<(u64, u32), (Time, Time)>,
}

impl SwitchPort {
    fn new(peer: Peer, link: &LinkSpec) -> Self {
        // `(0, 0)` is never looked up (a packet has a count of at least 1).
        SwitchPort { peer, link: link.clone(), free: 0, busy_ps: 0, prop_ps: link.prop_ps(), memo: Memo2::new(((0, 0), (0, 0))) }
    }

    /// Serialisation time of a packet (train) of `wire_bytes` in `count` packets on this
    /// port, and the time the port takes to send `buffer_bytes` of such packets.
    #[inline]
    fn shape(&mut self, wire_bytes: u64, count: u32, buffer_bytes: u64) -> (Time, Time) {
        let link = &self.link;
        self.memo.get_or((wire_bytes, count), || {
            let ser = link.ser_ps(wire_bytes, count as u64);
            (ser, (buffer_bytes as f64 * ser as f64 / wire_bytes.max(1) as f64) as Time)
        })
    }
}

/// A switch.
pub struct Switch {
    latency_ps: Time,
    buffer_bytes: u64,
    /// Output ports.
    pub ports: Vec<SwitchPort>,
    /// Destination -> output port: `routes[node index][adapter port]`.
    routes: Vec<Vec<Option<usize>>>,
    /// Output port for destinations not in `routes` (towards the other site).
    uplink: Option<usize>,
    /// Packets forwarded.
    pub forwarded: u64,
    /// Credit stalls signalled upstream.
    pub stalls: u64,
}

impl Switch {
    /// A switch with no ports yet.
    pub fn new(spec: &SwitchSpec) -> Self {
        Switch {
            latency_ps: (spec.port_latency_ns * 1000.0).round() as Time,
            buffer_bytes: spec.buffer_bytes,
            ports: vec![],
            routes: Vec::new(),
            uplink: None,
            forwarded: 0,
            stalls: 0,
        }
    }

    /// Adds a port towards adapter port `port` of node `node` (component `id`); returns its index.
    pub fn add_node_port(&mut self, node: u32, id: ComponentId, port: u8, link: &LinkSpec) -> u16 {
        self.ports.push(SwitchPort::new(Peer::Node { id, port }, link));
        let idx = self.ports.len() - 1;
        let (node, port) = (node as usize, port as usize);
        if self.routes.len() <= node {
            self.routes.resize(node + 1, Vec::new());
        }
        let ports = &mut self.routes[node];
        if ports.len() <= port {
            ports.resize(port + 1, None);
        }
        ports[port] = Some(idx);
        idx as u16
    }

    /// Adds the port that every non-local destination leaves by; returns its index.
    pub fn add_uplink(&mut self, id: ComponentId, port: u16, link: &LinkSpec) -> u16 {
        self.ports.push(SwitchPort::new(Peer::Element { id, port }, link));
        let idx = self.ports.len() - 1;
        self.uplink = Some(idx);
        idx as u16
    }
}

impl Component<Ev> for Switch {
    fn handle(&mut self, ev: Ev, ctx: &mut Ctx<'_, Ev>) {
        let Ev::PktAtSwitch { in_port, ser_ps, pkt } = ev else {
            unreachable!("only packets and credits reach a switch");
        };
        let now = ctx.now();
        let out = self
            .routes
            .get(pkt.dst_node as usize)
            .and_then(|ports| ports.get(pkt.dst_port as usize).copied().flatten())
            .or(self.uplink)
            .unwrap_or_else(|| panic!("switch: no route to node {} port {}", pkt.dst_node, pkt.dst_port));
        let port = &mut self.ports[out];
        let (ser_out, buffer_ps) = port.shape(pkt.wire_bytes, pkt.count, self.buffer_bytes);
        // Cut-through: the header leaves after the port-to-port latency if the output is
        // free; the tail can never leave before it has arrived.
        let start = (now + self.latency_ps).max(port.free).max((now + ser_ps).saturating_sub(ser_out));
        port.free = start + ser_out;
        port.busy_ps += ser_out;
        self.forwarded += 1;
        let prop = port.prop_ps;
        // Credit-based link flow control: when more than the port buffer waits for this
        // output, the sender on the input link gets no credit until it drains.
        let backlog_end = port.free.saturating_sub(buffer_ps);
        if backlog_end > now {
            if let Some(up) = self.ports.get(in_port as usize) {
                let back = up.prop_ps;
                self.stalls += 1;
                match up.peer {
                    Peer::Node { id, port } => ctx.send_at(id, now + back, Ev::Stall { port: port as u16, until: backlog_end }),
                    Peer::Element { id, port } => ctx.send_at(id, now + back, Ev::Stall { port, until: backlog_end }),
                }
            }
        }
        let port = &self.ports[out];
        match port.peer {
            Peer::Node { id, port } => ctx.send_at(id, start + ser_out + prop, Ev::PktAtNode { port, pkt }),
            Peer::Element { id, port } => ctx.send_at(id, start + prop, Ev::PktAtSwitch { in_port: port, ser_ps: ser_out, pkt }),
        }
    }
}

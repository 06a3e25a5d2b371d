//! The switch component: cut-through forwarding with a port-to-port latency and output
//! queueing (one serialiser per output port). Ports lead to node adapters or to a
//! wide-area extender; a routing table maps destination (node, port) to an output.

use crate::event::Ev;
use crate::hw::link::LinkSpec;
use crate::hw::memo::Memo2;
use crate::hw::switch_spec::SwitchSpec;
use crate::hw::wan_hop::WanHop;
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
    pub(crate) fn new(peer: Peer, link: &LinkSpec) -> Self {
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

    /// Books this output for a packet (train) of `wire_bytes` in `count` packets whose first
    /// bit reached the switch at `now` and whose last arrives `ser_in` later, behind a
    /// port-to-port latency of `latency_ps`, with `buffer_bytes` of buffer for this output.
    #[inline]
    pub(crate) fn forward(&mut self, now: Time, ser_in: Time, wire_bytes: u64, count: u32, latency_ps: Time, buffer_bytes: u64) -> Egress {
        let (ser_out, buffer_ps) = self.shape(wire_bytes, count, buffer_bytes);
        // Cut-through: the header leaves after the port-to-port latency if the output is
        // free; the tail can never leave before it has arrived.
        let start = (now + latency_ps).max(self.free).max((now + ser_in).saturating_sub(ser_out));
        self.free = start + ser_out;
        self.busy_ps += ser_out;
        // Credit-based link flow control: when more than the port buffer waits for this
        // output, the sender on the input link gets no credit until it drains.
        let backlog_end = self.free.saturating_sub(buffer_ps);
        Egress { start, ser_out, stall_until: (backlog_end > now).then_some(backlog_end) }
    }

    /// One-way propagation over this port's cable, picoseconds.
    pub(crate) fn prop_ps(&self) -> Time {
        self.prop_ps
    }
}

/// A packet booked on an output port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Egress {
    /// When its first bit leaves.
    pub start: Time,
    /// Its serialisation time on the output link.
    pub ser_out: Time,
    /// The output holds more than its buffer: the input link's sender gets no credit until
    /// then.
    pub stall_until: Option<Time>,
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
    /// The wide-area path behind the uplink and the far switch's ports to its nodes, when
    /// their hops are computed here (see [`WanHop`]); `None`: packets go on as events.
    far: Option<Box<WanHop>>,
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
            far: None,
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

    /// The far site's side of the uplink, computed when this switch forwards a packet onto
    /// the uplink instead of by events (see [`WanHop`] for when this is exact).
    pub fn set_far(&mut self, far: WanHop) {
        self.far = Some(Box::new(far));
    }

    /// This switch's port-to-port latency, picoseconds, and buffer per output, bytes.
    pub(crate) fn timing(&self) -> (Time, u64) {
        (self.latency_ps, self.buffer_bytes)
    }

    /// The wide-area hop this switch computes, if any.
    pub fn far(&self) -> Option<&WanHop> {
        self.far.as_deref()
    }

    /// Nodes with a port on this switch.
    pub fn nodes_served(&self) -> usize {
        self.routes.iter().filter(|ports| ports.iter().any(Option::is_some)).count()
    }

    /// Copies of the ports towards nodes, and the routes to them (`routes[node][port]`
    /// indexes into the copies): those ports as they stand, for a [`WanHop`] to serve.
    pub(crate) fn node_ports(&self) -> (Vec<SwitchPort>, Vec<Vec<Option<usize>>>) {
        let mut index = vec![None; self.ports.len()];
        let mut ports = Vec::new();
        for (i, p) in self.ports.iter().enumerate() {
            if matches!(p.peer, Peer::Node { .. }) {
                index[i] = Some(ports.len());
                ports.push(p.clone());
            }
        }
        let routes = self.routes.iter().map(|r| r.iter().map(|o| o.and_then(|i| index[i])).collect()).collect();
        (ports, routes)
    }
}

impl Component<Ev> for Switch {
    fn handle(&mut self, ev: Ev, ctx: &mut Ctx<'_, Ev>) {
        let Ev::PktAtSwitch { in_port, ser_ps, pkt } = ev else {
            unreachable!("only packets and credits reach a switch");
        };
        let now = ctx.now();
        let out = route(&self.routes, pkt.dst_node, pkt.dst_port)
            .or(self.uplink)
            .unwrap_or_else(|| panic!("switch: no route to node {} port {}", pkt.dst_node, pkt.dst_port));
        let port = &mut self.ports[out];
        let e = port.forward(now, ser_ps, pkt.wire_bytes, pkt.count, self.latency_ps, self.buffer_bytes);
        self.forwarded += 1;
        let prop = port.prop_ps;
        if let Some(until) = e.stall_until {
            if let Some(up) = self.ports.get(in_port as usize) {
                let back = up.prop_ps;
                self.stalls += 1;
                match up.peer {
                    Peer::Node { id, port } => ctx.send_at(id, now + back, Ev::Stall { port: port as u16, until }),
                    Peer::Element { id, port } => ctx.send_at(id, now + back, Ev::Stall { port, until }),
                }
            }
        }
        let (start, ser_out) = (e.start, e.ser_out);
        if Some(out) == self.uplink {
            if let Some(far) = self.far.as_mut() {
                // The wide-area hop and the far switch, computed here (see `WanHop`).
                far.carry(start + prop, ser_out, pkt, ctx);
                return;
            }
        }
        let port = &self.ports[out];
        match port.peer {
            Peer::Node { id, port } => ctx.send_at(id, start + ser_out + prop, Ev::PktAtNode { port, pkt }),
            Peer::Element { id, port } => ctx.send_at(id, start + prop, Ev::PktAtSwitch { in_port: port, ser_ps: ser_out, pkt }),
        }
    }
}

/// The output port towards adapter port `port` of node `node` in `routes[node][port]`.
#[inline]
pub(crate) fn route(routes: &[Vec<Option<usize>>], node: u32, port: u8) -> Option<usize> {
    routes.get(node as usize).and_then(|ports| ports.get(port as usize).copied().flatten())
}

//! The switch component: cut-through forwarding with a port-to-port latency and output
//! queueing (one serialiser per output port). Ports lead to node adapters or to a
//! wide-area extender; a routing table maps destination (node, port) to an output.

use crate::event::Ev;
use crate::hw::link::LinkSpec;
use crate::hw::memo::MemoN;
use crate::hw::switch_spec::SwitchSpec;
use crate::hw::wan_hop::WanHop;
use crate::transport::packet::Packet;
use interlab_kernel::{Component, ComponentId, Ctx, Time};
use std::cell::RefCell;
use std::rc::Rc;

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
    /// The last four packet shapes this port serialised: `(wire_bytes, count)` and their
    /// `(ser_ps, buffer_ps)` (streams' data trains of a few lengths and their ACKs). Both
    /// figures are pure functions of the shape, so a hit returns exactly what the
    /// floating-point formulas would.
    memo: MemoN<(u64, u32), (Time, Time), 4>,
}

impl SwitchPort {
    pub(crate) fn new(peer: Peer, link: &LinkSpec) -> Self {
        // `(0, 0)` is never looked up (a packet has a count of at least 1).
        SwitchPort { peer, link: link.clone(), free: 0, busy_ps: 0, prop_ps: link.prop_ps(), memo: MemoN::new(((0, 0), (0, 0))) }
    }

    /// Serialisation time of a packet (train) of `wire_bytes` in `count` packets on this
    /// port, and the time the port takes to send `buffer_bytes` of such packets.
    #[inline(always)]
    fn shape(&mut self, wire_bytes: u64, count: u32, buffer_bytes: u64) -> (Time, Time) {
        let link = &self.link;
        self.memo.get_or((wire_bytes, count), || Self::compute_shape(link, wire_bytes, count, buffer_bytes))
    }

    /// [`SwitchPort::shape`] computed (not remembered): a call of its own, so that a hit
    /// carries none of its floating-point code.
    #[inline(never)]
    fn compute_shape(link: &LinkSpec, wire_bytes: u64, count: u32, buffer_bytes: u64) -> (Time, Time) {
        let ser = link.ser_ps(wire_bytes, count as u64);
        (ser, (buffer_bytes as f64 * ser as f64 / wire_bytes.max(1) as f64) as Time)
    }

    /// Books this output for a packet (train) of `wire_bytes` in `count` packets whose first
    /// bit reached the switch at `now` and whose last arrives `ser_in` later, behind a
    /// port-to-port latency of `latency_ps`, with `buffer_bytes` of buffer for this output.
    #[inline(always)]
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
    /// Destination -> output port.
    routes: Routes,
    /// Output port for destinations not in `routes` (towards the other site).
    uplink: Option<usize>,
    /// Packets forwarded.
    pub forwarded: u64,
    /// Credit stalls signalled upstream.
    pub stalls: u64,
    /// The wide-area path behind the uplink and the far switch's ports to its nodes, when
    /// their hops are computed here (see [`WanHop`]); `None`: packets go on as events.
    far: Option<Box<WanHop>>,
    /// Per output port: which input ports feed it ([`Switch::add_feeds`]).
    feeds: Vec<Feed>,
    /// Per input port: its packets on their way here as events, not yet handled.
    pending: Vec<u32>,
    /// Packets forwarded when sent ([`Switch::forward_at_send`]).
    pub forwarded_at_send: u64,
}

impl Switch {
    /// A switch with no ports yet.
    pub fn new(spec: &SwitchSpec) -> Self {
        Switch {
            latency_ps: (spec.port_latency_ns * 1000.0).round() as Time,
            buffer_bytes: spec.buffer_bytes,
            ports: vec![],
            routes: Routes::default(),
            uplink: None,
            forwarded: 0,
            stalls: 0,
            far: None,
            feeds: Vec::new(),
            pending: Vec::new(),
            forwarded_at_send: 0,
        }
    }

    /// Adds a port towards adapter port `port` of node `node` (component `id`); returns its index.
    pub fn add_node_port(&mut self, node: u32, id: ComponentId, port: u8, link: &LinkSpec) -> u16 {
        self.ports.push(SwitchPort::new(Peer::Node { id, port }, link));
        let idx = self.ports.len() - 1;
        self.routes.set(node, port, idx);
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
        self.routes.nodes_served()
    }

    /// Copies of the ports towards nodes, and the routes to them (indexing into the
    /// copies): those ports as they stand, for a [`WanHop`] to serve.
    pub(crate) fn node_ports(&self) -> (Vec<SwitchPort>, Routes) {
        let mut index = vec![None; self.ports.len()];
        let mut ports = Vec::new();
        for (i, p) in self.ports.iter().enumerate() {
            if matches!(p.peer, Peer::Node { .. }) {
                index[i] = Some(ports.len());
                ports.push(p.clone());
            }
        }
        (ports, self.routes.map(|i| index[i]))
    }
}

impl Switch {
    /// Declares routes that packets take: `(input, output)` for every route of a queue
    /// pair (called for each node in turn). An output fed by one input alone takes that
    /// input's packets in the order they are sent, which [`Switch::forward_at_send`]
    /// relies on.
    pub fn add_feeds(&mut self, feeds: impl IntoIterator<Item = (u16, usize)>) {
        let n = self.ports.len();
        self.feeds.resize(n, Feed::None);
        self.pending.resize(n, 0);
        for (input, out) in feeds {
            self.feeds[out] = match self.feeds[out] {
                Feed::None => Feed::Sole(input),
                Feed::Sole(i) if i == input => Feed::Sole(i),
                _ => Feed::Many,
            };
        }
    }

    /// The output port for `pkt`.
    #[inline]
    fn output(&self, pkt: &Packet) -> usize {
        self.output_to(pkt.dst_node, pkt.dst_port)
    }

    /// The output port towards adapter port `port` of node `node`.
    #[inline]
    pub fn output_to(&self, node: u32, port: u8) -> usize {
        self.routes.get(node, port).or(self.uplink).unwrap_or_else(|| panic!("switch: no route to node {node} port {port}"))
    }

    /// The adapter behind input `in_port` sends a packet to adapter port `dst_port` of node
    /// `dst_node`: the output it takes, if the switch
    /// can forward it at once ([`Switch::forward_at_send`]), as its event at its arrival
    /// would, because that gives the same times: the output is fed by this input alone, so
    /// no other packet can come between; the sender says the packet is sent in the order it
    /// arrives (`in_order`: nothing it has yet to send arrives earlier); and none of this
    /// input's packets is still on its way as an event. Otherwise `None`: the sender sends
    /// it as an event (and calls [`Switch::event_sent`]).
    #[inline]
    pub fn sole_output(&self, in_port: u16, dst_node: u32, dst_port: u8, in_order: bool) -> Option<usize> {
        if !in_order || self.pending.get(in_port as usize).is_none_or(|&n| n > 0) {
            return None;
        }
        let out = self.output_to(dst_node, dst_port);
        (self.feeds.get(out) == Some(&Feed::Sole(in_port))).then_some(out)
    }

    /// Forwards `pkt`, sent by the adapter behind input `in_port`, to output `out` (what
    /// [`Switch::sole_output`] answered), its first bit here at `at` and its last `ser_ps`
    /// later. What differs from the event is only when the packet's next event (and a
    /// stall) is put in the queue: at sending, not at `at`.
    ///
    /// A credit stall for the sender is handed back, `(when it reaches the sender, until
    /// when)`, instead of being sent as an event: the sender puts it in force before its
    /// first event after that time (see [`crate::hw::switch_link::SwitchLink::due_stall`]).
    #[inline]
    pub fn forward_at_send(&mut self, in_port: u16, out: usize, at: Time, ser_ps: Time, pkt: Packet, ctx: &mut Ctx<'_, Ev>) -> Option<(Time, Time)> {
        self.forwarded_at_send += 1;
        self.forward(at, in_port, out, ser_ps, pkt, true, ctx)
    }

    /// A packet of input `in_port` is on its way here as an event.
    pub fn event_sent(&mut self, in_port: u16) {
        if let Some(n) = self.pending.get_mut(in_port as usize) {
            *n += 1;
        }
    }

    /// Forwards `pkt`, whose first bit arrived on `in_port` at `now`, to output `out`. A
    /// credit stall for a node on `in_port` is returned (`(when it reaches the node, until
    /// when)`) if `return_stall`, else sent as an event.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    fn forward(&mut self, now: Time, in_port: u16, out: usize, ser_ps: Time, pkt: Packet, return_stall: bool, ctx: &mut Ctx<'_, Ev>) -> Option<(Time, Time)> {
        let mut stall = None;
        let port = &mut self.ports[out];
        let e = port.forward(now, ser_ps, pkt.wire_bytes, pkt.count, self.latency_ps, self.buffer_bytes);
        self.forwarded += 1;
        let prop = port.prop_ps;
        if let Some(until) = e.stall_until {
            if let Some(up) = self.ports.get(in_port as usize) {
                let back = up.prop_ps;
                self.stalls += 1;
                match up.peer {
                    Peer::Node { .. } if return_stall => stall = Some((now + back, until)),
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
                return stall;
            }
        }
        let port = &self.ports[out];
        match port.peer {
            Peer::Node { id, port } => ctx.send_at(id, start + ser_out + prop, Ev::PktAtNode { port, pkt }),
            Peer::Element { id, port } => ctx.send_at(id, start + prop, Ev::PktAtSwitch { in_port: port, ser_ps: ser_out, pkt }),
        }
        stall
    }
}

impl Component<Ev> for Switch {
    fn handle(&mut self, ev: Ev, ctx: &mut Ctx<'_, Ev>) {
        let Ev::PktAtSwitch { in_port, ser_ps, pkt } = ev else {
            unreachable!("only packets and credits reach a switch");
        };
        if let Some(n) = self.pending.get_mut(in_port as usize) {
            *n = n.saturating_sub(1);
        }
        let out = self.output(&pkt);
        self.forward(ctx.now(), in_port, out, ser_ps, pkt, false, ctx);
    }
}

/// The input ports that feed an output port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Feed {
    /// None known.
    None,
    /// This one alone.
    Sole(u16),
    /// Several.
    Many,
}

/// A switch shared between its component and the adapters that forward their packets
/// through it when they send them ([`Switch::forward_at_send`]).
pub type SharedSwitch = Rc<RefCell<Switch>>;

/// The component of a [`SharedSwitch`]: handles the packets that come as events.
pub struct SwitchComponent(pub SharedSwitch);

impl Component<Ev> for SwitchComponent {
    fn handle(&mut self, ev: Ev, ctx: &mut Ctx<'_, Ev>) {
        self.0.borrow_mut().handle(ev, ctx);
    }
}

/// Destination `(node, adapter port)` -> output port, one flat table: `out[node * stride +
/// port]` (a packet's route is one index, not a list of lists).
#[derive(Debug, Clone, Default)]
pub struct Routes {
    /// Output port index, `NO_ROUTE` where none.
    out: Vec<u32>,
    /// One more than the highest adapter port with a route.
    stride: usize,
}

const NO_ROUTE: u32 = u32::MAX;

impl Routes {
    /// Adapter port `port` of node `node` is reached through output `out`.
    fn set(&mut self, node: u32, port: u8, out: usize) {
        let (node, port) = (node as usize, port as usize);
        if port >= self.stride {
            let stride = port + 1;
            let nodes = self.out.len().checked_div(self.stride).unwrap_or(0);
            let mut wider = vec![NO_ROUTE; nodes * stride];
            for (n, row) in self.out.chunks(self.stride.max(1)).enumerate() {
                wider[n * stride..n * stride + row.len()].copy_from_slice(row);
            }
            (self.out, self.stride) = (wider, stride);
        }
        let need = (node + 1) * self.stride;
        if self.out.len() < need {
            self.out.resize(need, NO_ROUTE);
        }
        self.out[node * self.stride + port] = u32::try_from(out).expect("fewer than 2^32 ports");
    }

    /// The output towards adapter port `port` of node `node`, if any.
    #[inline]
    pub fn get(&self, node: u32, port: u8) -> Option<usize> {
        let port = port as usize;
        if port >= self.stride {
            return None;
        }
        match self.out.get(node as usize * self.stride + port) {
            Some(&o) if o != NO_ROUTE => Some(o as usize),
            _ => None,
        }
    }

    /// Nodes with a route to one of their ports.
    fn nodes_served(&self) -> usize {
        self.out.chunks(self.stride.max(1)).filter(|row| row.iter().any(|&o| o != NO_ROUTE)).count()
    }

    /// The same destinations through `f(output)` (none where it gives `None`).
    fn map(&self, f: impl Fn(usize) -> Option<usize>) -> Routes {
        let out = self.out.iter().map(|&o| if o == NO_ROUTE { NO_ROUTE } else { f(o as usize).map_or(NO_ROUTE, |i| i as u32) }).collect();
        Routes { out, stride: self.stride }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hw::link::{LineCode, LinkLayer};
    use crate::transport::packet::{Kind, MsgMeta, Service, UlpKind};
    use interlab_kernel::Simulation;

    fn link() -> LinkSpec {
        LinkSpec { lane_gbps: 5.0, lanes: 4, code: LineCode::B8B10, mtu_bytes: 2048, framing_bytes: 8, cable_m: 2.0, prop_ns_per_m: 5.0, layer: LinkLayer::InfiniBand }
    }

    fn pkt(dst_node: u32) -> Packet {
        let meta = MsgMeta { chan: 0, tag: 0, msg_id: 0, parts: 1, bytes: 0, notify: false, ulp: UlpKind::Raw };
        Packet { dst_node, dst_port: 0, dst_qp: 0, kind: Kind::Ack, service: Service::Rc, psn: 0, ack_req: false, payload: 0, wire_bytes: 30, count: 1, wr_id: 0, meta }
    }

    /// Asks the shared switch to forward each scripted packet as it is sent (`(input,
    /// destination node, in order, then send as an event if handed back)`); records what
    /// it answered.
    struct Driver {
        sw: SharedSwitch,
        sw_id: ComponentId,
        script: Vec<(u16, u32, bool)>,
        answers: Vec<bool>,
    }
    impl Component<Ev> for Driver {
        fn handle(&mut self, ev: Ev, ctx: &mut Ctx<'_, Ev>) {
            match ev {
                Ev::Start => {
                    for &(input, dst, in_order) in &self.script {
                        let at = ctx.now() + 100;
                        let mut sw = self.sw.borrow_mut();
                        let out = sw.sole_output(input, dst, 0, in_order);
                        self.answers.push(out.is_some());
                        match out {
                            Some(out) => {
                                sw.forward_at_send(input, out, at, 10, pkt(dst), ctx);
                            }
                            None => {
                                sw.event_sent(input);
                                ctx.send_at(self.sw_id, at, Ev::PktAtSwitch { in_port: input, ser_ps: 10, pkt: pkt(dst) });
                            }
                        }
                    }
                }
                Ev::PktAtNode { .. } | Ev::Stall { .. } => {}
                _ => unreachable!(),
            }
        }
    }

    /// Nodes 0, 1 and 2 on one switch (inputs and outputs 0, 1, 2); inputs 0 and 2 feed
    /// output 1, input 1 feeds output 0 alone.
    fn run(script: Vec<(u16, u32, bool)>, then: Vec<(u16, u32, bool)>) -> (Vec<bool>, Vec<bool>) {
        let mut sw = Switch::new(&SwitchSpec { port_latency_ns: 100.0, buffer_bytes: 4096 });
        let driver = ComponentId(0);
        for n in 0..3 {
            sw.add_node_port(n, driver, 0, &link());
        }
        sw.add_feeds([(0, 1), (1, 0)]);
        sw.add_feeds([(2, 1)]);
        let sw = Rc::new(RefCell::new(sw));
        let mut sim: Simulation<Ev> = Simulation::new();
        sim.add(Driver { sw: sw.clone(), sw_id: ComponentId(1), script, answers: vec![] });
        let sw_id = sim.add(SwitchComponent(sw.clone()));
        sim.schedule(driver, 0, Ev::Start);
        sim.run_until(50);
        let first = std::mem::take(&mut sim.get_mut::<Driver>(driver).expect("driver").answers);
        sim.get_mut::<Driver>(driver).expect("driver").script = then;
        sim.schedule(driver, 200, Ev::Start);
        sim.run();
        assert_eq!(sim.get::<SwitchComponent>(sw_id).expect("switch").0.borrow().pending, vec![0, 0, 0], "every event handled");
        (first, std::mem::take(&mut sim.get_mut::<Driver>(driver).expect("driver").answers))
    }

    #[test]
    fn the_flat_routes_answer_what_a_list_per_node_answers() {
        // Routes added in an order that widens the table twice (ports 0, then 2, then 5)
        // and leaves holes (node 3 has none, node 4 only port 5).
        let added = [(1u32, 0u8, 7usize), (0, 2, 3), (2, 0, 1), (1, 2, 9), (4, 5, 2), (0, 0, 4), (2, 1, 6)];
        let mut flat = Routes::default();
        let mut lists: Vec<Vec<Option<usize>>> = Vec::new();
        for &(node, port, out) in &added {
            flat.set(node, port, out);
            let (n, p) = (node as usize, port as usize);
            if lists.len() <= n {
                lists.resize(n + 1, Vec::new());
            }
            if lists[n].len() <= p {
                lists[n].resize(p + 1, None);
            }
            lists[n][p] = Some(out);
            for node in 0..7u32 {
                for port in 0..8u8 {
                    let want = lists.get(node as usize).and_then(|ports| ports.get(port as usize).copied().flatten());
                    assert_eq!(flat.get(node, port), want, "node {node} port {port}");
                }
            }
        }
        assert_eq!(flat.nodes_served(), 4);
        let odd = flat.map(|o| (o % 2 == 1).then_some(o / 2));
        assert_eq!((odd.get(1, 0), odd.get(0, 2), odd.get(0, 0), odd.get(4, 5)), (Some(3), Some(1), None, None));
    }

    #[test]
    fn a_packet_is_forwarded_as_sent_only_on_an_output_it_alone_feeds_in_order_and_behind_no_event() {
        // Input 1 to node 0 (fed by input 1 alone): forwarded at send; input 0 to node 1
        // (fed by inputs 0 and 2): an event.
        let (a, _) = run(vec![(1, 0, true), (0, 1, true)], vec![]);
        assert_eq!(a, vec![true, false]);
        // Sent out of order: an event, and so is the next packet of that input while the
        // event is on its way (both reach the switch at 100); once they have been handled,
        // forwarding at send resumes (at 200).
        let (a, b) = run(vec![(1, 0, false), (1, 0, true)], vec![(1, 0, true)]);
        assert_eq!(a, vec![false, false]);
        assert_eq!(b, vec![true]);
    }
}

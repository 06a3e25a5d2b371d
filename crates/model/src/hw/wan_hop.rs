//! One direction of the wide-area path and the far switch's ports towards its nodes,
//! computed by the near switch when it forwards a packet onto its uplink. Hop by hop a
//! packet crossing the path takes four events (near switch, path, far switch, the far
//! switch's credit stall back to the path, which comes with most packets once the far
//! output queues); computed here it takes one (the near switch's), and its arrival at the
//! far node is scheduled at the same time as hop by hop.
//!
//! This gives exactly the hop-by-hop times when:
//! - the far switch's ports towards its nodes are fed by its uplink alone (one node per
//!   site: a node's queue pairs lead to the other site), so each such port serves the
//!   packets of this direction in the order the path delivers them, and the path delivers
//!   them in the order the near switch forwards them (each serialiser is first come, first
//!   served and arrivals strictly increase along the chain);
//! - the far switch's credit stalls reach the path with no delay (the extender sits at the
//!   switch: its cable has length 0) and the near switch has a port-to-port latency above
//!   zero. Then a stall that reaches the path at the very time a packet does comes after
//!   that packet hop by hop (the packet's event was scheduled before that time, the
//!   stall's at it), and every stall that reaches the path before a packet does comes from
//!   a packet forwarded earlier by the near switch, so it is known here when that packet
//!   is computed. Stalls are kept in time order and put in force before the first packet
//!   that reaches the path after them, as their events would be.
//!
//! What differs from the hop-by-hop run is only when the far node's packet event is put
//! in the queue (at the near switch, not the far one): events of the far node at the very
//! same picosecond may be taken in another order. Records of a full `reproduce` are
//! identical but for the event counts (docs/performance.md, "Hardware layer, per packet").

use crate::event::Ev;
use crate::hw::extender::SonetDir;
use crate::hw::switch::{Peer, Routes, SwitchPort};
use crate::transport::packet::Packet;
use interlab_kernel::{Ctx, Time};
use std::collections::VecDeque;

/// The path one way, and the far switch's ports to its nodes.
pub struct WanHop {
    sonet: SonetDir,
    /// The far switch's ports towards its nodes (its uplink not among them).
    ports: Vec<SwitchPort>,
    /// Far destination -> index into `ports`.
    routes: Routes,
    /// The far switch's port-to-port latency, picoseconds, and buffer per output, bytes.
    latency_ps: Time,
    buffer_bytes: u64,
    /// Credit stalls of the far switch not yet in force on the path: `(when it reaches the
    /// path, until when)`, in time order; one whose `until` is no later than an earlier
    /// one's is dropped (it is in force when that one is and changes nothing).
    stalls: VecDeque<(Time, Time)>,
    /// Packets (trains) forwarded by the far switch, and stalls it signalled.
    pub forwarded: u64,
    pub stalls_signalled: u64,
}

impl WanHop {
    /// The path one way (`sonet`) to a far switch with port-to-port latency `latency_ps`
    /// and `buffer_bytes` per output, whose ports towards its nodes are `ports` (routed by
    /// `routes`). `None` where this would not give the hop-by-hop times: the
    /// near switch's latency is zero or the far switch's stalls take time to reach the path
    /// (`back_ps`). The caller answers for the rest (the far ports fed by the uplink alone).
    pub fn new(sonet: SonetDir, near_latency_ps: Time, (latency_ps, buffer_bytes): (Time, u64), ports: Vec<SwitchPort>, routes: Routes, back_ps: Time) -> Option<Self> {
        if near_latency_ps == 0 || back_ps != 0 || ports.iter().any(|p| !matches!(p.peer, Peer::Node { .. })) {
            return None;
        }
        Some(WanHop { sonet, ports, routes, latency_ps, buffer_bytes, stalls: VecDeque::new(), forwarded: 0, stalls_signalled: 0 })
    }

    /// The first bit of `pkt` reaches the near extender at `now`, the whole packet `ser_ps`
    /// later: carries it over the path and through the far switch, and schedules its
    /// arrival at the far node.
    pub fn carry(&mut self, now: Time, ser_ps: Time, pkt: Packet, ctx: &mut Ctx<'_, Ev>) {
        // Stalls that reached the path before this packet are in force for it.
        while let Some(&(at, until)) = self.stalls.front() {
            if at >= now {
                break;
            }
            self.sonet.hold(until);
            self.stalls.pop_front();
        }
        let at_far = self.sonet.carry(now, ser_ps, pkt.wire_bytes, pkt.count);
        let out = self.routes.get(pkt.dst_node, pkt.dst_port)
            .unwrap_or_else(|| panic!("switch: no route to node {} port {}", pkt.dst_node, pkt.dst_port));
        let port = &mut self.ports[out];
        // The far extender delivers the packet whole (`ser_in` 0).
        let e = port.forward(at_far, 0, pkt.wire_bytes, pkt.count, self.latency_ps, self.buffer_bytes);
        self.forwarded += 1;
        if let Some(until) = e.stall_until {
            self.stalls_signalled += 1;
            if self.stalls.back().is_none_or(|&(_, u)| u < until) {
                self.stalls.push_back((at_far, until));
            }
        }
        let Peer::Node { id, port: p } = port.peer else { unreachable!("checked in new") };
        ctx.send_at(id, e.start + e.ser_out + port.prop_ps(), Ev::PktAtNode { port: p, pkt });
    }

    /// The path's serialiser this way once every stall signalled is in force: free at,
    /// packets carried.
    pub fn path(&self) -> (Time, u64) {
        let held = self.stalls.iter().map(|&(_, until)| until).max().unwrap_or(0);
        (self.sonet.free_at().max(held), self.sonet.packets)
    }
}

#[cfg(test)]
mod tests {
    use crate::event::Ev;
    use crate::hw::extender::WanPath;
    use crate::hw::link::{LineCode, LinkLayer, LinkSpec};
    use crate::hw::switch::Switch;
    use crate::hw::switch_spec::SwitchSpec;
    use crate::hw::wan_spec::WanSpec;
    use crate::transport::packet::{Kind, MsgMeta, Packet, Service, UlpKind};
    use interlab_kernel::{Component, ComponentId, Ctx, Simulation, Time};
    use interlab_patterns::Op;

    /// Sends its packets to its switch at fixed times (stalls ignored) or records arrivals.
    struct End {
        switch: ComponentId,
        arrivals: Vec<(Time, u64)>,
    }
    impl Component<Ev> for End {
        fn handle(&mut self, ev: Ev, ctx: &mut Ctx<'_, Ev>) {
            match ev {
                Ev::PktAtSwitch { in_port, ser_ps, pkt } => ctx.send_at(self.switch, ctx.now(), Ev::PktAtSwitch { in_port, ser_ps, pkt }),
                Ev::PktAtNode { pkt, .. } => self.arrivals.push((ctx.now(), pkt.psn)),
                Ev::Stall { .. } => {}
                _ => unreachable!(),
            }
        }
    }

    fn link(lane_gbps: f64, cable_m: f64) -> LinkSpec {
        LinkSpec { lane_gbps, lanes: 4, code: LineCode::B8B10, mtu_bytes: 2048, framing_bytes: 8, cable_m, prop_ns_per_m: 5.0, layer: LinkLayer::InfiniBand }
    }

    /// The far node's arrivals `(time, psn)`, the path's serialiser `(free at, packets)`,
    /// the events taken, and the far stalls signalled (inline only).
    type Run = (Vec<(Time, u64)>, (Time, u64), u64, u64);

    /// Node 0 on switch 0 sends `trains` (time, packets) of 2 KiB packets to node 1 on
    /// switch 1 over `miles`, the far node's link at `far_gbps` per lane: the far node's
    /// arrivals, the events taken, and the far stalls signalled (inline only).
    fn run(inline: bool, miles: f64, far_gbps: f64, trains: &[(Time, u32)]) -> Run {
        let sw_spec = SwitchSpec { port_latency_ns: 200.0, buffer_bytes: 8192 };
        let wan = WanSpec { ib_lane_gbps: 5.0, ib_lanes: 4, ib_code: LineCode::B8B10, sonet_payload_gbps: 9.584, encap_bytes: 8, extender_latency_ns: 1000.0, delay_us_per_mile: 9.38 };
        let mut sim: Simulation<Ev> = Simulation::new();
        let (src, dst, a_id, b_id, wan_id) = (ComponentId(0), ComponentId(1), ComponentId(2), ComponentId(3), ComponentId(4));
        let (mut a, mut b) = (Switch::new(&sw_spec), Switch::new(&sw_spec));
        a.add_node_port(0, src, 0, &link(5.0, 2.0));
        b.add_node_port(1, dst, 0, &link(far_gbps, 2.0));
        let up = wan.ib_link(&link(5.0, 2.0));
        let (pa, pb) = (a.add_uplink(wan_id, 0, &up), b.add_uplink(wan_id, 1, &up));
        let path = if inline {
            let (ports, routes) = b.node_ports();
            let hop = super::WanHop::new(super::SonetDir::new(&wan, miles), a.timing().0, b.timing(), ports, routes, up.prop_ps()).expect("exact here");
            a.set_far(hop);
            None
        } else {
            Some(WanPath::new(&wan, miles, (a_id, pa), (b_id, pb)))
        };
        sim.add(End { switch: a_id, arrivals: vec![] });
        sim.add(End { switch: b_id, arrivals: vec![] });
        sim.add(a);
        sim.add(b);
        if let Some(p) = path {
            sim.add(p);
        }
        let meta = MsgMeta { chan: 0, tag: 0, msg_id: 0, parts: 1, bytes: 0, notify: false, ulp: UlpKind::Raw };
        for (i, &(t, count)) in trains.iter().enumerate() {
            let kind = Kind::Data { op: Op::RdmaWrite, first: false, last: false };
            let wire = count as u64 * 2074;
            let pkt = Packet { dst_node: 1, dst_port: 0, dst_qp: 0, kind, service: Service::Uc, psn: i as u64, ack_req: false, payload: 0, wire_bytes: wire, count, wr_id: 0, meta };
            let ser = link(5.0, 2.0).ser_ps(wire, count as u64);
            sim.schedule(src, t, Ev::PktAtSwitch { in_port: 0, ser_ps: ser, pkt });
        }
        let stats = sim.run();
        let (path, far_stalls) = if inline {
            let hop = sim.get::<Switch>(a_id).and_then(Switch::far).expect("inline hop");
            (hop.path(), hop.stalls_signalled)
        } else {
            (sim.get::<WanPath>(wan_id).expect("path").dirs()[0], 0)
        };
        let d: &End = sim.get(dst).expect("end");
        (d.arrivals.clone(), path, stats.events, far_stalls)
    }

    #[test]
    fn the_far_hops_computed_at_the_near_switch_give_the_hop_by_hop_arrivals() {
        // Trains of 1 to 8 packets back to back at the sender's 16 Gb/s, with a gap every
        // 50; the far node's link at 32, 16, 8 or 1.6 Gb/s (the path carries 8: at 8 and
        // below trains queue at the far output and its stalls hold the path). A stall
        // reaches the path one way after the packets it answers, and changes what the far
        // node sees only where it holds a packet that reaches the path just after it while
        // the far link runs dry: the pairs below make that happen at most distances (with
        // the stalls ignored, six of these nine cases give other arrival times).
        let mut trains = Vec::new();
        let mut t = 0;
        for i in 0..400u32 {
            let count = 1 + i % 8;
            trains.push((t, count));
            t += count as Time * 1_040_000 + if i % 50 == 49 { 3_000_000 } else { 0 };
        }
        // Then trains of 8 each followed, after a gap swept from 0 to 400 us, by a single
        // packet, the link left to drain after each pair: a stall answering the train
        // holds the path for the single packet when the packet reaches the path just after
        // the stall, and the far link idles until it comes.
        for i in 0..100 {
            trains.push((t, 8));
            t += 8 * 1_040_000 + i * 4_000_000;
            trains.push((t, 1));
            t += 2_000_000_000;
        }
        for (miles, far_gbps) in [(0.0, 10.0), (0.0, 5.0), (0.0, 2.5), (0.0, 0.5), (1.0, 5.0), (1.0, 2.5), (20.0, 2.5), (20.0, 0.5), (2000.0, 0.5)] {
            let (hops, path_hops, ev_hops, _) = run(false, miles, far_gbps, &trains);
            let (inl, path_inl, ev_inl, stalls) = run(true, miles, far_gbps, &trains);
            assert_eq!(hops.len(), trains.len());
            assert_eq!(inl, hops, "{miles} miles, far link {far_gbps} Gb/s per lane");
            assert_eq!(path_inl, path_hops, "{miles} miles, far link {far_gbps} Gb/s per lane: the path's serialiser");
            assert!(ev_inl < ev_hops, "{ev_inl} events against {ev_hops}");
            if far_gbps < 2.5 {
                assert!(stalls > 0, "the far output fills");
            }
        }
    }
}

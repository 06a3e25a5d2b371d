//! The switch component: cut-through forwarding with a port-to-port latency and output
//! queueing (one serialiser per output port).

use crate::event::Ev;
use crate::hw::link::LinkSpec;
use crate::hw::switch_spec::SwitchSpec;
use interlab_kernel::{Component, ComponentId, Ctx, Time};

/// One output port and what it is cabled to.
#[derive(Debug, Clone)]
pub struct SwitchPort {
    /// Node component on the far end.
    pub node: ComponentId,
    /// Adapter port on that node.
    pub node_port: u8,
    /// When the output serialiser is free.
    free: Time,
    /// Busy picoseconds (utilisation).
    pub busy_ps: Time,
}

/// A single switch joining all node ports.
pub struct Switch {
    link: LinkSpec,
    latency_ps: Time,
    /// Output ports indexed `node * ports_per_node + port`.
    pub ports: Vec<SwitchPort>,
    ports_per_node: u32,
    /// Packets forwarded.
    pub forwarded: u64,
}

impl Switch {
    /// A switch with `nodes * ports_per_node` ports; `node_ids[i]` is node i's component.
    pub fn new(spec: &SwitchSpec, link: &LinkSpec, node_ids: &[ComponentId], ports_per_node: u32) -> Self {
        let mut ports = Vec::new();
        for &node in node_ids {
            for p in 0..ports_per_node {
                ports.push(SwitchPort { node, node_port: p as u8, free: 0, busy_ps: 0 });
            }
        }
        Switch { link: link.clone(), latency_ps: (spec.port_latency_ns * 1000.0).round() as Time, ports, ports_per_node, forwarded: 0 }
    }
}

impl Component<Ev> for Switch {
    fn handle(&mut self, ev: Ev, ctx: &mut Ctx<'_, Ev>) {
        let Ev::PktAtSwitch { ser_ps, pkt, .. } = ev else {
            unreachable!("only packets reach the switch");
        };
        let now = ctx.now();
        let out = (pkt.dst_node * self.ports_per_node + pkt.dst_port as u32) as usize;
        let ser_out = self.link.ser_ps(pkt.wire_bytes);
        let port = &mut self.ports[out];
        // Cut-through: the header leaves after the port-to-port latency if the output is
        // free; the tail can never leave before it has arrived.
        let start = (now + self.latency_ps).max(port.free).max((now + ser_ps).saturating_sub(ser_out));
        port.free = start + ser_out;
        port.busy_ps += ser_out;
        self.forwarded += 1;
        let arrive = start + ser_out + self.link.prop_ps();
        let (node, node_port) = (port.node, port.node_port);
        ctx.send_at(node, arrive, Ev::PktAtNode { port: node_port, pkt });
    }
}

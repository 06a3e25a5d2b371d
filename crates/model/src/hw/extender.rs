//! The wide-area path as one element: two InfiniBand-over-SONET range extenders and the
//! loop between them. Each direction is a store-and-forward queue onto the SONET payload
//! rate (with per-packet encapsulation) followed by the loop's propagation delay.
//! Extender buffers are taken as large enough to keep the loop busy (their purpose).

use crate::event::Ev;
use crate::hw::wan_spec::WanSpec;
use interlab_kernel::{Component, ComponentId, Ctx, Time};

/// Both extenders and the loop.
pub struct WanPath {
    /// Site switches: input 0 comes from `switches[0]` and leaves to `switches[1]`, and back.
    switches: [(ComponentId, u16); 2],
    /// SONET serialiser per direction: free time.
    free: [Time; 2],
    ps_per_byte: f64,
    encap_bytes: u64,
    /// Extender latency plus loop propagation, one way, picoseconds.
    one_way_ps: Time,
    /// Packets carried per direction.
    pub packets: [u64; 2],
}

impl WanPath {
    /// A path of `miles` between switch `a` (its uplink input `a_port`) and `b`.
    pub fn new(spec: &WanSpec, miles: f64, a: (ComponentId, u16), b: (ComponentId, u16)) -> Self {
        let one_way_ps = (2.0 * spec.extender_latency_ns * 1e3 + miles * spec.delay_us_per_mile * 1e6).round() as Time;
        WanPath {
            switches: [a, b],
            free: [0, 0],
            ps_per_byte: 8e3 / spec.sonet_payload_gbps,
            encap_bytes: spec.encap_bytes,
            one_way_ps,
            packets: [0, 0],
        }
    }

    /// One-way delay of the path excluding serialisation, picoseconds.
    pub fn one_way_ps(&self) -> Time {
        self.one_way_ps
    }
}

impl Component<Ev> for WanPath {
    fn handle(&mut self, ev: Ev, ctx: &mut Ctx<'_, Ev>) {
        let (in_port, ser_ps, pkt) = match ev {
            Ev::PktAtSwitch { in_port, ser_ps, pkt } => (in_port, ser_ps, pkt),
            // The far switch is out of credits for packets we deliver on `port`.
            Ev::Stall { port, until } => {
                let dir = 1 - (port as usize).min(1);
                self.free[dir] = self.free[dir].max(until);
                return;
            }
            _ => unreachable!("only packets and credits reach the WAN path"),
        };
        let dir = (in_port as usize).min(1);
        // Store and forward: the whole packet is in the extender before it is framed.
        let ready = ctx.now() + ser_ps;
        let dur = ((pkt.wire_bytes + pkt.count as u64 * self.encap_bytes) as f64 * self.ps_per_byte).ceil() as Time;
        let start = ready.max(self.free[dir]);
        self.free[dir] = start + dur;
        self.packets[dir] += 1;
        let (to, port) = self.switches[1 - dir];
        // The far extender re-serialises onto its InfiniBand port: the far switch's uplink
        // input sees the first bit once the SONET frame is in, at the IB port's rate.
        ctx.send_at(to, start + dur + self.one_way_ps, Ev::PktAtSwitch { in_port: port, ser_ps: 0, pkt });
    }
}

//! The wide-area path as one element: two InfiniBand-over-SONET range extenders and the
//! loop between them. Each direction is a store-and-forward queue onto the SONET payload
//! rate (with per-packet encapsulation) followed by the loop's propagation delay.
//! Extender buffers are taken as large enough to keep the loop busy (their purpose).

use crate::event::Ev;
use crate::hw::memo::Memo2;
use crate::hw::wan_spec::WanSpec;
use interlab_kernel::{Component, ComponentId, Ctx, Time};

/// One direction of the path: the near extender's SONET serialiser and the loop.
#[derive(Debug, Clone)]
pub struct SonetDir {
    /// When the serialiser is free.
    free: Time,
    ps_per_byte: f64,
    encap_bytes: u64,
    /// Extender latency plus loop propagation, one way, picoseconds.
    one_way_ps: Time,
    /// Packets (trains) carried.
    pub packets: u64,
    /// The framing time of the last two sizes framed, `(bytes, ps)` (a path carries a
    /// stream's data trains and its ACKs): the value the conversion gives, without it.
    durations: Memo2<u64, Time>,
}

impl SonetDir {
    /// A direction of a path of `miles`.
    pub fn new(spec: &WanSpec, miles: f64) -> Self {
        let one_way_ps = (2.0 * spec.extender_latency_ns * 1e3 + miles * spec.delay_us_per_mile * 1e6).round() as Time;
        // `(0, 0)` holds: no bytes take no time.
        SonetDir { free: 0, ps_per_byte: 8e3 / spec.sonet_payload_gbps, encap_bytes: spec.encap_bytes, one_way_ps, packets: 0, durations: Memo2::new((0, 0)) }
    }

    /// A packet (train) of `wire_bytes` in `count` packets whose first bit reached the near
    /// extender at `now`, taking `ser_ps` to arrive whole: returns when its first bit reaches
    /// the far switch (the far extender re-serialises onto its InfiniBand port: the far
    /// switch's uplink input sees the first bit once the SONET frame is in, at the IB
    /// port's rate).
    #[inline]
    pub fn carry(&mut self, now: Time, ser_ps: Time, wire_bytes: u64, count: u32) -> Time {
        // Store and forward: the whole packet is in the extender before it is framed.
        let ready = now + ser_ps;
        let bytes = wire_bytes + count as u64 * self.encap_bytes;
        let per_byte = self.ps_per_byte;
        let dur = self.durations.get_or(bytes, || (bytes as f64 * per_byte).ceil() as Time);
        let start = ready.max(self.free);
        self.free = start + dur;
        self.packets += 1;
        start + dur + self.one_way_ps
    }

    /// The far switch has no credit for this direction's packets until `until`.
    #[inline]
    pub fn hold(&mut self, until: Time) {
        self.free = self.free.max(until);
    }

    /// One-way delay excluding serialisation, picoseconds.
    pub fn one_way_ps(&self) -> Time {
        self.one_way_ps
    }

    /// When the serialiser is free (after the packets carried and the stalls in force).
    pub fn free_at(&self) -> Time {
        self.free
    }
}

/// Both extenders and the loop.
pub struct WanPath {
    /// Site switches: input 0 comes from `switches[0]` and leaves to `switches[1]`, and back.
    switches: [(ComponentId, u16); 2],
    /// Per direction (0: from `switches[0]`).
    dirs: [SonetDir; 2],
}

impl WanPath {
    /// A path of `miles` between switch `a` (its uplink input `a_port`) and `b`.
    pub fn new(spec: &WanSpec, miles: f64, a: (ComponentId, u16), b: (ComponentId, u16)) -> Self {
        let d = SonetDir::new(spec, miles);
        WanPath { switches: [a, b], dirs: [d.clone(), d] }
    }

    /// One-way delay of the path excluding serialisation, picoseconds.
    pub fn one_way_ps(&self) -> Time {
        self.dirs[0].one_way_ps()
    }

    /// Each direction's serialiser: free at, packets carried.
    pub fn dirs(&self) -> [(Time, u64); 2] {
        [(self.dirs[0].free_at(), self.dirs[0].packets), (self.dirs[1].free_at(), self.dirs[1].packets)]
    }
}

impl Component<Ev> for WanPath {
    fn handle(&mut self, ev: Ev, ctx: &mut Ctx<'_, Ev>) {
        let (in_port, ser_ps, pkt) = match ev {
            Ev::PktAtSwitch { in_port, ser_ps, pkt } => (in_port, ser_ps, pkt),
            // The far switch is out of credits for packets we deliver on `port`.
            Ev::Stall { port, until } => {
                let dir = 1 - (port as usize).min(1);
                self.dirs[dir].hold(until);
                return;
            }
            _ => unreachable!("only packets and credits reach the WAN path"),
        };
        let dir = (in_port as usize).min(1);
        let at = self.dirs[dir].carry(ctx.now(), ser_ps, pkt.wire_bytes, pkt.count);
        let (to, port) = self.switches[1 - dir];
        ctx.send_at(to, at, Ev::PktAtSwitch { in_port: port, ser_ps: 0, pkt });
    }
}

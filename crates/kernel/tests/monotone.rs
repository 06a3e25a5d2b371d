//! Property: whatever components schedule, handlers see time that never runs backwards,
//! and the same seed gives the same trace.

use interlab_kernel::{Component, ComponentId, Ctx, Rng, Simulation, Time};
use proptest::prelude::*;

struct Chaos {
    rng: Rng,
    peers: u32,
    trace: std::rc::Rc<std::cell::RefCell<Vec<(Time, u32, u64)>>>,
}

impl Component<u64> for Chaos {
    fn handle(&mut self, msg: u64, ctx: &mut Ctx<'_, u64>) {
        self.trace.borrow_mut().push((ctx.now(), ctx.me().0, msg));
        if msg == 0 {
            return;
        }
        // Fan out 0-2 messages with delays including zero and absolute times in the past.
        for _ in 0..self.rng.below(3) {
            let to = ComponentId(self.rng.below(self.peers as u64) as u32);
            match self.rng.below(3) {
                0 => ctx.send(to, 0, msg - 1),
                1 => ctx.send(to, self.rng.below(1000), msg - 1),
                _ => ctx.send_at(to, ctx.now().saturating_sub(self.rng.below(50)), msg - 1),
            }
        }
    }
}

fn trace(seed: u64, n: u32, depth: u64) -> Vec<(Time, u32, u64)> {
    let t = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let mut sim = Simulation::new();
    for i in 0..n {
        sim.add(Chaos { rng: Rng::stream(seed, i as u64), peers: n, trace: t.clone() });
    }
    for i in 0..n {
        sim.schedule(ComponentId(i), i as u64 * 7, depth);
    }
    sim.run_bounded(Time::MAX, 200_000);
    let v = t.borrow().clone();
    v
}

proptest! {
    #[test]
    fn time_is_monotone_and_runs_are_deterministic(seed in any::<u64>(), n in 1u32..6, depth in 1u64..12) {
        let a = trace(seed, n, depth);
        prop_assert!(a.windows(2).all(|w| w[0].0 <= w[1].0), "time ran backwards");
        prop_assert_eq!(a, trace(seed, n, depth));
    }
}

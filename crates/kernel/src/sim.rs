//! Components, addressing and the run loop.

use crate::{EventQueue, Time};
use std::any::Any;

/// Address of a component inside one [`Simulation`]: an index, so components never hold
/// pointers to each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ComponentId(pub u32);

/// Something that reacts to messages of type `M`.
pub trait Component<M>: Any {
    /// Handles one message delivered at `ctx.now()`.
    fn handle(&mut self, msg: M, ctx: &mut Ctx<'_, M>);
}

/// What a component may do while handling a message: read the clock, schedule messages.
pub struct Ctx<'a, M> {
    now: Time,
    me: ComponentId,
    queue: &'a mut EventQueue<(ComponentId, M)>,
    stop: &'a mut bool,
}

impl<M> Ctx<'_, M> {
    /// Current simulated time in picoseconds.
    pub fn now(&self) -> Time {
        self.now
    }

    /// The component being run.
    pub fn me(&self) -> ComponentId {
        self.me
    }

    /// Delivers `msg` to `to` after `delay` picoseconds (0 = later at the same instant).
    pub fn send(&mut self, to: ComponentId, delay: Time, msg: M) {
        self.queue.push(self.now + delay, (to, msg));
    }

    /// Delivers `msg` to `to` at absolute time `at` (clamped to now: time never runs back).
    pub fn send_at(&mut self, to: ComponentId, at: Time, msg: M) {
        self.queue.push(at.max(self.now), (to, msg));
    }

    /// Delivers `msg` to the running component itself after `delay` picoseconds.
    pub fn schedule_self(&mut self, delay: Time, msg: M) {
        let me = self.me;
        self.send(me, delay, msg);
    }

    /// Ends the run after this handler returns.
    pub fn stop(&mut self) {
        *self.stop = true;
    }
}

/// Counters of one run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunStats {
    /// Events handled.
    pub events: u64,
    /// Simulated time at the end, picoseconds.
    pub end_time: Time,
}

/// A set of components and the queue of messages between them.
pub struct Simulation<M> {
    components: Vec<Box<dyn Component<M>>>,
    queue: EventQueue<(ComponentId, M)>,
    now: Time,
    events: u64,
}

impl<M: 'static> Default for Simulation<M> {
    fn default() -> Self {
        Self::new()
    }
}

impl<M: 'static> Simulation<M> {
    /// An empty simulation at time 0.
    pub fn new() -> Self {
        Simulation { components: Vec::new(), queue: EventQueue::new(), now: 0, events: 0 }
    }

    /// Adds a component; returns its address.
    pub fn add<C: Component<M>>(&mut self, c: C) -> ComponentId {
        self.components.push(Box::new(c));
        ComponentId((self.components.len() - 1) as u32)
    }

    /// Replaces the component at `id` (used to wire components that need each other's ids).
    pub fn replace<C: Component<M>>(&mut self, id: ComponentId, c: C) {
        self.components[id.0 as usize] = Box::new(c);
    }

    /// The id the next [`Simulation::add`] will return.
    pub fn next_id(&self) -> ComponentId {
        ComponentId(self.components.len() as u32)
    }

    /// Schedules `msg` for `to` at absolute time `at` picoseconds.
    pub fn schedule(&mut self, to: ComponentId, at: Time, msg: M) {
        self.queue.push(at.max(self.now), (to, msg));
    }

    /// Current simulated time, picoseconds.
    pub fn now(&self) -> Time {
        self.now
    }

    /// Borrows a component as its concrete type (None if the id or type is wrong).
    pub fn get<C: Component<M>>(&self, id: ComponentId) -> Option<&C> {
        let b: &dyn Any = self.components.get(id.0 as usize)?.as_ref();
        b.downcast_ref::<C>()
    }

    /// Mutably borrows a component as its concrete type.
    pub fn get_mut<C: Component<M>>(&mut self, id: ComponentId) -> Option<&mut C> {
        let b: &mut dyn Any = self.components.get_mut(id.0 as usize)?.as_mut();
        b.downcast_mut::<C>()
    }

    /// Runs until the queue is empty, a handler calls [`Ctx::stop`], or the next event is
    /// later than `until` picoseconds (that event stays queued).
    pub fn run_until(&mut self, until: Time) -> RunStats {
        self.run_bounded(until, u64::MAX)
    }

    /// Runs like [`Simulation::run_until`] but handles at most `max_events` events.
    pub fn run_bounded(&mut self, until: Time, max_events: u64) -> RunStats {
        let mut stop = false;
        let limit = self.events.saturating_add(max_events);
        while !stop && self.events < limit {
            // The earliest event if it is due by `until`; a later one stays queued untouched.
            let Some((time, slot)) = self.queue.pop_until(until) else { break };
            let (to, msg) = self.queue.take(slot);
            debug_assert!(time >= self.now, "time ran backwards");
            self.now = time;
            self.events += 1;
            let comp = &mut self.components[to.0 as usize];
            let mut ctx = Ctx { now: self.now, me: to, queue: &mut self.queue, stop: &mut stop };
            comp.handle(msg, &mut ctx);
        }
        RunStats { events: self.events, end_time: self.now }
    }

    /// Runs until the queue is empty or a handler stops the run.
    pub fn run(&mut self) -> RunStats {
        self.run_until(Time::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two components bouncing a counter: checks addressing, delays and stop.
    struct Ping {
        peer: ComponentId,
        seen: Vec<(Time, u32)>,
    }
    impl Component<u32> for Ping {
        fn handle(&mut self, n: u32, ctx: &mut Ctx<'_, u32>) {
            self.seen.push((ctx.now(), n));
            if n == 10 {
                ctx.stop();
            } else {
                ctx.send(self.peer, 7, n + 1);
            }
        }
    }

    #[test]
    fn ping_pong_times() {
        let mut sim = Simulation::new();
        let a = sim.next_id();
        let b = ComponentId(a.0 + 1);
        sim.add(Ping { peer: b, seen: vec![] });
        sim.add(Ping { peer: a, seen: vec![] });
        sim.schedule(a, 3, 0);
        let st = sim.run();
        assert_eq!(st.end_time, 3 + 70);
        assert_eq!(st.events, 11);
        let pa = sim.get::<Ping>(a).unwrap();
        assert_eq!(pa.seen[1], (17, 2));
        assert!(sim.get::<Ping>(ComponentId(9)).is_none());
    }
}

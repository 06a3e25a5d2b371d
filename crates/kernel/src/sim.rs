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
    /// The run's horizon: no event later than this is handled ([`Simulation::run_until`]).
    until: Time,
    me: ComponentId,
    queue: &'a mut EventQueue<M, false>,
    /// Set by [`Ctx::stop`]: the run ends after this handler.
    stop: bool,
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
        self.queue.push_tagged(self.now + delay, to.0, msg);
    }

    /// Delivers `msg` to `to` at absolute time `at` (clamped to now: time never runs back).
    pub fn send_at(&mut self, to: ComponentId, at: Time, msg: M) {
        self.queue.push_tagged(at.max(self.now), to.0, msg);
    }

    /// Delivers `msg` to the running component itself after `delay` picoseconds.
    pub fn schedule_self(&mut self, delay: Time, msg: M) {
        let me = self.me;
        self.send(me, delay, msg);
    }

    /// Moves this handler's clock on to `t` when no pending event fires at or before `t`
    /// (nor is `t` beyond the run's horizon): what the handler does next is then what it
    /// would do in an event of its own at `t`, which would be the next one taken with
    /// nothing between (ties included). Returns whether the clock moved; it never moves
    /// back. The run's clock follows when the handler returns.
    #[inline]
    pub fn advance_to(&mut self, t: Time) -> bool {
        if t < self.now || t > self.until || !self.queue.none_by(t) {
            return false;
        }
        self.now = t;
        true
    }

    /// Ends the run after this handler returns.
    pub fn stop(&mut self) {
        self.stop = true;
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
    /// Pending messages, each tagged with its destination component's index (no sequence
    /// numbers stored: the run loop never reads them).
    queue: EventQueue<M, false>,
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
        self.queue.push_tagged(at.max(self.now), to.0, msg);
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
        let limit = self.events.saturating_add(max_events);
        // One context for the whole run, not one per event: only the clock and the
        // component change from event to event (the handler's clock carries over from one
        // event to the next as the run's clock), and the queue, horizon and stop flag stay.
        let mut ctx = Ctx { now: self.now, until, me: ComponentId(0), queue: &mut self.queue, stop: false };
        let mut events = self.events;
        while !ctx.stop && events < limit {
            // The earliest event if it is due by `until`; a later one stays queued untouched.
            let Some((time, to, msg)) = ctx.queue.pop_tagged_until(until) else { break };
            // A handler may have moved its clock on ([`Ctx::advance_to`]), never past this.
            debug_assert!(time >= ctx.now, "time ran backwards");
            ctx.now = time;
            ctx.me = ComponentId(to);
            events += 1;
            self.components[to as usize].handle(msg, &mut ctx);
        }
        self.now = ctx.now;
        self.events = events;
        RunStats { events, end_time: self.now }
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

    /// Handles `n`: at 0 schedules 1 at 100 and 2 at 50; at 2 tries to move its clock to
    /// 100 (refused: 1 is due then) and to 40 (refused: the past); at 1 moves it to 300
    /// (nothing due) and schedules 3 at 300, then tries 500 (refused: 3 is due).
    struct Skipper {
        seen: Vec<(Time, u32, bool)>,
    }
    impl Component<u32> for Skipper {
        fn handle(&mut self, n: u32, ctx: &mut Ctx<'_, u32>) {
            match n {
                0 => {
                    ctx.schedule_self(100, 1);
                    ctx.schedule_self(50, 2);
                }
                2 => {
                    let moved = ctx.advance_to(100) || ctx.advance_to(40);
                    self.seen.push((ctx.now(), n, moved));
                }
                1 => {
                    let moved = ctx.advance_to(300);
                    self.seen.push((ctx.now(), n, moved));
                    ctx.send_at(ctx.me(), 300, 3);
                    let moved = ctx.advance_to(500);
                    self.seen.push((ctx.now(), n, moved));
                }
                _ => self.seen.push((ctx.now(), n, false)),
            }
        }
    }

    #[test]
    fn a_handler_moves_its_clock_on_only_through_a_quiet_window_and_the_run_follows() {
        let mut sim = Simulation::new();
        let a = sim.add(Skipper { seen: vec![] });
        sim.schedule(a, 0, 0);
        let st = sim.run();
        assert_eq!(sim.get::<Skipper>(a).unwrap().seen, vec![(50, 2, false), (300, 1, true), (300, 1, false), (300, 3, false)]);
        assert_eq!((st.events, st.end_time), (4, 300));
        // Not beyond the run's horizon.
        let mut sim = Simulation::new();
        let a = sim.add(Skipper { seen: vec![] });
        sim.schedule(a, 0, 0);
        let st = sim.run_until(200);
        assert_eq!(sim.get::<Skipper>(a).unwrap().seen, vec![(50, 2, false), (100, 1, false), (100, 1, false)]);
        assert_eq!(st.end_time, 100);
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

    type Trace = std::rc::Rc<std::cell::RefCell<Vec<(Time, u32, u64)>>>;

    /// Records every delivery; a message `n > 0` fans out to peers with delays 0..=2 (many
    /// ties) and, every fifth one, stops the run.
    struct Fan {
        trace: Trace,
        peers: u32,
        stop_on_fifth: bool,
    }
    impl Component<u64> for Fan {
        fn handle(&mut self, n: u64, ctx: &mut Ctx<'_, u64>) {
            self.trace.borrow_mut().push((ctx.now(), ctx.me().0, n));
            if self.stop_on_fifth && n.is_multiple_of(5) {
                ctx.stop();
            }
            if n > 0 {
                for k in 0..(n % 3 + 1) {
                    let to = ComponentId(((n + k) % self.peers as u64) as u32);
                    ctx.send(to, (n + k) % 3, n - 1);
                }
            }
        }
    }

    fn fan(stop_on_fifth: bool) -> (Simulation<u64>, Trace) {
        let trace = Trace::default();
        let mut sim = Simulation::new();
        for _ in 0..3 {
            sim.add(Fan { trace: trace.clone(), peers: 3, stop_on_fifth });
        }
        sim.schedule(ComponentId(0), 0, 9);
        sim.schedule(ComponentId(1), 0, 8);
        sim.schedule(ComponentId(2), 1, 9);
        (sim, trace)
    }

    #[test]
    fn chunked_runs_equal_one_run() {
        let (mut whole, t_whole) = fan(false);
        let total = whole.run();
        assert!(total.events > 100);
        // The same run cut into pieces by event budget, by time bound and by stop().
        let (mut a, t_a) = fan(false);
        while a.run_bounded(Time::MAX, 7).events < total.events {}
        let (mut b, t_b) = fan(false);
        let mut until = 0;
        while b.run_until(until).events < total.events {
            until += 1;
        }
        let (mut c, t_c) = fan(true);
        let mut stops = 0;
        while c.run().events < total.events {
            stops += 1;
        }
        assert!(stops > 10);
        assert_eq!(*t_a.borrow(), *t_whole.borrow());
        assert_eq!(*t_b.borrow(), *t_whole.borrow());
        assert_eq!(*t_c.borrow(), *t_whole.borrow());
        assert_eq!(b.run().end_time, total.end_time);
    }

    #[test]
    fn run_until_is_inclusive_and_keeps_later_events_in_order() {
        let trace = Trace::default();
        let mut sim = Simulation::new();
        let id = sim.add(Fan { trace: trace.clone(), peers: 1, stop_on_fifth: false });
        sim.schedule(id, 10, 100); // seq 0
        sim.schedule(id, 5, 0);
        let st = sim.run_until(9);
        assert_eq!((st.events, st.end_time), (1, 5));
        // An event scheduled now for the same instant as the waiting one queues behind it.
        // 200 sends 199 with delay 0: that one runs at 10 too, last.
        sim.schedule(id, 10, 200);
        let st = sim.run_until(10);
        assert_eq!((st.events, st.end_time), (4, 10));
        let at10: Vec<u64> = trace.borrow().iter().filter(|e| e.0 == 10).map(|e| e.2).collect();
        assert_eq!(at10, vec![100, 200, 199]);
        // The rest of their fan-out (delays 1 and 2) waits beyond the bound.
        assert_eq!(sim.run_bounded(10, u64::MAX).events, 4);
        let st = sim.run_bounded(Time::MAX, 1);
        assert_eq!((st.events, st.end_time), (5, 11));
    }

    #[test]
    fn schedule_in_the_past_is_clamped_to_now() {
        let trace = Trace::default();
        let mut sim = Simulation::new();
        let id = sim.add(Fan { trace: trace.clone(), peers: 1, stop_on_fifth: false });
        sim.schedule(id, 50, 0);
        sim.run();
        sim.schedule(id, 10, 0);
        assert_eq!(sim.run().end_time, 50);
        assert_eq!(*trace.borrow(), vec![(50, 0, 0), (50, 0, 0)]);
    }

    #[test]
    fn get_mut_downcasts_to_the_concrete_type() {
        let mut sim: Simulation<u32> = Simulation::new();
        let a = sim.add(Ping { peer: ComponentId(0), seen: vec![] });
        sim.get_mut::<Ping>(a).unwrap().seen.push((1, 1));
        assert_eq!(sim.get::<Ping>(a).unwrap().seen, vec![(1, 1)]);
        struct Other;
        impl Component<u32> for Other {
            fn handle(&mut self, _: u32, _: &mut Ctx<'_, u32>) {}
        }
        assert!(sim.get_mut::<Other>(a).is_none());
        sim.replace(a, Other);
        assert!(sim.get::<Other>(a).is_some() && sim.get::<Ping>(a).is_none());
    }
}

//! A node: a [`Host`] (processes on cores, memory), its [`Adapter`] (engines, queue pairs,
//! ports, bus) and the upper-layer protocols its channels run ([`Ulps`]), as one
//! component. The node routes events to the part they concern and gives protocols the
//! narrow [`UlpHost`] handle over host and adapter.

use crate::adapter::{Adapter, ChanEnd, PortUse};
use crate::event::Ev;
use crate::host::Host;
use crate::hw::link::LinkSpec;
use crate::profile::Profile;
use crate::transport::packet::MsgMeta;
use crate::ulp::mpi::MpiEnd;
use crate::ulp::sock::SockEnd;
use crate::ulp::{UlpEv, UlpHost, UlpId, Ulps};
use interlab_kernel::{Component, ComponentId, Ctx, Time};
use interlab_patterns::{Input, Message, Op, Output};
use std::sync::Arc;

use interlab_kernel::from_ns as ns;

/// The protocol a new channel runs, with its end's state.
#[derive(Debug, Clone)]
pub enum ChanUlp {
    /// The pattern's messages straight on verbs.
    Raw,
    Mpi(MpiEnd),
    Sock(SockEnd),
}

/// One host with its adapter.
pub struct Node {
    pub host: Host,
    pub adapter: Adapter,
    pub ulps: Ulps,
    prof: Arc<Profile>,
    /// `[host] cqe_poll_ns` in picoseconds, converted once.
    cqe_poll_ps: Time,
}

/// The [`UlpHost`] handle: the host and adapter of one node while it handles one event.
struct Hw<'a, 'c> {
    host: &'a mut Host,
    adapter: &'a mut Adapter,
    ctx: &'a mut Ctx<'c, Ev>,
}

impl UlpHost for Hw<'_, '_> {
    fn now(&self) -> Time {
        self.ctx.now()
    }

    fn profile(&self) -> &Profile {
        self.adapter.profile()
    }

    fn qp_mtu(&self, qp: u32) -> u64 {
        self.adapter.qp_mtu(qp)
    }

    fn post(&mut self, qp: u32, op: Op, bytes: u64, meta: MsgMeta, t: Time) -> Time {
        self.adapter.post_wr(qp, op, bytes, meta, t, self.ctx)
    }

    fn post_datagrams(&mut self, qp: u32, bytes: u64, meta: MsgMeta, t: Time) -> Time {
        self.adapter.post_datagrams(qp, bytes, meta, t, self.ctx)
    }

    fn sock_train_max(&self) -> u64 {
        self.adapter.sock_train_max
    }

    fn post_train(&mut self, qp: u32, packet_bytes: u64, bytes: u64, meta: MsgMeta, t: Time) {
        self.adapter.post_train(qp, packet_bytes, bytes, meta, t, self.ctx)
    }

    fn post_ps(&self) -> Time {
        self.adapter.post_ps()
    }

    fn on_cpu(&mut self, core: usize, ready: Time, f: impl FnOnce(&mut Self, Time) -> Time) -> Time {
        let (slot, start) = self.host.work_start(core, ready);
        let end = f(self, start).max(start);
        self.host.work_end(slot, core, start, end);
        end
    }

    fn core_free_at(&self, core: usize) -> Time {
        self.host.core_free_at(core)
    }

    fn cores(&self) -> usize {
        self.host.cores()
    }

    fn proc_core(&self, proc: u16) -> usize {
        self.host.proc_core(proc)
    }

    fn copy_end(&mut self, t: Time, cpu_ps: Time, traffic: u64) -> Time {
        self.host.copy_end(t, cpu_ps, traffic)
    }

    fn app_buffer(&self, msg_bytes: u64) -> u64 {
        self.host.app_buffer(msg_bytes)
    }

    fn schedule(&mut self, at: Time, ulp: UlpId, ev: UlpEv) {
        let me = self.ctx.me();
        self.ctx.send_at(me, at, Ev::Ulp { ulp, ev });
    }

    fn app_input(&mut self, proc: u16, input: Input, t: Time) -> (Time, Vec<Output>) {
        let adapter = &*self.adapter;
        self.host.app_input(proc, input, t, |c| adapter.chan_ulp(c).is_some_and(|u| u != UlpId::Sock))
    }

    fn before_post(&mut self, m: &Message, t: Time) -> Time {
        self.host.before_post(m, t)
    }

    fn recycle(&mut self, out: Vec<Output>) {
        self.host.recycle(out)
    }
}

/// Gives `input` to process `proc`'s programs at CPU time `t` and sends what they post,
/// each message over its channel's protocol; returns when the CPU is done.
fn feed(ulps: &mut Ulps, h: &mut Hw<'_, '_>, proc: u16, input: Input, t: Time) -> Time {
    let (mut t, out) = h.app_input(proc, input, t);
    for o in out.iter() {
        if let Output::Post(m) = o {
            t = h.before_post(m, t);
            t = match h.adapter.chan_ulp(m.chan) {
                Some(UlpId::Raw) | None => h.adapter.post_message(*m, t, h.ctx),
                Some(ulp) => ulps.send(ulp, h, *m, t),
            };
        }
    }
    h.recycle(out);
    t
}

impl Node {
    /// A node attached to `switch` at ports `switch_port_base..+ports`, with `links` behind
    /// its adapter's ports.
    pub fn new(index: u32, prof: Arc<Profile>, switch: ComponentId, switch_port_base: u16, links: Vec<LinkSpec>) -> Self {
        Node {
            host: Host::new(prof.clone()),
            adapter: Adapter::new(index, prof.clone(), switch, switch_port_base, links),
            ulps: Ulps::default(),
            cqe_poll_ps: ns(prof.host.cqe_poll_ns),
            prof,
        }
    }

    /// Declares this node's end of channel `chan`: its queue pairs and port use, the
    /// process owning it, whether the process hears of local completions, and the protocol.
    pub fn add_chan(&mut self, chan: u32, qps: Vec<u32>, ports: PortUse, proc: u16, completions: bool, ulp: ChanUlp) {
        let (id, sq_free) = match ulp {
            ChanUlp::Raw => (UlpId::Raw, false),
            ChanUlp::Mpi(end) => {
                let bounded = end.bounds_send_queue(self.prof.mpi.as_ref().expect("validated: MPI needs [mpi]"));
                self.ulps.mpi.add(chan, end);
                (UlpId::Mpi, bounded)
            }
            ChanUlp::Sock(end) => {
                self.ulps.sock.add(chan, end);
                (UlpId::Sock, false)
            }
        };
        self.adapter.add_chan(chan, ChanEnd { qps, ports, proc, next_msg: 0, completions, ulp: id, sq_free });
    }

    /// Runs process `proc`'s programs on `input` on its core (after polling a CQE if `cqe`).
    fn run_programs(&mut self, proc: u16, input: Input, cqe: bool, ctx: &mut Ctx<'_, Ev>) {
        let core = self.host.proc_core(proc);
        let poll = if cqe { self.cqe_poll_ps } else { 0 };
        let ulps = &mut self.ulps;
        let mut h = Hw { host: &mut self.host, adapter: &mut self.adapter, ctx };
        let now = h.now();
        h.on_cpu(core, now, |h, start| feed(ulps, h, proc, input, start + poll));
    }
}

impl Component<Ev> for Node {
    fn handle(&mut self, ev: Ev, ctx: &mut Ctx<'_, Ev>) {
        self.adapter.catch_up(ctx.now());
        if let Some(m) = self.host.memory.as_mut() {
            m.advance(ctx.now());
        }
        match ev {
            Ev::Start => {
                let mut h = Hw { host: &mut self.host, adapter: &mut self.adapter, ctx };
                self.ulps.start(&mut h);
                for p in 0..self.host.procs().len() {
                    self.run_programs(p as u16, Input::Start, false, ctx);
                }
            }
            Ev::Notify { proc, input, cqe } => self.run_programs(proc, input, cqe, ctx),
            Ev::Ulp { ulp, ev } => {
                let mut h = Hw { host: &mut self.host, adapter: &mut self.adapter, ctx };
                self.ulps.handle(ulp, &mut h, ev);
            }
            Ev::Doorbell { qp, wr } => self.adapter.doorbell(qp, wr, ctx),
            Ev::DoorbellWrite { qp, wr, bytes } => self.adapter.doorbell_write(qp, wr, bytes, ctx),
            Ev::WqeFetched { qp, wr } => self.adapter.wqe_fetched(qp, wr, ctx),
            Ev::RespReady { qp, job } => self.adapter.resp_ready(qp, job, ctx),
            Ev::TxSlot { packets, done } => {
                self.adapter.tx_slot(packets, ctx);
                if let Some(meta) = done {
                    self.adapter.local_done(meta, ctx);
                }
            }
            Ev::Depart { port } => self.adapter.depart(port, ctx),
            Ev::PktAtNode { ref pkt, .. } => self.adapter.receive(pkt, ctx),
            Ev::Stall { port, until } => self.adapter.stall(port, until),
            Ev::PktAtSwitch { .. } => unreachable!("switch event delivered to a node"),
        }
    }
}

//! Upper-layer protocols over the verbs model: MPI (eager, rendezvous, multi-rail, and the
//! datagram- and UC-based designs with MPI-level reliability) and stream sockets (kernel
//! TCP/IP over IPoIB or Ethernet, and SDP) with the host CPU work under them.
//!
//! A protocol sees the node only through [`UlpHost`], a narrow handle: post a verbs
//! operation, run work on a core, set a timer, hand data to the application. It keeps its
//! own per-channel state and is told what the adapter did through one event variant,
//! [`crate::event::Ev::Ulp`], which the node hands to [`Ulps::handle`]: a `match` on
//! [`UlpId`], no dynamic dispatch. Nothing here imports the node, host or adapter.

pub mod mpi;
pub mod sock;
pub mod stack_spec;

use crate::profile::Profile;
use crate::transport::packet::MsgMeta;
use interlab_kernel::Time;
use interlab_patterns::{Input, Message, Op, Output};

/// Which protocol a channel runs over the adapter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UlpId {
    /// The pattern's messages straight on verbs (the adapter's own channel handling).
    Raw,
    /// An MPI library ([`mpi::Mpi`]).
    Mpi,
    /// A stream socket ([`sock::Sockets`]).
    Sock,
}

impl UlpId {
    /// The protocol learns of arrivals by polling its completion queue (MPI's progress
    /// engine), so it sees them after the poll's detection delay; socket stacks take the
    /// completion's interrupt at once.
    pub fn polls(self) -> bool {
        self == UlpId::Mpi
    }

    /// The protocol for which the local completion of a request carrying `meta` is news
    /// (a socket stack's zero-copy write completion), if any: read from the message alone.
    pub fn wanting_local_completion(meta: &MsgMeta) -> Option<UlpId> {
        sock::wants_local_completion(meta).then_some(UlpId::Sock)
    }
}

/// What a protocol is told, through `Ev::Ulp`.
#[derive(Debug, Clone, Copy)]
pub enum UlpEv {
    /// A message of one of its channels reached the host: `packets` completions carrying
    /// `bytes` (datagram links; 0 for a connected message), `cqe` when it is seen by a
    /// completion rather than by polling memory.
    Arrived { meta: MsgMeta, packets: u32, bytes: u64, cqe: bool },
    /// A request of its own completed locally (an RDMA read, an acknowledged send it asked
    /// to hear about).
    Done { meta: MsgMeta },
    /// A completion freed a slot of queue pair `qp`'s send queue (channel `chan`).
    SqFree { chan: u32, qp: u32 },
    /// A timer the protocol set on channel `chan`; `seq` lets it void stale ones. `chain`:
    /// the one queued timer of a chain of which only the latest set can fire (TCP's
    /// delayed ACK: see `Tcp::set_delack`).
    Timer { chan: u32, seq: u64, chain: bool },
    /// The host's poll loop of receive queue `queue` may have ended (`seq`: arrivals then).
    PollEnd { queue: u8, seq: u64 },
}

/// The node as a protocol sees it: the narrow handle every protocol method gets.
pub trait UlpHost {
    /// Current simulated time, ps.
    fn now(&self) -> Time;
    /// The node's profile (host, stack, MPI and Ethernet costs).
    fn profile(&self) -> &Profile;
    /// The MTU of the link behind queue pair `qp`'s adapter port, bytes (the one place a
    /// port's MTU is read).
    fn qp_mtu(&self, qp: u32) -> u64;
    /// Posts one work request on `qp` at CPU time `t`; returns when the CPU is done.
    fn post(&mut self, qp: u32, op: Op, bytes: u64, meta: MsgMeta, t: Time) -> Time;
    /// Posts `bytes` as a list of one-MTU UD sends with one doorbell; returns when the CPU
    /// is done.
    fn post_datagrams(&mut self, qp: u32, bytes: u64, meta: MsgMeta, t: Time) -> Time;
    /// Socket trains: the most packets a stack hands the adapter as one train; 0 or 1 when
    /// off (every packet its own request and event).
    fn sock_train_max(&self) -> u64;
    /// Posts a socket train on `qp`: `bytes` as UD datagrams of `packet_bytes` each (the
    /// last may be shorter) with one doorbell written at CPU time `t`. Charges no CPU: the
    /// stack charged [`UlpHost::post_ps`] per datagram where it built each.
    fn post_train(&mut self, qp: u32, packet_bytes: u64, bytes: u64, meta: MsgMeta, t: Time);
    /// The CPU's cost of posting one work request, ps.
    fn post_ps(&self) -> Time;
    /// Runs `f` on `core` from no earlier than `ready`; `f` gets the start time and returns
    /// when the work ends. The core is busy in between.
    fn on_cpu(&mut self, core: usize, ready: Time, f: impl FnOnce(&mut Self, Time) -> Time) -> Time
    where
        Self: Sized;
    /// When core `core` is next free, ps.
    fn core_free_at(&self, core: usize) -> Time;
    /// Cores of the node (the last takes the adapter's interrupts).
    fn cores(&self) -> usize;
    /// The core process `proc` is bound to.
    fn proc_core(&self, proc: u16) -> usize;
    /// A CPU copy from `t` taking `cpu_ps` on an idle memory system and moving `traffic`
    /// bytes through it; returns its end.
    fn copy_end(&mut self, t: Time, cpu_ps: Time, traffic: u64) -> Time;
    /// The bytes the application's buffer spans for a message of `msg_bytes`.
    fn app_buffer(&self, msg_bytes: u64) -> u64;
    /// Delivers `ev` to protocol `ulp` of this node at `at`.
    fn schedule(&mut self, at: Time, ulp: UlpId, ev: UlpEv);
    /// Gives `input` to process `proc`'s programs at CPU time `t`: returns when the
    /// application is done and what it posts (its own channel only). Give the list back
    /// with [`UlpHost::recycle`].
    fn app_input(&mut self, proc: u16, input: Input, t: Time) -> (Time, Vec<Output>);
    /// The application's work before it posts `m` at `t` (an I/O daemon reading the strip
    /// out of its file store); returns when it may post.
    fn before_post(&mut self, m: &Message, t: Time) -> Time;
    /// Returns the list [`UlpHost::app_input`] gave out.
    fn recycle(&mut self, out: Vec<Output>);
}

/// An upper-layer protocol: its state for every channel of one node that runs it.
pub trait Ulp {
    /// This protocol's id in `Ev::Ulp`.
    const ID: UlpId;

    /// The application posted `m` on one of this protocol's channels at CPU time `t`;
    /// returns when the CPU is done.
    fn send<H: UlpHost>(&mut self, h: &mut H, m: Message, t: Time) -> Time;

    /// Something happened for this protocol ([`UlpEv`]).
    fn handle<H: UlpHost>(&mut self, h: &mut H, ev: UlpEv);

    /// The processes are about to start their programs.
    fn start<H: UlpHost>(&mut self, _h: &mut H) {}

    /// Hands `input` to process `proc`'s programs at CPU time `t` and sends what they post
    /// on this protocol; returns when the CPU is done.
    fn deliver<H: UlpHost>(&mut self, h: &mut H, proc: u16, input: Input, t: Time) -> Time {
        let (mut t, out) = h.app_input(proc, input, t);
        for o in out.iter() {
            if let Output::Post(m) = o {
                t = h.before_post(m, t);
                t = self.send(h, *m, t);
            }
        }
        h.recycle(out);
        t
    }
}

/// The protocols of one node.
#[derive(Debug, Default)]
pub struct Ulps {
    pub mpi: mpi::Mpi,
    pub sock: sock::Sockets,
}

impl Ulps {
    /// Sends `m` over protocol `ulp` (not [`UlpId::Raw`], which the adapter carries).
    pub fn send<H: UlpHost>(&mut self, ulp: UlpId, h: &mut H, m: Message, t: Time) -> Time {
        match ulp {
            UlpId::Mpi => self.mpi.send(h, m, t),
            UlpId::Sock => self.sock.send(h, m, t),
            UlpId::Raw => unreachable!("raw verbs messages are the adapter's"),
        }
    }

    /// Hands `ev` to protocol `ulp`.
    pub fn handle<H: UlpHost>(&mut self, ulp: UlpId, h: &mut H, ev: UlpEv) {
        match ulp {
            UlpId::Mpi => self.mpi.handle(h, ev),
            UlpId::Sock => self.sock.handle(h, ev),
            UlpId::Raw => unreachable!("raw verbs channels have no protocol events"),
        }
    }

    /// Every protocol's start.
    pub fn start<H: UlpHost>(&mut self, h: &mut H) {
        self.mpi.start(h);
        self.sock.start(h);
    }
}

//! A host: processes running pattern programs on CPU cores, the memory system their copies
//! share, and what an application does around its messages (an I/O daemon's file store, a
//! buffer larger than one message, a select() loop serving channels in turn).

use crate::fileio::{FileIo, FileStore};
use crate::hw::cpu::{Cores, CpuPool, Slot};
use crate::hw::memory::{self, Memory};
use crate::profile::Profile;
use interlab_kernel::Time;
use interlab_patterns::{Input, Message, Output, Program};
use std::sync::Arc;

/// A process: a core and the pattern programs it runs (one per channel).
#[derive(Debug, Clone)]
pub struct Proc {
    pub core: u32,
    pub programs: Vec<Program>,
}

/// Reorders a process's outputs to take one message of each channel in turn, keeping each
/// channel's own order (a select() loop over sockets that accept about one message each).
fn in_turn(out: &mut Vec<Output>) {
    let chan = |o: &Output| if let Output::Post(m) = o { m.chan } else { u32::MAX };
    let mut chans: Vec<u32> = Vec::new();
    for o in out.iter() {
        if !chans.contains(&chan(o)) {
            chans.push(chan(o));
        }
    }
    if chans.len() < 2 {
        return;
    }
    let mut queues: Vec<std::collections::VecDeque<Output>> = vec![Default::default(); chans.len()];
    for o in out.drain(..) {
        let i = chans.iter().position(|&c| c == chan(&o)).expect("listed");
        queues[i].push_back(o);
    }
    while queues.iter().any(|q| !q.is_empty()) {
        for q in queues.iter_mut() {
            out.extend(q.pop_front());
        }
    }
}

/// One host's processes, cores and memory.
pub struct Host {
    prof: Arc<Profile>,
    procs: Vec<Proc>,
    /// The cores processes and interrupts run on (own, or a shared machine's).
    cores: Cores,
    /// Busy time per core, picoseconds.
    pub core_busy_ps: Vec<Time>,
    out: Vec<Output>,
    /// An I/O server's daemon: its file store (parallel file I/O).
    pub file_io: Option<FileIo>,
    /// The memory system all cores' copies share (`[host] memory_mbytes_per_s`).
    pub memory: Option<Memory>,
    /// The bytes the application's buffer spans when it is larger than one message (a PVFS
    /// client reads its whole region into one buffer; a read daemon sends from its mapped
    /// file): the working set of socket copies from or into it.
    pub app_buffer_bytes: Option<u64>,
    /// The processes serve their channels in turn, one message each, rather than one
    /// channel's window after another (a select() loop over non-blocking sockets whose
    /// buffers hold about one message: the PVFS I/O daemon and client library).
    pub serve_in_turn: bool,
}

impl Host {
    /// A host with the profile's cores and memory, no processes yet.
    pub fn new(prof: Arc<Profile>) -> Self {
        let cores = prof.host.cores as usize;
        Host {
            cores: Cores::own(cores),
            core_busy_ps: vec![0; cores],
            out: Vec::new(),
            file_io: None,
            memory: prof.host.memory_mbytes_per_s.map(Memory::new),
            app_buffer_bytes: None,
            serve_in_turn: false,
            procs: Vec::new(),
            prof,
        }
    }

    /// Runs this host on a machine shared with other hosts (`[host] shared`): its core 0 is
    /// the machine's CPU `offset` (see [`Cores`]).
    pub fn share_cores(&mut self, pool: CpuPool, offset: usize) {
        self.cores = Cores::shared(pool, offset);
    }

    /// Adds a process bound to `core`; returns its index.
    pub fn add_proc(&mut self, core: u32) -> u16 {
        self.procs.push(Proc { core: core % self.cores.len() as u32, programs: Vec::new() });
        (self.procs.len() - 1) as u16
    }

    /// Gives process `proc` a program.
    pub fn add_program(&mut self, proc: u16, p: Program) {
        self.procs[proc as usize].programs.push(p);
    }

    /// The processes (to read their programs' samples after a run).
    pub fn procs(&self) -> &[Proc] {
        &self.procs
    }

    /// The core process `proc` is bound to.
    pub fn proc_core(&self, proc: u16) -> usize {
        self.procs[proc as usize].core as usize
    }

    /// Cores of the host.
    pub fn cores(&self) -> usize {
        self.cores.len()
    }

    /// When core `c` is next free, ps.
    pub fn core_free_at(&self, c: usize) -> Time {
        self.cores.free_at(c)
    }

    /// Starts work on core `core` no earlier than `ready`: the slot and the start time.
    pub fn work_start(&mut self, core: usize, ready: Time) -> (Slot, Time) {
        self.cores.start(core, ready)
    }

    /// The work in `slot`, started at `start` on `core`, ends at `end`: the core is busy
    /// until then and the time is booked.
    pub fn work_end(&mut self, slot: Slot, core: usize, start: Time, end: Time) {
        self.core_busy_ps[core] += end - start;
        // Work started on this core itself inside (an application sharing the interrupt
        // core) ran after this and has already moved the core's clock.
        self.cores.finish(slot, end);
    }

    /// Gives `input` to process `proc`'s programs at CPU time `t`: returns when the
    /// application is done and what the programs post (in the order they are sent). A file
    /// daemon first stores what arrived; `verbs_chan(chan)` says whether the channel is on
    /// native verbs (the adapter wrote the data into the daemon's buffer) rather than a
    /// socket. Give the list back with [`Host::recycle`].
    pub fn app_input(&mut self, proc: u16, input: Input, mut t: Time, verbs_chan: impl FnOnce(u32) -> bool) -> (Time, Vec<Output>) {
        let mut out = std::mem::take(&mut self.out);
        out.clear();
        let chan = match input {
            Input::Start => None,
            Input::Arrived { chan, .. } | Input::Completed { chan, .. } => Some(chan),
        };
        // A file daemon stores what arrived before it goes on.
        if let (Some(f), Input::Arrived { bytes, .. }) = (self.file_io, input) {
            if !f.serves_reads {
                let cost = f.cost_ps(bytes, self.prof.stack.as_ref());
                // Over native verbs the adapter wrote the strip straight into the daemon's
                // buffer (its source was written by DMA and is read from memory); over a socket the
                // stack's own copy-out carried that traffic and left the strip in the cache.
                let verbs = chan.is_some_and(verbs_chan);
                let miss = self.prof.stack.as_ref().map_or(1.0, |s| s.miss(f.file_bytes));
                let traffic = memory::copy_traffic(bytes, if verbs { 1.0 } else { 0.0 }, miss, verbs);
                t = if f.store == FileStore::Ram { self.copy_end(t, cost, traffic) } else { t + cost };
            }
        }
        for prog in self.procs[proc as usize].programs.iter_mut() {
            if chan.is_none_or(|c| c == prog.chan()) {
                prog.on(t, input, &mut out);
            }
        }
        if self.serve_in_turn {
            in_turn(&mut out);
        }
        (t, out)
    }

    /// The application's work before it posts `m` at `t`: a file daemon reads each strip
    /// out of its store before sending it. Returns when it may post.
    pub fn before_post(&mut self, m: &Message, t: Time) -> Time {
        let Some(f) = self.file_io.filter(|f| f.serves_reads) else { return t };
        let cost = f.cost_ps(m.bytes, self.prof.stack.as_ref());
        // From the file (beyond the cache) into a registered buffer of a small pool
        // (cached), which the adapter then reads.
        let miss = self.prof.stack.as_ref().map_or(1.0, |s| s.miss(f.file_bytes));
        let traffic = memory::copy_traffic(m.bytes, miss, 0.0, true);
        if f.store == FileStore::Ram && f.copies_reads {
            self.copy_end(t, cost, traffic)
        } else {
            t + cost
        }
    }

    /// Returns the list [`Host::app_input`] gave out, to be used again.
    pub fn recycle(&mut self, out: Vec<Output>) {
        self.out = out;
    }

    /// A CPU copy from `t` taking `cpu_ps` on an idle memory system and moving `traffic`
    /// bytes through it ([`memory::copy_traffic`]); returns its end (the host's memory system
    /// is shared by all cores and the adapter, see [`Memory`]).
    pub fn copy_end(&mut self, t: Time, cpu_ps: Time, traffic: u64) -> Time {
        memory::copy_end(self.memory.as_mut(), t, traffic, cpu_ps)
    }

    /// The bytes the application's buffer spans for a message of `msg_bytes`: the message,
    /// unless the host's program works on a larger region ([`Host::app_buffer_bytes`]).
    pub fn app_buffer(&self, msg_bytes: u64) -> u64 {
        self.app_buffer_bytes.unwrap_or(msg_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use interlab_patterns::{Message, Op};

    #[test]
    fn serving_in_turn_takes_one_message_per_channel_and_keeps_each_channels_order() {
        let post = |chan, tag| Output::Post(Message { chan, bytes: 1, op: Op::Send, tag });
        let mut out = vec![post(0, 1), post(0, 2), post(0, 3), post(1, 1), post(2, 1), post(2, 2)];
        in_turn(&mut out);
        let order: Vec<(u32, u32)> = out.iter().map(|o| if let Output::Post(m) = o { (m.chan, m.tag) } else { unreachable!() }).collect();
        assert_eq!(order, vec![(0, 1), (1, 1), (2, 1), (0, 2), (2, 2), (0, 3)]);
    }
}

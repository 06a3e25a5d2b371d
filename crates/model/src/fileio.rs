//! Parallel file I/O servers (PVFS I/O daemons): `servers` I/O nodes, each running one
//! daemon process that serves every client over its own connection and moves the data
//! between the connection and its file store. The daemon is one process (PVFS 1's iod is
//! a single-threaded event loop), so a server's clients share it.
//!
//! * Reading from a RAM file system over a socket costs the daemon nothing beyond the send:
//!   PVFS 1.5's iod maps the file and sends straight from the mapping (`jobs.c`: `mmap_page`
//!   then `nbsend`), and the socket stack copies it on its way (kernel TCP, or SDP's buffered
//!   copy). A daemon on native verbs can only send registered memory: it copies each strip
//!   out of the file into a pre-registered buffer first (the alternative, registering the
//!   file's pages per request, is what the group's later work set out to make cheap).
//!   From a disk it waits for the strip at the disk's rate.
//! * Writing: the iod receives each strip into its buffer and `write()`s it to the file
//!   (`jobs.c`: `do_write`): a memory copy into the page cache (at the profile's `[stack]`
//!   copy rates, the file being the working set), or, on a disk written synchronously, a
//!   wait at the disk's rate.

use crate::ulp::stack_spec::StackSpec;
use interlab_kernel::Time;

/// Where an I/O server keeps the file.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FileStore {
    /// A RAM file system (ramfs): a CPU copy per strip.
    Ram,
    /// A disk written synchronously: the daemon waits `bytes / rate` per strip; MB/s.
    SyncDisk { mbytes_per_s: f64 },
}

/// The I/O servers of a parallel-file-system experiment.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FileServers {
    /// I/O nodes (nodes `0..servers`; the clients follow).
    pub servers: u32,
    pub store: FileStore,
    /// Bytes each client moves to or from each server in the run (the file store's working
    /// set is this times the clients: far beyond a cache for the studies' 2 MB).
    pub bytes_per_pair: u64,
}

/// An I/O daemon's side of the file store on one server node.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FileIo {
    pub store: FileStore,
    /// The daemon sends the data (reads: it copies before each send); else it receives it
    /// (writes: it stores after each arrival).
    pub serves_reads: bool,
    /// Bytes the daemon's file holds for all clients (the copies' working set).
    pub file_bytes: u64,
    /// The daemon sends from pre-registered buffers (native verbs): read strips are copied
    /// out of the file first.
    pub copies_reads: bool,
}

impl FileIo {
    /// Daemon time to move `bytes` between a connection and the store, ps.
    pub fn cost_ps(&self, bytes: u64, stack: Option<&StackSpec>) -> Time {
        match self.store {
            FileStore::Ram if self.serves_reads && !self.copies_reads => 0,
            FileStore::Ram => stack.map_or(0, |s| s.copy_ps(bytes, self.file_bytes)),
            FileStore::SyncDisk { mbytes_per_s } => (bytes as f64 / mbytes_per_s * 1e6).round() as Time,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::Profile;

    #[test]
    fn ram_writes_copy_at_memory_rate_reads_are_free_and_disks_wait() {
        let p = Profile::load("xeon24-mt23108-pcix").unwrap();
        let st = p.stack.as_ref();
        let ram = FileIo { store: FileStore::Ram, serves_reads: false, file_bytes: 8 << 20, copies_reads: false };
        // 1 MB beyond the 512 KB cache: close to the 400 MB/s memory copy rate.
        let us = ram.cost_ps(1_000_000, st) as f64 / 1e6;
        assert!((2400.0..2600.0).contains(&us), "{us} us");
        assert_eq!(FileIo { serves_reads: true, ..ram }.cost_ps(1_000_000, st), 0);
        // A native-verbs daemon copies read strips into registered buffers: as a write does.
        assert_eq!(FileIo { serves_reads: true, copies_reads: true, ..ram }.cost_ps(1_000_000, st), ram.cost_ps(1_000_000, st));
        let disk = FileIo { store: FileStore::SyncDisk { mbytes_per_s: 25.0 }, ..ram };
        assert_eq!(disk.cost_ps(1_000_000, st), 40_000_000_000);
    }
}

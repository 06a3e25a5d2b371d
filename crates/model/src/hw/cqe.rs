//! Receive completion entries on the host bus, and CQE compression (`[adapter]
//! cqe_compression = 1`). A ConnectX-4 or later adapter with compression on writes a
//! completion whose predecessor on the receive side is still on its way to memory as an
//! 8-byte mini CQE inside a compressed block (rdma-core `providers/mlx5/mlx5dv.h` `struct
//! mlx5_mini_cqe8`; Linux `net/mlx5e: CQE compression`: "meant to save PCIe bandwidth by
//! compressing few CQEs into smaller amount of bytes on PCIe"). A completion ready on an
//! idle bus is written whole, so compression never delays a lone message; the host's
//! expansion of mini CQEs ("adds some software overhead", Linux `net/mlx5e: Enable CQE
//! compression when PCI is slower than link`) is not modelled.

use interlab_kernel::Time;

/// A mini CQE, bytes (`struct mlx5_mini_cqe8`: byte count, checksum or hash, WQE counter).
pub const MINI_CQE_BYTES: u64 = 8;

/// The receive completions of one adapter as they go to memory.
#[derive(Debug, Clone, Default)]
pub struct RxCqes {
    /// Compression is on.
    compress: bool,
    /// Full completion entry, bytes.
    cqe_bytes: u64,
    /// When the last receive completion written becomes visible, ps: a completion ready
    /// before then joins its compression session.
    session_until: Time,
}

impl RxCqes {
    /// Receive completions of `cqe_bytes` each, compressed or not.
    pub fn new(cqe_bytes: u64, compress: bool) -> Self {
        RxCqes { compress, cqe_bytes, session_until: 0 }
    }

    /// Bytes on the bus for `n` completions ready together at `ready`.
    pub fn bytes(&self, ready: Time, n: u64) -> u64 {
        if !self.compress || n == 0 {
            return self.cqe_bytes * n;
        }
        let whole = if ready < self.session_until { 0 } else { 1 };
        whole * self.cqe_bytes + (n - whole) * MINI_CQE_BYTES
    }

    /// The completions written with [`RxCqes::bytes`] are visible at `visible`.
    pub fn written(&mut self, visible: Time) {
        self.session_until = self.session_until.max(visible);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lone_completion_is_whole_and_a_burst_is_compressed() {
        let mut c = RxCqes::new(64, true);
        assert_eq!(c.bytes(100, 1), 64);
        c.written(200);
        // Ready while the previous one is on its way: a mini CQE.
        assert_eq!(c.bytes(150, 1), 8);
        // A train of 4 datagrams on an idle bus: a title CQE and 3 mini CQEs.
        assert_eq!(c.bytes(300, 4), 64 + 3 * 8);
        let off = RxCqes::new(64, false);
        assert_eq!(off.bytes(150, 4), 256);
    }
}

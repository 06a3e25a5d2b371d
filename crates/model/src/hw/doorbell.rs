//! How a posted work request reaches the adapter: a doorbell the adapter answers by reading
//! the WQE from host memory, or BlueFlame, the CPU writing the WQE itself (with any inline
//! data) into the adapter's BlueFlame buffer together with the doorbell, so the adapter
//! starts without a DMA read round trip.
//!
//! With `[adapter] bf_buf_bytes` the provider's rule applies (rdma-core
//! `providers/mlx5/qp.c` `post_send_db`, `providers/mlx4/qp.c` `mlx4_post_send`): a post of
//! a single WQE goes by BlueFlame when the WQE, 16-byte units rounded up to 64 bytes, fits
//! the BlueFlame buffer (`bf->buf_size`, half the `bf_reg_size` the kernel reports) and,
//! with `bf_needs_inline` (mlx4, or mlx5 with `MLX5_POST_SEND_PREFER_BF=0`), carries
//! inline data; any other post rings an 8-byte doorbell and the adapter fetches the WQE.
//! An inline WQE is the control and remote-address segments (32 bytes) and the inline
//! segment (a 4-byte header and the data, in 16-byte units). Without `bf_buf_bytes`, the
//! profile's `blueflame` flag alone decides, for every WQE (the rule the study profiles
//! were written with).

use crate::hw::adapter_spec::AdapterSpec;

/// Control plus remote-address segment of a send-queue WQE, bytes (mlx5 `struct
/// mlx5_wqe_ctrl_seg` 16 + `struct mlx5_wqe_raddr_seg` 16).
const CTRL_RADDR_BYTES: u64 = 32;
/// Header of an inline data segment, bytes (mlx5 `struct mlx5_wqe_inline_seg`).
const INLINE_SEG_HEADER_BYTES: u64 = 4;

/// How one posted work request reaches the adapter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PostPath {
    /// The WQE went with the doorbell (BlueFlame): the adapter does not fetch it.
    pub blueflame: bool,
    /// Bytes the CPU writes to the adapter (the doorbell, or the WQE by BlueFlame).
    pub mmio_bytes: u64,
    /// Bytes the adapter reads from host memory to fetch the WQE (0 with BlueFlame).
    pub fetch_bytes: u64,
}

/// The path of a single posted work request of `bytes`, `inline` or not.
pub fn post_path(a: &AdapterSpec, inline: bool, bytes: u64) -> PostPath {
    let Some(buf) = a.bf_buf_bytes else {
        let wqe = a.wqe_bytes + if inline { bytes.div_ceil(16) * 16 } else { 0 };
        return if a.blueflame {
            PostPath { blueflame: true, mmio_bytes: wqe, fetch_bytes: 0 }
        } else {
            PostPath { blueflame: false, mmio_bytes: a.doorbell_bytes, fetch_bytes: wqe }
        };
    };
    let wqe = if inline { (CTRL_RADDR_BYTES + (INLINE_SEG_HEADER_BYTES + bytes).div_ceil(16) * 16).div_ceil(64) * 64 } else { a.wqe_bytes };
    if a.blueflame && wqe <= buf && (inline || !a.bf_needs_inline) {
        PostPath { blueflame: true, mmio_bytes: wqe, fetch_bytes: 0 }
    } else {
        PostPath { blueflame: false, mmio_bytes: a.doorbell_bytes, fetch_bytes: wqe }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::Profile;

    fn mlx5() -> AdapterSpec {
        let mut a = Profile::load("cx5-edr-pcie3").unwrap().adapter;
        a.bf_buf_bytes = Some(256);
        a.bf_needs_inline = false;
        a
    }

    #[test]
    fn perftest_inline_size_is_the_largest_that_fits_the_blueflame_buffer() {
        let a = mlx5();
        // 32 + (4 + 220 -> 224) = 256: one BlueFlame write, no fetch.
        assert_eq!(post_path(&a, true, 220), PostPath { blueflame: true, mmio_bytes: 256, fetch_bytes: 0 });
        // 221 B inline no longer fits: a doorbell, and the adapter reads the WQE.
        let p = post_path(&a, true, 236);
        assert!(!p.blueflame && p.mmio_bytes == a.doorbell_bytes && p.fetch_bytes == 320, "{p:?}");
        // A WQE pointing at its payload fits: mlx5 prefers BlueFlame by default.
        assert!(post_path(&a, false, 1 << 20).blueflame);
    }

    #[test]
    fn mlx4_needs_inline_data_for_blueflame() {
        let mut a = mlx5();
        a.bf_needs_inline = true;
        assert!(post_path(&a, true, 64).blueflame);
        let p = post_path(&a, false, 64);
        assert!(!p.blueflame && p.fetch_bytes == a.wqe_bytes, "{p:?}");
    }

    #[test]
    fn without_a_buffer_size_the_flag_alone_decides() {
        let mut a = mlx5();
        a.bf_buf_bytes = None;
        assert_eq!(post_path(&a, true, 220).mmio_bytes, a.wqe_bytes + 224);
        a.blueflame = false;
        assert_eq!(post_path(&a, true, 220), PostPath { blueflame: false, mmio_bytes: a.doorbell_bytes, fetch_bytes: a.wqe_bytes + 224 });
    }
}

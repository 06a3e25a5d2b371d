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
//! An inline WQE is the control segment (16 bytes), for an RDMA write the remote-address
//! segment (16), and the inline segment (a 4-byte header and the data, in 16-byte units):
//! perftest's default inline sizes, 220 bytes for writes and 236 for sends, are the largest
//! that fill a 256-byte BlueFlame buffer exactly.
//!
//! Which software posts a request decides whether its payload goes inline
//! ([`inline_limit`]): the raw verbs programs (perftest) up to `[adapter] inline_bytes`
//! (writes) and `inline_send_bytes` (sends), an MPI library up to `[mpi] inline_bytes`, the
//! kernel's socket drivers up to `[stack] inline_bytes`; each optional, falling back to
//! `[adapter] inline_bytes` (the single limit the study profiles were written with). Without `bf_buf_bytes`, the
//! profile's `blueflame` flag alone decides, for every WQE (the rule the study profiles
//! were written with).

use crate::hw::adapter_spec::AdapterSpec;
use crate::profile::Profile;
use crate::ulp::UlpId;
use interlab_patterns::Op;

/// Control segment of a send-queue WQE, bytes (mlx5 `struct mlx5_wqe_ctrl_seg`).
const CTRL_BYTES: u64 = 16;
/// Remote-address segment of an RDMA WQE, bytes (mlx5 `struct mlx5_wqe_raddr_seg`).
const RADDR_BYTES: u64 = 16;
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

/// The largest payload software of kind `ulp` posts inline in an `op` request, bytes.
pub fn inline_limit(p: &Profile, ulp: UlpId, op: Op) -> u64 {
    let a = &p.adapter;
    match ulp {
        UlpId::Raw if op == Op::Send => a.inline_send_bytes.unwrap_or(a.inline_bytes),
        UlpId::Raw => a.inline_bytes,
        UlpId::Mpi => p.mpi.as_ref().and_then(|m| m.inline_bytes).unwrap_or(a.inline_bytes),
        UlpId::Sock => p.stack.as_ref().and_then(|s| s.inline_bytes).unwrap_or(a.inline_bytes),
    }
}

/// The path of a single posted `op` work request of `bytes`, `inline` or not.
pub fn post_path(a: &AdapterSpec, op: Op, inline: bool, bytes: u64) -> PostPath {
    let Some(buf) = a.bf_buf_bytes else {
        let wqe = a.wqe_bytes + if inline { bytes.div_ceil(16) * 16 } else { 0 };
        return if a.blueflame {
            PostPath { blueflame: true, mmio_bytes: wqe, fetch_bytes: 0 }
        } else {
            PostPath { blueflame: false, mmio_bytes: a.doorbell_bytes, fetch_bytes: wqe }
        };
    };
    let raddr = if op == Op::RdmaWrite { RADDR_BYTES } else { 0 };
    let wqe = if inline { (CTRL_BYTES + raddr + (INLINE_SEG_HEADER_BYTES + bytes).div_ceil(16) * 16).div_ceil(64) * 64 } else { a.wqe_bytes };
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
        assert_eq!(post_path(&a, Op::RdmaWrite, true, 220), PostPath { blueflame: true, mmio_bytes: 256, fetch_bytes: 0 });
        // A send has no remote address: 16 + (4 + 236 -> 240) = 256.
        assert!(post_path(&a, Op::Send, true, 236).blueflame);
        // A 236-B inline write no longer fits: a doorbell, and the adapter reads the WQE.
        let p = post_path(&a, Op::RdmaWrite, true, 236);
        assert!(!p.blueflame && p.mmio_bytes == a.doorbell_bytes && p.fetch_bytes == 320, "{p:?}");
        // A WQE pointing at its payload fits: mlx5 prefers BlueFlame by default.
        assert!(post_path(&a, Op::RdmaWrite, false, 1 << 20).blueflame);
    }

    #[test]
    fn mlx4_needs_inline_data_for_blueflame() {
        let mut a = mlx5();
        a.bf_needs_inline = true;
        assert!(post_path(&a, Op::Send, true, 64).blueflame);
        let p = post_path(&a, Op::Send, false, 64);
        assert!(!p.blueflame && p.fetch_bytes == a.wqe_bytes, "{p:?}");
    }

    #[test]
    fn without_a_buffer_size_the_flag_alone_decides() {
        let mut a = mlx5();
        a.bf_buf_bytes = None;
        assert_eq!(post_path(&a, Op::RdmaWrite, true, 220).mmio_bytes, a.wqe_bytes + 224);
        a.blueflame = false;
        assert_eq!(post_path(&a, Op::RdmaWrite, true, 220), PostPath { blueflame: false, mmio_bytes: a.doorbell_bytes, fetch_bytes: a.wqe_bytes + 224 });
    }
}

#[cfg(test)]
mod inline_tests {
    use super::*;

    #[test]
    fn each_software_has_its_inline_limit() {
        let mut p = Profile::load("cx5-edr-pcie3").unwrap();
        p.adapter.inline_bytes = 220;
        p.adapter.inline_send_bytes = Some(236);
        assert_eq!(inline_limit(&p, UlpId::Raw, Op::RdmaWrite), 220);
        assert_eq!(inline_limit(&p, UlpId::Raw, Op::Send), 236);
        p.mpi.as_mut().unwrap().inline_bytes = Some(128);
        assert_eq!(inline_limit(&p, UlpId::Mpi, Op::RdmaWrite), 128);
        p.mpi.as_mut().unwrap().inline_bytes = None;
        assert_eq!(inline_limit(&p, UlpId::Mpi, Op::Send), 220, "falls back to the adapter's");
        p.stack.as_mut().unwrap().inline_bytes = Some(0);
        assert_eq!(inline_limit(&p, UlpId::Sock, Op::Send), 0);
    }
}

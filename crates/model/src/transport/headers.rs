//! InfiniBand header sizes (bytes), from the IBA as the Linux sources encode them
//! (`ib_pack.h`, `rxe_hdr.h`, `rxe_opcode.c`; docs/references.md [K3]-[K5]), and the
//! IPv4 and UDP headers that carry them over RoCE v2.

/// Local route header.
pub const LRH: u64 = 8;
/// Base transport header.
pub const BTH: u64 = 12;
/// RDMA extended header (first/only RDMA write, read request).
pub const RETH: u64 = 16;
/// ACK extended header (ACK, first/last/only read response, atomic ACK).
pub const AETH: u64 = 4;
/// Atomic extended header (compare-and-swap, fetch-and-add request).
pub const ATOMIC_ETH: u64 = 28;
/// Atomic ACK extended header (original value).
pub const ATOMIC_ACK_ETH: u64 = 8;
/// Datagram extended header (UD).
pub const DETH: u64 = 8;
/// Invariant CRC.
pub const ICRC: u64 = 4;
/// Variant CRC.
pub const VCRC: u64 = 2;
/// IPv4 header without options (RFC 791), before the UDP header of a RoCE v2 packet.
pub const IPV4: u64 = 20;
/// UDP header (RFC 768).
pub const UDP: u64 = 8;

/// Bytes of a transport packet from its BTH to its ICRC: `ext` extension-header bytes and
/// `payload` bytes (padded to 4). The link layer adds its own (`LinkSpec::packet_bytes`).
pub fn transport_bytes(ext: u64, payload: u64) -> u64 {
    BTH + ext + payload.div_ceil(4) * 4 + ICRC
}

#[cfg(test)]
mod tests {
    #[test]
    fn rc_middle_packet_transport_overhead_is_16_bytes() {
        assert_eq!(super::transport_bytes(0, 2048) - 2048, 16);
        assert_eq!(super::transport_bytes(super::AETH, 0), 20);
    }
}

//! Links under the verbs transports: per-lane signalling, width, line code, MTU,
//! propagation, and the link layer that frames the transport's packets (InfiniBand, or
//! RoCE v2 over Ethernet).

use crate::params::{ParamError, Table};
use crate::transport::headers;
use interlab_kernel::Time;

/// What carries the transport packets (BTH onwards) on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LinkLayer {
    /// InfiniBand: local route header before the BTH, variant CRC after the ICRC ([IBA]
    /// vol. 1 ch. 7; [K3] `ib_pack.h`).
    #[default]
    InfiniBand,
    /// RoCE v2: the transport packet in a UDP datagram (destination port 4791) in IPv4 in an
    /// Ethernet frame ([IBA-A17]; [K3] `ib_pack.h` `ROCE_V2_UDP_DPORT`; [K22] rxe's
    /// `rxe_net.c` builds exactly these headers). The Ethernet MAC header, FCS, preamble and
    /// inter-frame gap are the profile's `framing_bytes`, as for `[eth]`. Loss-free by
    /// priority flow control (IEEE 802.1Qbb): a paused port holds packets as the InfiniBand
    /// credit loop does, so the switch model's back-pressure is the same.
    RoceV2,
}

impl LinkLayer {
    /// Bytes the link layer adds to each transport packet beyond `framing_bytes`.
    pub fn header_bytes(self) -> u64 {
        match self {
            LinkLayer::InfiniBand => headers::LRH + headers::VCRC,
            LinkLayer::RoceV2 => headers::IPV4 + headers::UDP,
        }
    }

    /// Bytes on the wire (before physical framing) of a transport packet with `ext`
    /// extension-header bytes and `payload` bytes, in this layer's framing.
    pub fn packet_bytes(self, ext: u64, payload: u64) -> u64 {
        self.header_bytes() + headers::transport_bytes(ext, payload)
    }
}

/// Line code of a serial link: data bits carried per signalled bit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LineCode {
    /// 8b/10b (SDR, DDR, QDR InfiniBand; PCIe gen1/2): 0.8.
    B8B10,
    /// 64b/66b (FDR, EDR InfiniBand; 10GBASE-R).
    B64B66,
    /// 128b/130b (PCIe gen3-5).
    B128B130,
    /// PAM4 with FEC as HDR/NDR InfiniBand: 50 data per 53.125 signalled ([K1] ib_rate_to_mbps; docs/references.md).
    Pam4Fec,
    /// 4b/5b (100BASE-TX Fast Ethernet: 125 MBd for 100 Mb/s): 0.8.
    B4B5,
}

impl LineCode {
    /// Parses the profile word.
    pub fn parse(t: &mut Table, key: &str) -> Result<LineCode, ParamError> {
        Ok(match t.choice(key, &["8b10b", "64b66b", "128b130b", "pam4-fec", "4b5b"], None)?.as_str() {
            "8b10b" => LineCode::B8B10,
            "4b5b" => LineCode::B4B5,
            "64b66b" => LineCode::B64B66,
            "128b130b" => LineCode::B128B130,
            _ => LineCode::Pam4Fec,
        })
    }

    /// Data bits per signalled bit.
    pub fn efficiency(self) -> f64 {
        match self {
            LineCode::B8B10 | LineCode::B4B5 => 0.8,
            LineCode::B64B66 => 64.0 / 66.0,
            LineCode::B128B130 => 128.0 / 130.0,
            LineCode::Pam4Fec => 50.0 / 53.125,
        }
    }
}

/// One direction of a link (both directions are alike).
#[derive(Debug, Clone, PartialEq)]
pub struct LinkSpec {
    /// Signalling rate per lane, Gb/s.
    pub lane_gbps: f64,
    /// Lanes (1, 4, 8, 12).
    pub lanes: u32,
    /// Line code.
    pub code: LineCode,
    /// Path MTU: payload bytes per packet.
    pub mtu_bytes: u32,
    /// Physical-layer bytes per packet beyond the packet itself (delimiters, idles).
    pub framing_bytes: u32,
    /// Cable length node to switch, metres.
    pub cable_m: f64,
    /// Propagation delay, ns per metre.
    pub prop_ns_per_m: f64,
    /// The link layer under the transport (`[link] layer`, default InfiniBand).
    pub layer: LinkLayer,
}

impl LinkSpec {
    /// Reads `[link]`: the link under the verbs transports, InfiniBand unless `layer =
    /// "roce-v2"`. Its `mtu_bytes` is the path MTU (the transport's packet payload), one of
    /// the InfiniBand MTUs for RoCE too.
    pub fn from_table(t: &mut Table) -> Result<Self, ParamError> {
        let mut s = Self::read(t, 256)?;
        s.layer = match t.choice("layer", &["infiniband", "roce-v2"], Some("infiniband"))?.as_str() {
            "roce-v2" => LinkLayer::RoceV2,
            _ => LinkLayer::InfiniBand,
        };
        if !s.mtu_bytes.is_power_of_two() || s.mtu_bytes > 4096 {
            return Err(t.err("mtu_bytes", format!("the path MTU must be 256, 512, 1024, 2048 or 4096, found {}", s.mtu_bytes)));
        }
        Ok(s)
    }

    /// Bytes on the wire (before physical framing) of a transport packet with `ext`
    /// extension-header bytes and `payload` bytes, in this link's framing.
    pub fn packet_bytes(&self, ext: u64, payload: u64) -> u64 {
        self.layer.packet_bytes(ext, payload)
    }

    /// Reads a link's keys from `t` (any link layer; MTU at least `min_mtu` bytes).
    pub fn read(t: &mut Table, min_mtu: u64) -> Result<Self, ParamError> {
        let s = LinkSpec {
            lane_gbps: t.param("lane_gbps", "Gb/s")?,
            lanes: t.param_u64("lanes", "lanes", 1)? as u32,
            code: LineCode::parse(t, "line_code")?,
            mtu_bytes: t.param_u64("mtu_bytes", "bytes", min_mtu)? as u32,
            framing_bytes: t.param_u64("framing_bytes", "bytes", 0)? as u32,
            cable_m: t.param("cable_m", "m")?,
            prop_ns_per_m: t.param("prop_ns_per_m", "ns/m")?,
            layer: LinkLayer::InfiniBand,
        };
        if s.lane_gbps <= 0.0 {
            return Err(t.err("lane_gbps", "must be > 0"));
        }
        Ok(s)
    }

    /// Data rate, Mb/s (10^6 bit/s).
    pub fn data_mbps(&self) -> f64 {
        self.lane_gbps * 1000.0 * self.lanes as f64 * self.code.efficiency()
    }

    /// Picoseconds to serialise `packets` packets totalling `packet_bytes` (plus
    /// per-packet framing) onto the wire.
    pub fn ser_ps(&self, packet_bytes: u64, packets: u64) -> Time {
        let bits = (packet_bytes + packets * self.framing_bytes as u64) as f64 * 8.0;
        (bits / self.data_mbps() * 1e6).ceil() as Time
    }

    /// One-way propagation over the cable, picoseconds.
    pub fn prop_ps(&self) -> Time {
        (self.cable_m * self.prop_ns_per_m * 1000.0).round() as Time
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sdr_4x_is_one_byte_per_ns() {
        let l = LinkSpec { lane_gbps: 2.5, lanes: 4, code: LineCode::B8B10, mtu_bytes: 2048, framing_bytes: 0, cable_m: 2.0, prop_ns_per_m: 5.0, layer: LinkLayer::InfiniBand };
        assert_eq!(l.data_mbps(), 8000.0);
        assert_eq!(l.ser_ps(2048, 1), 2_048_000);
        assert_eq!(l.prop_ps(), 10_000);
    }

    #[test]
    fn roce_v2_frames_a_transport_packet_in_ipv4_and_udp() {
        let ib = LinkSpec { lane_gbps: 25.78125, lanes: 4, code: LineCode::B64B66, mtu_bytes: 4096, framing_bytes: 0, cable_m: 2.0, prop_ns_per_m: 5.0, layer: LinkLayer::InfiniBand };
        let roce = LinkSpec { layer: LinkLayer::RoceV2, ..ib.clone() };
        // IB: LRH 8 + BTH 12 + ICRC 4 + VCRC 2; RoCE v2: IPv4 20 + UDP 8 + BTH 12 + ICRC 4.
        assert_eq!(ib.packet_bytes(0, 4096) - 4096, 26);
        assert_eq!(roce.packet_bytes(0, 4096) - 4096, 44);
        assert_eq!(roce.data_mbps(), 100_000.0);
    }
}

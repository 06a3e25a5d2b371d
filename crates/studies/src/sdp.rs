//! The sdp study (Balaji et al., ISPASS 2004): Sockets Direct Protocol over InfiniBand.
//! So far its native VAPI (verbs) curves of fig1; IPoIB, SDP, the multi-stream, hot-spot,
//! fan-in/out, data-center and PVFS figures come with issues 4, 6 and 7.

use crate::catalog::{FigureDef, StudyDef};
use crate::claimcalc::{num, peak, series, smallest, Computed, FigureResults};
use interlab_report::Scale;

macro_rules! fig {
    ($id:literal, $title:literal, $y:expr) => {
        FigureDef {
            id: $id,
            title: $title,
            spec: include_str!(concat!("../../../studies/sdp/", $id, ".toml")),
            spec_path: concat!("studies/sdp/", $id, ".toml"),
            x_label: "Message size (bytes)",
            y_label: $y,
            x_scale: Scale::Log2,
            y_scale: Scale::Linear,
            y_div: 1.0,
        }
    };
}

/// The study definition.
pub fn study() -> StudyDef {
    StudyDef {
        id: "sdp",
        title: "Sockets Direct Protocol over InfiniBand (sdp)",
        summary: "Cluster 1: dual 2.4 GHz Xeons with the InfiniHost MT23108 on PCI-X. Modelled so far: the native VAPI \
                  curves (adapter, bus and link as in the pcie study's PCI-X profile; host costs scaled by clock). \
                  IPoIB, SDP and the applications follow.",
        figures: vec![fig!("fig1a", "Latency (VAPI so far)", "Latency (us)"), fig!("fig1b", "Bandwidth (VAPI so far)", "Bandwidth (MB/s)")],
        claims,
    }
}

fn claims(r: &FigureResults) -> Vec<Computed> {
    let peak_of = |label: &'static str| {
        move || {
            let (v, note) = peak(series(r, "fig1b", label)?);
            Ok((v, note, None))
        }
    };
    vec![
        num("sdp.lat.vapi_sr", || smallest(series(r, "fig1a", "VAPI send/receive")?)),
        num("sdp.lat.vapi_rdma", || smallest(series(r, "fig1a", "VAPI RDMA write")?)),
        num("sdp.bw.vapi_sr", peak_of("VAPI send/receive")),
        num("sdp.bw.vapi_rdma", peak_of("VAPI RDMA write")),
    ]
}

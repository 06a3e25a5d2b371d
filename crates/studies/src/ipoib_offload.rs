//! The ipoib-offload study (Grant, Balaji, Afsahi 2010): hardware-assisted IP over
//! InfiniBand. So far its verbs curves (fig5-7); IPoIB with LRO/LSO, SDP and the data
//! center workloads come with issues 4 and 6.

use crate::catalog::StudyDef;
use crate::claimcalc::{num, series, smallest, Computed, FigureResults};
use interlab_report::Scale;

macro_rules! fig {
    ($id:literal, $title:literal, $y:expr, $div:expr) => {
        study_figure!("ipoib-offload", $id, $title, x: "Message size (bytes)", Scale::Log2, y: $y, Scale::Linear, div: $div)
    };
}

/// The study definition.
pub fn study() -> StudyDef {
    StudyDef {
        id: "ipoib-offload",
        title: "Hardware-assisted IP over InfiniBand (ipoib-offload)",
        summary: "Same testbed as vpi. Modelled so far: the verbs reference curves of figures 5-7 (single connection \
                  and eight connections). IPoIB in datagram mode with LRO/LSO, connected mode, SDP buffered and \
                  zero copy, and the TPC-W / SPECweb workloads follow.",
        figures: vec![
            fig!("fig5", "Latency (verbs so far)", "Latency (us)", 1.0),
            fig!("fig6", "Single-stream bandwidth (verbs so far)", "Bandwidth (Mb/s)", 0.125),
            fig!("fig7", "Eight-stream bandwidth (verbs so far)", "Bandwidth (Mb/s)", 0.125),
        ],
        claims,
    }
}

fn claims(r: &FigureResults) -> Vec<Computed> {
    vec![num("off.lat.verbs", || smallest(series(r, "fig5", "IB verbs RDMA write")?))]
}

//! The vpi study (Grant, Afsahi, Balaji, ICPADS 2009): ConnectX Virtual Protocol
//! Interconnect. So far its verbs-level curves (fig1, fig2); the socket stacks (10GigE,
//! IPoIB, SDP), the shared-adapter figures and the data center come with issues 4 and 6.

use crate::catalog::StudyDef;
use crate::claimcalc::{num, peak, series, smallest, Computed, FigureResults};
use interlab_report::Scale;

/// The study definition.
pub fn study() -> StudyDef {
    StudyDef {
        id: "vpi",
        title: "ConnectX Virtual Protocol Interconnect (vpi)",
        summary: "A ConnectX adapter with one InfiniBand and one 10GigE port on one PCIe 1.1 x8 link. Modelled so far: \
                  the InfiniBand verbs curves (BlueFlame posts with inline data, DDR links, PCIe read completions \
                  limiting bandwidth). The 10GigE, IPoIB and SDP stacks, shared-port traffic and TPC-W follow.",
        figures: vec![
            study_figure!("vpi", "fig1", "Single-stream latency (verbs so far)", x: "Message size (bytes)", Scale::Log2, y: "Latency (us)", Scale::Linear, div: 1.0),
            // Plotted in Mb/s (10^6 bit/s) as the study does.
            study_figure!("vpi", "fig2", "Single-stream bandwidth (verbs so far)", x: "Message size (bytes)", Scale::Log2, y: "Bandwidth (Mb/s)", Scale::Linear, div: 0.125),
        ],
        claims,
    }
}

fn claims(r: &FigureResults) -> Vec<Computed> {
    vec![
        num("vpi.lat.verbs_rdma_write_min", || smallest(series(r, "fig1", "IB verbs RDMA write")?)),
        num("vpi.bw.verbs_max", || {
            let (v, note) = peak(series(r, "fig2", "IB verbs RDMA write")?);
            Ok((v * 8.0, format!("{note}, in Mb/s"), None))
        }),
    ]
}

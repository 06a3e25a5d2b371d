//! The pcie study (Liu, Mamidala, Vishnu, Panda, HotI 2004): verbs latency and bandwidth
//! with an InfiniHost III Ex on PCI Express x8 versus an InfiniHost on PCI-X 133.
//! Figures 2-11 (verbs level) and 12-14 (MVAPICH over the verbs model).

use crate::catalog::StudyDef;
use crate::claimcalc::{boolean, num, peak_over, series, smallest, Computed, FigureResults};
use interlab_report::Scale;

macro_rules! fig {
    ($id:literal, $title:literal, $y:expr, $yscale:expr) => {
        study_figure!("pcie", $id, $title, x: "Message size (bytes)", Scale::Log2, y: $y, $yscale, div: 1.0)
    };
}

/// The study definition.
pub fn study() -> StudyDef {
    const LAT: &str = "Latency (us)";
    const BW: &str = "Bandwidth (MB/s)";
    StudyDef {
        id: "pcie",
        title: "InfiniBand with PCI Express vs PCI-X (pcie)",
        summary: "Verbs-level latency and bandwidth between two nodes through an InfiniScale 4X SDR switch, \
                  InfiniHost III Ex on PCIe x8 (full duplex, per-direction lanes, TLP overheads) versus InfiniHost \
                  on PCI-X 133 (one half-duplex bus for both directions and both ports). Modelled from buses, \
                  adapter engines, links, switch and RC transport; only the RDMA-write, send/receive and RDMA-read \
                  PCIe latencies were used to calibrate adapter/host primitives (see the profiles).",
        figures: vec![
            fig!("fig2", "Send/receive latency", LAT, Scale::Linear),
            fig!("fig3", "RDMA write latency", LAT, Scale::Linear),
            fig!("fig4", "RDMA read latency", LAT, Scale::Linear),
            fig!("fig5", "Atomic operation latency (8 B)", LAT, Scale::Linear),
            fig!("fig6", "Uni-directional RDMA write bandwidth, one port", BW, Scale::Linear),
            fig!("fig7", "Bi-directional RDMA write bandwidth, one port", BW, Scale::Linear),
            fig!("fig8", "Both ports, striping, uni-directional", BW, Scale::Linear),
            fig!("fig9", "Both ports, bi-directional: striping vs binding", BW, Scale::Linear),
            fig!("fig10", "Two processes per node, uni-directional", BW, Scale::Linear),
            fig!("fig11", "Two processes per node, bi-directional", BW, Scale::Linear),
            fig!("fig12", "MPI latency", LAT, Scale::Linear),
            fig!("fig13", "MPI bandwidth: one port vs both ports", BW, Scale::Linear),
            fig!("fig14", "MPI bi-directional bandwidth: one port vs both ports", BW, Scale::Linear),
        ],
        claims,
    }
}

fn claims(r: &FigureResults) -> Vec<Computed> {
    let small = |fig: &'static str, label: &'static str| move || smallest(series(r, fig, label)?);
    let mut v = vec![
        num("pcie.lat.sendrecv_pcie", small("fig2", "PCIe")),
        num("pcie.lat.sendrecv_pcix", small("fig2", "PCI-X")),
        num("pcie.lat.write_pcie", small("fig3", "PCIe")),
        num("pcie.lat.write_pcix", small("fig3", "PCI-X")),
        num("pcie.lat.read_pcie", small("fig4", "PCIe")),
        num("pcie.lat.read_pcix", small("fig4", "PCI-X")),
    ];
    v.push(boolean("pcie.lat.atomic_close_to_read", || {
        let mut notes = Vec::new();
        let mut ok = true;
        for bus in ["PCIe", "PCI-X"] {
            let read = series(r, "fig5", &format!("RDMA read {bus}"))?.at(8).ok_or("fig5 lacks the 8-byte read point")?;
            for op in ["Fetch-and-add", "Compare-and-swap"] {
                let a = series(r, "fig5", &format!("{op} {bus}"))?.at(8).ok_or("fig5 lacks the 8-byte point")?;
                let dev = (a - read).abs() / read;
                ok &= dev <= 0.15;
                notes.push(format!("{op} {bus} {a:.2} us vs read {read:.2} us ({:+.1}%)", (a / read - 1.0) * 100.0));
            }
        }
        Ok((ok, notes.join("; ")))
    }));
    v.push(num("pcie.bw.uni_pcie", || peak_over(r, "fig6", &["PCIe"])));
    v.push(num("pcie.bw.uni_pcix", || peak_over(r, "fig6", &["PCI-X"])));
    v.push(num("pcie.bw.bi_pcie", || peak_over(r, "fig7", &["PCIe"])));
    v.push(num("pcie.bw.bi_pcix", || peak_over(r, "fig7", &["PCI-X"])));
    v.push(num("pcie.bw.twoport_uni_stripe_pcie", || peak_over(r, "fig8", &["PCIe striping"])));
    v.push(num("pcie.bw.twoport_uni_stripe_pcix", || peak_over(r, "fig8", &["PCI-X striping"])));
    v.push(num("pcie.bw.twoport_bi_stripe_pcie", || peak_over(r, "fig9", &["PCIe striping"])));
    v.push(num("pcie.bw.twoport_bi_bind_pcie", || peak_over(r, "fig9", &["PCIe binding"])));
    v.push(num("pcie.bw.twoproc_uni_pcie", || peak_over(r, "fig10", &["PCIe binding", "PCIe striping"])));
    v.push(boolean("pcie.bw.twoproc_uni_bind_beats_stripe_small", || {
        let bind = series(r, "fig10", "PCIe binding")?;
        let stripe = series(r, "fig10", "PCIe striping")?;
        let mut never_below = true;
        let (mut sb, mut ss, mut n) = (0.0, 0.0, 0);
        for &(size, b) in bind.points.iter().filter(|p| p.0 < 8192) {
            let s = stripe.at(size).ok_or(format!("striping lacks {size} B"))?;
            never_below &= b >= s * 0.99;
            sb += b;
            ss += s;
            n += 1;
        }
        if n == 0 {
            return Err("no sizes below 8 KiB".into());
        }
        let gain = (sb / ss - 1.0) * 100.0;
        Ok((never_below && gain > 1.0, format!("binding vs striping below 8 KiB: mean {gain:+.1}%, never more than 1% below: {never_below}")))
    }));
    v.push(num("pcie.bw.twoproc_uni_pcix", || peak_over(r, "fig10", &["PCI-X binding", "PCI-X striping"])));
    v.push(num("pcie.bw.twoproc_bi_bind_pcie", || peak_over(r, "fig11", &["PCIe binding"])));
    v.push(num("pcie.bw.twoproc_bi_stripe_pcie", || peak_over(r, "fig11", &["PCIe striping"])));
    v.push(num("pcie.bw.twoproc_bi_pcix", || peak_over(r, "fig11", &["PCI-X binding", "PCI-X striping"])));
    v.push(num("pcie.mpi.lat_pcie", small("fig12", "PCIe")));
    v.push(num("pcie.mpi.lat_pcix", small("fig12", "PCI-X")));
    v.push(num("pcie.mpi.bw_oneport_pcie", || peak_over(r, "fig13", &["PCIe one port"])));
    v.push(num("pcie.mpi.bw_oneport_pcix", || peak_over(r, "fig13", &["PCI-X one port"])));
    v.push(num("pcie.mpi.bw_striped_pcie", || peak_over(r, "fig13", &["PCIe both ports"])));
    v.push(boolean("pcie.mpi.bw_dip_8k", || {
        // A local drop: bandwidth at the next size below the one at 4, 8 or 16 KiB.
        let mut dips = Vec::new();
        for label in ["PCIe one port", "PCIe both ports"] {
            let s = series(r, "fig13", label)?;
            for w in s.points.windows(2) {
                if (4096..=16384).contains(&w[0].0) && w[1].1 < w[0].1 {
                    dips.push(format!("{label}: {:.0} MB/s at {} B -> {:.0} MB/s at {} B", w[0].1, w[0].0, w[1].1, w[1].0));
                }
            }
        }
        Ok((!dips.is_empty(), if dips.is_empty() { "no drop between 4 and 32 KiB".into() } else { dips.join("; ") }))
    }));
    v.push(num("pcie.mpi.bibw_pcix", || peak_over(r, "fig14", &["PCI-X one port"])));
    v.push(num("pcie.mpi.bibw_oneport_pcie", || peak_over(r, "fig14", &["PCIe one port"])));
    v.push(num("pcie.mpi.bibw_twoport_pcie", || peak_over(r, "fig14", &["PCIe both ports"])));
    v
}

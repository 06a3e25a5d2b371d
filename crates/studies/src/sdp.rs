//! The sdp study (Balaji et al., ISPASS 2004): Sockets Direct Protocol over InfiniBand.
//! Figures 1-3: latency and bandwidth of IPoIB, SDP (buffered copy) and VAPI, multi-stream,
//! hot-spot, fan-in and fan-out. The data-center figures (fig4-7) are in `datacenter.rs`, the
//! PVFS figures (fig8-10) in `pvfs.rs`.

use crate::catalog::StudyDef;
use crate::claimcalc::{boolean, num, num_over, peak_over, series, smallest, Computed, FigureResults};
use interlab_report::Scale;

macro_rules! fig {
    ($id:literal, $title:literal, $y:expr) => {
        fig!($id, $title, $y, "Message size (bytes)", Scale::Log2)
    };
    ($id:literal, $title:literal, $y:expr, $xl:expr, $xs:expr) => {
        study_figure!("sdp", $id, $title, x: $xl, $xs, y: $y, Scale::Linear, div: 1.0)
    };
}

/// The study definition.
pub fn study() -> StudyDef {
    StudyDef {
        id: "sdp",
        title: "Sockets Direct Protocol over InfiniBand (sdp)",
        summary: "Cluster 1: dual 2.4 GHz Xeons with the InfiniHost MT23108 on PCI-X. VAPI curves: adapter, bus and \
                  link as in the pcie study's PCI-X profile, host costs scaled by clock (nothing fitted). Sockets: \
                  TCP/IP over IPoIB (an interrupt and stack work per 2 KiB packet on one interrupt core, TCP ACKs) \
                  and SDP buffered copy (copies at both ends, per-message SDP work; each node's copies and the adapter's \
                  DMA share one memory system, fitted to the fig2a peak); their host costs are fitted to \
                  the fig1 latencies and peaks, then predict the multi-stream, hot-spot, fan-in and fan-out figures, \
                  the data center by trace replay (fig4-7) and PVFS (fig8-10: 4 compute nodes, 1 to 4 I/O servers each \
                  running one daemon that serves its clients a strip each in turn; reads sent from the mapped file, writes copied into it or waited for on a disk).",
        figures: vec![
            fig!("fig1a", "Latency", "Latency (us)"),
            fig!("fig1b", "Bandwidth", "Bandwidth (MB/s)"),
            fig!("fig2a", "Multi-stream bandwidth", "Bandwidth (MB/s)"),
            fig!("fig2b", "Hot-spot latency at 16 KiB", "Latency (us)", "Clients", Scale::Linear),
            fig!("fig3a", "Fan-in bandwidth at 16 KiB", "Bandwidth (MB/s)", "Clients", Scale::Linear),
            fig!("fig3b", "Fan-out bandwidth at 16 KiB", "Bandwidth (MB/s)", "Clients", Scale::Linear),
            fig!("fig7", "Connection set-up time", "Set-up time (us)", "", Scale::Linear),
        ],
        claims,
    }
}

fn claims(r: &FigureResults) -> Vec<Computed> {
    let rise = |label: &'static str| {
        move || {
            let s = series(r, "fig2b", label)?;
            let (one, seven) = (s.at(1).ok_or("no 1-client point")?, s.at(7).ok_or("no 7-client point")?);
            Ok((seven - one, format!("`{label}`: {one:.1} us with 1 client, {seven:.1} us with 7"), Some(7.0), one))
        }
    };
    vec![
        num("sdp.lat.sdp", || smallest(series(r, "fig1a", "SDP")?)),
        num("sdp.lat.ipoib", || smallest(series(r, "fig1a", "IPoIB")?)),
        boolean("sdp.lat.gap_grows", || {
            let (ip, sd) = (series(r, "fig1a", "IPoIB")?, series(r, "fig1a", "SDP")?);
            let gaps: Vec<(u64, f64)> = ip.points.iter().filter_map(|&(z, v)| sd.at(z).map(|w| (z, v - w))).collect();
            let (first, last) = (gaps.first().ok_or("no common sizes")?, gaps.last().ok_or("no common sizes")?);
            Ok((last.1 > first.1 + 1.0, format!("IPoIB - SDP: {:.1} us at {} B, {:.1} us at {} B", first.1, first.0, last.1, last.0)))
        }),
        num("sdp.bw.sdp", || peak_over(r, "fig1b", &["SDP"])),
        num("sdp.bw.ipoib", || peak_over(r, "fig1b", &["IPoIB"])),
        num("sdp.ms.sdp", || peak_over(r, "fig2a", &["SDP 2 streams", "SDP 4 streams"])),
        num("sdp.ms.ipoib", || peak_over(r, "fig2a", &["IPoIB 2 streams", "IPoIB 4 streams"])),
        num_over("sdp.hot.sdp_increase", rise("SDP")),
        num_over("sdp.hot.ipoib_increase", rise("IPoIB")),
        num("sdp.fanin.sdp", || peak_over(r, "fig3a", &["SDP"])),
        num("sdp.fanin.ipoib", || peak_over(r, "fig3a", &["IPoIB"])),
        num("sdp.fanout.sdp", || peak_over(r, "fig3b", &["SDP"])),
        num("sdp.fanout.ipoib", || peak_over(r, "fig3b", &["IPoIB"])),
        boolean("sdp.cpu.sdp_lower", || {
            // Server CPU at 16 KiB, averaged over the client counts, fan-in and fan-out.
            let mut notes = Vec::new();
            let mut ok = true;
            for fig in ["fig3a", "fig3b"] {
                let (ip, sd) = (series(r, fig, "IPoIB")?, series(r, fig, "SDP")?);
                let mean = |v: &[(u64, f64)]| v.iter().map(|p| p.1).sum::<f64>() / v.len().max(1) as f64;
                let (ci, cs) = (mean(&ip.server_cpu), mean(&sd.server_cpu));
                let lower = (1.0 - cs / ci) * 100.0;
                ok &= (60.0..=70.0).contains(&lower);
                notes.push(format!("{fig}: server CPU IPoIB {ci:.0}%, SDP {cs:.0}%: {lower:.0}% lower"));
            }
            Ok((ok, notes.join("; ")))
        }),
        num_over("sdp.conn.sdp_extra", || {
            let (i, d) = (series(r, "fig7", "IPoIB")?.max(), series(r, "fig7", "SDP")?.max());
            Ok((d - i, format!("SDP {d:.0} us - IPoIB {i:.0} us"), None, i))
        }),
        num("sdp.lat.vapi_sr", || smallest(series(r, "fig1a", "VAPI send/receive")?)),
        num("sdp.lat.vapi_rdma", || smallest(series(r, "fig1a", "VAPI RDMA write")?)),
        num("sdp.bw.vapi_sr", || peak_over(r, "fig1b", &["VAPI send/receive"])),
        num("sdp.bw.vapi_rdma", || peak_over(r, "fig1b", &["VAPI RDMA write"])),
    ]
}

//! The vpi study (Grant, Afsahi, Balaji, ICPADS 2009): ConnectX Virtual Protocol
//! Interconnect. Figures 1-7: latency and bandwidth of verbs, 10GigE, IPoIB and SDP, multi-
//! stream bandwidth, and 10GigE sharing the adapter with IPoIB or SDP. The TPC-W data center
//! (fig9) comes with issue 6.

use crate::catalog::StudyDef;
use crate::claimcalc::{boolean, mean_where, num, peak, peak_over, series, smallest, Computed, FigureResults};
use interlab_report::Scale;

macro_rules! fig {
    ($id:literal, $title:literal, $y:literal, $div:expr) => {
        study_figure!("vpi", $id, $title, x: "Message size (bytes)", Scale::Log2, y: $y, Scale::Linear, div: $div)
    };
}

/// The study definition.
pub fn study() -> StudyDef {
    StudyDef {
        id: "vpi",
        title: "ConnectX Virtual Protocol Interconnect (vpi)",
        summary: "A ConnectX adapter with one InfiniBand and one 10GigE port on one PCIe 1.1 x8 link, 8-core R805 \
                  hosts. Verbs: BlueFlame posts with inline data, DDR links, PCIe read completions limiting \
                  bandwidth. Sockets: kernel TCP/IP over the 10GigE port (jumbo frames, LSO, LRO, adaptive or static \
                  receive coalescing) and over IPoIB connected mode, SDP with buffered copy and zero copy above 64 \
                  KiB; NAPI interrupts on one core, TCP input in the receiver's context, cache-dependent copies. Host \
                  costs fitted to the ipoib-offload latencies and the IPoIB peak (see the profile), the rest predicted.",
        figures: vec![
            fig!("fig1", "Single-stream latency", "Latency (us)", 1.0),
            // Plotted in Mb/s (10^6 bit/s) as the study does.
            fig!("fig2", "Single-stream bandwidth", "Bandwidth (Mb/s)", 0.125),
            fig!("fig3", "Multi-stream bandwidth, 10GigE", "Bandwidth (Mb/s)", 0.125),
            fig!("fig4", "Multi-stream bandwidth, IPoIB", "Bandwidth (Mb/s)", 0.125),
            fig!("fig5", "Multi-stream bandwidth, SDP", "Bandwidth (Mb/s)", 0.125),
            study_figure!("vpi", "fig6", "10GigE + IPoIB at once (64 KiB)", x: "Streams in total (N+N)", Scale::Linear, y: "Bandwidth (Mb/s)", Scale::Linear, div: 0.125),
            study_figure!("vpi", "fig7", "10GigE + SDP at once (64 KiB)", x: "Streams in total (N+N)", Scale::Linear, y: "Bandwidth (Mb/s)", Scale::Linear, div: 0.125),
        ],
        claims,
    }
}

/// MB/s to Mb/s.
const MBIT: f64 = 8.0;

fn mbit(r: Result<(f64, String, Option<f64>), String>) -> Result<(f64, String, Option<f64>), String> {
    r.map(|(v, n, _)| (v * MBIT, format!("{n}, in Mb/s"), None))
}

/// True when the series has a local drop at `x`: lower than both neighbouring sizes.
fn local_drop(s: &interlab_experiment::SeriesResult, x: u64) -> Result<(bool, String), String> {
    let (lo, at, hi) = (s.at(x / 2).ok_or("no point below")?, s.at(x).ok_or("no point at the size")?, s.at(x * 2).ok_or("no point above")?);
    Ok((at < lo && at < hi, format!("`{}`: {:.0} / {:.0} / {:.0} Mb/s at {} / {x} / {} B", s.label, lo * MBIT, at * MBIT, hi * MBIT, x / 2, x * 2)))
}

fn claims(r: &FigureResults) -> Vec<Computed> {
    let split = |fig: &'static str, other: &'static str| {
        move || -> Result<Vec<(u64, f64, f64)>, String> {
            let (e, o) = (series(r, fig, "10GigE share")?, series(r, fig, other)?);
            Ok(e.points.iter().filter_map(|&(x, a)| o.at(x).map(|b| (x, a, b))).collect())
        }
    };
    vec![
        num("vpi.lat.verbs_rdma_write_min", || smallest(series(r, "fig1", "IB verbs RDMA write")?)),
        num("vpi.lat.sdp_vs_10gige_avg_reduction", || {
            let (e, s) = (series(r, "fig1", "10GigE (AIC-Rx on)")?, series(r, "fig1", "SDP")?);
            let red: Vec<f64> = e.points.iter().filter(|p| p.0 <= 1024).filter_map(|&(x, a)| s.at(x).map(|b| (a - b) / a * 100.0)).collect();
            let m = red.iter().sum::<f64>() / red.len().max(1) as f64;
            Ok((m, format!("mean over {} sizes 1 B..1 KiB of (10GigE - SDP) / 10GigE", red.len()), None))
        }),
        boolean("vpi.lat.aic_on_10gige_below_ipoib_small", || {
            let (e, i) = (smallest(series(r, "fig1", "10GigE (AIC-Rx on)")?)?, smallest(series(r, "fig1", "IPoIB")?)?);
            Ok((e.0 < i.0, format!("10GigE AIC-Rx on {:.1} us, IPoIB {:.1} us", e.0, i.0)))
        }),
        boolean("vpi.lat.aic_off_ipoib_below_10gige_small", || {
            let (e, i) = (smallest(series(r, "fig1", "10GigE (AIC-Rx off)")?)?, smallest(series(r, "fig1", "IPoIB")?)?);
            Ok((i.0 < e.0, format!("IPoIB {:.1} us, 10GigE AIC-Rx off {:.1} us", i.0, e.0)))
        }),
        num("vpi.bw.verbs_max", || mbit(Ok(peak(series(r, "fig2", "IB verbs RDMA write")?)).map(|(v, n)| (v, n, None)))),
        num("vpi.bw.sdp_max", || mbit(peak_over(r, "fig2", &["SDP"]))),
        boolean("vpi.bw.sdp_dip_4k", || {
            let (d, note) = local_drop(series(r, "fig2", "SDP")?, 4096)?;
            Ok((d, format!("{note}; a drop needs a mode switch between 2 and 4 KiB, which the model has no mechanism for (docs/model.md)")))
        }),
        boolean("vpi.bw.sdp_dip_64k", || {
            let (d, n1) = local_drop(series(r, "fig2", "SDP")?, 65536)?;
            let (raised, n2) = local_drop(series(r, "fig2", "SDP, zero-copy threshold 1 MiB")?, 65536)?;
            Ok((d && !raised, format!("{n1}; {n2}")))
        }),
        num("vpi.bw.10gige_max", || mbit(peak_over(r, "fig2", &["10GigE"]))),
        boolean("vpi.bw.10gige_saturates_at_2k", || {
            let s = series(r, "fig2", "10GigE")?;
            let (p, at) = (s.max(), s.at(2048).ok_or("no 2 KiB point")?);
            Ok((at >= 0.95 * p, format!("{:.0} Mb/s at 2 KiB = {:.0}% of the {:.0} Mb/s peak", at * MBIT, at / p * 100.0, p * MBIT)))
        }),
        boolean("vpi.bw.10gige_dip_1m", || {
            let s = series(r, "fig2", "10GigE")?;
            let m = series(r, "fig3", "10GigE 8 streams")?;
            let (one, one_peak) = (mean_where(s, |x| x >= 1 << 20)?, s.max());
            let (multi, multi_peak) = (mean_where(m, |x| x >= 1 << 20)?, m.max());
            let dip = one < 0.9 * one_peak;
            let multi_dip = multi < 0.9 * multi_peak;
            Ok((dip && !multi_dip, format!(
                "single stream {:.0} Mb/s at >= 1 MiB vs peak {:.0}; 8 streams {:.0} vs peak {:.0} (a dip is > 10% below the peak)",
                one * MBIT, one_peak * MBIT, multi * MBIT, multi_peak * MBIT
            )))
        }),
        num("vpi.bw.10gige_normal_frames_loss", || {
            let (j, n) = (series(r, "fig2", "10GigE")?.max(), series(r, "fig2", "10GigE 1500-byte frames")?.max());
            Ok(((j - n) / j * 100.0, format!("peaks {:.0} (9000) vs {:.0} Mb/s (1500)", j * MBIT, n * MBIT), None))
        }),
        num("vpi.bw.ipoib_max", || mbit(peak_over(r, "fig2", &["IPoIB"]))),
        num("vpi.bw.ipoib_large_avg", || {
            let v = mean_where(series(r, "fig2", "IPoIB")?, |x| x >= 65536)?;
            Ok((v * MBIT, "mean of `IPoIB` over 64 KiB..1 MiB, in Mb/s".into(), None))
        }),
        num("vpi.ms.10gige_max", || mbit(peak_over(r, "fig3", &["10GigE 2 streams", "10GigE 4 streams", "10GigE 6 streams", "10GigE 8 streams"]))),
        num("vpi.ms.ipoib_max", || mbit(peak_over(r, "fig4", &["IPoIB 2 streams", "IPoIB 4 streams", "IPoIB 6 streams", "IPoIB 8 streams"]))),
        num("vpi.ms.sdp_max", || {
            let mut best = (0.0f64, String::new());
            for n in [2, 4, 6, 8] {
                let label = format!("SDP {n} streams");
                let s = series(r, "fig5", &label)?;
                for &(x, v) in s.points.iter().filter(|p| p.0 > 128 * 1024) {
                    if v > best.0 {
                        best = (v, format!("`{label}` at {x} B"));
                    }
                }
            }
            Ok((best.0 * MBIT, format!("peak over messages > 128 KiB: {}, in Mb/s", best.1), None))
        }),
        num("vpi.vpi.ipoib_eth_aggregate_max", || mbit(peak_over(r, "fig6", &["Aggregate"]))),
        boolean("vpi.vpi.ipoib_eth_sharing_uneven_grows", || {
            let v = split("fig6", "IPoIB share")()?;
            let uneven: Vec<(u64, f64)> = v.iter().map(|&(x, a, b)| (x, (a - b).abs() / (a + b).max(1e-9))).collect();
            let (first, last) = (uneven.first().ok_or("no points")?, uneven.last().ok_or("no points")?);
            let grows = uneven.windows(2).all(|w| w[1].1 >= w[0].1 - 0.02) && last.1 > first.1;
            Ok((first.1 < 0.1 && grows, format!(
                "|10GigE - IPoIB| / total: {}",
                uneven.iter().map(|(x, u)| format!("{}+{}: {:.0}%", x / 2, x / 2, u * 100.0)).collect::<Vec<_>>().join(", ")
            )))
        }),
        num("vpi.vpi.sdp_eth_aggregate_max", || mbit(peak_over(r, "fig7", &["Aggregate"]))),
        num("vpi.vpi.sdp_eth_share_ratio_4x4", || {
            let v = split("fig7", "SDP share")()?;
            let &(x, e, s) = v.iter().find(|p| p.0 == 8).ok_or("no 4+4 point")?;
            Ok((s / e, format!("SDP {:.0} / 10GigE {:.0} Mb/s at {}+{}", s * MBIT, e * MBIT, x / 2, x / 2), None))
        }),
    ]
}

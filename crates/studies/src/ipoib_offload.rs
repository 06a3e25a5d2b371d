//! The ipoib-offload study (Grant, Balaji, Afsahi 2010): hardware-assisted IP over
//! InfiniBand. Figures 2-7: IPoIB in datagram mode with the four LRO/LSO combinations and in
//! connected mode, against verbs and SDP (buffered and zero copy), one and eight streams.
//! The TPC-W and SPECweb data-center figures come with issue 6.

use crate::catalog::StudyDef;
use crate::claimcalc::{boolean, mean_where, num, peak_over, series, smallest, Computed, FigureResults};
use interlab_experiment::SeriesResult;
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
        summary: "Same testbed as vpi. IPoIB datagram mode (2 KiB MTU) with large send offload (the adapter cuts 64 KiB \
                  requests into packets) and large receive offload (packets merged until the poll finds the queue \
                  empty, so TCP runs once per aggregate), connected mode (64 KiB MTU over RC, software checksum), SDP \
                  buffered copy and zero copy, verbs. Same host costs as vpi.",
        figures: vec![
            fig!("fig2", "IPoIB latency: LRO/LSO combinations and connected mode", "Latency (us)", 1.0),
            fig!("fig3", "IPoIB single-stream bandwidth", "Bandwidth (Mb/s)", 0.125),
            fig!("fig4", "IPoIB eight-stream bandwidth", "Bandwidth (Mb/s)", 0.125),
            fig!("fig5", "Latency: verbs, IPoIB, SDP", "Latency (us)", 1.0),
            fig!("fig6", "Single-stream bandwidth: verbs, IPoIB, SDP", "Bandwidth (Mb/s)", 0.125),
            fig!("fig7", "Eight-stream bandwidth: verbs, IPoIB, SDP", "Bandwidth (Mb/s)", 0.125),
        ],
        claims,
    }
}

const UD: &str = "IPoIB-UD";
const LRO: &str = "IPoIB-UD LRO";
const LSO: &str = "IPoIB-UD LSO";
const BOTH: &str = "IPoIB-UD LRO+LSO";

/// Per size: (x, best of `a`, best of `b`) where best is the lowest latency.
fn best_pairs(r: &FigureResults, fig: &str, a: [&str; 2], b: [&str; 2]) -> Result<Vec<(u64, f64, f64)>, String> {
    let (a0, a1, b0, b1) = (series(r, fig, a[0])?, series(r, fig, a[1])?, series(r, fig, b[0])?, series(r, fig, b[1])?);
    Ok(a0
        .points
        .iter()
        .filter_map(|&(x, v)| Some((x, v.min(a1.at(x)?), b0.at(x)?.min(b1.at(x)?))))
        .collect())
}

/// (peak(a) / peak(b) - 1) x 100 with a note.
fn gain(a: &SeriesResult, b: &SeriesResult) -> (f64, String) {
    let (pa, pb) = (a.max(), b.max());
    ((pa / pb - 1.0) * 100.0, format!("peaks `{}` {:.0} vs `{}` {:.0} Mb/s", a.label, pa * 8.0, b.label, pb * 8.0))
}

/// (peak(b) - peak(a)) / peak(b) x 100: how far `a`'s peak is below `b`'s.
fn below(a: &SeriesResult, b: &SeriesResult) -> (f64, String) {
    let (pa, pb) = (a.max(), b.max());
    ((pb - pa) / pb * 100.0, format!("peaks `{}` {:.0} vs `{}` {:.0} Mb/s", a.label, pa * 8.0, b.label, pb * 8.0))
}

fn claims(r: &FigureResults) -> Vec<Computed> {
    // LRO's latency reduction per size: best LRO-enabled vs best LRO-disabled configuration.
    let lro_red = || -> Result<Vec<(u64, f64)>, String> {
        Ok(best_pairs(r, "fig2", [LRO, BOTH], [UD, LSO])?.into_iter().map(|(x, on, off)| (x, (off - on) / off * 100.0)).collect())
    };
    let mean_of = |v: &[(u64, f64)]| v.iter().map(|p| p.1).sum::<f64>() / v.len().max(1) as f64;
    let s = |fig: &'static str, l: &'static str| series(r, fig, l);
    vec![
        num("off.lat.verbs", || smallest(series(r, "fig5", "IB verbs RDMA write")?)),
        num("off.lat.sdp_bc", || smallest(s("fig5", "SDP-BC")?)),
        num("off.lat.sdp_zc", || smallest(s("fig5", "SDP-ZC")?)),
        num("off.lat.ipoib_rc", || smallest(s("fig5", "IPoIB-RC")?)),
        num("off.lat.ipoib_ud_lro_lso", || smallest(s("fig5", BOTH)?)),
        num("off.lat.lro_avg_reduction", || {
            let v = lro_red()?;
            Ok((mean_of(&v), format!("mean over {} sizes of (best non-LRO - best LRO) / best non-LRO", v.len()), None))
        }),
        num("off.lat.lro_max_reduction_64k", || {
            let v = lro_red()?;
            let &(x, m) = v.iter().max_by(|a, b| a.1.total_cmp(&b.1)).ok_or("no sizes")?;
            Ok((m, format!("largest LRO reduction, at {x} B"), Some(x as f64)))
        }),
        num("off.lat.lro_large_reduction", || {
            let v: Vec<(u64, f64)> = lro_red()?.into_iter().filter(|p| p.0 >= 65536).collect();
            Ok((mean_of(&v), format!("mean over {} sizes >= 64 KiB", v.len()), None))
        }),
        boolean("off.lat.lro_worse_at_2k", || {
            let v = best_pairs(r, "fig2", [LRO, BOTH], [UD, LSO])?;
            let &(_, on, off) = v.iter().find(|p| p.0 == 2048).ok_or("no 2 KiB point")?;
            Ok((on > off, format!("at 2 KiB best LRO {on:.1} us, best non-LRO {off:.1} us")))
        }),
        num("off.lat.nolso_better_large", || {
            let v = best_pairs(r, "fig2", [LSO, BOTH], [UD, LRO])?;
            let big: Vec<(u64, f64)> = v.into_iter().filter(|p| p.0 > 65536).map(|(x, with, without)| (x, (with - without) / with * 100.0)).collect();
            Ok((mean_of(&big), format!("mean over {} sizes > 64 KiB of (best with LSO - best without) / best with", big.len()), None))
        }),
        num("off.lat.ud_vs_rc_upto4k", || {
            let (ud, rc) = (s("fig2", BOTH)?, s("fig2", "IPoIB-RC")?);
            let v: Vec<(u64, f64)> = ud.points.iter().filter(|p| p.0 <= 4096).filter_map(|&(x, a)| rc.at(x).map(|b| (x, (a - b) / b * 100.0))).collect();
            let &(x, m) = v.iter().max_by(|a, b| a.1.total_cmp(&b.1)).ok_or("no sizes")?;
            Ok((m, format!("largest excess of UD-LRO-LSO over RC up to 4 KiB, at {x} B"), Some(x as f64)))
        }),
        num("off.bw.ipoib_rc_single", || {
            let v = mean_where(s("fig3", "IPoIB-RC")?, |x| x >= 65536)?;
            Ok((v * 8.0, "mean of `IPoIB-RC` over 64 KiB..1 MiB, in Mb/s".into(), None))
        }),
        num("off.bw.best_ud_single", || peak_over(r, "fig3", &[LRO]).map(|(v, n, _)| (v * 8.0, format!("{n}, in Mb/s"), None))),
        num("off.ms.offload_gain_max", || {
            let (g, n) = gain(s("fig4", BOTH)?, s("fig4", UD)?);
            Ok((g, n, None))
        }),
        num("off.ms.offload_gain_avg", || {
            let (a, b) = (s("fig4", BOTH)?, s("fig4", UD)?);
            let v: Vec<(u64, f64)> = a.points.iter().filter_map(|&(x, p)| b.at(x).map(|q| (x, (p / q - 1.0) * 100.0))).collect();
            Ok((mean_of(&v), format!("mean over {} sizes of LRO+LSO / no offload - 1", v.len()), None))
        }),
        num("off.ms.lro_lso_8_vs_1", || {
            let (g, n) = gain(s("fig4", BOTH)?, s("fig3", BOTH)?);
            Ok((g, format!("8 streams vs 1: {n}"), None))
        }),
        num("off.ms.rc_below_lro_lso", || {
            let (g, n) = below(s("fig4", "IPoIB-RC")?, s("fig4", BOTH)?);
            Ok((g, n, None))
        }),
        num("off.cmp.sdp_zc_vs_verbs_single", || {
            let (g, n) = below(s("fig6", "SDP-ZC")?, s("fig6", "IB verbs RDMA write")?);
            Ok((g, n, None))
        }),
        num("off.cmp.rc_over_ud_single", || {
            let (g, n) = gain(s("fig6", "IPoIB-RC")?, s("fig6", BOTH)?);
            Ok((g, n, None))
        }),
        num("off.cmp.sdp_bc_over_rc_single", || {
            let (g, n) = gain(s("fig6", "SDP-BC")?, s("fig6", "IPoIB-RC")?);
            Ok((g, n, None))
        }),
        num("off.cmp.ipoib_offload_vs_verbs_ms", || {
            let (g, n) = below(s("fig7", BOTH)?, s("fig7", "IB verbs, 8 connections")?);
            Ok((g, n, None))
        }),
        num("off.cmp.sdp_zc_vs_verbs_ms", || {
            let (g, n) = below(s("fig7", "SDP-ZC")?, s("fig7", "IB verbs, 8 connections")?);
            Ok((g, n, None))
        }),
        num("off.cmp.ud_offload_vs_best_sdp_ms", || {
            let (bc, zc) = (s("fig7", "SDP-BC")?, s("fig7", "SDP-ZC")?);
            let best = if bc.max() >= zc.max() { bc } else { zc };
            let (g, n) = below(s("fig7", BOTH)?, best);
            Ok((g, n, None))
        }),
    ]
}

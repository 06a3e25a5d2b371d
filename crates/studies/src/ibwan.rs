//! The ib-wan study (Yu, Rao, Vetter 2008): InfiniBand transports over IB-over-SONET
//! range extenders at 1400 and 8600 miles. Figures 4-10 (verbs) and a distance sweep the
//! study did not draw; the MPI figures 11-15 come with the MPI layer.

use crate::catalog::StudyDef;
use crate::claimcalc::{boolean, num, peak_over, series, smallest, Computed, FigureResults};
use interlab_report::Scale;

macro_rules! fig {
    ($id:literal, $title:literal, $y:expr, $x:expr, $xl:expr) => {
        fig!($id, $title, $y, $x, $xl, 1.0)
    };
    ($id:literal, $title:literal, $y:expr, $x:expr, $xl:expr, $div:expr) => {
        study_figure!("ib-wan", $id, $title, x: $xl, $x, y: $y, Scale::Linear, div: $div)
    };
}

const SIZE: &str = "Message size (bytes)";

/// perftest (`send_bw`, `rdma_bw`, `write_bw`) prints bandwidth in units of 2^20 bytes per
/// second (`print_report`: `... / 0x100000`) under the heading "MB/sec"; OSU's MPI tests
/// divide by 10^6. The study plots each tool's output, so the network-level figures
/// (fig6-fig10) and their claims are in perftest's unit: model MB/s (10^6 B/s) / this.
const PERFTEST_MB: f64 = 1_048_576.0 / 1e6;

/// The study definition.
pub fn study() -> StudyDef {
    const LAT: &str = "Latency (ms)";
    const BW: &str = "Bandwidth (MB/s)";
    const BW_PERFTEST: &str = "Bandwidth, MB = 2^20 B (perftest MB/s)";
    StudyDef {
        id: "ib-wan",
        title: "InfiniBand transports over wide-area extenders (ib-wan)",
        summary: "Two nodes on their own switches joined by IB-over-SONET range extenders over an OC-192 loop. \
                  One-way delay grows with loop length (fitted once to the two given latencies, then used at every \
                  distance). RC completes a work request only when its ACK returns, so perftest's 128 outstanding \
                  operations bound a single RC QP to 128 messages per round trip; UC and UD complete locally and \
                  fill the path; RDMA read is bound by 4 outstanding reads per QP. Network-level figures (fig6-fig10) are in \
                  perftest's MB (2^20 B/s), the MPI figures in OSU's (10^6 B/s).",
        figures: vec![
            fig!("fig4", "Send/receive latency, RC, UC, UD", LAT, Scale::Log2, SIZE, 1000.0),
            fig!("fig5", "RDMA write and read latency", LAT, Scale::Log2, SIZE, 1000.0),
            fig!("fig6", "Send/receive bandwidth, RC, UC, UD", BW_PERFTEST, Scale::Log2, SIZE, PERFTEST_MB),
            fig!("fig7", "RDMA write and read bandwidth", BW_PERFTEST, Scale::Log2, SIZE, PERFTEST_MB),
            fig!("fig8", "Bi-directional send/receive bandwidth", BW_PERFTEST, Scale::Log2, SIZE, PERFTEST_MB),
            fig!("fig9", "Bi-directional RDMA write bandwidth", BW_PERFTEST, Scale::Log2, SIZE, PERFTEST_MB),
            fig!("fig10", "RC RDMA write with 1, 2, 4 QPs at 8600 miles", BW_PERFTEST, Scale::Log2, SIZE, PERFTEST_MB),
            fig!("distance", "Bandwidth against distance at 1 MiB (not in the study)", BW, Scale::Linear, "Loop length (miles)"),
            fig!("sec6", "MPI latency over RC, eager to rendezvous", LAT, Scale::Log2, SIZE, 1000.0),
            fig!("fig11", "MPI bandwidth over RC and UD (window 64)", BW, Scale::Log2, SIZE),
            fig!("fig12", "MPI over RC and UD with windows 64-256 at 8600 miles", BW, Scale::Log2, SIZE),
            fig!("fig13", "MPI with several QPs per peer at 8600 miles", BW, Scale::Log2, SIZE),
            fig!("fig14", "UC-based vs RC-based MPI at 8600 miles", BW, Scale::Log2, SIZE),
            fig!("fig15", "UC-based MPI with windows 32-256 at 8600 miles", BW, Scale::Log2, SIZE),
        ],
        claims,
    }
}

/// Highest peak among `labels` of a perftest figure, in perftest's unit (2^20 B/s).
fn perftest_peak(r: &FigureResults, fig: &str, labels: &[&str]) -> Result<(f64, String, Option<f64>), String> {
    let (v, note, x) = peak_over(r, fig, labels)?;
    Ok((v / PERFTEST_MB, format!("{note}, in perftest MB/s (2^20 B/s)"), x))
}

fn claims(r: &FigureResults) -> Vec<Computed> {
    let ms = |fig: &'static str, label: &'static str| {
        move || smallest(series(r, fig, label)?).map(|(v, n, x)| (v / 1000.0, format!("{n}, in ms"), x))
    };
    let mut v = vec![
        num("wan.lat.sr_1400", ms("fig4", "RC 1400 mi")),
        num("wan.lat.sr_8600", ms("fig4", "RC 8600 mi")),
    ];
    v.push(boolean("wan.lat.read_twice", || {
        let mut notes = vec![];
        let mut ok = true;
        for d in ["1400", "8600"] {
            let w = smallest(series(r, "fig5", &format!("RDMA write {d} mi"))?)?.0;
            let rd = smallest(series(r, "fig5", &format!("RDMA read {d} mi"))?)?.0;
            let ratio = rd / w;
            ok &= (ratio - 2.0).abs() / 2.0 <= 0.15;
            notes.push(format!("{d} mi: read/write = {ratio:.3}"));
        }
        Ok((ok, notes.join("; ")))
    }));
    v.push(num("wan.bw.uc_sr_peak", || perftest_peak(r, "fig6", &["UC 1400 mi", "UC 8600 mi"])));
    v.push(num("wan.bw.rc_sr_peak_1400", || perftest_peak(r, "fig6", &["RC 1400 mi"])));
    v.push(num("wan.bw.rc_sr_peak_8600", || perftest_peak(r, "fig6", &["RC 8600 mi"])));
    v.push(boolean("wan.bw.rc_needs_1mb_at_8600", || {
        let s = series(r, "fig6", "RC 8600 mi")?;
        let pk = s.max();
        let first_good = s.points.iter().find(|p| p.1 > 0.8 * pk).map(|p| p.0).ok_or("empty series")?;
        Ok((first_good >= 1 << 20, format!("first size above 80% of the {pk:.0} MB/s peak: {first_good} B")))
    }));
    v.push(boolean("wan.bw.read_poor", || {
        let w = series(r, "fig7", "RC write 8600 mi")?.max();
        let rd = series(r, "fig7", "RC read 8600 mi")?.max();
        Ok((rd < 0.5 * w, format!("8600 mi peaks: read {rd:.0} MB/s, write {w:.0} MB/s")))
    }));
    v.push(boolean("wan.bw.rc_write_beats_rc_sr", || {
        let w = series(r, "fig7", "RC write 8600 mi")?;
        let s = series(r, "fig6", "RC 8600 mi")?;
        let mut best: (f64, u64) = (f64::NEG_INFINITY, 0);
        for &(z, bw) in w.points.iter().filter(|p| (4096..=(512 << 10)).contains(&p.0)) {
            let sr = s.at(z).ok_or(format!("send/receive lacks {z} B"))?;
            let gain = bw / sr - 1.0;
            if gain > best.0 {
                best = (gain, z);
            }
        }
        Ok((best.0 > 0.05, format!("largest RC write gain over RC send/receive at 4 KiB-512 KiB, 8600 mi: {:+.1}% at {} B", best.0 * 100.0, best.1)))
    }));
    v.push(num("wan.bibw.uc_ud_peak", || perftest_peak(r, "fig8", &["UC 1400 mi", "UC 8600 mi", "UD 1400 mi", "UD 8600 mi"])));
    v.push(num("wan.bibw.rc_peak", || perftest_peak(r, "fig8", &["RC 1400 mi", "RC 8600 mi"])));
    v.push(num("wan.qp4.uni_8600", || perftest_peak(r, "fig10", &["4 QPs"])));
    v.push(num("wan.qp4.bi_8600", || perftest_peak(r, "fig10", &["4 QPs bi-directional"])));
    v.push(num("wan.mpi.lat_8600", ms("sec6", "RC 8600 mi")));
    v.push(boolean("wan.mpi.large_lat_tripled", || {
        let s = series(r, "sec6", "RC 8600 mi")?;
        let small = smallest(s)?.0;
        let large = s.points.iter().max_by_key(|p| p.0).ok_or("empty")?;
        let ratio = large.1 / small;
        Ok(((ratio - 3.0).abs() / 3.0 <= 0.15, format!("{} B rendezvous / smallest eager latency at 8600 mi = {ratio:.2}", large.0)))
    }));
    v.push(num("wan.mpi.rc_bw_1400", || peak_over(r, "fig11", &["RC 1400 mi"])));
    v.push(num("wan.mpi.ud_bw_1400", || peak_over(r, "fig11", &["UD 1400 mi"])));
    v.push(num("wan.mpi.rc_bw_8600", || peak_over(r, "fig11", &["RC 8600 mi"])));
    v.push(num("wan.mpi.ud_bw_8600", || peak_over(r, "fig11", &["UD 8600 mi"])));
    v.push(num("wan.mpi.rc_win256_uni_8600", || peak_over(r, "fig12", &["RC window 256"])));
    v.push(num("wan.mpi.rc_win256_bi_8600", || peak_over(r, "fig12", &["RC window 256 bi-directional"])));
    v.push(num("wan.mpi.ud_win256_uni_8600", || peak_over(r, "fig12", &["UD window 256"])));
    v.push(num("wan.mpi.ud_win256_bi_8600", || peak_over(r, "fig12", &["UD window 256 bi-directional"])));
    v.push(boolean("wan.mpi.multi_qp_no_gain", || {
        let mut worst: (f64, String) = (f64::NEG_INFINITY, String::new());
        for (one, many) in [("RC 1 QP", "RC 2 QPs"), ("RC 1 QP", "RC 4 QPs"), ("UD 1 QP", "UD 4 QPs")] {
            let (a, b) = (series(r, "fig13", one)?, series(r, "fig13", many)?);
            for &(z, x) in &a.points {
                let y = b.at(z).ok_or(format!("{many} lacks {z} B"))?;
                let gain = y / x - 1.0;
                if gain > worst.0 {
                    worst = (gain, format!("{many} vs {one} at {z} B"));
                }
            }
        }
        Ok((worst.0 <= 0.05, format!("largest gain from more QPs: {:+.1}% ({})", worst.0 * 100.0, worst.1)))
    }));
    v.push(num("wan.mpi.uc_gain_mid", || {
        let (rc, uc) = (series(r, "fig14", "RC-based MPI")?, series(r, "fig14", "UC-based MPI")?);
        let mut best = (f64::NEG_INFINITY, 0);
        for &(z, x) in rc.points.iter().filter(|p| (4096..=(1 << 20)).contains(&p.0)) {
            let gain = (uc.at(z).ok_or(format!("UC lacks {z} B"))? / x - 1.0) * 100.0;
            if gain > best.0 {
                best = (gain, z);
            }
        }
        Ok((best.0, format!("largest UC-over-RC gain between 4 KiB and 1 MiB: at {} B", best.1), Some(best.1 as f64)))
    }));
    v.push(num("wan.mpi.uc_win256_uni_8600", || peak_over(r, "fig15", &["UC window 256"])));
    v.push(num("wan.mpi.uc_win256_bi_8600", || peak_over(r, "fig15", &["UC window 256 bi-directional"])));
    v
}

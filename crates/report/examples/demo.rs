//! Builds a small demo report (two figures, a few claims of every status) into
//! `/tmp/report-demo`, or the directory given as the first argument.
//!
//! The curves are made-up saturation curves for looking at the layout, not model output.
//!
//! ```text
//! cargo run -p interlab-report --example demo [-- OUT_DIR]
//! ```

use interlab_report::{
    evaluate, parse_claims_csv, write_report, ClaimValue, Figure, Mark, Report, Scale, Series,
    StudySection,
};
use std::path::PathBuf;

const CLAIMS: &str = "\
id,paper,figure,testbed,description,unit,value,tolerance
pcie.lat.sendrecv_pcie,pcie,fig2,xeon-mt25208-pcie,Small-message send/receive one-way latency with PCIe HCA,us,5.2,0.15
pcie.lat.sendrecv_pcix,pcie,fig2,xeon-mt23108-pcix,Small-message send/receive one-way latency with PCI-X HCA,us,7.1,0.15
pcie.bw.uni_pcie,pcie,fig6,xeon-mt25208-pcie,Peak uni-directional RDMA write bandwidth (window 64) one port PCIe,MB/s,968,0.15
pcie.bw.uni_pcix,pcie,fig6,xeon-mt23108-pcix,Peak uni-directional RDMA write bandwidth (window 64) one port PCI-X,MB/s,778,0.15
pcie.bw.bi_pcix,pcie,fig7,xeon-mt23108-pcix,Peak bi-directional RDMA write bandwidth one port PCI-X,MB/s,,0.15
pcie.mpi.bw_dip_8k,pcie,fig13,xeon-mt25208-pcie,MPI bandwidth curve shows a drop near 8 KiB (eager to rendezvous switch),bool,true,
vpi.lat.verbs_rdma_write_min,vpi,fig1,r805-connectx-ddr,Smallest one-way latency of InfiniBand verbs RDMA write,us,1.22,0.15
vpi.bw.sdp_dip_4k,vpi,fig2,r805-connectx-ddr,Single-stream SDP bandwidth curve has a local drop at 4 KiB messages,bool,true,
";

fn sizes(max_exp: i32) -> Vec<f64> {
    (0..=max_exp).map(|e| 2f64.powi(e)).collect()
}

/// Bandwidth of a link with per-message overhead: peak * s / (s + half).
fn saturating(peak: f64, half: f64, max_exp: i32) -> Vec<(f64, f64)> {
    sizes(max_exp)
        .into_iter()
        .map(|s| (s, peak * s / (s + half)))
        .collect()
}

/// Latency: base + size / rate.
fn latency(base_us: f64, mb_per_s: f64, max_exp: i32) -> Vec<(f64, f64)> {
    sizes(max_exp)
        .into_iter()
        .map(|s| (s, base_us + s / mb_per_s))
        .collect()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp/report-demo"));
    let specs = parse_claims_csv(CLAIMS, "demo-claims.csv")?;

    let model = |id: &str| -> Option<ClaimValue> {
        match id {
            "pcie.lat.sendrecv_pcie" => Some(5.02.into()),
            "pcie.lat.sendrecv_pcix" => Some(8.4.into()),
            "pcie.bw.uni_pcie" => Some(951.7.into()),
            "pcie.bw.uni_pcix" => Some(781.2.into()),
            "pcie.bw.bi_pcix" => Some(1011.0.into()),
            "pcie.mpi.bw_dip_8k" => Some(true.into()),
            _ => None,
        }
    };
    let claims = specs
        .iter()
        .map(|s| {
            let note = (s.id == "pcie.lat.sendrecv_pcix")
                .then(|| "PCI-X read turnaround not yet modelled".to_string());
            evaluate(s, model(&s.id), note)
        })
        .collect();

    let fig2 = Figure {
        id: "pcie-fig2".into(),
        study: "pcie".into(),
        title: "Send/receive one-way latency".into(),
        x_label: "Message size (bytes)".into(),
        y_label: "One-way latency (\u{b5}s)".into(),
        x_scale: Scale::Log2,
        y_scale: Scale::Linear,
        series: vec![
            Series {
                label: "PCIe (MT25208)".into(),
                points: latency(5.02, 900.0, 12),
                dashed: false,
            },
            Series {
                label: "PCI-X (MT23108)".into(),
                points: latency(8.4, 700.0, 12),
                dashed: true,
            },
        ],
        marks: vec![
            Mark {
                label: "paper 5.2".into(),
                claim_id: "pcie.lat.sendrecv_pcie".into(),
                x: Some(4.0),
                y: 5.2,
            },
            Mark {
                label: "paper 7.1".into(),
                claim_id: "pcie.lat.sendrecv_pcix".into(),
                x: Some(4.0),
                y: 7.1,
            },
        ],
        caption: "One-way latency of send/receive ping-pong, half the round trip, 1 B to 4 KiB."
            .into(),
    };
    let fig6 = Figure {
        id: "pcie-fig6".into(),
        study: "pcie".into(),
        title: "Uni-directional RDMA write bandwidth, one port".into(),
        x_label: "Message size (bytes)".into(),
        y_label: "Bandwidth (MB/s)".into(),
        x_scale: Scale::Log2,
        y_scale: Scale::Linear,
        series: vec![
            Series { label: "PCIe x8".into(), points: saturating(952.0, 1800.0, 22), dashed: false },
            Series { label: "PCI-X 133 MHz".into(), points: saturating(781.0, 2600.0, 22), dashed: false },
        ],
        marks: vec![
            Mark { label: "paper PCIe 968".into(), claim_id: "pcie.bw.uni_pcie".into(), x: None, y: 968.0 },
            Mark { label: "paper PCI-X 778".into(), claim_id: "pcie.bw.uni_pcix".into(), x: None, y: 778.0 },
        ],
        caption: "RDMA write bandwidth with a window of 64 outstanding messages; dashed lines are the published peaks."
            .into(),
    };

    let report = Report {
        title: "interlab: reproduction report (demo)".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        generated_note: "cargo run -p interlab-report --example demo (made-up curves)".into(),
        studies: vec![StudySection {
            id: "pcie".into(),
            title: "PCI Express vs PCI-X InfiniBand HCAs".into(),
            summary: "Latency and bandwidth of MT25208 (PCIe x8) and MT23108 (PCI-X) host channel adapters: \
                      verbs operations, one and two ports, one and two processes, and MPI on top."
                .into(),
            figures: vec![fig2, fig6],
        }],
        claims,
        footer: "demo data \u{b7} model run time 0.0 s".into(),
    };
    let files = write_report(&out, &report)?;
    println!("{}", files.html.display());
    println!("{}", files.claims_json.display());
    for f in &files.figures {
        println!("{}", f.display());
    }
    Ok(())
}

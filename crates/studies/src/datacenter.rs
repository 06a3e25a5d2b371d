//! The data-center figures (vpi fig9; ipoib-offload fig9-14 and sec6; sdp fig4-7):
//! trace-driven replays of the three-tier data center (`interlab_replay`) whose
//! per-message costs come from the socket model, and the claims computed from them.
//!
//! "Highest error-free load" (TPC-W): among the browser counts of a series, the highest at
//! which every interaction's 90th-percentile response time is within its TPC-W limit (at
//! most 10% of its requests over the limit); the claim compares the WIPS there.

use crate::catalog::FigureDef;
use crate::claimcalc::{boolean, num, series, Computed, FigureResults};
use interlab_replay::{CostCache, DcSpec, InteractionTable, Kind, Outcome, Protocol};
use interlab_tpcw::tpcw::Interaction;
use interlab_experiment::{SeriesResult, XAxis};
use interlab_report::Scale;
use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

/// What a figure plots from the runs of its spec.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Metric {
    /// WIPS (or pages/s) vs browsers.
    Wips,
    /// Worst interaction's share of requests over its TPC-W limit (%) vs browsers.
    WorstOver,
    /// CCDF of all response times at the highest browser count: x = ms, y = fraction.
    Ccdf,
    /// Mean response time per interaction (x = interaction index), ms.
    MeanByClass,
    /// Mean response time vs mean file size, us.
    MeanVsSize,
    /// Share of the mean response time spent on the proxy-web leg (%) vs mean file size.
    WebShare,
    /// Share of the proxy time (request at the proxy until the file is back there) spent
    /// setting up the connection to the web server (%) vs mean file size.
    ConnectShare,
    /// Pages per 10 s vs sessions.
    Per10s,
    /// Largest response time vs sessions, ms.
    MaxResp,
}

struct DcFig {
    study: &'static str,
    def: FigureDef,
    metric: Metric,
}

macro_rules! dc_fig {
    ($study:literal, $id:literal, $spec:literal, $title:expr, x: $xl:expr, $xs:expr, y: $yl:expr, $metric:expr) => {
        DcFig {
            study: $study,
            def: FigureDef {
                id: $id,
                title: $title,
                spec: include_str!(concat!("../../../studies/", $study, "/", $spec, ".toml")),
                spec_path: concat!("studies/", $study, "/", $spec, ".toml"),
                x_label: $xl,
                y_label: $yl,
                x_scale: $xs,
                y_scale: Scale::Linear,
                y_div: 1.0,
                // TPC-W: an interaction passes when at most 10 % of its requests exceed its
                // 90th-percentile response-time (WIRT) limit (TPC-W v1.8 [W1]).
                y_reference: if matches!($metric, Metric::WorstOver) { Some((10.0, "TPC-W limit: 10 % of requests over")) } else { None },
            },
            metric: $metric,
        }
    };
}

fn all_figs() -> Vec<DcFig> {
    use Metric::*;
    vec![
        dc_fig!("vpi", "fig9", "dc-fig9", "TPC-W browsing mix: 10GigE clients, inter-tier 10GigE / IPoIB / SDP (model replay)", x: "Browsers", Scale::Linear, y: "WIPS", Wips),
        dc_fig!("vpi", "fig9-limit", "dc-fig9", "TPC-W: worst interaction's requests over its response-time limit", x: "Browsers", Scale::Linear, y: "Requests over limit (%)", WorstOver),
        dc_fig!("ipoib-offload", "fig9", "dc-fig9", "TPC-W browsing mix, all tiers one protocol (model replay)", x: "Browsers", Scale::Linear, y: "WIPS", Wips),
        dc_fig!("ipoib-offload", "fig10", "dc-fig9", "TPC-W: worst interaction's requests over its response-time limit", x: "Browsers", Scale::Linear, y: "Requests over limit (%)", WorstOver),
        dc_fig!("ipoib-offload", "fig11", "dc-fig11", "TPC-W over SDP: 50 shared client connections vs one per browser", x: "Browsers", Scale::Linear, y: "WIPS", Wips),
        dc_fig!("ipoib-offload", "fig11-limit", "dc-fig11", "TPC-W over SDP: worst interaction's requests over its response-time limit", x: "Browsers", Scale::Linear, y: "Requests over limit (%)", WorstOver),
        dc_fig!("ipoib-offload", "fig12", "dc-fig11", "TPC-W over SDP: response-time CCDF at the highest load", x: "Response time (ms)", Scale::Linear, y: "Fraction of requests slower", Ccdf),
        dc_fig!("ipoib-offload", "sec6", "dc-sec6", "Idle SDP connections: mean response time per interaction at light load", x: "Interaction (TPC-W order ADMC..SHOP)", Scale::Linear, y: "Mean response time (ms)", MeanByClass),
        dc_fig!("ipoib-offload", "fig13", "dc-fig13", "SPECweb2009 e-commerce in its manner: throughput (model replay)", x: "Sessions", Scale::Linear, y: "Pages per 10 s", Per10s),
        dc_fig!("ipoib-offload", "fig14", "dc-fig13", "SPECweb2009 e-commerce: largest response time", x: "Sessions", Scale::Linear, y: "Largest response time (ms)", MaxResp),
        dc_fig!("sdp", "fig4", "dc-fig4", "Static content, Fast Ethernet clients (model replay)", x: "Average file size (bytes)", Scale::Log2, y: "Mean response time (us)", MeanVsSize),
        dc_fig!("sdp", "fig5a", "dc-fig5a", "Static content, InfiniBand clients, connection per request (model replay)", x: "Average file size (bytes)", Scale::Log2, y: "Mean response time (us)", MeanVsSize),
        dc_fig!("sdp", "fig5-split", "dc-fig5a", "Static content: share of the response time spent between proxy and web server", x: "Average file size (bytes)", Scale::Log2, y: "Proxy-web share of response time (%)", WebShare),
        dc_fig!("sdp", "fig6", "dc-fig6", "Static content without connection set-up time (model replay)", x: "Average file size (bytes)", Scale::Log2, y: "Mean response time (us)", MeanVsSize),
        dc_fig!("sdp", "fig7-proxy", "dc-fig5a", "Static content: connection set-up in the proxy's time", x: "Average file size (bytes)", Scale::Log2, y: "Connection set-up share of proxy time (%)", ConnectShare),
    ]
}

/// The data-center figure definitions of a study (for the report sections).
pub fn figure_defs(study: &str) -> Vec<FigureDef> {
    all_figs().into_iter().filter(|f| f.study == study).map(|f| f.def).collect()
}

/// Whether every interaction with requests has at most 10% of them over its TPC-W limit.
fn worst_over(o: &Outcome) -> f64 {
    (0..o.classes.len())
        .filter_map(|c| {
            let i = Interaction::from_abbr(&o.classes[c])?;
            let n = o.times(Some(c)).len();
            (n > 0).then(|| o.over(Some(c), i.wirt90_limit().as_secs_f64()) * 100.0)
        })
        .fold(0.0, f64::max)
}

fn metric_points(m: Metric, runs: &[(u64, &Outcome)]) -> Vec<(u64, f64)> {
    match m {
        Metric::Wips => runs.iter().map(|(x, o)| (*x, o.throughput())).collect(),
        Metric::WorstOver => runs.iter().map(|(x, o)| (*x, worst_over(o))).collect(),
        Metric::Per10s => runs.iter().map(|(x, o)| (*x, o.throughput() * 10.0)).collect(),
        Metric::MaxResp => runs.iter().map(|(x, o)| (*x, o.percentile(None, 100.0).unwrap_or(0.0) * 1e3)).collect(),
        Metric::ConnectShare => runs.iter().map(|(x, o)| (*x, o.mean_between(1, 3) / o.mean_between(0, 2) * 100.0)).collect(),
        Metric::WebShare => runs.iter().map(|(x, o)| (*x, o.mean_between(1, 2) / o.mean(None).unwrap_or(f64::NAN) * 100.0)).collect(),
        Metric::MeanVsSize => runs.iter().map(|(x, o)| (*x, o.mean(None).unwrap_or(f64::NAN) * 1e6)).collect(),
        Metric::MeanByClass => {
            let Some((_, o)) = runs.last() else { return vec![] };
            (0..o.classes.len()).filter_map(|c| o.mean(Some(c)).map(|m| (c as u64, m * 1e3))).collect()
        }
        Metric::Ccdf => {
            let Some((_, o)) = runs.last() else { return vec![] };
            // Fraction slower than each whole millisecond, up to the largest.
            let t = o.times(None);
            let max_ms = t.last().map_or(0.0, |x| x * 1e3).ceil() as u64;
            let step = (max_ms / 200).max(1);
            (0..=max_ms)
                .step_by(step as usize)
                .map(|ms| {
                    let slower = t.len() - t.partition_point(|&x| x * 1e3 <= ms as f64);
                    (ms, slower as f64 / t.len().max(1) as f64)
                })
                .collect()
        }
    }
}

/// The data-center figures of the selected studies, planned: their specs parsed once each,
/// their points listed (a point configured identically in two specs, labels aside, once),
/// ready to run as tasks of the run-wide queue ([`DcPlan::tasks`]) and then to be turned
/// into series ([`DcPlan::finish`]).
pub struct DcPlan {
    figs: Vec<DcFig>,
    specs: BTreeMap<&'static str, Vec<DcSpec>>,
    table: Arc<InteractionTable>,
    costs: CostCache,
    /// The cost tables the points use: (profile, protocol).
    needed: Vec<(String, Protocol)>,
    /// Every (spec, series, x) point, with the index of its distinct point in `unique`.
    jobs: Vec<((&'static str, usize, u64), usize)>,
    /// The distinct points (configured identically: one key).
    unique: Vec<(&'static str, usize, u64)>,
    outs: Vec<OnceLock<Result<Outcome, String>>>,
}

/// A point configured identically in two specs (labels aside) has one key.
fn point_key(specs: &BTreeMap<&'static str, Vec<DcSpec>>, &(path, si, x): &(&'static str, usize, u64)) -> String {
    let s = DcSpec { name: String::new(), label: String::new(), ..specs[path][si].clone() };
    format!("{s:?} {x}")
}

/// Plans the data-center figures of the selected studies.
pub fn plan(selected: &dyn Fn(&str) -> bool) -> Result<DcPlan, String> {
    let figs: Vec<DcFig> = all_figs().into_iter().filter(|f| selected(f.study)).collect();
    // Unique specs, each parsed once.
    let mut specs: BTreeMap<&'static str, Vec<DcSpec>> = BTreeMap::new();
    for f in &figs {
        if !specs.contains_key(f.def.spec_path) {
            specs.insert(f.def.spec_path, DcSpec::parse(f.def.spec_path, f.def.spec)?);
        }
    }
    let mut jobs: Vec<(&'static str, usize, u64)> = Vec::new();
    for (path, ss) in &specs {
        for (si, s) in ss.iter().enumerate() {
            let xs: Vec<u64> = if s.kind == Kind::Static { s.file_sizes.clone() } else { s.browsers.iter().map(|&b| b as u64).collect() };
            jobs.extend(xs.into_iter().map(|x| (*path, si, x)));
        }
    }
    let mut needed: Vec<(String, Protocol)> = specs.values().flatten().flat_map(|s| s.protocols.iter().map(move |p| (s.profile.clone(), *p))).collect();
    needed.sort();
    needed.dedup();
    // Distinct points in key order (the order they were always run and reported in).
    let mut by_key: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, j) in jobs.iter().enumerate() {
        by_key.entry(point_key(&specs, j)).or_default().push(i);
    }
    let mut slot_of = vec![0; jobs.len()];
    let mut unique = Vec::with_capacity(by_key.len());
    for same in by_key.into_values() {
        for &i in &same {
            slot_of[i] = unique.len();
        }
        unique.push(jobs[same[0]]);
    }
    let jobs: Vec<((&'static str, usize, u64), usize)> = jobs.into_iter().zip(slot_of).collect();
    Ok(DcPlan {
        outs: unique.iter().map(|_| OnceLock::new()).collect(),
        figs,
        specs,
        table: Arc::new(InteractionTable::builtin()),
        costs: CostCache::new(),
        needed,
        jobs,
        unique,
    })
}

/// A rough count of the events of a replay point, for the order of the run-wide queue:
/// about 100 per browser and simulated second (TPC-W and SPECweb at 0.1 of their think
/// times); static content about 30000 per client and second for 4 KiB files, fewer for
/// larger ones. Only an order: it decides no result.
fn cost_estimate(s: &DcSpec, x: u64) -> u64 {
    let secs = s.warmup_s + s.measure_s;
    let est = if s.kind == Kind::Static {
        f64::from(s.browsers.first().copied().unwrap_or(1)) * secs * 30_000.0 / (1.0 + x as f64 / 4096.0)
    } else {
        x as f64 * secs * 100.0
    };
    est.max(1.0) as u64
}

impl DcPlan {
    /// Distinct replay points.
    pub fn points(&self) -> usize {
        self.unique.len()
    }

    /// The cost tables (first: every point waits for its tables; a table that fails fails
    /// the points that use it) and the points, each calling `tick` when done.
    pub fn tasks<'a>(&'a self, tick: &'a (dyn Fn() + Sync)) -> Vec<crate::schedule::Task<'a>> {
        let mut t = Vec::new();
        for (prof, p) in &self.needed {
            t.push(crate::schedule::Task::new(u64::MAX, move || {
                let _ = self.costs.get(prof, *p);
            }));
        }
        for ((path, si, x), slot) in self.unique.iter().zip(&self.outs) {
            let s = &self.specs[path][*si];
            t.push(crate::schedule::Task::new(cost_estimate(s, *x), move || {
                let r = if s.kind == Kind::Static { s.run_point(&self.table, &self.costs, s.browsers[0], *x) } else { s.run_point(&self.table, &self.costs, *x as u32, 0) };
                let _ = slot.set(r);
                tick();
            }));
        }
        t
    }

    /// Study id -> figure id -> series, once every task has run.
    pub fn finish(self) -> Result<BTreeMap<&'static str, FigureResults>, String> {
        let done: Vec<Outcome> = self.outs.into_iter().map(|o| o.into_inner().ok_or("a replay point was not run")?).collect::<Result<_, String>>()?;
        // Each figure reads its points' outcomes where they lie (no copy per figure).
        let mut by: BTreeMap<(&str, usize), Vec<(u64, &Outcome)>> = BTreeMap::new();
        for &((path, si, x), slot) in &self.jobs {
            by.entry((path, si)).or_default().push((x, &done[slot]));
        }
        let mut out: BTreeMap<&'static str, FigureResults> = BTreeMap::new();
        for f in &self.figs {
            let ss = &self.specs[f.def.spec_path];
            let series: Vec<SeriesResult> = ss
                .iter()
                .enumerate()
                .map(|(si, s)| {
                    let runs = &by[&(f.def.spec_path, si)];
                    SeriesResult {
                        label: if s.label.is_empty() { s.name.clone() } else { s.label.clone() },
                        points: metric_points(f.metric, runs),
                        x_axis: if s.kind == Kind::Static { XAxis::Size } else { XAxis::Clients },
                        server_cpu: runs.iter().map(|(x, o)| (*x, o.tier_util.get(1).copied().unwrap_or(0.0) * 100.0)).collect(),
                        unit: f.def.y_label.to_string(),
                        records: vec![],
                    }
                })
                .collect();
            out.entry(f.study).or_default().insert(f.def.id.to_string(), series);
        }
        Ok(out)
    }
}

/// WIPS at the highest error-free load of a series (fig "wips" and its over-limit twin).
fn error_free(r: &FigureResults, wips_fig: &str, over_fig: &str, label: &str) -> Result<(f64, u64), String> {
    let (w, o) = (series(r, wips_fig, label)?, series(r, over_fig, label)?);
    let mut best: Option<(f64, u64)> = None;
    for &(x, v) in &w.points {
        if o.at(x).is_some_and(|p| p <= 10.0) {
            best = Some((v, x));
        }
    }
    best.ok_or_else(|| format!("`{label}`: no error-free load among the browser counts"))
}

fn ratio(r: &FigureResults, wf: &str, of: &str, a: &'static str, b: &'static str) -> Result<(f64, String, Option<f64>), String> {
    let ((wa, xa), (wb, xb)) = (error_free(r, wf, of, a)?, error_free(r, wf, of, b)?);
    let web = |label: &str, x: u64| series(r, wf, label).ok().and_then(|s| s.server_cpu.iter().find(|p| p.0 == x).map(|p| p.1)).unwrap_or(f64::NAN);
    Ok((
        wa / wb,
        format!(
            "highest error-free WIPS: `{a}` {wa:.0} ({xa} browsers, web tier {:.0} % busy) / `{b}` {wb:.0} ({xb} browsers, web tier {:.0} % busy); \
             WIPS follows the bottleneck tier's CPU per interaction; with the built-in trace the database binds and the protocols differ in the web tier (docs/datacenter.md, \"What moves WIPS between protocols\")",
            web(a, xa),
            web(b, xb)
        ),
        None,
    ))
}

/// Throughput at the highest load of a series.
fn top(r: &FigureResults, fig: &str, label: &str) -> Result<(u64, f64), String> {
    series(r, fig, label)?.points.iter().copied().max_by_key(|p| p.0).ok_or_else(|| format!("`{label}` has no points"))
}

/// The data-center claims of a study.
pub fn claims(study: &str, r: &FigureResults) -> Vec<Computed> {
    const ETH: &str = "10GigE";
    const VIP: &str = "10GigE clients, IPoIB tiers";
    const VSDP: &str = "10GigE clients, SDP tiers";
    const OFF: &str = "IPoIB-UD LRO+LSO";
    match study {
        "vpi" => vec![
            num("vpi.dc.wips_ipoib_over_eth", || ratio(r, "fig9", "fig9-limit", VIP, ETH)),
            num("vpi.dc.wips_sdp_over_eth", || ratio(r, "fig9", "fig9-limit", VSDP, ETH)),
            boolean("vpi.dc.wips_order", || {
                let (i, s, e) = (error_free(r, "fig9", "fig9-limit", VIP)?.0, error_free(r, "fig9", "fig9-limit", VSDP)?.0, error_free(r, "fig9", "fig9-limit", ETH)?.0);
                Ok((i > s && s > e, format!("highest error-free WIPS: IPoIB tiers {i:.1}, SDP tiers {s:.1}, all 10GigE {e:.1}")))
            }),
        ],
        "ipoib-offload" => vec![
            num("off.dc.wips_ud_offload_over_nooffload", || ratio(r, "fig9", "fig10", OFF, "IPoIB-UD")),
            num("off.dc.wips_ud_offload_over_rc", || ratio(r, "fig9", "fig10", OFF, "IPoIB-RC")),
            num("off.dc.wips_ud_offload_over_sdp", || ratio(r, "fig9", "fig10", OFF, "SDP")),
            boolean("off.dc.sdp_few_connections_recovers", || {
                // Highest error-free WIPS, as for the fig9 ratios.
                let (few, fx) = error_free(r, "fig11", "fig11-limit", "SDP, 50 client connections")?;
                let (many, mx) = error_free(r, "fig11", "fig11-limit", "SDP, a connection per browser")?;
                let mut best_ip = 0.0f64;
                for l in [OFF, "IPoIB-UD", "IPoIB-RC"] {
                    best_ip = best_ip.max(error_free(r, "fig9", "fig10", l)?.0);
                }
                Ok((
                    few > many && few > best_ip,
                    format!("highest error-free WIPS: SDP 50 connections {few:.0} ({fx} browsers), SDP per browser {many:.0} ({mx}), best IPoIB {best_ip:.0}"),
                ))
            }),
            num("off.dc.sdp_idle_conn_latency_penalty", || {
                let (a, b) = (series(r, "sec6", "SDP")?, series(r, "sec6", "SDP without the idle round trip")?);
                let v = a
                    .points
                    .iter()
                    .filter_map(|&(c, m)| b.at(c).map(|n| (c, (m - n) / n * 100.0)))
                    .max_by(|x, y| x.1.total_cmp(&y.1))
                    .ok_or("no interactions in common")?;
                let name = Interaction::ALL.get(v.0 as usize).map_or("?", |i| i.abbr());
                Ok((v.1, format!("largest increase of an interaction's mean response time at light load from idle SDP connections ({name})"), None))
            }),
            num("off.specweb.offload_gain", || {
                let ((x, a), (_, b)) = (top(r, "fig13", OFF)?, top(r, "fig13", "IPoIB-UD")?);
                Ok(((a / b - 1.0) * 100.0, format!("pages per 10 s at {x} sessions: LRO+LSO {a:.0}, no offload {b:.0}"), None))
            }),
            num("off.specweb.ipoib_over_sdp", || {
                let (x, s) = top(r, "fig13", "SDP")?;
                let best = [OFF, "IPoIB-UD", "IPoIB-RC"].iter().map(|l| top(r, "fig13", l).map(|p| p.1)).collect::<Result<Vec<f64>, String>>()?.into_iter().fold(0.0, f64::max);
                Ok(((best / s - 1.0) * 100.0, format!("pages per 10 s at {x} sessions: best IPoIB {best:.0}, SDP {s:.0}"), None))
            }),
        ],
        "sdp" => {
            let cmp = |fig: &'static str| -> Result<Vec<(u64, f64, f64)>, String> {
                let (i, s) = (series(r, fig, "IPoIB")?, series(r, fig, "SDP")?);
                Ok(i.points.iter().filter_map(|&(x, a)| s.at(x).map(|b| (x, a, b))).collect())
            };
            let show = |v: &[(u64, f64, f64)]| v.iter().map(|(x, a, b)| format!("{} KiB: IPoIB {a:.0} / SDP {b:.0} us", x / 1024)).collect::<Vec<_>>().join("; ");
            vec![
                boolean("sdp.dc.fast_clients_sdp_wins_large", || {
                    let v: Vec<_> = cmp("fig5a")?.into_iter().filter(|p| p.0 > 131072).collect();
                    Ok((!v.is_empty() && v.iter().all(|p| p.2 < p.1), show(&v)))
                }),
                boolean("sdp.dc.fast_clients_ipoib_wins_small", || {
                    let v: Vec<_> = cmp("fig5a")?.into_iter().filter(|p| p.0 <= 4096).collect();
                    Ok((!v.is_empty() && v.iter().all(|p| p.1 <= p.2), show(&v)))
                }),
                boolean("sdp.dc.no_conn_time_sdp_wins_all", || {
                    let v = cmp("fig6")?;
                    Ok((!v.is_empty() && v.iter().all(|p| p.2 < p.1), show(&v)))
                }),
            ]
        }
        _ => vec![],
    }
}

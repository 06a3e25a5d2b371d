//! `interlab reproduce`: run the catalog in the model, compute every claim, write the
//! report, figures, claims JSON and the tidy records.

use crate::catalog::{catalog, PAPERS};
use crate::claimcalc::{Computed, FigureResults};
use crate::schedule::{run_longest_first, Task};
use interlab_experiment::{assemble, parse_experiment, point_count, point_jobs, write_records, Experiment, PointJob, PointKeys, Shard};
use interlab_report::{
    claims_json, evaluate, parse_claims_csv, write_report, ClaimCounts, ClaimResult, ClaimValue, Figure, Mark, Report,
    ReportFiles, Series, StudySection,
};
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Instant;

/// The claims table shipped with interlab (a copy of `shared/reference/claims.csv`).
pub const EMBEDDED_CLAIMS: &str = include_str!("../../../studies/claims.csv");

/// What to reproduce and where.
#[derive(Debug, Clone)]
pub struct ReproduceOptions {
    /// Output directory.
    pub out: PathBuf,
    /// Study ids to run; empty = all.
    pub studies: Vec<String>,
    /// A claims table to use instead of the embedded one.
    pub claims_csv: Option<PathBuf>,
    /// How the run was invoked (recorded in the report).
    pub command_line: String,
}

/// What a reproduce run produced.
#[derive(Debug, Clone)]
pub struct ReproduceOutput {
    pub files: ReportFiles,
    pub counts: ClaimCounts,
    /// Claims computed but outside their tolerance: (id, model, published).
    pub outside: Vec<String>,
    pub records: usize,
    pub events: u64,
    pub elapsed_s: f64,
    /// Studies that have no model yet (selected but skipped).
    pub not_modelled_studies: Vec<String>,
    /// Wall time of each figure's run, longest first (they run at once, sharing the cores).
    pub timings: Vec<FigureTiming>,
    /// Points shown by several figures, simulated once.
    pub sharing: PointSharing,
    /// How the run-wide queue of simulations used the cores.
    pub queue: QueueSpan,
}

/// The run-wide queue of simulations: from its start, when the last task started (until
/// then every core had work) and when the last ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QueueSpan {
    pub tasks: usize,
    pub last_start_s: f64,
    pub wall_s: f64,
}

/// How many of the figures' points were simulated: a point that several figures show (the
/// same set-up, pattern and seed) runs once and each figure takes its result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PointSharing {
    /// Points of every figure run by the experiment runner, counting each use.
    pub figure_points: usize,
    /// Of those, distinct points simulated.
    pub simulated: usize,
    /// Events of the uses after the first (not simulated again).
    pub shared_events: u64,
}

/// How long one figure (or the data-center replays, or PVFS) took to run in `reproduce`.
#[derive(Debug, Clone, PartialEq)]
pub struct FigureTiming {
    /// `study/figure`, or `datacenter replays` / `pvfs`.
    pub what: String,
    /// Points simulated (every use of a point a figure shows; the replays and PVFS: distinct
    /// points).
    pub points: usize,
    /// Seconds from the figure's first point starting to its last ending, wall clock.
    pub wall_s: f64,
}

/// Progress reporting hooks (the CLI draws a bar).
pub trait Progress: Sync {
    /// `total` points will be simulated.
    fn start(&self, total: usize);
    /// Now working on `what`.
    fn message(&self, what: &str);
    /// One point finished.
    fn tick(&self);
    /// All done.
    fn finish(&self);
}

/// A progress sink that shows nothing.
pub struct NoProgress;
impl Progress for NoProgress {
    fn start(&self, _: usize) {}
    fn message(&self, _: &str) {}
    fn tick(&self) {}
    fn finish(&self) {}
}

fn fmt_value(v: f64, unit: &str) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.0} {unit}")
    } else {
        format!("{v:.2} {unit}")
    }
}

/// The unit in the last parentheses of an axis title (`Bandwidth (Mb/s)` -> `Mb/s`).
fn axis_unit(label: &str) -> Option<&str> {
    let open = label.rfind('(')?;
    let close = label[open..].find(')')? + open;
    Some(label[open + 1..close].trim()).filter(|u| !u.is_empty())
}

/// The token a unit adds to a metric name: `MB/s` -> `MBps`, `%` -> `pct`.
fn unit_token(unit: &str) -> String {
    unit.replace("/s", "ps").replace('%', "pct").chars().filter(|c| c.is_ascii_alphanumeric()).collect()
}

/// A record in the unit its figure shows (e.g. MB/s -> Mb/s where the study plots Mb/s),
/// so that results.csv and the plot agree; the metric name follows the unit.
fn in_figure_unit(mut r: interlab_patterns::ResultRecord, fig: &crate::FigureDef) -> interlab_patterns::ResultRecord {
    let Some(unit) = axis_unit(fig.y_label) else { return r };
    if unit == r.unit || fig.y_div == 1.0 {
        return r;
    }
    let d = fig.y_div;
    r.value /= d;
    if let Some(s) = r.summary.as_mut() {
        for v in [&mut s.mean, &mut s.min, &mut s.max, &mut s.stddev, &mut s.p50, &mut s.p90, &mut s.p99, &mut s.p999] {
            *v /= d;
        }
    }
    let base = r.metric.rsplit_once('_').map_or(r.metric.as_str(), |(b, _)| b).to_string();
    r.metric = format!("{base}_{}", unit_token(unit));
    r.unit = unit.to_string();
    r
}

/// Records for a figure computed outside the experiment runner (data-center replays,
/// PVFS): one per point, x under its axis name (`browsers`, `io_servers`, ...), the
/// metric named after the y axis, the profile from the figure's claims.
fn replay_records(study: &str, pattern: &str, def: &crate::FigureDef, series: &[interlab_experiment::SeriesResult], testbed: &str) -> Vec<interlab_patterns::ResultRecord> {
    let words = |t: &str| -> String {
        let t = t.split('(').next().unwrap_or(t).trim().to_lowercase().replace('/', "");
        let w: Vec<String> = t.split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_string).collect();
        w.join("_")
    };
    let unit = axis_unit(def.y_label).unwrap_or("").to_string();
    let metric = match unit.as_str() {
        "" => words(def.y_label),
        u => format!("{}_{}", words(def.y_label), unit_token(u)),
    };
    let x_name = words(def.x_label);
    let mut out = Vec::new();
    for s in series {
        for (i, &(x, y)) in s.points.iter().enumerate() {
            out.push(interlab_patterns::ResultRecord {
                schema: interlab_patterns::RECORD_SCHEMA,
                version: interlab_experiment::VERSION.to_string(),
                engine: "model".into(),
                experiment: format!("{study}-{}", def.id),
                series: s.label.clone(),
                profile: testbed.to_string(),
                pattern: pattern.into(),
                op: String::new(),
                transport: String::new(),
                ports: String::new(),
                processes: 1,
                size_bytes: 0,
                distance_miles: None,
                server_cpu_percent: s.server_cpu.get(i).filter(|c| c.0 == x).map(|c| c.1),
                clients: None,
                x_name: Some(x_name.clone()),
                x_value: Some(x as f64),
                metric: metric.clone(),
                value: y / def.y_div,
                unit: unit.clone(),
                summary: None,
                seed: 1,
                warmup: 0,
                iterations: 0,
                window: 0,
                events: 0,
                spec: def.spec_path.to_string(),
            });
        }
    }
    out
}

/// A figure's caption: its description as a sentence, then the spec it was run from.
fn caption(description: &str, spec_path: &str) -> String {
    let d = description.trim();
    match d {
        "" => format!("Spec: {spec_path}."),
        _ if d.ends_with(['.', '!', '?']) => format!("{d} Spec: {spec_path}."),
        _ => format!("{d}. Spec: {spec_path}."),
    }
}

/// Runs the selected studies and writes everything under `opts.out`.
pub fn reproduce(opts: &ReproduceOptions, progress: &dyn Progress) -> Result<ReproduceOutput, String> {
    let t0 = Instant::now();
    let (claims_text, claims_name) = match &opts.claims_csv {
        Some(p) => (std::fs::read_to_string(p).map_err(|e| format!("{}: cannot read claims table: {e}", p.display()))?, p.display().to_string()),
        None => (EMBEDDED_CLAIMS.to_string(), "embedded claims.csv".to_string()),
    };
    let claim_specs = parse_claims_csv(&claims_text, &claims_name).map_err(|e| e.to_string())?;
    let known: Vec<&str> = PAPERS.iter().map(|(id, _)| *id).collect();
    for s in &opts.studies {
        if !known.contains(&s.as_str()) {
            return Err(format!("--study {s}: unknown study (expected one of {})", known.join(", ")));
        }
    }
    let selected = |id: &str| opts.studies.is_empty() || opts.studies.iter().any(|s| s == id);
    let cat = catalog();
    let not_modelled_studies: Vec<String> =
        known.iter().filter(|id| selected(id) && !cat.iter().any(|s| s.id == **id)).map(|s| s.to_string()).collect();

    // Parse every figure spec first: a broken spec fails before any simulation.
    let mut plan: Vec<(usize, usize, Experiment)> = Vec::new();
    for (si, study) in cat.iter().enumerate() {
        if !selected(study.id) {
            continue;
        }
        for (fi, fig) in study.figures.iter().enumerate() {
            let exp = parse_experiment(fig.spec_path, fig.spec, None).map_err(|e| e.to_string())?;
            plan.push((si, fi, exp));
        }
    }
    // One run-wide queue: every figure's points (a point that several figures show, equal
    // in everything its simulation depends on, once), the data-center replays and PVFS,
    // longest first on every core.
    let fig_jobs: Vec<Vec<PointJob>> = plan.iter().map(|(_, _, exp)| point_jobs(exp, Shard::ALL)).collect();
    let mut keys = PointKeys::new();
    let mut unique: HashMap<String, usize> = HashMap::new();
    // For each simulated point, the figure and place of its first use.
    let mut first_use: Vec<(usize, usize)> = Vec::new();
    let fig_slots: Vec<Vec<usize>> = fig_jobs
        .iter()
        .enumerate()
        .map(|(f, jobs)| {
            jobs.iter()
                .enumerate()
                .map(|(k, j)| {
                    *unique.entry(keys.key(j)).or_insert_with(|| {
                        first_use.push((f, k));
                        first_use.len() - 1
                    })
                })
                .collect()
        })
        .collect();
    drop(keys);
    drop(unique);
    let dc_plan = crate::datacenter::plan(&selected)?;
    let pvfs_plan = crate::pvfs::plan(&selected)?;
    progress.start(first_use.len() + dc_plan.points() + pvfs_plan.points());
    progress.message(&format!("{} figures", plan.len()));
    let outs: Vec<OnceLock<Result<interlab_model::Point, interlab_model::ModelError>>> = first_use.iter().map(|_| OnceLock::new()).collect();
    let mut tasks: Vec<Task> = first_use
        .iter()
        .zip(&outs)
        .map(|(&(f, k), slot)| {
            let job = &fig_jobs[f][k];
            Task::new(job.cost_estimate(), move || {
                let _ = slot.set(job.run());
                progress.tick();
            })
        })
        .collect();
    let tick = || progress.tick();
    let dc_tasks = dc_plan.tasks(&tick);
    let (dc_from, pvfs_from) = (tasks.len(), tasks.len() + dc_tasks.len());
    tasks.extend(dc_tasks);
    tasks.extend(pvfs_plan.tasks(&tick));
    let spans = run_longest_first(tasks);
    let span_of = |ids: &mut dyn Iterator<Item = usize>| -> f64 {
        let (a, b) = ids.fold((f64::INFINITY, 0.0f64), |(a, b), i| (a.min(spans[i].0), b.max(spans[i].1)));
        if a.is_finite() { b - a } else { 0.0 }
    };
    let mut timings: Vec<FigureTiming> = plan
        .iter()
        .zip(&fig_slots)
        .map(|((si, fi, exp), slots)| FigureTiming {
            what: format!("{}/{}", cat[*si].id, cat[*si].figures[*fi].id),
            points: point_count(exp),
            wall_s: span_of(&mut slots.iter().copied()),
        })
        .collect();
    timings.push(FigureTiming { what: "datacenter replays".into(), points: dc_plan.points(), wall_s: span_of(&mut (dc_from..pvfs_from)) });
    timings.push(FigureTiming { what: "pvfs".into(), points: pvfs_plan.points(), wall_s: span_of(&mut (pvfs_from..spans.len())) });
    timings.sort_by(|a, b| b.wall_s.total_cmp(&a.wall_s));
    let outs: Vec<Result<interlab_model::Point, interlab_model::ModelError>> =
        outs.into_iter().map(|o| o.into_inner().unwrap_or_else(|| Err(interlab_model::ModelError("the point was not run".into())))).collect();
    let figure_points: usize = fig_slots.iter().map(Vec::len).sum();
    // Every use of a point after its first is a simulation saved.
    let mut seen = vec![false; outs.len()];
    let shared_events: u64 = fig_slots.iter().flatten().filter(|&&u| std::mem::replace(&mut seen[u], true)).map(|&u| outs[u].as_ref().map_or(0, |p| p.events)).sum();
    let sharing = PointSharing { figure_points, simulated: first_use.len(), shared_events };
    let queue = QueueSpan {
        tasks: spans.len(),
        wall_s: spans.iter().map(|s| s.1).fold(0.0, f64::max),
        last_start_s: spans.iter().map(|s| s.0).fold(0.0, f64::max),
    };
    let runs = fig_jobs.iter().zip(&fig_slots).zip(&plan).map(|((jobs, slots), (_, _, exp))| assemble(exp, jobs, slots.iter().map(|&u| outs[u].clone()).collect()));
    let (dc, pvfs) = (dc_plan.finish(), pvfs_plan.finish());
    let mut results: BTreeMap<&str, FigureResults> = BTreeMap::new();
    let mut records = Vec::new();
    for ((si, fi, _), series) in plan.iter().zip(runs) {
        let (study, fig) = (&cat[*si], &cat[*si].figures[*fi]);
        let series = series?;
        for s in &series {
            records.extend(s.records.iter().map(|r| in_figure_unit(r.clone(), fig)));
        }
        results.entry(study.id).or_default().insert(fig.id.to_string(), series);
    }
    // Figures computed outside the experiment runner: data-center replays and PVFS.
    let outside_runner = dc?.into_iter().map(|(s, f)| (s, f, "replay", crate::datacenter::figure_defs(s)));
    let outside_runner = outside_runner.chain(pvfs?.into_iter().map(|(s, f)| (s, f, "pvfs", crate::pvfs::figure_defs(s))));
    for (study, figs, pattern, defs) in outside_runner {
        for def in &defs {
            let Some(series) = figs.get(def.id) else { continue };
            let testbed = claim_specs
                .iter()
                .find(|c| c.paper == study && c.figure == def.id)
                .or_else(|| claim_specs.iter().find(|c| c.paper == study))
                .map_or("", |c| c.testbed.as_str());
            records.extend(replay_records(study, pattern, def, series, testbed));
        }
        results.entry(study).or_default().extend(figs);
    }
    progress.finish();

    // Claims: computed ones from the studies run, null for the rest.
    let mut computed: BTreeMap<&str, Computed> = BTreeMap::new();
    for study in cat.iter().filter(|s| selected(s.id)) {
        let r = results.get(study.id).cloned().unwrap_or_default();
        for c in (study.claims)(&r).into_iter().chain(crate::datacenter::claims(study.id, &r)).chain(crate::pvfs::claims(study.id, &r)) {
            computed.insert(c.id, c);
        }
    }
    let claim_results: Vec<ClaimResult> = claim_specs
        .iter()
        .map(|spec| match computed.get(spec.id.as_str()) {
            Some(c) => evaluate(spec, c.value.clone(), Some(c.note.clone())),
            None if !selected(&spec.paper) => ClaimResult::not_run(spec),
            None => {
                let why = if cat.iter().any(|s| s.id == spec.paper) {
                    "not modelled yet (this figure's layer is planned)"
                } else {
                    "not modelled yet (study planned)"
                };
                evaluate(spec, None, Some(why.to_string()))
            }
        })
        .collect();
    let unknown: Vec<&&str> = computed.keys().filter(|id| !claim_specs.iter().any(|s| s.id == **id)).collect();
    if !unknown.is_empty() {
        return Err(format!("the study code computes claims missing from {claims_name}: {unknown:?}"));
    }

    // Report sections.
    let mut sections = Vec::new();
    for (id, title) in PAPERS {
        if !selected(id) {
            continue;
        }
        let Some(study) = cat.iter().find(|s| s.id == *id) else {
            sections.push(StudySection {
                id: id.to_string(),
                title: title.to_string(),
                summary: "Not modelled yet: its claims appear below as gaps.".into(),
                figures: vec![],
            });
            continue;
        };
        let r = &results[study.id];
        let mut figures = Vec::new();
        let dc_defs: Vec<_> = crate::datacenter::figure_defs(study.id).into_iter().chain(crate::pvfs::figure_defs(study.id)).collect();
        for fig in study.figures.iter().chain(&dc_defs) {
            let mut series: Vec<Series> = r[fig.id]
                .iter()
                .map(|s| Series {
                    label: s.label.clone(),
                    points: s.points.iter().map(|&(x, y)| (x as f64, y / fig.y_div)).collect(),
                    dashed: false,
                })
                .collect();
            if let Some((y, label)) = fig.y_reference {
                let xs = series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
                let (lo, hi) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| (a.min(x), b.max(x)));
                if lo.is_finite() {
                    series.push(Series { label: label.to_string(), points: vec![(lo, y), (hi, y)], dashed: true });
                }
            }
            let marks = claim_results
                .iter()
                .filter(|c| c.spec.paper == study.id && c.spec.figure == fig.id)
                // Only values in the plotted unit can be drawn on the plot.
                .filter(|c| axis_unit(fig.y_label).is_some_and(|u| u == c.spec.unit || u.ends_with(&format!(" {}", c.spec.unit))))
                .filter(|c| !computed.get(c.spec.id.as_str()).is_some_and(|k| k.mark_hidden))
                .filter_map(|c| match &c.spec.published {
                    Some(ClaimValue::Number(y)) => Some(Mark {
                        // Named by the claim's description: the key under the plot shows it.
                        label: format!("{}: {} published", c.spec.description.trim_end_matches('.'), fmt_value(*y, &c.spec.unit)),
                        claim_id: c.spec.id.clone(),
                        x: computed.get(c.spec.id.as_str()).and_then(|k| k.mark_x),
                        y: *y + computed.get(c.spec.id.as_str()).and_then(|k| k.mark_base).unwrap_or(0.0),
                    }),
                    _ => None,
                })
                .collect();
            let exp = plan.iter().find(|(si, fi, _)| cat[*si].id == study.id && cat[*si].figures[*fi].id == fig.id).map(|p| &p.2);
            figures.push(Figure {
                id: format!("{}-{}", study.id, fig.id),
                study: study.id.to_string(),
                title: format!("{} {}: {}", study.id, fig.id, fig.title),
                x_label: fig.x_label.into(),
                y_label: fig.y_label.into(),
                x_scale: fig.x_scale,
                y_scale: fig.y_scale,
                series,
                marks,
                caption: caption(exp.map(|e| e.description.as_str()).unwrap_or(""), fig.spec_path),
            });
        }
        sections.push(StudySection { id: study.id.into(), title: study.title.into(), summary: study.summary.into(), figures });
    }
    let events: u64 = records.iter().map(|r| r.events).sum();
    let elapsed_s = t0.elapsed().as_secs_f64();
    let report = Report {
        title: "interlab: reproduction of five interconnect studies".into(),
        version: interlab_experiment::VERSION.into(),
        generated_note: format!("{} (model, deterministic)", opts.command_line),
        studies: sections,
        claims: claim_results.clone(),
        footer: format!(
            "Model run time {elapsed_s:.1} s wall clock, {} simulated points, {:.1} million events. interlab {}.",
            records.len(),
            events as f64 / 1e6,
            interlab_experiment::VERSION
        ),
    };
    let files = write_report(&opts.out, &report).map_err(|e| e.to_string())?;
    write_records(&opts.out, &records)?;
    let _ = claims_json; // claims.json is written by write_report
    let outside = claim_results
        .iter()
        .filter(|c| c.status == interlab_report::ClaimStatus::Outside)
        .map(|c| {
            let shown = |v: &Option<ClaimValue>| match v {
                Some(ClaimValue::Number(x)) => format!("{} {}", interlab_report::format_sig(*x, 4), c.spec.unit),
                Some(v) => v.to_string(),
                None => "none".to_string(),
            };
            let tol = c.spec.judged_tolerance().map_or(String::new(), |t| format!(", tolerance {:.0} %", 100.0 * t));
            format!("{} = {} (published {}{tol})", c.spec.id, shown(&c.value), shown(&c.spec.published))
        })
        .collect();
    Ok(ReproduceOutput {
        files,
        counts: ClaimCounts::of(&claim_results),
        outside,
        records: records.len(),
        events,
        elapsed_s,
        not_modelled_studies,
        timings,
        sharing,
        queue,
    })
}

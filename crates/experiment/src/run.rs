//! Running an experiment on the model: every (series, size) point in parallel, results in
//! spec order (deterministic whatever the thread count).

use crate::point::PointJob;
use crate::spec::{Experiment, Measure, SeriesSpec, XAxis};
use crate::VERSION;
use interlab_model::{ModelError, Point};
use interlab_patterns::{PatternSpec, ResultRecord, RECORD_SCHEMA};
use rayon::prelude::*;
use std::path::Path;

/// The points of one series.
#[derive(Debug, Clone)]
pub struct SeriesResult {
    pub label: String,
    /// (x, value in `unit`): x is the message size in bytes, the distance in miles or the
    /// number of clients, as `x_axis` says.
    pub points: Vec<(u64, f64)>,
    /// What x is.
    pub x_axis: XAxis,
    /// (x, server CPU utilisation in percent), beside `points`.
    pub server_cpu: Vec<(u64, f64)>,
    /// "us" or "MB/s".
    pub unit: String,
    /// One record per point.
    pub records: Vec<ResultRecord>,
}

impl SeriesResult {
    /// Value at message size `size`, if measured.
    pub fn at(&self, size: u64) -> Option<f64> {
        self.points.iter().find(|(s, _)| *s == size).map(|(_, v)| *v)
    }

    /// Largest value.
    pub fn max(&self) -> f64 {
        self.points.iter().map(|(_, v)| *v).fold(f64::NAN, f64::max)
    }

    /// Smallest value.
    pub fn min(&self) -> f64 {
        self.points.iter().map(|(_, v)| *v).fold(f64::NAN, f64::min)
    }
}

fn record(exp: &Experiment, s: &SeriesSpec, spec: &PatternSpec, miles: Option<f64>, p: &interlab_model::Point) -> ResultRecord {
    ResultRecord {
        distance_miles: miles,
        clients: None,
        server_cpu_percent: Some(p.server_cpu_percent),
        x_name: None,
        x_value: None,
        schema: RECORD_SCHEMA,
        version: VERSION.to_string(),
        engine: "model".into(),
        experiment: exp.name.clone(),
        series: s.label.clone(),
        profile: s.setup.profile.id.clone(),
        pattern: spec.kind.name().into(),
        op: spec.op.name().into(),
        transport: match (s.setup.sock, s.setup.mpi) {
            (Some(k), _) => match s.setup.sock_mix {
                Some(b) => format!("{}|{}", k.describe(), b.describe()),
                None => k.describe(),
            },
            (_, Some(d)) => format!("mpi-{}", d.name()),
            _ => s.setup.service.name().into(),
        },
        ports: s.setup.ports.name().into(),
        processes: s.setup.procs_per_node,
        size_bytes: spec.size,
        metric: if s.measure == Measure::Connect {
            "connect_us".into()
        } else if p.unit == "us" {
            "latency_us".into()
        } else {
            "bandwidth_MBps".into()
        },
        value: p.value,
        unit: p.unit.into(),
        summary: p.summary,
        seed: exp.seed,
        warmup: spec.warmup,
        iterations: spec.iterations,
        window: spec.window,
        events: p.events,
        spec: exp.file.clone(),
    }
}

/// Number of points an experiment will simulate.
pub fn point_count(exp: &Experiment) -> usize {
    exp.series.iter().map(|s| s.points().len()).sum()
}

/// Runs every point; `tick` is called once per finished point (from worker threads).
pub fn run_experiment(exp: &Experiment, tick: &(dyn Fn() + Sync)) -> Result<Vec<SeriesResult>, String> {
    run_experiment_shard(exp, Shard::ALL, tick)
}

/// One of `of` shards of an experiment's points (`index` from 1): the points whose place
/// in spec order (series by series, each series' points in order) is `index - 1` modulo
/// `of`, so every shard gets a share of small and large points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: u32,
    pub of: u32,
}

impl Shard {
    /// Every point.
    pub const ALL: Shard = Shard { index: 1, of: 1 };

    /// Parses `I/N` (1 <= I <= N <= 100000).
    pub fn parse(s: &str) -> Result<Shard, String> {
        let (i, n) = s.split_once('/').ok_or_else(|| format!("`{s}`: expected I/N, e.g. 2/8"))?;
        let (i, n): (u32, u32) = (i.trim().parse().map_err(|_| format!("`{s}`: `{i}` is not a whole number"))?, n.trim().parse().map_err(|_| format!("`{s}`: `{n}` is not a whole number"))?);
        if n == 0 || n > 100_000 || i == 0 || i > n {
            return Err(format!("`{s}`: expected 1 <= I <= N <= 100000"));
        }
        Ok(Shard { index: i, of: n })
    }

    /// Whether the point at place `k` of spec order is in this shard.
    pub fn has(self, k: usize) -> bool {
        k % self.of as usize == (self.index - 1) as usize
    }

    /// The places in spec order of this shard's points.
    pub fn places(self, exp: &Experiment) -> Vec<usize> {
        (0..point_count(exp)).filter(|&k| self.has(k)).collect()
    }
}

/// The points of this shard, in spec order.
pub fn point_jobs(exp: &Experiment, shard: Shard) -> Vec<PointJob> {
    exp.series
        .iter()
        .enumerate()
        .flat_map(|(i, s)| s.points().into_iter().map(move |p| (i, p)))
        .enumerate()
        .filter(|(k, _)| shard.has(*k))
        .map(|(_, (i, pt))| PointJob::new(exp, i, pt))
        .collect()
}

/// Runs this shard's points; `tick` is called once per finished point.
pub fn run_experiment_shard(exp: &Experiment, shard: Shard, tick: &(dyn Fn() + Sync)) -> Result<Vec<SeriesResult>, String> {
    let jobs = point_jobs(exp, shard);
    let results: Vec<Result<Point, ModelError>> = jobs
        .par_iter()
        .map(|j| {
            let r = j.run();
            tick();
            r
        })
        .collect();
    assemble(exp, &jobs, results)
}

/// The series of `exp` from its points `jobs` (spec order) and their results, one each; the
/// first point that failed (in spec order) is the error.
pub fn assemble(exp: &Experiment, jobs: &[PointJob], results: Vec<Result<Point, ModelError>>) -> Result<Vec<SeriesResult>, String> {
    let mut out: Vec<SeriesResult> = exp
        .series
        .iter()
        .map(|s| SeriesResult { label: s.label.clone(), points: vec![], x_axis: s.x_axis(), server_cpu: vec![], unit: String::new(), records: vec![] })
        .collect();
    for (j, r) in jobs.iter().zip(results) {
        let (i, pt) = (j.series, j.pt);
        let s = &exp.series[i];
        let mut p = r.map_err(|e| format!("{}: series `{}`, size {} B: {e}", exp.file, s.label, pt.size))?;
        let x = pt.x(out[i].x_axis).round() as u64;
        let part = match s.measure {
            Measure::Total | Measure::Connect => None,
            Measure::First => s.setup.sock,
            Measure::Second => s.setup.sock_mix,
        };
        if let Some(k) = part {
            let name = k.describe();
            p.value = p.by_stack.iter().find(|x| x.0 == name).map_or(0.0, |x| x.1);
        }
        out[i].unit = p.unit.to_string();
        out[i].points.push((x, p.value));
        out[i].server_cpu.push((x, p.server_cpu_percent));
        let mut rec = record(exp, s, &j.spec, pt.miles, &p);
        rec.clients = (pt.clients > 1).then_some(pt.clients);
        rec.processes = pt.procs;
        pt.mark_sweep(out[i].x_axis, &mut rec);
        out[i].records.push(rec);
    }
    Ok(out)
}

/// `records` as JSON Lines: results.jsonl's text.
pub fn records_jsonl(records: &[ResultRecord]) -> String {
    records.iter().map(|r| serde_json::to_string(r).expect("record serialises") + "\n").collect()
}

/// `records` as CSV with every field flattened: results.csv's text.
pub fn records_csv(records: &[ResultRecord]) -> String {
    let mut text = format!("{}\n", ResultRecord::CSV_HEADER_FULL);
    for r in records {
        text.push_str(&r.csv_row_full());
        text.push('\n');
    }
    text
}

/// Writes `records` to `dir/results.jsonl` and `dir/results.csv`.
pub fn write_records(dir: &Path, records: &[ResultRecord]) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: cannot create directory: {e}", dir.display()))?;
    for (name, text) in [("results.jsonl", records_jsonl(records)), ("results.csv", records_csv(records))] {
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(())
}

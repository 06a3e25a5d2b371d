//! MPI series of a spec on the live engine: each becomes one `interlab mpi` run under mpirun
//! (two ranks; the CLI re-runs itself, see crates/cli/src/mpi_launch.rs), whose records take
//! the model's place in the series (engine `live`, transport `mpi`).
//!
//! | spec (`mpi = "rc"/"ud"/"uc"`) | live |
//! |---|---|
//! | `kind = "latency"` | `interlab mpi latency` (ping-pong, OSU's osu_latency) |
//! | `kind = "bandwidth"` | `interlab mpi bw` (window, then a reply: osu_bw), the spec's window |
//! | `kind = "bibw"` | `interlab mpi bibw` (osu_bibw) |
//!
//! The live MPI library picks its own protocol and path (here Open MPI over shared memory or
//! TCP), whatever design the spec names for the model; what the live run cannot reproduce is
//! refused naming the key: pipelined kinds, several rails (`ports`, `qps_per_port`),
//! distances, clients, several process pairs, `window_bytes`.

use crate::run::SeriesResult;
use crate::spec::{Experiment, Measure, SeriesSpec};
use interlab_model::params::ParamError;
use interlab_model::Ports;
use interlab_patterns::{ExtendedRecord, PatternKind};

/// One MPI series measured live.
#[derive(Debug, Clone, PartialEq)]
pub struct MpiSeriesJob {
    /// Index of the series in the spec.
    pub series: usize,
    /// `interlab mpi` pattern: `latency`, `bw` or `bibw`.
    pub pattern: &'static str,
    /// Message sizes, bytes.
    pub sizes: Vec<u64>,
    /// Messages per window (bw, bibw).
    pub window: u32,
    pub warmup: u32,
    pub iterations: u32,
}

fn err(exp: &Experiment, s: &SeriesSpec, key: &str, message: impl Into<String>) -> ParamError {
    ParamError { file: exp.file.clone(), key: key.to_string(), message: format!("series `{}`: {}", s.label, message.into()) }
}

/// The live MPI run of series `i` (which has `mpi`), or why it cannot run live (naming the key).
pub fn mpi_job(exp: &Experiment, i: usize) -> Result<MpiSeriesJob, ParamError> {
    let s = &exp.series[i];
    if s.setup.mpi.is_none() {
        return Err(err(exp, s, "mpi", "not an MPI series"));
    }
    let pattern = match s.pattern.kind {
        PatternKind::Latency => "latency",
        PatternKind::Bandwidth => "bw",
        PatternKind::BiBandwidth => "bibw",
        k => return Err(err(exp, s, "kind", format!("{}: live MPI runs latency, bandwidth and bibw (the OSU patterns)", k.name()))),
    };
    if s.measure == Measure::Connect {
        return Err(err(exp, s, "measure", "connect: MPI has no connection set-up to time"));
    }
    if s.setup.ports != Ports::One || s.setup.qps_per_port != 1 {
        return Err(err(exp, s, if s.setup.ports != Ports::One { "ports" } else { "qps_per_port" }, "the live MPI library chooses its own rails; run several rails with --engine model"));
    }
    if s.window_bytes.is_some() {
        return Err(err(exp, s, "window_bytes", "live MPI windows are a count of messages (`window`), as OSU's"));
    }
    for pt in s.points() {
        if pt.miles.is_some() {
            return Err(err(exp, s, "distance_miles", "the live engine measures the network it is given; a wide-area distance is model-only"));
        }
        if pt.clients > 1 {
            return Err(err(exp, s, "clients", "live MPI runs one pair of ranks"));
        }
        if pt.procs > 1 {
            return Err(err(exp, s, "processes_per_node", "live MPI runs one pair of ranks (`mpirun -np 4 interlab mpi multi-pair` measures several)"));
        }
    }
    let window = if pattern == "latency" { 1 } else { s.pattern.window };
    Ok(MpiSeriesJob { series: i, pattern, sizes: s.sizes.clone(), window, warmup: s.pattern.warmup, iterations: s.pattern.iterations.max(1) })
}

/// Every MPI series' live run, checked before anything runs.
pub fn mpi_jobs(exp: &Experiment) -> Result<Vec<MpiSeriesJob>, String> {
    (0..exp.series.len()).filter(|&i| exp.series[i].setup.mpi.is_some()).map(|i| mpi_job(exp, i).map_err(|e| e.to_string())).collect()
}

/// The records of one live MPI run (JSON Lines of `interlab mpi --json`) as the series'
/// records: series label, experiment, seed and spec of the spec; fills `into`.
pub fn take_records(exp: &Experiment, job: &MpiSeriesJob, jsonl: &str, into: &mut SeriesResult) -> Result<Vec<ExtendedRecord>, String> {
    let s = &exp.series[job.series];
    let mut out = Vec::new();
    for (n, line) in jsonl.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let mut r: ExtendedRecord = serde_json::from_str(line).map_err(|e| format!("series `{}`: live MPI record {}: {e}", s.label, n + 1))?;
        if !job.sizes.contains(&r.record.size_bytes) {
            return Err(format!("series `{}`: live MPI record of {} B, a size the series does not have", s.label, r.record.size_bytes));
        }
        r.record.series = s.label.clone();
        r.record.experiment = exp.name.clone();
        r.record.seed = exp.seed;
        r.record.spec = exp.file.clone();
        into.unit = r.record.unit.clone();
        if r.record.value.is_finite() {
            into.points.push((r.record.size_bytes, r.record.value));
        }
        into.records.push(r.record.clone());
        out.push(r);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_experiment;

    fn exp(series: &str) -> Experiment {
        let text = format!("[experiment]\nname = \"t\"\nprofile = \"woodcrest-infinihost-longbow\"\n[pattern]\nsizes = \"1,64,4K\"\nop = \"send\"\n{series}");
        parse_experiment("t.toml", &text, None).unwrap()
    }

    #[test]
    fn mpi_series_map_to_interlab_mpi_runs() {
        let e = exp("kind = \"latency\"\nmpi = \"rc\"");
        let j = mpi_job(&e, 0).unwrap();
        assert_eq!((j.pattern, j.sizes.clone(), j.window), ("latency", vec![1, 64, 4096], 1));
        let e = exp("kind = \"bandwidth\"\nmpi = \"ud\"\nwindow = 16");
        let j = mpi_job(&e, 0).unwrap();
        assert_eq!((j.pattern, j.window), ("bw", 16));
        assert_eq!(mpi_job(&exp("kind = \"bibw\"\nmpi = \"rc\""), 0).unwrap().pattern, "bibw");
        assert_eq!(mpi_jobs(&exp("kind = \"latency\"\nmpi = \"rc\"")).unwrap().len(), 1);
        // Without an MPI launcher (the Python package), the live engine refuses MPI by key.
        let e = exp("kind = \"latency\"\nmpi = \"rc\"");
        let m = crate::live::live_workload(&e, &e.series[0], &e.series[0].points()[0], 1).unwrap_err().to_string();
        assert!(m.contains("key `mpi`") && m.contains("mpirun"), "{m}");
        // A verbs series is not an MPI job.
        assert_eq!(mpi_jobs(&exp("kind = \"latency\"")).unwrap(), vec![]);
    }

    #[test]
    fn what_live_mpi_cannot_do_is_refused_naming_the_key() {
        for (series, key) in [
            ("kind = \"bandwidth\"\nmpi = \"rc\"\nports = \"bind\"", "ports"),
            ("kind = \"bandwidth\"\nmpi = \"rc\"\nwindow_bytes = 65536", "window_bytes"),
            ("kind = \"latency\"\nmpi = \"rc\"\ndistance_miles = [0, 100]", "distance_miles"),
            ("kind = \"bandwidth\"\nmpi = \"rc\"\nprocesses_per_node = [2]", "processes_per_node"),
        ] {
            let e = exp(series);
            let m = mpi_job(&e, 0).unwrap_err().to_string();
            assert!(m.contains(&format!("key `{key}`")), "{series}: {m}");
        }
    }

    #[test]
    fn records_take_the_series_names() {
        let e = exp("kind = \"latency\"\nmpi = \"rc\"");
        let j = mpi_job(&e, 0).unwrap();
        let line = "{\"schema\":1,\"version\":\"0.1.0\",\"engine\":\"live\",\"experiment\":\"mpi\",\"series\":\"mpi\",\"profile\":\"vm\",\"pattern\":\"latency\",\"op\":\"send\",\"transport\":\"mpi\",\"ports\":\"one\",\"processes\":1,\"size_bytes\":64,\"metric\":\"latency_us\",\"value\":0.5,\"unit\":\"us\",\"seed\":0,\"warmup\":2,\"iterations\":20,\"window\":1,\"events\":0,\"spec\":\"interlab mpi latency\",\"peers\":[\"vm\",\"vm\"]}";
        let mut sr = SeriesResult { label: "MPI".into(), points: vec![], x_axis: crate::XAxis::Size, server_cpu: vec![], unit: String::new(), records: vec![] };
        let recs = take_records(&e, &j, line, &mut sr).unwrap();
        assert_eq!(recs[0].record.series, e.series[0].label);
        assert_eq!(recs[0].record.spec, "t.toml");
        assert_eq!(sr.points, vec![(64, 0.5)]);
        assert!(take_records(&e, &j, &line.replace("\"size_bytes\":64", "\"size_bytes\":65"), &mut sr).unwrap_err().contains("65 B"));
    }
}

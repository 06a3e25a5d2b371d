//! The engine behind the Python package `interlab` (python/interlab): a small API of
//! strings in, strings out (spec text or JSON in; results.csv text, JSON out) so that the
//! Python side builds its DataFrames from exactly the bytes the CLI writes.
//!
//! The pure-Rust functions here are what the extension module exposes; the PyO3 module
//! itself is compiled only with the `python` feature (maturin turns it on), so the
//! workspace builds and tests without Python.

use interlab_experiment::{parse_experiment, run_experiment, Engine};
use interlab_model::params::ParamError;
use interlab_model::Profile;
use interlab_patterns::ResultRecord;
use rayon::prelude::*;
use std::path::Path;

#[cfg(feature = "python")]
mod py;

/// An error as the CLI reports it: a spec or profile error (file, key, message) or a
/// failed run.
#[derive(Debug, Clone, PartialEq)]
pub enum Error {
    /// A file/key error in a spec or profile (the CLI's exit status 2).
    Spec(ParamError),
    /// Bad input that is not a file/key error (an unknown study, an unreadable file).
    Usage(String),
    /// The run failed (the CLI's exit status 1).
    Run(String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Spec(e) => write!(f, "{e}"),
            Error::Usage(m) | Error::Run(m) => write!(f, "{m}"),
        }
    }
}

/// TOML text of a spec given as JSON (a dict on the Python side).
pub fn toml_of_json(file: &str, json: &str) -> Result<String, Error> {
    let v: serde_json::Value = serde_json::from_str(json).map_err(|e| Error::Usage(format!("{file}: not a spec: {e}")))?;
    if !v.is_object() {
        return Err(Error::Usage(format!("{file}: a spec is a table (dict) with [experiment], [pattern], [transport] and [[series]]")));
    }
    let t: toml::Table = toml::Table::try_from(v).map_err(|e| Error::Usage(format!("{file}: cannot be written as TOML: {e}")))?;
    toml::to_string(&t).map_err(|e| Error::Usage(format!("{file}: cannot be written as TOML: {e}")))
}

/// results.csv text (header and one row per record), as `interlab run` writes it.
pub fn csv_of(records: &[ResultRecord]) -> String {
    interlab_experiment::records_csv(records)
}

/// Runs spec `text` (read from `file`; relative profile paths resolve against `base`) on
/// the model; returns its results.csv text.
pub fn run_model(file: &str, text: &str, base: Option<&Path>) -> Result<String, Error> {
    // Whatever `engine` the spec names, as `interlab run --engine model` does.
    run_engine(file, text, base, "model", &LiveOptions::default()).map(|(csv, _)| csv)
}

/// How the live engine reaches its daemons (`interlab run --peer/--auth-token`).
#[derive(Debug, Clone, Default)]
pub struct LiveOptions {
    /// Daemons, HOST[:PORT]; empty: the spec's `[live] peers`.
    pub peers: Vec<String>,
    /// The shared secret; `None`: `INTERLAB_AUTH_TOKEN` when set.
    pub auth_token: Option<String>,
    /// Seconds to wait for a daemon.
    pub connect_timeout_s: f64,
}

/// Runs spec `text` on `engine` (`model`, `live` or `both`, as `interlab run --engine`);
/// returns results.csv text (model records first with `both`) and the live points that
/// failed (the others are kept).
pub fn run_engine(file: &str, text: &str, base: Option<&Path>, engine: &str, live: &LiveOptions) -> Result<(String, Vec<String>), Error> {
    let exp = parse_experiment(file, text, base).map_err(Error::Spec)?;
    let engine = Engine::from_name(engine).ok_or_else(|| Error::Usage(format!("engine `{engine}`: expected one of {}", Engine::NAMES.join(", "))))?;
    let mut records: Vec<ResultRecord> = Vec::new();
    if engine == Engine::Model {
        let series = run_experiment(&exp, &|| {}).map_err(Error::Run)?;
        return Ok((csv_of(&series.into_iter().flat_map(|s| s.records).collect::<Vec<_>>()), vec![]));
    }
    let token = match &live.auth_token {
        Some(t) => Some(interlab_live::auth::Token::new(t).map_err(|e| Error::Usage(format!("auth_token: {e}")))?),
        None => match std::env::var(interlab_live::auth::Token::ENV) {
            Ok(t) if !t.is_empty() => Some(interlab_live::auth::Token::new(&t).map_err(|e| Error::Usage(format!("{}: {e}", interlab_live::auth::Token::ENV)))?),
            _ => None,
        },
    };
    let timeout = std::time::Duration::from_secs_f64(live.connect_timeout_s.max(0.001));
    let target = interlab_experiment::live::LiveTarget::new(&exp, &live.peers, token, timeout).map_err(Error::Usage)?;
    // Everything the live engine cannot run is refused (by key) before anything runs.
    interlab_experiment::live::live_points(&exp, &target).map_err(Error::Usage)?;
    if engine == Engine::Both {
        let series = run_experiment(&exp, &|| {}).map_err(Error::Run)?;
        records.extend(series.into_iter().flat_map(|s| s.records));
    }
    let run = interlab_experiment::live::run_live(&exp, &target, &|_| {}).map_err(Error::Run)?;
    records.extend(run.records.iter().map(|r| r.record.clone()));
    Ok((csv_of(&records), run.errors))
}

/// Checks a spec; returns (experiment name, series count, point count).
pub fn check(file: &str, text: &str, base: Option<&Path>) -> Result<(String, usize, usize), Error> {
    let exp = parse_experiment(file, text, base).map_err(Error::Spec)?;
    Ok((exp.name.clone(), exp.series.len(), interlab_experiment::point_count(&exp)))
}

/// One spec of a batch: (file name, spec as JSON or TOML text, base directory).
#[derive(Debug, Clone)]
pub struct BatchSpec {
    pub file: String,
    /// TOML text, or JSON when `json` is set.
    pub text: String,
    pub json: bool,
    pub base: Option<String>,
}

/// Runs every spec of a batch (in parallel); one result per spec, in order.
pub fn run_batch(specs: &[BatchSpec]) -> Vec<Result<String, Error>> {
    specs
        .par_iter()
        .map(|s| {
            let text = if s.json { toml_of_json(&s.file, &s.text)? } else { s.text.clone() };
            run_model(&s.file, &text, s.base.as_deref().map(Path::new))
        })
        .collect()
}

/// Built-in profiles: (id, description).
pub fn profiles() -> Result<Vec<(String, String)>, Error> {
    interlab_model::profile::BUILTIN
        .iter()
        .map(|(id, _)| Profile::load(id).map(|p| (p.id, p.description)).map_err(Error::Spec))
        .collect()
}

/// One profile (a built-in id or a file path), validated; returns (id, description, the
/// profile's tables as JSON: every parameter with its `value` and `src` provenance).
pub fn profile(id_or_path: &str) -> Result<(String, String, String), Error> {
    let p = Profile::load(id_or_path).map_err(Error::Spec)?;
    let text = match interlab_model::profile::BUILTIN.iter().find(|(i, _)| *i == id_or_path) {
        Some((_, text)) => text.to_string(),
        None => std::fs::read_to_string(id_or_path).map_err(|e| Error::Usage(format!("{id_or_path}: {e}")))?,
    };
    let t: toml::Table = text.parse().map_err(|e| Error::Usage(format!("{id_or_path}: {e}")))?;
    let json = serde_json::to_string(&t).map_err(|e| Error::Usage(format!("{id_or_path}: {e}")))?;
    Ok((p.id, p.description, json))
}

/// Runs `interlab reproduce` for `studies` (empty: all) into `out`.
pub fn reproduce(studies: &[String], out: &Path) -> Result<(), Error> {
    let opts = interlab_studies::ReproduceOptions {
        out: out.to_path_buf(),
        studies: studies.to_vec(),
        claims_csv: None,
        command_line: format!("python: interlab.reproduce({studies:?})"),
    };
    interlab_studies::reproduce(&opts, &interlab_studies::NoProgress).map_err(|e| {
        if e.starts_with("--study ") {
            Error::Usage(e)
        } else {
            Error::Run(e)
        }
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: &str = r#"{"experiment": {"name": "t", "profile": "xeon-mt25208-pcie"},
        "pattern": {"kind": "latency", "op": "send", "sizes": [8, 64], "iterations": 20, "warmup": 2},
        "series": [{"label": "rc"}]}"#;

    #[test]
    fn a_json_spec_runs_to_results_csv() {
        let text = toml_of_json("<dict>", SPEC).unwrap();
        let csv = run_model("<dict>", &text, None).unwrap();
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines[0], ResultRecord::CSV_HEADER_FULL);
        assert_eq!(lines.len(), 3, "{csv}");
    }

    #[test]
    fn a_bad_key_names_file_and_key() {
        let bad = SPEC.replace("\"label\"", "\"lable\"");
        let text = toml_of_json("<dict>", &bad).unwrap();
        let Err(Error::Spec(e)) = run_model("<dict>", &text, None) else { panic!("accepted a bad key") };
        assert_eq!(e.file, "<dict>");
        assert!(e.key.contains("lable"), "{e}");
    }

    #[test]
    fn profiles_carry_provenance() {
        assert!(!profiles().unwrap().is_empty());
        let (id, _, json) = profile("epyc-hdr-pcie4").unwrap();
        assert_eq!(id, "epyc-hdr-pcie4");
        assert!(json.contains("\"src\""));
    }
}

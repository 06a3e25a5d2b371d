//! The extension module `interlab._core` (only with the `python` feature).

use crate::{BatchSpec, Error};
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use std::path::Path;

create_exception!(_core, InterlabError, PyException, "An interlab error: the message is the CLI's.");
create_exception!(_core, SpecError, InterlabError, "A spec or profile error: `.file`, `.key` and `.message` as the CLI names them.");
create_exception!(_core, UsageError, InterlabError, "Bad input that is not a file/key error (an unknown study, an unreadable file).");
create_exception!(_core, RunError, InterlabError, "The run failed.");

fn to_py(py: Python<'_>, e: Error) -> PyErr {
    let msg = e.to_string();
    match e {
        Error::Spec(p) => {
            let err = SpecError::new_err(msg);
            let v = err.value(py);
            let _ = v.setattr("file", p.file);
            let _ = v.setattr("key", p.key);
            let _ = v.setattr("message", p.message);
            err
        }
        Error::Usage(_) => UsageError::new_err(msg),
        Error::Run(_) => RunError::new_err(msg),
    }
}

/// Runs TOML spec `text` read from `file` on the model; returns results.csv text.
#[pyfunction]
#[pyo3(signature = (file, text, base=None))]
fn run_model(py: Python<'_>, file: String, text: String, base: Option<String>) -> PyResult<String> {
    py.allow_threads(|| crate::run_model(&file, &text, base.as_deref().map(Path::new))).map_err(|e| to_py(py, e))
}

/// Runs TOML spec `text` on `engine` (model, live, both): (results.csv text, failed live points).
#[pyfunction]
#[pyo3(signature = (file, text, base, engine, peers, auth_token=None, connect_timeout_s=5.0))]
#[allow(clippy::too_many_arguments)]
fn run_engine(
    py: Python<'_>,
    file: String,
    text: String,
    base: Option<String>,
    engine: String,
    peers: Vec<String>,
    auth_token: Option<String>,
    connect_timeout_s: f64,
) -> PyResult<(String, Vec<String>)> {
    let live = crate::LiveOptions { peers, auth_token, connect_timeout_s };
    py.allow_threads(|| crate::run_engine(&file, &text, base.as_deref().map(Path::new), &engine, &live)).map_err(|e| to_py(py, e))
}

/// TOML text of a spec given as JSON.
#[pyfunction]
fn toml_of_json(py: Python<'_>, file: String, json: String) -> PyResult<String> {
    crate::toml_of_json(&file, &json).map_err(|e| to_py(py, e))
}

/// Checks a spec: (name, series, points).
#[pyfunction]
#[pyo3(signature = (file, text, base=None))]
fn check(py: Python<'_>, file: String, text: String, base: Option<String>) -> PyResult<(String, usize, usize)> {
    crate::check(&file, &text, base.as_deref().map(Path::new)).map_err(|e| to_py(py, e))
}

/// Runs a batch of JSON specs [(file, json, base)] in parallel; one (ok, csv-or-message,
/// kind) per spec, in order: a failed spec does not stop the others.
#[pyfunction]
fn run_batch(py: Python<'_>, specs: Vec<(String, String, Option<String>)>) -> Vec<(bool, String, String)> {
    let specs: Vec<BatchSpec> = specs.into_iter().map(|(file, text, base)| BatchSpec { file, text, json: true, base }).collect();
    py.allow_threads(|| crate::run_batch(&specs))
        .into_iter()
        .map(|r| match r {
            Ok(csv) => (true, csv, String::new()),
            Err(e) => {
                let kind = match &e {
                    Error::Spec(_) => "spec",
                    Error::Usage(_) => "usage",
                    Error::Run(_) => "run",
                };
                (false, e.to_string(), kind.to_string())
            }
        })
        .collect()
}

/// Built-in profiles: [(id, description)].
#[pyfunction]
fn profiles(py: Python<'_>) -> PyResult<Vec<(String, String)>> {
    crate::profiles().map_err(|e| to_py(py, e))
}

/// One profile: (id, description, tables as JSON).
#[pyfunction]
fn profile(py: Python<'_>, id_or_path: String) -> PyResult<(String, String, String)> {
    crate::profile(&id_or_path).map_err(|e| to_py(py, e))
}

/// Reproduces `studies` (empty: all) into directory `out`.
#[pyfunction]
fn reproduce(py: Python<'_>, studies: Vec<String>, out: String) -> PyResult<()> {
    py.allow_threads(|| crate::reproduce(&studies, Path::new(&out))).map_err(|e| to_py(py, e))
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("InterlabError", py.get_type::<InterlabError>())?;
    m.add("SpecError", py.get_type::<SpecError>())?;
    m.add("UsageError", py.get_type::<UsageError>())?;
    m.add("RunError", py.get_type::<RunError>())?;
    m.add("VERSION", interlab_experiment::VERSION)?;
    m.add_function(wrap_pyfunction!(run_model, m)?)?;
    m.add_function(wrap_pyfunction!(run_engine, m)?)?;
    m.add_function(wrap_pyfunction!(toml_of_json, m)?)?;
    m.add_function(wrap_pyfunction!(check, m)?)?;
    m.add_function(wrap_pyfunction!(run_batch, m)?)?;
    m.add_function(wrap_pyfunction!(profiles, m)?)?;
    m.add_function(wrap_pyfunction!(profile, m)?)?;
    m.add_function(wrap_pyfunction!(reproduce, m)?)?;
    Ok(())
}

//! Helpers to compute claims from simulated series.

use interlab_experiment::SeriesResult;
use interlab_report::ClaimValue;
use std::collections::BTreeMap;

/// Results of a study's figures: figure id -> series.
pub type FigureResults = BTreeMap<String, Vec<SeriesResult>>;

/// A claim value computed from series, with where to draw the published value.
#[derive(Debug, Clone)]
pub struct Computed {
    pub id: &'static str,
    pub value: Option<ClaimValue>,
    /// How it was computed (shown in the report).
    pub note: String,
    /// x (message size, bytes) at which to mark the published value; None = horizontal line.
    pub mark_x: Option<f64>,
    /// For a claim that is a difference over another curve (`SDP takes 500 us more than
    /// IPoIB`): that curve's value, so the published value is drawn at base + published.
    pub mark_base: Option<f64>,
    /// The published value is no point of the plot (see [`unmarked`]).
    pub mark_hidden: bool,
}

/// Finds series `label` of figure `fig`.
pub fn series<'a>(r: &'a FigureResults, fig: &str, label: &str) -> Result<&'a SeriesResult, String> {
    r.get(fig)
        .ok_or_else(|| format!("figure {fig} was not run"))?
        .iter()
        .find(|s| s.label == label)
        .ok_or_else(|| format!("figure {fig} has no series `{label}`"))
}

/// A numeric claim: `f` computes (value, note, mark x); errors become a null value with the
/// reason as note.
pub fn num(id: &'static str, f: impl FnOnce() -> Result<(f64, String, Option<f64>), String>) -> Computed {
    match f() {
        Ok((v, note, x)) if v.is_finite() => Computed { id, value: Some(ClaimValue::Number(v)), note, mark_x: x, mark_base: None, mark_hidden: false },
        Ok((v, note, _)) => Computed { id, value: None, note: format!("non-finite result {v}: {note}"), mark_x: None, mark_base: None, mark_hidden: false },
        Err(e) => Computed { id, value: None, note: e, mark_x: None, mark_base: None, mark_hidden: false },
    }
}

/// A numeric claim that is a difference over another value: `f` computes (value, note,
/// mark x, the value it is a difference over); the published value is drawn that far above
/// it.
pub fn num_over(id: &'static str, f: impl FnOnce() -> Result<(f64, String, Option<f64>, f64), String>) -> Computed {
    match f() {
        Ok((v, note, x, base)) => Computed { mark_base: Some(base).filter(|b| b.is_finite()), ..num(id, || Ok((v, note, x))) },
        Err(e) => num(id, || Err(e)),
    }
}

/// A claim in the plotted unit that is no point of the plot (a slope, a rate per added
/// node): its published value is listed, not drawn.
pub fn unmarked(c: Computed) -> Computed {
    Computed { mark_hidden: true, ..c }
}

/// A boolean claim.
pub fn boolean(id: &'static str, f: impl FnOnce() -> Result<(bool, String), String>) -> Computed {
    match f() {
        Ok((b, note)) => Computed { id, value: Some(ClaimValue::Bool(b)), note, mark_x: None, mark_base: None, mark_hidden: false },
        Err(e) => Computed { id, value: None, note: e, mark_x: None, mark_base: None, mark_hidden: false },
    }
}

/// Peak of a series: (value, note).
pub fn peak(s: &SeriesResult) -> (f64, String) {
    let (size, v) = s.points.iter().copied().fold((0, f64::NAN), |acc, p| if p.1 > acc.1 || acc.1.is_nan() { p } else { acc });
    (v, format!("peak of `{}` ({} B)", s.label, size))
}

/// Highest peak among series `labels` of figure `fig`: (value, note, no mark x).
pub fn peak_over(r: &FigureResults, fig: &str, labels: &[&str]) -> Result<(f64, String, Option<f64>), String> {
    let mut best: Option<(f64, String)> = None;
    for l in labels {
        let (v, note) = peak(series(r, fig, l)?);
        if best.as_ref().is_none_or(|b| v > b.0) {
            best = Some((v, note));
        }
    }
    let (v, note) = best.ok_or("no series named")?;
    let note = if labels.len() > 1 { format!("{note} (highest of {})", labels.join(", ")) } else { note };
    Ok((v, note, None))
}

/// Value at the smallest message size: (value, note, x).
pub fn smallest(s: &SeriesResult) -> Result<(f64, String, Option<f64>), String> {
    let &(size, v) = s.points.iter().min_by_key(|p| p.0).ok_or("empty series")?;
    Ok((v, format!("`{}` at {size} B", s.label), Some(size as f64)))
}

/// Mean of a series over the x values `keep` accepts.
pub fn mean_where(s: &SeriesResult, keep: impl Fn(u64) -> bool) -> Result<f64, String> {
    let v: Vec<f64> = s.points.iter().filter(|p| keep(p.0)).map(|p| p.1).collect();
    if v.is_empty() {
        return Err(format!("`{}` has no points in the range", s.label));
    }
    Ok(v.iter().sum::<f64>() / v.len() as f64)
}

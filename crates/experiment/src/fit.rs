//! Fitting a profile's calibratable parameters to perftest and OSU outputs
//! (`interlab calibrate --from FILE...`; the files are read by [`crate::toolout`]).
//!
//! The fit is square and identifiable by construction: every fitted parameter (a *knob*)
//! is paired with exactly one measured point (its *anchor*), a point of the regime that
//! parameter governs (small-message latency: per-message adapter, host and MPI costs;
//! large-message bandwidth: bus or link efficiency; the largest eager MPI size: the copy rate),
//! and only when the model's value at that point actually moves with the parameter
//! (elasticity at least [`MIN_ELASTICITY`] at the base). A parameter no input constrains
//! is kept with its base value and provenance; asking for it by name is refused. The
//! anchors are then solved together (Newton's method on the model, finite-difference
//! Jacobian, bounds), so couplings (an MPI latency contains the adapter's costs) are
//! honoured. Every other point read is predicted, not fitted.
//!
//! Calibratable: a knob's parameter whose base value is not from a primary or secondary
//! source (tag V or S); reasoned (R), derived (D) and earlier calibrated (C) values are
//! replaced, and the written value is tagged C naming the file and line it was fitted to.

use crate::calibrate::model_for_tool;
use crate::toolout::{Tool, ToolOutput, ToolPoint};
use interlab_live::calibrate::{num, rewrite_profile, Entry};
use interlab_model::bus::BusSpec;
use interlab_model::Profile;
use std::sync::Arc;

/// Smallest |d ln(model) / d ln(parameter)| at its anchor for a point to constrain a
/// parameter: a 10 % change of the parameter (or of its typical scale) must move the point
/// by at least 0.2 %.
pub const MIN_ELASTICITY: f64 = 0.02;
/// Newton iterations at most.
const MAX_ITERATIONS: usize = 12;
/// An anchor is reached when the model is within this fraction of it.
const TOLERANCE: f64 = 1e-4;

/// Which point of a file may anchor a knob.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Regime {
    /// The smallest message.
    Smallest,
    /// The largest message.
    Largest,
    /// The largest message the MPI library sends eagerly (copied), not the smallest.
    LargestEager,
}

/// A tool class a knob may be anchored to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    WriteLat,
    SendLat,
    ReadLat,
    PerftestBw,
    OsuLat,
    OsuBw,
}

impl Class {
    fn of(t: Tool) -> Class {
        match t {
            Tool::PerftestLat { op: "send" } => Class::SendLat,
            Tool::PerftestLat { op: "rdma_read" } => Class::ReadLat,
            Tool::PerftestLat { .. } => Class::WriteLat,
            Tool::PerftestBw { .. } => Class::PerftestBw,
            Tool::OsuLatency => Class::OsuLat,
            Tool::OsuBw | Tool::OsuBibw => Class::OsuBw,
        }
    }
}

/// A calibratable parameter, `key` = (section, key) in the profile.
pub struct Knob {
    pub key: (&'static str, &'static str),
    /// What it is, for the report.
    pub what: &'static str,
    /// Which inputs constrain it, for the report when none does.
    pub needs: &'static str,
    anchors: &'static [(Class, Regime)],
    /// Allowed range of the value, in its unit.
    min: f64,
    max: f64,
    /// The parameter's plausible scale, in its unit: elasticities are taken against the
    /// larger of it and the value (a change of a tenth of it must move the anchor by at
    /// least [`MIN_ELASTICITY`]/10), and finite differences are a fraction of it.
    typical: f64,
    integer: bool,
}

/// The knobs, in the order they claim anchors.
pub const KNOBS: &[Knob] = &[
    Knob {
        key: ("adapter", "tx_wqe_ns"),
        what: "adapter per-message cost (send engine time per work request)",
        needs: "ib_write_lat (or ib_send_lat) at a small size",
        anchors: &[(Class::WriteLat, Regime::Smallest), (Class::SendLat, Regime::Smallest)],
        min: 0.0,
        max: 1e6,
        typical: 100.0,
        integer: false,
    },
    Knob {
        key: ("host", "cqe_poll_ns"),
        what: "host cost of consuming one completion",
        needs: "ib_send_lat at a small size, with ib_write_lat for the adapter costs",
        anchors: &[(Class::SendLat, Regime::Smallest)],
        min: 0.0,
        max: 1e6,
        typical: 100.0,
        integer: false,
    },
    Knob {
        key: ("adapter", "responder_setup_ns"),
        what: "adapter responder set-up before an RDMA read response",
        needs: "ib_read_lat at a small size (with ib_write_lat for the adapter's per-message cost)",
        anchors: &[(Class::ReadLat, Regime::Smallest)],
        min: 0.0,
        max: 1e6,
        typical: 300.0,
        integer: false,
    },
    Knob {
        key: ("mpi", "overhead_ns"),
        what: "MPI library CPU time per message at each end",
        needs: "osu_latency at a small size (and a profile with [mpi])",
        anchors: &[(Class::OsuLat, Regime::Smallest)],
        min: 0.0,
        max: 1e6,
        typical: 200.0,
        integer: false,
    },
    Knob {
        key: ("bus", "dllp_fraction"),
        what: "PCIe efficiency (share of the bus taken by DLLPs and SKPs)",
        needs: "ib_*_bw (or osu_bw) at a large size on a bus-bound path",
        anchors: &[(Class::PerftestBw, Regime::Largest), (Class::OsuBw, Regime::Largest)],
        min: 0.0,
        max: 0.5,
        typical: 0.05,
        integer: false,
    },
    Knob {
        key: ("link", "framing_bytes"),
        what: "link efficiency (framing bytes per packet)",
        needs: "ib_*_bw (or osu_bw) at a large size on a link-bound path",
        anchors: &[(Class::PerftestBw, Regime::Largest), (Class::OsuBw, Regime::Largest)],
        min: 0.0,
        max: 1024.0,
        typical: 128.0,
        integer: true,
    },
    Knob {
        key: ("mpi", "copy_mbytes_per_s"),
        what: "MPI copy rate through library buffers (eager messages)",
        needs: "osu_bw or osu_latency at the largest eager size (and a profile with [mpi])",
        anchors: &[(Class::OsuBw, Regime::LargestEager), (Class::OsuLat, Regime::LargestEager)],
        min: 10.0,
        max: 1e7,
        typical: 1000.0,
        integer: false,
    },
];

impl Knob {
    /// The knob's name, `section.key`.
    pub fn name(&self) -> String {
        format!("{}.{}", self.key.0, self.key.1)
    }
}

/// A parameter's value in a profile, if the profile has it.
fn get(p: &Profile, section: &str, key: &str) -> Option<f64> {
    Some(match (section, key) {
        ("adapter", "tx_wqe_ns") => p.adapter.tx_wqe_ns,
        ("adapter", "responder_setup_ns") => p.adapter.responder_setup_ns,
        ("host", "cqe_poll_ns") => p.host.cqe_poll_ns,
        ("mpi", "overhead_ns") => p.mpi.as_ref()?.overhead_ns,
        ("mpi", "copy_mbytes_per_s") => p.mpi.as_ref()?.copy_mbytes_per_s,
        ("bus", "dllp_fraction") => match &p.bus {
            BusSpec::Pcie(b) => b.dllp_fraction,
            _ => return None,
        },
        ("link", "framing_bytes") => p.link.framing_bytes as f64,
        _ => return None,
    })
}

fn set(p: &mut Profile, section: &str, key: &str, v: f64) {
    match (section, key) {
        ("adapter", "tx_wqe_ns") => p.adapter.tx_wqe_ns = v,
        ("adapter", "responder_setup_ns") => p.adapter.responder_setup_ns = v,
        ("host", "cqe_poll_ns") => p.host.cqe_poll_ns = v,
        ("mpi", "overhead_ns") => {
            if let Some(m) = p.mpi.as_mut() {
                m.overhead_ns = v
            }
        }
        ("mpi", "copy_mbytes_per_s") => {
            if let Some(m) = p.mpi.as_mut() {
                m.copy_mbytes_per_s = v
            }
        }
        ("bus", "dllp_fraction") => {
            if let BusSpec::Pcie(b) = &mut p.bus {
                b.dllp_fraction = v
            }
        }
        ("link", "framing_bytes") => p.link.framing_bytes = v.round().clamp(0.0, u32::MAX as f64) as u32,
        _ => {}
    }
}

/// The profile with knob `k` at `x`.
fn with_knob(p: &mut Profile, k: &Knob, x: f64) {
    set(p, k.key.0, k.key.1, if k.integer { x.round() } else { x });
}

/// The provenance tag (V, S, D, R, C) of `section.key` in profile text, if it has one.
pub fn tag(text: &str, section: &str, key: &str) -> Option<char> {
    let t: toml::Table = text.parse().ok()?;
    let src = t.get(section)?.get(key)?.get("src")?.as_str()?;
    let mut c = src.chars();
    let first = c.next()?;
    let next = c.next();
    ("VSDRC".contains(first) && matches!(next, None | Some(' ') | Some(':'))).then_some(first)
}

/// One input file.
pub struct Input {
    /// The file's name as given (errors and provenance name it).
    pub file: String,
    pub output: ToolOutput,
}

/// A fitted knob.
#[derive(Debug, Clone)]
pub struct Fitted {
    /// Index into [`KNOBS`].
    pub knob: usize,
    /// Index of the input file and of the point in it.
    pub anchor: (usize, usize),
    pub base_value: f64,
    pub value: f64,
    /// d ln(model) / d ln(parameter) at the anchor, at the base.
    pub elasticity: f64,
    /// How far the value may be off from the anchor's printed digits alone (worst case).
    pub uncertainty: f64,
    /// The model at the anchor with the fitted profile, in the tool's unit.
    pub model_at_anchor: f64,
    /// Set when the anchor could not be reached (a bound, or the model's ceiling).
    pub note: Option<String>,
}

/// A knob that was not fitted, and why.
#[derive(Debug, Clone)]
pub struct Unfitted {
    pub knob: usize,
    pub why: String,
}

/// One point read, with the model before and after the fit.
#[derive(Debug, Clone)]
pub struct Row {
    pub input: usize,
    pub point: usize,
    /// The model with the base profile, or why it has none.
    pub base: Result<f64, String>,
    /// The model with the fitted profile.
    pub fitted: Result<f64, String>,
    /// The knob this point anchors, if any (else it is predicted, not fitted).
    pub anchors: Option<usize>,
}

/// The fit's result.
pub struct Fit {
    pub fitted: Vec<Fitted>,
    pub unfitted: Vec<Unfitted>,
    pub rows: Vec<Row>,
    /// The fitted profile (the base with the fitted values).
    pub profile: Profile,
}

fn point<'a>(inputs: &'a [Input], a: (usize, usize)) -> (&'a Input, &'a ToolPoint) {
    let i = &inputs[a.0];
    (i, &i.output.points[a.1])
}

/// The model at one point.
fn model_at(p: &Profile, inputs: &[Input], a: (usize, usize)) -> Result<f64, String> {
    let (i, pt) = point(inputs, a);
    model_for_tool(&Arc::new(p.clone()), i.output.tool, pt.size_bytes)
}

/// The candidate point of `inputs[f]` for a regime.
fn regime_point(o: &ToolOutput, r: Regime, eager_bytes: Option<u64>) -> Option<usize> {
    let by_size = |i: &usize| o.points[*i].size_bytes;
    let idx = 0..o.points.len();
    match r {
        Regime::Smallest => idx.min_by_key(by_size),
        Regime::Largest => idx.max_by_key(by_size),
        Regime::LargestEager => {
            let smallest = o.points.iter().map(|p| p.size_bytes).min()?;
            let e = eager_bytes?;
            idx.filter(|&i| o.points[i].size_bytes <= e && o.points[i].size_bytes > smallest).max_by_key(by_size)
        }
    }
}

/// The regime a used anchor point was taken for (the first that names it).
fn used_regime(o: &ToolOutput, p: usize, eager: Option<u64>) -> Option<Regime> {
    [Regime::Smallest, Regime::Largest, Regime::LargestEager].into_iter().find(|&r| regime_point(o, r, eager) == Some(p))
}

/// Elasticity of the model at anchor `a` to knob `k` at the profile `p` (central
/// difference of +-10 % or of the knob's typical scale near zero).
fn elasticity(p: &Profile, inputs: &[Input], a: (usize, usize), k: &Knob) -> Result<f64, String> {
    let x = get(p, k.key.0, k.key.1).ok_or("no such parameter")?;
    let h = (x.abs().max(k.typical) * 0.1).max(if k.integer { 1.0 } else { 0.0 });
    let (lo, hi) = ((x - h).max(k.min), (x + h).min(k.max));
    let mut q = p.clone();
    with_knob(&mut q, k, lo);
    let ylo = model_at(&q, inputs, a)?;
    with_knob(&mut q, k, hi);
    let yhi = model_at(&q, inputs, a)?;
    let y = model_at(p, inputs, a)?;
    let (xlo, xhi) = if k.integer { (lo.round(), hi.round()) } else { (lo, hi) };
    if y <= 0.0 || xhi <= xlo {
        return Ok(0.0);
    }
    Ok((yhi - ylo) / (xhi - xlo) * x.abs().max(k.typical) / y)
}

/// Solves `A x = b` by Gaussian elimination with partial pivoting; None when singular.
fn solve(mut a: Vec<Vec<f64>>, mut b: Vec<f64>) -> Option<Vec<f64>> {
    let n = b.len();
    for c in 0..n {
        let piv = (c..n).max_by(|&i, &j| a[i][c].abs().total_cmp(&a[j][c].abs()))?;
        if a[piv][c].abs() < 1e-12 {
            return None;
        }
        a.swap(c, piv);
        b.swap(c, piv);
        for r in c + 1..n {
            let f = a[r][c] / a[c][c];
            for k in c..n {
                a[r][k] -= f * a[c][k];
            }
            b[r] -= f * b[c];
        }
    }
    let mut x = vec![0.0; n];
    for c in (0..n).rev() {
        let s: f64 = (c + 1..n).map(|k| a[c][k] * x[k]).sum();
        x[c] = (b[c] - s) / a[c][c];
    }
    Some(x)
}

/// Fits the knobs of `base` (whose text `base_text` gives the provenance tags) to the
/// inputs. `only`: fit these knobs (by name, `section.key`) and no other; a named knob that
/// no input constrains, or whose base value is from a primary source, is an error.
pub fn fit(base: &Profile, base_text: &str, inputs: &[Input], only: Option<&[String]>) -> Result<Fit, String> {
    if let Some(names) = only {
        for n in names {
            if !KNOBS.iter().any(|k| k.name() == *n) {
                let all: Vec<String> = KNOBS.iter().map(Knob::name).collect();
                return Err(format!("--fit {n}: not a calibratable parameter (allowed: {})", all.join(", ")));
            }
        }
    }
    let eager = base.mpi.as_ref().map(|m| m.eager_threshold_bytes);
    let mut used: Vec<(usize, usize)> = Vec::new();
    let mut chosen: Vec<Fitted> = Vec::new();
    let mut unfitted = Vec::new();
    for (ki, k) in KNOBS.iter().enumerate() {
        let name = k.name();
        let wanted = only.is_none_or(|o| o.contains(&name));
        let refuse = |why: String| -> Result<(), String> { if only.is_some() { Err(format!("--fit {name}: {why}")) } else { Ok(()) } };
        if !wanted {
            continue;
        }
        let Some(x0) = get(base, k.key.0, k.key.1) else {
            let why = format!("profile {} has no {name}", base.id);
            refuse(why.clone())?;
            unfitted.push(Unfitted { knob: ki, why });
            continue;
        };
        if let Some(t @ ('V' | 'S')) = tag(base_text, k.key.0, k.key.1) {
            let why = format!("the base value {} is tagged {t} (a primary or secondary source), not calibratable", num(x0));
            refuse(why.clone())?;
            unfitted.push(Unfitted { knob: ki, why });
            continue;
        }
        let mut found = None;
        let mut weak = Vec::new();
        for &(class, regime) in k.anchors {
            for (fi, inp) in inputs.iter().enumerate() {
                if Class::of(inp.output.tool) != class {
                    continue;
                }
                let Some(pi) = regime_point(&inp.output, regime, eager) else { continue };
                // One anchor per point, and per tool and regime: a second file of the same
                // tool (a repeated run) moves with the same parameters, so it would make the
                // system singular; it is predicted instead.
                if used.iter().any(|&(f, p)| (f, p) == (fi, pi) || (inputs[f].output.tool == inp.output.tool && used_regime(&inputs[f].output, p, eager) == Some(regime))) {
                    continue;
                }
                let e = match elasticity(base, inputs, (fi, pi), k) {
                    Ok(e) => e,
                    Err(_) => continue,
                };
                if e.abs() >= MIN_ELASTICITY {
                    found = Some(((fi, pi), e));
                    break;
                }
                weak.push(format!("{} line {} (elasticity {e:.3})", inp.file, inp.output.points[pi].line));
            }
            if found.is_some() {
                break;
            }
        }
        match found {
            Some((a, e)) => {
                used.push(a);
                chosen.push(Fitted { knob: ki, anchor: a, base_value: x0, value: x0, elasticity: e, uncertainty: 0.0, model_at_anchor: f64::NAN, note: None });
            }
            None => {
                let why = if weak.is_empty() {
                    format!("no input constrains it (needs {})", k.needs)
                } else {
                    format!("no input constrains it: the candidate points barely move with it ({}; at least {MIN_ELASTICITY} needed)", weak.join(", "))
                };
                refuse(why.clone())?;
                unfitted.push(Unfitted { knob: ki, why });
            }
        }
    }
    // Solve; a knob whose anchor no longer moves with it at the solution (the point is now
    // bound by another part of the model: a max() of stages has more than one solution) is
    // not identified by it: dropped, and the others solved again.
    let mut prof;
    loop {
        for f in chosen.iter_mut() {
            f.value = f.base_value;
        }
        prof = base.clone();
        if chosen.is_empty() {
            break;
        }
        newton(base, &mut prof, inputs, &mut chosen)?;
        let mut lost = Vec::new();
        for (i, f) in chosen.iter().enumerate() {
            let e = elasticity(&prof, inputs, f.anchor, &KNOBS[f.knob]).unwrap_or(0.0);
            if e.abs() < MIN_ELASTICITY {
                lost.push((i, e));
            }
        }
        if lost.is_empty() {
            break;
        }
        for &(i, e) in lost.iter().rev() {
            let f = chosen.remove(i);
            let (inp, pt) = point(inputs, f.anchor);
            let name = KNOBS[f.knob].name();
            let why = format!(
                "not identified: at the fitted value {} its anchor {} line {} no longer moves with it (elasticity {e:.3}: the point is bound by another part of the model)",
                num((f.value * 1e3).round() / 1e3),
                inp.file,
                pt.line
            );
            if only.is_some() {
                return Err(format!("--fit {name}: {why}"));
            }
            unfitted.push(Unfitted { knob: f.knob, why });
        }
    }
    let rows = inputs
        .iter()
        .enumerate()
        .flat_map(|(fi, inp)| (0..inp.output.points.len()).map(move |pi| (fi, pi)))
        .map(|a| Row {
            input: a.0,
            point: a.1,
            base: model_at(base, inputs, a),
            fitted: model_at(&prof, inputs, a),
            anchors: chosen.iter().find(|f| f.anchor == a).map(|f| f.knob),
        })
        .collect();
    Ok(Fit { fitted: chosen, unfitted, rows, profile: prof })
}

/// Newton's method on the square system model(anchor_i; x) = measured_i.
fn newton(base: &Profile, prof: &mut Profile, inputs: &[Input], chosen: &mut [Fitted]) -> Result<(), String> {
    let n = chosen.len();
    let ks: Vec<&Knob> = chosen.iter().map(|f| &KNOBS[f.knob]).collect();
    let anchors: Vec<(usize, usize)> = chosen.iter().map(|f| f.anchor).collect();
    let apply = |x: &[f64]| {
        let mut p = base.clone();
        for (k, &v) in ks.iter().zip(x) {
            with_knob(&mut p, k, v);
        }
        p
    };
    let target: Vec<f64> = anchors.iter().map(|&a| point(inputs, a).1.value).collect();
    let eval = |x: &[f64]| -> Result<Vec<f64>, String> {
        let p = apply(x);
        anchors.iter().map(|&a| model_at(&p, inputs, a)).collect()
    };
    let resid = |y: &[f64]| -> f64 { y.iter().zip(&target).map(|(a, b)| ((a - b) / b.max(1e-12)).powi(2)).sum::<f64>().sqrt() };
    let mut x: Vec<f64> = chosen.iter().map(|f| f.base_value).collect();
    let mut y = eval(&x)?;
    let mut jac = vec![vec![0.0; n]; n];
    for _ in 0..MAX_ITERATIONS {
        if y.iter().zip(&target).all(|(a, b)| ((a - b) / b.max(1e-12)).abs() < TOLERANCE) {
            break;
        }
        // Jacobian by forward differences (toward the inside of the bounds).
        for j in 0..n {
            let k = ks[j];
            let mut h = (x[j].abs().max(k.typical) * 0.02).max(if k.integer { 1.0 } else { 0.0 });
            if x[j] + h > k.max {
                h = -h;
            }
            let mut xh = x.clone();
            xh[j] += h;
            let yh = eval(&xh)?;
            let dx = if k.integer { xh[j].round() - x[j].round() } else { h };
            for i in 0..n {
                jac[i][j] = if dx != 0.0 { (yh[i] - y[i]) / dx } else { 0.0 };
            }
        }
        // Newton step with an active set: a knob whose step would cross its bound is held
        // at the bound and the others solved again without it (an unreachable anchor must
        // not drag the knobs coupled to it).
        let mut fixed: Vec<Option<f64>> = vec![None; n];
        let step = loop {
            let free: Vec<usize> = (0..n).filter(|&j| fixed[j].is_none()).collect();
            let rows: Vec<usize> = (0..n).filter(|&i| fixed[i].is_none()).collect();
            let mut full = vec![0.0; n];
            for j in 0..n {
                if let Some(d) = fixed[j] {
                    full[j] = d;
                }
            }
            if !free.is_empty() {
                let a: Vec<Vec<f64>> = rows.iter().map(|&i| free.iter().map(|&j| jac[i][j]).collect()).collect();
                let b: Vec<f64> = rows.iter().map(|&i| target[i] - y[i] - (0..n).filter_map(|j| fixed[j].map(|d| jac[i][j] * d)).sum::<f64>()).collect();
                let Some(d) = solve(a, b) else {
                    let names: Vec<String> = free.iter().map(|&j| ks[j].name()).collect();
                    return Err(format!("the fit of {} is not identifiable at this point: their anchors move together (singular Jacobian)", names.join(", ")));
                };
                for (&j, dj) in free.iter().zip(d) {
                    full[j] = dj;
                }
            }
            let mut more = false;
            for &j in &free {
                let to = x[j] + full[j];
                if to < ks[j].min || to > ks[j].max {
                    fixed[j] = Some(to.clamp(ks[j].min, ks[j].max) - x[j]);
                    more = true;
                }
            }
            if !more {
                break full;
            }
        };
        // Damped step within the bounds.
        let r0 = resid(&y);
        let mut lambda = 1.0;
        let mut accepted = false;
        for _ in 0..6 {
            let xn: Vec<f64> = (0..n).map(|j| (x[j] + lambda * step[j]).clamp(ks[j].min, ks[j].max)).collect();
            let yn = eval(&xn)?;
            if resid(&yn) < r0 {
                x = xn;
                y = yn;
                accepted = true;
                break;
            }
            lambda /= 2.0;
        }
        if !accepted {
            break;
        }
    }
    // Uncertainty from the anchors' printed digits: |J^-1| times the resolutions.
    let res: Vec<f64> = anchors.iter().map(|&a| point(inputs, a).1.resolution).collect();
    for j in 0..n {
        let mut e = vec![0.0; n];
        e[j] = 1.0;
        // Row j of J^-1 = solve(J^T, e_j).
        let jt: Vec<Vec<f64>> = (0..n).map(|r| (0..n).map(|c| jac[c][r]).collect()).collect();
        chosen[j].uncertainty = solve(jt, e).map_or(f64::INFINITY, |row| row.iter().zip(&res).map(|(a, r)| a.abs() * r).sum());
    }
    *prof = apply(&x);
    for (j, f) in chosen.iter_mut().enumerate() {
        let k = ks[j];
        f.value = if k.integer { x[j].round() } else { x[j] };
        f.model_at_anchor = y[j];
        let miss = (y[j] - target[j]) / target[j];
        if miss.abs() > 0.01 {
            let at = if (f.value - k.min).abs() < 1e-9 || (f.value - k.max).abs() < 1e-9 { " at its bound" } else { "" };
            f.note = Some(format!("not reached: the model gives {:.2} against the measured {:.2} ({:+.1} %){at}", y[j], target[j], miss * 100.0));
        }
    }
    Ok(())
}

/// The fitted profile's text: the base text with every fitted key rewritten with a C tag
/// naming the file and line it came from.
pub fn render(fit: &Fit, base: &Profile, base_text: &str, inputs: &[Input], id: &str, date: &str) -> Result<String, String> {
    let mut entries = Vec::new();
    for f in &fit.fitted {
        let k = &KNOBS[f.knob];
        let (inp, pt) = point(inputs, f.anchor);
        let from = format!(
            "{} line {} ({} {} B: {:.2} {})",
            inp.file,
            pt.line,
            inp.output.tool.name(),
            pt.size_bytes,
            pt.value,
            inp.output.tool.unit()
        );
        let round = |v: f64| if k.integer { v.round() } else { (v * 1e4).round() / 1e4 };
        let extra = f.note.as_ref().map_or(String::new(), |n| format!("; {n}"));
        entries.push(Entry {
            section: k.key.0.into(),
            key: k.key.1.into(),
            value: num(round(f.value)),
            src: Some(format!(
                "C: fitted by interlab calibrate --from to {from} on {date}; {} had {}; +-{} from the file's printed digits{extra}",
                base.id,
                num(round(f.base_value)),
                num((f.uncertainty * 1e4).round() / 1e4)
            )),
        });
    }
    let desc = format!("{} fitted by interlab calibrate --from {}", base.id, inputs.iter().map(|i| i.file.as_str()).collect::<Vec<_>>().join(" "));
    let header = format!("Written by interlab calibrate --from on {date}; base profile {}.", base.id);
    let text = rewrite_profile(base_text, id, &desc, &header, &entries)?;
    Profile::parse("fitted profile", &text).map_err(|e| format!("the fitted profile does not load: {e}"))?;
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::toolout;

    fn builtin(id: &str) -> (Profile, &'static str) {
        let text = interlab_model::profile::BUILTIN.iter().find(|(i, _)| *i == id).unwrap().1;
        (Profile::parse(id, text).unwrap(), text)
    }

    /// The model with `truth` writes tool outputs; they are read back and fitted from `base`.
    fn outputs(truth: &Profile, tools: &[(Tool, &[u64])]) -> Vec<Input> {
        tools
            .iter()
            .map(|(t, sizes)| {
                let pts: Vec<(u64, f64)> = sizes.iter().map(|&s| (s, model_for_tool(&Arc::new(truth.clone()), *t, s).unwrap())).collect();
                let text = toolout::render(*t, &pts);
                let file = format!("{}.txt", t.name());
                Input { output: toolout::parse(&file, &text).unwrap(), file }
            })
            .collect()
    }

    fn knob(name: &str) -> &'static Knob {
        KNOBS.iter().find(|k| k.name() == name).unwrap()
    }

    #[test]
    fn recovers_known_parameters_within_2_percent_from_the_models_own_outputs() {
        let (base, text) = builtin("xeon-mt25208-pcie");
        let mut truth = base.clone();
        let set_to = |p: &mut Profile, n: &str, v: f64| with_knob(p, knob(n), v);
        set_to(&mut truth, "adapter.tx_wqe_ns", 620.0);
        set_to(&mut truth, "host.cqe_poll_ns", 600.0);
        set_to(&mut truth, "adapter.responder_setup_ns", 3000.0);
        set_to(&mut truth, "mpi.overhead_ns", 700.0);
        let sizes: &[u64] = &[2, 64, 1024, 65536, 4194304];
        let inputs = outputs(
            &truth,
            &[
                (Tool::PerftestLat { op: "rdma_write" }, sizes),
                (Tool::PerftestLat { op: "send" }, sizes),
                (Tool::PerftestLat { op: "rdma_read" }, sizes),
                (Tool::OsuLatency, &[1, 8, 1024, 65536]),
                (Tool::PerftestBw { op: "rdma_write", bidirectional: false }, sizes),
                (Tool::OsuBw, &[1, 1024, 65536, 4194304]),
            ],
        );
        let f = fit(&base, text, &inputs, None).unwrap();
        let names: Vec<String> = f.fitted.iter().map(|x| KNOBS[x.knob].name()).collect();
        for (n, want) in [("adapter.tx_wqe_ns", 620.0), ("host.cqe_poll_ns", 600.0), ("adapter.responder_setup_ns", 3000.0), ("mpi.overhead_ns", 700.0)] {
            let x = f.fitted.iter().find(|x| KNOBS[x.knob].name() == n).unwrap_or_else(|| panic!("{n} not fitted: {names:?}"));
            let err = (x.value - want) / want;
            eprintln!("{n}: fitted {:.2}, true {want}, {:+.3} % (+-{:.2} from the printed digits)", x.value, err * 100.0, x.uncertainty);
            assert!(err.abs() < 0.02, "{n}: fitted {} against the true {want} ({:+.2} %)", x.value, err * 100.0);
            assert!(x.uncertainty / want < 0.02, "{n}: +-{}", x.uncertainty);
            assert!(x.note.is_none(), "{n}: {:?}", x.note);
        }
        // Unchanged knobs that were fitted stay within 2 % of the truth (the base) too.
        for x in &f.fitted {
            let k = &KNOBS[x.knob];
            let t = get(&truth, k.key.0, k.key.1).unwrap();
            assert!((x.value - t).abs() <= 0.02 * t.abs().max(k.typical), "{}: {} vs {t}", k.name(), x.value);
        }
        // Keys no knob names keep the base's value.
        assert_eq!(f.profile.adapter.rx_packet_ns, base.adapter.rx_packet_ns);
        // Every point read is in the rows; the anchors are marked, the rest predicted.
        assert_eq!(f.rows.len(), inputs.iter().map(|i| i.output.points.len()).sum::<usize>());
        assert_eq!(f.rows.iter().filter(|r| r.anchors.is_some()).count(), f.fitted.len());
        for r in &f.rows {
            let (m, pt) = (r.fitted.as_ref().unwrap(), &inputs[r.input].output.points[r.point]);
            assert!((m - pt.value).abs() / pt.value < 0.02, "{} {} B: model {m} vs {}", inputs[r.input].file, pt.size_bytes, pt.value);
        }
        // The written profile loads and says where each value came from.
        let out = render(&f, &base, text, &inputs, "fitted", "2026-11-25").unwrap();
        let p = Profile::parse("o", &out).unwrap();
        assert!((p.host.cqe_poll_ns - 600.0).abs() < 12.0);
        let line = out.lines().find(|l| l.starts_with("cqe_poll_ns")).unwrap();
        assert!(line.contains("C: fitted by interlab calibrate --from to ib_send_lat.txt line "), "{line}");
    }

    #[test]
    fn bandwidth_fits_the_bottleneck_it_sees_and_nothing_else() {
        // HDR on PCIe 4.0: which of bus and link bounds the large-message bandwidth is the
        // model's to say; the fit takes the one the point moves with.
        let (base, text) = builtin("epyc-hdr-pcie4");
        let mut truth = base.clone();
        let bw = Tool::PerftestBw { op: "rdma_write", bidirectional: false };
        let big = 1u64 << 22;
        let e_bus = elasticity(&base, &outputs(&base, &[(bw, &[big])]), (0, 0), knob("bus.dllp_fraction")).unwrap();
        let e_link = elasticity(&base, &outputs(&base, &[(bw, &[big])]), (0, 0), knob("link.framing_bytes")).unwrap();
        let (name, v) = if e_bus.abs() >= e_link.abs() { ("bus.dllp_fraction", 0.12) } else { ("link.framing_bytes", 60.0) };
        with_knob(&mut truth, knob(name), v);
        set_with(&mut truth, "adapter.tx_wqe_ns", 300.0);
        let inputs = outputs(&truth, &[(Tool::PerftestLat { op: "rdma_write" }, &[2, 4096]), (bw, &[2, 65536, big])]);
        let f = fit(&base, text, &inputs, None).unwrap();
        let got = f.fitted.iter().find(|x| KNOBS[x.knob].name() == name).unwrap_or_else(|| panic!("{name} not fitted (bus {e_bus:.3}, link {e_link:.3})"));
        eprintln!("{name}: fitted {:.4}, true {v}; tx_wqe_ns: fitted {:.2}, true 300", got.value, f.fitted.iter().find(|x| KNOBS[x.knob].name() == "adapter.tx_wqe_ns").map_or(f64::NAN, |x| x.value));
        assert!((got.value - v).abs() / v < 0.02, "{name}: {} vs {v}", got.value);
        let w = f.fitted.iter().find(|x| KNOBS[x.knob].name() == "adapter.tx_wqe_ns").unwrap();
        assert!((w.value - 300.0).abs() / 300.0 < 0.02, "tx_wqe_ns {} (+-{})", w.value, w.uncertainty);
        // No MPI section, no send or read latency: those knobs are named as not constrained.
        for n in ["host.cqe_poll_ns", "adapter.responder_setup_ns", "mpi.overhead_ns"] {
            assert!(f.unfitted.iter().any(|u| KNOBS[u.knob].name() == n), "{n}");
        }
    }

    fn set_with(p: &mut Profile, n: &str, v: f64) {
        with_knob(p, knob(n), v)
    }

    #[test]
    fn a_parameter_no_input_constrains_is_refused_by_name() {
        let (base, text) = builtin("xeon-mt25208-pcie");
        let inputs = outputs(&base, &[(Tool::PerftestLat { op: "send" }, &[2, 1024])]);
        // One send latency: it anchors the adapter costs; the completion cost has no anchor left.
        let f = fit(&base, text, &inputs, None).unwrap();
        assert_eq!(f.fitted.len(), 1);
        assert_eq!(KNOBS[f.fitted[0].knob].name(), "adapter.tx_wqe_ns");
        // Asked alone, the completion cost takes the send latency (adapter costs kept).
        let f = fit(&base, text, &inputs, Some(&["host.cqe_poll_ns".to_string()])).unwrap();
        assert_eq!((f.fitted.len(), KNOBS[f.fitted[0].knob].name()), (1, "host.cqe_poll_ns".to_string()));
        // A write latency does not constrain the completion cost: refused by name.
        let w = outputs(&base, &[(Tool::PerftestLat { op: "rdma_write" }, &[2, 1024])]);
        let e = fit(&base, text, &w, Some(&["host.cqe_poll_ns".to_string()])).err().unwrap();
        assert!(e.contains("--fit host.cqe_poll_ns: no input constrains it"), "{e}");
        let e = fit(&base, text, &inputs, Some(&["link.lane_gbps".to_string()])).err().unwrap();
        assert!(e.contains("not a calibratable parameter"), "{e}");
        // Two runs of one tool: the second is predicted, not a second anchor.
        let twice = outputs(&base, &[(Tool::PerftestLat { op: "rdma_read" }, &[2, 64]), (Tool::PerftestLat { op: "rdma_read" }, &[2, 64])]);
        let f = fit(&base, text, &twice, None).unwrap();
        assert_eq!(f.fitted.len(), 1, "{:?}", f.fitted.iter().map(|x| KNOBS[x.knob].name()).collect::<Vec<_>>());
        assert_eq!(f.fitted[0].anchor, (0, 0));
        // A V-tagged value is not calibratable.
        let (_, ht) = builtin("epyc-hdr-pcie4");
        assert_eq!(tag(ht, "bus", "gts"), Some('V'));
        assert_eq!(tag(ht, "adapter", "tx_wqe_ns"), Some('R'));
        assert_eq!(tag(ht, "bus", "lanes"), None);
    }
}

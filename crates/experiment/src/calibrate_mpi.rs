//! Fitting a profile's `[mpi]` section to a live MPI run: the records `interlab mpi latency`
//! and `interlab mpi bw` write (`--json`), with the model in the loop. The model runs MPI
//! over the profile's verbs fabric (adapter, bus, switch, wire: `ulp::mpi`, RC design), so
//! the fit solves for the library's own costs on top of that fabric:
//!
//! 1. `eager_threshold_bytes`: the largest size before the step in live latency where the
//!    library switches from eager to rendezvous (the pair of sizes whose latency increment
//!    most exceeds the linear trend of its neighbours);
//! 2. `overhead_ns`: latency is linear in the per-message overhead (one critical path, one
//!    overhead at each end), so two model runs give it from the smallest size's live median;
//! 3. `copy_mbytes_per_s`: bisection (in log space) on the copy rate until the model's
//!    latency at the largest eager size equals the live median there.
//!
//! Every fitted value is written with a provenance naming the records (file:line) it came
//! from. A base profile without `[mpi]` gets the section of [`MPI_DONOR`] first (the keys not
//! fitted keep that profile's provenance). See docs/mpi.md.

use interlab_live::calibrate::{self as cal, num, Entry};
use interlab_model::{MpiDesign, Ports, Profile, Scenario, Service};
use interlab_patterns::{Op, PatternKind, PatternSpec};
use std::sync::Arc;

/// The built-in profile whose `[mpi]` section a base without one receives.
pub const MPI_DONOR: &str = "xeon-mt25208-pcie";

/// Copy rates the fit may choose, MB/s.
const COPY_MIN_MBPS: f64 = 50.0;
const COPY_MAX_MBPS: f64 = 1.0e6;

/// One live MPI point.
#[derive(Debug, Clone, PartialEq)]
pub struct MpiPoint {
    /// Message size, bytes.
    pub size: u64,
    /// The median of the record's samples when it has a summary (latency: each round trip
    /// / 2, us; bandwidth: each window, MB/s = 10^6 bytes/s), else its value: medians are
    /// what a shared, loaded machine moves least.
    pub value: f64,
    /// Messages per window (bandwidth; 1 for latency).
    pub window: u32,
    /// `FILE:LINE` of the record.
    pub source: String,
}

/// Live latency and bandwidth points of one MPI run.
#[derive(Debug, Clone, Default)]
pub struct MpiLive {
    pub latency: Vec<MpiPoint>,
    pub bandwidth: Vec<MpiPoint>,
    /// The ranks' processor names (the records' `peers`).
    pub hosts: Vec<String>,
}

/// Reads the JSON Lines records of `interlab mpi latency|bw --json` from `text` (named
/// `file` in errors). Other patterns of `interlab mpi` (bibw, multi-pair) are skipped; any
/// record that is not a live MPI record is an error naming the file and line.
pub fn read_records(file: &str, text: &str, into: &mut MpiLive) -> Result<(), String> {
    let mut n = 0;
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = format!("{file}:{}", i + 1);
        let r: serde_json::Value = serde_json::from_str(line).map_err(|e| format!("{at}: not a JSON record: {e}"))?;
        let s = |k: &str| r.get(k).and_then(|v| v.as_str()).unwrap_or("");
        if s("engine") != "live" || s("transport") != "mpi" {
            return Err(format!("{at}: not a record of `interlab mpi` (engine `{}`, transport `{}`; expected live, mpi)", s("engine"), s("transport")));
        }
        let size = r.get("size_bytes").and_then(|v| v.as_u64()).filter(|&b| (1..=1 << 31).contains(&b)).ok_or_else(|| format!("{at}: size_bytes missing or out of range (1 to 2^31)"))?;
        let bounded = |x: Option<f64>, what: &str| x.filter(|v| v.is_finite() && *v > 0.0 && *v < 1e9).ok_or_else(|| format!("{at}: {what} missing or out of range (above 0, below 1e9)"));
        let window = r.get("window").and_then(|v| v.as_u64()).unwrap_or(1).clamp(1, 4096) as u32;
        match s("pattern") {
            "latency" => {
                let v = r.get("summary").and_then(|x| x.get("p50")).and_then(|v| v.as_f64()).or_else(|| r.get("value").and_then(|v| v.as_f64()));
                into.latency.push(MpiPoint { size, value: bounded(v, "latency (summary.p50 or value, us)")?, window: 1, source: at });
            }
            "bandwidth" => {
                let v = r.get("summary").and_then(|x| x.get("p50")).and_then(|v| v.as_f64()).or_else(|| r.get("value").and_then(|v| v.as_f64()));
                let v = bounded(v, "bandwidth (summary.p50 or value, MB/s)")?;
                into.bandwidth.push(MpiPoint { size, value: v, window, source: at });
            }
            _ => continue,
        }
        n += 1;
        for p in r.get("peers").and_then(|v| v.as_array()).into_iter().flatten().filter_map(|v| v.as_str()) {
            if !into.hosts.iter().any(|h| h == p) {
                into.hosts.push(p.to_string());
            }
        }
    }
    if n == 0 {
        return Err(format!("{file}: no latency or bandwidth record of `interlab mpi` in it"));
    }
    into.latency.sort_by_key(|p| p.size);
    into.bandwidth.sort_by_key(|p| p.size);
    Ok(())
}

/// Smallest and largest last-eager size the step search considers, bytes (MPI libraries
/// switch to rendezvous between a few KiB and a few hundred KiB; below 1 KiB, latency curves
/// have steps of their own: inline sends, shared-memory fast boxes).
pub const EAGER_SEARCH_BYTES: (u64, u64) = (1024, 512 * 1024);

/// The eager/rendezvous step in a latency curve (sizes ascending): `(last eager size, first
/// rendezvous size)`, or None without a step. For each pair of neighbouring sizes (a, b), the
/// latency at b is compared with the eager trend extrapolated from the two sizes up to a
/// (the step adds the handshake); the step is the pair where b exceeds that extrapolation by
/// the largest fraction of the latency at a, at least 10 %. Only a in
/// [`EAGER_SEARCH_BYTES`] with a size before it and one after b, at most twice apart (a
/// power-of-two sweep such as `--sizes 1..4M`), are candidates.
pub fn eager_step(lat: &[(u64, f64)]) -> Option<(u64, u64)> {
    let mut best: Option<(f64, u64, u64)> = None;
    for k in 1..lat.len().saturating_sub(2) {
        let ((s0, l0), (s1, l1), (s2, l2)) = (lat[k - 1], lat[k], lat[k + 1]);
        if !(EAGER_SEARCH_BYTES.0..=EAGER_SEARCH_BYTES.1).contains(&s1) || s1 <= s0 || s2 <= s1 || s1 > 2 * s0 || s2 > 2 * s1 || l1 <= 0.0 {
            continue;
        }
        let slope = ((l1 - l0) / (s1 - s0) as f64).max(0.0);
        let excess = (l2 - (l1 + slope * (s2 - s1) as f64)) / l1;
        if excess > 0.1 && best.is_none_or(|(e, _, _)| excess > e) {
            best = Some((excess, s1, s2));
        }
    }
    best.map(|(_, a, b)| (a, b))
}

/// The model's MPI point (RC design, OSU's loops): one-way latency (us) or, with `window`,
/// windowed bandwidth (MB/s).
pub fn model_mpi(p: &Arc<Profile>, kind: PatternKind, size: u64, window: u32) -> Result<f64, String> {
    if p.mpi.is_none() {
        return Err(format!("profile {} has no [mpi] section", p.id));
    }
    let mut v = Scenario::new(p.clone(), Service::Rc, Ports::One, 1);
    v.mpi = Some(MpiDesign::Rc);
    let (window, warmup, iterations) = match kind {
        PatternKind::Latency => (1, 2, 20),
        _ => (window.max(1), 1, 4),
    };
    let spec = PatternSpec { kind, op: Op::Send, size: size.max(1), window, warmup, iterations };
    v.validate(&spec).map_err(|e| format!("model {} {size} B: {e}", kind.name()))?;
    v.run(&spec).map(|pt| pt.value).map_err(|e| format!("model: {e}"))
}

/// The base profile's text with an `[mpi]` section: unchanged when it has one, else with
/// [`MPI_DONOR`]'s appended (returned second: the donor's id).
pub fn with_mpi_section(base: &str) -> Result<(String, Option<&'static str>), String> {
    if base.lines().any(|l| l.trim() == "[mpi]") {
        return Ok((base.to_string(), None));
    }
    let donor = interlab_model::profile::BUILTIN.iter().find(|(id, _)| *id == MPI_DONOR).map(|(_, t)| *t).ok_or("no built-in MPI profile")?;
    let start = donor.lines().position(|l| l.trim() == "[mpi]").ok_or("the MPI donor profile has no [mpi]")?;
    let section: Vec<&str> = donor.lines().skip(start).enumerate().take_while(|(i, l)| *i == 0 || !l.trim_start().starts_with('[')).map(|(_, l)| l).collect();
    let mut out = base.trim_end().to_string();
    out.push_str(&format!("\n\n# [mpi] from the built-in profile {MPI_DONOR} (the base had none); calibrate fits overhead, eager threshold and copy rate below\n"));
    out.push_str(section.join("\n").trim_end());
    out.push('\n');
    Ok((out, Some(MPI_DONOR)))
}

/// The fitted values and how each was obtained.
#[derive(Debug, Clone)]
pub struct MpiFit {
    pub eager_threshold_bytes: u64,
    pub overhead_ns: f64,
    pub copy_mbytes_per_s: f64,
    /// Per key, the provenance text (without the `C:` prefix and the date).
    pub how: Vec<(&'static str, String)>,
}

fn entries(f: &MpiFit, tag: &str) -> Vec<Entry> {
    let src = |key: &str| Some(format!("C: fitted by interlab calibrate --mpi {tag}: {}", f.how.iter().find(|(k, _)| *k == key).map_or("", |(_, s)| s.as_str())));
    vec![
        Entry { section: "mpi".into(), key: "eager_threshold_bytes".into(), value: f.eager_threshold_bytes.to_string(), src: src("eager_threshold_bytes") },
        Entry { section: "mpi".into(), key: "overhead_ns".into(), value: num(f.overhead_ns.round()), src: src("overhead_ns") },
        Entry { section: "mpi".into(), key: "copy_mbytes_per_s".into(), value: num(f.copy_mbytes_per_s.round()), src: src("copy_mbytes_per_s") },
    ]
}

/// The profile text with `fit` in its `[mpi]` (base must have the section: [`with_mpi_section`]).
pub fn render(base: &str, f: &MpiFit, id: &str, description: &str, header: &str, tag: &str) -> Result<String, String> {
    cal::rewrite_profile(base, id, description, header, &entries(f, tag))
}

fn load(text: &str) -> Result<Arc<Profile>, String> {
    Profile::parse("MPI-calibrated profile", text).map(Arc::new).map_err(|e| format!("the fitted profile does not load: {e}"))
}

/// Fits `[mpi]` of `base` (which has the section) to `live`; `notes` gets what the fit could
/// not reach. `tag` names the run in provenance (host and date).
pub fn fit(base: &str, live: &MpiLive, tag: &str, notes: &mut Vec<String>) -> Result<MpiFit, String> {
    let base_prof = load(base)?;
    let spec = base_prof.mpi.clone().ok_or("the base profile has no [mpi] section")?;
    let lat = &live.latency;
    let small = lat.first().ok_or("no live MPI latency record: run `interlab mpi latency --json FILE` (sizes from 1 B)")?;
    let mut f = MpiFit { eager_threshold_bytes: spec.eager_threshold_bytes, overhead_ns: spec.overhead_ns, copy_mbytes_per_s: spec.copy_mbytes_per_s, how: vec![] };
    let with = |f: &MpiFit| render(base, f, &base_prof.id, "fit in progress", "", tag).and_then(|t| load(&t));
    let lat_model = |f: &MpiFit, size: u64| with(f).and_then(|p| model_mpi(&p, PatternKind::Latency, size, 1));
    // 1. Eager threshold from the step.
    let curve: Vec<(u64, f64)> = lat.iter().map(|p| (p.size, p.value)).collect();
    match eager_step(&curve) {
        Some((a, b)) => {
            let src = |s: u64| lat.iter().find(|p| p.size == s).map_or(String::new(), |p| p.source.clone());
            f.eager_threshold_bytes = a;
            f.how.push(("eager_threshold_bytes", format!("the step in live MPI latency (medians) between {a} B ({}) and {b} B ({}): {a} B is the largest size measured eager", src(a), src(b))));
        }
        None => {
            notes.push(format!("no eager/rendezvous step in the live latency curve ({} sizes): eager_threshold_bytes kept at {} B", lat.len(), spec.eager_threshold_bytes));
            f.how.push(("eager_threshold_bytes", format!("no step found in the live latency curve; kept from the base ({} B)", spec.eager_threshold_bytes)));
        }
    }
    // 2. Overhead: latency is linear in it.
    let mut z = f.clone();
    z.overhead_ns = 0.0;
    let floor = lat_model(&z, small.size)?;
    let mut one = f.clone();
    one.overhead_ns = 1000.0;
    let per_us = (lat_model(&one, small.size)? - floor) / 1000.0;
    if per_us <= 0.0 {
        return Err("the model's latency does not depend on [mpi] overhead_ns (no MPI path?)".into());
    }
    let bw_model = |f: &MpiFit, p: &MpiPoint| with(f).and_then(|q| model_mpi(&q, PatternKind::Bandwidth, p.size, p.window));
    let small_bw = live.bandwidth.first();
    if small.value > floor {
        f.overhead_ns = (small.value - floor) / per_us;
        f.how.push(("overhead_ns", format!("live median one-way latency {:.3} us at {} B ({}); the model's fabric alone gives {floor:.3} us, each ns of overhead {per_us:.4} us", small.value, small.size, small.source)));
    } else if let Some(b) = small_bw {
        // The fabric alone is slower than the live path: the sender's CPU per message, which
        // bounds small-message windowed bandwidth, still gives the overhead.
        f.overhead_ns = solve(|o| bw_model(&MpiFit { overhead_ns: o, ..f.clone() }, b).map(|v| -v), -b.value, 0.0, 100_000.0, false, "overhead_ns", notes)?;
        notes.push(format!("the model's fabric alone (profile {}) gives {floor:.2} us one way at {} B, above the live {:.2} us: overhead_ns fitted to the small-message bandwidth instead; the fabric sections, not [mpi], decide latency", base_prof.id, small.size, small.value));
        f.how.push(("overhead_ns", format!("the model's windowed bandwidth at {} B equals the live {:.2} MB/s ({}) (the model's fabric alone gives {floor:.3} us one way at {} B, above the live {:.3} us)", b.size, b.value, b.source, small.size, small.value)));
    } else {
        f.overhead_ns = 0.0;
        notes.push(format!("the model's fabric alone (profile {}) gives {floor:.2} us one way at {} B, above the live {:.2} us, and no bandwidth record: overhead_ns set to 0", base_prof.id, small.size, small.value));
        f.how.push(("overhead_ns", format!("0: the model's fabric alone gives {floor:.3} us one way at {} B, above the live median {:.3} us ({})", small.size, small.value, small.source)));
    }
    // 3. Copy rate: windowed bandwidth at the largest eager size (the sender's copy bounds it),
    // else the latency there.
    let eager_bw = live.bandwidth.iter().rev().find(|p| p.size <= f.eager_threshold_bytes && Some(p.size) != small_bw.map(|b| b.size));
    let eager_lat = lat.iter().rev().find(|p| p.size <= f.eager_threshold_bytes && p.size > small.size);
    if let Some(b) = eager_bw {
        f.copy_mbytes_per_s = solve(|c| bw_model(&MpiFit { copy_mbytes_per_s: c, ..f.clone() }, b), b.value, COPY_MIN_MBPS, COPY_MAX_MBPS, true, "copy_mbytes_per_s", notes)?;
        f.how.push(("copy_mbytes_per_s", format!("the model's windowed bandwidth at {} B (window {}), the largest eager size measured, equals the live {:.1} MB/s ({}) (the sender copies each message in)", b.size, b.window, b.value, b.source)));
    } else if let Some(pt) = eager_lat {
        f.copy_mbytes_per_s = solve(|c| lat_model(&MpiFit { copy_mbytes_per_s: c, ..f.clone() }, pt.size).map(|v| -v), -pt.value, COPY_MIN_MBPS, COPY_MAX_MBPS, true, "copy_mbytes_per_s", notes)?;
        f.how.push(("copy_mbytes_per_s", format!("the model's one-way latency at {} B, the largest eager size measured, equals the live median {:.3} us ({}) (a copy at each end)", pt.size, pt.value, pt.source)));
    } else {
        notes.push("no live point between the smallest size and the eager threshold: copy_mbytes_per_s kept from the base".into());
        f.how.push(("copy_mbytes_per_s", format!("no live eager size above the smallest; kept from the base ({} MB/s)", spec.copy_mbytes_per_s)));
    }
    Ok(f)
}

/// The x in [lo, hi] where the increasing function `g` reaches `target`, by bisection (in
/// log space when `log`); a target outside g's range gives the bound, with a note.
fn solve(g: impl Fn(f64) -> Result<f64, String>, target: f64, lo: f64, hi: f64, log: bool, key: &str, notes: &mut Vec<String>) -> Result<f64, String> {
    let (to, from) = if log { (f64::ln as fn(f64) -> f64, f64::exp as fn(f64) -> f64) } else { ((|x| x) as fn(f64) -> f64, (|x| x) as fn(f64) -> f64) };
    let (glo, ghi) = (g(lo)?, g(hi)?);
    if target <= glo {
        notes.push(format!("{key}: the model cannot go below {:.2} (at {key} = {lo}) to meet the live {:.2}: set to that bound", glo.abs(), target.abs()));
        return Ok(lo);
    }
    if target >= ghi {
        notes.push(format!("{key}: the model cannot go beyond {:.2} (at {key} = {hi}) to meet the live {:.2}: set to that bound", ghi.abs(), target.abs()));
        return Ok(hi);
    }
    let (mut a, mut b) = (to(lo), to(hi));
    for _ in 0..40 {
        let m = (a + b) / 2.0;
        if g(from(m))? < target {
            a = m;
        } else {
            b = m;
        }
        if (from(b) - from(a)).abs() <= 1e-3 * from(b).abs().max(1.0) {
            break;
        }
    }
    Ok(from((a + b) / 2.0))
}

/// One row of model vs live.
#[derive(Debug, Clone)]
pub struct MpiRow {
    /// `latency` or `bandwidth`.
    pub pattern: &'static str,
    pub size: u64,
    /// `us` or `MB/s`.
    pub unit: &'static str,
    pub live: f64,
    pub model: Result<f64, String>,
    pub source: String,
}

/// The model with `prof` at every live point.
pub fn compare(prof: &Arc<Profile>, live: &MpiLive) -> Vec<MpiRow> {
    let mut rows = Vec::new();
    for (pattern, kind, unit, pts) in [("latency", PatternKind::Latency, "us", &live.latency), ("bandwidth", PatternKind::Bandwidth, "MB/s", &live.bandwidth)] {
        for p in pts {
            rows.push(MpiRow { pattern, size: p.size, unit, live: p.value, model: model_mpi(prof, kind, p.size, p.window), source: p.source.clone() });
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(pattern: &str, size: u64, value: f64, p50: Option<f64>) -> String {
        let summary = p50.map_or(String::new(), |m| format!(",\"summary\":{{\"count\":10,\"mean\":{value},\"min\":{m},\"max\":{value},\"stddev\":0,\"p50\":{m},\"p90\":{m},\"p99\":{m},\"p999\":{m}}}"));
        format!("{{\"engine\":\"live\",\"transport\":\"mpi\",\"pattern\":\"{pattern}\",\"size_bytes\":{size},\"value\":{value},\"window\":64,\"peers\":[\"h0\",\"h1\"]{summary}}}")
    }

    #[test]
    fn the_step_is_found_where_latency_jumps_beyond_its_trend() {
        // Measured on the project's VM (Open MPI 4.1 vader, medians): eager up to 2 KiB.
        let c = [(1, 0.43), (64, 0.51), (256, 0.53), (512, 1.02), (1024, 1.14), (2048, 1.69), (4096, 4.0), (8192, 4.58), (16384, 6.3), (32768, 9.16), (65536, 12.55), (1 << 20, 150.0), (1 << 22, 3900.0)];
        assert_eq!(eager_step(&c), Some((2048, 4096)));
        // A straight line has no step; nor has a curve too short to judge.
        let line: Vec<(u64, f64)> = (0..12).map(|i| (1u64 << i, 1.0 + (1u64 << i) as f64 * 0.001)).collect();
        assert_eq!(eager_step(&line), None);
        assert_eq!(eager_step(&c[..3]), None);
    }

    #[test]
    fn records_are_read_with_medians_and_wrong_ones_named() {
        let mut l = MpiLive::default();
        let text = format!("{}\n\n{}\n{}\n{}\n", rec("latency", 8, 0.9, Some(0.5)), rec("bandwidth", 4096, 900.0, None), rec("bibw", 4096, 1800.0, None), rec("bandwidth", 8192, 700.0, Some(1100.0)));
        read_records("a.jsonl", &text, &mut l).unwrap();
        assert_eq!(l.latency, vec![MpiPoint { size: 8, value: 0.5, window: 1, source: "a.jsonl:1".into() }]);
        assert_eq!(l.bandwidth[0].window, 64);
        assert_eq!(l.bandwidth[0].source, "a.jsonl:3");
        assert_eq!((l.bandwidth[0].value, l.bandwidth[1].value), (900.0, 1100.0), "the median when there is one");
        assert_eq!(l.hosts, vec!["h0", "h1"]);
        let tcp = rec("latency", 8, 1.0, None).replace("\"mpi\"", "\"tcp\"");
        let e = read_records("b.jsonl", &tcp, &mut l).unwrap_err();
        assert!(e.contains("b.jsonl:1") && e.contains("tcp"), "{e}");
        let e = read_records("c.jsonl", &rec("latency", 8, -1.0, None), &mut l).unwrap_err();
        assert!(e.contains("c.jsonl:1") && e.contains("out of range"), "{e}");
        let e = read_records("d.jsonl", "{nope", &mut l).unwrap_err();
        assert!(e.contains("d.jsonl:1"), "{e}");
        assert!(read_records("e.jsonl", "", &mut l).unwrap_err().contains("no latency"));
    }

    /// The fit reproduces a live curve made by the model itself with known `[mpi]` values.
    #[test]
    fn the_fit_recovers_the_parameters_of_a_modelled_curve() {
        // The HDR what-if profile without its own [mpi] section, so the donor's is taken, and
        // without receive-WQE prefetch, whose cheaper handshake makes the rendezvous step too
        // small (under 10 % of the latency) for the step search at this copy rate.
        let hdr = interlab_model::profile::BUILTIN.iter().find(|(id, _)| *id == "epyc-hdr-pcie4").unwrap().1;
        let hdr: String = hdr.lines().filter(|l| !l.starts_with("rx_wqe_prefetch")).map(|l| format!("{l}\n")).collect();
        let hdr = hdr.as_str();
        let start = hdr.find("\n[mpi]").expect("epyc-hdr-pcie4 has [mpi]");
        let end = hdr[start + 1..].find("\n[").map_or(hdr.len(), |k| start + 1 + k);
        let (base, donor) = with_mpi_section(&format!("{}{}", &hdr[..start], &hdr[end..])).unwrap();
        assert_eq!(donor, Some(MPI_DONOR));
        let truth = MpiFit { eager_threshold_bytes: 8192, overhead_ns: 700.0, copy_mbytes_per_s: 8000.0, how: vec![] };
        let tp = load(&render(&base, &truth, "truth", "t", "", "test").unwrap()).unwrap();
        let mut live = MpiLive::default();
        for s in [1u64, 64, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536] {
            let v = model_mpi(&tp, PatternKind::Latency, s, 1).unwrap();
            live.latency.push(MpiPoint { size: s, value: v, window: 1, source: format!("model:{s}") });
        }
        let lat_only = live.clone();
        for s in [1u64, 1024, 8192, 65536] {
            let v = model_mpi(&tp, PatternKind::Bandwidth, s, 64).unwrap();
            live.bandwidth.push(MpiPoint { size: s, value: v, window: 64, source: format!("model-bw:{s}") });
        }
        // Latency alone (copy rate from the eager latency) and with bandwidth (from the
        // eager bandwidth) recover the same values.
        let mut notes = vec![];
        let f0 = fit(&base, &lat_only, "test", &mut notes).unwrap();
        assert!((f0.copy_mbytes_per_s / 8000.0 - 1.0).abs() < 0.05, "{f0:?}");
        let f = fit(&base, &live, "test", &mut notes).unwrap();
        assert!(f.how.iter().any(|(k, s)| *k == "copy_mbytes_per_s" && s.contains("model-bw:8192")), "{f:?}");
        assert!(notes.is_empty(), "{notes:?}");
        assert_eq!(f.eager_threshold_bytes, 8192);
        assert!((f.overhead_ns - 700.0).abs() < 15.0, "{f:?}");
        assert!((f.copy_mbytes_per_s / 8000.0 - 1.0).abs() < 0.05, "{f:?}");
        let fitted = load(&render(&base, &f, "fitted", "t", "", "test").unwrap()).unwrap();
        for r in compare(&fitted, &live) {
            let m = r.model.unwrap();
            assert!((m / r.live - 1.0).abs() < 0.03, "{} B: model {m} live {}", r.size, r.live);
        }
        let text = render(&base, &f, "fitted", "t", "", "test").unwrap();
        assert!(text.contains("C: fitted by interlab calibrate --mpi test: the step in live MPI latency"), "{text}");
    }
}

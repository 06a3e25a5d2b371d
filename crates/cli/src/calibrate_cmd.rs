//! `interlab calibrate`: measure the primitives live against an `interlab serve` daemon, fit
//! the host primitives of a profile (crates/live/src/calibrate.rs), refine them with the
//! model in the loop, write the profile, and optionally compare the model with that profile
//! against the same patterns measured live. See docs/calibrate.md.

use crate::conv::{self, CmdResult, Dest, Fail};
use clap::Args;
use interlab_live::auth::Token;
use interlab_experiment::calibrate::{compare, parse, refine, render, shape, Extra, Row};
use interlab_live::calibrate::{self as cal, CalibrateOptions, Measurements, Primitives};
use interlab_live::{parse_peer, DEFAULT_PORT};
use interlab_model::bus::BusSpec;
use interlab_model::Profile;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

#[derive(Args)]
pub struct CalibrateArgs {
    /// The daemon (`interlab serve`) to measure against, HOST[:PORT].
    #[arg(long, value_name = "HOST[:PORT]", required_unless_present_any = ["from", "mpi", "mpi_run"])]
    peer: Option<String>,
    /// Instead of measuring: the text output of perftest (ib_write_lat, ib_send_lat,
    /// ib_read_lat, ib_write_bw, ib_send_bw, ib_read_bw) or OSU (osu_latency, osu_bw,
    /// osu_bibw) runs; repeat for several files. Fits the --base profile's calibratable
    /// parameters that the points constrain (one point each), writes the result to
    /// --profile when given, and prints model against measurement for every point (with
    /// --check: compares the --profile file, or --base, without fitting).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["peer", "compare"])]
    from: Vec<PathBuf>,
    /// With --from: fit only these parameters (section.key, comma-separated); one that no
    /// input constrains is refused.
    #[arg(long, value_name = "KEY,...", value_delimiter = ',', requires = "from")]
    fit: Vec<String>,
    /// Fit the profile's [mpi] section (overhead, eager threshold, copy rate) to the records
    /// of `interlab mpi latency|bw --json FILE` (repeat for several files); writes --profile
    /// and prints model vs live per size (docs/mpi.md).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["peer", "from", "compare", "check"])]
    pub(crate) mpi: Vec<PathBuf>,
    /// As --mpi, measuring first: runs `mpirun -np 2 interlab mpi latency` and `... bw` itself.
    #[arg(long, conflicts_with_all = ["peer", "from", "compare", "check"])]
    pub(crate) mpi_run: bool,
    /// Sizes of --mpi-run (a power-of-two sweep finds the eager threshold).
    #[arg(long, default_value = "1..1M", value_name = "SIZES")]
    pub(crate) mpi_sizes: String,
    /// An option for mpirun with --mpi-run (repeatable), e.g. --mpirun-arg=--hostfile --mpirun-arg=hf.
    #[arg(long, value_name = "ARG", allow_hyphen_values = true)]
    pub(crate) mpirun_arg: Vec<String>,
    /// Profile file to write (with --check: to read).
    #[arg(long, value_name = "PROFILE.toml", required_unless_present = "from")]
    pub(crate) profile: Option<PathBuf>,
    /// Built-in profile (or profile file) whose other sections and keys are kept.
    #[arg(long, default_value = "r805-connectx-ddr")]
    pub(crate) base: String,
    /// Id of the written profile (default: calibrated-<host>).
    #[arg(long)]
    pub(crate) id: Option<String>,
    /// Shorter measurements (a few seconds in all).
    #[arg(long)]
    pub(crate) quick: bool,
    /// After writing the profile, run the model with it and the same patterns live; print
    /// model vs live and write them to JSON.
    #[arg(long)]
    compare: bool,
    /// Do not measure or fit: compare the existing profile at --profile with live measurements.
    #[arg(long, conflicts_with = "compare")]
    check: bool,
    /// The comparison as JSON, to FILE or (without one, or `-`) to standard output (default
    /// with --compare/--check: PROFILE.compare.json beside --profile).
    #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = "-")]
    pub(crate) json: Option<PathBuf>,
    /// Keep the base profile's [bus] even when it is slower than the measured path.
    #[arg(long)]
    keep_bus: bool,
    /// Shared secret of the daemon.
    #[arg(long, value_name = "TOKEN")]
    auth_token: Option<String>,
    /// Read the shared secret from this file.
    #[arg(long, value_name = "FILE", conflicts_with = "auth_token")]
    auth_token_file: Option<PathBuf>,
    /// Time to wait for the daemon to answer a connection (e.g. 3s, 500ms).
    #[arg(long, default_value = "3s", value_name = "DURATION", value_parser = conv::positive_duration)]
    connect_timeout: Duration,
    /// No progress lines.
    #[arg(long, short)]
    pub(crate) quiet: bool,
}

pub(crate) fn base_text(base: &str) -> Result<String, String> {
    if let Some((_, t)) = interlab_model::profile::BUILTIN.iter().find(|(id, _)| *id == base) {
        return Ok(t.to_string());
    }
    if Path::new(base).exists() {
        return std::fs::read_to_string(base).map_err(|e| format!("--base {base}: {e}"));
    }
    let known: Vec<&str> = interlab_model::profile::BUILTIN.iter().map(|(id, _)| *id).collect();
    Err(format!("--base {base}: not a built-in profile and no such file (built-in: {})", known.join(", ")))
}

fn json_num(x: Option<f64>) -> serde_json::Value {
    x.filter(|v| v.is_finite()).map_or(serde_json::Value::Null, |v| serde_json::json!((v * 1000.0).round() / 1000.0))
}

fn report(rows: &[Row], prof_path: &Path, o: &CalibrateOptions, same: bool, json: &Dest) -> Result<(), Fail> {
    say!("model ({}) vs live ({}); latency-like: live median (mean in the JSON); ratio = model / live", prof_path.display(), o.peer.label);
    say!("{:<26} {:>6} {:>12} {:>12} {:>8}", "pattern", "unit", "model", "live", "ratio");
    let mut out = Vec::new();
    let mut within = 0;
    for r in rows {
        let ratio = match (r.model, r.live) {
            (Some(m), Some(l)) if l > 0.0 => Some(m / l),
            _ => None,
        };
        if ratio.is_some_and(|q| (0.8..=1.2).contains(&q)) {
            within += 1;
        }
        let f = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.2}"));
        say!("{:<26} {:>6} {:>12} {:>12} {:>8}{}", r.name, r.unit, f(r.model), f(r.live), ratio.map_or("-".into(), |q| format!("{q:.3}")), r.error.as_ref().map_or(String::new(), |e| format!("  ({e})")));
        out.push(serde_json::json!({
            "pattern": r.name, "unit": r.unit, "model": json_num(r.model), "live": json_num(r.live),
            "live_mean": json_num(r.live_mean), "ratio": json_num(ratio),
            "within_20pct": ratio.map(|q| (0.8..=1.2).contains(&q)), "error": r.error,
        }));
    }
    say!("{within} of {} within 20 %", rows.len());
    let serde_json::Value::Object(body) = serde_json::json!({
        "profile": prof_path.display().to_string(), "peer": o.peer.label, "date": cal::today(),
        "same_machine": same, "within_20pct": within, "rows": out,
    }) else {
        unreachable!("a JSON object literal")
    };
    json.write_json("json", &conv::document("interlab-calibrate-compare", body))
}

/// `calibrate --from FILE...`: fit the base profile's calibratable parameters to perftest
/// and OSU outputs, write the fitted profile, and print every point against the model.
fn from_files(a: &CalibrateArgs) -> CmdResult {
    use interlab_experiment::fit::{self, Input, KNOBS};
    use interlab_experiment::toolout;
    let json = Dest::from_flag(a.json.as_deref());
    if let Some(j) = &json {
        j.check_writable("json")?;
    }
    // --check: the existing --profile (or --base) against the points, nothing fitted.
    let (name, text) = match (&a.profile, a.check) {
        (Some(p), true) => (p.display().to_string(), std::fs::read_to_string(p).map_err(|e| format!("--profile {}: {e}", p.display()))?),
        (None, true) => (a.base.clone(), base_text(&a.base)?),
        (out, false) => {
            if let Some(o) = out {
                conv::check_writable_file("profile", o)?;
            }
            (a.base.clone(), base_text(&a.base)?)
        }
    };
    let base = Profile::parse(&name, &text).map_err(|e| format!("--base {name}: {e}"))?;
    let inputs = a
        .from
        .iter()
        .map(|f| toolout::read(f).map(|output| Input { file: f.display().to_string(), output }).map_err(|e| e.to_string()))
        .collect::<Result<Vec<_>, _>>()?;
    let only: Option<Vec<String>> = if a.check { Some(Vec::new()) } else if a.fit.is_empty() { None } else { Some(a.fit.clone()) };
    let f = fit::fit(&base, &text, &inputs, only.as_deref())?;
    let date = cal::today();
    let knob_name = |k: usize| KNOBS[k].name();
    if a.check {
        say!("profile {} against the tools' own output (no fit)", base.id);
    } else {
        say!("base {}; each fitted parameter from one point (C), every other point predicted:", base.id);
        for x in &f.fitted {
            let (inp, pt) = (&inputs[x.anchor.0], &inputs[x.anchor.0].output.points[x.anchor.1]);
            say!(
                "  {:<28} {:>10} -> {:<10} +-{:<8} from {} line {} ({} {} B: {:.2} {}; elasticity {:.3}){}",
                knob_name(x.knob),
                fmt_num(x.base_value),
                fmt_num(x.value),
                fmt_num(x.uncertainty),
                inp.file,
                pt.line,
                inp.output.tool.name(),
                pt.size_bytes,
                pt.value,
                inp.output.tool.unit(),
                x.elasticity,
                x.note.as_ref().map_or(String::new(), |n| format!("  WARNING: {n}"))
            );
        }
        for u in &f.unfitted {
            say!("  {:<28} kept: {}", knob_name(u.knob), u.why);
        }
        for (i, inp) in inputs.iter().enumerate() {
            let c: Vec<String> = f.fitted.iter().filter(|x| x.anchor.0 == i).map(|x| format!("{} (line {})", knob_name(x.knob), inp.output.points[x.anchor.1].line)).collect();
            say!("  {} ({}) constrains: {}", inp.file, inp.output.tool.name(), if c.is_empty() { "nothing (all its points are predicted)".to_string() } else { c.join(", ") });
        }
    }
    say!("{:<14} {:>10} {:>6} {:>12} {:>12} {:>12} {:>8}  {:<28} source", "tool", "bytes", "unit", "measured", "base model", "model", "ratio", "role");
    let mut rows = Vec::new();
    let (mut within10, mut within20, mut predicted, mut errs) = (0, 0, 0, Vec::new());
    for r in &f.rows {
        let (inp, p) = (&inputs[r.input], &inputs[r.input].output.points[r.point]);
        let ratio = r.fitted.as_ref().ok().filter(|_| p.value > 0.0).map(|m| m / p.value);
        let base_ratio = r.base.as_ref().ok().filter(|_| p.value > 0.0).map(|m| m / p.value);
        let role = r.anchors.map_or("predicted".to_string(), |k| format!("fitted: {}", knob_name(k)));
        if r.anchors.is_none() {
            if let Some(q) = ratio {
                predicted += 1;
                within10 += usize::from((0.9..=1.1).contains(&q));
                within20 += usize::from((0.8..=1.2).contains(&q));
                errs.push((q - 1.0).abs());
            }
        }
        let src = format!("{}:{}", inp.file, p.line);
        let cell = |m: &Result<f64, String>| m.as_ref().map_or("-".to_string(), |v| format!("{v:.2}"));
        say!(
            "{:<14} {:>10} {:>6} {:>12.2} {:>12} {:>12} {:>8}  {:<28} {src}{}",
            inp.output.tool.name(),
            p.size_bytes,
            inp.output.tool.unit(),
            p.value,
            cell(&r.base),
            cell(&r.fitted),
            ratio.map_or("-".to_string(), |q| format!("{q:.3}")),
            role,
            r.fitted.as_ref().err().map_or(String::new(), |e| format!("  ({e})"))
        );
        rows.push(serde_json::json!({"tool": inp.output.tool.name(), "size_bytes": p.size_bytes, "unit": inp.output.tool.unit(), "measured": p.value,
            "base_model": r.base.as_ref().ok(), "base_ratio": base_ratio, "model": r.fitted.as_ref().ok(), "ratio": ratio,
            "role": if r.anchors.is_some() { "fitted" } else { "predicted" }, "fits": r.anchors.map(knob_name),
            "source": src, "error": r.fitted.as_ref().err()}));
    }
    errs.sort_by(f64::total_cmp);
    let median = errs.get(errs.len() / 2).map_or("-".to_string(), |e| format!("{:.1} %", e * 100.0));
    say!("predicted, not fitted: {within10} of {predicted} within 10 %, {within20} within 20 % (median |model/measured - 1| {median})");
    let mut written = None;
    if let (Some(out), false) = (&a.profile, a.check) {
        let id = a.id.clone().unwrap_or_else(|| format!("{}-fitted", base.id));
        let t = fit::render(&f, &base, &text, &inputs, &id, &date)?;
        std::fs::write(out, &t).map_err(|e| format!("--profile {}: cannot write: {e}", out.display()))?;
        Profile::load(&out.display().to_string()).map_err(|e| format!("{}: the written profile does not load: {e}", out.display()))?;
        say!("wrote {} ({} parameter(s) fitted)", out.display(), f.fitted.len());
        written = Some(out.display().to_string());
    }
    if let Some(j) = json {
        let fitted: Vec<serde_json::Value> = f
            .fitted
            .iter()
            .map(|x| {
                let (inp, pt) = (&inputs[x.anchor.0], &inputs[x.anchor.0].output.points[x.anchor.1]);
                serde_json::json!({"parameter": knob_name(x.knob), "base": x.base_value, "value": x.value, "uncertainty": x.uncertainty,
                    "elasticity": x.elasticity, "source": format!("{}:{}", inp.file, pt.line), "note": x.note})
            })
            .collect();
        let unfitted: Vec<serde_json::Value> = f.unfitted.iter().map(|u| serde_json::json!({"parameter": knob_name(u.knob), "why": u.why})).collect();
        let serde_json::Value::Object(body) = serde_json::json!({"profile": base.id, "files": a.from.iter().map(|f| f.display().to_string()).collect::<Vec<_>>(),
            "fitted": fitted, "unfitted": unfitted, "written": written, "predicted": predicted, "predicted_within_10pct": within10,
            "within_20pct": within20, "rows": rows}) else {
            unreachable!("an object literal")
        };
        j.write_json("json", &conv::document("interlab-calibrate-from", body))?;
    }
    Ok(ExitCode::SUCCESS)
}

fn fmt_num(x: f64) -> String {
    if !x.is_finite() {
        return "?".into();
    }
    let s = format!("{x:.4}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if x.abs() >= 100.0 { format!("{x:.1}") } else { s.to_string() }
}

pub fn run(a: CalibrateArgs) -> CmdResult {
    if !a.from.is_empty() {
        return from_files(&a);
    }
    if !a.mpi.is_empty() || a.mpi_run {
        return crate::calibrate_mpi_cmd::run(&a);
    }
    let (Some(peer_text), Some(profile_path)) = (a.peer.clone(), a.profile.clone()) else {
        return Err("--peer and --profile are needed unless --from gives tool outputs".into());
    };
    let text = if a.check { None } else { Some(base_text(&a.base)?) };
    let base_prof = match &text {
        Some(t) => Some(Profile::parse(&a.base, t).map_err(|e| format!("--base {}: {e}", a.base))?),
        None => None,
    };
    let shp = base_prof.as_ref().map(shape).transpose()?;
    if a.check {
        Profile::load(&profile_path.display().to_string()).map_err(|e| format!("--check: {e}"))?;
    } else {
        conv::check_writable_file("profile", &profile_path)?;
    }
    let peer = parse_peer(&peer_text, DEFAULT_PORT)?;
    let token = match (&a.auth_token, &a.auth_token_file) {
        (Some(t), _) => Some(Token::new(t).map_err(|e| format!("--auth-token: {e}"))?),
        (None, Some(f)) => Some(Token::from_file(f)?),
        _ => None,
    };
    let o = CalibrateOptions { peer, token, quick: a.quick, connect_timeout: a.connect_timeout };
    let json = Dest::from_flag(a.json.as_deref()).unwrap_or_else(|| {
        let mut s = profile_path.clone().into_os_string();
        s.push(".compare.json");
        Dest::File(PathBuf::from(s))
    });
    json.check_writable("json")?;
    let mut same = o.peer.addr.ip().is_loopback();
    if let (Some(text), Some(shp), Some(bp)) = (&text, shp, &base_prof) {
        if !a.quiet {
            eprintln!("interlab calibrate: measuring against {}", o.peer.label);
        }
        let quiet = a.quiet;
        let mut progress = |s: &str| {
            if !quiet {
                eprintln!("  {s}")
            }
        };
        let m = cal::measure(&o, &mut progress).map_err(|e| Fail::Run(format!("calibrate: {e}")))?;
        same = m.same_machine;
        let p0 = cal::fit(&m, &shp)?;
        let cores = if m.same_machine { (m.cpus / 2).max(1) } else { m.cpus.max(1) };
        let mut bus_gts = None;
        if let (BusSpec::Pcie(b), false, false) = (&bp.bus, p0.link_bound, a.keep_bus) {
            let need_mbps = cal::FABRIC_HEADROOM * p0.path_gbps * 1000.0 / 8.0;
            let have = bp.bus.raw_mbytes_per_s();
            if have < need_mbps {
                bus_gts = Some(b.gts * need_mbps / have);
            }
        }
        let x = Extra { cores, bus_gts };
        let id = a.id.clone().unwrap_or_else(|| format!("calibrated-{}", m.host));
        let mut notes = Vec::new();
        let (p, how) = refine(text, p0, &m, &x, &id, &mut notes)?;
        let out_text = render(text, &p, &m, &x, &id, &how)?;
        parse(&out_text)?;
        std::fs::write(&profile_path, &out_text).map_err(|e| format!("--profile {}: cannot write: {e}", profile_path.display()))?;
        Profile::load(&profile_path.display().to_string()).map_err(|e| format!("{}: the written profile does not load: {e}", profile_path.display()))?;
        print_fit(&m, &p);
        for n in &notes {
            eprintln!("note: {n}");
        }
        eprintln!("wrote {}", profile_path.display());
    }
    if a.compare || a.check {
        let prof = Arc::new(Profile::load(&profile_path.display().to_string()).map_err(|e| e.to_string())?);
        let rows = compare(&prof, &o, a.quick, same);
        report(&rows, &profile_path, &o, same, &json)?;
        if rows.iter().all(|r| r.live.is_none()) {
            return Err(Fail::Run("no live measurement succeeded (see the errors above)".into()));
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn print_fit(m: &Measurements, p: &Primitives) {
    println!("measured on {} against {} ({}{})", m.host, m.peer, m.date, if m.same_machine { ", client and daemon on one machine" } else { "" });
    for l in &m.lat_tcp {
        println!("  tcp latency {:>7} B: {:8.2} us median one way, {:8.2} mean, cpu {} us/round trip", l.size, l.p50_us, l.mean_us, l.cpu_us_per_rt.map_or("-".into(), |c| format!("{c:.2}")));
    }
    if let Some(u) = m.lat_udp_1b_us {
        println!("  udp latency       1 B: {u:8.2} us median one way");
    }
    for b in &m.bw {
        println!("  tcp bandwidth {:>7} B: {:8.1} MB/s, cpu {} us/KB, busier end {}", b.size, b.mbps, b.cpu_us_per_byte.map_or("-".into(), |c| format!("{:.3}", c * 1024.0)), b.busiest_pct.map_or("-".into(), |c| format!("{c:.0} %")));
    }
    println!("  tcp connect: {} us median; syscall {:.0} ns; MTU {}; L2 {} B", m.connect_us.map_or("-".into(), |c| format!("{c:.1}")), m.syscall_ns, m.mtu, m.cache_bytes.unwrap_or(0));
    println!(
        "fitted: syscall {:.0} ns, copy {:.0} MB/s, mem copy {:.0} MB/s, tcp_tx {:.0}, tcp_rx {:.0}, ip_rx {:.0}, interrupt {:.0}, wakeup {:.0}, eth tx {:.0} rx {:.0} ns, handshake {:.2} us, link {:.3} Gb/s x1 ({})",
        p.syscall_ns,
        p.copy_mbytes_per_s,
        p.mem_copy_mbytes_per_s,
        p.tcp_tx_ns,
        p.tcp_rx_ns,
        p.ip_rx_ns,
        p.interrupt_ns,
        p.wakeup_ns,
        p.eth_tx_ns,
        p.eth_rx_ns,
        p.tcp_handshake_us,
        p.lane_gbps,
        if p.link_bound { "measured path rate" } else { "CPU-bound: link set far above" }
    );
}

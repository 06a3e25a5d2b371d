//! The subcommands.

use crate::conv::{self, say_err, CmdResult, Dest, Fail};
use indicatif::{ProgressBar, ProgressStyle};
use interlab_experiment::live::{run_live, LiveTarget};
use interlab_experiment::{parse_experiment, point_count, run_experiment, run_experiment_shard, write_records, Engine, SeriesResult, Shard, XAxis};
use interlab_model::ulp::sock::SockKind;
use interlab_model::{Ports, Profile, Scenario, Service, SockStack};
use interlab_patterns::{Op, PatternKind, PatternSpec};
use interlab_report::{render_svg, Figure, Scale, Series};
use interlab_studies::{reproduce as run_reproduce, Progress, ReproduceOptions};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

/// A progress bar on stderr (hidden when stderr is not a terminal or `quiet`).
struct Bar(ProgressBar);

impl Bar {
    fn new(quiet: bool) -> Bar {
        let pb = if quiet { ProgressBar::hidden() } else { ProgressBar::new(0) };
        pb.set_style(
            ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:40} {pos}/{len} points  {msg}")
                .expect("static template")
                .progress_chars("=> "),
        );
        Bar(pb)
    }
}

impl Progress for Bar {
    fn start(&self, total: usize) {
        self.0.set_length(total as u64);
    }
    fn message(&self, what: &str) {
        self.0.set_message(what.to_string());
    }
    fn tick(&self) {
        self.0.inc(1);
    }
    fn finish(&self) {
        self.0.finish_and_clear();
    }
}

pub fn reproduce(studies: Vec<String>, out: PathBuf, claims: Option<PathBuf>, json: Option<&Path>, quiet: bool, timings: bool) -> CmdResult {
    let json = Dest::from_flag(json);
    if let Some(j) = &json {
        j.check_writable("json")?;
    }
    // Recorded in claims.json: only what determines the results (not the output path).
    let command_line = format!("interlab reproduce{}", studies.iter().map(|s| format!(" --study {s}")).collect::<String>());
    let opts = ReproduceOptions { out, studies, claims_csv: claims, command_line };
    let bar = Bar::new(quiet);
    let r = run_reproduce(&opts, &bar)?;
    let c = r.counts;
    say!(
        "interlab reproduce: {} points, {:.1} M events in {:.1} s",
        r.records,
        r.events as f64 / 1e6,
        r.elapsed_s
    );
    say!(
        "claims: {} within tolerance, {} outside (of {} with published values), {} predicted (withheld), {} not modelled{} (of {})",
        c.within,
        c.outside,
        c.within + c.outside,
        c.predicted,
        c.not_modelled,
        if c.not_run > 0 { format!(", {} not run (study not selected)", c.not_run) } else { String::new() },
        c.total()
    );
    for o in &r.outside {
        say!("  outside: {o}");
    }
    if !r.not_modelled_studies.is_empty() {
        say!("not modelled yet: {}", r.not_modelled_studies.join(", "));
    }
    if timings {
        say!("wall time per figure (figures run at once and share the cores), longest first:");
        for t in &r.timings {
            let points = if t.points > 0 { format!("{:>5} points", t.points) } else { String::new() };
            say!("  {:>7.2} s  {:<28} {points}", t.wall_s, t.what);
        }
        let sh = r.sharing;
        say!(
            "points shown by several figures run once: {} figure points, {} simulated ({} shared, {:.1} M events not simulated again)",
            sh.figure_points,
            sh.simulated,
            sh.figure_points - sh.simulated,
            sh.shared_events as f64 / 1e6
        );
        let q = r.queue;
        say!(
            "simulations: {} tasks, longest first; every core busy until the last started at {:.2} s, the last ended at {:.2} s",
            q.tasks,
            q.last_start_s,
            q.wall_s
        );
    }
    say!("report:  {}", r.files.html.display());
    say!("claims:  {}", r.files.claims_json.display());
    say!("records: {}", opts.out.join("results.jsonl").display());
    if let Some(j) = &json {
        let text = std::fs::read_to_string(&r.files.claims_json).map_err(|e| Fail::Run(format!("{}: {e}", r.files.claims_json.display())))?;
        j.write("json", &text)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `interlab run`.
#[derive(clap::Args)]
pub struct RunArgs {
    /// The experiment spec.
    spec: PathBuf,
    /// Output directory.
    #[arg(long, default_value = "interlab-run")]
    out: PathBuf,
    /// model | live | both (default: the spec's `engine`, else model).
    #[arg(long)]
    engine: Option<String>,
    /// Live: daemon(s) running `interlab serve`, HOST[:PORT]; repeat for several (default: the
    /// spec's `[live] peers`).
    #[arg(long = "peer", value_name = "HOST[:PORT]")]
    peers: Vec<String>,
    /// Live: the daemons' shared secret. Visible to every local user in `ps`: prefer
    /// --auth-token-file or INTERLAB_AUTH_TOKEN.
    #[arg(long, value_name = "TOKEN")]
    auth_token: Option<String>,
    /// Live: read the shared secret from this file (else from INTERLAB_AUTH_TOKEN).
    #[arg(long, value_name = "FILE", conflicts_with = "auth_token")]
    auth_token_file: Option<PathBuf>,
    /// Live: time to wait for a daemon to answer a connection.
    #[arg(long, default_value = "5s", value_name = "DURATION", value_parser = conv::positive_duration)]
    connect_timeout: std::time::Duration,
    /// Run only shard I of N of the spec's points (model engine), for job arrays: the
    /// points whose place in spec order is I-1 modulo N. Join the shards' --out
    /// directories with `interlab merge`.
    #[arg(long, value_name = "I/N", value_parser = Shard::parse)]
    points: Option<Shard>,
    /// Check the spec and list every key that shapes each series, without running it.
    #[arg(long)]
    dry_run: bool,
    /// Also the records as JSON Lines, to FILE or (without one, or `-`) to standard output.
    #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = "-")]
    json: Option<PathBuf>,
    /// Also the records as CSV, to FILE or (without one, or `-`) to standard output.
    #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = "-")]
    csv: Option<PathBuf>,
    /// No progress bar.
    #[arg(long, short)]
    quiet: bool,
}

pub fn run(a: RunArgs) -> CmdResult {
    let (spec, out) = (a.spec.as_path(), a.out.as_path());
    let (json, csv) = conv::record_dests(a.json.as_deref(), a.csv.as_deref())?;
    for (flag, d) in [("json", &json), ("csv", &csv)] {
        if let Some(d) = d {
            d.check_writable(flag)?;
        }
    }
    let text = std::fs::read_to_string(spec).map_err(|e| format!("{}: cannot read spec: {e}", spec.display()))?;
    let name = spec.display().to_string();
    let exp = parse_experiment(&name, &text, spec.parent()).map_err(|e| e.to_string())?;
    let engine = match &a.engine {
        None => exp.engine,
        Some(e) => Engine::from_name(e).ok_or_else(|| format!("--engine {e}: expected one of {}", Engine::NAMES.join(", ")))?,
    };
    if a.points.is_some() && engine != Engine::Model {
        return Err("--points: shards are for the model engine (live points share one network and run one at a time)".into());
    }
    let target = match engine {
        Engine::Model => None,
        Engine::Live | Engine::Both => {
            let token = crate::live_cmd::token(&a.auth_token, &a.auth_token_file)?;
            let t = LiveTarget::with_mpi(&exp, &a.peers, token, a.connect_timeout, Some(crate::mpi_launch::runner(&exp)?))?;
            // Everything the live engine cannot run is refused before anything runs.
            interlab_experiment::live::live_points(&exp, &t)?;
            Some(t)
        }
    };
    if a.dry_run {
        say!("{}: experiment `{}`, {} series, {} points, engine {}", name, exp.name, exp.series.len(), point_count(&exp), Engine::NAMES[engine as usize]);
        for s in &exp.series {
            say!("  series `{}` ({} points):", s.label, s.points().len());
            for (k, v) in s.describe() {
                say!("    {k:<18} {v}");
            }
        }
        if let Some(t) = &target {
            say!("  live: {} over {}", t.peers.iter().map(|p| p.label.as_str()).collect::<Vec<_>>().join(", "), t.transport.name());
        }
        return Ok(ExitCode::SUCCESS);
    }
    let bar = Bar::new(a.quiet);
    let mut series: Vec<SeriesResult> = Vec::new();
    let mut records: Vec<interlab_patterns::ResultRecord> = Vec::new();
    if let Some(shard) = a.points {
        let places = shard.places(&exp);
        bar.start(places.len());
        bar.message(&format!("{} shard {}/{}", exp.name, shard.index, shard.of));
        let tick = || bar.tick();
        let model = run_experiment_shard(&exp, shard, &tick).map_err(Fail::Run)?;
        bar.finish();
        let records: Vec<_> = model.iter().flat_map(|s| s.records.iter().cloned()).collect();
        write_records(out, &records)?;
        // Records come series by series, each series' points in spec order: the same order
        // as the places, which `merge` uses to put the shards back together.
        let manifest = conv::document(
            "interlab-shard",
            serde_json::json!({"spec": name, "spec_sha": spec_digest(&text), "experiment": exp.name, "shard": shard.index, "shards": shard.of,
                "points_total": point_count(&exp), "places": places})
            .as_object()
            .cloned()
            .unwrap_or_default(),
        );
        let mf = out.join("shard.json");
        std::fs::write(&mf, serde_json::to_string_pretty(&manifest).map_err(|e| e.to_string())? + "\n").map_err(|e| format!("{}: {e}", mf.display()))?;
        say!("shard {}/{} of {}: {} of {} points; wrote {}, {}, {} (join the shards with `interlab merge DIR... --out DIR`)", shard.index, shard.of, exp.name, places.len(), point_count(&exp), out.join("results.jsonl").display(), out.join("results.csv").display(), mf.display());
        return Ok(ExitCode::SUCCESS);
    }
    if engine != Engine::Live {
        bar.start(point_count(&exp));
        bar.message(&exp.name);
        let tick = || bar.tick();
        let model = run_experiment(&exp, &tick).map_err(Fail::Run)?;
        records.extend(model.iter().flat_map(|s| s.records.iter().cloned()));
        series.extend(model);
    }
    let mut live_failed = Vec::new();
    if let Some(t) = &target {
        bar.0.reset();
        bar.start(point_count(&exp));
        let tick = |what: &str| {
            bar.message(&format!("live: {what}"));
            bar.tick();
        };
        let live = run_live(&exp, t, &tick).map_err(Fail::Run)?;
        records.extend(live.records.iter().map(|r| r.record.clone()));
        std::fs::create_dir_all(out).map_err(|e| format!("{}: cannot create directory: {e}", out.display()))?;
        let details = out.join("live.jsonl");
        let text: String = live.records.iter().map(|r| interlab_live::record::to_json_line(r) + "\n").collect();
        std::fs::write(&details, text).map_err(|e| format!("{}: {e}", details.display()))?;
        live_failed = live.errors;
        if engine == Engine::Both {
            for (m, l) in series.iter_mut().zip(&live.series) {
                m.label = format!("{} (model)", l.label);
            }
            series.extend(live.series.into_iter().map(|mut l| {
                l.label = format!("{} (live)", l.label);
                l
            }));
        } else {
            series = live.series;
        }
    }
    bar.finish();
    write_records(out, &records)?;
    if let Some(j) = &json {
        j.write("json", &interlab_experiment::records_jsonl(&records))?;
    }
    if let Some(c) = &csv {
        c.write("csv", &interlab_experiment::records_csv(&records))?;
    }
    // A table: one row per x (size, distance, clients or streams), one column per series;
    // with both engines, the live/model ratio after each pair.
    let mut xs: Vec<u64> = series.iter().flat_map(|s| s.points.iter().map(|p| p.0)).collect();
    xs.sort_unstable();
    xs.dedup();
    let unit = series.iter().find(|s| !s.unit.is_empty()).map(|s| s.unit.clone()).unwrap_or_default();
    let x_axis = series.first().map_or(XAxis::Size, |s| s.x_axis);
    if series.iter().any(|s| s.x_axis != x_axis) {
        say_err("note: the series sweep different things (sizes, distances, clients, streams); the table and figure use the first series' x");
    }
    let (x_column, x_label, x_scale) = match x_axis {
        XAxis::Size => ("bytes", "Message size (bytes)", Scale::Log2),
        XAxis::Distance => ("miles", "Distance (miles)", Scale::Linear),
        XAxis::Clients => ("clients", "Client nodes", Scale::Linear),
        XAxis::Processes => ("streams", "Streams (process pairs) per node", Scale::Linear),
    };
    let n = exp.series.len();
    let both = engine == Engine::Both;
    let mut line = format!("{x_column:>10}");
    for s in &series {
        line.push_str(&format!("  {:>18}", s.label));
    }
    if both {
        for s in &exp.series {
            line.push_str(&format!("  {:>18}", format!("{} live/model", s.label)));
        }
    }
    say!("{line}   ({unit})");
    for z in &xs {
        let mut line = format!("{z:>10}");
        for s in &series {
            match s.at(*z) {
                Some(v) => line.push_str(&format!("  {v:>18.2}")),
                None => line.push_str(&format!("  {:>18}", "-")),
            }
        }
        if both {
            for i in 0..n {
                match (series[i].at(*z), series[n + i].at(*z)) {
                    (Some(m), Some(l)) if m != 0.0 => line.push_str(&format!("  {:>18.3}", l / m)),
                    _ => line.push_str(&format!("  {:>18}", "-")),
                }
            }
        }
        say!("{line}");
    }
    let fig = Figure {
        id: sanitize(&exp.name),
        study: "run".into(),
        title: exp.name.clone(),
        x_label: x_label.into(),
        y_label: if unit == "us" { "Latency (us)".into() } else { format!("Bandwidth ({unit})") },
        x_scale,
        y_scale: Scale::Linear,
        series: series
            .iter()
            .enumerate()
            .map(|(i, s)| Series { label: s.label.clone(), points: s.points.iter().map(|&(x, y)| (x as f64, y)).collect(), dashed: both && i < n })
            .collect(),
        marks: vec![],
        caption: exp.description.clone(),
    };
    let svg = out.join(format!("{}.svg", fig.id));
    std::fs::write(&svg, render_svg(&fig)).map_err(|e| format!("{}: {e}", svg.display()))?;
    say!("wrote {}, {}, {}", out.join("results.jsonl").display(), out.join("results.csv").display(), svg.display());
    if !live_failed.is_empty() {
        for e in &live_failed {
            say_err(&format!("interlab run: live point failed: {e}"));
        }
        return Err(Fail::Run(format!("{} live point(s) failed (their error records are in {})", live_failed.len(), out.join("live.jsonl").display())));
    }
    Ok(ExitCode::SUCCESS)
}

/// A digest of a spec's text (FNV-1a 64), so `merge` refuses shards of different specs.
fn spec_digest(text: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// `interlab merge DIR... --out DIR`: the shards of one `run --points I/N` sweep joined
/// into one results.jsonl/results.csv in spec order.
pub fn merge(dirs: &[PathBuf], out: &Path) -> CmdResult {
    use interlab_patterns::ResultRecord;
    let mut shards: Vec<(u32, u32, String, usize, Vec<usize>, Vec<ResultRecord>)> = Vec::new();
    for d in dirs {
        let mf = d.join("shard.json");
        let text = std::fs::read_to_string(&mf).map_err(|e| format!("{}: cannot read ({e}); is {} the --out of `interlab run --points I/N`?", mf.display(), d.display()))?;
        let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| format!("{}: not JSON: {e}", mf.display()))?;
        if v["kind"] != "interlab-shard" || v["schema"] != conv::SCHEMA {
            return Err(format!("{}: not an interlab shard manifest (schema {})", mf.display(), conv::SCHEMA).into());
        }
        let num = |k: &str| v[k].as_u64().ok_or_else(|| format!("{}: key `{k}` missing or not a number", mf.display()));
        let (i, n, total) = (num("shard")? as u32, num("shards")? as u32, num("points_total")? as usize);
        let places: Vec<usize> = v["places"].as_array().ok_or_else(|| format!("{}: key `places` missing", mf.display()))?.iter().map(|x| x.as_u64().map(|x| x as usize)).collect::<Option<_>>().ok_or_else(|| format!("{}: `places` must be whole numbers", mf.display()))?;
        let jl = d.join("results.jsonl");
        let recs_text = std::fs::read_to_string(&jl).map_err(|e| format!("{}: cannot read: {e}", jl.display()))?;
        let recs: Vec<ResultRecord> = recs_text.lines().enumerate().map(|(k, l)| serde_json::from_str(l).map_err(|e| format!("{} line {}: {e}", jl.display(), k + 1))).collect::<Result<_, _>>()?;
        if recs.len() != places.len() {
            return Err(format!("{}: {} records for {} points of shard {i}/{n}: an unfinished shard?", d.display(), recs.len(), places.len()).into());
        }
        shards.push((i, n, v["spec_sha"].as_str().unwrap_or_default().to_string(), total, places, recs));
    }
    let Some(first) = shards.first() else { return Err("merge: give the shards' directories".into()) };
    let (n, sha, total) = (first.1, first.2.clone(), first.3);
    let mut seen = vec![false; n as usize];
    for s in &shards {
        if s.1 != n || s.2 != sha || s.3 != total {
            return Err(format!("merge: shard {}/{} is of another sweep (shards {}, spec digest {}) than shard {}/{n} (spec digest {sha})", s.0, s.1, s.1, s.2, first.0).into());
        }
        if std::mem::replace(&mut seen[(s.0 - 1) as usize], true) {
            return Err(format!("merge: shard {}/{n} given twice", s.0).into());
        }
    }
    let missing: Vec<String> = seen.iter().enumerate().filter(|(_, &x)| !x).map(|(k, _)| format!("{}/{n}", k + 1)).collect();
    if !missing.is_empty() {
        return Err(format!("merge: shards missing: {}", missing.join(", ")).into());
    }
    // The manifests' numbers come from files: the slots are sized by the records actually
    // read, never by a count a manifest claims.
    let held: usize = shards.iter().map(|s| s.4.len()).sum();
    if held != total {
        return Err(format!("merge: the shards hold {held} points, their manifests say the sweep has {total}").into());
    }
    let mut slots: Vec<Option<ResultRecord>> = vec![None; total];
    for s in shards {
        for (p, r) in s.4.into_iter().zip(s.5) {
            let slot = slots.get_mut(p).ok_or_else(|| format!("merge: place {p} beyond the sweep's {total} points"))?;
            *slot = Some(r);
        }
    }
    let records: Vec<ResultRecord> = slots.into_iter().enumerate().map(|(k, r)| r.ok_or_else(|| format!("merge: no record for point {k}"))).collect::<Result<_, _>>()?;
    write_records(out, &records)?;
    say!("merged {n} shards: {} records; wrote {}, {}", records.len(), out.join("results.jsonl").display(), out.join("results.csv").display());
    Ok(ExitCode::SUCCESS)
}

fn sanitize(s: &str) -> String {
    let t: String = s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '-' }).collect();
    if t.is_empty() { "experiment".into() } else { t }
}

pub fn bench_kernel(events: u64, pending: u32, json: Option<&Path>) -> CmdResult {
    if events == 0 || pending == 0 {
        return Err("--events and --pending must be at least 1".into());
    }
    let json = Dest::from_flag(json);
    say!("interlab bench kernel: one core, {events} events, {pending} pending");
    let mut best = 0.0f64;
    let mut runs = Vec::new();
    for run in 1..=3 {
        let r = interlab_kernel::bench::hold_model(64, pending, events, run);
        best = best.max(r.events_per_s);
        runs.push(r.events_per_s);
        say!("  hold model run {run}: {:.2} M events/s ({} events in {:.3} s)", r.events_per_s / 1e6, r.events, r.seconds);
    }
    say!("kernel: {:.2} M events/s (best of 3; target >= 10)", best / 1e6);
    // A full model scenario: every layer (CPU, bus, adapter engines, RC, switch).
    let prof = Arc::new(Profile::load("xeon-mt25208-pcie").map_err(|e| e.to_string())?);
    let setup = Scenario::new(prof, Service::Rc, Ports::Stripe { threshold: 8192 }, 2);
    let spec = PatternSpec { kind: PatternKind::BiBandwidth, op: Op::RdmaWrite, size: 1 << 20, window: 64, warmup: 1, iterations: 4 };
    let t = std::time::Instant::now();
    let p = setup.run(&spec).map_err(|e| Fail::Run(e.to_string()))?;
    let s = t.elapsed().as_secs_f64();
    say!(
        "verbs model (pcie fig11 point, 1 MiB striped bi-directional): {:.2} M events/s ({} events in {:.3} s; {:.0} simulated packets/s)",
        p.events as f64 / s / 1e6,
        p.events,
        s,
        (p.bytes_sent as f64 / 2048.0) / s
    );
    if let Some(j) = json {
        let serde_json::Value::Object(body) = serde_json::json!({
            "events": events, "pending": pending,
            "kernel_events_per_s": runs, "kernel_best_events_per_s": best,
            "verbs_events": p.events, "verbs_wall_s": s, "verbs_events_per_s": p.events as f64 / s,
        }) else { unreachable!("an object literal") };
        j.write_json("json", &conv::document("interlab-bench-kernel", body))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// bench/ns3/bulk.cc's TCP segment size, bytes.
const NS3_SEGMENT_BYTES: u64 = 2048;
/// bench/ns3/bulk.cc's link delay, ns.
const NS3_DELAY_NS: f64 = 1000.0;
/// Per-frame bytes of ns-3's point-to-point device (its PPP header).
const NS3_PPP_BYTES: u32 = 2;

/// A bulk RC transfer over one 4X SDR link (8 Gb/s data), and a TCP bulk transfer as
/// bench/ns3/bulk.cc runs it (8 Gb/s Ethernet, 2 KiB segments), as data packets per wall
/// second, packet by packet and with packet trains.
pub fn bench_model(bytes: u64, json: Option<&Path>) -> CmdResult {
    const MSG: u64 = 1 << 20;
    if bytes < MSG {
        return Err(format!("--bytes {bytes}: at least 1M (one 1 MiB message)").into());
    }
    let json = Dest::from_flag(json);
    let messages = bytes.div_ceil(MSG);
    if bytes % MSG != 0 {
        say_err(&format!("note: --bytes {bytes} is not a whole number of 1 MiB messages; moving {} ({messages} messages)", interlab_patterns::show_size(messages * MSG)));
    }
    let messages = u32::try_from(messages).map_err(|_| format!("--bytes {bytes}: too many messages (at most {} MiB)", u32::MAX))?;
    let prof = Arc::new(Profile::load("xeon-mt25208-pcie").map_err(|e| e.to_string())?);
    let spec = PatternSpec { kind: PatternKind::Pipelined, op: Op::Send, size: MSG, window: 16, warmup: 0, iterations: messages };
    let mut rows = Vec::new();
    for trains in [false, true] {
        let mut setup = Scenario::new(prof.clone(), Service::Rc, Ports::One, 1);
        setup.trains = trains;
        let t = std::time::Instant::now();
        let p = setup.run(&spec).map_err(|e| Fail::Run(e.to_string()))?;
        let wall = t.elapsed().as_secs_f64();
        let packets = (p.bytes_sent as f64 / 2048.0).round();
        say!(
            "interlab{} bytes={} packets={packets:.0} wall_s={wall:.3} packets_per_s={:.0} events={} simulated_MBps={:.0}",
            if trains { "-trains" } else { "" },
            p.bytes_sent,
            packets / wall,
            p.events,
            p.value
        );
        rows.push(serde_json::json!({"trains": trains, "bytes": p.bytes_sent, "packets": packets, "wall_s": wall,
            "packets_per_s": packets / wall, "events": p.events, "simulated_mbytes_per_s": p.value}));
    }
    // TCP bulk as bench/ns3/bulk.cc runs it: 2 KiB segments (MTU 2100 = 2048 + IPv4 20 + TCP
    // 20 + timestamps 12), an 8 Gb/s link with 1 us of propagation, a 2-byte PPP-sized
    // framing, no segmentation or receive offloads; here through the r805 profile's host
    // stack and Ethernet adapter, both nodes on one switch.
    let mut tcp = Profile::load("r805-connectx-ddr").map_err(|e| e.to_string())?;
    {
        let e = tcp.eth.as_mut().ok_or("r805-connectx-ddr: no [eth] section")?;
        // 8.25 GBd with 64b/66b: 8 Gb/s of data, as ns-3's DataRate 8Gbps.
        (e.link.lane_gbps, e.link.lanes, e.link.code) = (8.25, 1, interlab_model::hw::link::LineCode::B64B66);
        e.link.framing_bytes = NS3_PPP_BYTES;
        e.link.cable_m = NS3_DELAY_NS / e.link.prop_ns_per_m;
    }
    let tcp = Arc::new(tcp);
    // A socket stream: the whole transfer as one window of messages (netperf TCP_STREAM);
    // with packet trains, TCP's own socket trains too (`Scenario::tcp_trains`, which the
    // studies leave off: see docs/performance.md, "TCP in trains").
    let stream_spec = PatternSpec { kind: PatternKind::Bandwidth, window: messages, iterations: 1, ..spec };
    for trains in [false, true] {
        let mut setup = Scenario::new(tcp.clone(), Service::Rc, Ports::One, 1);
        setup.sock = Some(SockStack { eth_mtu: NS3_SEGMENT_BYTES as u32 + 52, lso: Some(false), lro: Some(false), ..SockStack::new(SockKind::Eth) });
        (setup.trains, setup.tcp_trains) = (trains, trains);
        let t = std::time::Instant::now();
        let p = setup.run(&stream_spec).map_err(|e| Fail::Run(e.to_string()))?;
        let wall = t.elapsed().as_secs_f64();
        // Data segments: the stream's bytes over the segment size (headers and ACKs aside),
        // as ns-3's figure counts them.
        let stream = messages as u64 * MSG;
        let packets = (stream as f64 / NS3_SEGMENT_BYTES as f64).ceil();
        say!(
            "interlab-tcp{} bytes={stream} packets={packets:.0} wall_s={wall:.3} packets_per_s={:.0} events={} simulated_MBps={:.0}",
            if trains { "-trains" } else { "" },
            packets / wall,
            p.events,
            p.value
        );
        rows.push(serde_json::json!({"tcp": true, "trains": trains, "bytes": stream, "packets": packets, "wall_s": wall,
            "packets_per_s": packets / wall, "events": p.events, "simulated_mbytes_per_s": p.value}));
    }
    if let Some(j) = json {
        let serde_json::Value::Object(body) = serde_json::json!({"runs": rows}) else { unreachable!("an object literal") };
        j.write_json("json", &conv::document("interlab-bench-model", body))?;
    }
    Ok(ExitCode::SUCCESS)
}

pub fn profiles(id: Option<&str>, json: Option<&Path>) -> CmdResult {
    let json = Dest::from_flag(json);
    match id {
        None => {
            let mut list = Vec::new();
            for (id, _) in interlab_model::profile::BUILTIN {
                let p = Profile::load(id).map_err(|e| e.to_string())?;
                say!("{:22} {}", p.id, p.description);
                list.push(serde_json::json!({"id": p.id, "description": p.description}));
            }
            if let Some(j) = json {
                let serde_json::Value::Object(body) = serde_json::json!({"profiles": list}) else { unreachable!("an object literal") };
                j.write_json("json", &conv::document("interlab-profiles", body))?;
            }
        }
        Some(id) => {
            let text = match interlab_model::profile::BUILTIN.iter().find(|(i, _)| *i == id) {
                Some((_, text)) => text.to_string(),
                None => {
                    // A profile file: validated, and named valid (its text is the user's own).
                    let p = Profile::load(id).map_err(|e| e.to_string())?;
                    say!("{}: valid profile `{}`: {}", id, p.id, p.description);
                    if json.is_none() {
                        return Ok(ExitCode::SUCCESS);
                    }
                    std::fs::read_to_string(id).map_err(|e| format!("{id}: {e}"))?
                }
            };
            match json {
                None => print!("{text}"),
                Some(j) => {
                    let t: toml::Table = text.parse().map_err(|e| format!("{id}: {e}"))?;
                    let serde_json::Value::Object(body) = serde_json::json!({"id": id, "parameters": t}) else { unreachable!("an object literal") };
                    j.write_json("json", &conv::document("interlab-profile", body))?;
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `interlab pvfs --spec FILE`: a parallel-file-I/O spec in the model.
pub fn pvfs(spec: &Path, json: Option<&Path>, quiet: bool) -> CmdResult {
    use interlab_studies::pvfs::{run_spec, PvfsSpec};
    let json = Dest::from_flag(json);
    if let Some(j) = &json {
        j.check_writable("json")?;
    }
    let name = spec.display().to_string();
    let text = std::fs::read_to_string(spec).map_err(|e| format!("{name}: cannot read: {e}"))?;
    check_spec_kind(&name, &text, "pvfs")?;
    let s = PvfsSpec::parse(&name, &text)?;
    say!(
        "interlab pvfs {name}: {} on {}, {} compute nodes, {} B per server and node in {} B strips, {:?} store",
        if s.read { "concurrent read" } else { "concurrent write" },
        s.profile,
        s.compute_nodes,
        s.bytes_per_server,
        s.strip_bytes,
        s.store
    );
    let out = run_spec(&s).map_err(Fail::Run)?;
    let mut doc = Vec::new();
    for o in &out {
        say!("{}:", o.label);
        for &(n, mbs, cpu) in &o.points {
            say!("  {n:3} I/O servers: {mbs:9.1} MB/s aggregate; first I/O server CPU {cpu:.0} %");
        }
        doc.push(serde_json::json!({
            "label": o.label,
            "points": o.points.iter().map(|&(n, mbs, cpu)| serde_json::json!({"io_servers": n, "mbytes_per_s": mbs, "server_cpu_percent": cpu})).collect::<Vec<_>>(),
        }));
    }
    let _ = quiet; // nothing is logged beyond the table
    if let Some(j) = json {
        let serde_json::Value::Object(body) = serde_json::json!({"spec": name, "series": doc}) else { unreachable!("an object literal") };
        j.write_json("json", &conv::document("interlab-pvfs", body))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Refuses a spec of another kind than `want` (its top-level table), naming the command
/// that runs it (`interlab_experiment::other_spec_kind`). Text that is not TOML is left to
/// the spec's own parser.
pub fn check_spec_kind(file: &str, text: &str, want: &str) -> Result<(), Fail> {
    let Ok(root) = text.parse::<toml::Table>() else { return Ok(()) };
    match interlab_experiment::other_spec_kind(file, &root, want) {
        Some(why) => Err(Fail::Input(format!("{file}: {why}"))),
        None => Ok(()),
    }
}

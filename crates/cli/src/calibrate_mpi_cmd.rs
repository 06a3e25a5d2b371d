//! `interlab calibrate --mpi FILE...` / `--mpi-run`: fit the profile's `[mpi]` section to live
//! MPI records (`interlab mpi latency|bw --json`, or run here under mpirun), write the
//! profile, and print the model with it against every live point. The fit itself is
//! `interlab_experiment::calibrate_mpi`; see docs/mpi.md.

use crate::calibrate_cmd::{base_text, CalibrateArgs};
use crate::conv::{self, CmdResult, Dest, Fail};
use crate::mpi_launch::{self, Launch, MpiJob};
use interlab_experiment::calibrate_mpi::{compare, fit, read_records, render, with_mpi_section, MpiLive};
use interlab_live::calibrate as cal;
use interlab_model::Profile;
use std::process::ExitCode;
use std::sync::Arc;

pub fn run(a: &CalibrateArgs) -> CmdResult {
    let profile_path = a.profile.clone().ok_or("--profile is needed: the file the MPI-fitted profile is written to")?;
    conv::check_writable_file("profile", &profile_path)?;
    let json = Dest::from_flag(a.json.as_deref());
    if let Some(j) = &json {
        j.check_writable("json")?;
    }
    let (base, donor) = with_mpi_section(&base_text(&a.base)?)?;
    Profile::parse(&a.base, &base).map_err(|e| format!("--base {}: {e}", a.base))?;
    let mut live = MpiLive::default();
    let mut sources = Vec::new();
    for f in &a.mpi {
        let text = std::fs::read_to_string(f).map_err(|e| format!("--mpi {}: cannot read: {e}", f.display()))?;
        read_records(&f.display().to_string(), &text, &mut live)?;
        sources.push(f.display().to_string());
    }
    if a.mpi_run {
        let launch = Launch { args: a.mpirun_arg.clone(), ..Default::default() };
        for (pattern, what) in [("latency", "latency"), ("bw", "bandwidth")] {
            if !a.quiet {
                eprintln!("interlab calibrate: live MPI {what}, sizes {}", a.mpi_sizes);
            }
            let job = MpiJob { pattern, sizes: a.mpi_sizes.clone(), window: None, warmup: None, iterations: a.quick.then_some(if pattern == "latency" { 1000 } else { 20 }) };
            let (text, cmd) = mpi_launch::run(&launch, &job).map_err(Fail::Run)?;
            read_records(&format!("mpirun {pattern}"), &text, &mut live)?;
            sources.push(cmd);
        }
    }
    let host = live.hosts.join("+");
    let date = cal::today();
    let tag = format!("on {host} {date}");
    let mut notes = Vec::new();
    let f = fit(&base, &live, &tag, &mut notes)?;
    let id = a.id.clone().unwrap_or_else(|| format!("mpi-calibrated-{}", live.hosts.first().map_or("host", |h| h.as_str())));
    let base_id = interlab_experiment::calibrate::base_id(&base);
    let desc = format!("{base_id} with [mpi] fitted by interlab calibrate --mpi to live MPI on {host} ({date})");
    let header = format!(
        "Written by interlab calibrate --mpi {} on {date} from live MPI records of {host}: {}.{}",
        interlab_live::VERSION,
        sources.join(", "),
        donor.map_or(String::new(), |d| format!("\n[mpi] taken from built-in profile {d} (the base had none), then fitted."))
    );
    let text = render(&base, &f, &id, &desc, &header, &tag)?;
    let prof = Arc::new(Profile::parse("the written profile", &text).map_err(|e| format!("the fitted profile does not load: {e}"))?);
    std::fs::write(&profile_path, &text).map_err(|e| format!("--profile {}: cannot write: {e}", profile_path.display()))?;
    say!("fitted [mpi] on {host} ({date}), other sections from {base_id}:");
    say!("  eager_threshold_bytes = {}   ({})", f.eager_threshold_bytes, how(&f.how, "eager_threshold_bytes"));
    say!("  overhead_ns = {:.0}   ({})", f.overhead_ns, how(&f.how, "overhead_ns"));
    say!("  copy_mbytes_per_s = {:.0}   ({})", f.copy_mbytes_per_s, how(&f.how, "copy_mbytes_per_s"));
    for n in &notes {
        say_err(&format!("note: {n}"));
    }
    say!("model ({id}) vs live MPI; latency: live median one way; ratio = model / live");
    say!("{:<10} {:>10} {:>6} {:>12} {:>12} {:>8}  source", "pattern", "bytes", "unit", "live", "model", "ratio");
    let rows = compare(&prof, &live);
    let mut out = Vec::new();
    for r in &rows {
        let ratio = r.model.as_ref().ok().map(|m| m / r.live);
        say!(
            "{:<10} {:>10} {:>6} {:>12.2} {:>12} {:>8}  {}{}",
            r.pattern,
            r.size,
            r.unit,
            r.live,
            r.model.as_ref().map_or("-".into(), |m| format!("{m:.2}")),
            ratio.map_or("-".into(), |q| format!("{q:.3}")),
            r.source,
            r.model.as_ref().err().map_or(String::new(), |e| format!("  ({e})"))
        );
        out.push(serde_json::json!({"pattern": r.pattern, "size_bytes": r.size, "unit": r.unit, "live": r.live, "model": r.model.as_ref().ok(),
            "ratio": ratio, "source": r.source, "error": r.model.as_ref().err()}));
    }
    say_err(&format!("wrote {}", profile_path.display()));
    if let Some(j) = json {
        let fitted = serde_json::json!({"eager_threshold_bytes": f.eager_threshold_bytes, "overhead_ns": f.overhead_ns.round(), "copy_mbytes_per_s": f.copy_mbytes_per_s.round()});
        let serde_json::Value::Object(body) = serde_json::json!({"profile": profile_path.display().to_string(), "base": base_id, "hosts": live.hosts, "date": date,
            "sources": sources, "fitted": fitted, "notes": notes, "rows": out}) else {
            unreachable!("an object literal")
        };
        j.write_json("json", &conv::document("interlab-calibrate-mpi", body))?;
    }
    Ok(ExitCode::SUCCESS)
}

fn how<'a>(how: &'a [(&str, String)], key: &str) -> &'a str {
    how.iter().find(|(k, _)| *k == key).map_or("", |(_, s)| s.as_str())
}

fn say_err(s: &str) {
    conv::say_err(s);
}

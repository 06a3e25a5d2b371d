//! Runs every point of the data-centre replay specs given (default: the eight
//! `studies/*/dc-*.toml`) and prints, per spec, the replay's own CPU time (cost tables
//! built first, not counted) and a digest of every outcome (all its fields, bit for bit),
//! so two builds can be compared for identical results and for speed without the CLI.
//!
//! Run from the repository root:
//! `cargo run --release -p interlab-replay --example dc_bench [-- SPEC ...]`

use interlab_replay::{CostCache, DcSpec, InteractionTable, Kind, Outcome};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;
use std::time::Instant;

/// The data-centre replay specs of the studies: `studies/*/dc-*.toml`, sorted.
fn study_specs() -> Result<Vec<String>, String> {
    let dirs = std::fs::read_dir("studies").map_err(|e| format!("studies: {e} (run from the repository root)"))?;
    let mut out = Vec::new();
    for d in dirs.flatten() {
        for f in std::fs::read_dir(d.path()).into_iter().flatten().flatten() {
            let name = f.file_name().to_string_lossy().into_owned();
            if name.starts_with("dc-") && name.ends_with(".toml") {
                out.push(f.path().to_string_lossy().into_owned());
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Every field of an outcome, floats by their bits.
fn digest(o: &Outcome, h: &mut DefaultHasher) {
    o.classes.hash(h);
    (o.issued, o.completed, o.in_flight, o.messages, o.idle_penalties, o.connects, o.events).hash(h);
    for c in &o.measured {
        (c.class, c.start, c.end, c.marks).hash(h);
    }
    for v in [&o.tier_busy_s, &o.tier_util, &o.tier_net_busy_s] {
        v.iter().for_each(|x| x.to_bits().hash(h));
    }
    (o.measure_s.to_bits(), o.end_time_s.to_bits()).hash(h);
}

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let specs: Vec<String> = if args.is_empty() { study_specs()? } else { args };
    let table = Arc::new(InteractionTable::builtin());
    let costs = CostCache::new();
    let (mut total_s, mut total_ev) = (0.0, 0u64);
    for path in &specs {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e} (run from the repository root)"))?;
        let specs = DcSpec::parse(path, &text)?;
        // Cost tables first (a one-browser point of each spec builds them), not timed.
        for s in &specs {
            for p in &s.protocols {
                costs.get(&s.profile, *p)?;
            }
        }
        let mut h = DefaultHasher::new();
        let (mut secs, mut events) = (0.0, 0u64);
        for s in &specs {
            let xs: Vec<(u32, u64)> = match s.kind {
                Kind::Static => s.file_sizes.iter().map(|&f| (s.browsers[0], f)).collect(),
                _ => s.browsers.iter().map(|&b| (b, 0)).collect(),
            };
            for (b, f) in xs {
                let t = Instant::now();
                let o = s.run_point(&table, &costs, b, f)?;
                secs += t.elapsed().as_secs_f64();
                events += o.events;
                digest(&o, &mut h);
            }
        }
        println!("{path}: {secs:.3} s, {events} events, digest {:016x}", h.finish());
        total_s += secs;
        total_ev += events;
    }
    println!("total: {total_s:.3} s, {total_ev} events");
    Ok(())
}

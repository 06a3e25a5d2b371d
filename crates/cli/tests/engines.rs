//! One spec, two engines: `interlab run SPEC --engine model|live|both` against a loopback
//! daemon writes records of one schema, and what live cannot run is refused by key.

mod common;

use common::{bin, text, Serve};

fn text_of(o: &std::process::Output) -> String {
    text(o)
}

fn repo(p: &str) -> String {
    format!("{}/../../{p}", env!("CARGO_MANIFEST_DIR"))
}

fn records(dir: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(dir.join("results.jsonl")).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn the_example_spec_runs_on_both_engines_with_one_record_schema() {
    let s = Serve::start(&["--idle-timeout", "20"]);
    let spec = repo("examples/tcp-latency-both.toml");
    let base = std::env::temp_dir().join(format!("interlab-engines-{}", std::process::id()));
    let mut by_engine = std::collections::BTreeMap::new();
    for engine in ["model", "live", "both"] {
        let out = base.join(engine);
        let o = bin().args(["run", &spec, "--engine", engine, "--peer", &s.addr, "--out", out.to_str().unwrap(), "-q"]).output().unwrap();
        assert!(o.status.success(), "{engine}: {}", text(&o));
        let recs = records(&out);
        assert_eq!(recs.len(), if engine == "both" { 26 } else { 13 }, "{engine}: one record per size (and engine)");
        assert!(out.join("tcp-latency-both.svg").exists());
        by_engine.insert(engine, recs);
        if engine == "both" {
            let t = String::from_utf8_lossy(&o.stdout);
            assert!(t.contains("TCP latency (model)") && t.contains("TCP latency (live)") && t.contains("live/model"), "{t}");
        }
    }
    // `server_cpu_percent` is optional in both engines' schema: live omits it when a point is
    // shorter than /proc/stat's 10 ms tick (loopback ping-pongs of a few ms are), and says so
    // in live.jsonl's flags. Every other key must match.
    let keys = |r: &serde_json::Value| r.as_object().unwrap().keys().filter(|k| *k != "server_cpu_percent").cloned().collect::<Vec<_>>();
    let (m, l) = (&by_engine["model"][0], &by_engine["live"][0]);
    assert_eq!(keys(m), keys(l), "model and live records have the same keys");
    assert_eq!((m["engine"].as_str(), l["engine"].as_str()), (Some("model"), Some("live")));
    for r in by_engine.values().flatten() {
        assert_eq!(r["schema"], 1);
        assert_eq!(r["experiment"], "tcp-latency-both");
        assert_eq!(r["series"], "TCP latency");
        assert_eq!(r["metric"], "latency_us");
        assert!(r["value"].as_f64().unwrap() > 0.0, "{r}");
    }
    // Live details (CPU, percentiles, host) beside the records.
    assert!(base.join("live").join("live.jsonl").exists());
    let _ = std::fs::remove_dir_all(&base);
}

#[test]
fn live_refuses_what_it_cannot_measure_by_key_before_running() {
    for (spec, key) in [("studies/pcie/fig5.toml", "socket"), ("studies/ib-wan/fig4.toml", "socket"), ("studies/sdp/fig1a.toml", "socket")] {
        let o = bin().args(["run", &repo(spec), "--engine", "live", "--peer", "127.0.0.1:1"]).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{spec}: {}", text(&o));
        assert!(text(&o).contains(&format!("key `{key}`")), "{spec}: {}", text(&o));
    }
    // No daemon given at all: the example without its [live] table and no --peer.
    let spec_text = std::fs::read_to_string(repo("examples/tcp-latency-both.toml")).unwrap();
    let cut = &spec_text[..spec_text.rfind("\n[live]").unwrap()];
    let spec = std::env::temp_dir().join(format!("interlab-engines-nopeer-{}.toml", std::process::id()));
    std::fs::write(&spec, cut).unwrap();
    let o = bin().args(["run", spec.to_str().unwrap(), "--engine", "live"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text_of(&o));
    assert!(text_of(&o).contains("--peer HOST[:PORT]"), "{}", text_of(&o));
    // The model alone needs no daemon.
    let out = std::env::temp_dir().join(format!("interlab-engines-model-{}", std::process::id()));
    let o = bin().args(["run", spec.to_str().unwrap(), "--engine", "model", "--out", out.to_str().unwrap(), "-q"]).output().unwrap();
    assert!(o.status.success(), "{}", text_of(&o));
    let _ = std::fs::remove_file(&spec);
    let _ = std::fs::remove_dir_all(&out);
}

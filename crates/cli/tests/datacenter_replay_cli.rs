//! `interlab datacenter replay`: a spec and a trace in, WIPS and percentiles out; clear
//! errors for bad input.

use std::process::Command;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_interlab"))
}

fn tmp(name: &str, text: &str) -> std::path::PathBuf {
    let p = std::env::temp_dir().join(format!("interlab-replay-{}-{name}", std::process::id()));
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn replay_prints_wips_and_percentiles_and_writes_json() {
    let spec = tmp(
        "ok.toml",
        "[datacenter]\nthink_scale = 0.1\nwarmup_s = 0.5\nmeasure_s = 1.0\nbrowsers = [100]\nweb_app_connections = 20\n\
         [[series]]\nlabel = \"RC\"\nprotocol = \"ipoib-rc\"\n[[series]]\nlabel = \"SDP\"\nprotocol = \"sdp\"\n",
    );
    let trace = concat!(env!("CARGO_MANIFEST_DIR"), "/../datacenter/data/tpcw-browsing-drive.jsonl");
    let json = std::env::temp_dir().join(format!("interlab-replay-{}.json", std::process::id()));
    let o = bin().args(["datacenter", "replay", "--spec"]).arg(&spec).args(["--trace", trace, "--json"]).arg(&json).output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out}{}", String::from_utf8_lossy(&o.stderr));
    assert!(out.contains("WIPS") && out.contains("p90") && out.contains("Home") && out.contains("SDP"), "{out}");
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["schema"], 1);
    assert_eq!(v["kind"], "interlab-datacenter-replay");
    let pts = v["points"].as_array().unwrap();
    assert_eq!(pts.len(), 2);
    assert!(pts[0]["throughput_per_s"].as_f64().unwrap() > 50.0, "{v}");
    let _ = std::fs::remove_file(&json);
    let _ = std::fs::remove_file(&spec);
}

#[test]
fn replay_bad_input_is_a_clear_error() {
    let spec = tmp("bad.toml", "[datacenter]\nweb_app = \"smoke-signals\"\n");
    let o = bin().args(["datacenter", "replay", "--spec"]).arg(&spec).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(err.contains("bad.toml") && err.contains("web_app") && err.contains("unknown protocol"), "{err}");
    let good = tmp("good.toml", "[datacenter]\nbrowsers = 10\nmeasure_s = 0.5\nwarmup_s = 0.1\n");
    let o = bin().args(["datacenter", "replay", "--spec"]).arg(&good).args(["--trace", "/nonexistent/t.jsonl"]).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("/nonexistent/t.jsonl"), "{err}");
    let o = bin().args(["datacenter", "replay", "--spec", "/nonexistent/dc.toml"]).output().unwrap();
    assert!(!o.status.success() && String::from_utf8_lossy(&o.stderr).contains("/nonexistent/dc.toml"));
    let _ = std::fs::remove_file(&spec);
    let _ = std::fs::remove_file(&good);
}

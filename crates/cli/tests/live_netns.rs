//! Two hosts in network namespaces joined by a veth pair, with a known rate limit (TBF or
//! HTB; netem is not available here): the bandwidth interlab measures must be within 10 %
//! of the rate the kernel enforces, a figure interlab did not produce. Traffic stays inside
//! the namespaces this test creates (10.213.x.0/24). Skipped with a notice where
//! `ip netns add` is not permitted.

use std::process::{Output, Stdio};

mod common;
use common::netns::Pair;
use common::{spawn_with_banner, KillOnDrop};

const TOKEN: &str = "netns-test-token";

/// A daemon inside namespace b, killed on drop.
fn serve(p: &Pair) -> KillOnDrop {
    let bind = p.server_ip();
    let (child, line) = spawn_with_banner(p.exec(&p.b, &["serve", "--bind", &bind, "--port", "7400", "--auth-token", TOKEN, "--quiet"]).stderr(Stdio::null()));
    assert!(line.contains("listening on"), "daemon did not start: {line}");
    KillOnDrop(child)
}

fn measure_mbit(p: &Pair, pattern: &str, extra: &[&str]) -> f64 {
    let peer = p.server_ip();
    let o: Output = p
        .exec(&p.a, &["live", pattern, "--peer", &peer, "--auth-token", TOKEN, "--sizes", "64K", "--json", "--quiet"])
        .args(extra)
        .output()
        .expect("live runs");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out}{}", String::from_utf8_lossy(&o.stderr));
    let r: serde_json::Value = serde_json::from_str(out.lines().next().unwrap()).unwrap();
    assert_eq!(r["unit"], "MB/s");
    // Host facts name the veth and its driver.
    assert_eq!(r["host_local"]["interface"].as_str(), Some(p.va.as_str()));
    assert_eq!(r["host_local"]["driver"].as_str(), Some("veth"));
    r["value"].as_f64().unwrap() * 8.0
}

#[test]
fn tbf_and_htb_rate_limits_are_measured_within_ten_percent() {
    let Some(p) = Pair::new(1) else { return };
    let rate = 200.0;
    // Token bucket on the sender's egress.
    p.tc(&["qdisc", "add", "dev", &p.va, "root", "tbf", "rate", "200mbit", "burst", "64kb", "latency", "50ms"]);
    let _d = serve(&p);
    let got = measure_mbit(&p, "stream", &["--time", "1.5", "--warmup-time", "0.3"]);
    eprintln!("TBF 200 Mbit/s: interlab stream measured {got:.1} Mbit/s");
    assert!((got / rate - 1.0).abs() <= 0.10, "TBF {rate} Mbit/s: measured {got:.1} Mbit/s");
    // Hierarchical token bucket instead; two parallel streams share it.
    p.tc(&["qdisc", "del", "dev", &p.va, "root"]);
    p.tc(&["qdisc", "add", "dev", &p.va, "root", "handle", "1:", "htb", "default", "10"]);
    p.tc(&["class", "add", "dev", &p.va, "parent", "1:", "classid", "1:10", "htb", "rate", "200mbit", "ceil", "200mbit"]);
    let got = measure_mbit(&p, "multi-stream", &["--streams", "2", "--time", "1.5", "--warmup-time", "0.3"]);
    eprintln!("HTB 200 Mbit/s: interlab multi-stream (2) measured {got:.1} Mbit/s");
    assert!((got / rate - 1.0).abs() <= 0.10, "HTB {rate} Mbit/s: measured {got:.1} Mbit/s");
}

/// One spec, both engines, across namespaces: `interlab run --engine both` measures the
/// daemon in namespace b from namespace a over a 200 Mbit/s TBF, beside the model.
#[test]
fn one_spec_runs_live_and_in_the_model_across_namespaces() {
    let Some(p) = Pair::new(2) else { return };
    p.tc(&["qdisc", "add", "dev", &p.va, "root", "tbf", "rate", "200mbit", "burst", "64kb", "latency", "50ms"]);
    let _d = serve(&p);
    let dir = std::env::temp_dir().join(format!("interlab-netns-engines-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let spec = dir.join("stream.toml");
    std::fs::write(
        &spec,
        "[experiment]\nname = \"netns-stream\"\nprofile = \"r805-connectx-ddr\"\nengine = \"both\"\n\
         [pattern]\nkind = \"bandwidth\"\nop = \"send\"\nsizes = \"64K\"\nwindow_bytes = 1048576\n\
         [[series]]\nlabel = \"TCP\"\nsocket = \"eth\"\n[live]\ntime = \"1.5s\"\n",
    )
    .unwrap();
    let out = dir.join("out");
    let o = p
        .exec(&p.a, &["run", spec.to_str().unwrap(), "--peer", &p.server_ip(), "--auth-token", TOKEN, "--out", out.to_str().unwrap(), "-q"])
        .output()
        .expect("run runs");
    assert!(o.status.success(), "{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    let recs: Vec<serde_json::Value> = std::fs::read_to_string(out.join("results.jsonl")).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(recs.len(), 2, "one model and one live point");
    let live = recs.iter().find(|r| r["engine"] == "live").expect("a live record");
    let mbit = live["value"].as_f64().unwrap() * 8.0;
    eprintln!("run --engine both over TBF 200 Mbit/s: live {mbit:.1} Mbit/s");
    assert!((mbit / 200.0 - 1.0).abs() <= 0.10, "live stream over a 200 Mbit/s TBF: {mbit:.1} Mbit/s");
    let _ = std::fs::remove_dir_all(&dir);
}

//! End-to-end tests of `interlab serve` and `interlab live` on loopback: output formats,
//! sweeps, a client killed mid-run, a daemon killed mid-run, a port in use, refused binds.

mod common;

use common::{bin, text, Serve};
use std::io::{BufRead, BufReader, Read};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

/// A daemon that drops silent sessions after 20 s.
fn serve(extra: &[&str]) -> Serve {
    Serve::start(&[&["--idle-timeout", "20"], extra].concat())
}

fn live(args: &[&str]) -> Output {
    bin().arg("live").args(args).output().expect("live runs")
}

fn json_lines(o: &Output) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(&o.stdout).lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect()
}

#[test]
fn latency_json_has_model_fields_percentiles_and_host_facts() {
    let s = serve(&[]);
    let o = live(&["latency", "--peer", &s.addr, "--sizes", "64,1K", "--iterations", "2000", "--warmup", "50", "--json", "--quiet"]);
    assert!(o.status.success(), "{}", text(&o));
    let recs = json_lines(&o);
    assert_eq!(recs.len(), 2);
    for (r, size) in recs.iter().zip([64, 1024]) {
        // The model's record fields...
        for k in ["schema", "version", "engine", "experiment", "series", "profile", "pattern", "op", "transport", "ports", "processes", "metric", "unit", "seed", "warmup", "iterations", "window", "events", "spec"] {
            assert!(r.get(k).is_some(), "missing {k}: {r}");
        }
        assert_eq!(r["engine"], "live");
        assert_eq!(r["size_bytes"], size);
        assert_eq!(r["metric"], "latency_us");
        assert_eq!(r["iterations"], 2000);
        assert_eq!(r["summary"]["count"], 2000);
        for p in ["mean", "min", "max", "stddev", "p50", "p90", "p99", "p999"] {
            assert!(r["summary"][p].as_f64().unwrap() > 0.0, "{p}: {r}");
        }
        // ...plus host facts of both ends and CPU.
        assert_eq!(r["host_local"]["interface"], "lo");
        assert!(!r["host_remote"]["kernel"].as_str().unwrap().is_empty());
        assert!(r["rate_per_s"].as_f64().unwrap() > 0.0);
    }
}

#[test]
fn table_csv_out_dir_and_confidence() {
    let s = serve(&[]);
    let dir = std::env::temp_dir().join(format!("interlab-live-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let o = live(&["bandwidth", "--peer", &s.addr, "--sizes", "4K,64K", "--out", dir.to_str().unwrap(), "--quiet"]);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("MB/s") && out.contains("Gbit/s") && out.contains("65536"), "{out}");
    let csv = std::fs::read_to_string(dir.join("results.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 3, "{csv}");
    assert!(lines[0].starts_with("schema,version,engine") && lines[0].contains("cpu_local_system_pct"));
    assert_eq!(std::fs::read_to_string(dir.join("results.jsonl")).unwrap().lines().count(), 2);
    // CSV on stdout, with confidence control over time-bounded repetitions.
    let o = live(&["stream", "--peer", &s.addr, "--time", "0.2", "--warmup-time", "0.05", "--confidence", "95,50", "--reps", "2,3", "--csv", "--quiet"]);
    assert!(o.status.success(), "{}", text(&o));
    let csv = String::from_utf8_lossy(&o.stdout);
    let header = split_csv(csv.lines().next().unwrap());
    let row = split_csv(csv.lines().nth(1).unwrap());
    assert_eq!(header.len(), row.len());
    let col = |name: &str| row[header.iter().position(|h| h == name).unwrap()].as_str();
    assert_eq!(col("ci_level_pct"), "95");
    assert!(["2", "3"].contains(&col("repetitions")));
    assert!(col("value").parse::<f64>().unwrap() > 10.0);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Splits one CSV line, honouring quotes.
fn split_csv(line: &str) -> Vec<String> {
    let (mut out, mut cur, mut inq) = (Vec::new(), String::new(), false);
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if inq && chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            '"' => inq = !inq,
            ',' if !inq => out.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    out.push(cur);
    out
}

#[test]
fn client_killed_mid_run_then_daemon_serves_the_next() {
    let s = serve(&[]);
    let mut victim = bin()
        .args(["live", "stream", "--peer", &s.addr, "--time", "20", "--quiet"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    victim.kill().unwrap();
    victim.wait().unwrap();
    // Also a UDP client, whose death the daemon cannot see on the data socket.
    let mut victim = bin()
        .args(["live", "latency", "--transport", "udp", "--peer", &s.addr, "--time", "20", "--quiet"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    victim.kill().unwrap();
    victim.wait().unwrap();
    let t = Instant::now();
    let o = live(&["latency", "--peer", &s.addr, "--iterations", "500", "--json", "--quiet"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(json_lines(&o)[0]["value"].as_f64().unwrap() > 0.0);
    assert!(t.elapsed() < Duration::from_secs(10));
}

#[test]
fn daemon_killed_mid_sweep_keeps_measured_points_and_reports_the_error() {
    let mut s = serve(&[]);
    let mut client = bin()
        .args(["live", "latency", "--peer", &s.addr, "--sizes", "1..64K", "--iterations", "20000", "--json", "--quiet"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(client.stdout.take().unwrap());
    let mut first = String::new();
    out.read_line(&mut first).unwrap();
    // One point measured; now the daemon dies.
    s.child.kill().unwrap();
    s.child.wait().unwrap();
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    let status = client.wait().unwrap();
    let mut err = String::new();
    client.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert_eq!(status.code(), Some(1), "{err}");
    let recs: Vec<serde_json::Value> = std::iter::once(first.as_str()).chain(rest.lines()).filter(|l| !l.trim().is_empty()).map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(recs[0]["value"].as_f64().unwrap() > 0.0, "{}", recs[0]);
    let last = recs.last().unwrap();
    assert!(last["error"].as_str().unwrap().contains("daemon"), "{last}");
    assert!(last["value"].is_null());
    assert!(recs.len() < 17, "the sweep must stop after the daemon died");
    assert!(err.contains("stopping the sweep"), "{err}");
}

#[test]
fn port_in_use_and_unsafe_binds_are_refused() {
    let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = held.local_addr().unwrap().port().to_string();
    let o = bin().args(["serve", "--port", &port]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("address already in use"), "{}", text(&o));
    // Never serve beyond loopback without a secret (refused before binding).
    let o = bin().args(["serve", "--bind", "0.0.0.0", "--port", "0"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("without a shared secret"), "{}", text(&o));
}

#[test]
fn token_from_file_and_wrong_token() {
    let f = std::env::temp_dir().join(format!("interlab-live-token-{}", std::process::id()));
    std::fs::write(&f, "file-token-123\n").unwrap();
    let s = serve(&["--auth-token-file", f.to_str().unwrap()]);
    let o = live(&["rr", "--peer", &s.addr, "--auth-token", "file-token-123", "--iterations", "200", "--json", "--quiet"]);
    assert!(o.status.success(), "{}", text(&o));
    let r = &json_lines(&o)[0];
    assert_eq!(r["metric"], "transaction_us");
    assert!(!r["spec"].as_str().unwrap().contains("file-token-123"), "token leaked into the record");
    let o = live(&["rr", "--peer", &s.addr, "--auth-token", "not-the-token", "--iterations", "200", "--quiet"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).contains("authentication failed"), "{}", text(&o));
    let _ = std::fs::remove_file(&f);
}

#[test]
fn bad_arguments_name_what_was_expected() {
    for (args, expect) in [
        (&["nope", "--peer", "127.0.0.1"][..], "unknown pattern `nope`"),
        (&["crr", "--peer", "127.0.0.1", "--transport", "udp"][..], "connection-oriented"),
        (&["latency", "--peer", "127.0.0.1", "--transport", "udp", "--sizes", "1M"][..], "65507-byte"),
        (&["latency", "--peer", "127.0.0.1", "--sizes", "x"][..], "--sizes"),
        (&["latency", "--peer", "127.0.0.1", "--confidence", "97,5"][..], "90, 95, 99"),
        (&["hot-spot", "--peer", "127.0.0.1", "--peer", "127.0.0.2"][..], "one server"),
        (&["stream", "--peer", "127.0.0.1", "--iterations", "5"][..], "time-bounded"),
        (&["latency", "--peer", "127.0.0.1:1"][..], "cannot reach the daemon"),
        // The allocation bomb and other numbers out of range are refused before connecting.
        (&["latency", "--peer", "127.0.0.1:1", "--sizes", "64", "--iterations", "4294967295"][..], "out of range"),
        (&["latency", "--peer", "127.0.0.1:1", "--warmup", "4294967295"][..], "warm-up of 4294967295 iterations is out of range"),
        (&["bandwidth", "--peer", "127.0.0.1:1", "--window", "4294967295"][..], "window 4294967295 is out of range"),
        (&["stream", "--peer", "127.0.0.1:1", "--time", "1e300"][..], "invalid value '1e300' for '--time"),
        (&["stream", "--peer", "127.0.0.1:1", "--time", "100000"][..], "at most 86400 s"),
        (&["stream", "--peer", "127.0.0.1:1", "--sizes", "1G"][..], "out of range (1 B to 64 MiB"),
    ] {
        let o = live(args);
        assert!(!o.status.success(), "{args:?} succeeded");
        assert!(text(&o).contains(expect), "{args:?}: expected `{expect}` in: {}", text(&o));
    }
}

#[test]
fn token_from_the_environment_and_serve_limits() {
    // Neither --auth-token nor --auth-token-file: INTERLAB_AUTH_TOKEN (never on the command line).
    let (child, line) = common::spawn_with_banner(
        bin().args(["serve", "--port", "0", "--quiet", "--idle-timeout", "20"]).env("INTERLAB_AUTH_TOKEN", "env-token-456").stderr(Stdio::null()),
    );
    let s = Serve { child, addr: line.split_whitespace().nth(4).unwrap().to_string() };
    assert!(line.contains("auth on"), "{line}");
    let o = bin().args(["live", "rr", "--peer", &s.addr, "--iterations", "50", "--json", "--quiet"]).env("INTERLAB_AUTH_TOKEN", "env-token-456").output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let o = bin().args(["live", "rr", "--peer", &s.addr, "--iterations", "50", "--quiet"]).env("INTERLAB_AUTH_TOKEN", "wrong-token-789").output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).contains("authentication failed"), "{}", text(&o));
    drop(s);
    for (args, expect) in [
        (&["--handshake-timeout", "1e300"][..], "--handshake-timeout"),
        (&["--idle-timeout", "0"][..], "--idle-timeout"),
        (&["--max-sessions", "0"][..], "--max-sessions 0: out of range"),
        (&["--max-preauth", "100000"][..], "--max-preauth 100000: out of range"),
    ] {
        let o = bin().args(["serve", "--port", "0"]).args(args).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(text(&o).contains(expect), "{args:?}: {}", text(&o));
    }
}

#[test]
fn stream_intervals_add_up_to_the_total() {
    let s = serve(&[]);
    // JSON to stdout: the interval rows go to stderr while the run goes on.
    let o = live(&["multi-stream", "--peer", &s.addr, "--streams", "2", "--time", "1s", "--warmup-time", "100ms", "--interval", "250ms", "--json", "--quiet"]);
    assert!(o.status.success(), "{}", text(&o));
    let r = &json_lines(&o)[0];
    let iv = r["intervals"].as_array().unwrap_or_else(|| panic!("no intervals: {r}"));
    assert_eq!(iv.len(), 4, "{r}");
    for (k, i) in iv.iter().enumerate() {
        assert_eq!(i["repetition"], 1);
        assert_eq!(i["unit"], "MB/s");
        assert!((i["start_s"].as_f64().unwrap() - 0.25 * k as f64).abs() < 1e-9, "{i}");
        assert!(i["end_s"].as_f64().unwrap() > i["start_s"].as_f64().unwrap());
        assert!(i["bytes"].as_u64().unwrap() > 0);
    }
    assert!((iv[3]["end_s"].as_f64().unwrap() - 1.0).abs() < 0.1, "{}", iv[3]);
    // The senders' bytes over the measured second against the receivers' rate: the same
    // bytes, timed at the two ends.
    let bytes: u64 = iv.iter().map(|i| i["bytes"].as_u64().unwrap()).sum();
    let total = r["value"].as_f64().unwrap() * 1e6 * r["duration_s"].as_f64().unwrap();
    assert!((bytes as f64 / total - 1.0).abs() < 0.15, "intervals {bytes} B, total {total} B");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().filter(|l| l.contains("0.75-")).count(), 1, "{err}");
    // Without --interval the record has no intervals.
    let o = live(&["stream", "--peer", &s.addr, "--time", "200ms", "--json", "--quiet"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(json_lines(&o)[0].get("intervals").is_none());
}

#[test]
fn udp_stream_at_a_target_rate() {
    let s = serve(&[]);
    let o = live(&["stream", "--transport", "udp", "--sizes", "8K", "--peer", &s.addr, "--time", "1s", "--rate", "50M", "--json", "--quiet"]);
    assert!(o.status.success(), "{}", text(&o));
    let r = &json_lines(&o)[0];
    assert_eq!(r["offered_rate_mbps"].as_f64(), Some(50.0), "{r}");
    let achieved = r["achieved_rate_mbps"].as_f64().unwrap();
    assert!((achieved / 50.0 - 1.0).abs() < 0.10, "achieved {achieved} Mbit/s: {r}");
    assert!((r["value"].as_f64().unwrap() * 8.0 - achieved).abs() < 1e-6);
    assert!(r["loss_pct"].as_f64().is_some(), "{r}");
    // A paced sender sleeps: this client's own CPU stays far from a whole core.
    let own = r["cpu_local"]["process_pct"].as_f64().unwrap();
    assert!(own < 60.0, "client CPU {own} % of one CPU");
}

#[test]
fn cpu_pinning_and_refused_lists() {
    let s = serve(&["--cpu", "0"]);
    let o = live(&["latency", "--peer", &s.addr, "--iterations", "300", "--cpu", "0", "--json", "--quiet"]);
    assert!(o.status.success(), "{}", text(&o));
    let r = &json_lines(&o)[0];
    assert_eq!(r["pinned_cpus"], serde_json::json!([0]), "{r}");
    assert!(r["value"].as_f64().unwrap() > 0.0);
    // The data threads of both ends really run pinned (Linux: /proc/PID/task/TID/status).
    let client = common::KillOnDrop(bin().args(["live", "stream", "--peer", &s.addr, "--time", "1500ms", "--cpu", "0", "--quiet"]).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap());
    std::thread::sleep(Duration::from_millis(800));
    let affinity = |pid: u32, name: &str| -> Option<String> {
        std::fs::read_dir(format!("/proc/{pid}/task")).ok()?.flatten().find_map(|t| {
            let comm = std::fs::read_to_string(t.path().join("comm")).ok()?;
            (comm.trim() == name).then(|| std::fs::read_to_string(t.path().join("status")).ok())?.and_then(|st| st.lines().find(|l| l.starts_with("Cpus_allowed_list:")).map(|l| l.split_whitespace().nth(1).unwrap_or("").to_string()))
        })
    };
    assert_eq!(affinity(client.0.id(), "init-0").as_deref(), Some("0"), "client's sender thread");
    assert_eq!(affinity(s.child.id(), "resp-0").as_deref(), Some("0"), "daemon's receiver thread");
    drop(client);
    // Unpinned runs do not carry the field.
    let o = live(&["latency", "--peer", &s.addr, "--iterations", "100", "--json", "--quiet"]);
    assert!(json_lines(&o)[0].get("pinned_cpus").is_none());
    for args in [&["--cpu", "9999"][..], &["--cpu", "1-0"][..], &["--cpu", "x"][..]] {
        let o = live(&[&["latency", "--peer", &s.addr][..], args].concat());
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(text(&o).contains("--cpu"), "{}", text(&o));
    }
    assert!(text(&live(&["latency", "--peer", &s.addr, "--cpu", "9999"])).contains("usable CPUs"));
    let o = bin().args(["serve", "--port", "0", "--cpu", "9999"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}

#[test]
fn samples_file_and_histogram() {
    let s = serve(&[]);
    let f = std::env::temp_dir().join(format!("interlab-live-samples-{}.csv", std::process::id()));
    let o = live(&["latency", "--peer", &s.addr, "--sizes", "64,1K", "--iterations", "500", "--confidence", "95,90", "--reps", "2,2", "--samples", f.to_str().unwrap(), "--histogram", "--quiet"]);
    assert!(o.status.success(), "{}", text(&o));
    let csv = std::fs::read_to_string(&f).unwrap();
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("size_bytes,repetition,index,latency_us"));
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    // 2 sizes x 2 repetitions x 500 samples.
    assert_eq!(rows.len(), 2000);
    assert_eq!(rows.iter().filter(|r| r[0] == "1024" && r[1] == "2").count(), 500);
    assert_eq!(rows.last().unwrap()[2], "499");
    assert!(rows.iter().all(|r| r[3].parse::<f64>().unwrap() > 0.0));
    // The histogram under each row holds every sample of the point.
    let out = String::from_utf8_lossy(&o.stdout);
    let mut sums = vec![];
    let mut cur: Option<u64> = None;
    for l in out.lines() {
        if l.contains("histogram of") {
            assert!(l.contains("1000 samples"), "{l}");
            if let Some(c) = cur.take() {
                sums.push(c);
            }
            cur = Some(0);
        } else if let (Some(c), true) = (cur.as_mut(), l.trim_start().starts_with('[')) {
            let count: u64 = l.split(')').nth(1).unwrap().split_whitespace().next().unwrap().parse().unwrap();
            *c += count;
        }
    }
    sums.extend(cur);
    assert_eq!(sums, vec![1000, 1000], "{out}");
    // Not for bandwidth patterns.
    let o = live(&["stream", "--peer", &s.addr, "--histogram"]);
    assert_eq!(o.status.code(), Some(2));
    let _ = std::fs::remove_file(&f);
}

#[test]
fn new_flags_check_their_bounds() {
    for (args, expect) in [
        (&["stream", "--peer", "127.0.0.1:1", "--interval", "1ms"][..], "at least 0.01 s"),
        (&["stream", "--peer", "127.0.0.1:1", "--interval", "0"][..], "--interval"),
        (&["bandwidth", "--peer", "127.0.0.1:1", "--interval", "1s"][..], "--interval applies to stream"),
        (&["stream", "--peer", "127.0.0.1:1", "--rate", "10"][..], "out of range"),
        (&["stream", "--peer", "127.0.0.1:1", "--rate", "100Q"][..], "unknown unit"),
        (&["rr", "--peer", "127.0.0.1:1", "--rate", "1M"][..], "--rate applies to stream patterns"),
        (&["bandwidth", "--peer", "127.0.0.1:1", "--samples", "/tmp/x.csv"][..], "latency-like"),
        (&["latency", "--peer", "127.0.0.1:1", "--samples", "/nonexistent-dir/x.csv"][..], "--samples"),
    ] {
        let o = live(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(text(&o).contains(expect), "{args:?}: expected `{expect}` in: {}", text(&o));
    }
}

#[test]
fn latency_intervals_hold_every_sample() {
    let s = serve(&[]);
    for args in [&["latency", "--time", "600ms", "--interval", "200ms"][..], &["rr", "--iterations", "3000", "--interval", "20ms"][..]] {
        let o = live(&[args, &["--peer", &s.addr, "--json", "--quiet"][..]].concat());
        assert!(o.status.success(), "{}", text(&o));
        let r = &json_lines(&o)[0];
        let iv = r["intervals"].as_array().unwrap_or_else(|| panic!("no intervals: {r}"));
        assert!(!iv.is_empty());
        assert!(iv.iter().all(|i| i["unit"] == "us" && i.get("bytes").is_none()), "{r}");
        // The calibration phases of time mode are not reported: the intervals hold exactly
        // the measured samples, and their weighted means give the value.
        let n: u64 = iv.iter().map(|i| i["samples"].as_u64().unwrap()).sum();
        assert_eq!(n, r["summary"]["count"].as_u64().unwrap(), "{r}");
        let mean = iv.iter().map(|i| i["samples"].as_f64().unwrap() * i["value"].as_f64().unwrap()).sum::<f64>() / n as f64;
        let value = r["value"].as_f64().unwrap();
        assert!((mean / value - 1.0).abs() < 1e-6, "{mean} vs {value}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("mean_us"), "{err}");
    }
}

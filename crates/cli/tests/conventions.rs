//! The command-line conventions of README "Command-line conventions", subcommand by
//! subcommand: help text, `--json [FILE]` to standard output and to a file (one
//! `"schema": 1` key and a `"kind"` in every document), durations with units, and exit
//! status 0 success / 1 failed measurement / 2 bad usage or input.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_interlab"))
}

fn run(args: &[&str]) -> Output {
    bin().args(args).stdin(Stdio::null()).output().expect("binary runs")
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("interlab-conv-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn repo(p: &str) -> String {
    format!("{}/../../{p}", env!("CARGO_MANIFEST_DIR"))
}

/// Every subcommand path the binary has.
const COMMANDS: &[&[&str]] = &[
    &["reproduce"],
    &["run"],
    &["merge"],
    &["bench", "kernel"],
    &["bench", "compare"],
    &["bench", "model"],
    &["serve"],
    &["live"],
    &["mpi"],
    &["cluster", "up"],
    &["cluster", "down"],
    &["datacenter", "serve"],
    &["datacenter", "drive"],
    &["datacenter", "populate"],
    &["datacenter", "trace"],
    &["datacenter", "replay"],
    &["calibrate"],
    &["pvfs"],
    &["profiles"],
];

/// Subcommands that write a JSON document or JSON Lines.
const WITH_JSON: &[&[&str]] = &[
    &["reproduce"],
    &["run"],
    &["bench", "kernel"],
    &["bench", "model"],
    &["live"],
    &["mpi"],
    &["datacenter", "drive"],
    &["datacenter", "replay"],
    &["calibrate"],
    &["pvfs"],
    &["profiles"],
];

/// Subcommands that print progress or log lines.
const QUIET: &[&[&str]] = &[
    &["reproduce"],
    &["run"],
    &["serve"],
    &["live"],
    &["mpi"],
    &["datacenter", "serve"],
    &["datacenter", "drive"],
    &["datacenter", "replay"],
    &["calibrate"],
    &["pvfs"],
];

fn help(cmd: &[&str]) -> String {
    let mut a: Vec<&str> = cmd.to_vec();
    a.push("--help");
    let o = run(&a);
    assert!(o.status.success(), "{cmd:?} --help: {}", text(&o));
    String::from_utf8_lossy(&o.stdout).to_string()
}

#[test]
fn every_subcommand_has_help_and_the_shared_flags() {
    for cmd in COMMANDS {
        let h = help(cmd);
        assert!(h.contains("Usage: interlab"), "{cmd:?}: {h}");
        // Progress or log lines can be silenced wherever a command has any.
        if QUIET.contains(cmd) {
            assert!(h.contains("-q, --quiet"), "{cmd:?} lacks -q/--quiet: {h}");
        }
        // --out is always a directory.
        if let Some(line) = h.lines().find(|l| l.trim_start().starts_with("--out ")) {
            assert!(line.contains("<DIR>") || line.contains("<OUT>"), "{cmd:?}: --out is not a directory: {line}");
            assert!(line.to_lowercase().contains("director"), "{cmd:?}: {line}");
        }
        // Durations say they take units.
        for line in h.lines().filter(|l| l.contains("timeout") || l.contains("--time ") || l.contains("--duration")) {
            assert!(!line.contains("<SECONDS>"), "{cmd:?}: a duration flag without units: {line}");
        }
    }
    for cmd in WITH_JSON {
        let h = help(cmd);
        let line = h.lines().find(|l| l.trim_start().starts_with("--json")).unwrap_or_else(|| panic!("{cmd:?} lacks --json: {h}"));
        assert!(line.contains("[FILE]") || line.contains("[<FILE>]"), "{cmd:?}: --json takes an optional FILE: {line}");
        assert!(h.contains("standard output"), "{cmd:?}: help does not say --json defaults to standard output");
    }
}

fn json_doc(o: &Output) -> serde_json::Value {
    assert!(o.status.success(), "{}", text(&o));
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}): {}", String::from_utf8_lossy(&o.stdout)))
}

fn assert_header(v: &serde_json::Value, kind: &str) {
    assert_eq!(v["schema"], 1, "{v}");
    assert_eq!(v["kind"], kind, "{v}");
    assert!(v["version"].is_string(), "{v}");
}

#[test]
fn json_goes_to_stdout_alone_or_to_a_file() {
    let d = scratch("json");
    // profiles: list and one profile.
    let v = json_doc(&run(&["profiles", "--json"]));
    assert_header(&v, "interlab-profiles");
    assert!(v["profiles"].as_array().unwrap().len() >= 5);
    let v = json_doc(&run(&["profiles", "r805-connectx-ddr", "--json", "-"]));
    assert_header(&v, "interlab-profile");
    assert!(v["parameters"]["host"].is_object(), "{v}");
    // bench model, to stdout and to a file.
    let v = json_doc(&run(&["bench", "model", "--bytes", "1M", "--json"]));
    assert_header(&v, "interlab-bench-model");
    // RC and, as bench/ns3/bulk.cc, TCP over an 8 Gb/s link: each packet by packet and in trains.
    let runs = v["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 4, "{v}");
    let tcp: Vec<_> = runs.iter().filter(|r| r["tcp"] == true).collect();
    assert_eq!(tcp.len(), 2, "{v}");
    for r in tcp {
        // 1 MiB in 2 KiB segments, below the link's 1000 MB/s.
        assert_eq!((r["bytes"].as_u64(), r["packets"].as_f64()), (Some(1 << 20), Some(512.0)), "{r}");
        let mbps = r["simulated_mbytes_per_s"].as_f64().unwrap();
        assert!(mbps > 10.0 && mbps < 1000.0, "{r}");
    }
    let f = d.join("bench.json");
    let o = run(&["bench", "model", "--bytes", "1M", "--json", f.to_str().unwrap()]);
    assert!(o.status.success() && String::from_utf8_lossy(&o.stdout).contains("packets_per_s="), "{}", text(&o));
    assert_header(&serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap(), "interlab-bench-model");
    // pvfs.
    let v = json_doc(&run(&["pvfs", "--spec", &repo("studies/sdp/pvfs-fig8.toml"), "--json"]));
    assert_header(&v, "interlab-pvfs");
    assert!(v["series"].as_array().unwrap().len() >= 2, "{v}");
    // run: JSON Lines records and CSV to stdout; the table then goes to stderr.
    let out = d.join("run");
    let o = run(&["run", &repo("studies/pcie/fig5.toml"), "--out", out.to_str().unwrap(), "--json", "-q"]);
    assert!(o.status.success(), "{}", text(&o));
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&o.stdout).lines().map(|l| serde_json::from_str(l).expect("a JSON line")).collect();
    assert_eq!(lines.len(), 6, "six series of one point each");
    assert!(lines.iter().all(|r| r["schema"] == 1 && r["experiment"] == "pcie-fig5"));
    assert!(String::from_utf8_lossy(&o.stderr).contains("Fetch-and-add PCIe"), "the table goes to stderr");
    let o = run(&["run", &repo("studies/pcie/fig5.toml"), "--out", out.to_str().unwrap(), "--csv", "-q"]);
    let csv = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(csv.starts_with("schema,version,engine"), "{csv}");
    assert_eq!(csv.lines().count(), 7);
    let o = run(&["run", &repo("studies/pcie/fig5.toml"), "--out", out.to_str().unwrap(), "--csv", "--json"]);
    assert_eq!(o.status.code(), Some(2), "both to stdout: {}", text(&o));
    // replay.
    let spec = d.join("dc.toml");
    std::fs::write(&spec, "[datacenter]\nthink_scale = 0.1\nwarmup_s = 0.2\nmeasure_s = 0.5\nbrowsers = [20]\n").unwrap();
    let v = json_doc(&run(&["datacenter", "replay", "--spec", spec.to_str().unwrap(), "--json", "-q"]));
    assert_header(&v, "interlab-datacenter-replay");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn exit_status_two_for_bad_input_in_every_subcommand() {
    let d = scratch("bad");
    let missing = d.join("missing.toml");
    let m = missing.to_str().unwrap();
    let cases: &[&[&str]] = &[
        &["reproduce", "--study", "nope", "--out", d.to_str().unwrap()],
        &["run", m],
        &["run", &repo("studies/sdp/pvfs-fig8.toml")],
        &["bench", "kernel", "--events", "0"],
        &["bench", "model", "--bytes", "3x"],
        &["serve", "--idle-timeout", "soon"],
        &["live", "latency", "--peer", "127.0.0.1:1", "--time", "3x"],
        &["live", "nope", "--peer", "127.0.0.1:1"],
        &["datacenter", "serve", "--request-timeout", "2d"],
        &["datacenter", "drive", "--duration", "soon"],
        &["datacenter", "trace", m],
        &["datacenter", "replay", "--spec", m],
        &["datacenter", "replay", "--spec", &repo("studies/vpi/fig1.toml")],
        &["calibrate", "--peer", "127.0.0.1:1", "--profile", m, "--base", "no-such-profile"],
        &["pvfs", "--spec", &repo("studies/vpi/fig1.toml")],
        &["profiles", m],
        &["no-such-command"],
    ];
    for args in cases {
        let o = run(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        let t = text(&o);
        assert!(!t.contains("panicked"), "{args:?}: {t}");
        assert!(t.contains("error"), "{args:?}: no error message: {t}");
    }
    // Specs of another kind name the command that runs them.
    assert!(text(&run(&["run", &repo("studies/sdp/pvfs-fig8.toml")])).contains("interlab pvfs --spec"));
    assert!(text(&run(&["pvfs", "--spec", &repo("studies/vpi/fig1.toml")])).contains("interlab run"));
    assert!(text(&run(&["datacenter", "replay", "--spec", &repo("studies/sdp/pvfs-fig8.toml")])).contains("interlab pvfs --spec"));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn exit_status_one_when_the_peer_cannot_be_reached() {
    let d = scratch("unreachable");
    // A loopback port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let peer = format!("127.0.0.1:{port}");
    let url = format!("http://127.0.0.1:{port}/");
    let prof = d.join("p.toml");
    let cases: Vec<Vec<&str>> = vec![
        vec!["live", "latency", "--peer", &peer, "--connect-timeout", "1s", "-q"],
        vec!["calibrate", "--peer", &peer, "--profile", prof.to_str().unwrap(), "--quick", "--connect-timeout", "1s", "-q"],
        vec!["datacenter", "drive", "--url", &url, "--duration", "1s", "-q"],
    ];
    for args in &cases {
        let o = run(args);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", text(&o));
        assert!(text(&o).contains(&port.to_string()), "{args:?}: the error names the address: {}", text(&o));
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn spec_typos_get_a_suggestion_and_dry_run_shows_every_key() {
    let d = scratch("spec");
    let spec = d.join("typo.toml");
    std::fs::write(&spec, "[experiment]\nname = \"t\"\nprofile = \"r805-connectx-ddr\"\n[pattern]\nkind = \"latency\"\nop = \"send\"\nsizes = \"1..64\"\n[[series]]\nlable = \"SDP\"\nsocket = \"sdp\"\n").unwrap();
    let o = run(&["run", spec.to_str().unwrap(), "--dry-run"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("series[0].lable") && text(&o).contains("did you mean `label`?"), "{}", text(&o));
    std::fs::write(&spec, "[experiment]\nname = \"t\"\nprofile = \"r805-connectx-ddr\"\n[patern]\nkind = \"latency\"\n").unwrap();
    let o = run(&["run", spec.to_str().unwrap()]);
    assert!(text(&o).contains("did you mean `pattern`?"), "{}", text(&o));
    // --dry-run of an IPoIB series names its socket stack, not a verbs transport.
    std::fs::write(
        &spec,
        "[experiment]\nname = \"t\"\nprofile = \"r805-connectx-ddr\"\n[pattern]\nkind = \"bandwidth\"\nop = \"send\"\nsizes = \"64K\"\n[[series]]\nlabel = \"IPoIB-UD LRO\"\nsocket = \"ipoib-ud\"\nlro = true\nprocesses_per_node = [1, 2]\n",
    )
    .unwrap();
    let o = run(&["run", spec.to_str().unwrap(), "--dry-run"]);
    assert!(o.status.success(), "{}", text(&o));
    let t = String::from_utf8_lossy(&o.stdout);
    for want in ["socket", "ipoib-ud lro=true", "processes_per_node 1, 2", "sizes", "64K", "2 points", "socket_trains", "where exact (one socket connection)"] {
        assert!(t.contains(want), "dry run lacks `{want}`: {t}");
    }
    assert!(!t.contains("service"), "a socket series shows no verbs service: {t}");
    let _ = std::fs::remove_dir_all(&d);
}

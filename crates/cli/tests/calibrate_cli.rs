//! `interlab calibrate` end to end on loopback: the written profile loads with
//! `Profile::load` and carries the fitted keys with `C:` provenance; `--check` compares it
//! with live runs and writes JSON; bad input fails with a clear message and no panic.

mod common;

use common::{bin, text, Serve};
use interlab_model::Profile;
use std::process::Output;

fn no_panic(o: &Output) {
    assert!(!text(o).contains("panicked"), "{}", text(o));
}

/// The value and provenance of `key` in `[section]` of profile text.
fn entry<'a>(t: &'a str, section: &str, key: &str) -> &'a str {
    let head = format!("\n[{section}]\n");
    let body = &t[t.find(&head).unwrap_or_else(|| panic!("no {head}"))..];
    let body = &body[head.len()..];
    let body = &body[..body.find("\n[").unwrap_or(body.len())];
    let head = head.trim();
    body.lines().find(|l| l.split('=').next().is_some_and(|k| k.trim() == key)).unwrap_or_else(|| panic!("no {key} in {head}"))
}

#[test]
fn quick_calibration_writes_a_loadable_profile_then_check_compares() {
    let s = Serve::start(&[]);
    let dir = std::env::temp_dir().join(format!("ilab-cal-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("lo.toml");
    let o = bin().args(["calibrate", "--peer", &s.addr, "--profile", out.to_str().unwrap(), "--quick"]).output().unwrap();
    no_panic(&o);
    assert!(o.status.success(), "{}", text(&o));
    let p = Profile::load(out.to_str().unwrap()).unwrap_or_else(|e| panic!("{e}"));
    assert!(p.id.starts_with("calibrated-"), "{}", p.id);
    let st = p.stack.as_ref().unwrap();
    assert!(st.syscall_ns > 0.0 && st.copy_mbytes_per_s > 0.0 && st.tcp_tx_ns > 0.0 && st.wakeup_ns > 0.0);
    let t = std::fs::read_to_string(&out).unwrap();
    for key in [
        "syscall_ns", "copy_mbytes_per_s", "mem_copy_mbytes_per_s", "tcp_tx_ns", "tcp_rx_ns", "ip_rx_ns", "tcp_ack_tx_ns", "tcp_ack_rx_ns",
        "interrupt_ns", "wakeup_ns", "tcp_handshake_us",
    ] {
        assert!(entry(&t, "stack", key).contains("src = \"C: fitted by interlab calibrate from"), "{}", entry(&t, "stack", key));
    }
    for key in ["lane_gbps", "mtu_bytes", "tx_ns", "rx_ns"] {
        assert!(entry(&t, "eth", key).contains("src = \"C: fitted by interlab calibrate from"), "{}", entry(&t, "eth", key));
    }
    // Keys not fitted keep the base's value and provenance.
    assert!(entry(&t, "stack", "sdp_tx_ns").contains("fitted to the given SDP buffered-copy latency"));
    assert_eq!(p.eth.as_ref().unwrap().link.mtu_bytes, 65536, "loopback MTU");
    // Compare the written profile with live runs.
    let json = dir.join("cmp.json");
    let o = bin().args(["calibrate", "--peer", &s.addr, "--profile", out.to_str().unwrap(), "--check", "--quick", "--json", json.to_str().unwrap()]).output().unwrap();
    no_panic(&o);
    assert!(o.status.success(), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 7);
    for r in rows {
        assert!(r["model"].is_number() && r["live"].is_number() && r["ratio"].is_number(), "{r}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_input_is_explained() {
    let dir = std::env::temp_dir().join(format!("ilab-cal-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("p.toml");
    let outs = out.to_str().unwrap();
    // Unreachable peer: nothing listens on this loopback port.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let o = bin().args(["calibrate", "--peer", &format!("127.0.0.1:{port}"), "--profile", outs, "--quick", "--connect-timeout", "1"]).output().unwrap();
    no_panic(&o);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o)); // exit 1: the measurement failed (an unreachable daemon)
    assert!(text(&o).contains("127.0.0.1"), "{}", text(&o));
    assert!(!out.exists(), "no profile written on failure");
    // Unwritable --out (a directory that does not exist), before anything is measured.
    let o = bin().args(["calibrate", "--peer", "127.0.0.1:1", "--profile", "/nonexistent-dir/x/p.toml"]).output().unwrap();
    no_panic(&o);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("--profile /nonexistent-dir/x/p.toml: cannot write"), "{}", text(&o));
    let o = bin().args(["calibrate", "--peer", "127.0.0.1:1", "--profile", dir.to_str().unwrap()]).output().unwrap();
    assert!(text(&o).contains("is a directory"), "{}", text(&o));
    // Unknown --base.
    let o = bin().args(["calibrate", "--peer", "127.0.0.1:1", "--profile", outs, "--base", "no-such-profile"]).output().unwrap();
    no_panic(&o);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("--base no-such-profile: not a built-in profile"), "{}", text(&o));
    // A base without the socket sections.
    let o = bin().args(["calibrate", "--peer", "127.0.0.1:1", "--profile", outs, "--base", "xeon-mt25208-pcie"]).output().unwrap();
    assert!(text(&o).contains("has no [stack] section"), "{}", text(&o));
    // A bad peer string.
    let o = bin().args(["calibrate", "--peer", "", "--profile", outs]).output().unwrap();
    no_panic(&o);
    assert_eq!(o.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `calibrate --from`: perftest and OSU text outputs against the model, every point with
/// its file and line; a truncated file is refused naming its line.
#[test]
fn perftest_and_osu_outputs_are_compared_with_the_model() {
    let dir = std::env::temp_dir().join(format!("ilab-cal-from-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let lat = dir.join("write_lat.txt");
    std::fs::write(
        &lat,
        "                    RDMA_Write Latency Test\n #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]\n 2       1000          3.80           13.62        3.92\n 1024    1000          6.70           15.10        6.90\n",
    )
    .unwrap();
    let bw = dir.join("send_bw.txt");
    std::fs::write(&bw, "                    Send BW Test\n #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n 65536      1000             940.00            938.10            0.015\n").unwrap();
    let o = bin().args(["calibrate", "--base", "xeon-mt25208-pcie", "--from", lat.to_str().unwrap(), "--from", bw.to_str().unwrap(), "--json"]).output().unwrap();
    no_panic(&o);
    assert!(o.status.success(), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["kind"], "interlab-calibrate-from");
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    assert!(rows[0]["source"].as_str().unwrap().ends_with("write_lat.txt:3"), "{v}");
    // perftest MB/sec is 2^20 B/s: 938.10 is 983.67 x 10^6 B/s, the model's 4X SDR peak.
    assert!((rows[2]["measured"].as_f64().unwrap() - 938.10 * 1.048576).abs() < 1e-6);
    let r = rows[2]["ratio"].as_f64().unwrap();
    assert!((0.9..=1.1).contains(&r), "the model's SDR send bandwidth against 983.7 x 10^6 B/s: ratio {r}");
    // Truncated: a data line with too few columns.
    std::fs::write(&lat, "                    RDMA_Write Latency Test\n #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]\n 2       1000          3.80\n").unwrap();
    let o = bin().args(["calibrate", "--from", lat.to_str().unwrap()]).output().unwrap();
    no_panic(&o);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("write_lat.txt line 3"), "{}", text(&o));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `calibrate --from ... --profile OUT`: outputs that the model wrote with known adapter
/// and MPI costs are fitted back from the unchanged base; the written profile names the
/// file and line each value came from; a parameter no input constrains is refused by name.
#[test]
fn from_files_fits_and_writes_a_profile_naming_file_and_line() {
    use interlab_experiment::calibrate::model_for_tool;
    use interlab_experiment::toolout::{render, Tool};
    use std::sync::Arc;
    let dir = std::env::temp_dir().join(format!("ilab-cal-fit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let base = Profile::load("xeon-mt25208-pcie").unwrap();
    let mut truth = base.clone();
    truth.adapter.tx_wqe_ns = 700.0;
    truth.mpi.as_mut().unwrap().overhead_ns = 800.0;
    let truth = Arc::new(truth);
    let mut files = Vec::new();
    for (tool, name, sizes) in [
        (Tool::PerftestLat { op: "rdma_write" }, "write_lat.txt", &[2u64, 128, 4096][..]),
        (Tool::OsuLatency, "osu_latency.txt", &[0u64, 8, 1024][..]),
        (Tool::PerftestBw { op: "send", bidirectional: false }, "send_bw.txt", &[2u64, 65536][..]),
    ] {
        let pts: Vec<(u64, f64)> = sizes.iter().map(|&s| (s, model_for_tool(&truth, tool, s).unwrap())).collect();
        let f = dir.join(name);
        std::fs::write(&f, render(tool, &pts)).unwrap();
        files.push(f);
    }
    let out = dir.join("fitted.toml");
    let mut args = vec!["calibrate".to_string(), "--base".into(), "xeon-mt25208-pcie".into(), "--profile".into(), out.display().to_string(), "--json".into()];
    for f in &files {
        args.extend(["--from".to_string(), f.display().to_string()]);
    }
    let o = bin().args(&args).output().unwrap();
    no_panic(&o);
    assert!(o.status.success(), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["rows"].as_array().unwrap().len(), 8);
    assert_eq!(v["rows"].as_array().unwrap().iter().filter(|r| r["role"] == "predicted").count() as u64, v["predicted"].as_u64().unwrap());
    let p = Profile::load(&out.display().to_string()).unwrap();
    assert!((p.adapter.tx_wqe_ns / 700.0 - 1.0).abs() < 0.02, "tx_wqe_ns {}", p.adapter.tx_wqe_ns);
    assert!((p.mpi.as_ref().unwrap().overhead_ns / 800.0 - 1.0).abs() < 0.02, "overhead_ns {}", p.mpi.as_ref().unwrap().overhead_ns);
    let t = std::fs::read_to_string(&out).unwrap();
    let e = entry(&t, "adapter", "tx_wqe_ns");
    assert!(e.contains("src = \"C: fitted by interlab calibrate --from to ") && e.contains("write_lat.txt line 6 (ib_write_lat 2 B"), "{e}");
    assert!(entry(&t, "mpi", "overhead_ns").contains("osu_latency.txt line 3"), "{t}");
    // Keys nothing constrained keep the base's value and provenance.
    assert!(entry(&t, "adapter", "responder_setup_ns").contains("src = \"C: responder context"), "{t}");
    // Nothing here constrains the completion cost or the RDMA-read responder: refused.
    let mut bad = args.clone();
    bad.extend(["--fit".to_string(), "host.cqe_poll_ns".into()]);
    let o = bin().args(&bad).output().unwrap();
    no_panic(&o);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--fit host.cqe_poll_ns: no input constrains it"), "{}", text(&o));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The real outputs under examples/toolout (README there cites them) parse and fit: every
/// point is printed, each fitted parameter names its file and line, the rest is predicted.
#[test]
fn real_perftest_and_osu_outputs_fit() {
    let ex = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/toolout/");
    for (base, files, fitted) in [
        ("epyc-hdr-pcie4".to_string(), vec!["spiderpool-cx5-roce-macvlan.ib_read_lat.txt", "spiderpool-cx5-roce-sriov.ib_read_lat.txt"], vec!["adapter.responder_setup_ns"]),
        (format!("{ex}base-roce40g-mpi.toml"), vec!["ompi-devel-14403-roce40g.osu_latency.txt"], vec!["mpi.overhead_ns", "mpi.copy_mbytes_per_s"]),
        (format!("{ex}base-hdr-mpi.toml"), vec!["ucx-8851-cx6-hdr.osu_bw.txt"], vec!["link.framing_bytes", "mpi.copy_mbytes_per_s"]),
    ] {
        let mut args = vec!["calibrate".to_string(), "--base".into(), base.clone(), "--json".into()];
        for f in &files {
            args.extend(["--from".to_string(), format!("{ex}{f}")]);
        }
        let o = bin().args(&args).output().unwrap();
        no_panic(&o);
        assert!(o.status.success(), "{base}: {}", text(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let got: Vec<&str> = v["fitted"].as_array().unwrap().iter().map(|f| f["parameter"].as_str().unwrap()).collect();
        assert_eq!(got, fitted, "{base}");
        let rows = v["rows"].as_array().unwrap();
        assert_eq!(rows.iter().filter(|r| r["role"] == "fitted").count(), fitted.len());
        assert!(rows.iter().all(|r| r["model"].is_number()), "{v}");
        assert!(v["predicted"].as_u64().unwrap() >= 1);
    }
}

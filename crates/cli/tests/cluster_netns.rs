//! `interlab cluster up --hosts` over real ssh into two hosts: network namespaces a and b
//! (joined by a veth pair, 10.213.<subnet>.1 and .2), each running its own sshd with a host
//! key and an authorized user key made for this test in a temp directory. From namespace a:
//! `cluster up` starts one `interlab serve` in each namespace through ssh, a fan-in runs
//! across both with `live --peers-file`, and `cluster down` stops them; afterwards neither
//! namespace holds any process but its sshd. Skipped, with a printed reason, where the test
//! is not root, openssh-server is missing or `ip netns add` is not permitted.

mod common;

use common::netns::Pair;
use common::text;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

/// sshd processes of the test, killed on drop (before the namespaces go).
struct Sshds(Vec<Child>);

impl Drop for Sshds {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn in_ns(ns: &str, prog: &str) -> Command {
    let mut c = Command::new("ip");
    c.args(["netns", "exec", ns, prog]);
    c
}

/// Pids in namespace `ns` (`ip netns pids`).
fn ns_pids(ns: &str) -> Vec<i32> {
    let o = Command::new("ip").args(["netns", "pids", ns]).output().unwrap();
    String::from_utf8_lossy(&o.stdout).split_whitespace().filter_map(|p| p.parse().ok()).collect()
}

fn comm(pid: i32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/cmdline")).map(|s| s.replace('\0', " ").trim().to_string()).unwrap_or_default()
}

fn skip(why: &str) {
    eprintln!("NOTICE: skipping the ssh-in-namespaces cluster test: {why}");
}

#[test]
fn cluster_up_over_ssh_into_two_namespaces_runs_a_fan_in_and_down_leaves_nothing() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return skip("needs root (network namespaces, sshd)");
    }
    for p in ["/usr/sbin/sshd", "/usr/bin/ssh", "/usr/bin/ssh-keygen"] {
        if !Path::new(p).exists() {
            return skip(&format!("{p} is missing (apt-get install openssh-server openssh-client)"));
        }
    }
    let Some(pair) = Pair::new(7) else { return skip("network namespaces unavailable (see above)") };
    let dir: PathBuf = std::env::temp_dir().join(format!("interlab-cluster-netns-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let d = dir.display().to_string();
    for k in ["hostkey", "userkey"] {
        let o = Command::new("ssh-keygen").args(["-q", "-t", "ed25519", "-N", "", "-f"]).arg(dir.join(k)).output().unwrap();
        assert!(o.status.success(), "{}", text(&o));
    }
    let _ = std::fs::create_dir_all("/run/sshd");
    let ips = [format!("10.213.{}.1", pair.subnet), pair.server_ip()];
    let mut sshds = Sshds(vec![]);
    for (ns, ip) in [(&pair.a, &ips[0]), (&pair.b, &ips[1])] {
        let cfg = dir.join(format!("sshd_config.{ns}"));
        std::fs::write(
            &cfg,
            format!("Port 22\nListenAddress {ip}\nHostKey {d}/hostkey\nAuthorizedKeysFile {d}/userkey.pub\nPermitRootLogin prohibit-password\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\nPidFile none\n"),
        )
        .unwrap();
        sshds.0.push(in_ns(ns, "/usr/sbin/sshd").args(["-D", "-f"]).arg(&cfg).arg("-E").arg(dir.join(format!("sshd.{ns}.log"))).spawn().unwrap());
    }
    let wrapper = dir.join("ssh");
    std::fs::write(&wrapper, format!("#!/bin/sh\nexec ssh -i {d}/userkey -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -o ConnectTimeout=5 -o BatchMode=yes \"$@\"\n")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let w = wrapper.to_str().unwrap();
    // Both sshds answer from namespace a (the client's) within 10 s.
    for ip in &ips {
        let t = Instant::now();
        loop {
            let o = in_ns(&pair.a, w).args([ip.as_str(), "true"]).output().unwrap();
            if o.status.success() {
                break;
            }
            assert!(t.elapsed() < Duration::from_secs(10), "sshd at {ip} does not answer: {}\n{}", text(&o), std::fs::read_to_string(dir.join(format!("sshd.{}.log", pair.b))).unwrap_or_default());
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    let sshd_pids: Vec<i32> = sshds.0.iter().map(|c| c.id() as i32).collect();
    let hosts = dir.join("hosts");
    std::fs::write(&hosts, format!("# two hosts: namespaces {} and {}\n{}\n{}\n", pair.a, pair.b, ips[0], ips[1])).unwrap();
    let peers = dir.join("peers");
    let (ps, bin) = (peers.to_str().unwrap(), env!("CARGO_BIN_EXE_interlab"));
    let o = in_ns(&pair.a, bin)
        .args(["cluster", "up", "--hosts", hosts.to_str().unwrap(), "--ssh", w, "--remote-bin", bin, "--peers-file", ps, "--exit-idle", "60s", "--timeout", "30s"])
        .output()
        .unwrap();
    assert!(o.status.success(), "cluster up: {}", text(&o));
    let list = std::fs::read_to_string(&peers).unwrap();
    let addrs: Vec<&str> = list.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(addrs.len(), 2, "{list}");
    assert!(addrs[0].starts_with(&format!("{}:", ips[0])) && addrs[1].starts_with(&format!("{}:", ips[1])), "{list}");
    // One daemon in each namespace.
    let daemons = |ns: &str| ns_pids(ns).into_iter().filter(|&p| std::fs::read_to_string(format!("/proc/{p}/comm")).is_ok_and(|c| c.trim() == "interlab") && comm(p).contains(" serve ")).count();
    assert_eq!((daemons(&pair.a), daemons(&pair.b)), (1, 1), "a daemon in each namespace");
    let o = in_ns(&pair.a, bin).args(["live", "fan-in", "--peers-file", ps, "--sizes", "4K", "--iterations", "5", "--warmup", "1", "--json", "--quiet"]).output().unwrap();
    assert!(o.status.success(), "fan-in: {}", text(&o));
    let rec: serde_json::Value = serde_json::from_str(String::from_utf8_lossy(&o.stdout).lines().next().unwrap()).unwrap();
    assert_eq!(rec["pattern"], "fan-in");
    let peers_seen: Vec<String> = rec["peers"].as_array().unwrap().iter().map(|v| v.as_str().unwrap_or("").to_string()).collect();
    assert_eq!(peers_seen.len(), 2, "{rec}");
    assert!(rec["value"].as_f64().unwrap() > 0.0, "{rec}");
    eprintln!("fan-in 4 KiB from {} to daemons in {} and {} over ssh-started daemons: {:.1} MB/s", pair.a, pair.a, pair.b, rec["value"].as_f64().unwrap());
    let o = in_ns(&pair.a, bin).args(["cluster", "down", "--peers-file", ps]).output().unwrap();
    assert!(o.status.success(), "cluster down: {}", text(&o));
    // Nothing but the two sshd listeners is left in either namespace (ssh sessions end with
    // their clients; allow them a moment).
    let t = Instant::now();
    let left = loop {
        let left: Vec<(i32, String)> = [&pair.a, &pair.b].iter().flat_map(|ns| ns_pids(ns)).filter(|p| !sshd_pids.contains(p)).map(|p| (p, comm(p))).filter(|(_, c)| !c.is_empty()).collect();
        if left.is_empty() || t.elapsed() > Duration::from_secs(10) {
            break left;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(left.is_empty(), "processes left in the namespaces after cluster down: {left:?}");
    assert!(!peers.exists() && !Path::new(&format!("{ps}.d")).exists(), "peer list left behind");
    drop(sshds);
    drop(pair);
    let _ = std::fs::remove_dir_all(&dir);
}

//! `interlab bench compare`: runs sockperf, iperf3 (and qperf, for information) and interlab
//! on loopback in the same run, alternating tool and interlab (A B B A), and prints ratios:
//! TCP and UDP 64-byte ping-pong latency (interlab / sockperf, target <= 1.05) and TCP
//! 64 KiB single- and 2-stream bandwidth (interlab / iperf3, target >= 0.95). Performance is
//! reported, never asserted.

use crate::client::parse_peer;
use crate::runner::{run_point, PointOptions, RunLength};
use crate::server::{ServeConfig, Server};
use crate::Transport;
use interlab_patterns::{Workload, WorkloadKind};
use std::net::{IpAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Settings of a comparison.
#[derive(Debug, Clone, Copy)]
pub struct CompareOptions {
    /// Seconds per measurement (iperf3 takes whole seconds).
    pub seconds: u32,
    /// Rounds, alternating the order: 1 = A B, 2 = A B B A, up to 8.
    pub rounds: u32,
}

impl CompareOptions {
    /// CI-friendly: 1 s per measurement, A B B A (about 30 s in all).
    pub const QUICK: CompareOptions = CompareOptions { seconds: 1, rounds: 2 };
    /// 2 s per measurement, four rounds (A B B A A B B A).
    pub const FULL: CompareOptions = CompareOptions { seconds: 2, rounds: 4 };
}

/// One comparison.
#[derive(Debug, Clone)]
pub struct Comparison {
    pub name: String,
    pub unit: &'static str,
    /// Mean over rounds; None when it could not be measured.
    pub interlab: Option<f64>,
    pub reference: Option<f64>,
    /// Medians (interlab, tool) where both report one (latency), for information: robust to
    /// the scheduling outliers a busy machine adds to means.
    pub medians: Option<(f64, f64)>,
    pub reference_tool: &'static str,
    /// The ratio must be <= target (latency) or >= target (bandwidth).
    pub lower_is_better: bool,
    pub target: f64,
    /// Why a side is missing.
    pub note: Option<String>,
}

impl Comparison {
    pub fn ratio(&self) -> Option<f64> {
        Some(self.interlab? / self.reference?)
    }

    pub fn meets_target(&self) -> Option<bool> {
        let r = self.ratio()?;
        Some(if self.lower_is_better { r <= self.target } else { r >= self.target })
    }
}

fn have(tool: &str) -> bool {
    Command::new(tool).arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok()
        || Command::new(tool).arg("-v").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok()
}

fn free_port() -> Result<u16, String> {
    let l = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("no free loopback port: {e}"))?;
    Ok(l.local_addr().map_err(|e| e.to_string())?.port())
}

/// A server process of a reference tool, killed on drop.
struct Daemon(Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn(tool: &str, args: &[String]) -> Result<Daemon, String> {
    Command::new(tool)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map(Daemon)
        .map_err(|e| format!("cannot start {tool}: {e}"))
}

fn wait_tcp(port: u16) {
    let deadline = Instant::now() + Duration::from_secs(3);
    while Instant::now() < deadline {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn output(tool: &str, args: &[String], timeout_s: u64) -> Result<String, String> {
    let mut child = Command::new(tool)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {tool}: {e}"))?;
    let deadline = Instant::now() + Duration::from_secs(timeout_s);
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("{tool} did not finish within {timeout_s} s"));
            }
        }
    }
    let o = child.wait_with_output().map_err(|e| e.to_string())?;
    Ok(format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr)))
}

/// sockperf's "avg-latency=12.372" (microseconds, one-way = RTT/2).
pub fn parse_sockperf_avg(text: &str) -> Option<f64> {
    let i = text.find("avg-latency=")? + "avg-latency=".len();
    let num: String = text[i..].chars().take_while(|c| c.is_ascii_digit() || *c == '.').collect();
    num.parse().ok()
}

/// iperf3 -J: end.sum_received.bits_per_second, in MB/s (10^6 bytes/s).
pub fn parse_iperf3_json(text: &str) -> Option<f64> {
    let start = text.find('{')?;
    let v: serde_json::Value = serde_json::from_str(&text[start..]).ok()?;
    v["end"]["sum_received"]["bits_per_second"].as_f64().map(|b| b / 8e6)
}

/// qperf's "latency  =  47 us" / "bw  =  1.7 GB/sec" (converted to us and MB/s).
pub fn parse_qperf(text: &str, key: &str) -> Option<f64> {
    let line = text.lines().find(|l| l.trim_start().starts_with(key) && l.contains('='))?;
    let rhs = line.split('=').nth(1)?.trim();
    let mut it = rhs.split_whitespace();
    let v: f64 = it.next()?.parse().ok()?;
    let mult = match it.next()? {
        "ns" => 1e-3,
        "us" => 1.0,
        "ms" => 1e3,
        "sec" | "s" => 1e6,
        "KB/sec" => 1e-3,
        "MB/sec" => 1.0,
        "GB/sec" => 1e3,
        _ => return None,
    };
    Some(v * mult)
}

/// sockperf's "percentile 50.000 =    8.165".
pub fn parse_sockperf_p50(text: &str) -> Option<f64> {
    let line = text.lines().find(|l| l.contains("percentile 50.000"))?;
    line.split('=').nth(1)?.split_whitespace().next()?.parse().ok()
}

fn sockperf_latency(tcp: bool, secs: u32) -> Result<(f64, Option<f64>), String> {
    let port = free_port()?;
    let mut sargs = vec!["server".to_string(), "-i".into(), "127.0.0.1".into(), "-p".into(), port.to_string()];
    let mut cargs = vec!["ping-pong".to_string(), "-i".into(), "127.0.0.1".into(), "-p".into(), port.to_string(), "-m".into(), "64".into(), "-t".into(), secs.to_string()];
    if tcp {
        sargs.push("--tcp".into());
        cargs.push("--tcp".into());
    }
    let _d = spawn("sockperf", &sargs)?;
    if tcp {
        wait_tcp(port);
    } else {
        std::thread::sleep(Duration::from_millis(300));
    }
    let out = output("sockperf", &cargs, secs as u64 + 20)?;
    let avg = parse_sockperf_avg(&out).ok_or_else(|| format!("cannot read sockperf's avg-latency from: {}", out.lines().rev().take(3).collect::<Vec<_>>().join(" | ")))?;
    Ok((avg, parse_sockperf_p50(&out)))
}

fn iperf3_bandwidth(streams: u32, secs: u32) -> Result<(f64, Option<f64>), String> {
    let port = free_port()?;
    let _d = spawn("iperf3", &["-s".into(), "-1".into(), "-B".into(), "127.0.0.1".into(), "-p".into(), port.to_string()])?;
    wait_tcp_iperf(port);
    let args: Vec<String> = ["-c", "127.0.0.1", "-p", &port.to_string(), "-l", "64K", "-t", &secs.to_string(), "-P", &streams.to_string(), "-J"].iter().map(|s| s.to_string()).collect();
    let out = output("iperf3", &args, secs as u64 + 20)?;
    parse_iperf3_json(&out).map(|v| (v, None)).ok_or_else(|| "cannot read iperf3's end.sum_received from its JSON".to_string())
}

fn wait_tcp_iperf(port: u16) {
    // iperf3 -1 serves one test: probing its port with a connect would use it up.
    let deadline = Instant::now() + Duration::from_secs(3);
    while Instant::now() < deadline {
        if std::fs::read_to_string("/proc/net/tcp").map(|t| t.contains(&format!(":{port:04X} 00000000:0000 0A"))).unwrap_or(false) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn qperf(tests: &[&str], size: &str, secs: u32) -> Result<String, String> {
    let port = free_port()?;
    let _d = spawn("qperf", &["-lp".into(), port.to_string()])?;
    wait_tcp(port);
    let mut args: Vec<String> = ["127.0.0.1", "-lp", &port.to_string(), "-t", &secs.to_string(), "-m", size].iter().map(|s| s.to_string()).collect();
    args.extend(tests.iter().map(|s| s.to_string()));
    output("qperf", &args, (secs as u64 + 10) * tests.len() as u64)
}

fn interlab(addr: std::net::SocketAddr, kind: WorkloadKind, transport: Transport, size: u64, streams: u32, secs: u32) -> Result<(f64, Option<f64>), String> {
    let peer = parse_peer(&addr.to_string(), addr.port())?;
    let o = PointOptions {
        workload: Workload { kind, size, response_size: size, window: 64, streams, peers: 1 },
        transport,
        peers: vec![peer],
        token: None,
        // Same length as the tool's run; a short warm-up like sockperf's.
        length: RunLength::Time { warmup_s: if kind == WorkloadKind::Latency { 0.2 } else { 0.0 }, duration_s: secs as f64 },
        confidence: None,
        sockbuf: 0,
        experiment: "bench-compare".into(),
        command: "interlab bench compare".into(),
        connect_timeout: Duration::from_secs(5),
        extras: Default::default(),
    };
    let out = run_point(&o)?;
    if let Some(e) = out.error {
        return Err(e.message);
    }
    Ok((out.record.record.value, out.record.record.summary.map(|s| s.p50)))
}

/// A measurement: (the compared figure, its median where the tool reports one).
type Measure<'a> = Box<dyn Fn() -> Result<(f64, Option<f64>), String> + 'a>;

/// One comparison to make.
struct Case<'a> {
    name: &'static str,
    unit: &'static str,
    tool: &'static str,
    lower: bool,
    target: f64,
    ours: Measure<'a>,
    theirs: Measure<'a>,
    available: bool,
}

/// Runs every comparison; `progress` gets a line per measurement.
pub fn run(opts: CompareOptions, progress: &mut dyn FnMut(&str)) -> Result<(Vec<Comparison>, Vec<String>), String> {
    let server = Server::bind(ServeConfig { bind: IpAddr::from([127, 0, 0, 1]), port: 0, verbose: false, ..ServeConfig::default() })?;
    let (addr, stop, handle) = server.spawn();
    let secs = opts.seconds.max(1);
    let rounds = opts.rounds.clamp(1, 8);
    let mut out = Vec::new();
    let has_sockperf = have("sockperf");
    let has_iperf3 = have("iperf3");
    let cases: Vec<Case> = vec![
        Case {
            name: "TCP 64 B ping-pong latency",
            unit: "us",
            tool: "sockperf",
            lower: true,
            target: 1.05,
            ours: Box::new(|| interlab(addr, WorkloadKind::Latency, Transport::Tcp, 64, 1, secs)),
            theirs: Box::new(|| sockperf_latency(true, secs)),
            available: has_sockperf,
        },
        Case {
            name: "UDP 64 B ping-pong latency",
            unit: "us",
            tool: "sockperf",
            lower: true,
            target: 1.05,
            ours: Box::new(|| interlab(addr, WorkloadKind::Latency, Transport::Udp, 64, 1, secs)),
            theirs: Box::new(|| sockperf_latency(false, secs)),
            available: has_sockperf,
        },
        Case {
            name: "TCP 64 KiB 1-stream bandwidth",
            unit: "MB/s",
            tool: "iperf3",
            lower: false,
            target: 0.95,
            ours: Box::new(|| interlab(addr, WorkloadKind::Stream, Transport::Tcp, 65536, 1, secs)),
            theirs: Box::new(|| iperf3_bandwidth(1, secs)),
            available: has_iperf3,
        },
        Case {
            name: "TCP 64 KiB 2-stream bandwidth",
            unit: "MB/s",
            tool: "iperf3",
            lower: false,
            target: 0.95,
            ours: Box::new(|| interlab(addr, WorkloadKind::MultiStream, Transport::Tcp, 65536, 2, secs)),
            theirs: Box::new(|| iperf3_bandwidth(2, secs)),
            available: has_iperf3,
        },
    ];
    for Case { name, unit, tool, lower, target, ours, theirs, available } in cases {
        let name = name.to_string();
        let (mut a, mut b, mut am, mut bm) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut note = None;
        if !available {
            note = Some(format!("{tool} not found (apt-get install {tool}); interlab measured alone"));
        }
        for round in 0..rounds {
            // A B, then B A.
            let order: [bool; 2] = if round % 2 == 0 { [true, false] } else { [false, true] };
            for tool_first in order {
                if tool_first {
                    if !available {
                        continue;
                    }
                    match theirs() {
                        Ok((v, med)) => {
                            progress(&format!("{name}: {tool} {v:.2} {unit}"));
                            b.push(v);
                            bm.extend(med);
                        }
                        Err(e) => note = Some(format!("{tool}: {e}")),
                    }
                } else {
                    match ours() {
                        Ok((v, med)) => {
                            progress(&format!("{name}: interlab {v:.2} {unit}"));
                            a.push(v);
                            am.extend(med);
                        }
                        Err(e) => note = Some(format!("interlab: {e}")),
                    }
                }
            }
        }
        let mean = |v: &Vec<f64>| if v.is_empty() { None } else { Some(v.iter().sum::<f64>() / v.len() as f64) };
        out.push(Comparison {
            name,
            unit,
            interlab: mean(&a),
            reference: mean(&b),
            medians: mean(&am).zip(mean(&bm)),
            reference_tool: tool,
            lower_is_better: lower,
            target,
            note,
        });
    }
    // qperf, for information.
    let mut info = Vec::new();
    if have("qperf") {
        match qperf(&["tcp_lat", "udp_lat"], "64", secs) {
            Ok(t) => {
                let lat: Vec<String> = t.lines().filter(|l| l.contains("latency")).map(|l| l.trim().to_string()).collect();
                info.push(format!("qperf 64 B tcp_lat/udp_lat: {}", lat.join(", ")));
            }
            Err(e) => info.push(format!("qperf: {e}")),
        }
        match qperf(&["tcp_bw"], "64K", secs) {
            Ok(t) => info.push(format!("qperf 64 KiB tcp_bw: {}", parse_qperf(&t, "bw").map(|v| format!("{v:.0} MB/s")).unwrap_or_else(|| "unreadable".into()))),
            Err(e) => info.push(format!("qperf: {e}")),
        }
    } else {
        info.push("qperf not found (apt-get install qperf); skipped".into());
    }
    stop.stop();
    let _ = handle.join();
    Ok((out, info))
}

/// The printed table.
pub fn render(rows: &[Comparison], info: &[String]) -> String {
    let mut s = format!("{:<32} {:>12} {:>12} {:>9} {:>9}  {}\n", "measure", "interlab", "reference", "ratio", "target", "status");
    for r in rows {
        let v = |x: Option<f64>| x.map(|v| format!("{v:.2}")).unwrap_or_else(|| "-".into());
        let status = match r.meets_target() {
            Some(true) => "ok",
            Some(false) => "MISSED",
            None => "n/a",
        };
        let target = format!("{}{:.2}", if r.lower_is_better { "<=" } else { ">=" }, r.target);
        s.push_str(&format!(
            "{:<32} {:>12} {:>12} {:>9} {:>9}  {} ({} {}, interlab/{})\n",
            r.name,
            v(r.interlab),
            v(r.reference),
            r.ratio().map(|x| format!("{x:.3}")).unwrap_or_else(|| "-".into()),
            target,
            status,
            r.reference_tool,
            r.unit,
            r.reference_tool
        ));
        if let Some((a, b)) = r.medians {
            s.push_str(&format!("    medians: interlab {a:.2}, {} {b:.2} {}: ratio {:.3}\n", r.reference_tool, r.unit, a / b));
        }
        if let Some(n) = &r.note {
            s.push_str(&format!("    note: {n}\n"));
        }
    }
    for i in info {
        s.push_str(&format!("info: {i}\n"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_tool_outputs() {
        assert_eq!(parse_sockperf_avg("sockperf: \u{1b}[2;35m====> avg-latency=12.372 (std-dev=5.577)\u{1b}[0m"), Some(12.372));
        assert_eq!(parse_sockperf_avg("nothing"), None);
        assert_eq!(parse_sockperf_p50("sockperf: ---> percentile 50.000 =    8.165"), Some(8.165));
        let j = r#"Connecting...{"end":{"sum_received":{"bits_per_second":8e9}}}"#;
        assert_eq!(parse_iperf3_json(j), Some(1000.0));
        assert_eq!(parse_qperf("tcp_lat:\n    latency  =  47.3 us\n", "latency"), Some(47.3));
        assert_eq!(parse_qperf("tcp_bw:\n    bw  =  1.7 GB/sec\n", "bw"), Some(1700.0));
    }

    #[test]
    fn ratios_and_targets() {
        let c = Comparison {
            name: "x".into(),
            unit: "us",
            interlab: Some(10.0),
            reference: Some(10.0),
            medians: Some((9.0, 10.0)),
            reference_tool: "t",
            lower_is_better: true,
            target: 1.05,
            note: None,
        };
        assert_eq!(c.ratio(), Some(1.0));
        assert_eq!(c.meets_target(), Some(true));
        let d = Comparison { lower_is_better: false, target: 0.95, interlab: Some(9.0), ..c.clone() };
        assert_eq!(d.meets_target(), Some(false));
        assert!(render(&[c, d], &["i".into()]).contains("MISSED"));
    }
}

//! Profiling a deployment (`interlab datacenter profile`): one emulated browser, no think
//! time, one request at a time, and around every interaction the counters of the
//! server tiers named on the command line, turned into a schema-v1 trace that the model
//! replay takes.
//!
//! * **CPU of a tier**: a PID, the sum over all its threads of `/proc/PID/task/*/schedstat`
//!   (first field: nanoseconds on a CPU; threads that exit during an interaction take
//!   their time with them); or a cgroup directory: `cpu.stat` `usage_usec` (v2, x1000)
//!   or `cpuacct.usage` (v1, ns), every process of the group.
//! * **app <-> db traffic**: the TCP connections of the app tier's processes (their
//!   `/proc/PID/fd` socket inodes) whose remote port is `--db-port`, read with `ss -tinHe`
//!   (`tcp_info`): `bytes_sent` / `bytes_received` (payload bytes) and `data_segs_out` /
//!   `data_segs_in` (segments carrying data, the messages: a request or result larger
//!   than a segment counts more than once, and one coalesced into another's segment
//!   less). A connection opened and closed inside an interaction is not seen. Without
//!   `ss`, `/proc/PID/io` `wchar`/`rchar` and `syscw`/`syscr` stand in: they count every
//!   read/write system call of the process (files and the browser's HTTP included, and
//!   not `send`/`recv`), an upper bound at best.
//!
//! Mapping onto the trace (as the captured Java + SQL trace of docs/datacenter.md):
//! `browser` the emulator (every HTTP request and response of the page and its images);
//! `web` the web tier's CPU over the page and its images when a web tier is named, else
//! the app tier's CPU while the images were fetched (one process serving both); its
//! flows are the page's HTTP request and response (as if it proxied the page); `app` its
//! CPU (over the page when it also serves the images, else over the interaction) and the
//! database traffic split evenly over the data segments each way; `db` its CPU over the
//! interaction.

use crate::rbe::Probe;
use crate::trace::{Flow, Tier, TierTrace};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Threads of one process read at most.
pub const MAX_TASKS: usize = 100_000;

/// Where a tier's counters come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Pid(u32),
    Cgroup(PathBuf),
}

/// One `--tier NAME=PID|CGROUP`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TierSpec {
    pub tier: Tier,
    pub source: Source,
}

impl TierSpec {
    /// Parses `web|app|db=PID` or `web|app|db=/path/to/cgroup`.
    pub fn parse(s: &str) -> Result<TierSpec, String> {
        let (name, what) = s.split_once('=').ok_or_else(|| format!("--tier '{s}': expected NAME=PID or NAME=CGROUP_DIR (NAME: web, app or db)"))?;
        let tier = match name {
            "web" => Tier::Web,
            "app" => Tier::App,
            "db" => Tier::Db,
            _ => return Err(format!("--tier '{s}': tier '{name}' is not web, app or db")),
        };
        let source = match what.parse::<u32>() {
            Ok(0) => return Err(format!("--tier '{s}': PID 0")),
            Ok(p) => {
                if !Path::new(&format!("/proc/{p}/task")).is_dir() {
                    return Err(format!("--tier '{s}': no process {p} (/proc/{p}/task)"));
                }
                Source::Pid(p)
            }
            Err(_) => {
                let d = PathBuf::from(what);
                if !(d.join("cgroup.procs").is_file() && (d.join("cpu.stat").is_file() || d.join("cpuacct.usage").is_file())) {
                    return Err(format!("--tier '{s}': {what} is neither a PID nor a cgroup directory with cgroup.procs and cpu.stat (v2) or cpuacct.usage (v1)"));
                }
                Source::Cgroup(d)
            }
        };
        Ok(TierSpec { tier, source })
    }

    /// CPU time of the tier so far, ns.
    fn cpu_ns(&self) -> u64 {
        match &self.source {
            Source::Pid(p) => pid_cpu_ns(*p),
            Source::Cgroup(d) => cgroup_cpu_ns(d),
        }
    }

    fn pids(&self) -> Vec<u32> {
        match &self.source {
            Source::Pid(p) => vec![*p],
            Source::Cgroup(d) => std::fs::read_to_string(d.join("cgroup.procs")).unwrap_or_default().lines().filter_map(|l| l.trim().parse().ok()).take(MAX_TASKS).collect(),
        }
    }
}

/// Sum of `/proc/PID/task/*/schedstat` run time, ns.
pub fn pid_cpu_ns(pid: u32) -> u64 {
    let Ok(rd) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return 0 };
    rd.flatten()
        .take(MAX_TASKS)
        .filter_map(|e| std::fs::read_to_string(e.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next().and_then(|x| x.parse::<u64>().ok()))
        .sum()
}

/// A cgroup's CPU usage, ns (v2 `cpu.stat` usage_usec, else v1 `cpuacct.usage`).
pub fn cgroup_cpu_ns(dir: &Path) -> u64 {
    if let Ok(s) = std::fs::read_to_string(dir.join("cpu.stat")) {
        if let Some(us) = s.lines().find_map(|l| l.strip_prefix("usage_usec ").and_then(|v| v.trim().parse::<u64>().ok())) {
            return us.saturating_mul(1000);
        }
    }
    std::fs::read_to_string(dir.join("cpuacct.usage")).ok().and_then(|s| s.trim().parse().ok()).unwrap_or(0)
}

/// How the app <-> db traffic is counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetMethod {
    /// `ss -tinHe` tcp_info of the app's sockets to the database port.
    Ss,
    /// `/proc/PID/io` of the app tier (read/write system calls of every kind).
    ProcIo,
    /// No database port given.
    None,
}

/// Counters of the app's connections to the database: (bytes sent, bytes received,
/// data segments out, data segments in).
fn ss_counters(pids: &[u32], port: u16) -> Option<[u64; 4]> {
    let mut inodes = std::collections::HashSet::new();
    for p in pids {
        if let Ok(rd) = std::fs::read_dir(format!("/proc/{p}/fd")) {
            for e in rd.flatten().take(1 << 20) {
                if let Ok(l) = std::fs::read_link(e.path()) {
                    if let Some(n) = l.to_str().and_then(|s| s.strip_prefix("socket:[")).and_then(|s| s.strip_suffix(']')).and_then(|s| s.parse::<u64>().ok()) {
                        inodes.insert(n);
                    }
                }
            }
        }
    }
    let out = Command::new("ss").args(["-tinHe", "state", "established", &format!("( dport = :{port} )")]).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut sum = [0u64; 4];
    let mut mine = false;
    for line in text.lines() {
        if !line.starts_with([' ', '\t']) {
            mine = line.split_whitespace().find_map(|w| w.strip_prefix("ino:")).and_then(|n| n.parse::<u64>().ok()).is_some_and(|n| inodes.contains(&n));
            continue;
        }
        if !mine {
            continue;
        }
        for w in line.split_whitespace() {
            let (k, v) = w.split_once(':').unwrap_or((w, ""));
            let v = v.parse::<u64>().unwrap_or(0);
            match k {
                "bytes_sent" => sum[0] += v,
                "bytes_received" => sum[1] += v,
                "data_segs_out" => sum[2] += v,
                "data_segs_in" => sum[3] += v,
                _ => {}
            }
        }
    }
    Some(sum)
}

/// `/proc/PID/io` wchar, rchar, syscw, syscr summed over the processes.
fn proc_io(pids: &[u32]) -> [u64; 4] {
    let mut sum = [0u64; 4];
    for p in pids {
        for l in std::fs::read_to_string(format!("/proc/{p}/io")).unwrap_or_default().lines() {
            let (k, v) = l.split_once(':').unwrap_or((l, ""));
            let v = v.trim().parse::<u64>().unwrap_or(0);
            match k {
                "wchar" => sum[0] += v,
                "rchar" => sum[1] += v,
                "syscw" => sum[2] += v,
                "syscr" => sum[3] += v,
                _ => {}
            }
        }
    }
    sum
}

/// The tiers' counters (the `profile` probe).
#[derive(Debug)]
pub struct TierProbe {
    tiers: Vec<TierSpec>,
    db_port: Option<u16>,
    pub net: NetMethod,
}

impl TierProbe {
    /// Checks the tiers (each at most once, an app tier required with `--db-port`) and
    /// picks the network method.
    pub fn new(tiers: Vec<TierSpec>, db_port: Option<u16>) -> Result<TierProbe, String> {
        for t in [Tier::Web, Tier::App, Tier::Db] {
            if tiers.iter().filter(|s| s.tier == t).count() > 1 {
                return Err(format!("--tier {}: given twice", tier_name(t)));
            }
        }
        if tiers.is_empty() {
            return Err("give at least one --tier app=PID (and db=..., web=...)".into());
        }
        let app = tiers.iter().find(|t| t.tier == Tier::App);
        let net = match (db_port, app) {
            (None, _) => NetMethod::None,
            (Some(_), None) => return Err("--db-port counts the app tier's connections: give --tier app=PID|CGROUP".into()),
            (Some(0), _) => return Err("--db-port 0: expected 1 to 65535".into()),
            (Some(p), Some(a)) => {
                if ss_counters(&a.pids(), p).is_some() {
                    NetMethod::Ss
                } else {
                    NetMethod::ProcIo
                }
            }
        };
        Ok(TierProbe { tiers, db_port, net })
    }

    fn get(&self, t: Tier) -> Option<usize> {
        self.tiers.iter().position(|s| s.tier == t)
    }
}

fn tier_name(t: Tier) -> &'static str {
    match t {
        Tier::Browser => "browser",
        Tier::Web => "web",
        Tier::App => "app",
        Tier::Db => "db",
    }
}

/// `n` messages of `total` bytes, split evenly (the remainder on the first ones).
fn flow(total: u64, n: u64) -> Flow {
    let mut f = Flow::default();
    if n == 0 {
        return f;
    }
    let n = n.min(1 << 20);
    for k in 0..n {
        f.add(total / n + u64::from(k < total % n));
    }
    f
}

impl Probe for TierProbe {
    /// One CPU counter per tier (in the order given), then 4 network counters.
    fn sample(&self) -> Vec<u64> {
        let mut v: Vec<u64> = self.tiers.iter().map(TierSpec::cpu_ns).collect();
        let net = match (self.net, self.db_port, self.get(Tier::App)) {
            (NetMethod::Ss, Some(p), Some(a)) => ss_counters(&self.tiers[a].pids(), p).unwrap_or([0; 4]),
            (NetMethod::ProcIo, _, Some(a)) => proc_io(&self.tiers[a].pids()),
            _ => [0; 4],
        };
        v.extend_from_slice(&net);
        v
    }

    fn tiers(&self, s0: &[u64], s1: &[u64], s2: &[u64], page_req: u64, page_resp: u64) -> Vec<TierTrace> {
        let n = self.tiers.len();
        let d = |a: &[u64], b: &[u64], k: usize| b.get(k).copied().unwrap_or(0).saturating_sub(a.get(k).copied().unwrap_or(0));
        let web_named = self.get(Tier::Web).is_some();
        let mut out = Vec::new();
        let mut web = TierTrace::new(Tier::Web);
        web.requests = 1;
        web.to_next.add(page_req);
        web.from_next.add(page_resp);
        match self.get(Tier::Web) {
            Some(k) => web.cpu_ns = d(s0, s2, k),
            None => web.cpu_ns = self.get(Tier::App).map_or(0, |k| d(s1, s2, k)),
        }
        out.push(web);
        if let Some(k) = self.get(Tier::App) {
            let mut app = TierTrace::new(Tier::App);
            app.requests = 1;
            app.cpu_ns = if web_named { d(s0, s2, k) } else { d(s0, s1, k) };
            if self.net != NetMethod::None {
                let (sent, recv, out_n, in_n) = (d(s0, s2, n), d(s0, s2, n + 1), d(s0, s2, n + 2), d(s0, s2, n + 3));
                let msgs = out_n.max(u64::from(sent > 0));
                app.to_next = flow(sent, msgs);
                app.from_next = flow(recv, in_n.max(u64::from(recv > 0)));
            }
            out.push(app);
        }
        if let Some(k) = self.get(Tier::Db) {
            let mut db = TierTrace::new(Tier::Db);
            db.cpu_ns = d(s0, s2, k);
            db.requests = app_requests(&out);
            out.push(db);
        }
        out
    }
}

/// Database requests: the app's messages to it.
fn app_requests(out: &[TierTrace]) -> u32 {
    out.iter().find(|t| t.tier == Tier::App).map_or(0, |a| a.to_next.messages)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tier_specs_and_counters_of_this_process() {
        let me = std::process::id();
        let t = TierSpec::parse(&format!("app={me}")).unwrap();
        assert_eq!(t.tier, Tier::App);
        // The counter sums the live threads of a process: measured on a single-threaded
        // child that spins, so test threads of this process ending meanwhile cannot take
        // their time out of the sum.
        let mut child = std::process::Command::new("sh").args(["-c", "while :; do :; done"]).spawn().unwrap();
        let spin = TierSpec::parse(&format!("app={}", child.id())).unwrap();
        let a = spin.cpu_ns();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while spin.cpu_ns() <= a && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let grown = spin.cpu_ns() > a;
        let _ = child.kill();
        let _ = child.wait();
        assert!(grown, "the CPU counter of a spinning process grows");
        for bad in ["app", "cpu=1", "app=0", "db=/nonexistent", "web=4294967295"] {
            assert!(TierSpec::parse(bad).is_err(), "{bad}");
        }
        assert!(TierProbe::new(vec![], None).is_err());
        assert!(TierProbe::new(vec![TierSpec::parse(&format!("db={me}")).unwrap()], Some(5432)).unwrap_err().contains("app"));
        assert_eq!(flow(10, 3).sizes, vec![4, 3, 3]);
        assert_eq!(flow(5, 0).messages, 0);
    }

    #[test]
    fn windows_map_onto_tiers() {
        let me = std::process::id();
        let p = TierProbe { tiers: vec![TierSpec::parse(&format!("app={me}")).unwrap(), TierSpec::parse(&format!("db={me}")).unwrap()], db_port: Some(1), net: NetMethod::Ss };
        // app, db, then sent, received, segs out, segs in.
        let s0 = [100, 1000, 0, 0, 0, 0];
        let s1 = [160, 1500, 300, 900, 3, 3];
        let s2 = [190, 1600, 300, 900, 3, 3];
        let t = p.tiers(&s0, &s1, &s2, 200, 5000);
        assert_eq!(t.iter().map(|x| (x.tier, x.cpu_ns)).collect::<Vec<_>>(), vec![(Tier::Web, 30), (Tier::App, 60), (Tier::Db, 600)]);
        assert_eq!(t[1].to_next.sizes, vec![100, 100, 100]);
        assert_eq!(t[1].from_next.bytes, 900);
        assert_eq!(t[0].from_next.sizes, vec![5000]);
        assert_eq!(t[2].requests, 3);
    }
}

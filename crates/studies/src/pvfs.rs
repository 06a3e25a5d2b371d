//! The parallel-file-system figures of the sdp study (fig8-10): PVFS's concurrent read and
//! write test (PVFS 1.5 pvfs-test) in the model. Every compute node reads or writes
//! its contiguous 2N MB region striped over N I/O servers, so each client moves 2 MB with
//! each server at once (all-to-all); each I/O server runs one daemon that serves all its
//! clients and moves the data to or from its file store (`interlab_model::fileio`). The
//! aggregate bandwidth is all bytes over the time from the first strip to the last.
//!
//! Spec (`studies/sdp/pvfs-*.toml`):
//!
//! ```toml
//! [pvfs]
//! name = "sdp-fig8"
//! profile = "xeon24-mt23108-pcix"
//! access = "read"              # read | write
//! compute_nodes = 4             # 1..=64
//! io_servers = [1, 2, 3, 4]    # the x axis, each 1..=64
//! bytes_per_server = 2097152   # each compute node's share on each I/O server, 1..=2^30
//! strip_bytes = 65536          # PVFS 1.5 default stripe (ssize), 1..=2^24
//! store = "ram"                # ram | disk
//! disk_mbytes_per_s = 25       # store = "disk": written synchronously at this rate
//! [[series]]
//! label = "IPoIB"
//! protocol = "ipoib-ud"        # verbs, or a socket stack: ipoib-ud | sdp-bc | ipoib-rc | eth | ...
//! ```

use crate::claimcalc::{num, series, unmarked, Computed, FigureResults};
use interlab_experiment::{SeriesResult, XAxis};
use interlab_model::SockStack;
use interlab_model::{FileServers, FileStore, Initiator, Ports, Profile, Service, Scenario};
use interlab_patterns::{Op, PatternKind, PatternSpec};
use interlab_report::Scale;
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};
use toml::Value;

use crate::catalog::FigureDef;

/// One series of a PVFS figure.
#[derive(Debug, Clone, PartialEq)]
pub struct PvfsSeries {
    pub label: String,
    /// A socket stack (by the model's stack names), or `None`: native verbs.
    pub protocol: Option<SockStack>,
}

/// A PVFS figure spec.
#[derive(Debug, Clone, PartialEq)]
pub struct PvfsSpec {
    pub name: String,
    pub profile: String,
    /// Reads (servers send) or writes (clients send).
    pub read: bool,
    pub compute_nodes: u32,
    pub io_servers: Vec<u32>,
    pub bytes_per_server: u64,
    pub strip_bytes: u64,
    pub store: FileStore,
    pub series: Vec<PvfsSeries>,
}

fn err(file: &str, key: &str, want: &str) -> String {
    format!("{file}: key `{key}`: expected {want}")
}

fn uint(t: &toml::Table, file: &str, key: &str, min: i64, max: i64) -> Result<u64, String> {
    match t.get(key) {
        Some(Value::Integer(i)) if (min..=max).contains(i) => Ok(*i as u64),
        _ => Err(err(file, key, &format!("an integer in {min}..={max}"))),
    }
}

fn text<'a>(t: &'a toml::Table, file: &str, key: &str) -> Result<&'a str, String> {
    t.get(key).and_then(Value::as_str).ok_or_else(|| err(file, key, "a string"))
}

const KEYS: &[&str] =
    &["name", "profile", "access", "compute_nodes", "io_servers", "bytes_per_server", "strip_bytes", "store", "disk_mbytes_per_s"];

impl PvfsSpec {
    /// Parses a spec; errors name the file and the key.
    pub fn parse(file: &str, src: &str) -> Result<PvfsSpec, String> {
        let v: toml::Table = src.parse().map_err(|e| format!("{file}: not valid TOML: {e}"))?;
        for k in v.keys() {
            if k != "pvfs" && k != "series" {
                return Err(format!("{file}: unknown table `{k}` (expected [pvfs] and [[series]])"));
            }
        }
        let t = v.get("pvfs").and_then(Value::as_table).ok_or_else(|| format!("{file}: missing the [pvfs] table"))?;
        if let Some(k) = t.keys().find(|k| !KEYS.contains(&k.as_str())) {
            return Err(format!("{file}: unknown key `{k}` (expected one of {})", KEYS.join(", ")));
        }
        let read = match text(t, file, "access")? {
            "read" => true,
            "write" => false,
            _ => return Err(err(file, "access", "\"read\" or \"write\"")),
        };
        let io_servers: Vec<u32> = match t.get("io_servers") {
            Some(Value::Array(a)) if !a.is_empty() => a
                .iter()
                .map(|x| x.as_integer().filter(|&i| (1..=64).contains(&i)).map(|i| i as u32))
                .collect::<Option<_>>()
                .ok_or_else(|| err(file, "io_servers", "a list of integers 1..=64"))?,
            _ => return Err(err(file, "io_servers", "a non-empty list of integers 1..=64")),
        };
        let store = match text(t, file, "store")? {
            "ram" => FileStore::Ram,
            "disk" => {
                let r = match t.get("disk_mbytes_per_s") {
                    Some(Value::Integer(i)) if *i > 0 => *i as f64,
                    Some(Value::Float(f)) if *f > 0.0 && f.is_finite() => *f,
                    _ => return Err(err(file, "disk_mbytes_per_s", "a positive number (MB/s) with store = \"disk\"")),
                };
                FileStore::SyncDisk { mbytes_per_s: r }
            }
            _ => return Err(err(file, "store", "\"ram\" or \"disk\"")),
        };
        let strip_bytes = uint(t, file, "strip_bytes", 1, 1 << 24)?;
        let bytes_per_server = uint(t, file, "bytes_per_server", 1, 1 << 30)?;
        if bytes_per_server % strip_bytes != 0 {
            return Err(err(file, "bytes_per_server", "a whole number of strips (strip_bytes)"));
        }
        let mut series = Vec::new();
        for (i, s) in v.get("series").and_then(Value::as_array).ok_or_else(|| format!("{file}: no [[series]]"))?.iter().enumerate() {
            let st = s.as_table().ok_or_else(|| format!("{file}: [[series]] {} is not a table", i + 1))?;
            let at = format!("{file} [[series]] {}", i + 1);
            let p = text(st, &at, "protocol")?;
            let protocol = match p {
                "verbs" => None,
                _ => Some(SockStack::parse_name(p).map_err(|e| format!("{at}: key `protocol`: {e}, or verbs"))?),
            };
            series.push(PvfsSeries { label: text(st, &at, "label")?.to_string(), protocol });
        }
        Ok(PvfsSpec {
            name: text(t, file, "name")?.to_string(),
            profile: text(t, file, "profile")?.to_string(),
            read,
            compute_nodes: uint(t, file, "compute_nodes", 1, 64)? as u32,
            io_servers,
            bytes_per_server,
            strip_bytes,
            store,
            series,
        })
    }

    /// Simulates series `si` with `servers` I/O servers: aggregate MB/s and the first I/O
    /// server's CPU utilisation (%).
    pub fn run_point(&self, profile: &Arc<Profile>, si: usize, servers: u32) -> Result<(f64, f64), String> {
        let (v, p) = self.setup(profile, self.series[si].protocol, servers);
        let pt = v.run(&p).map_err(|e| format!("{}: `{}` with {servers} I/O servers: {e}", self.name, self.series[si].label))?;
        Ok((pt.value, pt.server_cpu_percent))
    }

    /// The model set-up of one point.
    pub fn setup(&self, profile: &Arc<Profile>, protocol: Option<SockStack>, servers: u32) -> (Scenario, PatternSpec) {
        let mut v = Scenario::new(profile.clone(), Service::Rc, Ports::One, 1);
        v.sock = protocol;
        v.clients = self.compute_nodes;
        v.initiator = if self.read { Initiator::Server } else { Initiator::Clients };
        v.io = Some(FileServers { servers, store: self.store, bytes_per_pair: self.bytes_per_server });
        // One round per client and server: the pair's strips back to back, then the ack.
        let strips = (self.bytes_per_server / self.strip_bytes) as u32;
        let spec = PatternSpec { kind: PatternKind::Bandwidth, op: Op::Send, size: self.strip_bytes, window: strips, warmup: 0, iterations: 1 };
        (v, spec)
    }
}

struct PvfsFig {
    def: FigureDef,
}

macro_rules! pvfs_fig {
    ($id:literal, $spec:literal, $title:expr) => {
        PvfsFig {
            def: FigureDef {
                id: $id,
                title: $title,
                spec: include_str!(concat!("../../../studies/sdp/", $spec, ".toml")),
                spec_path: concat!("studies/sdp/", $spec, ".toml"),
                x_label: "I/O servers",
                y_label: "Aggregate bandwidth (MB/s)",
                x_scale: Scale::Linear,
                y_scale: Scale::Linear,
                y_div: 1.0,
                y_reference: None,
            },
        }
    };
}

fn all_figs() -> Vec<PvfsFig> {
    vec![
        pvfs_fig!("fig8", "pvfs-fig8", "PVFS concurrent read on ramfs (model)"),
        pvfs_fig!("fig9", "pvfs-fig9", "PVFS concurrent write on ramfs (model)"),
        pvfs_fig!("fig10", "pvfs-fig10", "PVFS write with sync on a 25 MB/s disk (model)"),
    ]
}

/// The PVFS figure definitions of a study (the sdp study has them).
pub fn figure_defs(study: &str) -> Vec<FigureDef> {
    if study == "sdp" {
        all_figs().into_iter().map(|f| f.def).collect()
    } else {
        vec![]
    }
}

/// The PVFS figures of a run (when the sdp study is selected), planned: one task per
/// (figure, series, I/O-server count) for the run-wide queue ([`PvfsPlan::tasks`]), then
/// the series ([`PvfsPlan::finish`]).
pub struct PvfsPlan {
    figs: Vec<(FigureDef, PvfsSpec, Arc<Profile>)>,
    /// (figure, series, I/O servers).
    jobs: Vec<(usize, usize, u32)>,
    /// (aggregate MB/s, first I/O server's CPU %) of each job.
    outs: Vec<OnceLock<Result<(f64, f64), String>>>,
}

/// Plans the PVFS figures if the sdp study is selected.
pub fn plan(selected: &dyn Fn(&str) -> bool) -> Result<PvfsPlan, String> {
    let mut figs = Vec::new();
    if selected("sdp") {
        for f in all_figs() {
            let spec = PvfsSpec::parse(f.def.spec_path, f.def.spec)?;
            let profile = Arc::new(Profile::load(&spec.profile).map_err(|e| e.to_string())?);
            figs.push((f.def, spec, profile));
        }
    }
    let jobs: Vec<(usize, usize, u32)> = figs
        .iter()
        .enumerate()
        .flat_map(|(fi, (_, spec, _))| (0..spec.series.len()).flat_map(move |si| spec.io_servers.iter().map(move |&n| (fi, si, n))))
        .collect();
    Ok(PvfsPlan { outs: jobs.iter().map(|_| OnceLock::new()).collect(), figs, jobs })
}

impl PvfsPlan {
    /// Points to simulate.
    pub fn points(&self) -> usize {
        self.jobs.len()
    }

    /// One task per point, calling `tick` when done; its cost estimate is the strips it moves times 8 events (only an
    /// order for the queue).
    pub fn tasks<'a>(&'a self, tick: &'a (dyn Fn() + Sync)) -> Vec<crate::schedule::Task<'a>> {
        self.jobs
            .iter()
            .zip(&self.outs)
            .map(|(&(fi, si, n), slot)| {
                let (_, spec, profile) = &self.figs[fi];
                let strips = u64::from(spec.compute_nodes).saturating_mul(u64::from(n)).saturating_mul(spec.bytes_per_server / spec.strip_bytes.max(1));
                crate::schedule::Task::new(strips.saturating_mul(spec.strip_bytes.div_ceil(2048)).saturating_mul(8), move || {
                    let _ = slot.set(spec.run_point(profile, si, n));
                    tick();
                })
            })
            .collect()
    }

    /// Figure id -> series (under the sdp study), once every task has run.
    pub fn finish(self) -> Result<BTreeMap<&'static str, FigureResults>, String> {
        let mut points: Vec<Vec<Vec<(u32, f64, f64)>>> = self.figs.iter().map(|(_, s, _)| vec![vec![]; s.series.len()]).collect();
        for (&(fi, si, n), o) in self.jobs.iter().zip(self.outs) {
            let (mbs, cpu) = o.into_inner().ok_or("a PVFS point was not run")??;
            points[fi][si].push((n, mbs, cpu));
        }
        let mut out: BTreeMap<&'static str, FigureResults> = BTreeMap::new();
        for ((def, spec, _), pts) in self.figs.iter().zip(points) {
            let series = spec
                .series
                .iter()
                .zip(pts)
                .map(|(s, pts)| SeriesResult {
                    label: s.label.clone(),
                    points: pts.iter().map(|p| (u64::from(p.0), p.1)).collect(),
                    // The node count on the x axis (here: I/O servers).
                    x_axis: XAxis::Clients,
                    server_cpu: pts.iter().map(|p| (u64::from(p.0), p.2)).collect(),
                    unit: def.y_label.to_string(),
                    records: vec![],
                })
                .collect();
            out.entry("sdp").or_default().insert(def.id.to_string(), series);
        }
        Ok(out)
    }
}

/// One series of a PVFS run: per I/O-server count, the aggregate bandwidth (MB/s) and the
/// first I/O server's CPU utilisation (%).
#[derive(Debug, Clone, PartialEq)]
pub struct PvfsOutcome {
    pub label: String,
    pub points: Vec<(u32, f64, f64)>,
}

/// Runs every point of a spec (in parallel).
pub fn run_spec(spec: &PvfsSpec) -> Result<Vec<PvfsOutcome>, String> {
    let profile = Arc::new(Profile::load(&spec.profile).map_err(|e| e.to_string())?);
    let jobs: Vec<(usize, u32)> = (0..spec.series.len()).flat_map(|s| spec.io_servers.iter().map(move |&n| (s, n))).collect();
    let points: Vec<Result<(usize, u32, f64, f64), String>> = jobs
        .par_iter()
        .map(|&(si, n)| {
            let (mbs, cpu) = spec.run_point(&profile, si, n)?;
            Ok((si, n, mbs, cpu))
        })
        .collect();
    let mut out: Vec<PvfsOutcome> = spec.series.iter().map(|s| PvfsOutcome { label: s.label.clone(), points: vec![] }).collect();
    for p in points {
        let (si, n, mbs, cpu) = p?;
        out[si].points.push((n, mbs, cpu));
    }
    Ok(out)
}

/// Least-squares slope of a series: MB/s added per I/O server.
fn slope(s: &SeriesResult) -> Result<(f64, String, Option<f64>), String> {
    let n = s.points.len() as f64;
    if s.points.len() < 2 {
        return Err(format!("`{}`: fewer than two server counts", s.label));
    }
    let (mx, my) = (s.points.iter().map(|p| p.0 as f64).sum::<f64>() / n, s.points.iter().map(|p| p.1).sum::<f64>() / n);
    let sxy: f64 = s.points.iter().map(|p| (p.0 as f64 - mx) * (p.1 - my)).sum();
    let sxx: f64 = s.points.iter().map(|p| (p.0 as f64 - mx).powi(2)).sum();
    let pts: Vec<String> = s.points.iter().map(|p| format!("{}: {:.0}", p.0, p.1)).collect();
    Ok((sxy / sxx, format!("least-squares slope of `{}` over I/O servers ({} MB/s)", s.label, pts.join(", ")), None))
}

/// The PVFS claims of the sdp study.
pub fn claims(study: &str, r: &FigureResults) -> Vec<Computed> {
    if study != "sdp" {
        return vec![];
    }
    let sl = |fig: &'static str, label: &'static str| move || slope(series(r, fig, label)?);
    vec![
        unmarked(num("sdp.pvfs.read_slope_ipoib", sl("fig8", "IPoIB"))),
        unmarked(num("sdp.pvfs.read_slope_sdp", sl("fig8", "SDP"))),
        unmarked(num("sdp.pvfs.read_slope_vapi", sl("fig8", "VAPI"))),
        unmarked(num("sdp.pvfs.write_slope_ipoib", sl("fig9", "IPoIB"))),
        unmarked(num("sdp.pvfs.write_slope_sdp", sl("fig9", "SDP"))),
        unmarked(num("sdp.pvfs.write_slope_vapi", sl("fig9", "VAPI"))),
        num("sdp.pvfs.read_gain", || {
            let (s, i) = (series(r, "fig8", "SDP")?, series(r, "fig8", "IPoIB")?);
            let ratios: Vec<(u64, f64)> = s.points.iter().filter_map(|&(n, v)| i.at(n).map(|w| (n, v / w))).collect();
            if ratios.is_empty() {
                return Err("no common server counts".into());
            }
            let m = ratios.iter().map(|x| x.1).sum::<f64>() / ratios.len() as f64;
            let each: Vec<String> = ratios.iter().map(|(n, q)| format!("{n}: {q:.2}")).collect();
            Ok((m, format!("mean over the I/O-server counts of SDP / IPoIB aggregate read bandwidth ({})", each.join(", ")), None))
        }),
        num("sdp.pvfs.ext3_sdp_gain", || {
            let (s, i) = (series(r, "fig10", "SDP")?, series(r, "fig10", "IPoIB")?);
            // The sdp study: 3 I/O servers.
            let (a, b) = (s.at(3).ok_or("fig10 has no 3-server SDP point")?, i.at(3).ok_or("fig10 has no 3-server IPoIB point")?);
            let n = 3;
            Ok(((a - b) / b * 100.0, format!("{n} I/O servers: SDP {a:.1} vs IPoIB {b:.1} MB/s"), None))
        }),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_errors_name_file_and_key() {
        for f in all_figs() {
            PvfsSpec::parse(f.def.spec_path, f.def.spec).unwrap();
        }
        let ok = "[pvfs]\nname=\"t\"\nprofile=\"xeon24-mt23108-pcix\"\naccess=\"read\"\ncompute_nodes=2\nio_servers=[1,2]\n\
                  bytes_per_server=131072\nstrip_bytes=65536\nstore=\"ram\"\n[[series]]\nlabel=\"S\"\nprotocol=\"sdp-bc\"\n";
        PvfsSpec::parse("p.toml", ok).unwrap();
        for (bad, key) in [
            (ok.replace("access=\"read\"", "access=\"sideways\""), "access"),
            (ok.replace("io_servers=[1,2]", "io_servers=[]"), "io_servers"),
            (ok.replace("store=\"ram\"", "store=\"disk\""), "disk_mbytes_per_s"),
            (ok.replace("strip_bytes=65536", "strip_bytes=100000"), "bytes_per_server"),
            (ok.replace("protocol=\"sdp-bc\"", "protocol=\"smoke\""), "protocol"),
            (ok.replace("name=\"t\"", "name=\"t\"\nbogus=1"), "bogus"),
            (ok.replace("compute_nodes=2", "compute_nodes=5000000000"), "compute_nodes"),
            (ok.replace("bytes_per_server=131072", "bytes_per_server=4294967296"), "bytes_per_server"),
            (ok.replace("strip_bytes=65536", "strip_bytes=0"), "strip_bytes"),
        ] {
            let e = PvfsSpec::parse("p.toml", &bad).unwrap_err();
            assert!(e.contains("p.toml") && e.contains(key), "{key}: {e}");
        }
    }

    #[test]
    fn more_servers_more_bandwidth_and_bytes_conserved() {
        let spec = PvfsSpec::parse("t", include_str!("../../../studies/sdp/pvfs-fig8.toml")).unwrap();
        let prof = Arc::new(Profile::load(&spec.profile).unwrap());
        for proto in [Some(SockStack::ipoib_ud()), Some(SockStack::sdp_bc()), None] {
            let run = |n: u32| {
                let (v, p) = spec.setup(&prof, proto, n);
                let pt = v.run(&p).unwrap();
                assert_eq!(pt.bytes_sent, pt.bytes_received);
                // Every client moved its region with every server (plus acks and headers).
                assert!(pt.bytes_sent >= u64::from(n * spec.compute_nodes) * spec.bytes_per_server, "{proto:?} {n}");
                pt.value
            };
            let (one, two) = (run(1), run(2));
            assert!(two > one * 1.3, "{proto:?}: 1 server {one:.0}, 2 servers {two:.0} MB/s");
        }
    }
}

//! Parsing experiment specs with errors that name the file, the key and what was expected.

use interlab_model::params::{unknown_key_message, ParamError, Table};
use interlab_model::ulp::sock::{SockKind, SockStack};
use interlab_model::{Initiator, MpiDesign, Ports, Profile, Service, Topology, Scenario};
use interlab_patterns::{limits, parse_sizes, Op, PatternKind, PatternSpec};
use std::path::Path;
use std::sync::Arc;

/// Where an experiment runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    /// The discrete-event model.
    Model,
    /// Real sockets against `interlab serve` daemons ([`LiveSpec`]).
    Live,
    /// Both, laid side by side.
    Both,
}

impl Engine {
    /// Spec and command-line names.
    pub const NAMES: [&'static str; 3] = ["model", "live", "both"];

    /// From `model`, `live` or `both`.
    pub fn from_name(s: &str) -> Option<Engine> {
        match s {
            "model" => Some(Engine::Model),
            "live" => Some(Engine::Live),
            "both" => Some(Engine::Both),
            _ => None,
        }
    }
}

/// The `[live]` table: where and how the live engine measures.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LiveSpec {
    /// Daemons, `HOST[:PORT]` (`interlab serve`); the command line's `--peer` overrides.
    pub peers: Vec<String>,
    /// `tcp`, `udp` or `unix` (default tcp).
    pub transport: String,
    /// Measured time of each time-bounded (streaming) point, seconds (default 2).
    pub time_s: Option<f64>,
}

/// One curve: a profile, a set-up, a pattern and its sizes.
#[derive(Debug, Clone)]
pub struct SeriesSpec {
    /// Legend label.
    pub label: String,
    /// Profile id or path as written in the spec.
    pub profile_name: String,
    pub setup: Scenario,
    /// The pattern (its `size` is replaced by each of `sizes`).
    pub pattern: PatternSpec,
    /// Message sizes, bytes.
    pub sizes: Vec<u64>,
    /// Wide-area loop lengths, miles (empty: both nodes on one switch).
    pub distances: Vec<f64>,
    /// Client-node counts (one entry unless swept).
    pub clients: Vec<u32>,
    /// Process pairs (streams) per node (one entry unless swept).
    pub procs: Vec<u32>,
    /// Which bandwidth a point reports when two socket stacks run at once.
    pub measure: Measure,
    /// Bandwidth windows hold at least this many bytes (more messages per window for
    /// small sizes, up to [`MAX_WINDOW`]): a continuous stream as netperf's, not a
    /// window-and-reply loop dominated by the reply for small messages.
    pub window_bytes: Option<u64>,
    /// `socket_trains` as the spec sets it; unset, each point runs in socket trains where
    /// the model finds them exact ([`Scenario::socket_trains_exact`]).
    pub socket_trains: Option<bool>,
}

/// Largest window `window_bytes` may ask for, messages.
pub const MAX_WINDOW: u64 = 4096;

impl SeriesSpec {
    /// The pattern at message size `size` (its window stretched to `window_bytes`).
    pub fn pattern_at(&self, size: u64) -> PatternSpec {
        let mut p = PatternSpec { size, ..self.pattern };
        if let Some(b) = self.window_bytes {
            p.window = p.window.max((b / size.max(1)).min(MAX_WINDOW) as u32);
        }
        p
    }
}

/// Which bandwidth a point of two simultaneous socket stacks reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Measure {
    /// Everything together.
    Total,
    /// The `socket` stack's share.
    First,
    /// The `socket_mix` stack's share.
    Second,
    /// Connection set-up time of the `socket` stack (us) instead of the pattern.
    Connect,
}

/// What a series' x axis is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XAxis {
    /// Message size, bytes.
    Size,
    /// Wide-area loop length, miles.
    Distance,
    /// Client nodes around the server.
    Clients,
    /// Process pairs (streams) per node.
    Processes,
}

impl XAxis {
    /// The record field naming this variable (`x_name` of records of non-size sweeps), with
    /// its unit in the name as every record field has.
    pub fn record_name(self) -> &'static str {
        match self {
            XAxis::Size => "size_bytes",
            XAxis::Distance => "distance_miles",
            XAxis::Clients => "clients",
            XAxis::Processes => "processes",
        }
    }
}

/// One point of a series: the coordinates that vary.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PointSpec {
    pub size: u64,
    pub miles: Option<f64>,
    pub clients: u32,
    pub procs: u32,
}

impl PointSpec {
    /// This point's value of the swept variable `axis` (bytes, miles, clients, processes).
    pub fn x(&self, axis: XAxis) -> f64 {
        match axis {
            XAxis::Size => self.size as f64,
            XAxis::Distance => self.miles.unwrap_or(0.0),
            XAxis::Clients => self.clients as f64,
            XAxis::Processes => self.procs as f64,
        }
    }

    /// Marks `r` with the swept variable when it is not the message size (which every
    /// record carries as `size_bytes`): `x_name` and `x_value`.
    pub fn mark_sweep(&self, axis: XAxis, r: &mut interlab_patterns::ResultRecord) {
        if axis != XAxis::Size {
            r.x_name = Some(axis.record_name().to_string());
            r.x_value = Some(self.x(axis));
        }
    }
}

impl SeriesSpec {
    /// Every key that shapes this series, as `key value` pairs in spec terms (what
    /// `interlab run --dry-run` prints): the profile, the pattern, the transport, the
    /// socket stacks with their switches, MPI, distance, clients and processes.
    pub fn describe(&self) -> Vec<(&'static str, String)> {
        let s = &self.setup;
        let list = |v: &[u32]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(", ");
        let mut d: Vec<(&'static str, String)> = vec![
            ("profile", self.profile_name.clone()),
            ("kind", self.pattern.kind.name().to_string()),
            ("op", self.pattern.op.name().to_string()),
            ("sizes", self.sizes.iter().map(|&b| interlab_patterns::show_size(b)).collect::<Vec<_>>().join(", ")),
            ("window", self.pattern.window.to_string()),
            ("warmup", self.pattern.warmup.to_string()),
            ("iterations", self.pattern.iterations.to_string()),
        ];
        if let Some(b) = self.window_bytes {
            d.push(("window_bytes", b.to_string()));
        }
        let sock_words = |k: SockStack| {
            let mut w = vec![k.name().to_string()];
            if let Some(v) = k.lso {
                w.push(format!("lso={v}"));
            }
            if let Some(v) = k.lro {
                w.push(format!("lro={v}"));
            }
            if k.kind == SockKind::Eth {
                w.push(format!("aic={}", k.aic));
                w.push(if k.eth_mtu == 0 { "mtu=profile's".to_string() } else { format!("mtu={}", k.eth_mtu) });
            }
            if k.kind == SockKind::Sdp && k.sdp_zcopy_threshold != u64::MAX {
                w.push(format!("zero copy from {} B", k.sdp_zcopy_threshold));
            }
            w.join(" ")
        };
        match (&s.sock, &s.sock_mix) {
            (Some(a), None) => d.push(("socket", sock_words(*a))),
            (Some(a), Some(b)) => {
                d.push(("socket", sock_words(*a)));
                d.push(("socket_mix", sock_words(*b)));
                d.push(("measure", format!("{:?}", self.measure).to_lowercase()));
            }
            _ => {
                d.push(("service", s.service.name().to_string()));
                d.push((
                    "ports",
                    match s.ports {
                        Ports::Stripe { threshold } => format!("stripe (above {threshold} B)"),
                        p => p.name().to_string(),
                    },
                ));
            }
        }
        if s.sock.is_some() {
            d.push(("socket_trains", self.socket_trains.map_or("where exact (one socket connection)".to_string(), |v| v.to_string())));
        }
        if self.measure == Measure::Connect {
            d.push(("measure", "connect".to_string()));
        }
        if let Some(m) = s.mpi {
            d.push(("mpi", format!("{m:?}").to_lowercase()));
            d.push(("qps_per_port", s.qps_per_port.to_string()));
        }
        d.push(("processes_per_node", list(&self.procs)));
        if !self.distances.is_empty() {
            d.push(("distance_miles", self.distances.iter().map(|m| m.to_string()).collect::<Vec<_>>().join(", ")));
        }
        if self.clients != [1] {
            d.push(("clients", list(&self.clients)));
            d.push(("initiator", format!("{:?}", s.initiator).to_lowercase()));
        }
        d
    }

    /// The swept variable: distance or clients when several are given with one size.
    pub fn x_axis(&self) -> XAxis {
        if self.sizes.len() == 1 && self.distances.len() > 1 {
            XAxis::Distance
        } else if self.sizes.len() == 1 && self.clients.len() > 1 {
            XAxis::Clients
        } else if self.sizes.len() == 1 && self.procs.len() > 1 {
            XAxis::Processes
        } else {
            XAxis::Size
        }
    }

    /// Every point, in order (distance, then clients, then size).
    pub fn points(&self) -> Vec<PointSpec> {
        let miles: Vec<Option<f64>> = if self.distances.is_empty() { vec![None] } else { self.distances.iter().map(|&d| Some(d)).collect() };
        let mut v = Vec::new();
        for &m in &miles {
            for &c in &self.clients {
                for &procs in &self.procs {
                    for &size in &self.sizes {
                        v.push(PointSpec { size, miles: m, clients: c, procs });
                    }
                }
            }
        }
        v
    }
}

/// A parsed experiment.
#[derive(Debug, Clone)]
pub struct Experiment {
    pub name: String,
    /// File the spec came from (or the built-in name).
    pub file: String,
    pub engine: Engine,
    pub seed: u64,
    /// Free text shown under the figure.
    pub description: String,
    pub series: Vec<SeriesSpec>,
    /// The `[live]` table (empty when absent).
    pub live: LiveSpec,
}

const SERIES_KEYS: &[&str] = &[
    "label", "profile", "kind", "op", "window", "warmup", "iterations", "sizes", "service", "ports", "stripe_threshold",
    "processes_per_node", "distance_miles", "mpi", "qps_per_port", "clients", "initiator", "socket", "socket_mix", "lso", "lro",
    "aic", "mtu", "sdp_threshold", "measure", "window_bytes", "socket_trains",
];

/// `none` and every stack of the model's one name table ([`SockStack::NAMES`]).
fn sockets() -> Vec<&'static str> {
    std::iter::once("none").chain(SockStack::NAMES).chain(std::iter::once("10gige")).collect()
}

/// Reads a list of positive integers (or one) for `key`; `None` when absent.
fn int_list(t: &mut Table, key: &str, max: u64, what: &str) -> Result<Option<Vec<u32>>, ParamError> {
    let Some(v) = t.value(key) else { return Ok(None) };
    let items = match v {
        toml::Value::Array(a) => a.clone(),
        other => vec![other.clone()],
    };
    let mut c = Vec::new();
    for x in items {
        match x {
            toml::Value::Integer(i) if (1..=max as i64).contains(&i) => c.push(i as u32),
            other => return Err(t.err(key, format!("expected integers 1..={max} ({what}), found {other}"))),
        }
    }
    if c.is_empty() {
        return Err(t.err(key, "empty list"));
    }
    Ok(Some(c))
}

/// A socket stack named `word` with the series' switches.
fn sock_stack(l: &mut Layers, word: &str) -> Result<Option<SockStack>, ParamError> {
    let Some(mut s) = SockStack::named(word) else { return Ok(None) };
    for (key, slot) in [("lso", &mut s.lso), ("lro", &mut s.lro)] {
        let t = l.pick(key);
        if t.has(key) {
            *slot = Some(t.bool_or(key, false)?);
        }
    }
    s.aic = l.pick("aic").bool_or("aic", true)?;
    s.eth_mtu = l.pick("mtu").int_in("mtu", 0, 0, 65_535)? as u32;
    if s.kind == SockKind::Sdp && word == "sdp" {
        s.sdp_zcopy_threshold = l.pick("sdp_threshold").int_or("sdp_threshold", s.sdp_zcopy_threshold, 1)?;
    }
    Ok(Some(s))
}

/// Reads a value for `key` from the series table if present there, else from the defaults.
struct Layers<'a, 'b> {
    series: Option<&'b mut Table<'a>>,
    defaults: &'b mut Table<'a>,
}

impl<'a> Layers<'a, '_> {
    fn pick(&mut self, key: &str) -> &mut Table<'a> {
        match &mut self.series {
            Some(s) if s.has(key) => s,
            _ => self.defaults,
        }
    }
}

fn parse_series(file: &str, base: Option<&Path>, l: &mut Layers, label_default: &str) -> Result<SeriesSpec, ParamError> {
    let label = l.pick("label").opt_string("label")?.unwrap_or(label_default).to_string();
    let t = l.pick("profile");
    let profile_name = t.string("profile")?.to_string();
    // A profile that does not exist is the spec's error (its `profile` key); one that exists
    // but does not parse is the profile file's, named with its path.
    let profile = load_profile(&profile_name, base).map_err(|e| {
        if e.file == profile_name && e.key.is_empty() && e.message.starts_with("no such profile") {
            t.err("profile", e.message)
        } else {
            e
        }
    })?;
    let t = l.pick("kind");
    let kind = match t.choice("kind", &["latency", "bandwidth", "bibw", "pipelined", "bipipelined"], None)?.as_str() {
        "latency" => PatternKind::Latency,
        "bandwidth" => PatternKind::Bandwidth,
        "bibw" => PatternKind::BiBandwidth,
        "pipelined" => PatternKind::Pipelined,
        _ => PatternKind::BiPipelined,
    };
    let names: Vec<&str> = Op::ALL.iter().map(|o| o.name()).collect();
    let op = Op::from_name(&l.pick("op").choice("op", &names, Some("rdma_write"))?).expect("choice checked");
    // Checked conversions: a count that does not fit is an error, never a truncation.
    let window = l.pick("window").int_in("window", 64, 1, limits::MAX_WINDOW as u64)? as u32;
    let warmup = l.pick("warmup").int_in("warmup", 10, 0, limits::MAX_ITERATIONS as u64)? as u32;
    // A latency series keeps one 8-byte sample per iteration.
    let max_iter = if kind == PatternKind::Latency { limits::MAX_LATENCY_SAMPLES } else { limits::MAX_ITERATIONS };
    let iterations = l.pick("iterations").int_in("iterations", 100, 1, max_iter as u64)? as u32;
    // A pipelined loop measures the completions after the warm-up; with fewer of them than
    // operations in flight, all were posted before measuring began and the figure is the
    // drain rate of the queue, blind to the round trip (distance, window) it is meant to show.
    if matches!(kind, PatternKind::Pipelined | PatternKind::BiPipelined) && iterations < window {
        let t = l.pick("iterations");
        return Err(t.err("iterations", format!("{iterations} is fewer than the window ({window}): a pipelined loop then measures only the drain of operations posted before measuring began; give at least {window}")));
    }
    let t = l.pick("sizes");
    let sizes = match t.value("sizes") {
        None => return Err(t.err("sizes", "missing (expected e.g. \"1..1M\" or [4, 64, 1024])")),
        Some(toml::Value::String(s)) => {
            let v = parse_sizes(s).map_err(|m| t.err("sizes", m))?;
            if let Some(big) = v.iter().find(|&&x| x > limits::MAX_MESSAGE_BYTES) {
                return Err(t.err("sizes", format!("{big} is out of range (allowed 1 to {} bytes)", limits::MAX_MESSAGE_BYTES)));
            }
            v
        }
        Some(toml::Value::Array(a)) => {
            let mut v = Vec::new();
            for x in a {
                match x {
                    toml::Value::Integer(i) if (1..=limits::MAX_MESSAGE_BYTES as i64).contains(i) => v.push(*i as u64),
                    toml::Value::Integer(i) => return Err(t.err("sizes", format!("{i} is out of range (sizes are positive integers, allowed 1 to {} bytes)", limits::MAX_MESSAGE_BYTES))),
                    other => return Err(t.err("sizes", format!("expected positive integers (bytes), found {other}"))),
                }
            }
            if v.is_empty() {
                return Err(t.err("sizes", "empty list"));
            }
            v
        }
        Some(other) => return Err(t.err("sizes", format!("expected a string like \"1..1M\" or a list of integers, found {}", other.type_str()))),
    };
    let service = Service::from_name(&l.pick("service").choice("service", &["rc", "uc", "ud"], Some("rc"))?).expect("checked");
    let ports_word = l.pick("ports").choice("ports", &["one", "stripe", "bind"], Some("one"))?;
    let threshold = l.pick("stripe_threshold").int_or("stripe_threshold", 8192, 0)?;
    let ports = match ports_word.as_str() {
        "one" => Ports::One,
        "stripe" => Ports::Stripe { threshold },
        _ => Ports::Bind,
    };
    let procs_list = int_list(l.pick("processes_per_node"), "processes_per_node", 1024, "process pairs per node")?.unwrap_or(vec![1]);
    let procs = procs_list[0];
    let t = l.pick("distance_miles");
    let distances: Vec<f64> = match t.value("distance_miles") {
        None => vec![],
        Some(v) => {
            let items = match v {
                toml::Value::Array(a) => a.clone(),
                other => vec![other.clone()],
            };
            let mut d: Vec<f64> = Vec::new();
            for x in items {
                match x {
                    toml::Value::Integer(i) if i >= 0 => d.push(i as f64),
                    toml::Value::Float(f) if f.is_finite() && f >= 0.0 => d.push(f),
                    other => return Err(t.err("distance_miles", format!("expected non-negative numbers of miles, found {other}"))),
                }
            }
            if d.is_empty() {
                return Err(t.err("distance_miles", "empty list"));
            }
            if profile.wan.is_none() {
                return Err(t.err("distance_miles", format!("profile {} has no [wan] section (wide-area extenders)", profile.id)));
            }
            d
        }
    };
    let mpi = match l.pick("mpi").choice("mpi", &["none", "rc", "ud", "uc"], Some("none"))?.as_str() {
        "rc" => Some(MpiDesign::Rc),
        "ud" => Some(MpiDesign::Ud),
        "uc" => Some(MpiDesign::Uc),
        _ => None,
    };
    let qps_per_port = l.pick("qps_per_port").int_in("qps_per_port", 1, 1, 4096)? as u32;
    if mpi.is_some() && profile.mpi.is_none() {
        return Err(l.pick("mpi").err("mpi", format!("profile {} has no [mpi] section (MPI library parameters)", profile.id)));
    }
    let word = l.pick("socket").choice("socket", &sockets(), Some("none"))?;
    let sock = sock_stack(l, &word)?;
    let mix_word = l.pick("socket_mix").choice("socket_mix", &sockets(), Some("none"))?;
    let sock_mix = sock_stack(l, &mix_word)?;
    if sock_mix.is_some() && sock.is_none() {
        return Err(l.pick("socket_mix").err("socket_mix", "needs `socket` too (the first half of the streams)"));
    }
    let measure = match l.pick("measure").choice("measure", &["total", "first", "second", "connect"], Some("total"))?.as_str() {
        "first" => Measure::First,
        "second" => Measure::Second,
        "connect" => Measure::Connect,
        _ => Measure::Total,
    };
    if measure == Measure::Connect && sock.is_none() {
        return Err(l.pick("measure").err("measure", "`connect` times a socket stack's connection set-up: set `socket`"));
    }
    if matches!(measure, Measure::First | Measure::Second) && sock_mix.is_none() {
        return Err(l.pick("measure").err("measure", "`first`/`second` need two stacks (`socket` and `socket_mix`)"));
    }
    if sock.is_some() && profile.stack.is_none() {
        return Err(l.pick("socket").err("socket", format!("profile {} has no [stack] section (host socket-stack costs)", profile.id)));
    }
    let clients = int_list(l.pick("clients"), "clients", 4096, "client nodes")?.unwrap_or(vec![1]);
    let initiator = match l.pick("initiator").choice("initiator", &["server", "clients"], Some("server"))?.as_str() {
        "clients" => Initiator::Clients,
        _ => Initiator::Server,
    };
    // Socket trains: a TCP stream's datagrams in trains (fewer events; see
    // docs/performance.md, "Socket trains in the studies"). Unset, each point has them where
    // they are exact (one socket connection: `PointJob::new`); `true` asks for them on every
    // point (several streams within about 1.1 % of packet by packet), `false` never.
    let t = l.pick("socket_trains");
    let socket_trains = if t.has("socket_trains") { Some(t.bool_or("socket_trains", false)?) } else { None };
    let tcp_trains = socket_trains == Some(true);
    if tcp_trains && sock.is_none() {
        return Err(t.err("socket_trains", "needs `socket` (trains of a TCP stream's datagrams)"));
    }
    let topology = if distances.is_empty() { Topology::Lan } else { Topology::Wan { miles: distances[0] } };
    let setup = Scenario { profile: Arc::new(profile), topology, service, ports, procs_per_node: procs, max_events: 2_000_000_000, trains: true, tcp_trains, mpi, qps_per_port, clients: clients[0], initiator, sock, sock_mix, io: None };
    let pattern = PatternSpec { kind, op, size: sizes[0], window, warmup, iterations };
    for &s in &sizes {
        setup.validate(&PatternSpec { size: s, ..pattern }).map_err(|e| ParamError {
            file: file.to_string(),
            key: format!("series `{label}`"),
            message: format!("{e} (size {s})"),
        })?;
    }
    for &c in &clients {
        let trial = Scenario { clients: c, ..setup.clone() };
        trial.validate(&pattern).map_err(|e| ParamError { file: file.to_string(), key: format!("series `{label}`"), message: format!("{e} ({c} clients)") })?;
    }
    for &n in &procs_list {
        let trial = Scenario { procs_per_node: n, ..setup.clone() };
        trial.validate(&pattern).map_err(|e| ParamError { file: file.to_string(), key: format!("series `{label}`"), message: format!("{e} ({n} processes per node)") })?;
    }
    let t = l.pick("window_bytes");
    let window_bytes = if t.has("window_bytes") { Some(t.int_in("window_bytes", 0, 1, 1 << 40)?) } else { None };
    Ok(SeriesSpec { label, profile_name, setup, pattern, sizes, distances, clients, procs: procs_list, measure, window_bytes, socket_trains })
}

fn load_profile(name: &str, base: Option<&Path>) -> Result<Profile, ParamError> {
    let looks_like_path = name.ends_with(".toml") || name.contains('/');
    match (looks_like_path, base) {
        (true, Some(dir)) if Path::new(name).is_relative() => Profile::load(&dir.join(name).to_string_lossy()),
        _ => Profile::load(name),
    }
}

/// Top-level tables of an experiment spec.
const TOP_KEYS: &[&str] = &["experiment", "pattern", "transport", "series", "live"];

/// Every kind of spec file interlab reads, by its top-level table, and the command that
/// runs it (one table for the experiment parser and for the commands of the other kinds).
pub const SPEC_KINDS: &[(&str, &str, &str)] = &[
    ("experiment", "an experiment spec", "interlab run FILE"),
    ("pvfs", "a parallel-file-I/O (PVFS) spec", "interlab pvfs --spec FILE"),
    ("datacenter", "a data-center (TPC-W replay) spec", "interlab datacenter replay --spec FILE"),
];

/// When `root` (a spec's top-level table) has no `[want]` table but that of another kind
/// of spec: why it is refused, naming the command that runs it.
pub fn other_spec_kind(file: &str, root: &toml::Table, want: &str) -> Option<String> {
    if root.contains_key(want) {
        return None;
    }
    SPEC_KINDS
        .iter()
        .find(|(t, _, _)| *t != want && root.contains_key(*t))
        .map(|(table, what, cmd)| format!("this is {what} (it has a [{table}] table, no [{want}]): run it with `{}`", cmd.replace("FILE", file)))
}

/// Names a spec of another kind with the command that runs it, and an unknown top-level
/// table (`[patern]`) with the nearest valid one, before any key inside is read.
fn check_top_level(file: &str, root: &toml::Table) -> Result<(), ParamError> {
    if let Some(message) = other_spec_kind(file, root, "experiment") {
        return Err(ParamError { file: file.into(), key: String::new(), message });
    }
    for k in root.keys() {
        if !TOP_KEYS.contains(&k.as_str()) {
            let mut message = unknown_key_message(k, TOP_KEYS);
            if !root.contains_key("experiment") || SPEC_KINDS.iter().any(|(t, _, _)| t == k) {
                message.push_str("; an experiment spec has [experiment], [pattern], [transport] and [[series]]");
            }
            return Err(ParamError { file: file.into(), key: k.clone(), message });
        }
    }
    Ok(())
}

/// Parses spec `text` read from `file`; relative profile paths resolve against `base`.
pub fn parse_experiment(file: &str, text: &str, base: Option<&Path>) -> Result<Experiment, ParamError> {
    let root = Table::parse(file, text)?;
    check_top_level(file, &root)?;
    let mut top = Table::new(file, "", &root);
    let mut e = top.table("experiment")?;
    let name = e.string("name")?.to_string();
    let engine = Engine::from_name(&e.choice("engine", &Engine::NAMES, Some("model"))?).expect("choice checked");
    let seed = e.int_or("seed", 1, 0)?;
    let description = e.opt_string("description")?.unwrap_or("").to_string();
    // Defaults for every series: the [pattern] and [transport] tables and `profile`.
    let mut defaults_tbl = toml::Table::new();
    if let Some(p) = e.value("profile") {
        defaults_tbl.insert("profile".into(), p.clone());
    }
    e.finish()?;
    for section in ["pattern", "transport"] {
        if let Some(t) = top.opt_table(section)? {
            drop(t);
            if let Some(toml::Value::Table(t)) = root.get(section) {
                for (k, v) in t {
                    if !SERIES_KEYS.contains(&k.as_str()) || k == "label" || k == "profile" {
                        return Err(ParamError { file: file.into(), key: format!("{section}.{k}"), message: unknown_key_message(k, &SERIES_KEYS[2..]) });
                    }
                    defaults_tbl.insert(k.clone(), v.clone());
                }
            }
        }
    }
    let mut defaults = Table::new(file, "", &defaults_tbl);
    let mut series = Vec::new();
    match top.value("series") {
        None => {
            let mut l = Layers { series: None, defaults: &mut defaults };
            series.push(parse_series(file, base, &mut l, &name)?);
        }
        Some(toml::Value::Array(items)) => {
            if items.is_empty() {
                return Err(ParamError { file: file.into(), key: "series".into(), message: "empty list of series".into() });
            }
            for (i, item) in items.iter().enumerate() {
                let toml::Value::Table(t) = item else {
                    return Err(ParamError { file: file.into(), key: format!("series[{i}]"), message: "expected a table ([[series]])".into() });
                };
                let mut st = Table::new(file, &format!("series[{i}]"), t);
                let mut l = Layers { series: Some(&mut st), defaults: &mut defaults };
                // Unknown keys first: a typo (`lable`) is named before anything it would change.
                Table::new(file, &format!("series[{i}]"), t).finish_among(SERIES_KEYS)?;
                let s = parse_series(file, base, &mut l, &format!("series {}", i + 1))?;
                st.finish_among(SERIES_KEYS)?;
                series.push(s);
            }
        }
        Some(other) => {
            return Err(ParamError { file: file.into(), key: "series".into(), message: format!("expected [[series]] tables, found {}", other.type_str()) })
        }
    }
    let live = match top.opt_table("live")? {
        None => LiveSpec::default(),
        Some(mut t) => {
            let peers = match t.value("peers") {
                None => vec![],
                Some(toml::Value::String(p)) => vec![p.clone()],
                Some(toml::Value::Array(a)) => {
                    let mut v = Vec::new();
                    for x in a {
                        match x {
                            toml::Value::String(p) if !p.trim().is_empty() => v.push(p.clone()),
                            other => return Err(t.err("peers", format!("expected daemon addresses \"HOST[:PORT]\", found {other}"))),
                        }
                    }
                    v
                }
                Some(other) => return Err(t.err("peers", format!("expected a list of \"HOST[:PORT]\", found {}", other.type_str()))),
            };
            let transport = t.choice("transport", &["tcp", "udp", "unix"], Some("tcp"))?;
            let time_s = match t.value("time") {
                None => None,
                Some(toml::Value::String(d)) => {
                    let d = interlab_patterns::parse_duration(d).map_err(|m| t.err("time", m))?;
                    Some(d.as_secs_f64())
                }
                Some(toml::Value::Integer(i)) => Some(*i as f64),
                Some(toml::Value::Float(f)) => Some(*f),
                Some(other) => return Err(t.err("time", format!("expected a duration like \"3s\", found {}", other.type_str()))),
            };
            if let Some(x) = time_s {
                if !(x > 0.0 && x <= 86_400.0) {
                    return Err(t.err("time", format!("{x} s is out of range (more than 0, at most 86400 s)")));
                }
            }
            t.finish()?;
            LiveSpec { peers, transport, time_s }
        }
    };
    top.finish()?;
    Ok(Experiment { name, file: file.to_string(), engine, seed, description, series, live })
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
[experiment]
name = "t"
profile = "xeon-mt25208-pcie"
[pattern]
kind = "bandwidth"
op = "rdma_write"
sizes = "1K..4K"
[[series]]
label = "A"
[[series]]
label = "B"
ports = "stripe"
sizes = [8192]
"#;

    #[test]
    fn series_inherit_and_override() {
        let e = parse_experiment("t.toml", GOOD, None).unwrap();
        assert_eq!(e.series.len(), 2);
        assert_eq!(e.series[0].sizes, vec![1024, 2048, 4096]);
        assert_eq!(e.series[1].sizes, vec![8192]);
        assert_eq!(e.series[1].setup.ports, Ports::Stripe { threshold: 8192 });
        assert_eq!(e.series[0].pattern.window, 64);
    }

    #[test]
    fn socket_trains_default_to_where_they_are_exact() {
        // Unset: on for a point of one socket connection, off for eight streams, two
        // directions or verbs; `true` on every socket point, `false` on none.
        let text = "[experiment]\nname=\"t\"\nprofile=\"r805-connectx-ddr\"\n[pattern]\nkind=\"bandwidth\"\nop=\"send\"\nsizes=\"64K\"\nsocket=\"ipoib-ud\"\n[[series]]\nlabel=\"default\"\nprocesses_per_node=[1,8]\n[[series]]\nlabel=\"trains\"\nsocket_trains=true\nprocesses_per_node=[1,8]\n[[series]]\nlabel=\"packets\"\nsocket_trains=false\n[[series]]\nlabel=\"bibw\"\nkind=\"bibw\"\n[[series]]\nlabel=\"verbs\"\nsocket=\"none\"";
        let e = parse_experiment("t.toml", text, None).unwrap();
        let on = |s: usize| e.series[s].points().into_iter().map(|pt| (pt.procs, crate::point::PointJob::new(&e, s, pt).scenario.tcp_trains)).collect::<Vec<_>>();
        assert_eq!(on(0), [(1, true), (8, false)]);
        assert_eq!(on(1), [(1, true), (8, true)]);
        assert_eq!(on(2), [(1, false)]);
        assert_eq!(on(3), [(1, false)]);
        assert_eq!(on(4), [(1, false)]);
    }

    fn err(text: &str) -> ParamError {
        parse_experiment("bad.toml", text, None).unwrap_err()
    }

    #[test]
    fn every_error_names_file_and_key() {
        let cases: &[(&str, &str, &str)] = &[
            ("x = ", "", "not valid TOML"),
            ("[pattern]\nkind=\"latency\"", "experiment", "missing table"),
            ("[experiment]\nname=\"t\"\nprofile=\"nope\"\n[pattern]\nkind=\"latency\"\nsizes=\"4\"", "profile", "built-in"),
            ("[experiment]\nname=\"t\"\nprofile=\"xeon-mt25208-pcie\"\n[pattern]\nkind=\"lat\"\nsizes=\"4\"", "kind", "expected one of"),
            ("[experiment]\nname=\"t\"\nprofile=\"xeon-mt25208-pcie\"\n[pattern]\nkind=\"latency\"", "sizes", "missing"),
            ("[experiment]\nname=\"t\"\nprofile=\"xeon-mt25208-pcie\"\n[pattern]\nkind=\"latency\"\nsizes=\"4x\"", "sizes", "not a size"),
            ("[experiment]\nname=\"t\"\nprofile=\"xeon-mt25208-pcie\"\n[pattern]\nkind=\"latency\"\nsizes=[0]", "sizes", "positive"),
            ("[experiment]\nname=\"t\"\nprofile=\"xeon-mt25208-pcie\"\n[pattern]\nkind=\"latency\"\nsizes=\"4\"\nwindw=3", "pattern.windw", "unknown key"),
            ("[experiment]\nname=\"t\"\nprofile=\"xeon-mt25208-pcie\"\ncolour=1\n[pattern]\nkind=\"latency\"\nsizes=\"4\"", "colour", "unknown key"),
            ("[experiment]\nname=\"t\"\nprofile=\"xeon-mt25208-pcie\"\n[pattern]\nkind=\"latency\"\nsizes=\"4\"\nwindow=0", "window", "0 is out of range (allowed 1 to"),
            ("[experiment]\nname=\"t\"\nprofile=\"xeon-mt25208-pcie\"\n[pattern]\nkind=\"latency\"\nsizes=\"4K\"\nop=\"rdma_read\"\n[transport]\nservice=\"ud\"", "series", "UD carries only"),
            ("[experiment]\nname=\"t\"\nprofile=\"xeon-mt25208-pcie\"\n[pattern]\nkind=\"latency\"\nsizes=\"4\"\n[[series]]\nlabel=\"a\"\nbogus=1", "series[0].bogus", "unknown key"),
            ("[experiment]\nname=\"t\"\nprofile=\"xeon-mt25208-pcie\"\n[pattern]\nkind=\"latency\"\nsizes=\"4\"\n[[series]]\nlable=\"SDP\"\nsocket=\"sdp\"", "series[0].lable", "did you mean `label`?"),
            ("[experiment]\nname=\"t\"\nprofile=\"xeon-mt25208-pcie\"\n[patern]\nkind=\"latency\"\nsizes=\"4\"", "patern", "did you mean `pattern`?"),
            ("[experiment]\nname=\"t\"\nprofile=\"xeon-mt25208-pcie\"\n[pattern]\nkind=\"latency\"\nsizes=\"4\"\nwindw=3", "pattern.windw", "did you mean `window`?"),
            ("[pvfs]\nname=\"x\"\n[[series]]\nlabel=\"a\"", "", "run it with `interlab pvfs --spec bad.toml`"),
            ("[datacenter]\nname=\"x\"", "", "interlab datacenter replay --spec bad.toml"),
            ("[experiment]\nname=\"t\"\nprofile=\"xeon-mt25208-pcie\"\n[pattern]\nkind=\"pipelined\"\nsizes=\"4K\"\nwindow=16\niterations=4", "iterations", "fewer than the window (16)"),
            ("series=3\n[experiment]\nname=\"t\"\nprofile=\"xeon-mt25208-pcie\"\n[pattern]\nkind=\"latency\"\nsizes=\"4\"", "series", "expected [[series]]"),
            ("[experiment]\nname=\"t\"\nprofile=\"xeon-mt25208-pcie\"\n[pattern]\nkind=\"latency\"\nsizes=\"4\"\ndistance_miles=100", "distance_miles", "no [wan] section"),
            ("[experiment]\nname=\"t\"\nprofile=\"woodcrest-infinihost-longbow\"\n[pattern]\nkind=\"latency\"\nsizes=\"4\"\ndistance_miles=[-1]", "distance_miles", "non-negative"),
            ("[experiment]\nname=\"t\"\nprofile=\"r805-connectx-ddr\"\n[pattern]\nkind=\"latency\"\nop=\"send\"\nsizes=\"4\"\nmpi=\"rc\"", "mpi", "no [mpi] section"),
            ("[experiment]\nname=\"t\"\nprofile=\"xeon-mt25208-pcie\"\n[pattern]\nkind=\"latency\"\nop=\"send\"\nsizes=\"4\"\nmpi=\"tcp\"", "mpi", "expected one of"),
            ("[experiment]\nname=\"t\"\nprofile=\"xeon-mt25208-pcie\"\n[pattern]\nkind=\"latency\"\nop=\"rdma_read\"\nsizes=\"4\"\nmpi=\"rc\"", "series", "op send"),
            ("[experiment]\nname=\"t\"\nprofile=\"xeon-mt25208-pcie\"\n[pattern]\nkind=\"latency\"\nsizes=\"4\"\nqps_per_port=2", "series", "MPI channels only"),
            ("[experiment]\nname=\"t\"\nprofile=\"xeon-mt25208-pcie\"\n[pattern]\nkind=\"bandwidth\"\nop=\"rdma_read\"\nsizes=\"4\"", "series", "pipelined"),
            ("[experiment]\nname=\"t\"\nprofile=\"xeon-mt25208-pcie\"\n[pattern]\nkind=\"latency\"\nsizes=\"4\"\nclients=0", "clients", "integers 1..=4096"),
            ("[experiment]\nname=\"t\"\nprofile=\"xeon-mt25208-pcie\"\n[pattern]\nkind=\"latency\"\nsizes=\"4\"\ninitiator=\"both\"", "initiator", "expected one of"),
            ("[experiment]\nname=\"t\"\nprofile=\"woodcrest-infinihost-longbow\"\n[pattern]\nkind=\"latency\"\nsizes=\"4\"\nclients=2\ndistance_miles=10", "series", "two nodes"),
            ("[experiment]\nname=\"t\"\nprofile=\"xeon-mt25208-pcie\"\n[pattern]\nkind=\"latency\"\nop=\"send\"\nsizes=\"4\"\nsocket=\"sdp-bc\"", "socket", "no [stack] section"),
            ("[experiment]\nname=\"t\"\nprofile=\"xeon24-mt23108-pcix\"\n[pattern]\nkind=\"latency\"\nop=\"send\"\nsizes=\"4\"\nsocket=\"tcp\"", "socket", "expected one of"),
            ("[experiment]\nname=\"t\"\nprofile=\"xeon-mt25208-pcie\"\n[pattern]\nkind=\"latency\"\nsizes=\"4\"\nclients=[1, 0]", "clients", "integers 1..=4096"),
            ("[experiment]\nname=\"t\"\nprofile=\"r805-connectx-ddr\"\n[pattern]\nkind=\"bandwidth\"\nop=\"send\"\nsizes=\"4\"\nsocket_mix=\"eth\"", "socket_mix", "needs `socket`"),
            ("[experiment]\nname=\"t\"\nprofile=\"r805-connectx-ddr\"\n[pattern]\nkind=\"bandwidth\"\nop=\"send\"\nsizes=\"4\"\nsocket=\"eth\"\nmeasure=\"first\"", "measure", "two stacks"),
            ("[experiment]\nname=\"t\"\nprofile=\"r805-connectx-ddr\"\n[pattern]\nkind=\"bandwidth\"\nop=\"send\"\nsizes=\"4\"\nsocket=\"ipoib-rc\"\nlso=true", "series", "datagram-mode offloads"),
            ("[experiment]\nname=\"t\"\nprofile=\"r805-connectx-ddr\"\n[pattern]\nkind=\"bandwidth\"\nop=\"send\"\nsizes=\"4\"\nsocket=\"eth\"\nmtu=100", "series", "576..=9216"),
            ("[experiment]\nname=\"t\"\nprofile=\"r805-connectx-ddr\"\n[pattern]\nkind=\"bandwidth\"\nop=\"send\"\nsizes=\"4\"\nsocket=\"eth\"\nsocket_mix=\"sdp\"\nprocesses_per_node=1", "series", "two process pairs"),
            ("[experiment]\nname=\"t\"\nprofile=\"r805-connectx-ddr\"\n[pattern]\nkind=\"bandwidth\"\nop=\"send\"\nsizes=\"4\"\nsocket=\"eth\"\nlro=\"yes\"", "lro", "true or false"),
            ("[experiment]\nname=\"t\"\nprofile=\"r805-connectx-ddr\"\n[pattern]\nkind=\"bandwidth\"\nop=\"send\"\nsizes=\"4\"\nsocket=\"ipoib-ud\"\nsocket_trains=1", "socket_trains", "true or false"),
            ("[experiment]\nname=\"t\"\nprofile=\"r805-connectx-ddr\"\n[pattern]\nkind=\"bandwidth\"\nop=\"send\"\nsizes=\"4\"\nsocket_trains=true", "socket_trains", "needs `socket`"),
            ("[experiment]\nname=\"t\"\nprofile=\"xeon-mt25208-pcie\"\nengine=\"gpu\"\n[pattern]\nkind=\"latency\"\nsizes=\"4\"", "engine", "expected one of"),
            // Numbers that used to be truncated by `as u32` or accepted however large.
            ("[experiment]\nname=\"t\"\nprofile=\"xeon-mt25208-pcie\"\n[pattern]\nkind=\"bandwidth\"\nsizes=\"4\"\niterations=4294967296", "iterations", "4294967296 is out of range (allowed 1 to 1073741824)"),
            ("[experiment]\nname=\"t\"\nprofile=\"xeon-mt25208-pcie\"\n[pattern]\nkind=\"latency\"\nsizes=\"4\"\niterations=10000000", "iterations", "allowed 1 to 8388608"),
            ("[experiment]\nname=\"t\"\nprofile=\"xeon-mt25208-pcie\"\n[pattern]\nkind=\"bandwidth\"\nsizes=\"4\"\nwindow=4294967296", "window", "4294967296 is out of range (allowed 1 to 1048576)"),
            ("[experiment]\nname=\"t\"\nprofile=\"xeon-mt25208-pcie\"\n[pattern]\nkind=\"bandwidth\"\nsizes=\"4\"\nwarmup=-1", "warmup", "-1 is out of range"),
            ("[experiment]\nname=\"t\"\nprofile=\"xeon-mt25208-pcie\"\n[pattern]\nkind=\"bandwidth\"\nsizes=[1000000000000]", "sizes", "1000000000000 is out of range (sizes are positive integers, allowed 1 to 1073741824 bytes)"),
            ("[experiment]\nname=\"t\"\nprofile=\"xeon-mt25208-pcie\"\n[pattern]\nkind=\"bandwidth\"\nsizes=\"4..2G\"", "sizes", "out of range"),
            ("[experiment]\nname=\"t\"\nprofile=\"xeon-mt25208-pcie\"\n[pattern]\nkind=\"bandwidth\"\nsizes=\"99999999999G\"", "sizes", "too large"),
            ("[experiment]\nname=\"t\"\nprofile=\"xeon-mt25208-pcie\"\n[pattern]\nkind=\"latency\"\nsizes=\"4\"\nqps_per_port=4294967297", "qps_per_port", "out of range"),
        ];
        for (text, key, msg) in cases {
            let e = err(text);
            assert_eq!(e.file, "bad.toml", "{e}");
            assert!(e.key.contains(key), "key `{}` lacks `{key}`: {e}", e.key);
            assert!(e.message.contains(msg), "message lacks `{msg}`: {e}");
        }
        // A profile with a socket stack but no Ethernet port: the sdp profile without [eth].
        let full = include_str!("../../../profiles/xeon24-mt23108-pcix.toml");
        let cut = full.find("\n[eth]").expect("the sdp profile has [eth]");
        let path = std::env::temp_dir().join(format!("interlab-noeth-{}.toml", std::process::id()));
        std::fs::write(&path, &full[..cut]).unwrap();
        let e = err(&format!("[experiment]\nname=\"t\"\nprofile=\"{}\"\n[pattern]\nkind=\"bandwidth\"\nop=\"send\"\nsizes=\"4\"\nsocket=\"eth\"", path.display()));
        let _ = std::fs::remove_file(&path);
        assert!(e.key.contains("series") && e.message.contains("no Ethernet port"), "{e}");
    }

    #[test]
    fn a_profile_that_is_not_toml_is_named_as_the_file_at_fault() {
        let dir = std::env::temp_dir().join(format!("interlab-badprof-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let prof = dir.join("prof.toml");
        std::fs::write(&prof, "this is = = not toml\n").unwrap();
        let spec = "[experiment]\nname=\"t\"\nprofile=\"prof.toml\"\n[pattern]\nkind=\"latency\"\nsizes=\"4\"";
        // Relative to the spec's directory, and as an absolute path.
        let e1 = parse_experiment("spec.toml", spec, Some(&dir)).unwrap_err();
        let abs = spec.replace("prof.toml", &prof.display().to_string());
        let e2 = parse_experiment("spec.toml", &abs, None).unwrap_err();
        let _ = std::fs::remove_dir_all(&dir);
        for e in [e1, e2] {
            assert!(e.file.ends_with("prof.toml"), "error names {} instead of the profile file: {e}", e.file);
            assert!(e.message.contains("TOML"), "{e}");
        }
    }
}

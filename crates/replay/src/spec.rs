//! The data-center spec (TOML) of a replay: browsers, tiers and cores, connections per
//! tier pair, protocol per link, profile, timing; plus optional `[[series]]` tables that
//! override any of these keys (the study figures use them). See docs/datacenter.md,
//! "Model replay".

use crate::engine::{self, Config, LinkCfg, Outcome, TierCfg, Workload};
use crate::netcost::{NetCost, Protocol};
use crate::table::InteractionTable;
use crate::workload::{secs, SizeShape, SpecPage, Specweb, StaticContent, Tpcw, TpcwSsl};
use interlab_tpcw::tpcw::Mix;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};
use toml::Value;

/// Which workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Tpcw,
    Static,
    Specweb,
}

/// One replay configuration (a spec, or one of its series).
#[derive(Debug, Clone)]
pub struct DcSpec {
    /// The folder of the spec file (relative paths in it, such as a World Cup log, start there).
    pub dir: std::path::PathBuf,
    pub name: String,
    pub label: String,
    pub profile: String,
    pub kind: Kind,
    pub mix: Mix,
    pub seed: u64,
    /// Think-time mean = the workload's (TPC-W 7 s, SPECweb 10 s) x this.
    pub think_scale: f64,
    /// Replay the trace's recorded think times instead (TPC-W).
    pub think_from_trace: bool,
    pub session_scale: f64,
    pub warmup_s: f64,
    pub measure_s: f64,
    /// Browsers (clients, sessions); several = a sweep.
    pub browsers: Vec<u32>,
    /// Cores of web (or proxy), app (or web behind the proxy, or BeSim), db.
    pub cores: [u32; 3],
    /// 0: each tier on its own host (`cores`), the browsers on unlimited client machines.
    /// N: every tier and the browsers on one host of N cores (a live run on one machine).
    pub host_cores: u32,
    /// Connections: client-web, web-app, app-db (0 = one per browser).
    pub connections: [u32; 3],
    pub protocols: [Protocol; 3],
    pub image_connections: u32,
    /// Static content: mean file sizes (a sweep), connection per request.
    pub file_sizes: Vec<u64>,
    pub connect_per_request: bool,
    /// SDP connections pay the idle control round trip (false: a what-if without it).
    pub sdp_idle_penalty: bool,
    /// Extra numbers of the workload (static: proxy_cpu_ns ...; specweb: its table).
    pub params: BTreeMap<String, Value>,
}

fn err(file: &str, key: &str, want: &str) -> String {
    format!("{file}: key `{key}`: expected {want}")
}

fn get_f64(t: &toml::Table, file: &str, key: &str, d: f64) -> Result<f64, String> {
    match t.get(key) {
        None => Ok(d),
        Some(Value::Integer(i)) => Ok(*i as f64),
        Some(Value::Float(f)) => Ok(*f),
        Some(_) => Err(err(file, key, "a number")),
    }
}

fn get_u32s(t: &toml::Table, file: &str, key: &str, d: Vec<u32>) -> Result<Vec<u32>, String> {
    match t.get(key) {
        None => Ok(d),
        Some(Value::Integer(i)) if *i >= 0 => Ok(vec![*i as u32]),
        Some(Value::Array(a)) if !a.is_empty() => a
            .iter()
            .map(|x| x.as_integer().filter(|&i| i >= 0).map(|i| i as u32).ok_or_else(|| err(file, key, "non-negative integers")))
            .collect(),
        Some(_) => Err(err(file, key, "a non-negative integer or a non-empty list of them")),
    }
}

fn get_str<'a>(t: &'a toml::Table, file: &str, key: &str) -> Result<Option<&'a str>, String> {
    match t.get(key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(err(file, key, "a string")),
    }
}

const KEYS: &[&str] = &[
    "name", "label", "profile", "workload", "mix", "seed", "think_scale", "think", "session_scale", "warmup_s", "measure_s",
    "browsers", "web_cores", "app_cores", "db_cores", "host_cores", "client_web_connections", "web_app_connections", "app_db_connections",
    "client_web", "web_app", "app_db", "protocol", "image_connections", "file_sizes", "connect_per_request", "sdp_idle_penalty",
    "params", "series",
];

impl DcSpec {
    fn defaults() -> DcSpec {
        DcSpec {
            dir: std::path::PathBuf::new(),
            name: "datacenter".into(),
            label: String::new(),
            profile: "r805-connectx-ddr".into(),
            kind: Kind::Tpcw,
            mix: Mix::Browsing,
            seed: 1,
            think_scale: 1.0,
            think_from_trace: false,
            session_scale: 1.0,
            warmup_s: 20.0,
            measure_s: 60.0,
            browsers: vec![100],
            cores: [8, 8, 8],
            host_cores: 0,
            connections: [0, 250, 50],
            protocols: [Protocol::Eth; 3],
            image_connections: 4,
            file_sizes: vec![16384],
            connect_per_request: true,
            sdp_idle_penalty: true,
            params: BTreeMap::new(),
        }
    }

    /// Applies the keys of one table on top of `self`.
    fn apply(&mut self, t: &toml::Table, file: &str) -> Result<(), String> {
        for k in t.keys() {
            if !KEYS.contains(&k.as_str()) {
                return Err(format!("{file}: unknown key `{k}` (expected one of {})", KEYS.join(", ")));
            }
        }
        if let Some(s) = get_str(t, file, "name")? {
            self.name = s.into();
        }
        if let Some(s) = get_str(t, file, "label")? {
            self.label = s.into();
        }
        if let Some(s) = get_str(t, file, "profile")? {
            self.profile = s.into();
        }
        if let Some(s) = get_str(t, file, "workload")? {
            self.kind = match s {
                "tpcw" => Kind::Tpcw,
                "static" => Kind::Static,
                "specweb" => Kind::Specweb,
                _ => return Err(err(file, "workload", "\"tpcw\", \"static\" or \"specweb\"")),
            };
        }
        if let Some(s) = get_str(t, file, "mix")? {
            self.mix = Mix::parse(s).map_err(|e| format!("{file}: key `mix`: {e}"))?;
        }
        if let Some(s) = get_str(t, file, "think")? {
            self.think_from_trace = match s {
                "trace" => true,
                "negexp" => false,
                _ => return Err(err(file, "think", "\"negexp\" or \"trace\"")),
            };
        }
        self.seed = get_f64(t, file, "seed", self.seed as f64)? as u64;
        self.think_scale = get_f64(t, file, "think_scale", self.think_scale)?;
        self.session_scale = get_f64(t, file, "session_scale", self.session_scale)?;
        self.warmup_s = get_f64(t, file, "warmup_s", self.warmup_s)?;
        self.measure_s = get_f64(t, file, "measure_s", self.measure_s)?;
        self.browsers = get_u32s(t, file, "browsers", self.browsers.clone())?;
        for (i, k) in ["web_cores", "app_cores", "db_cores"].iter().enumerate() {
            self.cores[i] = get_u32s(t, file, k, vec![self.cores[i]])?[0];
        }
        self.host_cores = get_u32s(t, file, "host_cores", vec![self.host_cores])?[0];
        for (i, k) in ["client_web_connections", "web_app_connections", "app_db_connections"].iter().enumerate() {
            self.connections[i] = get_u32s(t, file, k, vec![self.connections[i]])?[0];
        }
        if let Some(s) = get_str(t, file, "protocol")? {
            let p = Protocol::parse(s).map_err(|e| format!("{file}: key `protocol`: {e}"))?;
            self.protocols = [p; 3];
        }
        for (i, k) in ["client_web", "web_app", "app_db"].iter().enumerate() {
            if let Some(s) = get_str(t, file, k)? {
                self.protocols[i] = Protocol::parse(s).map_err(|e| format!("{file}: key `{k}`: {e}"))?;
            }
        }
        self.image_connections = get_u32s(t, file, "image_connections", vec![self.image_connections])?[0];
        if t.contains_key("file_sizes") {
            self.file_sizes = get_u32s(t, file, "file_sizes", vec![])?.into_iter().map(u64::from).collect();
        }
        match t.get("connect_per_request") {
            None => {}
            Some(Value::Boolean(b)) => self.connect_per_request = *b,
            Some(_) => return Err(err(file, "connect_per_request", "true or false")),
        }
        match t.get("sdp_idle_penalty") {
            None => {}
            Some(Value::Boolean(b)) => self.sdp_idle_penalty = *b,
            Some(_) => return Err(err(file, "sdp_idle_penalty", "true or false")),
        }
        match t.get("params") {
            None => {}
            Some(Value::Table(p)) => {
                for (k, v) in p {
                    self.params.insert(k.clone(), v.clone());
                }
            }
            Some(_) => return Err(err(file, "params", "a table")),
        }
        Ok(())
    }

    fn check(&self, file: &str) -> Result<(), String> {
        if self.browsers.contains(&0) {
            return Err(err(file, "browsers", "at least 1 browser"));
        }
        if !(self.think_scale >= 0.0 && self.session_scale > 0.0 && self.measure_s > 0.0 && self.warmup_s >= 0.0) {
            return Err(format!("{file}: think_scale, session_scale, warmup_s must be >= 0 and measure_s > 0"));
        }
        if self.cores.contains(&0) {
            return Err(format!("{file}: every server tier needs at least one core"));
        }
        if self.kind == Kind::Static && self.file_sizes.contains(&0) {
            return Err(err(file, "file_sizes", "sizes of at least 1 byte"));
        }
        if self.kind == Kind::Static {
            self.file_sizes_shape().map_err(|e| format!("{file}: {e}"))?;
        }
        if self.kind == Kind::Tpcw {
            self.tpcw_ssl().map_err(|e| format!("{file}: {e}"))?;
        }
        Ok(())
    }

    /// Parses a spec: the top-level `[datacenter]` table, then each `[[series]]` on top of
    /// it (none: the top level is the only series).
    pub fn parse(file: &str, text: &str) -> Result<Vec<DcSpec>, String> {
        let v: toml::Table = text.parse().map_err(|e| format!("{file}: not valid TOML: {e}"))?;
        for k in v.keys() {
            if k != "datacenter" && k != "series" {
                return Err(format!("{file}: unknown table `{k}` (expected [datacenter] and [[series]])"));
            }
        }
        let mut base = DcSpec::defaults();
        base.dir = std::path::Path::new(file).parent().map(|d| d.to_path_buf()).unwrap_or_default();
        match v.get("datacenter") {
            Some(Value::Table(t)) => base.apply(t, file)?,
            _ => return Err(format!("{file}: missing the [datacenter] table")),
        }
        let mut out = Vec::new();
        match v.get("series") {
            None => {
                base.check(file)?;
                out.push(base);
            }
            Some(Value::Array(a)) => {
                for (i, s) in a.iter().enumerate() {
                    let Value::Table(t) = s else { return Err(format!("{file}: [[series]] {} is not a table", i + 1)) };
                    let mut x = base.clone();
                    x.apply(t, &format!("{file} [[series]] {}", i + 1))?;
                    x.check(file)?;
                    out.push(x);
                }
            }
            Some(_) => return Err(format!("{file}: `series` must be [[series]] tables")),
        }
        Ok(out)
    }

    fn param(&self, key: &str) -> Result<f64, String> {
        match self.params.get(key) {
            Some(Value::Integer(i)) => Ok(*i as f64),
            Some(Value::Float(f)) => Ok(*f),
            Some(Value::Table(t)) => match t.get("value") {
                Some(Value::Integer(i)) => Ok(*i as f64),
                Some(Value::Float(f)) => Ok(*f),
                _ => Err(format!("spec {}: params.{key}.value must be a number", self.name)),
            },
            _ => Err(format!("spec {}: missing params.{key} (a number or {{ value = .., src = \"..\" }})", self.name)),
        }
    }

    /// SSL on TPC-W's secure pages: `params.ssl_ns_per_byte` and `params.ssl_handshake_ns`
    /// together, or neither (no SSL, as in the live bookstore).
    pub fn tpcw_ssl(&self) -> Result<Option<TpcwSsl>, String> {
        match (self.params.contains_key("ssl_ns_per_byte"), self.params.contains_key("ssl_handshake_ns")) {
            (false, false) => Ok(None),
            (true, true) => Ok(Some(TpcwSsl { ns_per_byte: self.param("ssl_ns_per_byte")?, handshake_ns: self.param("ssl_handshake_ns")? as u64 })),
            _ => Err(format!("spec {}: params.ssl_ns_per_byte and params.ssl_handshake_ns go together (SSL on the secure pages)", self.name)),
        }
    }

    /// The static workload's file-size distribution: the response sizes of the first
    /// `params.wc98_requests` (default 20,000) requests of a World Cup log `params.wc98_log`
    /// (successful GETs with a body), or `params.shape` ([[relative size, weight], ...]), or
    /// one size.
    pub fn file_sizes_shape(&self) -> Result<SizeShape, String> {
        let at = |k: &str| format!("spec {}: params.{k}", self.name);
        if let Some(v) = self.params.get("wc98_log") {
            let rel = v.as_str().ok_or_else(|| format!("{} must be the path of a World Cup log (a string)", at("wc98_log")))?;
            let n = match self.params.get("wc98_requests") {
                None => 20_000,
                Some(Value::Integer(i)) if *i > 0 => *i as usize,
                Some(_) => return Err(format!("{} must be a positive integer", at("wc98_requests"))),
            };
            let path = self.dir.join(rel);
            let counts = interlab_tpcw::wc98::size_counts(&interlab_tpcw::wc98::read(&path, n)?);
            if counts.is_empty() {
                return Err(format!("{}: no successful GET with a body among its first {n} requests", path.display()));
            }
            let pairs: Vec<(f64, f64)> = counts.iter().map(|&(b, c)| (b as f64, c as f64)).collect();
            return SizeShape::new(&pairs).map_err(|e| format!("{}: {e}", path.display()));
        }
        let pairs = match self.params.get("shape") {
            Some(Value::Array(a)) => a
                .iter()
                .map(|p| match p.as_array().map(|x| x.as_slice()) {
                    Some([s, w]) => Some((s.as_float().or(s.as_integer().map(|i| i as f64))?, w.as_float().or(w.as_integer().map(|i| i as f64))?)),
                    _ => None,
                })
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| format!("{} must be [[size, weight], ...]", at("shape")))?,
            Some(_) => return Err(format!("{} must be [[size, weight], ...]", at("shape"))),
            None => vec![(1.0, 1.0)],
        };
        SizeShape::new(&pairs).map_err(|e| format!("{}: {e}", at("shape")))
    }

    /// Runs one point: `browsers` browsers (and, for static content, mean file size `file`).
    pub fn run_point(&self, table: &Arc<InteractionTable>, costs: &CostCache, browsers: u32, file: u64) -> Result<Outcome, String> {
        let (cfg, wl) = self.point(table, costs, browsers, file)?;
        engine::run(&cfg, wl)
    }

    /// The replay of one point (see [`DcSpec::run_point`]): its configuration and workload.
    pub(crate) fn point(&self, table: &Arc<InteractionTable>, costs: &CostCache, browsers: u32, file: u64) -> Result<(Config, Box<dyn Workload>), String> {
        let cost = |i: usize| -> Result<Arc<NetCost>, String> {
            let c = costs.get(&self.profile, self.protocols[i])?;
            Ok(if self.sdp_idle_penalty { c } else { Arc::new(NetCost { idle_us: None, ..(*c).clone() }) })
        };
        let think_scale = self.think_scale;
        let (tiers, links, wl): (Vec<TierCfg>, Vec<LinkCfg>, Box<dyn Workload>) = match self.kind {
            Kind::Tpcw | Kind::Specweb => {
                let tiers = vec![
                    TierCfg { name: "client".into(), cores: 0, shared: false },
                    TierCfg { name: "web".into(), cores: self.cores[0], shared: false },
                    TierCfg { name: if self.kind == Kind::Tpcw { "app" } else { "besim" }.into(), cores: self.cores[1], shared: false },
                    TierCfg { name: "db".into(), cores: self.cores[2], shared: false },
                ];
                let links = vec![
                    LinkCfg { name: "client-web".into(), from: 0, to: 1, cost: cost(0)?, pool: self.connections[0] },
                    LinkCfg { name: "web-app".into(), from: 1, to: 2, cost: cost(1)?, pool: self.connections[1] },
                    LinkCfg { name: "app-db".into(), from: 2, to: 3, cost: cost(2)?, pool: self.connections[2] },
                ];
                let wl: Box<dyn Workload> = if self.kind == Kind::Tpcw {
                    let think = (!self.think_from_trace).then(|| secs(7.0 * think_scale));
                    let mut t = Tpcw::new(table.clone(), self.mix, browsers, think, secs(900.0 * self.session_scale));
                    t.image_lanes = self.image_connections.max(1);
                    t.connect_per_session = self.connections[0] == 0;
                    t.browser_cpu = self.host_cores > 0;
                    t.ssl = self.tpcw_ssl()?;
                    Box::new(t)
                } else {
                    Box::new(self.specweb(think_scale)?)
                };
                (tiers, links, wl)
            }
            Kind::Static => {
                let tiers = vec![
                    TierCfg { name: "client".into(), cores: 0, shared: false },
                    TierCfg { name: "proxy".into(), cores: self.cores[0], shared: false },
                    TierCfg { name: "web".into(), cores: self.cores[1], shared: false },
                ];
                let links = vec![
                    LinkCfg { name: "client-proxy".into(), from: 0, to: 1, cost: cost(0)?, pool: 0 },
                    LinkCfg { name: "proxy-web".into(), from: 1, to: 2, cost: cost(1)?, pool: 0 },
                ];
                let shape = self.file_sizes_shape()?;
                let wl = StaticContent {
                    shape,
                    mean_bytes: file as f64,
                    request_bytes: self.param("request_bytes")? as u64,
                    proxy_cpu_ns: self.param("proxy_cpu_ns")? as u64,
                    web_cpu_ns: self.param("web_cpu_ns")? as u64,
                    read_bytes_per_us: self.param("read_mbytes_per_s")?,
                    connect: self.connect_per_request,
                };
                (tiers, links, Box::new(wl))
            }
        };
        let shared = self.host_cores > 0;
        let tiers = tiers.into_iter().map(|t| TierCfg { shared, ..t }).collect();
        let cfg = Config {
            tiers,
            host_cores: self.host_cores,
            links,
            browsers,
            seed: self.seed,
            // Browsers start uniformly over the first half of the warm-up (a ramp, as `drive` does).
            start_spread: secs((self.warmup_s / 2.0).max(0.001)),
            warmup: secs(self.warmup_s),
            measure: secs(self.measure_s),
            drain: false,
            max_events: 200_000_000,
        };
        Ok((cfg, wl))
    }

    fn specweb(&self, think_scale: f64) -> Result<Specweb, String> {
        let pages = match self.params.get("pages") {
            Some(Value::Array(a)) => a
                .iter()
                .map(|p| {
                    let t = p.as_table()?;
                    Some(SpecPage {
                        name: t.get("name")?.as_str()?.to_string(),
                        weight: t.get("weight")?.as_float().or(t.get("weight")?.as_integer().map(|i| i as f64))?,
                        ssl: t.get("ssl")?.as_bool()?,
                        page_bytes: t.get("bytes")?.as_integer()? as u64,
                        images: t.get("images")?.as_array()?.iter().map(|x| x.as_integer().map(|i| i as u64)).collect::<Option<Vec<_>>>()?,
                    })
                })
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| format!("spec {}: params.pages must be tables with name, weight, ssl, bytes, images", self.name))?,
            _ => return Err(format!("spec {}: missing params.pages", self.name)),
        };
        if pages.is_empty() {
            return Err(format!("spec {}: params.pages is empty", self.name));
        }
        Ok(Specweb {
            pages,
            think_mean: secs(self.param("think_mean_s")? * think_scale),
            request_bytes: self.param("request_bytes")? as u64,
            jsp_cpu_ns: self.param("jsp_cpu_ns")? as u64,
            static_cpu_ns: self.param("static_cpu_ns")? as u64,
            besim_req_bytes: self.param("besim_request_bytes")? as u64,
            besim_resp_bytes: self.param("besim_response_bytes")? as u64,
            besim_cpu_ns: self.param("besim_cpu_ns")? as u64,
            ssl_ns_per_byte: self.param("ssl_ns_per_byte")?,
            ssl_handshake_ns: self.param("ssl_handshake_ns")? as u64,
            ssl_new_session_share: self.param("ssl_new_session_share")?,
            image_lanes: self.image_connections.max(1),
        })
    }
}

/// Network cost tables, computed once per (profile, protocol) and shared: a second asker
/// for a table being built waits for it instead of building it again.
#[derive(Default)]
pub struct CostCache {
    map: Mutex<BTreeMap<(String, Protocol), Arc<OnceLock<Result<Arc<NetCost>, String>>>>>,
}

impl CostCache {
    pub fn new() -> CostCache {
        CostCache::default()
    }

    /// The table of `protocol` on `profile` (runs the model the first time).
    pub fn get(&self, profile: &str, protocol: Protocol) -> Result<Arc<NetCost>, String> {
        let cell = self.map.lock().map_err(|_| "cost cache poisoned")?.entry((profile.to_string(), protocol)).or_default().clone();
        cell.get_or_init(|| NetCost::from_model(profile, protocol).map(Arc::new)).clone()
    }

    /// Puts a given table in (tests).
    pub fn insert(&self, profile: &str, c: NetCost) {
        if let Ok(mut m) = self.map.lock() {
            m.insert((profile.to_string(), c.protocol), Arc::new(OnceLock::from(Ok(Arc::new(c)))));
        }
    }

    /// Model events simulated for the tables so far.
    pub fn events(&self) -> u64 {
        self.map.lock().map(|m| m.values().filter_map(|c| c.get().and_then(|r| r.as_ref().ok())).map(|c| c.events).sum()).unwrap_or(0)
    }
}

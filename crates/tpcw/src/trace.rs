//! Interaction traces: what each tier spent (CPU time) and what it exchanged with the next
//! tier (messages, bytes, direction) for every web interaction, as JSON Lines. A later
//! model replay consumes these files; the schema (version [`TRACE_VERSION`]) is documented
//! in docs/datacenter.md.
//!
//! Two sources write the same record type:
//! * `serve` (the web tier): one record per HTTP request it served; pages carry the
//!   web, app and db tiers, images only the web tier.
//! * `drive` (the browser emulator): one record per web interaction (the page plus its
//!   embedded images), with the browser tier first and the server tiers as the web tier
//!   reported them in the `X-Interlab-Trace` response header.

use crate::tpcw::Interaction;
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Schema version written in every record's `v` field.
pub const TRACE_VERSION: u32 = 1;

/// Who wrote a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// The web tier (`interlab datacenter serve --trace`).
    Serve,
    /// The browser emulator (`interlab datacenter drive --trace`).
    Drive,
}

/// A tier, in request order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Tier {
    /// The emulated browser (drive traces only).
    Browser,
    Web,
    App,
    Db,
}

/// What a record describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A dynamic page (one of the 14 interactions); in drive traces with its images.
    Page,
    /// A static object (serve traces only).
    Image,
}

/// Messages in one direction between a tier and the next tier down.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Flow {
    /// Number of messages (HTTP requests or responses; protocol frames).
    pub messages: u32,
    /// Total bytes on the wire (HTTP head + body; frame prefix + header + body).
    pub bytes: u64,
    /// Size of each message in bytes, in order.
    pub sizes: Vec<u64>,
}

impl Flow {
    /// Adds one message of `bytes` bytes.
    pub fn add(&mut self, bytes: u64) {
        self.messages += 1;
        self.bytes += bytes;
        self.sizes.push(bytes);
    }

    /// Appends another flow's messages.
    pub fn merge(&mut self, other: &Flow) {
        self.messages += other.messages;
        self.bytes += other.bytes;
        self.sizes.extend_from_slice(&other.sizes);
    }
}

/// One tier's share of an interaction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TierTrace {
    pub tier: Tier,
    /// CPU time of the threads that did the work, nanoseconds
    /// (clock_gettime(CLOCK_THREAD_CPUTIME_ID) around each request; user + system).
    pub cpu_ns: u64,
    /// Wall-clock time the tier spent on the requests (first byte in to last byte out), ns.
    pub wall_ns: u64,
    /// Requests this tier served for the record (HTTP requests, frames or named queries).
    pub requests: u32,
    /// Messages this tier sent to the next tier down (browser -> web, web -> app, app -> db).
    pub to_next: Flow,
    /// Messages this tier received from the next tier down.
    pub from_next: Flow,
}

impl TierTrace {
    /// An empty share of `tier`.
    pub fn new(tier: Tier) -> TierTrace {
        TierTrace { tier, cpu_ns: 0, wall_ns: 0, requests: 0, to_next: Flow::default(), from_next: Flow::default() }
    }

    /// Adds another share of the same tier.
    pub fn merge(&mut self, o: &TierTrace) {
        self.cpu_ns += o.cpu_ns;
        self.wall_ns += o.wall_ns;
        self.requests += o.requests;
        self.to_next.merge(&o.to_next);
        self.from_next.merge(&o.from_next);
    }
}

/// One line of a trace file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceRecord {
    /// Schema version ([`TRACE_VERSION`]); written as `"schema"` like every interlab JSON
    /// document, read from `"schema"` or from the older `"v"`.
    #[serde(rename = "schema", alias = "v")]
    pub v: u32,
    pub source: Source,
    pub kind: Kind,
    /// The interaction (pages), or null (images).
    pub interaction: Option<Interaction>,
    /// Request path without the query (e.g. `/tpcw/home`, `/img/thumb/7.png`).
    pub path: String,
    /// Start of the interaction (drive: T1 before the first request byte; serve: request
    /// head received), microseconds since the Unix epoch.
    pub t_us: u64,
    /// Emulated browser number (drive; serve when the request carried `X-Interlab-Req`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eb: Option<u32>,
    /// Sequence number of the interaction within its browser.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
    /// Session number within its browser (drive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<u64>,
    /// HTTP status of the page (0 when no response arrived).
    pub status: u16,
    /// Why the interaction failed, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Web interaction response time T2 - T1, microseconds (drive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wirt_us: Option<u64>,
    /// Think time the browser waited after this interaction, microseconds (drive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub think_us: Option<u64>,
    /// Embedded images fetched (drive) for this page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<u32>,
    /// Whether T2 fell inside the measurement interval (drive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured: Option<bool>,
    /// Per tier, in request order (browser, web, app, db); tiers not involved are absent.
    pub tiers: Vec<TierTrace>,
}

impl TraceRecord {
    /// The share of one tier, if present.
    pub fn tier(&self, t: Tier) -> Option<&TierTrace> {
        self.tiers.iter().find(|x| x.tier == t)
    }
}

/// Why a trace could not be read.
#[derive(Debug)]
pub enum TraceError {
    Io { path: PathBuf, err: std::io::Error },
    /// A line that is not a version-1 record; `line` counts from 1.
    Line { path: PathBuf, line: usize, msg: String },
}

impl std::fmt::Display for TraceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TraceError::Io { path, err } => write!(f, "trace {}: {err}", path.display()),
            TraceError::Line { path, line, msg } => write!(f, "trace {} line {line}: {msg}", path.display()),
        }
    }
}

impl std::error::Error for TraceError {}

/// Parses one line (1-based `line` for messages).
pub fn parse_line(text: &str) -> Result<TraceRecord, String> {
    let v: serde_json::Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    match v.get("schema").or_else(|| v.get("v")) {
        Some(x) if x.as_u64() == Some(TRACE_VERSION as u64) => {}
        Some(x) => return Err(format!("schema version {x}; this build reads version {TRACE_VERSION}")),
        None => return Err("no schema version field \"schema\" (or \"v\"); not an interlab datacenter trace record".into()),
    }
    serde_json::from_value(v).map_err(|e| format!("not a trace record: {e}"))
}

/// A whole trace file in memory.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Trace {
    pub records: Vec<TraceRecord>,
}

impl Trace {
    /// Reads a JSON Lines trace; blank lines are skipped; any bad line is an error naming
    /// the file and the line.
    pub fn read(path: &Path) -> Result<Trace, TraceError> {
        let f = File::open(path).map_err(|err| TraceError::Io { path: path.to_path_buf(), err })?;
        Trace::from_reader(BufReader::new(f), path)
    }

    /// Reads records from any buffered reader; `path` only names the source in errors.
    pub fn from_reader<R: BufRead>(r: R, path: &Path) -> Result<Trace, TraceError> {
        let mut records = Vec::new();
        for (i, line) in r.lines().enumerate() {
            let line = line.map_err(|err| TraceError::Io { path: path.to_path_buf(), err })?;
            if line.trim().is_empty() {
                continue;
            }
            let rec = parse_line(&line).map_err(|msg| TraceError::Line { path: path.to_path_buf(), line: i + 1, msg })?;
            records.push(rec);
        }
        Ok(Trace { records })
    }

    /// Writes all records as JSON Lines.
    pub fn write(&self, path: &Path) -> std::io::Result<()> {
        let mut w = BufWriter::new(File::create(path)?);
        for r in &self.records {
            serde_json::to_writer(&mut w, r)?;
            w.write_all(b"\n")?;
        }
        w.flush()
    }
}

/// A trace file shared by many threads: each record is written as one whole line.
#[derive(Clone)]
pub struct TraceWriter {
    inner: Arc<Mutex<BufWriter<File>>>,
    path: PathBuf,
}

impl std::fmt::Debug for TraceWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TraceWriter({})", self.path.display())
    }
}

impl TraceWriter {
    /// Creates (truncates) the file.
    pub fn create(path: &Path) -> Result<TraceWriter, String> {
        let f = File::create(path).map_err(|e| format!("cannot create trace file {}: {e}", path.display()))?;
        Ok(TraceWriter { inner: Arc::new(Mutex::new(BufWriter::new(f))), path: path.to_path_buf() })
    }

    /// Appends one record (errors are reported once on stderr, never panic).
    pub fn write(&self, rec: &TraceRecord) {
        let Ok(line) = serde_json::to_string(rec) else { return };
        let mut g = match self.inner.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        if let Err(e) = g.write_all(line.as_bytes()).and_then(|_| g.write_all(b"\n")) {
            eprintln!("interlab datacenter: writing trace {}: {e}", self.path.display());
        }
    }

    /// Flushes buffered lines to the file.
    pub fn flush(&self) {
        let mut g = match self.inner.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        let _ = g.flush();
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Microseconds since the Unix epoch.
pub fn now_us() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_micros() as u64).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> TraceRecord {
        let mut web = TierTrace::new(Tier::Web);
        web.cpu_ns = 120_000;
        web.requests = 1;
        web.to_next.add(300);
        web.from_next.add(9000);
        let mut app = TierTrace::new(Tier::App);
        app.cpu_ns = 800_000;
        app.to_next.add(80);
        app.to_next.add(90);
        app.from_next.add(2000);
        app.from_next.add(400);
        TraceRecord {
            v: TRACE_VERSION,
            source: Source::Drive,
            kind: Kind::Page,
            interaction: Some(Interaction::Home),
            path: "/tpcw/home".into(),
            t_us: 1,
            eb: Some(3),
            seq: Some(7),
            session: Some(1),
            status: 200,
            error: None,
            wirt_us: Some(4000),
            think_us: Some(7_000_000),
            images: Some(11),
            measured: Some(true),
            tiers: vec![TierTrace::new(Tier::Browser), web, app, TierTrace::new(Tier::Db)],
        }
    }

    #[test]
    fn round_trip_through_a_file() {
        let p = std::env::temp_dir().join(format!("interlab-trace-{}.jsonl", std::process::id()));
        let t = Trace { records: vec![sample(), { let mut r = sample(); r.kind = Kind::Image; r.interaction = None; r }] };
        t.write(&p).unwrap();
        let back = Trace::read(&p).unwrap();
        assert_eq!(back, t);
        assert_eq!(back.records[0].tier(Tier::App).unwrap().to_next.sizes, vec![80, 90]);
        let w = TraceWriter::create(&p).unwrap();
        w.write(&sample());
        w.flush();
        assert_eq!(Trace::read(&p).unwrap().records.len(), 1);
        let _ = std::fs::remove_file(&p);
    }

    #[test]
    fn clear_errors_with_line_numbers() {
        let good = serde_json::to_string(&sample()).unwrap();
        let text = format!("{good}\n\n{{\"v\":2}}\n");
        let e = Trace::from_reader(text.as_bytes(), Path::new("x.jsonl")).unwrap_err().to_string();
        assert!(e.contains("x.jsonl line 3") && e.contains("version 2"), "{e}");
        let e = Trace::from_reader(&b"{\"v\":1}\n"[..], Path::new("y")).unwrap_err().to_string();
        assert!(e.contains("line 1") && e.contains("missing field"), "{e}");
        let e = Trace::from_reader(&b"garbage\n"[..], Path::new("z")).unwrap_err().to_string();
        assert!(e.contains("not JSON"), "{e}");
        let e = Trace::from_reader(&b"{}\n"[..], Path::new("z")).unwrap_err().to_string();
        assert!(e.contains("no schema version"), "{e}");
        let e = Trace::read(Path::new("/nonexistent/trace.jsonl")).unwrap_err().to_string();
        assert!(e.contains("/nonexistent/trace.jsonl"), "{e}");
    }
}

//! `interlab serve`, `interlab live` and `interlab bench compare`: argument parsing and
//! wiring to the live engine (crates/live).

use crate::conv::CmdResult;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use interlab_live::auth::Token;
use interlab_live::compare::{self, CompareOptions};
use crate::conv::{self, Fail};
use interlab_live::output::{csv_header, csv_row, table_header, table_row_once};
use std::collections::BTreeSet;
use interlab_live::record::to_json_line;
use interlab_live::runner::{run_point, IntervalHook, PointExtras, PointOptions, RunLength};
use interlab_live::{parse_peer, ServeConfig, Server, Transport, DEFAULT_PORT};
use interlab_patterns::{parse_sizes, ConfidenceRule, ExtendedRecord, Workload, WorkloadKind};
use std::io::Write;
use std::net::IpAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Args)]
pub struct ServeArgs {
    /// Address to listen on. Anything but loopback requires a shared secret.
    #[arg(long, default_value = "127.0.0.1")]
    bind: IpAddr,
    /// Control port (0: any free port, printed on start).
    #[arg(long, default_value_t = DEFAULT_PORT)]
    port: u16,
    /// Shared secret clients must prove they know (challenge-response; never sent). Visible to
    /// every local user in `ps`: prefer --auth-token-file or INTERLAB_AUTH_TOKEN.
    #[arg(long, value_name = "TOKEN")]
    auth_token: Option<String>,
    /// Read the shared secret from the first line of this file (else from INTERLAB_AUTH_TOKEN).
    #[arg(long, value_name = "FILE", conflicts_with = "auth_token")]
    auth_token_file: Option<PathBuf>,
    /// Time a new client has for its whole handshake (hello, authentication, first setup)
    /// and for a point's data connections to arrive (e.g. 10s, 500ms; a bare number is seconds).
    #[arg(long, default_value = "10s", value_name = "DURATION", value_parser = conv::positive_duration)]
    handshake_timeout: Duration,
    /// Time a session may make no progress on any of its connections before it is ended.
    #[arg(long, default_value = "60s", value_name = "DURATION", value_parser = conv::positive_duration)]
    idle_timeout: Duration,
    /// Authenticated sessions served at once (1 to 4096).
    #[arg(long, default_value_t = 64)]
    max_sessions: usize,
    /// Connections still in their handshake at once (1 to 4096); a new one beyond this drops the oldest.
    #[arg(long, default_value_t = 16)]
    max_preauth: usize,
    /// Pin the data threads of every session to these CPUs, round-robin (as taskset): e.g. 0,1
    /// or 0-3; each must be one this process may run on.
    #[arg(long, value_name = "LIST")]
    cpu: Option<String>,
    /// Do not log sessions on stderr.
    #[arg(long, short)]
    quiet: bool,
}

#[derive(Args)]
pub struct LiveArgs {
    /// latency | bandwidth | stream | bibw | multi-stream | hot-spot | fan-in | fan-out | connect | crr | rr
    pattern: String,
    /// Daemon(s) running `interlab serve`, HOST[:PORT] (default port 7400; IPv6 with a port: [::1]:7400).
    /// Repeat for fan-in/fan-out.
    #[arg(long = "peer", value_name = "HOST[:PORT]", required = true)]
    peers: Vec<String>,
    /// Data transport: tcp | udp | unix.
    #[arg(long, default_value = "tcp")]
    transport: String,
    /// Message sizes in bytes: a list and/or power-of-two ranges, e.g. 1,2,4..4M (K = 2^10, M = 2^20).
    /// Default: 64 for latency-like patterns, 64K for bandwidth.
    #[arg(long)]
    sizes: Option<String>,
    /// Messages per window (windowed bandwidth, bibw, fan-in, fan-out).
    #[arg(long, default_value_t = 64)]
    window: u32,
    /// Parallel streams (multi-stream; default 2) or senders per peer (fan-in, fan-out).
    #[arg(long)]
    streams: Option<u32>,
    /// Clients (hot-spot; default 4).
    #[arg(long)]
    clients: Option<u32>,
    /// Response size in bytes (rr, crr; default: the request size); K = 2^10, M = 2^20.
    #[arg(long, value_name = "BYTES", value_parser = interlab_patterns::parse_size)]
    response_size: Option<u64>,
    /// Warm-up iterations (round trips, windows or transactions) per repetition.
    #[arg(long)]
    warmup: Option<u32>,
    /// Measured iterations per repetition (default: OSU's rules by size).
    #[arg(long, conflicts_with = "time")]
    iterations: Option<u32>,
    /// Time-bounded repetitions of this long (e.g. 3s, 500ms; a bare number is seconds;
    /// stream patterns: default 2s).
    #[arg(long, value_name = "DURATION", value_parser = conv::positive_duration)]
    time: Option<Duration>,
    /// Warm-up time before each time-bounded run (default 200ms).
    #[arg(long, value_name = "DURATION", value_parser = conv::duration)]
    warmup_time: Option<Duration>,
    /// Repeat until the interval of the mean at LEVEL % (90, 95, 99) is WIDTH % wide, as netperf -I.
    #[arg(long, value_name = "LEVEL,WIDTH")]
    confidence: Option<String>,
    /// Minimum and maximum repetitions with --confidence (default 3,10).
    #[arg(long, value_name = "MIN,MAX")]
    reps: Option<String>,
    /// SO_SNDBUF/SO_RCVBUF for data sockets, bytes, K = 2^10, M = 2^20 (default: kernel autotuning).
    #[arg(long, value_name = "BYTES", value_parser = conv::size)]
    sockbuf: Option<u64>,
    /// Shared secret of the daemon(s). Visible to every local user in `ps`: prefer
    /// --auth-token-file or INTERLAB_AUTH_TOKEN.
    #[arg(long, value_name = "TOKEN")]
    auth_token: Option<String>,
    /// Read the shared secret from this file (else from INTERLAB_AUTH_TOKEN).
    #[arg(long, value_name = "FILE", conflicts_with = "auth_token")]
    auth_token_file: Option<PathBuf>,
    /// JSON Lines records, to FILE or (without one, or `-`) to standard output instead of the table.
    #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = "-")]
    json: Option<PathBuf>,
    /// CSV records, to FILE or (without one, or `-`) to standard output instead of the table.
    #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = "-")]
    csv: Option<PathBuf>,
    /// Also write results.jsonl and results.csv into this directory.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Experiment name written into the records.
    #[arg(long, default_value = "live")]
    name: String,
    /// Print a row every DURATION of the measured time while the run goes on (as iperf3 -i),
    /// e.g. 1s, 500ms (at least 10ms): streams the senders' bytes and MB/s, latency, hot-spot
    /// and rr the samples and their mean (us). The record gets an `intervals` array.
    #[arg(long, value_name = "DURATION", value_parser = conv::positive_duration)]
    interval: Option<Duration>,
    /// Stream patterns: target sending rate of each stream in bit/s, K = 10^3, M = 10^6,
    /// G = 10^9 (as iperf3 -b: 100M = 100 Mbit/s); the sender paces its writes.
    #[arg(long, value_name = "RATE", value_parser = parse_rate)]
    rate: Option<u64>,
    /// Pin this end's data threads to these CPUs, round-robin (as iperf3 -A, taskset): e.g. 0,1 or 0-3.
    #[arg(long, value_name = "LIST")]
    cpu: Option<String>,
    /// Latency-like patterns: print a histogram of the samples (log-spaced buckets, us) under each row.
    #[arg(long)]
    histogram: bool,
    /// Latency-like patterns: write every sample to FILE as CSV (size_bytes,repetition,index,latency_us).
    #[arg(long, value_name = "FILE")]
    samples: Option<PathBuf>,
    /// Time to wait for a daemon to answer a connection.
    #[arg(long, default_value = "5s", value_name = "DURATION", value_parser = conv::positive_duration)]
    connect_timeout: Duration,
    /// No progress bar.
    #[arg(long, short)]
    quiet: bool,
}

#[derive(Args)]
pub struct CompareArgs {
    /// CI-friendly: 1 s per measurement, A B B A.
    #[arg(long)]
    quick: bool,
    /// Seconds per measurement (default 2).
    #[arg(long, value_name = "SECONDS")]
    seconds: Option<u32>,
    /// Rounds, alternating the order: 1 = A B, 2 = A B B A, ... up to 8 (default 4).
    #[arg(long)]
    rounds: Option<u32>,
}

pub(crate) fn token(text: &Option<String>, file: &Option<PathBuf>) -> Result<Option<Token>, String> {
    match (text, file) {
        (Some(t), _) => Token::new(t).map(Some).map_err(|e| format!("--auth-token: {e}")),
        (None, Some(f)) => Token::from_file(f).map(Some),
        (None, None) => match std::env::var(Token::ENV) {
            Ok(t) if !t.is_empty() => Token::new(&t).map(Some).map_err(|e| format!("{}: {e}", Token::ENV)),
            _ => Ok(None),
        },
    }
}

fn count(name: &str, v: usize, max: usize) -> Result<usize, String> {
    if (1..=max).contains(&v) {
        Ok(v)
    } else {
        Err(format!("--{name} {v}: out of range (1 to {max})"))
    }
}

pub fn serve(a: ServeArgs) -> CmdResult {
    let cfg = ServeConfig {
        bind: a.bind,
        port: a.port,
        token: token(&a.auth_token, &a.auth_token_file)?,
        handshake_timeout: a.handshake_timeout,
        idle_timeout: a.idle_timeout,
        max_sessions: count("max-sessions", a.max_sessions, 4096)?,
        max_preauth: count("max-preauth", a.max_preauth, 4096)?,
        verbose: !a.quiet,
        cpus: cpu_list(&a.cpu)?,
    };
    let auth = if cfg.token.is_some() { "on" } else { "off" };
    let pinned = if cfg.cpus.is_empty() { String::new() } else { format!(", data threads on CPUs {}", interlab_live::cpu::format_cpu_list(&cfg.cpus)) };
    let server = Server::bind(cfg)?;
    println!("interlab serve: listening on {} (control protocol {}, auth {auth}{pinned})", server.local_addr(), interlab_live::proto::PROTOCOL_VERSION);
    let _ = std::io::stdout().flush();
    server.run();
    Ok(ExitCode::SUCCESS)
}

/// `--cpu LIST`, checked against the CPUs this process may use.
fn cpu_list(text: &Option<String>) -> Result<Vec<usize>, String> {
    match text {
        None => Ok(vec![]),
        Some(t) => interlab_live::cpu::check_cpu_list(t).map_err(|e| format!("--cpu {t}: {e}")),
    }
}

/// A rate in bit/s with decimal units as iperf3 -b takes it: `100M` = 100 Mbit/s; K = 10^3,
/// M = 10^6, G = 10^9, T = 10^12; a bare number is bit/s (a clap value parser).
pub fn parse_rate(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let (num, mult) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let m = match c.to_ascii_uppercase() {
                'K' => 1e3,
                'M' => 1e6,
                'G' => 1e9,
                'T' => 1e12,
                _ => return Err(format!("`{text}`: unknown unit `{c}` (bit/s with K, M, G, T = 10^3, 10^6, 10^9, 10^12, e.g. 100M)")),
            };
            (&t[..i], m)
        }
        _ => (t, 1.0),
    };
    let v: f64 = num.parse().map_err(|_| format!("`{text}`: expected a rate in bit/s such as 100M, 1.5G or 500K"))?;
    let bps = v * mult;
    let (lo, hi) = (interlab_live::runner::MIN_RATE_BPS as f64, interlab_live::runner::MAX_RATE_BPS as f64);
    if !bps.is_finite() || bps < lo || bps > hi {
        return Err(format!("`{text}`: out of range (1K to 10T bit/s)"));
    }
    Ok(bps.round() as u64)
}

fn pair(name: &str, text: &str) -> Result<(String, String), String> {
    text.split_once(',').map(|(a, b)| (a.trim().to_string(), b.trim().to_string())).ok_or_else(|| format!("--{name} {text}: expected two numbers separated by a comma"))
}

fn confidence(a: &LiveArgs) -> Result<Option<ConfidenceRule>, String> {
    let rule = match (&a.confidence, &a.reps) {
        (None, None) => return Ok(None),
        (Some(c), _) => {
            let (l, w) = pair("confidence", c)?;
            let level: u32 = l.parse().map_err(|_| format!("--confidence {c}: level `{l}` is not a whole percent (90, 95, 99)"))?;
            let width: f64 = w.parse().map_err(|_| format!("--confidence {c}: width `{w}` is not a number of percent"))?;
            ConfidenceRule { level_pct: level, width_pct: width, ..ConfidenceRule::NETPERF }
        }
        // Only repetitions given: netperf's default interval (99 %, 5 %).
        (None, Some(_)) => ConfidenceRule::NETPERF,
    };
    let rule = match &a.reps {
        None => rule,
        Some(r) => {
            let (lo, hi) = pair("reps", r)?;
            let min: u32 = lo.parse().map_err(|_| format!("--reps {r}: `{lo}` is not a count"))?;
            let max: u32 = hi.parse().map_err(|_| format!("--reps {r}: `{hi}` is not a count"))?;
            ConfidenceRule { min_reps: min, max_reps: max, ..rule }
        }
    };
    rule.validate().map_err(|e| format!("--confidence/--reps: {e}"))?;
    Ok(Some(rule))
}

fn bar(quiet: bool, total: usize) -> ProgressBar {
    let pb = if quiet || total < 2 { ProgressBar::hidden() } else { ProgressBar::new(total as u64) };
    pb.set_style(ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} points  {msg}").expect("static template").progress_chars("=> "));
    pb
}

pub fn live(a: LiveArgs) -> CmdResult {
    let kind = WorkloadKind::from_name(&a.pattern).ok_or_else(|| {
        format!("unknown pattern `{}` (expected one of: {})", a.pattern, WorkloadKind::ALL.iter().map(|k| k.name()).collect::<Vec<_>>().join(", "))
    })?;
    let transport = Transport::from_name(&a.transport).ok_or_else(|| format!("--transport {}: expected tcp, udp or unix", a.transport))?;
    let peers = a.peers.iter().map(|p| parse_peer(p, DEFAULT_PORT)).collect::<Result<Vec<_>, _>>()?;
    let default_sizes = match kind.base() {
        interlab_patterns::Base::Windowed | interlab_patterns::Base::Stream => "64K",
        _ => "64",
    };
    let sizes = parse_sizes(a.sizes.as_deref().unwrap_or(default_sizes)).map_err(|e| format!("--sizes: {e}"))?;
    let streams = match kind {
        WorkloadKind::HotSpot => a.clients.or(a.streams).unwrap_or(4),
        WorkloadKind::MultiStream => a.streams.unwrap_or(2),
        _ => a.streams.unwrap_or(1),
    };
    let (time, warmup_time) = (a.time.map(|d| d.as_secs_f64()), a.warmup_time.map(|d| d.as_secs_f64()));
    let length = match (time, warmup_time) {
        (Some(t), w) => RunLength::Time { warmup_s: w.unwrap_or(0.2), duration_s: t },
        (None, Some(w)) if kind.time_bounded() => RunLength::Time { warmup_s: w, duration_s: interlab_live::runner::DEFAULT_STREAM_S },
        (None, Some(_)) => return Err("--warmup-time needs --time (or a stream pattern)".into()),
        (None, None) => RunLength::Count { warmup: a.warmup, iterations: a.iterations },
    };
    let sockbuf = match a.sockbuf {
        None => 0,
        Some(b) => u32::try_from(b).ok().filter(|&v| v <= interlab_live::dataplane::MAX_SOCKBUF).ok_or_else(|| format!("--sockbuf {b}: out of range (at most 1 GiB)"))?,
    };
    let confidence = confidence(&a)?;
    let cpus = cpu_list(&a.cpu)?;
    let latency_like = matches!(kind.base(), interlab_patterns::Base::PingPong | interlab_patterns::Base::Txn(_));
    if (a.histogram || a.samples.is_some()) && !latency_like {
        return Err(format!("--histogram and --samples apply to latency-like patterns (latency, hot-spot, connect, crr, rr), not {}", kind.name()).into());
    }
    let tok = token(&a.auth_token, &a.auth_token_file)?;
    let command = format!("interlab {}", std::env::args().skip(1).filter(|x| !x.starts_with("--auth-token=")).collect::<Vec<_>>().join(" "));
    let command = redact(&command);
    let pb = bar(a.quiet, sizes.len());
    let hook = a.interval.map(|_| interval_printer(pb.clone()));
    let mut opts: Vec<PointOptions> = Vec::new();
    for &size in &sizes {
        let w = Workload { kind, size, response_size: a.response_size.unwrap_or(size), window: a.window, streams, peers: peers.len() as u32 };
        let o = PointOptions {
            workload: w,
            transport,
            peers: peers.clone(),
            token: tok.clone(),
            length,
            confidence,
            sockbuf,
            experiment: a.name.clone(),
            command: command.clone(),
            connect_timeout: a.connect_timeout,
            extras: PointExtras { interval: a.interval, rate_bps: a.rate, cpus: cpus.clone(), keep_samples: a.histogram || a.samples.is_some(), on_interval: hook.clone() },
        };
        // Bad parameters are reported before anything runs.
        interlab_live::runner::check(&o).map_err(|e| format!("{} {size} B: {e}", kind.name()))?;
        opts.push(o);
    }
    let mut sink = Sink::new(&a)?;
    let mut samples_file = match &a.samples {
        None => None,
        Some(p) => {
            let mut f = std::io::BufWriter::new(std::fs::File::create(p).map_err(|e| Fail::Input(format!("--samples {}: cannot write: {e}", p.display())))?);
            writeln!(f, "size_bytes,repetition,index,latency_us").map_err(|e| Fail::Input(format!("--samples {}: {e}", p.display())))?;
            Some((p.clone(), f))
        }
    };
    let mut failed = false;
    for (i, o) in opts.iter().enumerate() {
        pb.set_message(format!("{} {} B", kind.name(), o.workload.size));
        let out = run_point(o).map_err(Fail::run)?;
        pb.inc(1);
        pb.suspend(|| sink.write(&out.record))?;
        if a.histogram && out.record.live.error.is_none() {
            let all: Vec<f64> = out.samples.iter().flatten().copied().collect();
            pb.suspend(|| sink.note(&conv_lines(&interlab_live::output::histogram_lines(&all))))?;
        }
        if let Some((p, f)) = &mut samples_file {
            let io = |e: std::io::Error| Fail::Run(format!("--samples {}: {e}", p.display()));
            for (rep, v) in out.samples.iter().enumerate() {
                for (i, x) in v.iter().enumerate() {
                    writeln!(f, "{},{},{i},{x}", o.workload.size, rep + 1).map_err(io)?;
                }
            }
            f.flush().map_err(io)?;
        }
        if let Some(e) = &out.error {
            failed = true;
            if e.peer_level {
                let left = opts.len() - i - 1;
                if left > 0 {
                    pb.suspend(|| eprintln!("interlab live: stopping the sweep ({left} size(s) not run): {}", e.message));
                }
                break;
            }
        }
    }
    pb.finish_and_clear();
    sink.finish()?;
    if let Some((p, _)) = samples_file {
        eprintln!("wrote {}", p.display());
    }
    Ok(if failed { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

fn conv_lines(lines: &[String]) -> String {
    lines.join("\n")
}

/// Prints each interval as it finishes: with the table on standard output, else on standard
/// error (standard output then carries JSON or CSV only).
fn interval_printer(pb: ProgressBar) -> IntervalHook {
    let header = std::sync::atomic::AtomicBool::new(false);
    IntervalHook(std::sync::Arc::new(move |r: &interlab_patterns::IntervalReport| {
        let mut line = String::new();
        let first = !header.swap(true, std::sync::atomic::Ordering::Relaxed);
        match r.bytes {
            Some(bytes) => {
                if first {
                    line = format!("{:>9} {:>4} {:>15} {:>14} {:>11} {:>9}\n", "interval", "rep", "seconds", "bytes", "MB/s", "Gbit/s");
                }
                line += &format!("{:>9} {:>4} {:>7.2}-{:<7.2} {:>14} {:>11.1} {:>9.3}", "", r.repetition, r.start_s, r.end_s, bytes, r.value, r.value * 8.0 / 1000.0);
            }
            None => {
                if first {
                    line = format!("{:>9} {:>4} {:>15} {:>10} {:>9}\n", "interval", "rep", "seconds", "samples", "mean_us");
                }
                line += &format!("{:>9} {:>4} {:>7.2}-{:<7.2} {:>10} {:>9.2}", "", r.repetition, r.start_s, r.end_s, r.samples.unwrap_or(0), r.value);
            }
        }
        pb.suspend(|| {
            if conv::stdout_is_data() {
                eprintln!("{line}");
            } else {
                let mut o = std::io::stdout().lock();
                let _ = writeln!(o, "{line}");
                let _ = o.flush();
            }
        });
    }))
}

/// Hides a token given on the command line.
fn redact(cmd: &str) -> String {
    let mut out = Vec::new();
    let mut hide = false;
    for w in cmd.split(' ') {
        if hide {
            out.push("<hidden>");
            hide = false;
        } else {
            hide = w == "--auth-token";
            out.push(w);
        }
    }
    out.join(" ")
}

/// Where records go: the table, JSON Lines or CSV on stdout, each of JSON and CSV
/// optionally to a file instead, and results.jsonl/results.csv under `--out DIR`.
struct Sink {
    table: bool,
    records: conv::RecordWriters,
    header_done: bool,
    /// Warning flags already shown in the table (each is shown once per sweep).
    flags_seen: BTreeSet<String>,
    files: Option<(PathBuf, std::fs::File, std::fs::File)>,
}

impl Sink {
    fn new(a: &LiveArgs) -> Result<Sink, Fail> {
        let records = conv::RecordWriters::open(a.json.as_deref(), a.csv.as_deref())?;
        let table = !conv::stdout_is_data();
        let files = match &a.out {
            None => None,
            Some(d) => {
                std::fs::create_dir_all(d).map_err(|e| format!("{}: cannot create directory: {e}", d.display()))?;
                let jl = d.join("results.jsonl");
                let cs = d.join("results.csv");
                let j = std::fs::File::create(&jl).map_err(|e| format!("{}: {e}", jl.display()))?;
                let mut c = std::fs::File::create(&cs).map_err(|e| format!("{}: {e}", cs.display()))?;
                writeln!(c, "{}", csv_header()).map_err(|e| format!("{}: {e}", cs.display()))?;
                Some((d.clone(), j, c))
            }
        };
        Ok(Sink { table, records, header_done: false, flags_seen: BTreeSet::new(), files })
    }

    /// Writes one record as soon as it is measured (a sweep that dies keeps what it had).
    fn write(&mut self, r: &ExtendedRecord) -> Result<(), Fail> {
        let io = |e: std::io::Error| Fail::Run(format!("writing records: {e}"));
        self.records.write(r)?;
        if self.table {
            let mut out = std::io::stdout().lock();
            if !self.header_done {
                let _ = writeln!(
                    out,
                    "interlab live {} over {} ({}){}",
                    r.record.pattern,
                    r.record.transport,
                    r.live.peers.join(", "),
                    if r.record.unit == "us" && r.record.pattern != "connect" && r.record.pattern != "crr" && r.record.pattern != "rr" { "; one-way latency = round trip / 2" } else { "" }
                );
                if matches!(r.record.pattern.as_str(), "rr" | "crr") {
                    let _ = writeln!(out, "request {} B, response {} B", r.record.size_bytes, r.live.response_bytes.unwrap_or(r.record.size_bytes));
                }
                let _ = writeln!(out, "{}", table_header(r));
            }
            writeln!(out, "{}", table_row_once(r, &mut self.flags_seen)).and_then(|_| out.flush()).map_err(io)?;
        }
        self.header_done = true;
        if let Some((d, j, c)) = &mut self.files {
            writeln!(j, "{}", to_json_line(r)).and_then(|_| writeln!(c, "{}", csv_row(r))).map_err(|e| format!("{}: {e}", d.display()))?;
        }
        Ok(())
    }

    /// Lines under the last row (a histogram): with the table, else on standard error.
    fn note(&mut self, text: &str) -> Result<(), Fail> {
        if self.table {
            let mut out = std::io::stdout().lock();
            writeln!(out, "{text}").and_then(|_| out.flush()).map_err(|e| Fail::Run(format!("writing records: {e}")))
        } else {
            eprintln!("{text}");
            Ok(())
        }
    }

    fn finish(self) -> Result<(), Fail> {
        if let Some((d, j, c)) = self.files {
            j.sync_all().and_then(|_| c.sync_all()).map_err(|e| format!("{}: {e}", d.display()))?;
            eprintln!("wrote {}, {}", d.join("results.jsonl").display(), d.join("results.csv").display());
        }
        Ok(())
    }
}

pub fn bench_compare(a: CompareArgs) -> CmdResult {
    let mut o = if a.quick { CompareOptions::QUICK } else { CompareOptions::FULL };
    if let Some(s) = a.seconds {
        o.seconds = s.max(1);
    }
    if let Some(r) = a.rounds {
        o.rounds = r.clamp(1, 8);
    }
    println!("interlab bench compare: loopback, {} s per measurement, {} round(s) (A B{})", o.seconds, o.rounds, if o.rounds > 1 { " B A" } else { "" });
    let mut progress = |line: &str| eprintln!("  {line}");
    let (rows, info) = compare::run(o, &mut progress)?;
    print!("{}", compare::render(&rows, &info));
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_take_decimal_units() {
        assert_eq!(parse_rate("100M").unwrap(), 100_000_000);
        assert_eq!(parse_rate("1.5G").unwrap(), 1_500_000_000);
        assert_eq!(parse_rate("500k").unwrap(), 500_000);
        assert_eq!(parse_rate("2000").unwrap(), 2000);
        assert!(parse_rate("10").unwrap_err().contains("out of range"));
        assert!(parse_rate("100X").unwrap_err().contains("unknown unit"));
        assert!(parse_rate("fast").is_err());
        assert!(parse_rate("-5M").is_err());
        assert!(parse_rate("1e300M").is_err());
    }

    #[test]
    fn tokens_are_redacted() {
        assert_eq!(redact("interlab live latency --auth-token s3cr3t --peer x"), "interlab live latency --auth-token <hidden> --peer x");
    }
}

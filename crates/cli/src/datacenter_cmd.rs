//! `interlab datacenter serve|drive|populate|trace`: argument parsing and wiring to the
//! three-tier TPC-W bookstore and its browser emulator (crates/datacenter).

use crate::conv::{self, say_err, CmdResult, Dest, Fail};
use std::time::Duration;
use clap::{Args, Subcommand};
use interlab_datacenter::db::DbSpec;
use interlab_datacenter::dbtier::{ensure_populated, PopulateRequest};
use interlab_datacenter::http::Url;
use interlab_datacenter::rbe::{self, DriveConfig};
use interlab_datacenter::site::Site;
use interlab_datacenter::profile::{NetMethod, TierProbe, TierSpec};
use interlab_datacenter::strict::Sessions;
use interlab_datacenter::serve::{self, ChildCommand, Inner, ServeOptions, TierSel};
use interlab_datacenter::tpcw::{Mix, Scale};
use interlab_datacenter::trace::{Kind, Tier, Trace, TraceWriter};
use interlab_datacenter::wire::Addr;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Subcommand)]
pub enum DcCmd {
    /// Run the bookstore: one tier (web, app or db) or all three as child processes.
    Serve(ServeArgs),
    /// Emulate TPC-W browsers against a bookstore; report WIPS and response-time percentiles.
    Drive(DriveArgs),
    /// Create and fill the database by the TPC-W scaling rules (serve does it on first start).
    Populate(PopulateArgs),
    /// Read a trace file (JSON Lines), check every record and summarise it per tier.
    Trace {
        /// The trace file written by `serve --trace` or `drive --trace`.
        file: PathBuf,
    },
    /// Profile a deployment: one browser, no think time, one request at a time; per
    /// interaction the CPU of each named tier and the app <-> database traffic, written
    /// as a trace that `replay --trace` takes.
    Profile(ProfileArgs),
    /// Replay a data center in the model: browsers, tiers, connection pools and protocols
    /// from a spec, work per interaction from a trace; prints WIPS and percentiles.
    Replay(ReplayArgs),
}

#[derive(Args)]
pub struct ReplayArgs {
    /// The data-center spec (TOML: [datacenter] and optional [[series]]).
    #[arg(long, value_name = "DC.toml")]
    spec: PathBuf,
    /// A `drive --trace` file to take the work per interaction from [default: the built-in trace].
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
    /// The results as JSON, to FILE or (without one, or `-`) to standard output.
    #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = "-")]
    json: Option<PathBuf>,
    /// No notes on stderr.
    #[arg(long, short)]
    quiet: bool,
}

#[derive(Args, Clone)]
pub struct DbArgs {
    /// SQLite database file (created and populated on first start).
    #[arg(long, value_name = "FILE")]
    db: Option<PathBuf>,
    /// Database URL instead: postgres://USER[:PASS]@HOST:PORT/DB, or sqlite:FILE.
    #[arg(long, value_name = "URL")]
    db_url: Option<String>,
    /// Items (TPC-W NUM_ITEMS: 1000, 10000, 100000, ...) when populating [default: 10000].
    #[arg(long)]
    items: Option<u64>,
    /// Emulated browsers the database is scaled for (customers = 2880 x this) [default: 10].
    #[arg(long)]
    ebs: Option<u64>,
    /// Seed of the deterministic population.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

impl DbArgs {
    fn spec(&self) -> Result<DbSpec, String> {
        DbSpec::from_options(self.db.clone(), self.db_url.as_deref())
    }
    fn populate(&self, force: bool) -> Result<PopulateRequest, String> {
        let scale = Scale::new(self.items.unwrap_or(10_000), self.ebs.unwrap_or(10))?;
        Ok(PopulateRequest { scale, seed: self.seed, explicit: self.items.is_some() || self.ebs.is_some(), force })
    }
}

#[derive(Args)]
pub struct ServeArgs {
    /// web | app | db | all (all: the three tiers as separate child processes).
    #[arg(long, default_value = "all")]
    tier: String,
    /// Where this tier listens: HOST:PORT, or unix:PATH for app and db
    /// [defaults: web/all 127.0.0.1:8080, app 127.0.0.1:7481, db 127.0.0.1:7482; port 0 = any free port].
    #[arg(long, value_name = "ADDR")]
    listen: Option<String>,
    /// Web tier: the application tier's address.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:7481")]
    app_tier: String,
    /// Application tier: the database tier's address.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:7482")]
    db_tier: String,
    #[command(flatten)]
    db: DbArgs,
    /// Write a trace record (JSON Lines) for every HTTP request the web tier serves.
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
    /// Web tier: connections to the application tier, at most.
    #[arg(long, default_value_t = 64)]
    app_connections: usize,
    /// Application tier: connections to the database tier, at most.
    #[arg(long, default_value_t = 16)]
    db_connections: usize,
    /// Connections this tier serves at once (web: browser connections).
    #[arg(long, default_value_t = 2048)]
    max_connections: usize,
    /// Web tier: time a request's head and body may take to arrive once its first byte has
    /// (a deadline for the whole request; a client that drips it gets 408 and is closed; at most 1h).
    #[arg(long, default_value = "10s", value_name = "DURATION", value_parser = conv::positive_duration)]
    request_timeout: Duration,
    /// Web tier: browser connections one client address may hold at once (default: 3/4 of
    /// --max-connections).
    #[arg(long, value_name = "N")]
    max_per_client: Option<usize>,
    /// --tier all: join the tiers by tcp (loopback) or unix sockets.
    #[arg(long, default_value = "tcp")]
    inner: String,
    /// Web tier: serve the store as a strict servlet-style site (pages at
    /// /tpcw/TPCW_home_interaction ..., relative links, GET forms, a session id required,
    /// chunked pages, GIF and JPEG images, no /tpcw/info); drive it with --site servlet.
    #[arg(long)]
    strict: bool,
    /// With --strict: the session travels as ;jsessionid= in URLs (url) or as a cookie.
    #[arg(long, default_value = "url", value_name = "url|cookie")]
    strict_sessions: String,
    /// Database tier: honour buy_confirm's fault argument (atomicity tests).
    #[arg(long, hide = true)]
    allow_fault_injection: bool,
    /// Less logging.
    #[arg(long, short)]
    quiet: bool,
}

/// The site `drive` and `profile` talk to, and how its pages are recognised.
#[derive(Args)]
pub struct SiteArgs {
    /// The site: http://HOST:PORT/PREFIX/ (page patterns of the site profile are relative
    /// to PREFIX).
    #[arg(long, default_value = "http://127.0.0.1:8080/")]
    url: String,
    /// Site profile: interlab (this bookstore), servlet (the TPCW_home_interaction ...
    /// layout of the Java servlet kits) or a profile file (TOML; docs/datacenter.md).
    #[arg(long, default_value = "interlab", value_name = "NAME|FILE")]
    site: String,
    /// The site's NUM_ITEMS (needed when the site has no scale endpoint and the profile no [scale]).
    #[arg(long)]
    items: Option<u64>,
    /// The site's NUM_CUSTOMERS (likewise).
    #[arg(long)]
    customers: Option<u64>,
}

impl SiteArgs {
    /// The parsed URL and the loaded site profile, with the scale flags checked against it.
    fn open(&self) -> Result<(Url, std::sync::Arc<Site>), String> {
        let url = Url::parse(&self.url).map_err(|e| format!("--url: {e}"))?;
        let site = std::sync::Arc::new(Site::load(&self.site).map_err(|e| format!("--site: {e}"))?);
        check_scale(&site, self.items, self.customers)?;
        Ok((url, site))
    }
}

#[derive(Args)]
pub struct DriveArgs {
    #[command(flatten)]
    target: SiteArgs,
    /// Emulated browsers.
    #[arg(long, default_value_t = 10)]
    browsers: u32,
    /// Measurement interval (e.g. 60s, 2m; a bare number is seconds).
    #[arg(long, default_value = "60s", value_name = "DURATION", value_parser = conv::positive_duration)]
    duration: Duration,
    /// Ramp-up before the measurement [default: 3 think-time means, 1 to 20 s].
    #[arg(long, value_name = "DURATION", value_parser = conv::duration)]
    ramp_up: Option<Duration>,
    /// Ramp-down after it [default: 1 think-time mean, 0.1 to 5 s].
    #[arg(long, value_name = "DURATION", value_parser = conv::duration)]
    ramp_down: Option<Duration>,
    /// browsing | shopping | ordering.
    #[arg(long, default_value = "shopping")]
    mix: String,
    /// Think-time mean = 7 s x this (1 = the spec; small values for tests).
    #[arg(long, default_value_t = 1.0)]
    think_scale: f64,
    /// User-session-minimum-duration mean = 15 min x this.
    #[arg(long, default_value_t = 1.0)]
    session_scale: f64,
    /// Seed of the browsers' random choices.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Timeout of each request (connect, send, receive).
    #[arg(long, default_value = "30s", value_name = "DURATION", value_parser = conv::positive_duration)]
    timeout: Duration,
    /// Parallel image connections per browser.
    #[arg(long, default_value_t = 4)]
    image_connections: usize,
    /// Keep trying to reach the bookstore this long before giving up (e.g. while it populates).
    #[arg(long, default_value = "0s", value_name = "DURATION", value_parser = conv::duration)]
    wait: Duration,
    /// The report as JSON, to FILE or (without one, or `-`) to standard output.
    #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = "-")]
    json: Option<PathBuf>,
    /// Write a trace record (JSON Lines) per interaction, with every tier's share.
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
    /// No progress line.
    #[arg(long, short)]
    quiet: bool,
}

#[derive(Args)]
pub struct ProfileArgs {
    #[command(flatten)]
    target: SiteArgs,
    /// A tier to measure: web|app|db=PID (all its threads) or =CGROUP_DIR; repeat.
    #[arg(long = "tier", value_name = "NAME=PID|CGROUP", required = true)]
    tiers: Vec<String>,
    /// The database's TCP port: the app tier's connections to it give the app <-> db
    /// bytes and messages.
    #[arg(long, value_name = "N")]
    db_port: Option<u16>,
    /// browsing | shopping | ordering.
    #[arg(long, default_value = "browsing")]
    mix: String,
    /// Interactions measured (written to the trace).
    #[arg(long, default_value_t = 600)]
    interactions: u64,
    /// Interactions first run and discarded (a JIT needs thousands).
    #[arg(long, default_value_t = 1500)]
    warmup: u64,
    /// The trace to write (JSON Lines, schema v1).
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// Give up after this long whatever the count.
    #[arg(long, default_value = "30m", value_name = "DURATION", value_parser = conv::positive_duration)]
    max_duration: Duration,
    /// Timeout of each request.
    #[arg(long, default_value = "30s", value_name = "DURATION", value_parser = conv::positive_duration)]
    timeout: Duration,
    /// Parallel image connections.
    #[arg(long, default_value_t = 4)]
    image_connections: usize,
    /// Seed of the browser's choices.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// No progress line.
    #[arg(long, short)]
    quiet: bool,
}

#[derive(Args)]
pub struct PopulateArgs {
    #[command(flatten)]
    db: DbArgs,
    /// Rebuild even if the database is already populated.
    #[arg(long)]
    force: bool,
}

pub fn run(cmd: DcCmd) -> CmdResult {
    match cmd {
        DcCmd::Serve(a) => serve_cmd(a),
        DcCmd::Drive(a) => drive_cmd(a),
        DcCmd::Populate(a) => {
            let spec = a.db.spec()?;
            let m = ensure_populated(&spec, a.db.populate(a.force)?, false)?;
            println!("populated: {} items, {} customers (scaled for {} browsers), seed {}", m.items, m.customers, m.ebs, m.seed);
            Ok(ExitCode::SUCCESS)
        }
        DcCmd::Trace { file } => trace_cmd(&file),
        DcCmd::Replay(a) => replay_cmd(a),
        DcCmd::Profile(a) => profile_cmd(a),
    }
}

fn replay_cmd(a: ReplayArgs) -> CmdResult {
    use interlab_replay::{CostCache, DcSpec, InteractionTable, Kind};
    use interlab_datacenter::tpcw::Interaction;
    let json_dest = Dest::from_flag(a.json.as_deref());
    if let Some(j) = &json_dest {
        j.check_writable("json")?;
    }
    let text = std::fs::read_to_string(&a.spec).map_err(|e| format!("spec {}: {e}", a.spec.display()))?;
    let name = a.spec.display().to_string();
    crate::commands::check_spec_kind(&name, &text, "datacenter")?;
    let specs = DcSpec::parse(&name, &text)?;
    let table = std::sync::Arc::new(match &a.trace {
        Some(p) => InteractionTable::read(p)?,
        None => InteractionTable::builtin(),
    });
    let costs = CostCache::new();
    let mut json = Vec::new();
    if !a.quiet {
        say_err(&format!("interlab datacenter replay {name}: work per interaction from {} ({} samples)", table.source, table.len()));
    }
    for s in &specs {
        let label = if s.label.is_empty() { s.name.clone() } else { s.label.clone() };
        let protos: Vec<&str> = s.protocols.iter().map(|p| p.name()).collect();
        let cores = if s.host_cores > 0 { format!("one shared host of {} cores (browsers included)", s.host_cores) } else { format!("cores {:?}", s.cores) };
        say!(
            "\n{label}: profile {}, links client-web {} / web-app {} / app-db {}, {cores}, connections {:?} (0 = per browser)",
            s.profile, protos[0], protos[1], protos[2], s.connections
        );
        let xs: Vec<(u32, u64)> = match s.kind {
            Kind::Static => s.file_sizes.iter().map(|&f| (s.browsers[0], f)).collect(),
            _ => s.browsers.iter().map(|&b| (b, 0)).collect(),
        };
        for (b, f) in xs {
            let o = s.run_point(&table, &costs, b, f).map_err(Fail::Run)?;
            let metric = match s.kind {
                Kind::Tpcw => "WIPS",
                Kind::Specweb => "pages/s",
                Kind::Static => "requests/s",
            };
            let pct = |c: Option<usize>, p: f64| o.percentile(c, p).map_or(f64::NAN, |x| x * 1e3);
            let size = if s.kind == Kind::Static { format!(", mean file {f} B") } else { String::new() };
            say!(
                "  {b} browsers{size}: {metric} {:.1}; response ms p50 {:.2} p90 {:.2} p99 {:.2} max {:.2}; tier utilisation {} (network stack {}); {} requests issued, {} completed; SDP idle round trips {}",
                o.throughput(),
                pct(None, 50.0),
                pct(None, 90.0),
                pct(None, 99.0),
                pct(None, 100.0),
                if s.host_cores > 0 {
                    format!("host {:.0}% (browsers {})", o.tier_util.iter().sum::<f64>() * 100.0, o.tier_util.iter().map(|u| format!("{:.0}%", u * 100.0)).collect::<Vec<_>>().join("/"))
                } else {
                    o.tier_util.iter().skip(1).map(|u| format!("{:.0}%", u * 100.0)).collect::<Vec<_>>().join("/")
                },
                // The network stack's share of each tier's busy time.
                o.tier_net_busy_s.iter().zip(&o.tier_busy_s).skip(if s.host_cores > 0 { 0 } else { 1 }).map(|(n, b)| format!("{:.0}%", if *b > 0.0 { n / b * 100.0 } else { 0.0 })).collect::<Vec<_>>().join("/"),
                o.issued,
                o.completed,
                o.idle_penalties
            );
            if o.window_bias() > 0.1 && !a.quiet {
                say_err(&format!(
                    "note: {b} browsers: {} requests in flight at the end, {:.2} per request completed in the {} s window: response times are long against the window, so its completions lean to cheap interactions and the throughput is biased; lengthen measure_s",
                    o.in_flight,
                    o.window_bias(),
                    s.measure_s
                ));
            }
            let mut per = Vec::new();
            for (c, cname) in o.classes.iter().enumerate() {
                let n = o.times(Some(c)).len();
                if n == 0 {
                    continue;
                }
                let interaction = Interaction::from_abbr(cname);
                let limit = interaction.map(|i| i.wirt90_limit().as_secs_f64());
                // One naming of interactions across drive, trace and replay: the TPC-W names.
                let cname = interaction.map_or(cname.as_str(), |i| i.name());
                let over = limit.map(|l| o.over(Some(c), l) * 100.0);
                if s.kind == Kind::Tpcw {
                    say!(
                        "    {cname:<22} {n:>7}  p50 {:>8.2}  p90 {:>8.2}  p99 {:>8.2} ms  over limit {:>5.1}%",
                        pct(Some(c), 50.0),
                        pct(Some(c), 90.0),
                        pct(Some(c), 99.0),
                        over.unwrap_or(0.0)
                    );
                }
                per.push(serde_json::json!({"class": cname, "count": n, "p50_ms": pct(Some(c), 50.0), "p90_ms": pct(Some(c), 90.0),
                    "p99_ms": pct(Some(c), 99.0), "over_limit_pct": over}));
            }
            json.push(serde_json::json!({"series": label, "browsers": b, "file_bytes": f, "throughput_per_s": o.throughput(),
                "p50_ms": pct(None, 50.0), "p90_ms": pct(None, 90.0), "p99_ms": pct(None, 99.0), "issued": o.issued,
                "completed": o.completed, "in_flight_per_measured": o.window_bias(), "tier_utilisation": o.tier_util, "tier_busy_s": o.tier_busy_s, "tier_network_busy_s": o.tier_net_busy_s, "sdp_idle_round_trips": o.idle_penalties,
                "per_class": per}));
        }
    }
    if let Some(j) = json_dest {
        let serde_json::Value::Object(body) = serde_json::json!({"spec": name, "points": json}) else { unreachable!("an object literal") };
        j.write_json("json", &conv::document("interlab-datacenter-replay", body))?;
    }
    Ok(ExitCode::SUCCESS)
}

fn serve_cmd(a: ServeArgs) -> CmdResult {
    let tier = TierSel::parse(&a.tier)?;
    let listen = Addr::parse(a.listen.as_deref().unwrap_or(tier.default_listen())).map_err(|e| format!("--listen: {e}"))?;
    let inner = match a.inner.as_str() {
        "tcp" => Inner::Tcp,
        "unix" => Inner::Unix,
        o => return Err(format!("--inner '{o}': expected tcp or unix").into()),
    };
    if a.app_connections == 0 || a.db_connections == 0 || a.max_connections == 0 {
        return Err("--app-connections, --db-connections and --max-connections must be at least 1".into());
    }
    let opts = ServeOptions {
        tier,
        listen,
        app_tier: Addr::parse(&a.app_tier).map_err(|e| format!("--app-tier: {e}"))?,
        db_tier: Addr::parse(&a.db_tier).map_err(|e| format!("--db-tier: {e}"))?,
        db: a.db.spec()?,
        populate: a.db.populate(false)?,
        trace: a.trace,
        app_connections: a.app_connections,
        db_connections: a.db_connections,
        max_connections: a.max_connections,
        request_timeout: if a.request_timeout <= Duration::from_secs(3600) {
            a.request_timeout
        } else {
            return Err(format!("--request-timeout {:?}: at most 1h", a.request_timeout).into());
        },
        max_per_client: match a.max_per_client {
            Some(0) => return Err("--max-per-client must be at least 1".into()),
            n => n,
        },
        inner,
        strict: if a.strict { Some(Sessions::parse(&a.strict_sessions).map_err(|e| format!("--strict-sessions: {e}"))?) } else { None },
        allow_faults: a.allow_fault_injection,
        quiet: a.quiet,
    };
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program's path to start the tiers: {e}"))?;
    let child = ChildCommand { exe, prefix: vec!["datacenter".into(), "serve".into()] };
    serve::run(&opts, &child)?;
    Ok(ExitCode::SUCCESS)
}

/// Bounds of --items / --customers, and a scale for a site without a scale endpoint.
fn check_scale(site: &Site, items: Option<u64>, customers: Option<u64>) -> Result<(), String> {
    if site.info.is_none() && site.scale.is_none() && (items.is_none() || customers.is_none()) {
        return Err(format!("site profile {} has no scale endpoint and no [scale]: give --items and --customers (the site's NUM_ITEMS and NUM_CUSTOMERS)", site.name));
    }
    if let Some(i) = items.filter(|i| !(5..=1_000_000_000).contains(i)) {
        return Err(format!("--items {i}: expected 5 to 1000000000"));
    }
    if let Some(c) = customers.filter(|c| !(1..=10_000_000_000).contains(c)) {
        return Err(format!("--customers {c}: expected 1 to 10000000000"));
    }
    Ok(())
}

fn drive_cmd(a: DriveArgs) -> CmdResult {
    let (url, site) = a.target.open()?;
    let mix = Mix::parse(&a.mix).map_err(|e| format!("--mix: {e}"))?;
    let duration = a.duration;
    if !(a.think_scale.is_finite() && (0.0..=100.0).contains(&a.think_scale)) {
        return Err(format!("--think-scale {}: expected a number from 0 to 100", a.think_scale).into());
    }
    if !(a.session_scale.is_finite() && a.session_scale > 0.0 && a.session_scale <= 100.0) {
        return Err(format!("--session-scale {}: expected a number above 0, at most 100", a.session_scale).into());
    }
    if a.browsers == 0 || a.browsers > 100_000 {
        return Err(format!("--browsers {}: expected 1 to 100000", a.browsers).into());
    }
    if a.image_connections == 0 || a.image_connections > 16 {
        return Err(format!("--image-connections {}: expected 1 to 16", a.image_connections).into());
    }
    let ramp_up = a.ramp_up.unwrap_or_else(|| DriveConfig::default_ramp_up(a.think_scale));
    let ramp_down = a.ramp_down.unwrap_or_else(|| DriveConfig::default_ramp_down(a.think_scale));
    let (wait, timeout) = (a.wait, a.timeout);
    // Fail on unwritable outputs before the run, not after it.
    let json_dest = Dest::from_flag(a.json.as_deref());
    if let Some(j) = &json_dest {
        j.check_writable("json")?;
    }
    let trace = match &a.trace {
        Some(p) => Some(TraceWriter::create(p)?),
        None => None,
    };
    let cfg = DriveConfig {
        url,
        browsers: a.browsers,
        mix,
        ramp_up,
        duration,
        ramp_down,
        think_scale: a.think_scale,
        session_scale: a.session_scale,
        seed: a.seed,
        timeout,
        image_connections: a.image_connections,
        items: a.target.items,
        customers: a.target.customers,
        trace,
        wait,
        site,
        probe: None,
        trace_skip: 0,
        max_interactions: None,
    };
    serve::install_stop_handlers();
    let tty = std::io::stderr().is_terminal();
    let quiet = a.quiet;
    let mut last_line = std::time::Instant::now();
    let mut progress = |p: &rbe::Progress| {
        if quiet {
            return;
        }
        let line = format!(
            "[{:>5.0}s/{:.0}s {:<9}] {} browsers  {} interactions  {:.2}/s (last 10 s)  errors {}",
            p.elapsed.as_secs_f64(),
            p.total.as_secs_f64(),
            p.phase,
            p.active,
            p.done,
            p.rate,
            p.errors
        );
        if tty {
            eprint!("\r{line}\x1b[K");
        } else if last_line.elapsed().as_secs() >= 10 {
            eprintln!("{line}");
            last_line = std::time::Instant::now();
        }
    };
    let report = rbe::drive(&cfg, &mut progress, &serve::stop_requested);
    if tty && !quiet {
        eprintln!();
    }
    let report = report.map_err(Fail::Run)?;
    say!("{}", rbe::report_table(&report).trim_end());
    let _ = std::io::stdout().flush();
    if let Some(j) = json_dest {
        let serde_json::Value::Object(body) = serde_json::to_value(&report).map_err(|e| Fail::Run(e.to_string()))? else {
            return Err(Fail::Run("the drive report is not a JSON object".into()));
        };
        j.write_json("json", &conv::document("interlab-datacenter-drive", body))?;
    }
    if report.errors.total > 0 {
        eprintln!("interlab datacenter drive: {} errors (see above)", report.errors.total);
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

fn profile_cmd(a: ProfileArgs) -> CmdResult {
    let (url, site) = a.target.open()?;
    let mix = Mix::parse(&a.mix).map_err(|e| format!("--mix: {e}"))?;
    if !(1..=10_000_000).contains(&a.interactions) || a.warmup > 10_000_000 {
        return Err(format!("--interactions {} / --warmup {}: expected 1 to 10000000 and 0 to 10000000", a.interactions, a.warmup).into());
    }
    if a.image_connections == 0 || a.image_connections > 16 {
        return Err(format!("--image-connections {}: expected 1 to 16", a.image_connections).into());
    }
    let specs = a.tiers.iter().map(|t| TierSpec::parse(t)).collect::<Result<Vec<_>, _>>()?;
    // Each tier given, with the process or cgroup named for it (for the warnings after).
    let named: Vec<(Tier, &str)> = specs.iter().zip(&a.tiers).map(|(s, t)| (s.tier, t.split_once('=').map_or("", |p| p.1))).collect();
    let probe = TierProbe::new(specs, a.db_port)?;
    if !a.quiet {
        let how = match probe.net {
            NetMethod::Ss => "app <-> db traffic from ss (tcp_info of the app's connections to the database port)",
            NetMethod::ProcIo => "app <-> db traffic from /proc/PID/io (ss unavailable: every read/write of the app counts)",
            NetMethod::None => "no --db-port: no app <-> db traffic",
        };
        eprintln!("interlab datacenter profile: {} warm-up + {} measured interactions, one browser, no think time; {how}", a.warmup, a.interactions);
    }
    let trace = TraceWriter::create(&a.out)?;
    let cfg = DriveConfig {
        url,
        browsers: 1,
        mix,
        ramp_up: Duration::ZERO,
        duration: a.max_duration,
        ramp_down: Duration::ZERO,
        think_scale: 0.0,
        session_scale: 1.0,
        seed: a.seed,
        timeout: a.timeout,
        image_connections: a.image_connections,
        items: a.target.items,
        customers: a.target.customers,
        trace: Some(trace),
        wait: Duration::ZERO,
        site,
        probe: Some(std::sync::Arc::new(probe)),
        trace_skip: a.warmup,
        max_interactions: Some(a.warmup + a.interactions),
    };
    serve::install_stop_handlers();
    let quiet = a.quiet;
    let mut last = std::time::Instant::now();
    let mut progress = |p: &rbe::Progress| {
        if !quiet && last.elapsed().as_secs() >= 10 {
            eprintln!("[{:>5.0}s] {} interactions, errors {}", p.elapsed.as_secs_f64(), p.done, p.errors);
            last = std::time::Instant::now();
        }
    };
    let report = rbe::drive(&cfg, &mut progress, &serve::stop_requested).map_err(Fail::Run)?;
    if !quiet {
        eprintln!(
            "interlab datacenter profile: {} interactions ({} measured), {} errors, {} images; trace {}",
            report.interactions_total,
            report.interactions_total.saturating_sub(a.warmup),
            report.errors.total,
            report.images,
            a.out.display()
        );
        for e in report.errors.samples.iter().take(5) {
            eprintln!("  {e}");
        }
    }
    let trace = Trace::read(&a.out).map_err(|e| e.to_string())?;
    print_trace_summary(&a.out, &trace);
    for w in profile_warnings(&trace, &named, a.db_port) {
        eprintln!("warning: {w}");
    }
    if report.errors.total > 0 {
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// What a profile's trace says about the tiers given: a named tier that used no CPU over
/// the measured interactions, or an app tier with no traffic to `--db-port`, was most
/// likely given the wrong process (a launcher shell instead of the server it started).
fn profile_warnings(t: &Trace, tiers: &[(Tier, &str)], db_port: Option<u16>) -> Vec<String> {
    let mut w = Vec::new();
    for &(tier, what) in tiers {
        let name = format!("{tier:?}").to_lowercase();
        let shares: Vec<_> = t.records.iter().filter_map(|r| r.tier(tier)).collect();
        if !shares.is_empty() && shares.iter().all(|s| s.cpu_ns == 0) {
            w.push(format!("--tier {name}={what} used no CPU in {} measured interactions: is {what} the server itself (all its threads), not a launcher that started it?", shares.len()));
        }
        if let (Tier::App, Some(port)) = (tier, db_port) {
            if !shares.is_empty() && shares.iter().all(|s| s.to_next.messages == 0 && s.from_next.messages == 0) {
                w.push(format!("--tier app={what} had no TCP traffic to port {port} in {} measured interactions: is {what} the process that holds the database connections, and {port} the database's port?", shares.len()));
            }
        }
    }
    w
}

fn trace_cmd(file: &std::path::Path) -> CmdResult {
    let t = Trace::read(file).map_err(|e| e.to_string())?;
    print_trace_summary(file, &t);
    Ok(ExitCode::SUCCESS)
}

/// Prints what `trace FILE` shows of trace `t`: record counts and per-tier sums.
fn print_trace_summary(file: &std::path::Path, t: &Trace) {
    let pages = t.records.iter().filter(|r| r.kind == Kind::Page).count();
    let errors = t.records.iter().filter(|r| r.error.is_some()).count();
    println!("{}: {} records ({} pages, {} images, {} with errors), schema version 1", file.display(), t.records.len(), pages, t.records.len() - pages, errors);
    println!("{:<8} {:>10} {:>14} {:>12} {:>14} {:>12} {:>14}", "tier", "requests", "cpu ms", "msgs down", "bytes down", "msgs up", "bytes up");
    for tier in [Tier::Browser, Tier::Web, Tier::App, Tier::Db] {
        let shares: Vec<_> = t.records.iter().filter_map(|r| r.tier(tier)).collect();
        if shares.is_empty() {
            continue;
        }
        println!(
            "{:<8} {:>10} {:>14.1} {:>12} {:>14} {:>12} {:>14}",
            format!("{tier:?}").to_lowercase(),
            shares.iter().map(|s| s.requests as u64).sum::<u64>(),
            shares.iter().map(|s| s.cpu_ns).sum::<u64>() as f64 / 1e6,
            shares.iter().map(|s| s.to_next.messages as u64).sum::<u64>(),
            shares.iter().map(|s| s.to_next.bytes).sum::<u64>(),
            shares.iter().map(|s| s.from_next.messages as u64).sum::<u64>(),
            shares.iter().map(|s| s.from_next.bytes).sum::<u64>(),
        );
    }
}

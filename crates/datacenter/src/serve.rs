//! Running the tiers: one tier in this process (`--tier web|app|db`), or all three as
//! child processes of this one (`--tier all`), joined by TCP on loopback or by Unix
//! sockets, stopped together on SIGINT/SIGTERM (and, through PR_SET_PDEATHSIG, when this
//! process dies).

use crate::apptier::{self, AppConfig};
use crate::db::procs::ProcOptions;
use crate::db::DbSpec;
use crate::dbtier::{self, DbTierConfig, PopulateRequest};
use crate::trace::TraceWriter;
use crate::webtier::{self, WebConfig};
use crate::wire::Addr;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Which tier(s) this process runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TierSel {
    Web,
    App,
    Db,
    All,
}

impl TierSel {
    pub fn parse(s: &str) -> Result<TierSel, String> {
        match s {
            "web" => Ok(TierSel::Web),
            "app" => Ok(TierSel::App),
            "db" => Ok(TierSel::Db),
            "all" => Ok(TierSel::All),
            _ => Err(format!("unknown tier '{s}': expected web, app, db or all")),
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            TierSel::Web => "web",
            TierSel::App => "app",
            TierSel::Db => "db",
            TierSel::All => "all",
        }
    }
    /// Where the tier listens unless told otherwise.
    pub fn default_listen(self) -> &'static str {
        match self {
            TierSel::Web | TierSel::All => "127.0.0.1:8080",
            TierSel::App => "127.0.0.1:7481",
            TierSel::Db => "127.0.0.1:7482",
        }
    }
}

/// How `--tier all` joins its tiers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Inner {
    Tcp,
    Unix,
}

/// Everything `serve` needs.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    pub tier: TierSel,
    /// This tier's address (all: the web tier's).
    pub listen: Addr,
    /// Web tier: the application tier.
    pub app_tier: Addr,
    /// Application tier: the database tier.
    pub db_tier: Addr,
    pub db: DbSpec,
    pub populate: PopulateRequest,
    pub trace: Option<PathBuf>,
    pub app_connections: usize,
    pub db_connections: usize,
    pub max_connections: usize,
    /// Web tier: deadline for a request's head and body once its first byte arrived.
    pub request_timeout: Duration,
    /// Web tier: browser connections per client address (None: 3/4 of max_connections).
    pub max_per_client: Option<usize>,
    pub inner: Inner,
    /// Web tier: serve the strict servlet-style site with this session mode.
    pub strict: Option<crate::strict::Sessions>,
    pub allow_faults: bool,
    pub quiet: bool,
}

/// How to start this program's `datacenter serve` in a child process.
#[derive(Debug, Clone)]
pub struct ChildCommand {
    pub exe: PathBuf,
    /// Arguments before the serve options, e.g. ["datacenter", "serve"].
    pub prefix: Vec<String>,
}

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

/// Routes SIGINT and SIGTERM to [`stop_requested`].
pub fn install_stop_handlers() {
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
}

/// Whether SIGINT or SIGTERM arrived.
pub fn stop_requested() -> bool {
    STOP.load(Ordering::SeqCst)
}

fn banner(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// Runs `opts.tier`; returns only on error (or, for `all`, when stopped).
pub fn run(opts: &ServeOptions, child: &ChildCommand) -> Result<(), String> {
    install_stop_handlers();
    match opts.tier {
        TierSel::All => run_all(opts, child),
        tier => run_one(opts, tier),
    }
}

fn watcher(trace: Option<TraceWriter>) {
    let _ = std::thread::Builder::new().name("stop-watch".into()).spawn(move || {
        let mut last_flush = Instant::now();
        loop {
            std::thread::sleep(Duration::from_millis(50));
            if stop_requested() {
                if let Some(t) = &trace {
                    t.flush();
                }
                std::process::exit(0);
            }
            if last_flush.elapsed() >= Duration::from_secs(1) {
                if let Some(t) = &trace {
                    t.flush();
                }
                last_flush = Instant::now();
            }
        }
    });
}

fn run_one(opts: &ServeOptions, tier: TierSel) -> Result<(), String> {
    if opts.trace.is_some() && tier != TierSel::Web {
        return Err("--trace is written by the web tier (it sees every tier's share); use it with --tier web or --tier all".into());
    }
    match tier {
        TierSel::Db => {
            let meta = dbtier::ensure_populated(&opts.db, opts.populate, opts.quiet)?;
            watcher(None);
            let desc = match &opts.db {
                DbSpec::Sqlite(p) => format!("sqlite {}", p.display()),
                DbSpec::Postgres(u) => format!("postgres {}", crate::db::pg::redact(u)),
            };
            let cfg = DbTierConfig {
                listen: opts.listen.clone(),
                db: opts.db.clone(),
                opts: ProcOptions { allow_faults: opts.allow_faults },
                max_connections: opts.max_connections,
                quiet: opts.quiet,
            };
            dbtier::serve(cfg, |a| {
                banner(&format!(
                    "interlab datacenter db: listening on {a} ({desc}: {} items, {} customers, scaled for {} browsers)",
                    meta.items, meta.customers, meta.ebs
                ))
            })
        }
        TierSel::App => {
            watcher(None);
            let cfg = AppConfig {
                listen: opts.listen.clone(),
                db_tier: opts.db_tier.clone(),
                db_connections: opts.db_connections,
                max_connections: opts.max_connections,
                seed: opts.populate.seed,
                quiet: opts.quiet,
            };
            let db = opts.db_tier.clone();
            apptier::serve(cfg, |a, info| banner(&format!("interlab datacenter app: listening on {a} (database tier {db}, {} items)", info.items)))
        }
        TierSel::Web => {
            if matches!(opts.listen, Addr::Unix(_)) {
                return Err("the web tier speaks HTTP over TCP: --listen HOST:PORT".into());
            }
            let trace = match &opts.trace {
                Some(p) => Some(TraceWriter::create(p)?),
                None => None,
            };
            watcher(trace.clone());
            let cfg = WebConfig {
                listen: opts.listen.clone(),
                app_tier: opts.app_tier.clone(),
                app_connections: opts.app_connections,
                max_connections: opts.max_connections,
                idle_timeout: Duration::from_secs(300),
                request_timeout: opts.request_timeout,
                max_per_client: opts.max_per_client.unwrap_or_else(|| webtier::default_max_per_client(opts.max_connections)),
                trace,
                quiet: opts.quiet,
                strict: opts.strict.map(|m| std::sync::Arc::new(crate::strict::Strict::new(m, opts.populate.seed))),
            };
            let app = opts.app_tier.clone();
            webtier::serve(cfg, |a| banner(&format!("interlab datacenter web: listening on http://{a}/ (application tier {app})")))
        }
        TierSel::All => unreachable!("handled by run_all"),
    }
}

/// A started child tier.
struct Tier {
    name: &'static str,
    child: Child,
}

fn spawn_tier(child: &ChildCommand, name: &'static str, args: Vec<String>) -> Result<(Tier, String), String> {
    let mut cmd = Command::new(&child.exe);
    cmd.args(&child.prefix).args(&args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::inherit());
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: prctl is async-signal-safe; the child dies with its parent.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
                Ok(())
            });
        }
    }
    let mut c = cmd.spawn().map_err(|e| format!("cannot start the {name} tier ({}): {e}", child.exe.display()))?;
    let out = c.stdout.take().ok_or("no stdout")?;
    let mut r = BufReader::new(out);
    let mut line = String::new();
    let n = r.read_line(&mut line).unwrap_or(0);
    if n == 0 || !line.contains(" listening on ") {
        let status = c.wait().map(|s| s.to_string()).unwrap_or_else(|e| e.to_string());
        return Err(format!("the {name} tier exited before it was ready ({status}); its message is above"));
    }
    // Keep draining the child's stdout so it never blocks on a full pipe.
    let _ = std::thread::Builder::new().name(format!("{name}-out")).spawn(move || {
        let mut sink = String::new();
        while r.read_line(&mut sink).map(|n| n > 0).unwrap_or(false) {
            sink.clear();
        }
    });
    let addr = line.split(" listening on ").nth(1).and_then(|s| s.split_whitespace().next()).unwrap_or("").to_string();
    Ok((Tier { name, child: c }, addr))
}

fn stop_all(tiers: &mut [Tier]) {
    for t in tiers.iter() {
        // SAFETY: signalling our own child by its pid.
        unsafe {
            libc::kill(t.child.id() as libc::pid_t, libc::SIGTERM);
        }
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    for t in tiers.iter_mut() {
        loop {
            match t.child.try_wait() {
                Ok(Some(_)) | Err(_) => break,
                Ok(None) if Instant::now() >= deadline => {
                    let _ = t.child.kill();
                    let _ = t.child.wait();
                    break;
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    }
}

fn common(opts: &ServeOptions) -> Vec<String> {
    if opts.quiet {
        vec!["--quiet".into()]
    } else {
        vec![]
    }
}

fn run_all(opts: &ServeOptions, child: &ChildCommand) -> Result<(), String> {
    if matches!(opts.listen, Addr::Unix(_)) {
        return Err("the web tier speaks HTTP over TCP: --listen HOST:PORT".into());
    }
    if let Some(p) = &opts.trace {
        // Fail here, not in the child, when the trace file cannot be created.
        TraceWriter::create(p)?;
    }
    let sock_dir = std::env::temp_dir().join(format!("interlab-dc-{}", std::process::id()));
    let (db_listen, app_listen) = match opts.inner {
        Inner::Tcp => ("127.0.0.1:0".to_string(), "127.0.0.1:0".to_string()),
        Inner::Unix => {
            std::fs::create_dir_all(&sock_dir).map_err(|e| format!("cannot create {}: {e}", sock_dir.display()))?;
            (format!("unix:{}", sock_dir.join("db.sock").display()), format!("unix:{}", sock_dir.join("app.sock").display()))
        }
    };
    let mut tiers: Vec<Tier> = Vec::new();
    let result = (|| -> Result<(), String> {
        let mut a = vec!["--tier".into(), "db".into(), "--listen".into(), db_listen];
        a.extend(opts.db.to_args());
        if opts.populate.explicit {
            a.extend(["--items".into(), opts.populate.scale.items.to_string(), "--ebs".into(), opts.populate.scale.ebs.to_string()]);
        }
        a.extend(["--seed".into(), opts.populate.seed.to_string(), "--max-connections".into(), opts.db_connections.max(1).saturating_mul(4).to_string()]);
        if opts.allow_faults {
            a.push("--allow-fault-injection".into());
        }
        a.extend(common(opts));
        let (t, db_addr) = spawn_tier(child, "db", a)?;
        tiers.push(t);

        let mut a = vec!["--tier".into(), "app".into(), "--listen".into(), app_listen, "--db-tier".into(), db_addr.clone()];
        a.extend(["--db-connections".into(), opts.db_connections.to_string(), "--seed".into(), opts.populate.seed.to_string()]);
        a.extend(["--max-connections".into(), opts.app_connections.max(1).saturating_mul(4).to_string()]);
        a.extend(common(opts));
        let (t, app_addr) = spawn_tier(child, "app", a)?;
        tiers.push(t);

        let mut a = vec!["--tier".into(), "web".into(), "--listen".into(), opts.listen.to_string(), "--app-tier".into(), app_addr.clone()];
        a.extend(["--app-connections".into(), opts.app_connections.to_string(), "--max-connections".into(), opts.max_connections.to_string()]);
        a.extend(["--request-timeout".into(), opts.request_timeout.as_secs_f64().to_string()]);
        if let Some(n) = opts.max_per_client {
            a.extend(["--max-per-client".into(), n.to_string()]);
        }
        if let Some(p) = &opts.trace {
            a.extend(["--trace".into(), p.display().to_string()]);
        }
        if let Some(m) = opts.strict {
            a.extend(["--strict".into(), "--strict-sessions".into(), m.name().into()]);
        }
        a.extend(common(opts));
        let (t, url) = spawn_tier(child, "web", a)?;
        tiers.push(t);
        banner(&format!(
            "interlab datacenter: bookstore at {url} (web pid {}, app pid {} on {app_addr}, db pid {} on {db_addr}); Ctrl-C stops all three",
            tiers[2].child.id(),
            tiers[1].child.id(),
            tiers[0].child.id()
        ));
        loop {
            if stop_requested() {
                return Ok(());
            }
            for t in tiers.iter_mut() {
                if let Ok(Some(st)) = t.child.try_wait() {
                    return Err(format!("the {} tier exited unexpectedly ({st}); stopping the others", t.name));
                }
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    })();
    stop_all(&mut tiers);
    if opts.inner == Inner::Unix {
        let _ = std::fs::remove_dir_all(&sock_dir);
    }
    if result.is_ok() && !opts.quiet {
        eprintln!("interlab datacenter: stopped");
    }
    result
}

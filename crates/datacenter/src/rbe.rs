//! The remote browser emulator: N emulated browsers (one thread each, closed loop) walk
//! the chosen mix's CBMG through a TPC-W site's real pages (following the links and
//! submitting the forms each page has, resolved against the page's URL; the session kept
//! by cookie and by `;jsessionid=` URL rewriting; pages recognised by a [`Site`]
//! profile), wait negative-exponential think times, open a new
//! session (new connections, new customer, empty cart) at the first transition to Home
//! after the user session minimum duration, and fetch every embedded image over up to
//! `image_connections` parallel connections. The run has ramp-up, measurement and
//! ramp-down intervals; WIPS and the response-time percentiles count interactions whose
//! last byte (T2) arrived inside the measurement interval.

use crate::apptier::Info;
use crate::cpu::thread_cpu_ns;
use crate::cookies::Jar;
use crate::htmlscan::{scan, Form, Page};
use crate::http::{build_query, parse_query, Client, HttpError, Response, Url};
use crate::site::{format_date, glob, Site};
use crate::uri::Uri;
use crate::populate::{COUNTRIES, FIRST_NAMES, LAST_NAMES};
use crate::tpcw::{
    customer_uname, digsyl_word, nurand, nurand_a_customers, nurand_a_items, think_time, usmd, Interaction, Mix, CC_TYPES, SHIP_TYPES,
    SUBJECTS, THINK_MEAN, USMD_MEAN,
};
use crate::trace::{now_us, Kind, Source, Tier, TierTrace, TraceRecord, TraceWriter, TRACE_VERSION};
use interlab_kernel::Rng;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// Durations as every flag takes them (`60s`, `500ms`, `2m`, a bare number of seconds).
pub use interlab_patterns::parse_duration;

/// Driver settings.
#[derive(Debug, Clone)]
pub struct DriveConfig {
    pub url: Url,
    pub browsers: u32,
    pub mix: Mix,
    pub ramp_up: Duration,
    /// The measurement interval.
    pub duration: Duration,
    pub ramp_down: Duration,
    /// Think-time mean = 7 s x this.
    pub think_scale: f64,
    /// User-session-minimum-duration mean = 15 min x this.
    pub session_scale: f64,
    pub seed: u64,
    /// Connect, read and write timeout of every request.
    pub timeout: Duration,
    /// Parallel image connections per browser (PHARM: 4).
    pub image_connections: usize,
    /// Override the database scale reported by the server.
    pub items: Option<u64>,
    pub customers: Option<u64>,
    pub trace: Option<TraceWriter>,
    /// Keep retrying the first contact this long (a bookstore still populating).
    pub wait: Duration,
    /// How the site's pages are recognised and its fields named.
    pub site: Arc<Site>,
    /// Per-interaction tier counters (`profile`); the trace's server tiers come from it.
    pub probe: Option<Arc<dyn Probe>>,
    /// Trace records of each browser's first this many interactions are not written (warm-up).
    pub trace_skip: u64,
    /// Stop once this many interactions have completed (all browsers).
    pub max_interactions: Option<u64>,
}

/// Counters of the server tiers, read around each interaction (`profile`): before the
/// page request, after the page, after its images.
pub trait Probe: Send + Sync + std::fmt::Debug {
    /// A snapshot of the counters (opaque to the emulator).
    fn sample(&self) -> Vec<u64>;
    /// The server tiers' shares of one interaction from its three snapshots, given the
    /// page request's and response's bytes on the wire.
    fn tiers(&self, before: &[u64], after_page: &[u64], after_images: &[u64], page_request_bytes: u64, page_response_bytes: u64) -> Vec<TierTrace>;
}

impl DriveConfig {
    /// Default ramp-up: about three think times (20 s at the spec's 7 s), at least 1 s.
    pub fn default_ramp_up(think_scale: f64) -> Duration {
        Duration::from_secs_f64((3.0 * THINK_MEAN.as_secs_f64() * think_scale).clamp(1.0, 20.0))
    }
    /// Default ramp-down: one think time, at most 5 s.
    pub fn default_ramp_down(think_scale: f64) -> Duration {
        Duration::from_secs_f64((THINK_MEAN.as_secs_f64() * think_scale).clamp(0.1, 5.0))
    }
    fn think_mean(&self) -> Duration {
        THINK_MEAN.mul_f64(self.think_scale)
    }
    /// The `--url` as a directory URL (a path not ending in '/' gets one).
    pub fn base(&self) -> Uri {
        let mut u = Uri::parse(&format!("http://{}{}", self.url.authority, self.url.target)).unwrap_or(Uri { authority: self.url.authority.clone(), path: "/".into(), query: None });
        u.query = None;
        if !u.path.ends_with('/') {
            u.path.push('/');
        }
        u
    }
}

/// Error classes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// A status other than 200.
    Http,
    /// Wrong page, missing link, form or field the interaction needs, a response that is
    /// not an image where an image was asked for.
    BadHtml,
    Timeout,
    /// Connection refused, reset or closed early.
    Connection,
    /// A site defect: a page the site cut short (no closing `</html>`).
    Truncated,
}

impl ErrorKind {
    fn of(e: &HttpError) -> ErrorKind {
        match e {
            HttpError::Timeout => ErrorKind::Timeout,
            HttpError::Bad(..) => ErrorKind::BadHtml,
            _ => ErrorKind::Connection,
        }
    }
}

#[derive(Debug)]
struct EbError {
    kind: ErrorKind,
    msg: String,
    status: u16,
}

fn bad(msg: String) -> EbError {
    EbError { kind: ErrorKind::BadHtml, msg, status: 200 }
}

struct Sample {
    i: Interaction,
    t2: Duration,
    wirt: Duration,
}

struct ErrorRec {
    kind: ErrorKind,
    i: Interaction,
    t: Duration,
    msg: String,
}

#[derive(Default)]
struct Collected {
    samples: Vec<Sample>,
    errors: Vec<ErrorRec>,
    /// Site defects worked around (pages without the Home link the CBMG takes).
    notes: Vec<ErrorRec>,
    think_sum: Duration,
    thinks: u64,
    sessions: u64,
    images: u64,
    bytes: u64,
}

struct Shared {
    start: Instant,
    mi_start: Duration,
    mi_end: Duration,
    end: Duration,
    stop: Mutex<bool>,
    cv: Condvar,
    done: AtomicU64,
    errors: AtomicU64,
    active: AtomicUsize,
    data: Mutex<Collected>,
}

impl Shared {
    fn stopped(&self) -> bool {
        *self.stop.lock().unwrap_or_else(|p| p.into_inner())
    }
    /// Sleeps until `at` (since start); false when stopped first.
    fn sleep_until(&self, at: Duration) -> bool {
        let mut g = self.stop.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if *g {
                return false;
            }
            let now = self.start.elapsed();
            if now >= at {
                return true;
            }
            g = self.cv.wait_timeout(g, at - now).map(|(g, _)| g).unwrap_or_else(|p| p.into_inner().0);
        }
    }
    fn set_stop(&self) {
        *self.stop.lock().unwrap_or_else(|p| p.into_inner()) = true;
        self.cv.notify_all();
    }
    fn data(&self) -> std::sync::MutexGuard<'_, Collected> {
        self.data.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Per-interaction results over the measurement interval.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct InteractionStats {
    pub interaction: Interaction,
    pub name: String,
    /// Completed in the measurement interval.
    pub count: u64,
    /// Share of all interactions in the interval, percent.
    pub share_pct: f64,
    /// The spec's share for the mix, percent.
    pub spec_share_pct: f64,
    pub mean_ms: Option<f64>,
    pub p50_ms: Option<f64>,
    pub p90_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub max_ms: Option<f64>,
    /// TPC-W 90th-percentile limit, seconds.
    pub limit90_s: f64,
    /// 90th percentile within the limit (null: no samples).
    pub pass: Option<bool>,
    /// Errors of this interaction over the whole run.
    pub errors: u64,
}

/// Error counts over the whole run.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ErrorCounts {
    pub total: u64,
    pub http: u64,
    pub bad_html: u64,
    pub timeout: u64,
    pub connection: u64,
    /// Truncated pages: the site's own defect.
    #[serde(default)]
    pub truncated: u64,
    /// Of the total, those in the measurement interval.
    pub in_measurement: u64,
    /// Site defects worked around, not errors: pages without the Home link TPC-W's CBMG
    /// takes from them (the browser went to the site's entry page).
    #[serde(default)]
    pub missing_home_links: u64,
    /// The first few, as "t=12.3s HOME http: HTTP 502 ...".
    pub samples: Vec<String>,
}

/// The result of a run (`--json`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DriveReport {
    pub v: u32,
    pub url: String,
    pub mix: Mix,
    /// WIPS, WIPSb or WIPSo.
    pub metric: String,
    pub browsers: u32,
    pub items: u64,
    pub customers: u64,
    /// Browsers the database was scaled for.
    pub db_ebs: u64,
    pub ramp_up_s: f64,
    pub measurement_s: f64,
    pub ramp_down_s: f64,
    pub think_scale: f64,
    /// Configured think-time mean, seconds.
    pub think_mean_s: f64,
    /// Measured mean of the think times drawn, seconds.
    pub think_measured_s: f64,
    /// Web interactions per second over the measurement interval.
    pub wips: f64,
    pub interactions: u64,
    pub interactions_total: u64,
    pub sessions: u64,
    pub images: u64,
    pub bytes_received: u64,
    pub errors: ErrorCounts,
    pub per_interaction: Vec<InteractionStats>,
    /// Every interaction with samples met its 90th-percentile limit.
    pub wirt_pass: bool,
    /// Stopped early by a signal.
    pub interrupted: bool,
}

/// A snapshot for the progress line.
#[derive(Debug, Clone)]
pub struct Progress {
    pub elapsed: Duration,
    pub total: Duration,
    pub phase: &'static str,
    pub done: u64,
    pub errors: u64,
    pub active: usize,
    /// Interactions per second over the last 10 s.
    pub rate: f64,
}

/// Percentile by nearest rank of sorted values.
pub fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let k = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
    Some(sorted[k.min(sorted.len()) - 1])
}

/// Reads the bookstore's scale from `/tpcw/info` (interlab's endpoint) at the root of
/// `url`'s host.
pub fn fetch_info(url: &Url, timeout: Duration) -> Result<Info, String> {
    fetch_info_at(&format!("http://{}/", url.authority), "/tpcw/info", &url.authority, timeout)
}

fn fetch_info_at(shown: &str, target: &str, authority: &str, timeout: Duration) -> Result<Info, String> {
    let mut c = Client::new(authority, timeout);
    let (r, _) = c.request("GET", target, &[], b"").map_err(|e| format!("cannot reach the bookstore at {shown}: {e}"))?;
    if r.status != 200 {
        return Err(format!("{shown} does not look like an interlab bookstore: GET {target} returned HTTP {}", r.status));
    }
    serde_json::from_slice(&r.body).map_err(|e| format!("{shown}: {target} is not the bookstore's JSON: {e}"))
}

/// First contact: the scale (items, customers, browsers the database is scaled for) from
/// the site's scale endpoint, or from the flags or the profile; a site without one must
/// answer its home page.
fn first_contact(cfg: &DriveConfig) -> Result<(u64, u64, u64), String> {
    let base = cfg.base();
    let shown = format!("http://{}{}", base.authority, base.path);
    if let Some(info) = &cfg.site.info {
        let u = base.resolve(info).ok_or_else(|| format!("site profile {}: info '{info}' is not a URL", cfg.site.name))?;
        let i = fetch_info_at(&shown, &u.target(), &base.authority, cfg.timeout)?;
        return Ok((cfg.items.unwrap_or(i.items).max(5), cfg.customers.unwrap_or(i.customers).max(1), i.ebs));
    }
    let (items, customers) = match (cfg.items, cfg.customers, cfg.site.scale) {
        (Some(i), Some(c), _) => (i, c),
        (i, c, Some((pi, pc))) => (i.unwrap_or(pi), c.unwrap_or(pc)),
        _ => return Err(format!("site profile {} has no scale endpoint and no [scale]: give --items and --customers (the site's NUM_ITEMS and NUM_CUSTOMERS)", cfg.site.name)),
    };
    let home = base.resolve(&cfg.site.home).ok_or_else(|| format!("site profile {}: home '{}' is not a URL", cfg.site.name, cfg.site.home))?;
    let mut c = Client::new(&base.authority, cfg.timeout);
    c.request("GET", &home.target(), &[], b"").map_err(|e| format!("cannot reach the site at {shown}: {e}"))?;
    Ok((items.max(5), customers.max(1), customers / 2880))
}

/// Runs the emulation; `progress` is called about once a second; `interrupted` is polled
/// to end early (results so far are reported).
pub fn drive(cfg: &DriveConfig, progress: &mut dyn FnMut(&Progress), interrupted: &dyn Fn() -> bool) -> Result<DriveReport, String> {
    if cfg.browsers == 0 {
        return Err("--browsers must be at least 1".into());
    }
    let think_ok = cfg.think_scale.is_finite() && (0.0..=100.0).contains(&cfg.think_scale);
    let session_ok = cfg.session_scale.is_finite() && cfg.session_scale > 0.0 && cfg.session_scale <= 100.0;
    if !(think_ok && session_ok) {
        return Err("think scale must be 0..=100 and session scale in (0, 100]".into());
    }
    if cfg.duration.is_zero() {
        return Err("--duration must be more than 0".into());
    }
    let t0 = Instant::now();
    let (items, customers, db_ebs) = loop {
        match first_contact(cfg) {
            Ok(i) => break i,
            Err(e) if t0.elapsed() >= cfg.wait || interrupted() || e.contains("give --items") => return Err(e),
            Err(_) => std::thread::sleep(Duration::from_millis(250)),
        }
    };
    let shared = Arc::new(Shared {
        start: Instant::now(),
        mi_start: cfg.ramp_up,
        mi_end: cfg.ramp_up + cfg.duration,
        end: cfg.ramp_up + cfg.duration + cfg.ramp_down,
        stop: Mutex::new(false),
        cv: Condvar::new(),
        done: AtomicU64::new(0),
        errors: AtomicU64::new(0),
        active: AtomicUsize::new(0),
        data: Mutex::new(Collected::default()),
    });
    let mut handles = Vec::new();
    for eb in 0..cfg.browsers {
        let (cfg, shared) = (cfg.clone(), shared.clone());
        let h = std::thread::Builder::new()
            .name(format!("eb-{eb}"))
            .stack_size(512 * 1024)
            .spawn(move || {
                shared.active.fetch_add(1, Ordering::SeqCst);
                Eb::new(eb, &cfg, items, customers).run(&shared);
                shared.active.fetch_sub(1, Ordering::SeqCst);
            })
            .map_err(|e| format!("cannot start browser thread {eb}: {e}"))?;
        handles.push(h);
    }
    let mut history: Vec<u64> = Vec::new();
    let mut was_interrupted = false;
    loop {
        let now = shared.start.elapsed();
        // The end of the run, or a browser reached --max-interactions.
        if now >= shared.end || shared.stopped() {
            break;
        }
        if interrupted() {
            was_interrupted = true;
            break;
        }
        let done = shared.done.load(Ordering::Relaxed);
        history.push(done);
        let back = history.len().saturating_sub(11);
        let span = (history.len() - 1 - back).max(1) as f64;
        let rate = (done - history[back]) as f64 / span;
        let phase = if now < shared.mi_start {
            "ramp-up"
        } else if now < shared.mi_end {
            "measure"
        } else {
            "ramp-down"
        };
        progress(&Progress { elapsed: now, total: shared.end, phase, done, errors: shared.errors.load(Ordering::Relaxed), active: shared.active.load(Ordering::Relaxed), rate });
        let next = Duration::from_secs(history.len() as u64).min(shared.end);
        let mut left = next.saturating_sub(shared.start.elapsed());
        while !left.is_zero() {
            let step = left.min(Duration::from_millis(100));
            std::thread::sleep(step);
            if interrupted() {
                break;
            }
            left = next.saturating_sub(shared.start.elapsed());
        }
    }
    let end = shared.start.elapsed().min(shared.end);
    shared.set_stop();
    let deadline = Instant::now() + cfg.timeout + Duration::from_secs(2);
    for h in handles {
        while !h.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        if h.is_finished() {
            let _ = h.join();
        }
    }
    if let Some(t) = &cfg.trace {
        t.flush();
    }
    Ok(report(cfg, db_ebs, items, customers, &shared, end, was_interrupted))
}

fn report(cfg: &DriveConfig, db_ebs: u64, items: u64, customers: u64, shared: &Shared, end: Duration, interrupted: bool) -> DriveReport {
    let d = shared.data();
    let mi_end = shared.mi_end.min(end);
    let mi = mi_end.saturating_sub(shared.mi_start);
    let in_mi = |t: Duration| t >= shared.mi_start && t < mi_end;
    let measured: Vec<&Sample> = d.samples.iter().filter(|s| in_mi(s.t2)).collect();
    let n = measured.len() as u64;
    let mut per = Vec::new();
    let mut all_pass = true;
    for i in Interaction::SPEC_ORDER {
        let mut v: Vec<f64> = measured.iter().filter(|s| s.i == i).map(|s| s.wirt.as_secs_f64() * 1000.0).collect();
        v.sort_by(|a, b| a.total_cmp(b));
        let p90 = percentile(&v, 90.0);
        let limit = i.wirt90_limit().as_secs_f64();
        let pass = p90.map(|p| p <= limit * 1000.0);
        if pass == Some(false) {
            all_pass = false;
        }
        per.push(InteractionStats {
            interaction: i,
            name: i.name().into(),
            count: v.len() as u64,
            share_pct: if n > 0 { v.len() as f64 * 100.0 / n as f64 } else { 0.0 },
            spec_share_pct: cfg.mix.spec_share_pct(i),
            mean_ms: if v.is_empty() { None } else { Some(v.iter().sum::<f64>() / v.len() as f64) },
            p50_ms: percentile(&v, 50.0),
            p90_ms: p90,
            p99_ms: percentile(&v, 99.0),
            max_ms: v.last().copied(),
            limit90_s: limit,
            pass,
            errors: d.errors.iter().filter(|e| e.i == i).count() as u64,
        });
    }
    let mut errors = ErrorCounts::default();
    errors.missing_home_links = d.notes.len() as u64;
    for e in &d.errors {
        errors.total += 1;
        match e.kind {
            ErrorKind::Http => errors.http += 1,
            ErrorKind::BadHtml => errors.bad_html += 1,
            ErrorKind::Timeout => errors.timeout += 1,
            ErrorKind::Connection => errors.connection += 1,
            ErrorKind::Truncated => errors.truncated += 1,
        }
        if in_mi(e.t) {
            errors.in_measurement += 1;
        }
        if errors.samples.len() < 20 {
            errors.samples.push(format!("t={:.1}s {} {:?}: {}", e.t.as_secs_f64(), e.i, e.kind, e.msg));
        }
    }
    for e in &d.notes {
        if errors.samples.len() < 20 {
            errors.samples.push(format!("t={:.1}s {} (not an error): {}", e.t.as_secs_f64(), e.i, e.msg));
        }
    }
    DriveReport {
        v: 1,
        url: format!("http://{}{}", cfg.base().authority, cfg.base().path),
        mix: cfg.mix,
        metric: cfg.mix.metric().into(),
        browsers: cfg.browsers,
        items,
        customers,
        db_ebs,
        ramp_up_s: cfg.ramp_up.as_secs_f64(),
        measurement_s: mi.as_secs_f64(),
        ramp_down_s: cfg.ramp_down.as_secs_f64(),
        think_scale: cfg.think_scale,
        think_mean_s: cfg.think_mean().as_secs_f64(),
        think_measured_s: if d.thinks > 0 { d.think_sum.as_secs_f64() / d.thinks as f64 } else { 0.0 },
        wips: if mi.is_zero() { 0.0 } else { n as f64 / mi.as_secs_f64() },
        interactions: n,
        interactions_total: d.samples.len() as u64,
        sessions: d.sessions,
        images: d.images,
        bytes_received: d.bytes,
        errors,
        per_interaction: per,
        wirt_pass: all_pass,
        interrupted,
    }
}

/// The report as a text table.
pub fn report_table(r: &DriveReport) -> String {
    let mut s = String::new();
    s.push_str(&format!(
        "TPC-W {} mix against {}: {} browsers, think time mean {:.2} s (measured {:.2} s), ramp-up {:.1} s, measurement {:.1} s, ramp-down {:.1} s{}\n",
        r.mix.name(),
        r.url,
        r.browsers,
        r.think_mean_s,
        r.think_measured_s,
        r.ramp_up_s,
        r.measurement_s,
        r.ramp_down_s,
        if r.interrupted { " (INTERRUPTED)" } else { "" }
    ));
    s.push_str(&format!(
        "database: {} items, {} customers (scaled for {} browsers)\n",
        r.items, r.customers, r.db_ebs
    ));
    s.push_str(&format!(
        "{} = {:.2} ({} interactions in the measurement interval, {} in all, {} sessions, {} images, {:.1} MB received)\n",
        r.metric,
        r.wips,
        r.interactions,
        r.interactions_total,
        r.sessions,
        r.images,
        r.bytes_received as f64 / 1e6
    ));
    s.push_str(&format!(
        "errors: {} (http {}, bad html {}, timeout {}, connection {}, truncated pages (site defect) {}; {} in the measurement interval)\n",
        r.errors.total, r.errors.http, r.errors.bad_html, r.errors.timeout, r.errors.connection, r.errors.truncated, r.errors.in_measurement
    ));
    if r.errors.missing_home_links > 0 {
        s.push_str(&format!("site defects worked around (not errors): {} pages without a link to Home (the browser went to the site's entry page)\n", r.errors.missing_home_links));
    }
    for e in r.errors.samples.iter().take(5) {
        s.push_str(&format!("  {e}\n"));
    }
    s.push_str(&format!(
        "\n{:<22} {:>6} {:>6} {:>6} {:>9} {:>9} {:>9} {:>9} {:>6}  {}\n",
        "interaction", "count", "mix%", "spec%", "p50 ms", "p90 ms", "p99 ms", "limit s", "errors", "90th within limit"
    ));
    let ms = |x: Option<f64>| x.map(|v| format!("{v:.1}")).unwrap_or_else(|| "-".into());
    for p in &r.per_interaction {
        s.push_str(&format!(
            "{:<22} {:>6} {:>6.2} {:>6.2} {:>9} {:>9} {:>9} {:>9.0} {:>6}  {}\n",
            p.name,
            p.count,
            p.share_pct,
            p.spec_share_pct,
            ms(p.p50_ms),
            ms(p.p90_ms),
            ms(p.p99_ms),
            p.limit90_s,
            p.errors,
            match p.pass {
                Some(true) => "pass",
                Some(false) => "FAIL",
                None => "n/a (no samples)",
            }
        ));
    }
    s.push_str(&format!(
        "\nall 90th percentiles within the TPC-W limits: {}\n",
        if r.wirt_pass { "yes" } else { "NO" }
    ));
    s
}

/// One emulated browser.
struct Eb<'a> {
    id: u32,
    cfg: &'a DriveConfig,
    site: &'a Site,
    /// The `--url` as a directory: every page pattern is relative to its path.
    base: Uri,
    rng: Rng,
    items: u64,
    customers: u64,
    cbmg: crate::tpcw::Cbmg,
    main: Client,
    imgs: Vec<Client>,
    jar: Jar,
    session: u64,
    seq: u64,
    /// The session's customer as drawn at its start (None: anonymous).
    customer: Option<u64>,
}

/// A page the browser holds: which interaction, where it came from, what it has.
#[derive(Clone)]
struct Seen {
    i: Interaction,
    url: Uri,
    page: Page,
}

impl Seen {
    /// The URL relative references on this page resolve against (`<base href>` or its own).
    fn base(&self) -> Uri {
        match &self.page.base {
            Some(b) => self.url.resolve(b).unwrap_or_else(|| self.url.clone()),
            None => self.url.clone(),
        }
    }
}

/// What one interaction produced.
struct Done {
    seen: Option<Seen>,
    wirt: Duration,
    t2: Duration,
    images: u32,
    /// CPU time of the parallel image fetches (their threads), ns.
    img_cpu_ns: u64,
    /// CPU time of this thread in the profiler's own counter reads (`profile`), ns: not the
    /// browser's work, so left out of its share.
    probe_cpu_ns: u64,
    tiers: Vec<TierTrace>,
    t_us: u64,
    status: u16,
    path: String,
}

/// What one parallel image connection fetched: (response, bytes sent) per image, and the
/// CPU time of its thread, ns.
type ImageLane = (Vec<(Response, usize)>, u64);

/// A request to make: method, URL, form fields (the body of a POST).
struct Plan {
    method: &'static str,
    url: Uri,
    body: Vec<(String, String)>,
    /// A site defect the browser worked around to make this request (reported, not an error).
    note: Option<String>,
}

/// Whether a response is an image: an `image/*` type, or without a type the signature of
/// a PNG, GIF, JPEG or WebP.
fn is_image(r: &Response) -> bool {
    match r.header("content-type") {
        Some(t) => t.trim().to_ascii_lowercase().starts_with("image/"),
        None => {
            let b = &r.body;
            b.starts_with(b"\x89PNG\r\n\x1a\n") || b.starts_with(b"GIF87a") || b.starts_with(b"GIF89a") || b.starts_with(&[0xff, 0xd8, 0xff]) || (b.len() > 12 && &b[..4] == b"RIFF" && &b[8..12] == b"WEBP")
        }
    }
}

/// A query parameter of a URL.
fn param(u: &Uri, name: &str) -> Option<String> {
    parse_query(u.query.as_deref().unwrap_or("")).into_iter().find(|(k, _)| k == name).map(|(_, v)| v)
}

/// A parameter a page carries: a field of one of its forms, else a query parameter of one
/// of its links, else of its own URL.
fn page_param(seen: &Seen, name: &str) -> Option<String> {
    let base = seen.base();
    seen.page
        .forms
        .iter()
        .find_map(|f| f.field(name).filter(|v| !v.is_empty()).map(str::to_string))
        .or_else(|| seen.page.links.iter().filter_map(|l| base.resolve(l)).find_map(|u| param(&u, name)))
        .or_else(|| param(&seen.url, name))
}

/// Today (UTC) plus `days`, as (year, month, day).
fn date_in(days: u64) -> (i64, u32, u32) {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let s = crate::pages::ymd((now + days * 86_400) as i64);
    let mut it = s.split('-').map(|x| x.parse::<i64>().unwrap_or(1));
    let (y, m, d) = (it.next().unwrap_or(2030), it.next().unwrap_or(1), it.next().unwrap_or(1));
    (y, m as u32, d as u32)
}

impl<'a> Eb<'a> {
    fn new(id: u32, cfg: &'a DriveConfig, items: u64, customers: u64) -> Eb<'a> {
        let t = cfg.timeout;
        let base = cfg.base();
        let imgs = (0..cfg.image_connections.max(1)).map(|_| Client::new(&base.authority, t)).collect();
        Eb {
            id,
            cfg,
            site: &cfg.site,
            main: Client::new(&base.authority, t),
            base,
            rng: Rng::stream(cfg.seed, id as u64 + 1),
            items,
            customers,
            cbmg: cfg.mix.cbmg(),
            imgs,
            jar: Jar::default(),
            session: 0,
            seq: 0,
            customer: None,
        }
    }

    fn close_all(&mut self) {
        self.main.close();
        for c in &mut self.imgs {
            c.close();
        }
    }

    fn run(mut self, sh: &Shared) {
        // Stagger the first request over the ramp-up interval.
        let first = self.cfg.ramp_up.mul_f64(self.rng.next_f64());
        if !sh.sleep_until(first) {
            return;
        }
        'sessions: while !sh.stopped() {
            self.close_all();
            self.jar.clear();
            self.session += 1;
            sh.data().sessions += 1;
            self.customer = if self.rng.below(100) < 80 { Some(nurand(&mut self.rng, nurand_a_customers(self.customers), 1, self.customers)) } else { None };
            let minimum = usmd(&mut self.rng, USMD_MEAN.mul_f64(self.cfg.session_scale));
            let started = sh.start.elapsed();
            let mut state = Interaction::Home;
            let mut prev: Option<Seen> = None;
            // The page that led to the current run of Product Detail pages: TPC-W's Product
            // Detail -> Product Detail transition is a <CURL> one (Clause 1.1 chart, Clause
            // 2.14): the user goes back and picks another item on that page, as the
            // UW-Madison RBE does (EBWProdCURLTrans); a Product Detail page need not link to
            // another product.
            let mut curl: Option<Seen> = None;
            loop {
                if sh.stopped() {
                    break 'sessions;
                }
                self.seq += 1;
                let c0 = thread_cpu_ns();
                let from = if state == Interaction::ProductDetail && prev.as_ref().is_some_and(|p| p.i == Interaction::ProductDetail) { curl.as_ref() } else { prev.as_ref() };
                let r = self.interaction(state, from, sh);
                let cpu = thread_cpu_ns().saturating_sub(c0);
                let think = think_time(&mut self.rng, self.cfg.think_mean());
                let keep = self.seq > self.cfg.trace_skip;
                match r {
                    Ok(mut done) => {
                        {
                            let mut d = sh.data();
                            d.samples.push(Sample { i: state, t2: done.t2, wirt: done.wirt });
                            d.think_sum += think;
                            d.thinks += 1;
                        }
                        let n = sh.done.fetch_add(1, Ordering::Relaxed) + 1;
                        if let (Some(w), true) = (&self.cfg.trace, keep) {
                            w.write(&self.record(state, &done, None, Some(think), cpu, sh));
                        }
                        if state == Interaction::ProductDetail && prev.as_ref().is_some_and(|p| p.i != Interaction::ProductDetail) {
                            curl = prev.take();
                        }
                        prev = done.seen.take();
                        if self.cfg.max_interactions.is_some_and(|m| n >= m) {
                            sh.set_stop();
                        }
                    }
                    Err((e, t1, t_us, path)) => {
                        let t = sh.start.elapsed();
                        sh.errors.fetch_add(1, Ordering::Relaxed);
                        if let (Some(w), true) = (&self.cfg.trace, keep) {
                            let fake = Done { seen: None, wirt: t.saturating_sub(t1), t2: t, images: 0, img_cpu_ns: 0, probe_cpu_ns: 0, tiers: vec![], t_us, status: e.status, path };
                            w.write(&self.record(state, &fake, Some(format!("{:?}: {}", e.kind, e.msg)), None, cpu, sh));
                        }
                        sh.data().errors.push(ErrorRec { kind: e.kind, i: state, t, msg: e.msg });
                        // Like PHARM: back off a second, then start over with a new session.
                        let back = Duration::from_secs(1).mul_f64(self.cfg.think_scale.clamp(0.01, 1.0));
                        if !sh.sleep_until(sh.start.elapsed() + back) {
                            break 'sessions;
                        }
                        continue 'sessions;
                    }
                }
                if !sh.sleep_until(sh.start.elapsed() + think) {
                    break 'sessions;
                }
                let next = self.cbmg.next(state, &mut self.rng);
                if next == Interaction::Home && sh.start.elapsed().saturating_sub(started) >= minimum {
                    continue 'sessions;
                }
                state = next;
            }
        }
        self.close_all();
    }

    fn record(&self, i: Interaction, d: &Done, error: Option<String>, think: Option<Duration>, cpu: u64, sh: &Shared) -> TraceRecord {
        let mut tiers = d.tiers.clone();
        if let Some(b) = tiers.iter_mut().find(|t| t.tier == Tier::Browser) {
            b.cpu_ns = cpu.saturating_sub(d.probe_cpu_ns) + d.img_cpu_ns;
            b.wall_ns = d.wirt.as_nanos() as u64;
        }
        TraceRecord {
            v: TRACE_VERSION,
            source: Source::Drive,
            kind: Kind::Page,
            interaction: Some(i),
            path: d.path.clone(),
            t_us: d.t_us,
            eb: Some(self.id),
            seq: Some(self.seq),
            session: Some(self.session),
            status: d.status,
            error,
            wirt_us: Some(d.wirt.as_micros() as u64),
            think_us: think.map(|t| t.as_micros() as u64),
            images: Some(d.images),
            measured: Some(d.t2 >= sh.mi_start && d.t2 < sh.mi_end),
            tiers,
        }
    }

    fn pick<'b, T>(&mut self, xs: &'b [T]) -> Option<&'b T> {
        if xs.is_empty() {
            None
        } else {
            Some(&xs[self.rng.below(xs.len() as u64) as usize])
        }
    }

    /// The links of a page that lead to interaction `i` (resolved, on this site).
    fn links(&self, seen: &Seen, i: Interaction) -> Vec<Uri> {
        let base = seen.base();
        seen.page
            .links
            .iter()
            .filter_map(|l| base.resolve(l))
            .filter(|u| u.authority == self.base.authority && u.relative_to(&self.base.path).is_some_and(|r| glob(self.site.pattern(i), &r)))
            .collect()
    }

    /// The first form of a page whose action leads to interaction `i`, and its action URL.
    fn form(&self, seen: &Seen, i: Interaction) -> Option<(Form, Uri)> {
        let base = seen.base();
        seen.page.forms.iter().find_map(|f| {
            let u = base.resolve(&f.action)?;
            (u.authority == self.base.authority && u.relative_to(&self.base.path).is_some_and(|r| glob(self.site.pattern(i), &r))).then(|| (f.clone(), u))
        })
    }

    /// Submits a form with its own method to its own action (HTML: a GET form's fields
    /// replace the action's query).
    fn submit(f: &Form, action: Uri, fields: Vec<(String, String)>) -> Plan {
        if f.method == "post" {
            Plan { method: "POST", url: action, body: fields, note: None }
        } else {
            let mut url = action;
            url.query = Some(build_query(&fields));
            Plan { method: "GET", url, body: vec![], note: None }
        }
    }

    /// The site's entry page (its profile's `home`), resolved against the base URL.
    fn home_url(&self) -> Result<Uri, EbError> {
        self.base.resolve(&self.site.home).ok_or_else(|| bad(format!("site home '{}' is not a URL", self.site.home)))
    }

    /// Chooses the request for interaction `i` from the previous page's links and forms.
    fn plan(&mut self, i: Interaction, prev: Option<&Seen>) -> Result<Plan, EbError> {
        use Interaction::*;
        let get = |url: Uri| Plan { method: "GET", url, body: vec![], note: None };
        let Some(seen) = prev else {
            // A session starts at Home, with the customer id when the customer is known.
            let mut url = self.home_url()?;
            if let Some(c) = self.customer {
                url.query = Some(build_query(&[(self.site.field("customer").to_string(), c.to_string())]));
            }
            return Ok(get(url));
        };
        let pi = seen.i;
        let at = format!("{} page {}", pi.abbr(), seen.url.target());
        let missing = |what: String| bad(format!("{at}: {what}"));
        let site = self.site;
        let form = |i: Interaction| self.form(seen, i).ok_or_else(|| bad(format!("{at}: no form whose action is {} ({})", i.abbr(), site.pattern(i))));
        let fld = |role: &str| site.field(role).to_string();
        Ok(match i {
            Home if self.links(seen, i).is_empty() => {
                // Every TPC-W page leads Home (the CBMG has a Home transition from each);
                // a page without the link is the site's defect. The user goes to the
                // site's entry page, keeping the customer and cart ids the page carries
                // and its session path parameter (as the kits' own RBE builds its Home URL).
                let mut url = self.home_url()?;
                let last = seen.url.path.rsplit('/').next().unwrap_or("");
                if let Some((_, p)) = last.split_once(';') {
                    url.path = format!("{};{p}", url.path);
                }
                let ids: Vec<(String, String)> = [fld("cart"), fld("customer")].into_iter().filter_map(|k| page_param(seen, &k).map(|v| (k, v))).collect();
                if !ids.is_empty() {
                    url.query = Some(build_query(&ids));
                }
                let mut p = get(url);
                p.note = Some(format!("site defect: the {} page at {} has no link to HOME ({}); went to the site's entry page", pi.abbr(), seen.url.plain_path(), site.pattern(i)));
                p
            }
            Home | SearchRequest | OrderInquiry | CustomerRegistration | AdminRequest => {
                let l = self.links(seen, i).into_iter().next().ok_or_else(|| missing(format!("no link to {} ({})", i.abbr(), site.pattern(i))))?;
                get(l)
            }
            NewProducts | BestSellers => {
                // A subject uniformly from those the page offers.
                let key = fld("subject");
                let links = self.links(seen, i);
                let mut subjects: Vec<String> = links.iter().filter_map(|u| param(u, &key)).collect();
                subjects.sort();
                subjects.dedup();
                let s = self.pick(&subjects).cloned().ok_or_else(|| missing(format!("no link to {} with a {key} parameter", i.abbr())))?;
                get(links.into_iter().find(|u| param(u, &key).as_deref() == Some(s.as_str())).unwrap_or_else(|| seen.url.clone()))
            }
            ProductDetail => {
                let links = self.links(seen, i);
                let l = self.pick(&links).cloned().ok_or_else(|| missing("no link to a product (PROD)".into()))?;
                get(l)
            }
            ShoppingCart => {
                let flag = fld("add_flag");
                let is_add = |u: &Uri| param(u, &flag).is_some_and(|v| v.eq_ignore_ascii_case("Y"));
                if pi == ProductDetail {
                    let l = self.links(seen, i).into_iter().find(is_add).ok_or_else(|| missing(format!("no add-to-cart link (SHOP with {flag}=Y)")))?;
                    get(l)
                } else if let (ShoppingCart, Some((f, action))) = (pi, self.form(seen, i)) {
                    // Refresh: one line gets a new quantity; with k lines, r in U[1,k] change.
                    let prefix = fld("qty_prefix");
                    let qty: Vec<String> = f.fields.iter().filter(|(k, _)| k.starts_with(&prefix)).map(|(k, _)| k.clone()).collect();
                    let mut fields = f.fields.clone();
                    if !qty.is_empty() {
                        let r = 1 + self.rng.below(qty.len() as u64) as usize;
                        for _ in 0..r {
                            let k = self.pick(&qty).cloned().unwrap_or_default();
                            let q = 1 + self.rng.below(10);
                            if let Some(x) = fields.iter_mut().find(|(n, _)| *n == k) {
                                x.1 = q.to_string();
                            }
                        }
                    }
                    Self::submit(&f, action, fields)
                } else {
                    let l = self.links(seen, i).into_iter().find(|u| !is_add(u)).ok_or_else(|| missing("no shopping-cart link (SHOP)".into()))?;
                    get(l)
                }
            }
            SearchResults => {
                let (f, action) = form(i)?;
                let mut fields = f.fields.clone();
                let (kind, key) = match self.rng.below(3) {
                    0 => ("author", digsyl_word(nurand(&mut self.rng, nurand_a_items(self.items), 1, (self.items / 10).max(1)))),
                    1 => ("title", digsyl_word(nurand(&mut self.rng, nurand_a_items(self.items), 1, (self.items / 5).max(1)))),
                    _ => ("subject", self.pick(&SUBJECTS).unwrap_or(&"ARTS").to_string()),
                };
                let ty = fld("search_type");
                let opts = f.options(&ty);
                let value = if opts.is_empty() {
                    kind.to_string()
                } else {
                    opts.iter().find(|o| o.to_ascii_lowercase().contains(kind)).cloned().ok_or_else(|| missing(format!("the search form's {ty} offers no '{kind}' ({})", opts.join(", "))))?
                };
                set(&mut fields, &ty, &value);
                set(&mut fields, &fld("search_string"), &key);
                Self::submit(&f, action, fields)
            }
            BuyRequest => {
                let (f, action) = form(i)?;
                let mut fields = f.fields.clone();
                let known = f.field(&fld("customer")).and_then(|c| c.trim().parse::<u64>().ok());
                let ret = fld("returning");
                match known {
                    Some(c) => {
                        let un = customer_uname(c);
                        set(&mut fields, &ret, "Y");
                        for role in ["uname", "passwd"] {
                            if !f.has(&fld(role)) {
                                return Err(missing(format!("the registration form has no {} field", fld(role))));
                            }
                        }
                        set(&mut fields, &fld("uname"), &un);
                        set(&mut fields, &fld("passwd"), &un.to_lowercase());
                    }
                    None => {
                        set(&mut fields, &ret, "N");
                        let first = *self.pick(&FIRST_NAMES).unwrap_or(&"Ada");
                        let last = *self.pick(&LAST_NAMES).unwrap_or(&"Baker");
                        let country = self.pick(&COUNTRIES[..12]).map(|c| c.0).unwrap_or("United States");
                        let (y, m, d) = (1930 + self.rng.below(70) as i64, 1 + self.rng.below(12) as u32, 1 + self.rng.below(28) as u32);
                        let vals = [
                            ("fname", first.to_string()),
                            ("lname", last.to_string()),
                            ("street1", format!("{} Elm St", 1 + self.rng.below(9999))),
                            ("street2", String::new()),
                            ("city", "Springfield".to_string()),
                            ("state", "CA".to_string()),
                            ("zip", format!("{:05}", self.rng.below(100_000))),
                            ("country", country.to_string()),
                            ("phone", format!("{:010}", self.rng.below(10_000_000_000))),
                            ("email", format!("{}.{}@example.com", first.to_lowercase(), last.to_lowercase())),
                            ("birthdate", format_date(&site.formats.birthdate, y, m, d)),
                            ("data", "emulated browser".to_string()),
                        ];
                        for (role, v) in vals {
                            // Only the fields the form has.
                            if f.has(&fld(role)) {
                                set(&mut fields, &fld(role), &v);
                            }
                        }
                    }
                }
                Self::submit(&f, action, fields)
            }
            BuyConfirm => {
                let (f, action) = form(i)?;
                let mut fields = f.fields.clone();
                let choose = |eb: &mut Self, role: &str, fallback: &[&str]| -> String {
                    let opts = f.options(&fld(role));
                    if opts.is_empty() {
                        eb.pick(fallback).map(|s| s.to_string()).unwrap_or_default()
                    } else {
                        eb.pick(opts).cloned().unwrap_or_default()
                    }
                };
                let cc = choose(self, "cc_type", &CC_TYPES);
                set(&mut fields, &fld("cc_type"), &cc);
                let num: String = (0..16).map(|_| (b'0' + self.rng.below(10) as u8) as char).collect();
                set(&mut fields, &fld("cc_number"), &num);
                if f.has(&fld("cc_name")) {
                    let name = format!("{} {}", self.pick(&FIRST_NAMES).unwrap_or(&"Ada"), self.pick(&LAST_NAMES).unwrap_or(&"Baker"));
                    set(&mut fields, &fld("cc_name"), &name);
                }
                let (y, m, d) = date_in(1 + self.rng.below(730));
                set(&mut fields, &fld("cc_expiry"), &format_date(&site.formats.cc_expiry, y, m, d));
                let ship = choose(self, "shipping", &SHIP_TYPES);
                set(&mut fields, &fld("shipping"), &ship);
                if self.rng.below(100) < 5 {
                    let country = self.pick(&COUNTRIES).map(|c| c.0).unwrap_or("Canada");
                    for (role, v) in [
                        ("ship_street1", format!("{} Harbor Rd", 1 + self.rng.below(999))),
                        ("ship_street2", String::new()),
                        ("ship_city", "Kingston".into()),
                        ("ship_state", "ON".into()),
                        ("ship_zip", format!("{:05}", self.rng.below(100_000))),
                        ("ship_country", country.into()),
                    ] {
                        if f.has(&fld(role)) {
                            set(&mut fields, &fld(role), &v);
                        }
                    }
                }
                Self::submit(&f, action, fields)
            }
            OrderDisplay => {
                let (f, action) = form(i)?;
                let mut fields = f.fields.clone();
                let shown = f.field(&fld("uname")).map(str::trim).filter(|s| !s.is_empty()).map(str::to_string);
                let un = match shown {
                    Some(u) => u,
                    None => {
                        let c = match f.field(&fld("customer")).and_then(|c| c.trim().parse::<u64>().ok()) {
                            Some(c) => c,
                            None => nurand(&mut self.rng, nurand_a_customers(self.customers), 1, self.customers),
                        };
                        customer_uname(c)
                    }
                };
                set(&mut fields, &fld("uname"), &un);
                set(&mut fields, &fld("passwd"), &un.to_lowercase());
                Self::submit(&f, action, fields)
            }
            AdminConfirm => {
                // The new cost; the new image and thumbnail keep what the form shows, or,
                // where it leaves them empty, a random item's (the profile's naming).
                let (f, action) = form(i)?;
                let mut fields = f.fields.clone();
                let id = 1 + self.rng.below(self.items.max(1));
                for (name, v) in admin_images(&f, site, id).map_err(missing)? {
                    set(&mut fields, &name, &v);
                }
                let cost_f = fld("new_cost");
                if !f.has(&cost_f) {
                    return Err(missing(format!("the admin form has no {cost_f} field")));
                }
                let srp = f.field("I_SRP").or(f.field(&cost_f)).and_then(|v| v.trim().trim_start_matches('$').parse::<f64>().ok()).filter(|x| x.is_finite() && *x > 0.0).unwrap_or(10.0);
                let cost = srp * (1.0 - self.rng.below(6) as f64 / 10.0);
                set(&mut fields, &cost_f, &format!("{cost:.*}", site.formats.cost_decimals as usize));
                Self::submit(&f, action, fields)
            }
        })
    }

    fn trace_headers(&self) -> Vec<(&'static str, String)> {
        if self.cfg.trace.is_some() && self.cfg.probe.is_none() {
            vec![("X-Interlab-Trace", "1".into()), ("X-Interlab-Req", format!("{}.{}", self.id, self.seq))]
        } else {
            vec![]
        }
    }

    /// Sends the page request (following up to 5 redirects), keeping cookies. Returns the
    /// response, the final URL and each request's bytes with its response.
    fn fetch_page(&mut self, plan: &Plan, headers: &[(&'static str, String)]) -> Result<(Response, Uri, Vec<(usize, usize)>), EbError> {
        let mut method = plan.method;
        let mut url = plan.url.clone();
        let mut body = if method == "POST" { build_query(&plan.body).into_bytes() } else { Vec::new() };
        let mut wire = Vec::new();
        for hop in 0..=5 {
            if url.authority != self.base.authority {
                return Err(bad(format!("{} leads off the site ({}), not followed", url.target(), url.authority)));
            }
            let mut h = headers.to_vec();
            if let Some(c) = self.jar.header(&url.plain_path()) {
                h.push(("Cookie", c));
            }
            let (resp, sent) = self.main.request(method, &url.target(), &h, &body).map_err(|e| EbError { kind: ErrorKind::of(&e), msg: format!("{method} {}: {e}", url.target()), status: 0 })?;
            wire.push((sent, resp.bytes));
            for c in resp.headers_all("set-cookie") {
                self.jar.set(c, &url.plain_path());
            }
            let redirect = matches!(resp.status, 301 | 302 | 303 | 307 | 308);
            match (redirect, resp.header("location").and_then(|l| url.resolve(l))) {
                (true, Some(next)) if hop < 5 => {
                    if resp.status == 303 || (method == "POST" && resp.status <= 302) {
                        method = "GET";
                        body.clear();
                    }
                    url = next;
                }
                _ => return Ok((resp, url, wire)),
            }
        }
        Err(bad(format!("more than 5 redirects from {}", plan.url.target())))
    }

    /// Runs one interaction: page request, checks, images. Errors carry T1, its start and
    /// the path asked for.
    fn interaction(&mut self, i: Interaction, prev: Option<&Seen>, sh: &Shared) -> Result<Done, (EbError, Duration, u64, String)> {
        let t_us = now_us();
        let t1 = sh.start.elapsed();
        let plan = self.plan(i, prev).map_err(|e| (e, t1, t_us, String::new()))?;
        if let Some(msg) = &plan.note {
            sh.data().notes.push(ErrorRec { kind: ErrorKind::BadHtml, i, t: t1, msg: msg.clone() });
        }
        let asked = plan.url.plain_path();
        let fail = |e: EbError| (e, t1, t_us, asked.clone());
        let headers = self.trace_headers();
        let probe = self.cfg.probe.clone();
        let mut probe_cpu_ns = 0;
        let s0 = probe.as_ref().map(|p| timed_sample(p.as_ref(), &mut probe_cpu_ns));
        let mut browser = TierTrace::new(Tier::Browser);
        let mut web = TierTrace::new(Tier::Web);
        let mut below: Vec<TierTrace> = Vec::new();
        let (resp, url, wire) = self.fetch_page(&plan, &headers).map_err(&fail)?;
        let s1 = probe.as_ref().map(|p| timed_sample(p.as_ref(), &mut probe_cpu_ns));
        for (sent, got) in &wire {
            browser.requests += 1;
            browser.to_next.add(*sent as u64);
            browser.from_next.add(*got as u64);
            sh.data().bytes += *got as u64;
        }
        absorb(&resp, &mut web, &mut below);
        let shown = url.target();
        if resp.status != 200 {
            let detail = String::from_utf8_lossy(&resp.body).chars().filter(|c| !c.is_control()).take(160).collect::<String>();
            let msg = match detail.find("class=\"err\">") {
                Some(k) => detail[k + 12..].split('<').next().unwrap_or("").to_string(),
                None => String::new(),
            };
            return Err(fail(EbError { kind: ErrorKind::Http, msg: format!("HTTP {} for {} {shown} {msg}", resp.status, plan.method), status: resp.status }));
        }
        let ctype = resp.header("content-type").unwrap_or("text/html");
        if !ctype.trim().to_ascii_lowercase().starts_with("text/html") {
            return Err(fail(bad(format!("{shown} returned {ctype}, not HTML"))));
        }
        let html = String::from_utf8_lossy(&resp.body);
        let page = scan(&html);
        let got = url.relative_to(&self.base.path).and_then(|r| self.site.recognise(&r));
        if got != Some(i) {
            let what = got.map(|g| format!("a {} page", g.abbr())).unwrap_or_else(|| "a page the site profile does not know".into());
            return Err(fail(bad(format!("asked for {} but {shown} is {what}", i.abbr()))));
        }
        if !page.complete {
            return Err(fail(EbError {
                kind: ErrorKind::Truncated,
                msg: format!("site defect: the {} page at {shown} is truncated ({} bytes, no closing </html>)", i.abbr(), resp.body.len()),
                status: 200,
            }));
        }
        if self.site.marker && page.interaction.as_deref() != Some(i.abbr()) {
            return Err(fail(bad(format!("asked for {} but {shown} is marked {}", i.abbr(), page.interaction.as_deref().unwrap_or("(no tpcw-interaction marker)")))));
        }
        let seen = Seen { i, url, page };
        // Embedded images, re-fetched every time (no cache), over parallel connections;
        // images on another host are not fetched (the emulator talks to one site).
        let ibase = seen.base();
        let imgs: Vec<Uri> = seen.page.images.iter().filter_map(|s| ibase.resolve(s)).filter(|u| u.authority == self.base.authority).collect();
        let cookie = self.jar.header(&self.base.path);
        let k = self.imgs.len().min(imgs.len()).max(1);
        let results: Vec<Result<ImageLane, EbError>> = if imgs.is_empty() {
            vec![]
        } else {
            let mut hdr = headers.clone();
            if let Some(c) = cookie {
                hdr.push(("Cookie", c));
            }
            std::thread::scope(|s| {
                let mut hs = Vec::new();
                for (c, client) in self.imgs.iter_mut().take(k).enumerate() {
                    let mine: Vec<&Uri> = imgs.iter().skip(c).step_by(k).collect();
                    let hdr = &hdr;
                    hs.push(s.spawn(move || -> Result<ImageLane, EbError> {
                        let c0 = thread_cpu_ns();
                        let mut out = Vec::new();
                        for src in mine {
                            let t = src.target();
                            let (r, n) = client.request("GET", &t, hdr, b"").map_err(|e| EbError { kind: ErrorKind::of(&e), msg: format!("image {t}: {e}"), status: 0 })?;
                            if r.status != 200 {
                                return Err(EbError { kind: ErrorKind::Http, msg: format!("HTTP {} for image {t}", r.status), status: r.status });
                            }
                            if !is_image(&r) {
                                return Err(bad(format!("image {t} is {}, not an image", r.header("content-type").unwrap_or("untyped"))));
                            }
                            out.push((r, n));
                        }
                        Ok((out, thread_cpu_ns().saturating_sub(c0)))
                    }));
                }
                hs.into_iter().map(|h| h.join().unwrap_or_else(|_| Err(bad("image fetch thread failed".into())))).collect()
            })
        };
        let mut n_img = 0u32;
        let mut img_cpu_ns = 0;
        for r in results {
            let (v, cpu) = r.map_err(&fail)?;
            img_cpu_ns += cpu;
            for (resp, sent) in v {
                n_img += 1;
                browser.requests += 1;
                browser.to_next.add(sent as u64);
                browser.from_next.add(resp.bytes as u64);
                sh.data().bytes += resp.bytes as u64;
                absorb(&resp, &mut web, &mut below);
            }
        }
        let t2 = sh.start.elapsed();
        sh.data().images += n_img as u64;
        let mut tiers = vec![browser];
        if let (Some(p), Some(s0), Some(s1)) = (&probe, &s0, &s1) {
            let s2 = timed_sample(p.as_ref(), &mut probe_cpu_ns);
            let (req, resp_bytes) = wire.last().map(|w| (w.0 as u64, w.1 as u64)).unwrap_or((0, 0));
            tiers.extend(p.tiers(s0, s1, &s2, req, resp_bytes));
        } else if self.cfg.trace.is_some() {
            tiers.push(web);
            tiers.extend(below);
        }
        let path = seen.url.plain_path();
        Ok(Done { seen: Some(seen), wirt: t2 - t1, t2, images: n_img, img_cpu_ns, probe_cpu_ns, tiers, t_us, status: 200, path })
    }
}

fn set(fields: &mut Vec<(String, String)>, k: &str, v: &str) {
    match fields.iter_mut().find(|(n, _)| n == k) {
        Some(x) => x.1 = v.to_string(),
        None => fields.push((k.to_string(), v.to_string())),
    }
}

/// Adds the server's `X-Interlab-Trace` shares of one response.
fn absorb(r: &Response, web: &mut TierTrace, below: &mut Vec<TierTrace>) {
    let Some(h) = r.header("x-interlab-trace") else { return };
    let Ok(shares) = serde_json::from_str::<Vec<TierTrace>>(h) else { return };
    for s in shares {
        if s.tier == Tier::Web {
            web.merge(&s);
        } else if let Some(b) = below.iter_mut().find(|b| b.tier == s.tier) {
            b.merge(&s);
        } else {
            below.push(s);
        }
    }
}

/// A probe's counters, adding this thread's CPU time spent reading them to `acc` (ns).
fn timed_sample(p: &dyn Probe, acc: &mut u64) -> Vec<u64> {
    let c = thread_cpu_ns();
    let s = p.sample();
    *acc += thread_cpu_ns().saturating_sub(c);
    s
}

/// The new image and thumbnail an Admin Confirm submits where the admin form leaves them
/// empty: item `id`'s, named by the profile's [`crate::site::Formats::new_image`] and
/// `new_thumbnail` (a form that fills them keeps its values).
fn admin_images(f: &Form, site: &Site, id: u64) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    for (role, template) in [("new_image", &site.formats.new_image), ("new_thumbnail", &site.formats.new_thumbnail)] {
        let name = site.field(role).to_string();
        if f.has(&name) && f.field(&name).is_none_or(|v| v.trim().is_empty()) {
            let Some(t) = template else {
                return Err(format!("the admin form leaves {name} empty and site profile {} has no [formats] {role}", site.name));
            };
            out.push((name, crate::site::image_name(t, id)));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn test_config(site: &str) -> DriveConfig {
        DriveConfig {
            url: Url::parse("http://127.0.0.1:1/tpcw/").unwrap(),
            browsers: 1,
            mix: Mix::Browsing,
            ramp_up: Duration::ZERO,
            duration: Duration::ZERO,
            ramp_down: Duration::ZERO,
            think_scale: 1.0,
            session_scale: 1.0,
            seed: 1,
            timeout: Duration::from_secs(1),
            image_connections: 1,
            items: Some(1000),
            customers: Some(2880),
            trace: None,
            wait: Duration::ZERO,
            site: Arc::new(Site::builtin(site).unwrap()),
            probe: None,
            trace_skip: 0,
            max_interactions: None,
        }
    }

    #[test]
    fn home_from_a_page_without_a_home_link_is_the_entry_page_with_the_pages_ids_and_a_reported_defect() {
        let cfg = test_config("servlet");
        let mut eb = Eb::new(0, &cfg, 1000, 2880);
        // The kit's Buy Request page: a form to Buy Confirm, cart and order-status links, no Home.
        let html = r#"<FORM ACTION="TPCW_buy_confirm_servlet;jsessionid=AB" METHOD="GET"><INPUT TYPE=HIDDEN NAME="SHOPPING_ID" value = "5"><INPUT TYPE=HIDDEN NAME="C_ID" value = "7"></FORM><A HREF="TPCW_order_inquiry_servlet;jsessionid=AB?C_ID=7&SHOPPING_ID=5">s</A></BODY></HTML>"#;
        let seen = Seen { i: Interaction::BuyRequest, url: Uri::parse("http://127.0.0.1:1/tpcw/TPCW_buy_request_servlet;jsessionid=AB?RETURNING_FLAG=Y").unwrap(), page: scan(html) };
        let p = eb.plan(Interaction::Home, Some(&seen)).unwrap();
        assert_eq!((p.method, p.url.path.as_str(), p.url.query.as_deref()), ("GET", "/tpcw/TPCW_home_interaction;jsessionid=AB", Some("SHOPPING_ID=5&C_ID=7")));
        assert!(p.note.as_deref().is_some_and(|n| n.contains("site defect") && n.contains("BUYR page")), "{:?}", p.note);
        // A page with the link: the link, no note.
        let html = r#"<A HREF="TPCW_home_interaction;jsessionid=AB?SHOPPING_ID=9">h</A></BODY></HTML>"#;
        let seen = Seen { i: Interaction::SearchRequest, url: Uri::parse("http://127.0.0.1:1/tpcw/TPCW_search_request_servlet").unwrap(), page: scan(html) };
        let p = eb.plan(Interaction::Home, Some(&seen)).unwrap();
        assert_eq!((p.url.path.as_str(), p.url.query.as_deref(), p.note), ("/tpcw/TPCW_home_interaction;jsessionid=AB", Some("SHOPPING_ID=9"), None));
    }

    #[test]
    fn admin_confirm_fills_only_the_image_fields_the_form_leaves_empty() {
        let form = |img: &str| Form { action: "a".into(), method: "get".into(), fields: vec![("I_ID".into(), "7".into()), ("I_NEW_COST".into(), String::new()), ("I_NEW_IMAGE".into(), img.into()), ("I_NEW_THUMBNAIL".into(), String::new())], choices: vec![] };
        let servlet = Site::builtin("servlet").unwrap();
        assert_eq!(admin_images(&form(""), &servlet, 130).unwrap(), vec![("I_NEW_IMAGE".to_string(), "img30/image_130.gif".to_string()), ("I_NEW_THUMBNAIL".to_string(), "img30/thumb_130.gif".to_string())]);
        assert_eq!(admin_images(&form("x/kept.gif"), &servlet, 130).unwrap(), vec![("I_NEW_THUMBNAIL".to_string(), "img30/thumb_130.gif".to_string())]);
        let e = admin_images(&form(""), &Site::builtin("interlab").unwrap(), 1).unwrap_err();
        assert!(e.contains("leaves I_NEW_IMAGE empty") && e.contains("[formats] new_image"), "{e}");
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("60s").unwrap(), Duration::from_secs(60));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("1.5").unwrap(), Duration::from_millis(1500));
        for bad in ["", "x", "-1s", "1y", "nan", "1e99"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn percentiles_by_nearest_rank() {
        let v: Vec<f64> = (1..=100).map(|x| x as f64).collect();
        assert_eq!(percentile(&v, 50.0), Some(50.0));
        assert_eq!(percentile(&v, 90.0), Some(90.0));
        assert_eq!(percentile(&v, 99.0), Some(99.0));
        assert_eq!(percentile(&[7.0], 99.0), Some(7.0));
        assert_eq!(percentile(&[], 50.0), None);
    }

    #[test]
    fn default_phases() {
        assert_eq!(DriveConfig::default_ramp_up(1.0), Duration::from_secs(20));
        assert_eq!(DriveConfig::default_ramp_down(1.0), Duration::from_secs(5));
        assert_eq!(DriveConfig::default_ramp_up(0.01), Duration::from_secs(1));
    }

    #[test]
    fn unreachable_bookstore_is_a_clear_error() {
        let url = Url::parse("http://127.0.0.1:1/").unwrap();
        let e = fetch_info(&url, Duration::from_secs(2)).unwrap_err();
        assert!(e.contains("cannot reach the bookstore at http://127.0.0.1:1/"), "{e}");
    }
}

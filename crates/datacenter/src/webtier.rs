//! The web tier: an HTTP/1.1 server that serves the images itself and forwards the 14
//! dynamic pages to the application tier over a pool of framed connections.
//!
//! Routes: `/` and `/tpcw/<page>` (GET or POST) to the application tier; `/img/...` images
//! (GET); `/tpcw/info` the database scale as JSON; anything else 404.
//! A request with `X-Interlab-Trace: 1` gets an `X-Interlab-Trace` response header holding
//! the JSON array of tier shares ([`TierTrace`]: web, then app and db for pages), and
//! `X-Interlab-Req: EB.SEQ` is copied into the web tier's own trace records.

use crate::apptier::{AppReq, AppResp};
use crate::cpu::thread_cpu_ns;
use crate::http::{read_request, write_response, write_response_framed, Framing, HttpError, HttpStream, Request};
use crate::strict::{Route, Strict};
use crate::image;
use crate::tpcw::Interaction;
use crate::trace::{now_us, Kind, Source, Tier, TierTrace, TraceRecord, TraceWriter, TRACE_VERSION};
use crate::wire::{Addr, Listener, Pool};
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Web tier settings.
#[derive(Clone)]
pub struct WebConfig {
    pub listen: Addr,
    pub app_tier: Addr,
    /// Connections to the application tier, at most.
    pub app_connections: usize,
    /// Browser connections served at once (more get 503).
    pub max_connections: usize,
    /// How long a kept-alive browser connection may sit idle between requests.
    pub idle_timeout: Duration,
    /// From a request's first byte, how long its head and body may take to arrive whole
    /// (a deadline, not a per-read timeout: a client that drips bytes is cut off).
    pub request_timeout: Duration,
    /// Browser connections one client address may hold at once (more get 503).
    pub max_per_client: usize,
    pub trace: Option<TraceWriter>,
    pub quiet: bool,
    /// Serve the store as a strict servlet-style site (`serve --strict`).
    pub strict: Option<Arc<Strict>>,
}

/// Image bytes cached in memory, at most.
pub const IMAGE_CACHE_BYTES: usize = 64 << 20;

/// Cached images by path, and their total bytes.
type ImageCache = (HashMap<String, Arc<Vec<u8>>>, usize);

struct Web {
    cfg: WebConfig,
    pool: Pool,
    images: Mutex<ImageCache>,
}

impl Web {
    fn image(&self, path: &str) -> Option<Arc<Vec<u8>>> {
        if let Some(b) = self.images.lock().ok()?.0.get(path) {
            return Some(b.clone());
        }
        let b = Arc::new(match path.strip_prefix("strict-gif:").or(path.strip_prefix("strict-jpg:")) {
            // The strict site's GIF / JPEG of the PNG's size.
            Some(png) => {
                let n = self.image(png)?.len();
                let seed = png.bytes().fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(b as u64));
                if path.starts_with("strict-gif:") { image::gif(seed, n) } else { image::jpeg(n) }
            }
            None => image::for_path(path)?,
        });
        if let Ok(mut g) = self.images.lock() {
            if g.1 + b.len() > IMAGE_CACHE_BYTES {
                g.0.clear();
                g.1 = 0;
            }
            g.1 += b.len();
            g.0.insert(path.to_string(), b.clone());
        }
        Some(b)
    }
}

/// What a request produced.
struct Out {
    status: u16,
    ctype: String,
    body: Arc<Vec<u8>>,
    kind: Kind,
    interaction: Option<Interaction>,
    /// app and db shares (pages).
    below: Vec<TierTrace>,
    web: TierTrace,
    extra: Vec<(&'static str, String)>,
}

fn plain(status: u16, msg: &str) -> Out {
    Out {
        status,
        ctype: "text/plain; charset=utf-8".into(),
        body: Arc::new(format!("{msg}\n").into_bytes()),
        kind: Kind::Page,
        interaction: None,
        below: vec![],
        web: TierTrace::new(Tier::Web),
        extra: vec![],
    }
}

fn route(web: &Web, req: &Request, trace: bool) -> Out {
    let mut me = TierTrace::new(Tier::Web);
    if req.path.starts_with("/img/") {
        if req.method != "GET" {
            let mut o = plain(405, "images are GET only");
            o.extra.push(("Allow", "GET".into()));
            return o;
        }
        return match web.image(&req.path) {
            Some(b) => Out { status: 200, ctype: "image/png".into(), body: b, kind: Kind::Image, interaction: None, below: vec![], web: me, extra: vec![("Cache-Control", "max-age=3600".into())] },
            None => {
                let mut o = plain(404, "no such image");
                o.kind = Kind::Image;
                o
            }
        };
    }
    let info = req.path == "/tpcw/info";
    let interaction = Interaction::from_path(&req.path);
    if !info && interaction.is_none() {
        return plain(404, &format!("no page at {}; the bookstore starts at /", req.path));
    }
    if req.method != "GET" && req.method != "POST" {
        let mut o = plain(405, "use GET or POST");
        o.extra.push(("Allow", "GET, POST".into()));
        return o;
    }
    let areq = AppReq { v: 1, op: if info { "info".into() } else { "page".into() }, interaction, params: req.params(), trace };
    match web.pool.call::<_, AppResp>(&areq, b"") {
        Ok(ex) => {
            me.to_next.add(ex.sent as u64);
            me.from_next.add(ex.received as u64);
            Out { status: ex.header.status, ctype: ex.header.content_type, body: Arc::new(ex.body), kind: Kind::Page, interaction, below: ex.header.tiers, web: me, extra: vec![] }
        }
        Err(e) => {
            if !web.cfg.quiet {
                eprintln!("interlab datacenter web: application tier: {e}");
            }
            let mut o = plain(502, &format!("application tier unavailable: {e}"));
            o.interaction = interaction;
            o
        }
    }
}

/// The strict site (see [`crate::strict`]): returns what to send and how to frame it.
fn strict_route(web: &Web, st: &Strict, req: &Request, trace: bool) -> (Out, Framing) {
    match st.route(&req.path) {
        Route::NotFound => (plain(404, &format!("no page at {}; the store starts at /tpcw/TPCW_home_interaction", req.path)), Framing::Length),
        Route::Image(png, jpeg) => {
            if req.method != "GET" {
                let mut o = plain(405, "images are GET only");
                o.extra.push(("Allow", "GET".into()));
                return (o, Framing::Length);
            }
            let key = format!("{}{png}", if jpeg { "strict-jpg:" } else { "strict-gif:" });
            match web.image(&key) {
                Some(b) => {
                    let ctype = if jpeg { "image/jpeg" } else { "image/gif" };
                    let o = Out { status: 200, ctype: ctype.into(), body: b, kind: Kind::Image, interaction: None, below: vec![], web: TierTrace::new(Tier::Web), extra: vec![] };
                    // JPEGs close-delimited, GIFs with a length.
                    (o, if jpeg { Framing::Close } else { Framing::Length })
                }
                None => {
                    let mut o = plain(404, "no such image");
                    o.kind = Kind::Image;
                    (o, Framing::Length)
                }
            }
        }
        Route::Page(i) => {
            if req.method != "GET" {
                let mut o = plain(405, "this site's servlets answer GET only");
                o.extra.push(("Allow", "GET".into()));
                o.interaction = Some(i);
                return (o, Framing::Chunked(4096));
            }
            let (sid, new) = match st.known(&req.path, req.header("cookie")) {
                Some(id) => (id, false),
                None if i == Interaction::Home => (st.open(), true),
                None => {
                    let mut o = plain(400, &format!("no session: {} needs the session id (by {})", i.name(), st.sessions.name()));
                    o.interaction = Some(i);
                    return (o, Framing::Chunked(4096));
                }
            };
            let mut inner = req.clone();
            inner.path = i.path().to_string();
            let mut o = route(web, &inner, trace);
            if o.ctype.starts_with("text/html") {
                o.body = Arc::new(st.rewrite(&String::from_utf8_lossy(&o.body), &sid).into_bytes());
            }
            if new && st.sessions == crate::strict::Sessions::Cookie {
                o.extra.push(("Set-Cookie", format!("JSESSIONID={sid}; Path=/tpcw; HttpOnly")));
            }
            (o, Framing::Chunked(4096))
        }
    }
}

/// Splits `X-Interlab-Req: EB.SEQ`.
fn req_id(req: &Request) -> (Option<u32>, Option<u64>) {
    match req.header("x-interlab-req").and_then(|v| v.split_once('.')) {
        Some((e, s)) => (e.parse().ok(), s.parse().ok()),
        None => (None, None),
    }
}

fn connection(web: &Web, conn: crate::wire::Conn) {
    let idle = web.cfg.idle_timeout;
    let _ = conn.set_timeouts(Some(idle), Some(idle));
    let mut s = HttpStream::new(conn);
    loop {
        // Between requests a kept-alive connection may idle; once a request starts, all of
        // it must arrive within the request deadline.
        s.set_deadline(None, Some(idle));
        if s.wait_for_data().is_err() {
            return;
        }
        s.set_deadline(Some(Instant::now() + web.cfg.request_timeout), None);
        let c0 = thread_cpu_ns();
        let req = match read_request(&mut s) {
            Ok(r) => r,
            Err(HttpError::Bad(code, msg)) => {
                let _ = write_response(&mut s.conn, code, "text/plain; charset=utf-8", &[], format!("{msg}\n").as_bytes(), false);
                return;
            }
            Err(HttpError::Timeout) => {
                let msg = format!("request not received whole within {} s\n", web.cfg.request_timeout.as_secs_f64());
                let _ = write_response(&mut s.conn, 408, "text/plain; charset=utf-8", &[], msg.as_bytes(), false);
                return;
            }
            Err(_) => return,
        };
        s.set_deadline(None, Some(idle));
        let t0 = Instant::now();
        let t_us = now_us();
        let client_trace = req.header("x-interlab-trace") == Some("1");
        let trace = client_trace || web.cfg.trace.is_some();
        let (mut out, framing) = match &web.cfg.strict {
            Some(st) => strict_route(web, st, &req, trace),
            None => (route(web, &req, trace), Framing::Length),
        };
        out.web.requests = 1;
        out.web.cpu_ns = thread_cpu_ns().saturating_sub(c0);
        out.web.wall_ns = t0.elapsed().as_nanos() as u64;
        let mut tiers = vec![out.web.clone()];
        tiers.extend(out.below.iter().cloned());
        let mut extra = out.extra.clone();
        if client_trace {
            extra.push(("X-Interlab-Trace", serde_json::to_string(&tiers).unwrap_or_default()));
        }
        let keep = req.keep_alive() && framing != Framing::Close;
        let wrote = write_response_framed(&mut s.conn, out.status, &out.ctype, &extra, &out.body, keep, framing);
        if let Some(w) = &web.cfg.trace {
            let (eb, seq) = req_id(&req);
            w.write(&TraceRecord {
                v: TRACE_VERSION,
                source: Source::Serve,
                kind: out.kind,
                interaction: out.interaction,
                path: req.path.clone(),
                t_us,
                eb,
                seq,
                session: None,
                status: out.status,
                error: if out.status >= 400 { Some(format!("HTTP {}", out.status)) } else { None },
                wirt_us: None,
                think_us: None,
                images: None,
                measured: None,
                tiers,
            });
        }
        if wrote.is_err() || !keep {
            return;
        }
    }
}

/// Listens and serves until the process ends.
pub fn serve(cfg: WebConfig, ready: impl FnOnce(&Addr)) -> Result<(), String> {
    let pool = Pool::new(cfg.app_tier.clone(), cfg.app_connections, Duration::from_secs(60));
    let listener = Listener::bind(&cfg.listen)?;
    ready(&listener.local_addr());
    let web = Arc::new(Web { cfg: cfg.clone(), pool, images: Mutex::new((HashMap::new(), 0)) });
    let active = Arc::new(AtomicUsize::new(0));
    let per_client: Arc<Mutex<HashMap<IpAddr, usize>>> = Arc::new(Mutex::new(HashMap::new()));
    loop {
        let conn = match listener.accept() {
            Ok(c) => c,
            Err(e) => {
                eprintln!("interlab datacenter web: accept: {e}");
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
        };
        if active.load(Ordering::SeqCst) >= cfg.max_connections {
            let mut c = conn;
            let _ = c.set_timeouts(Some(Duration::from_millis(100)), Some(Duration::from_millis(100)));
            let _ = write_response(&mut c, 503, "text/plain", &[], b"too many connections\n", false);
            continue;
        }
        let ip = match &conn {
            crate::wire::Conn::Tcp(s) => s.peer_addr().ok().map(|a| a.ip().to_canonical()),
            crate::wire::Conn::Unix(_) => None,
        };
        if let Some(ip) = ip {
            let mut m = per_client.lock().unwrap_or_else(|e| e.into_inner());
            let n = m.entry(ip).or_insert(0);
            if *n >= cfg.max_per_client.max(1) {
                drop(m);
                let mut c = conn;
                let _ = c.set_timeouts(Some(Duration::from_millis(100)), Some(Duration::from_millis(100)));
                let msg = format!("too many connections from {ip} (at most {} per client address)\n", cfg.max_per_client.max(1));
                let _ = write_response(&mut c, 503, "text/plain", &[], msg.as_bytes(), false);
                continue;
            }
            *n += 1;
        }
        active.fetch_add(1, Ordering::SeqCst);
        let (web, done, pc) = (web.clone(), active.clone(), per_client.clone());
        let release = move || {
            done.fetch_sub(1, Ordering::SeqCst);
            if let Some(ip) = ip {
                let mut m = pc.lock().unwrap_or_else(|e| e.into_inner());
                if let Some(n) = m.get_mut(&ip) {
                    *n -= 1;
                    if *n == 0 {
                        m.remove(&ip);
                    }
                }
            }
        };
        let release = Arc::new(Mutex::new(Some(release)));
        let r2 = release.clone();
        let spawned = std::thread::Builder::new().name("web-conn".into()).stack_size(512 * 1024).spawn(move || {
            connection(&web, conn);
            if let Some(f) = r2.lock().ok().and_then(|mut g| g.take()) {
                f();
            }
        });
        if let Err(e) = spawned {
            eprintln!("interlab datacenter web: cannot start a connection thread: {e}");
            if let Some(f) = release.lock().ok().and_then(|mut g| g.take()) {
                f();
            }
        }
    }
}

/// Default for [`WebConfig::max_per_client`]: three quarters of the connections, so one
/// address can never take the last quarter (and at least one).
pub fn default_max_per_client(max_connections: usize) -> usize {
    (max_connections.saturating_mul(3) / 4).max(1)
}

//! Workloads of the replay: TPC-W browsers (CBMG, think times, sessions, pages with their
//! images, work from a trace table), static content through a proxy (the sdp study's
//! Openload clients), and a SPECweb2009-like e-commerce load (SSL, JSP pages, a BeSim
//! back end).
//!
//! Tier and link numbering: TPC-W and SPECweb: tiers 0 client, 1 web, 2 app (BeSim),
//! 3 db; links 0 client-web, 1 web-app, 2 app-db. Static: tiers 0 client, 1 proxy, 2 web;
//! links 0 client-proxy, 1 proxy-web.

use crate::engine::{Program, Step, Workload};
use crate::table::{Exchange, InteractionTable, PageSample};
use interlab_tpcw::tpcw::{Cbmg, Interaction, Mix};
use interlab_kernel::{Rng, Time, PS_PER_S};
use std::sync::Arc;

/// Think time: TPC-W's negative exponential truncated at 10 means, mean in ps.
pub fn neg_exp(rng: &mut Rng, mean: Time) -> Time {
    let r = 1.0 - rng.next_f64();
    ((-r.ln()).min(10.0) * mean as f64) as Time
}

/// TPC-W browsers.
#[derive(Clone)]
pub struct Tpcw {
    pub table: Arc<InteractionTable>,
    pub cbmg: Cbmg,
    /// Think-time mean, ps; `None`: replay the trace's recorded think times.
    pub think_mean: Option<Time>,
    /// User-session-minimum-duration mean, ps.
    pub usmd_mean: Time,
    /// Parallel image connections per browser (PHARM's 4).
    pub image_lanes: u32,
    /// Open the client connections afresh at each session start (dedicated client pools).
    pub connect_per_session: bool,
    /// Charge the trace's browser CPU on the client tier: when the browsers share a host
    /// with the servers. On dedicated client machines the emulator's own work is not part
    /// of the measured system (TPC-W requires the RBE's overhead to be negligible).
    pub browser_cpu: bool,
    /// SSL on the secure interactions (the live bookstore serves plain HTTP, so its traces
    /// carry no SSL work): added web-tier CPU.
    pub ssl: Option<TpcwSsl>,
    state: Vec<Browser>,
}

/// One emulated browser's state.
#[derive(Debug, Clone, Copy, Default)]
struct Browser {
    /// Current interaction (None before the first).
    at: Option<Interaction>,
    /// When the user session may end, ps.
    session_end: Time,
    /// The last sample's recorded think time, us.
    think_us: Option<u64>,
    /// An SSL session is established in this user session.
    ssl_up: bool,
}

/// SSL costs on TPC-W's secure pages at the web tier.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TpcwSsl {
    /// Bulk encryption and MAC of the request and the page, ns per byte.
    pub ns_per_byte: f64,
    /// A full handshake (the server's private-key operation), ns: at the first secure page of
    /// each user session; later ones resume the SSL session.
    pub handshake_ns: u64,
}

impl Tpcw {
    pub fn new(table: Arc<InteractionTable>, mix: Mix, browsers: u32, think_mean: Option<Time>, usmd_mean: Time) -> Tpcw {
        Tpcw {
            table,
            cbmg: mix.cbmg(),
            think_mean,
            usmd_mean,
            image_lanes: 4,
            connect_per_session: true,
            browser_cpu: false,
            ssl: None,
            state: vec![Browser::default(); browsers as usize],
        }
    }
}

fn split(total: u64, parts: usize) -> u64 {
    total / parts.max(1) as u64
}

/// The work of one page: its tiers' CPU (ns) and the messages between them.
#[derive(Debug, Clone, Copy)]
pub struct PageWork<'a> {
    pub browser_cpu_ns: u64,
    pub web_cpu_ns: u64,
    pub app_cpu_ns: u64,
    pub db_cpu_ns: u64,
    /// A CPU step on the web tier just before the page goes out (SSL, JSP work), ns.
    pub web_before_page_ns: Option<u64>,
    pub page: Exchange,
    pub images: &'a [Exchange],
    pub web_app: &'a [Exchange],
    pub app_db: &'a [Exchange],
}

impl<'a> PageWork<'a> {
    /// The work a recorded sample took.
    pub fn of(s: &'a PageSample) -> PageWork<'a> {
        PageWork {
            browser_cpu_ns: s.browser_cpu_ns,
            web_cpu_ns: s.web_cpu_ns,
            app_cpu_ns: s.app_cpu_ns,
            db_cpu_ns: s.db_cpu_ns,
            web_before_page_ns: None,
            page: s.page,
            images: &s.images,
            web_app: &s.web_app,
            app_db: &s.app_db,
        }
    }
}

/// Appends to `p` the program of one TPC-W page and its images for browser `b`
/// (`browser_cpu`: charge the sample's browser CPU on tier 0).
pub fn tpcw_program(p: &mut Program, s: &PageWork<'_>, b: u32, lanes: u32, connect: bool, browser_cpu: bool) {
    let base = b * (1 + lanes);
    let web_share = split(s.web_cpu_ns, 1 + s.images.len());
    // The browser's CPU: its share for the page when the page arrives, one per image.
    let browser_share = if browser_cpu { split(s.browser_cpu_ns, 1 + s.images.len()) } else { 0 };
    p.push(Step::Acquire { link: 0, slot: base });
    if connect {
        p.push(Step::Connect { link: 0 });
    }
    p.push(Step::Send { link: 0, bytes: s.page.req, up: false });
    p.push(Step::Cpu { tier: 1, ns: web_share / 2 });
    if !s.web_app.is_empty() {
        p.push(Step::Acquire { link: 1, slot: base });
        let app_share = split(s.app_cpu_ns, s.web_app.len() + 1);
        for (k, ex) in s.web_app.iter().enumerate() {
            p.push(Step::Send { link: 1, bytes: ex.req, up: false });
            p.push(Step::Cpu { tier: 2, ns: app_share });
            if k == 0 && !s.app_db.is_empty() {
                p.push(Step::Acquire { link: 2, slot: base });
                let db_share = split(s.db_cpu_ns, s.app_db.len());
                for dx in s.app_db {
                    p.push(Step::Send { link: 2, bytes: dx.req, up: false });
                    p.push(Step::Cpu { tier: 3, ns: db_share });
                    if dx.resp > 0 {
                        p.push(Step::Send { link: 2, bytes: dx.resp, up: true });
                    }
                }
                p.push(Step::Release { link: 2 });
                p.push(Step::Cpu { tier: 2, ns: app_share });
            }
            if ex.resp > 0 {
                p.push(Step::Send { link: 1, bytes: ex.resp, up: true });
            }
        }
        p.push(Step::Release { link: 1 });
    }
    p.push(Step::Cpu { tier: 1, ns: web_share - web_share / 2 });
    if let Some(ns) = s.web_before_page_ns {
        p.push(Step::Cpu { tier: 1, ns });
    }
    p.push(Step::Send { link: 0, bytes: s.page.resp, up: true });
    p.push(Step::Release { link: 0 });
    if browser_share > 0 {
        p.push(Step::Cpu { tier: 0, ns: browser_share });
    }
    p.push(Step::Mark(1));
    if !s.images.is_empty() {
        let n = lanes.clamp(1, s.images.len() as u32) as usize;
        p.push(Step::Fork(n as u32));
        for lane in 0..n {
            p.push(Step::Acquire { link: 0, slot: base + 1 + lane as u32 });
            if connect {
                p.push(Step::Connect { link: 0 });
            }
            for im in s.images.iter().skip(lane).step_by(n) {
                p.push(Step::Send { link: 0, bytes: im.req, up: false });
                p.push(Step::Cpu { tier: 1, ns: web_share });
                p.push(Step::Send { link: 0, bytes: im.resp, up: true });
                if browser_share > 0 {
                    p.push(Step::Cpu { tier: 0, ns: browser_share });
                }
            }
            p.push(Step::Release { link: 0 });
            p.push(Step::Join);
        }
    }
}

/// Inserts `step` before the page's response to the browser (the first `Send` up on link
/// 0; if there is none, at the end): what [`PageWork::web_before_page_ns`] does as the
/// program is built (the tests check they agree).
#[cfg(test)]
fn insert_before_page(p: &mut Vec<Step>, step: Step) {
    let at = p.iter().position(|x| matches!(x, Step::Send { link: 0, up: true, .. })).unwrap_or(p.len());
    p.insert(at, step);
}

impl Workload for Tpcw {
    fn classes(&self) -> Vec<String> {
        Interaction::ALL.iter().map(|i| i.abbr().to_string()).collect()
    }

    fn next(&mut self, b: u32, now: Time, rng: &mut Rng, p: &mut Program) -> usize {
        let st = &mut self.state[b as usize];
        let (i, new_session) = match st.at {
            None => (Interaction::Home, true),
            Some(cur) => {
                let n = self.cbmg.next(cur, rng);
                (n, n == Interaction::Home && now >= st.session_end)
            }
        };
        if new_session {
            st.session_end = now + neg_exp_capped(rng, self.usmd_mean);
            st.ssl_up = false;
        }
        st.at = Some(i);
        let s = self.table.sample(i, rng);
        st.think_us = s.think_us;
        let mut work = PageWork::of(s);
        if let Some(ssl) = self.ssl.filter(|_| i.is_secure()) {
            let mut ns = ((s.page.req + s.page.resp) as f64 * ssl.ns_per_byte) as u64;
            if !st.ssl_up {
                ns += ssl.handshake_ns;
                st.ssl_up = true;
            }
            // Decrypting the request and encrypting the page, before the page goes out.
            work.web_before_page_ns = Some(ns);
        }
        tpcw_program(p, &work, b, self.image_lanes, new_session && self.connect_per_session, self.browser_cpu);
        i.index()
    }

    fn think(&mut self, b: u32, rng: &mut Rng) -> Time {
        match self.think_mean {
            Some(m) => neg_exp(rng, m),
            None => self.state[b as usize].think_us.unwrap_or(0) * 1_000_000,
        }
    }
}

/// USMD: negative exponential truncated at 4 means.
fn neg_exp_capped(rng: &mut Rng, mean: Time) -> Time {
    let r = 1.0 - rng.next_f64();
    ((-r.ln()).min(4.0) * mean as f64) as Time
}

/// A file-size distribution: relative sizes with weights, drawn in proportion to the
/// weights (cumulative weights, binary search: a World Cup log gives thousands of sizes).
#[derive(Debug, Clone, PartialEq)]
pub struct SizeShape {
    sizes: Vec<f64>,
    cum: Vec<f64>,
    mean: f64,
}

impl SizeShape {
    /// From (relative size, weight) pairs; sizes and weights must be positive.
    pub fn new(pairs: &[(f64, f64)]) -> Result<SizeShape, String> {
        if pairs.is_empty() || pairs.iter().any(|&(x, w)| !(x > 0.0 && w > 0.0 && x.is_finite() && w.is_finite())) {
            return Err("a size distribution needs at least one (size, weight) pair, both positive".into());
        }
        let mut cum = Vec::with_capacity(pairs.len());
        let mut t = 0.0;
        for &(_, w) in pairs {
            t += w;
            cum.push(t);
        }
        let mean = pairs.iter().map(|&(x, w)| x * w).sum::<f64>() / t;
        Ok(SizeShape { sizes: pairs.iter().map(|p| p.0).collect(), cum, mean })
    }

    /// Weighted mean of the relative sizes.
    pub fn mean(&self) -> f64 {
        self.mean
    }

    /// One relative size.
    pub fn sample(&self, rng: &mut Rng) -> f64 {
        let r = rng.next_f64() * self.cum.last().copied().unwrap_or(0.0);
        let i = self.cum.partition_point(|&c| c <= r).min(self.sizes.len() - 1);
        self.sizes[i]
    }
}

/// Static content through a proxy: closed-loop clients without think time; each request
/// a file whose size is drawn from `shape` scaled to `mean_bytes`.
#[derive(Clone)]
pub struct StaticContent {
    pub shape: SizeShape,
    pub mean_bytes: f64,
    pub request_bytes: u64,
    /// HTTP handling CPU per request at the proxy and at the web server, ns.
    pub proxy_cpu_ns: u64,
    pub web_cpu_ns: u64,
    /// Web server file read (page cache to user buffer), bytes per us.
    pub read_bytes_per_us: f64,
    /// Open a new connection per request (client-proxy and proxy-web).
    pub connect: bool,
}

impl StaticContent {
    fn size(&self, rng: &mut Rng) -> u64 {
        ((self.shape.sample(rng) / self.shape.mean() * self.mean_bytes).round() as u64).max(1)
    }
}

impl Workload for StaticContent {
    fn classes(&self) -> Vec<String> {
        vec!["static".into()]
    }

    fn next(&mut self, b: u32, _now: Time, rng: &mut Rng, p: &mut Program) -> usize {
        let size = self.size(rng);
        p.push(Step::Acquire { link: 0, slot: b });
        if self.connect {
            p.push(Step::Connect { link: 0 });
        }
        p.push(Step::Send { link: 0, bytes: self.request_bytes, up: false });
        // Marks: 0 the request reached the proxy, 1 the proxy turns to the web server,
        // 3 its connection is up, 2 the file is back at the proxy.
        p.push(Step::Mark(0));
        p.push(Step::Cpu { tier: 1, ns: self.proxy_cpu_ns / 2 });
        p.push(Step::Acquire { link: 1, slot: b });
        p.push(Step::Mark(1));
        if self.connect {
            p.push(Step::Connect { link: 1 });
        }
        p.push(Step::Mark(3));
        p.push(Step::Send { link: 1, bytes: self.request_bytes, up: false });
        p.push(Step::Cpu { tier: 2, ns: self.web_cpu_ns + (size as f64 / self.read_bytes_per_us * 1000.0) as u64 });
        p.push(Step::Send { link: 1, bytes: size, up: true });
        p.push(Step::Mark(2));
        p.push(Step::Release { link: 1 });
        p.push(Step::Cpu { tier: 1, ns: self.proxy_cpu_ns - self.proxy_cpu_ns / 2 });
        p.push(Step::Send { link: 0, bytes: size, up: true });
        p.push(Step::Release { link: 0 });
        0
    }

    fn think(&mut self, _b: u32, _rng: &mut Rng) -> Time {
        0
    }
}

/// One SPECweb e-commerce page type.
#[derive(Debug, Clone)]
pub struct SpecPage {
    pub name: String,
    /// Share of page requests (percent or any weights).
    pub weight: f64,
    pub ssl: bool,
    pub page_bytes: u64,
    /// Embedded images fetched with the page (sizes).
    pub images: Vec<u64>,
}

/// SPECweb2009 e-commerce in its manner: the page mix drawn directly, JSP work at the
/// web tier, one BeSim request per page, SSL bulk cost per byte and a handshake share on
/// SSL pages.
#[derive(Clone)]
pub struct Specweb {
    pub pages: Vec<SpecPage>,
    pub think_mean: Time,
    pub request_bytes: u64,
    pub jsp_cpu_ns: u64,
    pub static_cpu_ns: u64,
    pub besim_req_bytes: u64,
    pub besim_resp_bytes: u64,
    pub besim_cpu_ns: u64,
    /// SSL: CPU per byte (ns) and per handshake (ns), and the share of SSL pages that
    /// start a new SSL session.
    pub ssl_ns_per_byte: f64,
    pub ssl_handshake_ns: u64,
    pub ssl_new_session_share: f64,
    pub image_lanes: u32,
}

impl Workload for Specweb {
    fn classes(&self) -> Vec<String> {
        self.pages.iter().map(|p| p.name.clone()).collect()
    }

    fn next(&mut self, b: u32, _now: Time, rng: &mut Rng, p: &mut Program) -> usize {
        let tw: f64 = self.pages.iter().map(|p| p.weight).sum();
        let mut r = rng.next_f64() * tw;
        let mut k = self.pages.len() - 1;
        for (i, p) in self.pages.iter().enumerate() {
            if r < p.weight {
                k = i;
                break;
            }
            r -= p.weight;
        }
        let pg = &self.pages[k];
        let mut web = self.jsp_cpu_ns;
        if pg.ssl {
            web += (pg.page_bytes as f64 * self.ssl_ns_per_byte) as u64;
            if rng.next_f64() < self.ssl_new_session_share {
                web += self.ssl_handshake_ns;
            }
        }
        let besim = [Exchange { req: self.besim_req_bytes, resp: self.besim_resp_bytes }];
        let s = PageWork {
            browser_cpu_ns: 0,
            web_cpu_ns: 0,
            app_cpu_ns: self.besim_cpu_ns,
            db_cpu_ns: 0,
            // JSP work after BeSim answered (before the page is sent).
            web_before_page_ns: Some(web),
            page: Exchange { req: self.request_bytes, resp: pg.page_bytes },
            images: &[],
            web_app: &besim,
            app_db: &[],
        };
        tpcw_program(p, &s, b, self.image_lanes, false, false);
        if !pg.images.is_empty() {
            let base = b * (1 + self.image_lanes);
            let n = self.image_lanes.clamp(1, pg.images.len() as u32) as usize;
            p.push(Step::Fork(n as u32));
            for lane in 0..n {
                p.push(Step::Acquire { link: 0, slot: base + 1 + lane as u32 });
                for &im in pg.images.iter().skip(lane).step_by(n) {
                    p.push(Step::Send { link: 0, bytes: self.request_bytes, up: false });
                    let mut c = self.static_cpu_ns;
                    if pg.ssl {
                        c += (im as f64 * self.ssl_ns_per_byte) as u64;
                    }
                    p.push(Step::Cpu { tier: 1, ns: c });
                    p.push(Step::Send { link: 0, bytes: im, up: true });
                }
                p.push(Step::Release { link: 0 });
                p.push(Step::Join);
            }
        }
        k
    }

    fn think(&mut self, _b: u32, rng: &mut Rng) -> Time {
        neg_exp(rng, self.think_mean)
    }
}

/// Seconds to picoseconds.
pub fn secs(s: f64) -> Time {
    (s * PS_PER_S as f64) as Time
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A page's web-tier step before the page goes out, built in place, gives the program
    /// that inserting it afterwards before the first `Send` up on link 0 gives (on every
    /// interaction of the built-in trace, with and without images, connects and browser
    /// CPU).
    #[test]
    fn the_step_before_the_page_is_where_inserting_it_put_it() {
        let table = InteractionTable::builtin();
        let mut rng = Rng::stream(5, 0);
        let mut built = 0;
        for round in 0..400 {
            let i = Interaction::ALL[round % Interaction::ALL.len()];
            let s = table.sample(i, &mut rng);
            let (lanes, connect, cpu) = ((round % 5) as u32, round % 3 == 0, round % 2 == 0);
            let ns = rng.below(1 << 30);
            let mut plain = Program::new();
            tpcw_program(&mut plain, &PageWork::of(s), 7, lanes, connect, cpu);
            let mut want = plain.steps();
            let plain = want.len();
            insert_before_page(&mut want, Step::Cpu { tier: 1, ns });
            let mut got = Program::new();
            tpcw_program(&mut got, &PageWork { web_before_page_ns: Some(ns), ..PageWork::of(s) }, 7, lanes, connect, cpu);
            let got = got.steps();
            assert_eq!(got, want, "round {round}");
            assert_eq!(got.len(), plain + 1);
            built += usize::from(!s.images.is_empty());
        }
        assert!(built > 50, "pages with images: {built}");
    }
}

//! The application tier: turns a page request from the web tier into database requests
//! and an HTML page (the 14 TPC-W interactions of [`crate::pages`]).
//!
//! Request header (web -> app): `{"v":1,"op":"page","interaction":"PROD","params":[["I_ID","7"],
//! ["C_ID","12"]],"trace":true}` (no body); `"op":"info"` asks for the database scale.
//! Reply header (app -> web): `{"v":1,"status":200,"content_type":"text/html; charset=utf-8",
//! "tiers":[{app share},{db share}]}` with the page as the body (`tiers` only when asked).

use crate::cpu::thread_cpu_ns;
use crate::dbtier::{DbReq, DbResp};
use crate::db::procs::Sets;
use crate::db::Row;
use crate::pages::{self, n, Sess};
use crate::tpcw::{Interaction, CC_TYPES, SHIP_TYPES, SUBJECTS};
use crate::trace::{Tier, TierTrace};
use crate::wire::{read_frame, write_frame, Addr, Conn, FrameError, Listener, Pool};
use interlab_kernel::Rng;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value as J};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Web -> app request.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AppReq {
    pub v: u32,
    /// "page" (default) or "info".
    #[serde(default)]
    pub op: String,
    #[serde(default)]
    pub interaction: Option<Interaction>,
    #[serde(default)]
    pub params: Vec<(String, String)>,
    /// Return the app and db shares of the work.
    #[serde(default)]
    pub trace: bool,
}

/// App -> web reply.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AppResp {
    pub v: u32,
    pub status: u16,
    pub content_type: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tiers: Vec<TierTrace>,
}

/// Application tier settings.
#[derive(Debug, Clone)]
pub struct AppConfig {
    pub listen: Addr,
    pub db_tier: Addr,
    /// Connections to the database tier, at most.
    pub db_connections: usize,
    /// Web-tier connections served at once.
    pub max_connections: usize,
    pub seed: u64,
    pub quiet: bool,
}

/// What the application tier knows about the database.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Info {
    pub items: u64,
    pub ebs: u64,
    pub customers: u64,
    pub seed: u64,
    pub schema: u64,
}

struct App {
    pool: Pool,
    info: Info,
    seed: u64,
    conns: AtomicU64,
}

/// An error that becomes an error page.
struct Fail(u16, String);

/// Work done for one page: the app's messages to the db tier and the db tier's share.
struct Ctx<'a> {
    app: &'a App,
    me: TierTrace,
    db: TierTrace,
    rng: &'a mut Rng,
}

impl Ctx<'_> {
    fn call(&mut self, op: &str, args: J) -> Result<Sets, Fail> {
        let req = DbReq { v: 1, op: op.to_string(), args: args.as_array().cloned().unwrap_or_default() };
        let ex = self.app.pool.call::<_, DbResp>(&req, b"").map_err(|e| Fail(502, format!("database tier unavailable: {e}")))?;
        self.me.to_next.add(ex.sent as u64);
        self.me.from_next.add(ex.received as u64);
        self.db.cpu_ns += ex.header.cpu_ns;
        self.db.wall_ns += ex.header.wall_ns;
        self.db.requests += 1;
        let r = ex.header;
        if r.ok {
            return Ok(r.sets);
        }
        let status = match r.kind.as_deref() {
            Some("bad_request") => 400,
            Some("not_found") => 404,
            Some("auth") => 403,
            _ => 500,
        };
        Err(Fail(status, r.error.unwrap_or_else(|| "database error".into())))
    }

    fn random_item(&mut self) -> u64 {
        1 + self.rng.below(self.app.info.items.max(1))
    }

    fn promo(&mut self) -> Result<Vec<Row>, Fail> {
        let i = self.random_item();
        Ok(self.call("promo", json!([i]))?.into_iter().next().unwrap_or_default())
    }
}

fn first_set(s: Sets) -> Vec<Row> {
    s.into_iter().next().unwrap_or_default()
}

struct Params<'a>(&'a [(String, String)]);

impl Params<'_> {
    fn get(&self, k: &str) -> Option<&str> {
        self.0.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str())
    }
    fn text(&self, k: &str) -> String {
        self.get(k).unwrap_or("").trim().to_string()
    }
    fn id(&self, k: &str) -> Option<i64> {
        self.get(k).and_then(|v| v.trim().parse::<i64>().ok()).filter(|&v| v > 0)
    }
    fn need_id(&self, k: &str) -> Result<i64, Fail> {
        match self.get(k) {
            None => Err(Fail(400, format!("missing parameter {k}"))),
            Some(v) => v.trim().parse::<i64>().ok().filter(|&x| x > 0).ok_or_else(|| Fail(400, format!("parameter {k} must be a positive integer, got '{v:.40}'"))),
        }
    }
}

/// Days since the epoch of a civil date.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// "YYYY-MM" (this store's form) or "MM/DD/YYYY" (the servlet kits' forms) to Unix
/// seconds of the last day of that month.
fn expiry(s: &str) -> Option<i64> {
    let (y, m) = match s.split('/').collect::<Vec<_>>()[..] {
        [m, _d, y] => (y, m),
        _ => s.split_once('-')?,
    };
    let (y, m) = (y.trim().parse::<i64>().ok()?, m.trim().parse::<i64>().ok()?);
    if !(1970..=2200).contains(&y) || !(1..=12).contains(&m) {
        return None;
    }
    let (ny, nm) = if m == 12 { (y + 1, 1) } else { (y, m + 1) };
    Some((days_from_civil(ny, nm, 1) - 1) * 86_400)
}

/// "YYYY-MM-DD" or "MM/DD/YYYY" to Unix seconds (0 when neither).
fn date(s: &str) -> i64 {
    let parts: Vec<Option<i64>> = s.split(['-', '/']).map(|x| x.trim().parse::<i64>().ok()).collect();
    let ymd = match (s.contains('/'), parts.as_slice()) {
        (true, [m, d, y]) => (*y, *m, *d),
        (false, [y, m, d]) => (*y, *m, *d),
        _ => (None, None, None),
    };
    match ymd {
        (Some(y), Some(m), Some(d)) if (1..=12).contains(&m) && (1..=31).contains(&d) => days_from_civil(y, m, d) * 86_400,
        _ => 0,
    }
}

fn page(i: Interaction, p: &Params, ctx: &mut Ctx, sess: &mut Sess) -> Result<String, Fail> {
    use Interaction::*;
    Ok(match i {
        Home => {
            let name = match sess.c_id {
                Some(c) => first_set(ctx.call("customer_name", json!([c]))?).first().map(|r| (pages::t(r, 0), pages::t(r, 1))),
                None => None,
            };
            let promo = ctx.promo()?;
            pages::home(sess, name, &promo)
        }
        NewProducts | BestSellers => {
            let subject = p.text("subject").to_ascii_uppercase();
            if !SUBJECTS.contains(&subject.as_str()) {
                return Err(Fail(400, format!("unknown subject '{subject:.40}'")));
            }
            let op = if i == NewProducts { "new_products" } else { "best_sellers" };
            let rows = first_set(ctx.call(op, json!([subject]))?);
            let promo = ctx.promo()?;
            if i == NewProducts {
                pages::new_products(sess, &subject, &rows, &promo)
            } else {
                pages::best_sellers(sess, &subject, &rows, &promo)
            }
        }
        ProductDetail => {
            let id = p.need_id("I_ID")?;
            let mut sets = ctx.call("item_detail", json!([id]))?.into_iter();
            let rows = sets.next().unwrap_or_default();
            let related = sets.next().unwrap_or_default();
            let r = rows.first().ok_or_else(|| Fail(404, format!("no item {id}")))?;
            pages::product_detail(sess, r, &related)
        }
        SearchRequest => {
            let promo = ctx.promo()?;
            pages::search_request(sess, &promo)
        }
        SearchResults => {
            let kind = p.text("search_type").to_ascii_lowercase();
            if !["author", "title", "subject"].contains(&kind.as_str()) {
                return Err(Fail(400, format!("search_type must be author, title or subject, not '{kind:.20}'")));
            }
            let key = p.text("search_string");
            if key.len() > 100 {
                return Err(Fail(400, "search_string longer than 100 characters".into()));
            }
            let rows = first_set(ctx.call("search", json!([kind, key]))?);
            let promo = ctx.promo()?;
            pages::search_results(sess, &kind, &key, &rows, &promo)
        }
        ShoppingCart => {
            let add = if p.get("ADD_FLAG").map(|f| f.eq_ignore_ascii_case("Y")).unwrap_or(false) { p.need_id("I_ID")? } else { 0 };
            let mut updates = Vec::new();
            for k in 0..crate::db::procs::CART_MAX_LINES + 5 {
                if let (Some(i), Some(q)) = (p.id(&format!("I_ID_{k}")), p.get(&format!("QTY_{k}"))) {
                    let q = q.trim().parse::<i64>().ok().filter(|q| (0..=1000).contains(q)).ok_or_else(|| Fail(400, format!("QTY_{k} must be 0..1000")))?;
                    updates.push(json!([i, q]));
                }
            }
            let random = ctx.random_item();
            let sets = ctx.call("shopping_cart", json!([sess.sc_id.unwrap_or(0), add, updates, random]))?;
            let sc = sets.first().and_then(|s| s.first()).map(|r| n(r, 0)).filter(|&x| x > 0);
            sess.sc_id = sc.or(sess.sc_id);
            let lines = sets.into_iter().nth(1).unwrap_or_default();
            let promo = ctx.promo()?;
            pages::shopping_cart(sess, &lines, &promo)
        }
        CustomerRegistration => {
            let uname = match sess.c_id {
                Some(c) => first_set(ctx.call("customer_uname", json!([c]))?).first().map(|r| pages::t(r, 0)),
                None => None,
            };
            pages::customer_registration(sess, uname.as_deref())
        }
        BuyRequest => {
            let returning = p.get("RETURNING_FLAG").map(|f| f.eq_ignore_ascii_case("Y")).unwrap_or(false);
            let args = if returning {
                json!([1, p.text("UNAME"), p.text("PASSWD"), null, sess.sc_id.unwrap_or(0)])
            } else {
                if p.text("FNAME").is_empty() || p.text("LNAME").is_empty() {
                    return Err(Fail(400, "a new customer needs FNAME and LNAME".into()));
                }
                let o = json!({
                    "fname": p.text("FNAME"), "lname": p.text("LNAME"), "street1": p.text("STREET1"), "street2": p.text("STREET2"),
                    "city": p.text("CITY"), "state": p.text("STATE"), "zip": p.text("ZIP"), "country": p.text("COUNTRY"),
                    "phone": p.text("PHONE"), "email": p.text("EMAIL"), "birthdate": date(&p.text("BIRTHDATE")).to_string(),
                    "data": p.text("DATA"),
                });
                json!([0, "", "", o, sess.sc_id.unwrap_or(0)])
            };
            let mut sets = ctx.call("buy_request", args)?.into_iter();
            let cust = sets.next().unwrap_or_default();
            let lines = sets.next().unwrap_or_default();
            let c = cust.first().ok_or_else(|| Fail(500, "no customer returned".into()))?;
            sess.c_id = Some(n(c, 0));
            pages::buy_request(sess, c, &lines)
        }
        BuyConfirm => {
            let sc = sess.sc_id.ok_or_else(|| Fail(400, "missing parameter SHOPPING_ID".into()))?;
            let c = sess.c_id.ok_or_else(|| Fail(400, "missing parameter C_ID".into()))?;
            let cc = p.text("CC_TYPE").to_ascii_uppercase();
            if !CC_TYPES.contains(&cc.as_str()) {
                return Err(Fail(400, format!("CC_TYPE must be one of {}", CC_TYPES.join(", "))));
            }
            let num = p.text("CC_NUMBER");
            if num.len() < 12 || num.len() > 19 || !num.bytes().all(|b| b.is_ascii_digit()) {
                return Err(Fail(400, "CC_NUMBER must be 12 to 19 digits".into()));
            }
            let exp = expiry(&p.text("CC_EXPIRY")).ok_or_else(|| Fail(400, "CC_EXPIRY must be YYYY-MM".into()))?;
            let ship = p.text("SHIPPING").to_ascii_uppercase();
            if !SHIP_TYPES.contains(&ship.as_str()) {
                return Err(Fail(400, format!("SHIPPING must be one of {}", SHIP_TYPES.join(", "))));
            }
            let addr = if p.text("STREET_1").is_empty() {
                J::Null
            } else {
                json!({"street1": p.text("STREET_1"), "street2": p.text("STREET_2"), "city": p.text("CITY"), "state": p.text("STATE"),
                       "zip": p.text("ZIP"), "country": p.text("COUNTRY")})
            };
            let rows = first_set(ctx.call("buy_confirm", json!([sc, c, cc, num, p.text("CC_NAME"), exp, ship, addr, null]))?);
            pages::buy_confirm(sess, rows.first())
        }
        OrderInquiry => pages::order_inquiry(sess, &p.text("UNAME")),
        OrderDisplay => {
            let mut sets = ctx.call("order_display", json!([p.text("UNAME"), p.text("PASSWD")]))?.into_iter();
            let head = sets.next().unwrap_or_default();
            let lines = sets.next().unwrap_or_default();
            pages::order_display(sess, head.first(), &lines)
        }
        AdminRequest => {
            let id = p.need_id("I_ID")?;
            let rows = first_set(ctx.call("item_detail", json!([id]))?);
            pages::admin_request(sess, rows.first().ok_or_else(|| Fail(404, format!("no item {id}")))?)
        }
        AdminConfirm => {
            let id = p.need_id("I_ID")?;
            let cost = p.text("I_NEW_COST").parse::<f64>().ok().filter(|c| c.is_finite() && *c >= 0.0 && *c < 1e6).ok_or_else(|| Fail(400, "I_NEW_COST must be a price".into()))?;
            let (img, thumb) = (p.text("I_NEW_IMAGE"), p.text("I_NEW_THUMBNAIL"));
            for (k, v) in [("I_NEW_IMAGE", &img), ("I_NEW_THUMBNAIL", &thumb)] {
                if !v.starts_with("/img/") || v.len() > 100 {
                    return Err(Fail(400, format!("{k} must be an image path under /img/")));
                }
            }
            let rows = first_set(ctx.call("admin_confirm", json!([id, cost, img, thumb]))?);
            pages::admin_confirm(sess, rows.first().ok_or_else(|| Fail(404, format!("no item {id}")))?)
        }
    })
}

/// Handles one request; returns the reply header and body. Public for tests.
fn handle(app: &App, req: &AppReq, rng: &mut Rng) -> (AppResp, Vec<u8>, TierTrace, TierTrace) {
    let mut ctx = Ctx { app, me: TierTrace::new(Tier::App), db: TierTrace::new(Tier::Db), rng };
    if req.op == "info" {
        let body = serde_json::to_vec(&app.info).unwrap_or_default();
        return (AppResp { v: 1, status: 200, content_type: "application/json".into(), tiers: vec![] }, body, ctx.me, ctx.db);
    }
    let Some(i) = req.interaction else {
        let body = b"no interaction given".to_vec();
        return (AppResp { v: 1, status: 400, content_type: "text/plain".into(), tiers: vec![] }, body, ctx.me, ctx.db);
    };
    let p = Params(&req.params);
    let mut sess = Sess { c_id: p.id("C_ID"), sc_id: p.id("SHOPPING_ID") };
    let start = sess;
    let (status, html) = match page(i, &p, &mut ctx, &mut sess) {
        Ok(h) => (200, h),
        Err(Fail(code, msg)) => (code, pages::error(i, &start, code, &msg)),
    };
    (AppResp { v: 1, status, content_type: "text/html; charset=utf-8".into(), tiers: vec![] }, html.into_bytes(), ctx.me, ctx.db)
}

/// Asks the database tier for the scale, retrying while it starts (up to `wait`).
pub fn fetch_info(pool: &Pool, wait: Duration) -> Result<Info, String> {
    let t0 = Instant::now();
    loop {
        match pool.call::<_, DbResp>(&DbReq { v: 1, op: "info".into(), args: vec![] }, b"") {
            Ok(ex) if ex.header.ok => {
                let r = ex.header.sets.first().and_then(|s| s.first()).cloned().unwrap_or_default();
                return Ok(Info { items: n(&r, 0) as u64, ebs: n(&r, 1) as u64, customers: n(&r, 2) as u64, seed: n(&r, 3) as u64, schema: n(&r, 4) as u64 });
            }
            Ok(ex) => return Err(format!("database tier at {}: {}", pool.addr(), ex.header.error.unwrap_or_default())),
            Err(e) if t0.elapsed() >= wait => return Err(format!("database tier: {e}")),
            Err(_) => std::thread::sleep(Duration::from_millis(100)),
        }
    }
}

/// Listens and serves until the process ends.
pub fn serve(cfg: AppConfig, ready: impl FnOnce(&Addr, &Info)) -> Result<(), String> {
    let pool = Pool::new(cfg.db_tier.clone(), cfg.db_connections, Duration::from_secs(60));
    let info = fetch_info(&pool, Duration::from_secs(10))?;
    let listener = Listener::bind(&cfg.listen)?;
    ready(&listener.local_addr(), &info);
    let app = Arc::new(App { pool, info, seed: cfg.seed, conns: AtomicU64::new(0) });
    let active = Arc::new(AtomicUsize::new(0));
    loop {
        let conn = match listener.accept() {
            Ok(c) => c,
            Err(e) => {
                eprintln!("interlab datacenter app: accept: {e}");
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
        };
        if active.load(Ordering::SeqCst) >= cfg.max_connections {
            conn.shutdown();
            continue;
        }
        active.fetch_add(1, Ordering::SeqCst);
        let (app, done, quiet) = (app.clone(), active.clone(), cfg.quiet);
        let spawned = std::thread::Builder::new().name("app-conn".into()).stack_size(1 << 20).spawn(move || {
            connection(conn, &app, quiet);
            done.fetch_sub(1, Ordering::SeqCst);
        });
        if let Err(e) = spawned {
            eprintln!("interlab datacenter app: cannot start a connection thread: {e}");
            active.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

fn connection(mut conn: Conn, app: &App, quiet: bool) {
    let mut rng = Rng::stream(app.seed, 1000 + app.conns.fetch_add(1, Ordering::Relaxed));
    loop {
        let c0 = thread_cpu_ns();
        let (req, got) = match read_frame::<_, AppReq>(&mut conn) {
            Ok((r, _, n)) => (r, n),
            Err(FrameError::Closed) => return,
            Err(e) => {
                if !quiet {
                    eprintln!("interlab datacenter app: connection dropped: {e}");
                }
                let _ = write_frame(&mut conn, &AppResp { v: 1, status: 400, content_type: "text/plain".into(), tiers: vec![] }, e.to_string().as_bytes());
                return;
            }
        };
        let t0 = Instant::now();
        let (mut resp, body, mut me, db) = handle(app, &req, &mut rng);
        let _ = got;
        if req.trace {
            me.requests = 1;
            me.wall_ns = t0.elapsed().as_nanos() as u64;
            me.cpu_ns = thread_cpu_ns().saturating_sub(c0);
            resp.tiers = vec![me, db];
        }
        if write_frame(&mut conn, &resp, &body).is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2025, 1, 1) * 86_400, crate::populate::POP_NOW);
        assert_eq!(pages::ymd(expiry("2027-02").unwrap()), "2027-02-28");
        assert_eq!(pages::ymd(expiry("2028-12").unwrap()), "2028-12-31");
        assert!(expiry("2027-13").is_none() && expiry("x").is_none() && expiry("2027").is_none());
        assert_eq!(pages::ymd(date("1999-07-04")), "1999-07-04");
        assert_eq!(date("garbage"), 0);
        assert_eq!(pages::ymd(expiry("02/14/2027").unwrap()), "2027-02-28");
        assert!(expiry("13/01/2027").is_none() && expiry("1/2").is_none());
        assert_eq!(pages::ymd(date("07/04/1999")), "1999-07-04");
        assert_eq!(date("07/04"), 0);
    }
}

//! The named queries and transactions the database tier executes for the application
//! tier (one request frame each, like the stored procedures of OSDL DBT-1). Each returns
//! result sets (lists of rows); the column order of each is documented on the operation.
//!
//! Write transactions (`shopping_cart`, `buy_request`, `buy_confirm`, `admin_confirm`) run
//! inside [`super::transaction`]: all of their rows or none.

use super::{transaction, Backend, Row, Value};
use crate::tpcw::{customer_uname, ORDER_STATUS};
use serde_json::Value as J;

/// Result sets of one operation.
pub type Sets = Vec<Vec<Row>>;

/// Error classes the application tier distinguishes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProcErrorKind {
    /// Unknown operation or malformed arguments.
    BadRequest,
    /// A referenced row does not exist (item, customer, order).
    NotFound,
    /// Wrong user name or password.
    Auth,
    /// The database refused or failed (the transaction was rolled back).
    Db,
    /// An injected failure (tests); the transaction was rolled back.
    Fault,
}

impl ProcErrorKind {
    pub fn as_str(&self) -> &'static str {
        match self {
            ProcErrorKind::BadRequest => "bad_request",
            ProcErrorKind::NotFound => "not_found",
            ProcErrorKind::Auth => "auth",
            ProcErrorKind::Db => "db",
            ProcErrorKind::Fault => "fault",
        }
    }
    pub fn parse(s: &str) -> ProcErrorKind {
        match s {
            "bad_request" => ProcErrorKind::BadRequest,
            "not_found" => ProcErrorKind::NotFound,
            "auth" => ProcErrorKind::Auth,
            "fault" => ProcErrorKind::Fault,
            _ => ProcErrorKind::Db,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcError {
    pub kind: ProcErrorKind,
    pub msg: String,
}

impl std::fmt::Display for ProcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.msg, self.kind.as_str())
    }
}

fn err(kind: ProcErrorKind, msg: impl Into<String>) -> ProcError {
    ProcError { kind, msg: msg.into() }
}

fn bad(msg: impl Into<String>) -> ProcError {
    err(ProcErrorKind::BadRequest, msg)
}

fn dberr(msg: String) -> ProcError {
    // Errors raised inside a transaction closure are tagged "\u{1}kind\u{1}" to survive the
    // String channel of `transaction`.
    if let Some(rest) = msg.strip_prefix('\u{1}') {
        if let Some((k, m)) = rest.split_once('\u{1}') {
            return err(ProcErrorKind::parse(k), m);
        }
    }
    err(ProcErrorKind::Db, msg)
}

fn tag(e: ProcError) -> String {
    format!("\u{1}{}\u{1}{}", e.kind.as_str(), e.msg)
}

/// Options of the executing database tier.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProcOptions {
    /// Honour the `fault` argument of `buy_confirm` (tests only).
    pub allow_faults: bool,
}

/// Where `buy_confirm` fails on purpose when faults are allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// After ORDERS and ORDER_LINE rows and stock updates, before CC_XACTS.
    AfterOrderLines,
    /// After every write, just before COMMIT.
    BeforeCommit,
}

impl Fault {
    pub fn as_str(self) -> &'static str {
        match self {
            Fault::AfterOrderLines => "after_order_lines",
            Fault::BeforeCommit => "before_commit",
        }
    }
}

struct Args<'a>(&'a str, &'a [J]);

impl Args<'_> {
    fn get(&self, i: usize, name: &str) -> Result<&J, ProcError> {
        self.1.get(i).ok_or_else(|| bad(format!("{}: missing argument {} ({name})", self.0, i + 1)))
    }
    fn int(&self, i: usize, name: &str) -> Result<i64, ProcError> {
        let v = self.get(i, name)?;
        v.as_i64().or_else(|| v.as_str().and_then(|s| s.trim().parse().ok())).ok_or_else(|| bad(format!("{}: argument {name} must be an integer, got {v}", self.0)))
    }
    fn real(&self, i: usize, name: &str) -> Result<f64, ProcError> {
        let v = self.get(i, name)?;
        v.as_f64().or_else(|| v.as_str().and_then(|s| s.trim().parse().ok())).ok_or_else(|| bad(format!("{}: argument {name} must be a number, got {v}", self.0)))
    }
    fn text(&self, i: usize, name: &str) -> Result<String, ProcError> {
        match self.get(i, name)? {
            J::String(s) => Ok(s.clone()),
            J::Number(n) => Ok(n.to_string()),
            v => Err(bad(format!("{}: argument {name} must be a string, got {v}", self.0))),
        }
    }
    fn opt(&self, i: usize) -> Option<&J> {
        self.1.get(i).filter(|v| !v.is_null())
    }
}

/// Seconds since the Unix epoch.
pub fn now_s() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(0)
}

/// Rounds dollars to cents.
pub fn cents(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// Tax rate on the discounted subtotal.
pub const TAX_RATE: f64 = 0.0825;

/// Shipping: $3.00 plus $1.00 per book.
pub fn ship_cost(total_qty: i64) -> f64 {
    3.0 + total_qty as f64
}

/// Names of all operations.
pub const OPS: [&str; 14] = [
    "ping",
    "info",
    "customer_name",
    "promo",
    "new_products",
    "best_sellers",
    "item_detail",
    "search",
    "shopping_cart",
    "customer_uname",
    "buy_request",
    "buy_confirm",
    "order_display",
    "admin_confirm",
];

/// Executes operation `op`.
pub fn run(db: &mut dyn Backend, op: &str, args: &[J], opts: ProcOptions) -> Result<Sets, ProcError> {
    let a = Args(op, args);
    match op {
        "ping" => Ok(vec![vec![vec![Value::Int(1)]]]),
        "info" => info(db),
        "customer_name" => q(db, "SELECT c_fname, c_lname FROM customer WHERE c_id = ?", &[a.int(0, "c_id")?.into()]),
        "promo" => q(
            db,
            "SELECT j.i_id, j.i_thumbnail, j.i_title FROM item i, item j WHERE i.i_id = ? AND j.i_id IN \
             (i.i_related1, i.i_related2, i.i_related3, i.i_related4, i.i_related5) ORDER BY j.i_id",
            &[a.int(0, "i_id")?.into()],
        ),
        "new_products" => q(
            db,
            "SELECT i_id, i_title, a_fname, a_lname, i_pub_date, i_thumbnail FROM item, author \
             WHERE i_subject = ? AND i_a_id = a_id ORDER BY i_pub_date DESC, i_title LIMIT 50",
            &[a.text(0, "subject")?.into()],
        ),
        "best_sellers" => q(
            db,
            "SELECT i_id, i_title, a_fname, a_lname, CAST(SUM(ol_qty) AS BIGINT) AS val FROM order_line, item, author \
             WHERE ol_o_id > (SELECT MAX(o_id) - 3333 FROM orders) AND ol_i_id = i_id AND i_a_id = a_id AND i_subject = ? \
             GROUP BY i_id, i_title, a_fname, a_lname ORDER BY val DESC, i_id LIMIT 50",
            &[a.text(0, "subject")?.into()],
        ),
        "item_detail" => item_detail(db, a.int(0, "i_id")?),
        "search" => search(db, &a.text(0, "type")?, &a.text(1, "key")?),
        "shopping_cart" => shopping_cart(db, &a),
        "customer_uname" => q(db, "SELECT c_uname, c_fname, c_lname FROM customer WHERE c_id = ?", &[a.int(0, "c_id")?.into()]),
        "buy_request" => buy_request(db, &a),
        "buy_confirm" => buy_confirm(db, &a, opts),
        "order_display" => order_display(db, &a.text(0, "uname")?, &a.text(1, "passwd")?),
        "admin_confirm" => admin_confirm(db, &a),
        _ => Err(bad(format!("unknown operation '{op}'; known: {}", OPS.join(", ")))),
    }
}

fn q(db: &mut dyn Backend, sql: &str, p: &[Value]) -> Result<Sets, ProcError> {
    Ok(vec![db.query(sql, p).map_err(dberr)?])
}

fn info(db: &mut dyn Backend) -> Result<Sets, ProcError> {
    let m = super::read_meta(db).ok_or_else(|| err(ProcErrorKind::Db, "database is not populated"))?;
    Ok(vec![vec![vec![m.items.into(), m.ebs.into(), m.customers.into(), m.seed.into(), m.schema.into()]]])
}

/// item_detail columns: i_id, i_title, a_fname, a_mname, a_lname, i_pub_date, i_publisher,
/// i_subject, i_desc, i_thumbnail, i_image, i_srp, i_cost, i_avail, i_stock, i_isbn,
/// i_page, i_backing, i_dimensions, a_id; then the related items (i_id, i_title).
fn item_detail(db: &mut dyn Backend, i_id: i64) -> Result<Sets, ProcError> {
    let rows = db
        .query(
            "SELECT i_id, i_title, a_fname, a_mname, a_lname, i_pub_date, i_publisher, i_subject, i_desc, i_thumbnail, \
             i_image, i_srp, i_cost, i_avail, i_stock, i_isbn, i_page, i_backing, i_dimensions, a_id \
             FROM item, author WHERE i_id = ? AND i_a_id = a_id",
            &[i_id.into()],
        )
        .map_err(dberr)?;
    if rows.is_empty() {
        return Err(err(ProcErrorKind::NotFound, format!("no item {i_id}")));
    }
    let related = db
        .query(
            "SELECT j.i_id, j.i_title FROM item i, item j WHERE i.i_id = ? AND j.i_id IN \
             (i.i_related1, i.i_related2, i.i_related3, i.i_related4, i.i_related5) ORDER BY j.i_id",
            &[i_id.into()],
        )
        .map_err(dberr)?;
    Ok(vec![rows, related])
}

/// search columns: i_id, i_title, a_fname, a_lname.
fn search(db: &mut dyn Backend, kind: &str, key: &str) -> Result<Sets, ProcError> {
    let (sql, p): (&str, Value) = match kind {
        "author" => (
            "SELECT i_id, i_title, a_fname, a_lname FROM author, item WHERE a_lname LIKE ? AND i_a_id = a_id ORDER BY i_title, i_id LIMIT 50",
            format!("{}%", key.replace(['%', '_'], "")).into(),
        ),
        "title" => (
            "SELECT i_id, i_title, a_fname, a_lname FROM item, author WHERE i_title LIKE ? AND i_a_id = a_id ORDER BY i_title, i_id LIMIT 50",
            format!("{}%", key.replace(['%', '_'], "")).into(),
        ),
        "subject" => (
            "SELECT i_id, i_title, a_fname, a_lname FROM item, author WHERE i_subject = ? AND i_a_id = a_id ORDER BY i_title, i_id LIMIT 50",
            key.into(),
        ),
        other => return Err(bad(format!("search: type '{other}' is not author, title or subject"))),
    };
    q(db, sql, &[p])
}

/// Cart lines: i_id, i_title, i_cost, i_srp, i_backing, scl_qty, i_thumbnail.
fn cart_lines(db: &mut dyn Backend, sc_id: i64) -> Result<Vec<Row>, String> {
    db.query(
        "SELECT i_id, i_title, i_cost, i_srp, i_backing, scl_qty, i_thumbnail FROM shopping_cart_line, item \
         WHERE scl_sc_id = ? AND scl_i_id = i_id ORDER BY i_id",
        &[sc_id.into()],
    )
}

/// Most lines a cart holds (DBT-1's SHOPPING_CART_ITEMS_MAX).
pub const CART_MAX_LINES: usize = 20;

/// shopping_cart(sc_id or 0, add_i_id or 0, [[i_id, qty], ...], random_i_id): creates the
/// cart if needed, adds one of an item, applies quantity changes (0 deletes), puts the
/// random item in an empty cart, touches SC_TIME. Sets: [[sc_id]], lines (see cart_lines).
fn shopping_cart(db: &mut dyn Backend, a: &Args) -> Result<Sets, ProcError> {
    let sc_id = a.int(0, "sc_id")?;
    let add = a.int(1, "add_i_id")?;
    let mut updates = Vec::new();
    let list = match a.opt(2) {
        None => &[][..],
        Some(J::Array(list)) => &list[..],
        Some(_) => return Err(bad("shopping_cart: updates must be [[i_id, qty], ...]")),
    };
    {
        for u in list {
            let pair = u.as_array().filter(|p| p.len() == 2).ok_or_else(|| bad("shopping_cart: updates must be [[i_id, qty], ...]"))?;
            let i = pair[0].as_i64().ok_or_else(|| bad("shopping_cart: update i_id must be an integer"))?;
            let n = pair[1].as_i64().filter(|n| (0..=1000).contains(n)).ok_or_else(|| bad("shopping_cart: update qty must be 0..1000"))?;
            updates.push((i, n));
        }
    }
    let random = a.int(3, "random_i_id")?;
    transaction(db, true, |db| {
        let now = now_s();
        let mut sc = sc_id;
        if sc > 0 && db.query("SELECT sc_id FROM shopping_cart WHERE sc_id = ?", &[sc.into()])?.is_empty() {
            sc = 0;
        }
        if sc == 0 {
            let r = db.query("INSERT INTO shopping_cart (sc_time) VALUES (?) RETURNING sc_id", &[now.into()])?;
            sc = r.first().and_then(|r| r.first()).and_then(|v| v.as_i64()).ok_or("no sc_id returned")?;
        }
        let lines = |db: &mut dyn Backend| -> Result<usize, String> {
            Ok(db.query("SELECT COUNT(*) FROM shopping_cart_line WHERE scl_sc_id = ?", &[sc.into()])?.first().and_then(|r| r[0].as_i64()).unwrap_or(0) as usize)
        };
        if add > 0 {
            if db.query("SELECT i_id FROM item WHERE i_id = ?", &[add.into()])?.is_empty() {
                return Err(tag(err(ProcErrorKind::NotFound, format!("no item {add}"))));
            }
            let n = db.exec("UPDATE shopping_cart_line SET scl_qty = scl_qty + 1 WHERE scl_sc_id = ? AND scl_i_id = ?", &[sc.into(), add.into()])?;
            if n == 0 && lines(db)? < CART_MAX_LINES {
                db.exec("INSERT INTO shopping_cart_line (scl_sc_id, scl_i_id, scl_qty) VALUES (?, ?, 1)", &[sc.into(), add.into()])?;
            }
        }
        for (i, n) in &updates {
            if *n == 0 {
                db.exec("DELETE FROM shopping_cart_line WHERE scl_sc_id = ? AND scl_i_id = ?", &[sc.into(), (*i).into()])?;
            } else {
                db.exec("UPDATE shopping_cart_line SET scl_qty = ? WHERE scl_sc_id = ? AND scl_i_id = ?", &[(*n).into(), sc.into(), (*i).into()])?;
            }
        }
        if lines(db)? == 0 && random > 0 && !db.query("SELECT i_id FROM item WHERE i_id = ?", &[random.into()])?.is_empty() {
            db.exec("INSERT INTO shopping_cart_line (scl_sc_id, scl_i_id, scl_qty) VALUES (?, ?, 1)", &[sc.into(), random.into()])?;
        }
        db.exec("UPDATE shopping_cart SET sc_time = ? WHERE sc_id = ?", &[now.into(), sc.into()])?;
        Ok(vec![vec![vec![Value::Int(sc)]], cart_lines(db, sc)?])
    })
    .map_err(dberr)
}

/// Customer columns: c_id, c_uname, c_passwd, c_fname, c_lname, c_phone, c_email,
/// c_discount, addr_street1, addr_street2, addr_city, addr_state, addr_zip, co_name,
/// c_since, c_birthdate.
fn customer_row(db: &mut dyn Backend, c_id: i64) -> Result<Vec<Row>, String> {
    db.query(
        "SELECT c_id, c_uname, c_passwd, c_fname, c_lname, c_phone, c_email, c_discount, addr_street1, addr_street2, \
         addr_city, addr_state, addr_zip, co_name, c_since, c_birthdate FROM customer, address, country \
         WHERE c_id = ? AND c_addr_id = addr_id AND addr_co_id = co_id",
        &[c_id.into()],
    )
}

fn field(o: &J, k: &str) -> String {
    match o.get(k) {
        Some(J::String(s)) => s.clone(),
        Some(J::Number(n)) => n.to_string(),
        _ => String::new(),
    }
}

/// Finds an identical address or inserts one; returns ADDR_ID.
fn address_id(db: &mut dyn Backend, o: &J) -> Result<i64, String> {
    let country = field(o, "country");
    let co_id = db
        .query("SELECT co_id FROM country WHERE co_name = ?", &[country.clone().into()])?
        .first()
        .and_then(|r| r[0].as_i64())
        .unwrap_or(1);
    let vals: Vec<Value> = ["street1", "street2", "city", "state", "zip"].iter().map(|k| Value::Text(field(o, k))).chain([Value::Int(co_id)]).collect();
    let found = db.query(
        "SELECT addr_id FROM address WHERE addr_street1 = ? AND addr_street2 = ? AND addr_city = ? AND addr_state = ? \
         AND addr_zip = ? AND addr_co_id = ?",
        &vals,
    )?;
    if let Some(id) = found.first().and_then(|r| r[0].as_i64()) {
        return Ok(id);
    }
    let r = db.query(
        "INSERT INTO address (addr_street1, addr_street2, addr_city, addr_state, addr_zip, addr_co_id) VALUES (?, ?, ?, ?, ?, ?) RETURNING addr_id",
        &vals,
    )?;
    r.first().and_then(|r| r[0].as_i64()).ok_or_else(|| "no addr_id returned".into())
}

static NEW_CUSTOMER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// buy_request(returning 0|1, uname, passwd, new_customer {fname, lname, street1, street2,
/// city, state, zip, country, phone, email, birthdate, data} | null, sc_id): logs a
/// returning customer in (C_LOGIN, C_EXPIRATION = now + 2 h) or registers a new one
/// (address reused when identical). Sets: [customer] (see customer_row), cart lines.
fn buy_request(db: &mut dyn Backend, a: &Args) -> Result<Sets, ProcError> {
    let returning = a.int(0, "returning")? != 0;
    let uname = a.text(1, "uname")?;
    let passwd = a.text(2, "passwd")?;
    let newc = a.opt(3).cloned();
    let sc_id = a.int(4, "sc_id")?;
    if !returning && newc.as_ref().map(|o| !o.is_object()).unwrap_or(true) {
        return Err(bad("buy_request: a new customer needs the customer fields"));
    }
    transaction(db, true, |db| {
        let now = now_s();
        let c_id = if returning {
            let r = db.query("SELECT c_id, c_passwd FROM customer WHERE c_uname = ?", &[uname.clone().into()])?;
            let Some(row) = r.first() else {
                return Err(tag(err(ProcErrorKind::Auth, format!("unknown user name '{uname}'"))));
            };
            if row[1].text() != passwd {
                return Err(tag(err(ProcErrorKind::Auth, format!("wrong password for '{uname}'"))));
            }
            let c_id = row[0].as_i64().unwrap_or(0);
            db.exec("UPDATE customer SET c_login = ?, c_expiration = ? WHERE c_id = ?", &[now.into(), (now + 7200).into(), c_id.into()])?;
            c_id
        } else {
            let o = newc.as_ref().ok_or("missing customer")?;
            let addr = address_id(db, o)?;
            let temp = format!("~new-{}-{}-{}", std::process::id(), now, NEW_CUSTOMER.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
            let bd = field(o, "birthdate").parse::<i64>().unwrap_or(0);
            let r = db.query(
                "INSERT INTO customer (c_uname, c_passwd, c_fname, c_lname, c_addr_id, c_phone, c_email, c_since, c_last_login, \
                 c_login, c_expiration, c_discount, c_balance, c_ytd_pmt, c_birthdate, c_data) \
                 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING c_id",
                &[
                    temp.clone().into(),
                    temp.into(),
                    field(o, "fname").into(),
                    field(o, "lname").into(),
                    addr.into(),
                    field(o, "phone").into(),
                    field(o, "email").into(),
                    now.into(),
                    now.into(),
                    now.into(),
                    (now + 7200).into(),
                    Value::Real(field(o, "discount").parse::<f64>().unwrap_or(0.0).clamp(0.0, 0.5)),
                    Value::Real(0.0),
                    Value::Real(0.0),
                    bd.into(),
                    field(o, "data").into(),
                ],
            )?;
            let c_id = r.first().and_then(|r| r[0].as_i64()).ok_or("no c_id returned")?;
            let un = customer_uname(c_id as u64);
            db.exec("UPDATE customer SET c_uname = ?, c_passwd = ? WHERE c_id = ?", &[un.clone().into(), un.to_lowercase().into(), c_id.into()])?;
            c_id
        };
        let cust = customer_row(db, c_id)?;
        let lines = if sc_id > 0 { cart_lines(db, sc_id)? } else { Vec::new() };
        Ok(vec![cust, lines])
    })
    .map_err(dberr)
}

/// buy_confirm(sc_id, c_id, cc_type, cc_num, cc_name, cc_expire (Unix s), ship_type,
/// ship_address {street1, street2, city, state, zip, country} | null, fault | null):
/// one transaction: optional new shipping address, ORDERS (PENDING, ship date today + 0..7
/// days), per cart line ORDER_LINE and stock update (below 10 restocked by 21), the
/// payment authorisation into CC_XACTS, cart lines deleted. Sets: [[o_id, sub_total, tax,
/// ship_cost, total, ship_date, status, lines]] or no rows when the cart is empty.
fn buy_confirm(db: &mut dyn Backend, a: &Args, opts: ProcOptions) -> Result<Sets, ProcError> {
    let sc_id = a.int(0, "sc_id")?;
    let c_id = a.int(1, "c_id")?;
    let cc_type = a.text(2, "cc_type")?;
    let cc_num = a.text(3, "cc_num")?;
    let cc_name = a.text(4, "cc_name")?;
    let cc_expire = a.int(5, "cc_expire")?;
    let ship_type = a.text(6, "ship_type")?;
    let ship_addr = a.opt(7).cloned();
    let fault = match a.opt(8).and_then(|v| v.as_str()) {
        None => None,
        Some(f) if !opts.allow_faults => return Err(bad(format!("buy_confirm: fault '{f}' asked for but fault injection is disabled on this db tier"))),
        Some("after_order_lines") => Some(Fault::AfterOrderLines),
        Some("before_commit") => Some(Fault::BeforeCommit),
        Some(f) => return Err(bad(format!("buy_confirm: unknown fault '{f}'"))),
    };
    transaction(db, true, |db| {
        let now = now_s();
        let mut lines = db.query(
            "SELECT scl_i_id, scl_qty, i_cost FROM shopping_cart_line, item WHERE scl_sc_id = ? AND scl_i_id = i_id ORDER BY scl_i_id",
            &[sc_id.into()],
        )?;
        if lines.is_empty() {
            return Ok(vec![vec![]]);
        }
        lines.sort_by_key(|r| r[0].as_i64());
        let cust = db.query("SELECT c_discount, c_addr_id FROM customer WHERE c_id = ?", &[c_id.into()])?;
        let Some(cust) = cust.first() else {
            return Err(tag(err(ProcErrorKind::NotFound, format!("no customer {c_id}"))));
        };
        let discount = cust[0].as_f64().unwrap_or(0.0);
        let bill = cust[1].as_i64().unwrap_or(1);
        let ship = match &ship_addr {
            Some(o) if o.is_object() => address_id(db, o)?,
            _ => bill,
        };
        let qty: i64 = lines.iter().map(|r| r[1].as_i64().unwrap_or(0)).sum();
        let gross: f64 = lines.iter().map(|r| r[2].as_f64().unwrap_or(0.0) * r[1].as_i64().unwrap_or(0) as f64).sum();
        let sub = cents(gross * (1.0 - discount));
        let tax = cents(sub * TAX_RATE);
        let shipc = ship_cost(qty);
        let total = cents(sub + tax + shipc);
        // Ship date: today + 0..7 days, drawn from the clock's low bits.
        let ship_date = now + 86_400 * ((now as u64 ^ (sc_id as u64).wrapping_mul(0x9E37_79B9)) % 8) as i64;
        let status = ORDER_STATUS[2];
        let r = db.query(
            "INSERT INTO orders (o_c_id, o_date, o_sub_total, o_tax, o_total, o_ship_type, o_ship_date, o_bill_addr_id, \
             o_ship_addr_id, o_status) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING o_id",
            &[c_id.into(), now.into(), sub.into(), tax.into(), total.into(), ship_type.clone().into(), ship_date.into(), bill.into(), ship.into(), status.into()],
        )?;
        let o_id = r.first().and_then(|r| r[0].as_i64()).ok_or("no o_id returned")?;
        for (k, l) in lines.iter().enumerate() {
            let (i_id, n) = (l[0].as_i64().unwrap_or(0), l[1].as_i64().unwrap_or(0));
            db.exec(
                "INSERT INTO order_line (ol_id, ol_o_id, ol_i_id, ol_qty, ol_discount, ol_comments) VALUES (?, ?, ?, ?, ?, ?)",
                &[(k as i64 + 1).into(), o_id.into(), i_id.into(), n.into(), Value::Real(discount), "".into()],
            )?;
            db.exec(
                "UPDATE item SET i_stock = CASE WHEN i_stock - ? < 10 THEN i_stock - ? + 21 ELSE i_stock - ? END WHERE i_id = ?",
                &[n.into(), n.into(), n.into(), i_id.into()],
            )?;
        }
        if fault == Some(Fault::AfterOrderLines) {
            return Err(tag(err(ProcErrorKind::Fault, "injected failure after the order lines")));
        }
        // Payment gateway emulation: authorisation id derived from the order.
        let auth = format!("AUTH{:011}", (o_id as u64).wrapping_mul(2_654_435_761) % 100_000_000_000);
        let co = db.query("SELECT addr_co_id FROM address WHERE addr_id = ?", &[bill.into()])?.first().and_then(|r| r[0].as_i64()).unwrap_or(1);
        db.exec(
            "INSERT INTO cc_xacts (cx_o_id, cx_type, cx_num, cx_name, cx_expire, cx_auth_id, cx_xact_amt, cx_xact_date, cx_co_id) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            &[o_id.into(), cc_type.clone().into(), cc_num.clone().into(), cc_name.clone().into(), cc_expire.into(), auth.into(), total.into(), now.into(), co.into()],
        )?;
        db.exec("DELETE FROM shopping_cart_line WHERE scl_sc_id = ?", &[sc_id.into()])?;
        if fault == Some(Fault::BeforeCommit) {
            return Err(tag(err(ProcErrorKind::Fault, "injected failure before commit")));
        }
        Ok(vec![vec![vec![
            o_id.into(),
            sub.into(),
            tax.into(),
            shipc.into(),
            total.into(),
            ship_date.into(),
            status.into(),
            (lines.len() as i64).into(),
        ]]])
    })
    .map_err(dberr)
}

/// order_display(uname, passwd): the customer's most recent order. Sets:
/// [[o_id, c_fname, c_lname, c_phone, c_email, o_date, o_sub_total, o_tax, o_total,
///   o_ship_type, o_ship_date, o_status, cx_type, cx_auth_id,
///   bill street1, street2, city, state, zip, country,
///   ship street1, street2, city, state, zip, country]] (no rows: no order yet),
/// lines [i_id, i_title, i_publisher, i_cost, ol_qty, ol_discount, ol_comments].
fn order_display(db: &mut dyn Backend, uname: &str, passwd: &str) -> Result<Sets, ProcError> {
    let r = db.query("SELECT c_id, c_passwd FROM customer WHERE c_uname = ?", &[uname.into()]).map_err(dberr)?;
    let Some(row) = r.first() else {
        return Err(err(ProcErrorKind::Auth, format!("unknown user name '{uname}'")));
    };
    if row[1].text() != passwd {
        return Err(err(ProcErrorKind::Auth, format!("wrong password for '{uname}'")));
    }
    let c_id = row[0].as_i64().unwrap_or(0);
    let last = db.query("SELECT MAX(o_id) FROM orders WHERE o_c_id = ?", &[c_id.into()]).map_err(dberr)?;
    let Some(o_id) = last.first().and_then(|r| r[0].as_i64()) else {
        return Ok(vec![vec![], vec![]]);
    };
    let head = db
        .query(
            "SELECT o_id, c_fname, c_lname, c_phone, c_email, o_date, o_sub_total, o_tax, o_total, o_ship_type, o_ship_date, \
             o_status, cx_type, cx_auth_id, b.addr_street1, b.addr_street2, b.addr_city, b.addr_state, b.addr_zip, bc.co_name, \
             s.addr_street1, s.addr_street2, s.addr_city, s.addr_state, s.addr_zip, sc.co_name \
             FROM orders, customer, cc_xacts, address b, country bc, address s, country sc \
             WHERE o_id = ? AND o_c_id = c_id AND cx_o_id = o_id AND o_bill_addr_id = b.addr_id AND b.addr_co_id = bc.co_id \
             AND o_ship_addr_id = s.addr_id AND s.addr_co_id = sc.co_id",
            &[o_id.into()],
        )
        .map_err(dberr)?;
    let lines = db
        .query(
            "SELECT i_id, i_title, i_publisher, i_cost, ol_qty, ol_discount, ol_comments FROM order_line, item \
             WHERE ol_o_id = ? AND ol_i_id = i_id ORDER BY ol_id",
            &[o_id.into()],
        )
        .map_err(dberr)?;
    Ok(vec![head, lines])
}

/// admin_confirm(i_id, new_cost, new_image, new_thumbnail): I_RELATED1..5 become the five
/// items bought most (by quantity) by customers who bought this item within the last
/// 10,000 orders (kept where fewer are found); cost, images and I_PUB_DATE = today are
/// updated in one transaction. Sets: the item (see item_detail).
fn admin_confirm(db: &mut dyn Backend, a: &Args) -> Result<Sets, ProcError> {
    let i_id = a.int(0, "i_id")?;
    let cost = cents(a.real(1, "new_cost")?);
    if !(0.0..=1_000_000.0).contains(&cost) {
        return Err(bad(format!("admin_confirm: cost {cost} out of range")));
    }
    let image = a.text(2, "new_image")?;
    let thumb = a.text(3, "new_thumbnail")?;
    let related = db
        .query(
            "SELECT ol_i_id FROM orders, order_line WHERE o_id = ol_o_id AND ol_i_id <> ? AND o_c_id IN \
             (SELECT o_c_id FROM orders, order_line WHERE o_id = ol_o_id AND o_id > (SELECT MAX(o_id) - 10000 FROM orders) \
              AND ol_i_id = ?) GROUP BY ol_i_id ORDER BY SUM(ol_qty) DESC, ol_i_id LIMIT 5",
            &[i_id.into(), i_id.into()],
        )
        .map_err(dberr)?;
    let related: Vec<i64> = related.iter().filter_map(|r| r[0].as_i64()).collect();
    transaction(db, true, |db| {
        let cur = db.query("SELECT i_related1, i_related2, i_related3, i_related4, i_related5 FROM item WHERE i_id = ?", &[i_id.into()])?;
        let Some(cur) = cur.first() else {
            return Err(tag(err(ProcErrorKind::NotFound, format!("no item {i_id}"))));
        };
        let mut rel: Vec<i64> = related.clone();
        for v in cur {
            if rel.len() >= 5 {
                break;
            }
            if let Some(x) = v.as_i64() {
                if !rel.contains(&x) {
                    rel.push(x);
                }
            }
        }
        while rel.len() < 5 {
            rel.push(i_id);
        }
        let mut p: Vec<Value> = vec![cost.into(), image.clone().into(), thumb.clone().into(), now_s().into()];
        p.extend(rel.iter().map(|&x| Value::Int(x)));
        p.push(i_id.into());
        db.exec(
            "UPDATE item SET i_cost = ?, i_image = ?, i_thumbnail = ?, i_pub_date = ?, i_related1 = ?, i_related2 = ?, \
             i_related3 = ?, i_related4 = ?, i_related5 = ? WHERE i_id = ?",
            &p,
        )?;
        Ok(())
    })
    .map_err(dberr)?;
    item_detail(db, i_id)
}

//! HTML of the 14 TPC-W pages, as the application tier renders them. Every page carries
//! `<meta name="tpcw-interaction" content="ABBR">`, the store logo, navigation buttons and
//! the session (C_ID, SHOPPING_ID) in its links and forms, the way the TPC-W kits pass it.
//! Embedded images per page follow the PHARM servlets (logo, buttons, 5 promotional
//! thumbnails on browse pages, the full-size image on Product Detail).

use crate::db::{Row, Value};
use crate::tpcw::{Interaction, CC_TYPES, SHIP_TYPES, SUBJECTS};

/// Session state carried in URLs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sess {
    pub c_id: Option<i64>,
    pub sc_id: Option<i64>,
}

/// Escapes text for HTML content and attribute values.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

impl Sess {
    /// `path?k=v&...&C_ID=..&SHOPPING_ID=..`, escaped for an attribute.
    pub fn url(&self, path: &str, extra: &[(&str, String)]) -> String {
        let mut p: Vec<(String, String)> = extra.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
        if let Some(c) = self.c_id {
            p.push(("C_ID".into(), c.to_string()));
        }
        if let Some(s) = self.sc_id {
            p.push(("SHOPPING_ID".into(), s.to_string()));
        }
        if p.is_empty() {
            return path.to_string();
        }
        esc(&format!("{path}?{}", crate::http::build_query(&p)))
    }

    /// Hidden inputs carrying the session.
    pub fn hidden(&self) -> String {
        let mut s = String::new();
        if let Some(c) = self.c_id {
            s.push_str(&format!("<input type=\"hidden\" name=\"C_ID\" value=\"{c}\">"));
        }
        if let Some(c) = self.sc_id {
            s.push_str(&format!("<input type=\"hidden\" name=\"SHOPPING_ID\" value=\"{c}\">"));
        }
        s
    }
}

/// Navigation buttons.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Btn {
    Home,
    Search,
    Cart,
    Checkout,
    Orders,
    /// Add this item to the cart.
    Add(i64),
}

fn button(s: &Sess, b: Btn) -> String {
    let (href, img, alt) = match b {
        Btn::Home => (s.url(Interaction::Home.path(), &[]), "home", "Home"),
        Btn::Search => (s.url(Interaction::SearchRequest.path(), &[]), "search", "Search"),
        Btn::Cart => (s.url(Interaction::ShoppingCart.path(), &[]), "cart", "Shopping cart"),
        Btn::Checkout => (s.url(Interaction::CustomerRegistration.path(), &[]), "checkout", "Checkout"),
        Btn::Orders => (s.url(Interaction::OrderInquiry.path(), &[]), "orders", "Order status"),
        Btn::Add(i) => (s.url(Interaction::ShoppingCart.path(), &[("I_ID", i.to_string()), ("ADD_FLAG", "Y".into())]), "add", "Add to cart"),
    };
    format!("<a href=\"{href}\"><img src=\"/img/btn/{img}.png\" alt=\"{alt}\"></a>")
}

const CSS: &str = "body{margin:0;background:#f4efe6;color:#2b2b2b;font:15px/1.45 Georgia,'Times New Roman',serif}\
header{background:#0f3d3e;padding:10px 24px;display:flex;align-items:center;gap:28px;flex-wrap:wrap;box-shadow:0 2px 6px rgba(0,0,0,.25)}\
header nav{display:flex;gap:8px;flex-wrap:wrap}header nav img{display:block}\
.wrap{max-width:1000px;margin:0 auto;padding:16px 24px}\
h1{font-size:26px;margin:8px 0 14px;color:#0f3d3e;font-weight:normal}\
h2{font-size:17px;color:#8b1e2d;border-bottom:1px solid #d9cfbf;padding-bottom:4px;margin-top:22px;font-weight:normal;letter-spacing:.04em;text-transform:uppercase}\
a{color:#1f4e79;text-decoration:none}a:hover{text-decoration:underline}\
.greet{font-style:italic;color:#555}\
.promo{display:flex;gap:16px;background:#fffaf0;border:1px solid #e3d8c3;padding:12px 14px;border-radius:6px;margin:12px 0 4px}\
.promo a{width:170px;font-size:12.5px;display:flex;gap:8px;align-items:flex-start;color:#333}\
.promo img{width:48px;height:72px;box-shadow:2px 2px 4px rgba(0,0,0,.3);flex:none}\
table.list{width:100%;border-collapse:collapse;background:#fff;box-shadow:0 1px 3px rgba(0,0,0,.08)}\
table.list th{background:#0f3d3e;color:#fff;text-align:left;padding:6px 10px;font-weight:normal}\
table.list td{padding:5px 10px;border-bottom:1px solid #eee4d3}table.list tr:nth-child(even) td{background:#fbf7ef}\
td.num,table.list th.num{text-align:right}\
.subjects{columns:3;column-gap:28px;background:#fff;padding:12px 18px;border:1px solid #e3d8c3;border-radius:6px}\
.subjects div{padding:2px 0;break-inside:avoid}.subjects span{color:#777;font-size:13px}\
.book{display:flex;gap:28px;align-items:flex-start}.book img.cover{max-width:240px;height:auto;box-shadow:4px 4px 10px rgba(0,0,0,.35)}\
.book dl{display:grid;grid-template-columns:130px 1fr;gap:3px 10px;margin:10px 0}.book dt{color:#777}.book dd{margin:0}\
.price{font-size:24px;color:#8b1e2d}.srp{text-decoration:line-through;color:#888}.save{color:#2e6b3f}\
.desc{max-width:640px}.by{color:#555;font-size:17px;margin-top:-8px}\
form.box{background:#fff;border:1px solid #e3d8c3;padding:14px 18px;border-radius:6px;max-width:720px}\
form.box label{display:inline-block;width:170px;color:#555}\
input,select,textarea{font:inherit;padding:3px 6px;margin:3px 0;border:1px solid #bbb;border-radius:3px}\
.go{background:#8b1e2d;color:#fff;border:0;padding:7px 18px;border-radius:4px;cursor:pointer;margin-top:8px}\
.note{background:#fff3cd;border:1px solid #e6d28a;padding:8px 12px;border-radius:4px}\
.err{background:#f8d7da;border:1px solid #e0a4ab;padding:8px 12px;border-radius:4px}\
.totals{margin-top:8px;float:right;min-width:260px}.totals td{padding:2px 8px}\
footer{clear:both;color:#777;font-size:12px;text-align:center;padding:26px}";

/// Wraps a page body in the common layout.
pub fn layout(i: Interaction, title: &str, s: &Sess, buttons: &[Btn], body: &str) -> String {
    let mut nav = String::new();
    for &b in buttons {
        nav.push_str(&button(s, b));
    }
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta name=\"tpcw-interaction\" content=\"{abbr}\"><meta name=\"viewport\" content=\"width=device-width\">\
<title>{title} | TPC-W Bookstore</title><style>{CSS}</style></head>\n<body><header>\
<a href=\"{home}\"><img src=\"/img/logo.png\" alt=\"TPC-W Bookstore\" width=\"300\" height=\"28\"></a><nav>{nav}</nav></header>\n\
<div class=\"wrap\">{body}</div>\n<footer>TPC-W Bookstore &middot; {name} &middot; served by interlab datacenter (web, application and database tiers)</footer>\
</body></html>\n",
        abbr = i.abbr(),
        title = esc(title),
        home = s.url(Interaction::Home.path(), &[]),
        name = esc(i.name()),
    )
}

/// Column accessors.
pub fn t(r: &Row, i: usize) -> String {
    r.get(i).map(|v| v.text()).unwrap_or_default()
}
pub fn n(r: &Row, i: usize) -> i64 {
    r.get(i).and_then(Value::as_i64).unwrap_or(0)
}
pub fn f(r: &Row, i: usize) -> f64 {
    r.get(i).and_then(Value::as_f64).unwrap_or(0.0)
}

/// Dollars with two decimals and thousands separators.
pub fn money(x: f64) -> String {
    let c = (x * 100.0).round() as i64;
    let (sign, c) = if c < 0 { ("-", -c) } else { ("", c) };
    let whole = (c / 100).to_string();
    let mut w = String::new();
    for (k, ch) in whole.chars().enumerate() {
        if k > 0 && (whole.len() - k) % 3 == 0 {
            w.push(',');
        }
        w.push(ch);
    }
    format!("{sign}${w}.{:02}", c % 100)
}

/// Unix seconds to YYYY-MM-DD (proleptic Gregorian, UTC).
pub fn ymd(secs: i64) -> String {
    let z = secs.div_euclid(86_400) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + if m <= 2 { 1 } else { 0 };
    format!("{y:04}-{m:02}-{d:02}")
}

/// Promotional block: up to five related items as thumbnails (promo rows: i_id, thumbnail, title).
pub fn promo(s: &Sess, rows: &[Row]) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let mut h = String::from("<div class=\"promo\">");
    for r in rows.iter().take(5) {
        let title = t(r, 2);
        let short: String = if title.chars().count() > 44 { title.chars().take(42).collect::<String>() + "\u{2026}" } else { title };
        h.push_str(&format!(
            "<a href=\"{}\"><img src=\"{}\" alt=\"\"><span>{}</span></a>",
            s.url(Interaction::ProductDetail.path(), &[("I_ID", n(r, 0).to_string())]),
            esc(&t(r, 1)),
            esc(&short)
        ));
    }
    h.push_str("</div>");
    h
}

fn item_link(s: &Sess, id: i64, title: &str) -> String {
    format!("<a href=\"{}\">{}</a>", s.url(Interaction::ProductDetail.path(), &[("I_ID", id.to_string())]), esc(title))
}

fn subject_name(sub: &str) -> String {
    let mut o = String::new();
    for (i, w) in sub.split('-').enumerate() {
        if i > 0 {
            o.push('-');
        }
        let lw = w.to_ascii_lowercase();
        let mut c = lw.chars();
        if let Some(f) = c.next() {
            o.push(f.to_ascii_uppercase());
            o.push_str(c.as_str());
        }
    }
    o.replace("Non-Fiction", "Non-fiction").replace("Science-Nature", "Science & Nature").replace("Science-Fiction", "Science Fiction").replace("Self-Help", "Self-help")
}

/// Home: greeting (first, last name when the customer is known), promotion, subjects.
pub fn home(s: &Sess, name: Option<(String, String)>, promo_rows: &[Row]) -> String {
    let greet = match name {
        Some((f, l)) => format!("<p class=\"greet\">Welcome back, {} {}.</p>", esc(&f), esc(&l)),
        None => "<p class=\"greet\">Welcome, guest. Sign in at checkout to use your saved address.</p>".into(),
    };
    let mut subj = String::from("<div class=\"subjects\">");
    for sub in SUBJECTS {
        subj.push_str(&format!(
            "<div><b>{}</b> <span>&mdash; <a href=\"{}\">new</a> &middot; <a href=\"{}\">best sellers</a></span></div>",
            esc(&subject_name(sub)),
            s.url(Interaction::NewProducts.path(), &[("subject", sub.to_string())]),
            s.url(Interaction::BestSellers.path(), &[("subject", sub.to_string())]),
        ));
    }
    subj.push_str("</div>");
    let body = format!(
        "<h1>Books for every shelf</h1>{greet}<h2>Our picks for you</h2>{}<h2>Browse by subject</h2>{subj}",
        promo(s, promo_rows)
    );
    layout(Interaction::Home, "Home", s, &[Btn::Home, Btn::Search, Btn::Cart, Btn::Orders, Btn::Checkout], &body)
}

/// New products (rows: i_id, title, a_fname, a_lname, pub_date, thumbnail).
pub fn new_products(s: &Sess, subject: &str, rows: &[Row], promo_rows: &[Row]) -> String {
    let mut tb = String::from("<table class=\"list\"><tr><th>#</th><th>Title</th><th>Author</th><th>Published</th></tr>");
    for (k, r) in rows.iter().enumerate() {
        tb.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td>{} {}</td><td>{}</td></tr>",
            k + 1,
            item_link(s, n(r, 0), &t(r, 1)),
            esc(&t(r, 2)),
            esc(&t(r, 3)),
            ymd(n(r, 4))
        ));
    }
    tb.push_str("</table>");
    let body = format!("<h1>New in {}</h1>{}<h2>Latest titles</h2>{tb}", esc(&subject_name(subject)), promo(s, promo_rows));
    layout(Interaction::NewProducts, "New Products", s, &[Btn::Home, Btn::Search, Btn::Cart], &body)
}

/// Best sellers (rows: i_id, title, a_fname, a_lname, copies).
pub fn best_sellers(s: &Sess, subject: &str, rows: &[Row], promo_rows: &[Row]) -> String {
    let mut tb = String::from("<table class=\"list\"><tr><th>Rank</th><th>Title</th><th>Author</th><th class=\"num\">Copies sold</th></tr>");
    for (k, r) in rows.iter().enumerate() {
        tb.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td>{} {}</td><td class=\"num\">{}</td></tr>",
            k + 1,
            item_link(s, n(r, 0), &t(r, 1)),
            esc(&t(r, 2)),
            esc(&t(r, 3)),
            n(r, 4)
        ));
    }
    if rows.is_empty() {
        tb.push_str("<tr><td colspan=\"4\">No recent sales in this subject.</td></tr>");
    }
    tb.push_str("</table>");
    let body = format!("<h1>Best sellers in {}</h1>{}<h2>Top 50 of the last 3,333 orders</h2>{tb}", esc(&subject_name(subject)), promo(s, promo_rows));
    layout(Interaction::BestSellers, "Best Sellers", s, &[Btn::Home, Btn::Search, Btn::Cart], &body)
}

fn item_facts(r: &Row) -> String {
    format!(
        "<dl><dt>Publisher</dt><dd>{}</dd><dt>Published</dt><dd>{}</dd><dt>Subject</dt><dd>{}</dd><dt>ISBN</dt><dd>{}</dd>\
<dt>Pages</dt><dd>{}</dd><dt>Binding</dt><dd>{}</dd><dt>Dimensions</dt><dd>{} in</dd><dt>Available</dt><dd>{}</dd><dt>In stock</dt><dd>{}</dd></dl>",
        esc(&t(r, 6)),
        ymd(n(r, 5)),
        esc(&subject_name(&t(r, 7))),
        esc(&t(r, 15)),
        n(r, 16),
        esc(&t(r, 17).to_ascii_lowercase().replace('-', " ")),
        esc(&t(r, 18)),
        ymd(n(r, 13)),
        n(r, 14)
    )
}

fn author(r: &Row) -> String {
    format!("{} {} {}", t(r, 2), t(r, 3), t(r, 4))
}

/// Product detail (item_detail row and its related items: i_id, i_title).
pub fn product_detail(s: &Sess, r: &Row, related: &[Row]) -> String {
    let (srp, cost) = (f(r, 11), f(r, 12));
    let save = if srp > 0.0 { ((srp - cost) / srp * 100.0).round() } else { 0.0 };
    let body = format!(
        "<div class=\"book\"><img class=\"cover\" src=\"{img}\" alt=\"Cover of {title}\"><div>\
<h1>{title}</h1><p class=\"by\">by {author}</p>\
<p><span class=\"price\">{cost}</span> &nbsp;<span class=\"srp\">{srp}</span> &nbsp;<span class=\"save\">you save {save}%</span></p>{facts}\
<p class=\"desc\">{desc}</p>{rel}<p><a href=\"{admin}\">Update this item (administrators)</a></p></div></div>",
        img = esc(&t(r, 10)),
        title = esc(&t(r, 1)),
        author = esc(&author(r)),
        cost = money(cost),
        srp = money(srp),
        facts = item_facts(r),
        desc = esc(&t(r, 8)),
        admin = s.url(Interaction::AdminRequest.path(), &[("I_ID", n(r, 0).to_string())]),
        rel = if related.is_empty() {
            String::new()
        } else {
            let links: Vec<String> = related.iter().map(|x| item_link(s, n(x, 0), &t(x, 1))).collect();
            format!("{}{}</p>", crate::strict::RELATED_ITEMS, links.join(" &middot; "))
        },
    );
    layout(Interaction::ProductDetail, &t(r, 1), s, &[Btn::Home, Btn::Search, Btn::Cart, Btn::Add(n(r, 0))], &body)
}

/// Search request form.
pub fn search_request(s: &Sess, promo_rows: &[Row]) -> String {
    let body = format!(
        "<h1>Search the catalogue</h1><form class=\"box\" action=\"{}\" method=\"get\">{}\
<label for=\"st\">Search by</label><select id=\"st\" name=\"search_type\"><option value=\"author\">Author</option>\
<option value=\"title\" selected>Title</option><option value=\"subject\">Subject</option></select><br>\
<label for=\"ss\">Words</label><input id=\"ss\" name=\"search_string\" size=\"40\" placeholder=\"e.g. Ogal, or a subject such as HISTORY\"><br>\
<input class=\"go\" type=\"submit\" value=\"Search\"></form><h2>You might also like</h2>{}",
        Interaction::SearchResults.path(),
        s.hidden(),
        promo(s, promo_rows)
    );
    layout(Interaction::SearchRequest, "Search", s, &[Btn::Home, Btn::Cart], &body)
}

/// Search results (rows: i_id, title, a_fname, a_lname).
pub fn search_results(s: &Sess, kind: &str, key: &str, rows: &[Row], promo_rows: &[Row]) -> String {
    let mut tb = String::from("<table class=\"list\"><tr><th>#</th><th>Title</th><th>Author</th></tr>");
    for (k, r) in rows.iter().enumerate() {
        tb.push_str(&format!("<tr><td>{}</td><td>{}</td><td>{} {}</td></tr>", k + 1, item_link(s, n(r, 0), &t(r, 1)), esc(&t(r, 2)), esc(&t(r, 3))));
    }
    if rows.is_empty() {
        tb.push_str("<tr><td colspan=\"3\">Nothing matched. Try fewer letters.</td></tr>");
    }
    tb.push_str("</table>");
    let body = format!(
        "<h1>Results for {} &ldquo;{}&rdquo;</h1><p>{} match{} (at most 50 shown).</p>{tb}<h2>You might also like</h2>{}",
        esc(kind),
        esc(key),
        rows.len(),
        if rows.len() == 1 { "" } else { "es" },
        promo(s, promo_rows)
    );
    layout(Interaction::SearchResults, "Search Results", s, &[Btn::Home, Btn::Search, Btn::Cart], &body)
}

/// Cart totals (lines: i_id, title, cost, srp, backing, qty, thumbnail): (subtotal, qty).
pub fn cart_totals(lines: &[Row]) -> (f64, i64) {
    (lines.iter().map(|r| f(r, 2) * n(r, 5) as f64).sum(), lines.iter().map(|r| n(r, 5)).sum())
}

/// Shopping cart with its quantity form.
pub fn shopping_cart(s: &Sess, lines: &[Row], promo_rows: &[Row]) -> String {
    let mut form = format!("<form class=\"box\" action=\"{}\" method=\"get\">{}", Interaction::ShoppingCart.path(), s.hidden());
    form.push_str("<table class=\"list\"><tr><th>Title</th><th>Binding</th><th class=\"num\">List</th><th class=\"num\">Our price</th><th>Qty</th></tr>");
    for (k, r) in lines.iter().enumerate() {
        form.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td class=\"num srp\">{}</td><td class=\"num\">{}</td>\
<td><input type=\"hidden\" name=\"I_ID_{k}\" value=\"{}\"><input name=\"QTY_{k}\" value=\"{}\" size=\"3\"></td></tr>",
            item_link(s, n(r, 0), &t(r, 1)),
            esc(&t(r, 4).to_ascii_lowercase()),
            money(f(r, 3)),
            money(f(r, 2)),
            n(r, 0),
            n(r, 5)
        ));
    }
    let (sub, qty) = cart_totals(lines);
    form.push_str(&format!(
        "</table><p>{qty} book{} &middot; subtotal <b>{}</b> before discount, tax and shipping.</p>\
<input class=\"go\" type=\"submit\" value=\"Update quantities\"></form>",
        if qty == 1 { "" } else { "s" },
        money(sub)
    ));
    let body = format!("<h1>Your shopping cart</h1>{form}<h2>Customers also bought</h2>{}", promo(s, promo_rows));
    layout(Interaction::ShoppingCart, "Shopping Cart", s, &[Btn::Home, Btn::Checkout], &body)
}

fn field(label: &str, name: &str, value: &str, size: usize) -> String {
    format!("<label for=\"{name}\">{label}</label><input id=\"{name}\" name=\"{name}\" value=\"{}\" size=\"{size}\"><br>", esc(value))
}

/// Customer registration (uname prefilled for a known customer).
pub fn customer_registration(s: &Sess, uname: Option<&str>) -> String {
    let returning = uname.is_some();
    let mut countries = String::new();
    for (k, (c, _, _)) in crate::populate::COUNTRIES.iter().enumerate().take(12) {
        countries.push_str(&format!("<option{}>{}</option>", if k == 0 { " selected" } else { "" }, esc(c)));
    }
    let body = format!(
        "<h1>Checkout: who is buying?</h1><form class=\"box\" action=\"{}\" method=\"post\">{}\
<p><input type=\"radio\" name=\"RETURNING_FLAG\" value=\"Y\"{}> I am a returning customer</p>\
{}<label for=\"PASSWD\">Password</label><input id=\"PASSWD\" name=\"PASSWD\" type=\"password\" size=\"20\"><br>\
<p><input type=\"radio\" name=\"RETURNING_FLAG\" value=\"N\"{}> I am a new customer</p>\
{}{}{}{}{}{}{}<label for=\"COUNTRY\">Country</label><select id=\"COUNTRY\" name=\"COUNTRY\">{countries}</select><br>\
{}{}{}<label for=\"DATA\">About you</label><textarea id=\"DATA\" name=\"DATA\" rows=\"2\" cols=\"40\"></textarea><br>\
<input class=\"go\" type=\"submit\" value=\"Continue\"></form>",
        Interaction::BuyRequest.path(),
        s.hidden(),
        if returning { " checked" } else { "" },
        field("User name", "UNAME", uname.unwrap_or(""), 20),
        if returning { "" } else { " checked" },
        field("First name", "FNAME", "", 20),
        field("Last name", "LNAME", "", 20),
        field("Street", "STREET1", "", 40),
        field("Street (cont.)", "STREET2", "", 40),
        field("City", "CITY", "", 30),
        field("State", "STATE", "", 20),
        field("Zip code", "ZIP", "", 10),
        field("Phone", "PHONE", "", 16),
        field("E-mail", "EMAIL", "", 40),
        field("Birth date", "BIRTHDATE", "1970-01-01", 10),
    );
    layout(Interaction::CustomerRegistration, "Customer Registration", s, &[Btn::Home, Btn::Search, Btn::Cart], &body)
}

fn totals_table(sub_gross: f64, discount: f64, qty: i64) -> String {
    let sub = (sub_gross * (1.0 - discount) * 100.0).round() / 100.0;
    let tax = (sub * crate::db::procs::TAX_RATE * 100.0).round() / 100.0;
    let ship = crate::db::procs::ship_cost(qty);
    format!(
        "<table class=\"totals\"><tr><td>Subtotal ({:.0}% discount)</td><td class=\"num\">{}</td></tr><tr><td>Tax 8.25%</td><td class=\"num\">{}</td></tr>\
<tr><td>Shipping</td><td class=\"num\">{}</td></tr><tr><td><b>Total</b></td><td class=\"num\"><b>{}</b></td></tr></table>",
        discount * 100.0,
        money(sub),
        money(tax),
        money(ship),
        money(sub + tax + ship)
    )
}

/// Buy request: the customer (customer_row), the cart, payment and shipping form.
pub fn buy_request(s: &Sess, c: &Row, lines: &[Row]) -> String {
    let mut tb = String::from("<table class=\"list\"><tr><th>Title</th><th class=\"num\">Price</th><th class=\"num\">Qty</th></tr>");
    for r in lines {
        tb.push_str(&format!("<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>", esc(&t(r, 1)), money(f(r, 2)), n(r, 5)));
    }
    tb.push_str("</table>");
    let (gross, qty) = cart_totals(lines);
    let mut cards = String::new();
    for (k, c) in CC_TYPES.iter().enumerate() {
        cards.push_str(&format!("<option{}>{c}</option>", if k == 0 { " selected" } else { "" }));
    }
    let mut ships = String::new();
    for (k, c) in SHIP_TYPES.iter().enumerate() {
        ships.push_str(&format!("<option{}>{c}</option>", if k == 0 { " selected" } else { "" }));
    }
    let body = format!(
        "<h1>Review your order</h1><p>Billing to <b>{} {}</b> ({}), {}, {} {} {}, {}. User name {}.</p>{tb}{}\
<form class=\"box\" action=\"{}\" method=\"post\" style=\"clear:both\">{}\
<label for=\"CC_TYPE\">Card</label><select id=\"CC_TYPE\" name=\"CC_TYPE\">{cards}</select><br>\
{}{}{}<label for=\"SHIPPING\">Shipping</label><select id=\"SHIPPING\" name=\"SHIPPING\">{ships}</select><br>\
<p>Ship to a different address (optional):</p>{}{}{}{}{}{}\
<input class=\"go\" type=\"submit\" value=\"Place order\"></form>",
        esc(&t(c, 3)),
        esc(&t(c, 4)),
        esc(&t(c, 6)),
        esc(&t(c, 8)),
        esc(&t(c, 10)),
        esc(&t(c, 11)),
        esc(&t(c, 12)),
        esc(&t(c, 13)),
        esc(&t(c, 1)),
        totals_table(gross, f(c, 7), qty),
        Interaction::BuyConfirm.path(),
        s.hidden(),
        field("Card number", "CC_NUMBER", "", 20),
        field("Name on card", "CC_NAME", &format!("{} {}", t(c, 3), t(c, 4)), 30),
        field("Expires (YYYY-MM)", "CC_EXPIRY", "", 8),
        field("Street", "STREET_1", "", 40),
        field("Street (cont.)", "STREET_2", "", 40),
        field("City", "CITY", "", 30),
        field("State", "STATE", "", 20),
        field("Zip code", "ZIP", "", 10),
        field("Country", "COUNTRY", "", 20),
    );
    layout(Interaction::BuyRequest, "Buy Request", s, &[Btn::Home, Btn::Cart], &body)
}

/// Buy confirm (row: o_id, sub, tax, ship, total, ship_date, status, lines) or an empty cart.
pub fn buy_confirm(s: &Sess, r: Option<&Row>) -> String {
    let body = match r {
        Some(r) => format!(
            "<h1>Thank you for your order</h1><p class=\"note\">Order <b>#{}</b> is {}: {} line{}, total <b>{}</b> \
(subtotal {}, tax {}, shipping {}). It ships by {}.</p><p>Keep browsing, or check the order later under Order status.</p>",
            n(r, 0),
            esc(&t(r, 6).to_ascii_lowercase()),
            n(r, 7),
            if n(r, 7) == 1 { "" } else { "s" },
            money(f(r, 4)),
            money(f(r, 1)),
            money(f(r, 2)),
            money(f(r, 3)),
            ymd(n(r, 5))
        ),
        None => "<h1>Your cart is empty</h1><p class=\"note\">There was nothing to order.</p>".into(),
    };
    layout(Interaction::BuyConfirm, "Buy Confirm", s, &[Btn::Home, Btn::Search], &body)
}

/// Order inquiry (user name prefilled for a known customer).
pub fn order_inquiry(s: &Sess, uname: &str) -> String {
    let body = format!(
        "<h1>Order status</h1><form class=\"box\" action=\"{}\" method=\"post\">{}{}\
<label for=\"PASSWD\">Password</label><input id=\"PASSWD\" name=\"PASSWD\" type=\"password\" size=\"20\"><br>\
<input class=\"go\" type=\"submit\" value=\"Show my last order\"></form>",
        Interaction::OrderDisplay.path(),
        s.hidden(),
        field("User name", "UNAME", uname, 20)
    );
    layout(Interaction::OrderInquiry, "Order Inquiry", s, &[Btn::Home, Btn::Search], &body)
}

/// Order display (order_display result sets).
pub fn order_display(s: &Sess, head: Option<&Row>, lines: &[Row]) -> String {
    let body = match head {
        None => "<h1>Your orders</h1><p class=\"note\">You have not placed an order yet.</p>".to_string(),
        Some(h) => {
            let mut tb = String::from("<table class=\"list\"><tr><th>Title</th><th>Publisher</th><th class=\"num\">Price</th><th class=\"num\">Qty</th><th class=\"num\">Discount</th></tr>");
            for r in lines {
                tb.push_str(&format!(
                    "<tr><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{:.0}%</td></tr>",
                    item_link(s, n(r, 0), &t(r, 1)),
                    esc(&t(r, 2)),
                    money(f(r, 3)),
                    n(r, 4),
                    f(r, 5) * 100.0
                ));
            }
            tb.push_str("</table>");
            format!(
                "<h1>Order #{} &middot; {}</h1><p>{} {} &middot; {} &middot; {}</p><p>Ordered {}, shipping by {} ({}). Paid by {} (authorisation {}).</p>\
<table class=\"list\"><tr><th>Bill to</th><th>Ship to</th></tr><tr><td>{}<br>{}<br>{}, {} {}<br>{}</td><td>{}<br>{}<br>{}, {} {}<br>{}</td></tr></table>\
<h2>Items</h2>{tb}<table class=\"totals\"><tr><td>Subtotal</td><td class=\"num\">{}</td></tr><tr><td>Tax</td><td class=\"num\">{}</td></tr>\
<tr><td><b>Total</b></td><td class=\"num\"><b>{}</b></td></tr></table>",
                n(h, 0),
                esc(&t(h, 11).to_ascii_lowercase()),
                esc(&t(h, 1)),
                esc(&t(h, 2)),
                esc(&t(h, 3)),
                esc(&t(h, 4)),
                ymd(n(h, 5)),
                ymd(n(h, 10)),
                esc(&t(h, 9)),
                esc(&t(h, 12)),
                esc(&t(h, 13)),
                esc(&t(h, 14)),
                esc(&t(h, 15)),
                esc(&t(h, 16)),
                esc(&t(h, 17)),
                esc(&t(h, 18)),
                esc(&t(h, 19)),
                esc(&t(h, 20)),
                esc(&t(h, 21)),
                esc(&t(h, 22)),
                esc(&t(h, 23)),
                esc(&t(h, 24)),
                esc(&t(h, 25)),
                money(f(h, 6)),
                money(f(h, 7)),
                money(f(h, 8))
            )
        }
    };
    layout(Interaction::OrderDisplay, "Order Display", s, &[Btn::Home, Btn::Search], &body)
}

/// Admin request: the item and a form to change its cost and images.
pub fn admin_request(s: &Sess, r: &Row) -> String {
    let body = format!(
        "<h1>Update item #{id}</h1><div class=\"book\"><img class=\"cover\" src=\"{img}\" alt=\"\"><div><h2>{title}</h2>\
<p>Thumbnail: <img src=\"{thumb}\" alt=\"\" style=\"vertical-align:middle\"></p>\
<form class=\"box\" action=\"{action}\" method=\"post\">{hidden}<input type=\"hidden\" name=\"I_ID\" value=\"{id}\">\
<input type=\"hidden\" name=\"I_SRP\" value=\"{srp:.2}\">{cost}{newimg}{newthumb}<input class=\"go\" type=\"submit\" value=\"Update item\"></form></div></div>",
        id = n(r, 0),
        img = esc(&t(r, 10)),
        thumb = esc(&t(r, 9)),
        title = esc(&t(r, 1)),
        action = Interaction::AdminConfirm.path(),
        hidden = s.hidden(),
        srp = f(r, 11),
        cost = field("New cost ($)", "I_NEW_COST", &format!("{:.2}", f(r, 12)), 10),
        newimg = field("New image", "I_NEW_IMAGE", &t(r, 10), 30),
        newthumb = field("New thumbnail", "I_NEW_THUMBNAIL", &t(r, 9), 30),
    );
    layout(Interaction::AdminRequest, "Admin Request", s, &[Btn::Home, Btn::Search], &body)
}

/// Admin confirm: the updated item.
pub fn admin_confirm(s: &Sess, r: &Row) -> String {
    let body = format!(
        "<h1>Item #{} updated</h1><div class=\"book\"><img class=\"cover\" src=\"{}\" alt=\"\"><div><h2>{}</h2>\
<p>Thumbnail: <img src=\"{}\" alt=\"\" style=\"vertical-align:middle\"></p><p>New price <span class=\"price\">{}</span>; related items recomputed.</p>{}</div></div>",
        n(r, 0),
        esc(&t(r, 10)),
        esc(&t(r, 1)),
        esc(&t(r, 9)),
        money(f(r, 12)),
        item_facts(r)
    );
    layout(Interaction::AdminConfirm, "Admin Confirm", s, &[Btn::Home, Btn::Search], &body)
}

/// An error page (status != 200) for interaction `i`.
pub fn error(i: Interaction, s: &Sess, status: u16, msg: &str) -> String {
    let body = format!("<h1>Sorry</h1><p class=\"err\">{} ({status})</p><p>Nothing was changed.</p>", esc(msg));
    layout(i, "Error", s, &[Btn::Home, Btn::Search], &body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::htmlscan::scan;

    #[test]
    fn helpers() {
        assert_eq!(money(1234567.891), "$1,234,567.89");
        assert_eq!(money(0.5), "$0.50");
        assert_eq!(ymd(0), "1970-01-01");
        assert_eq!(ymd(crate::populate::POP_NOW), "2025-01-01");
        assert_eq!(ymd(-86_400), "1969-12-31");
        assert_eq!(esc("<a href=\"x\">&'"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
        assert_eq!(subject_name("SCIENCE-FICTION"), "Science Fiction");
    }

    #[test]
    fn pages_carry_marker_session_and_links() {
        let s = Sess { c_id: Some(12), sc_id: Some(5) };
        let promo_rows: Vec<Row> = (1..=5).map(|i| vec![Value::Int(i), Value::Text(format!("/img/thumb/{i}.png")), "T".into()]).collect();
        let h = home(&s, Some(("Ada".into(), "Lovelace".into())), &promo_rows);
        let p = scan(&h);
        assert!(p.complete);
        assert_eq!(p.interaction.as_deref(), Some("HOME"));
        assert_eq!(p.images.len(), 1 + 5 + 5);
        assert!(p.links_to("/tpcw/new_products").count() == 24);
        assert!(p.links.iter().any(|l| l == "/tpcw/order_inquiry?C_ID=12&SHOPPING_ID=5"));
        let c = customer_registration(&s, Some("OGAL"));
        let f = scan(&c).form_to("/tpcw/buy_request").cloned().unwrap();
        assert_eq!(f.method, "post");
        assert_eq!(f.field("RETURNING_FLAG"), Some("Y"));
        assert_eq!(f.field("UNAME"), Some("OGAL"));
        assert_eq!(f.field("SHOPPING_ID"), Some("5"));
        let e = error(Interaction::BuyConfirm, &s, 500, "boom <x>");
        assert!(e.contains("boom &lt;x&gt;"));
    }
}

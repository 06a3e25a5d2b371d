//! The strict mode of the web tier (`serve --strict`): the bookstore dressed as a
//! third-party servlet TPC-W site, so that the browser emulator's conformance features
//! are exercised by interlab's own tests. In this mode the web tier
//!
//! * serves the pages under the servlet names of the UW-Madison / PHARM kit
//!   (`/tpcw/TPCW_home_interaction` ..., the built-in `servlet` site profile), GET only
//!   (a POST gets 405), with every link, form action and image **relative** to the page
//!   (`TPCW_product_detail_servlet?I_ID=7`, `../tpcw/Images/item/7.jpg`);
//! * turns every form's method into GET;
//! * keeps a servlet-style session: a page other than Home without a known session id
//!   gets 400; the id travels as `;jsessionid=` on every link and form action
//!   ([`Sessions::Url`]) or as a `JSESSIONID` cookie ([`Sessions::Cookie`]);
//! * sends pages with `Transfer-Encoding: chunked`, GIF images (logo, buttons,
//!   thumbnails) with a length and JPEG item images close-delimited (no length, then
//!   the connection closes);
//! * has no scale endpoint (`/tpcw/info` is 404);
//! * links its Product Detail page to no other product (the bookstore's related-items
//!   block is dropped, as the kits' page has none): the browser must make TPC-W's Product
//!   Detail -> Product Detail transition the spec's <CURL> way, from the page before.

use crate::site::Site;
use crate::tpcw::Interaction;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The start of the bookstore's related-items block on Product Detail
/// ([`crate::pages::product_detail`]), which the strict site drops up to its `</p>`.
pub const RELATED_ITEMS: &str = "<h2>Readers also enjoyed</h2><p>";

/// How the strict site carries its session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sessions {
    /// `;jsessionid=ID` on every URL of the page (the Servlet API's `encodeURL`).
    Url,
    /// A `JSESSIONID` cookie (Path=/tpcw).
    Cookie,
}

impl Sessions {
    pub fn parse(s: &str) -> Result<Sessions, String> {
        match s {
            "url" => Ok(Sessions::Url),
            "cookie" => Ok(Sessions::Cookie),
            _ => Err(format!("unknown session mode '{s}': expected url or cookie")),
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Sessions::Url => "url",
            Sessions::Cookie => "cookie",
        }
    }
}

/// Sessions kept at most; idle ones older than [`SESSION_IDLE`] go first when full.
pub const MAX_SESSIONS: usize = 100_000;
/// A session idle this long may be dropped.
pub const SESSION_IDLE: Duration = Duration::from_secs(30 * 60);

/// The strict site's state.
pub struct Strict {
    pub sessions: Sessions,
    site: Site,
    store: Mutex<(HashMap<String, Instant>, u64)>,
    seed: u64,
}

/// What the strict layer made of a request path.
pub enum Route {
    Page(Interaction),
    /// The interlab image path to serve, and whether as JPEG (else GIF).
    Image(String, bool),
    NotFound,
}

impl Strict {
    pub fn new(sessions: Sessions, seed: u64) -> Strict {
        Strict { sessions, site: Site::builtin("servlet").unwrap_or_else(|| unreachable!("built-in profile")), store: Mutex::new((HashMap::new(), 0)), seed }
    }

    /// Maps a request path (path parameters included) to a page or an image.
    pub fn route(&self, path: &str) -> Route {
        let plain = crate::uri::strip_params(path);
        if let Some(img) = plain.strip_prefix("/tpcw/Images/") {
            if let Some(stem) = img.strip_suffix(".jpg") {
                return Route::Image(format!("/img/{stem}.png"), true);
            }
            if let Some(stem) = img.strip_suffix(".gif") {
                return Route::Image(format!("/img/{stem}.png"), false);
            }
            return Route::NotFound;
        }
        match plain.strip_prefix("/tpcw/").and_then(|r| self.site.recognise(r)) {
            Some(i) => Route::Page(i),
            None => Route::NotFound,
        }
    }

    /// The session id a request carries in the mode's way, if known; touched.
    pub fn known(&self, path: &str, cookie: Option<&str>) -> Option<String> {
        let id = match self.sessions {
            Sessions::Url => path.rsplit('/').next().unwrap_or("").split(';').skip(1).find_map(|kv| kv.strip_prefix("jsessionid=").map(str::to_string)),
            Sessions::Cookie => cookie.and_then(|c| c.split(';').find_map(|kv| kv.trim().strip_prefix("JSESSIONID=").map(str::to_string))),
        }?;
        let mut g = self.store.lock().unwrap_or_else(|p| p.into_inner());
        let t = g.0.get_mut(&id)?;
        *t = Instant::now();
        Some(id)
    }

    /// Opens a new session.
    pub fn open(&self) -> String {
        let mut g = self.store.lock().unwrap_or_else(|p| p.into_inner());
        if g.0.len() >= MAX_SESSIONS {
            let now = Instant::now();
            g.0.retain(|_, t| now.duration_since(*t) < SESSION_IDLE);
            if g.0.len() >= MAX_SESSIONS {
                g.0.clear();
            }
        }
        g.1 += 1;
        let n = g.1;
        // splitmix64 of (seed, n): ids that do not reveal the count.
        let mut z = self.seed.wrapping_add(n.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        let id = format!("{:016X}{:08X}", z ^ (z >> 31), n as u32);
        g.0.insert(id.clone(), Instant::now());
        id
    }

    /// Rewrites an interlab page into the servlet layout: relative servlet URLs (with
    /// `;jsessionid=` in URL mode), GET forms, images under `../tpcw/Images/`.
    pub fn rewrite(&self, html: &str, session: &str) -> String {
        let mut out = String::with_capacity(html.len() + html.len() / 8);
        let dropped;
        let mut rest = match html.split_once(RELATED_ITEMS).and_then(|(a, b)| b.split_once("</p>").map(|(_, c)| (a, c))) {
            Some((a, c)) => {
                dropped = format!("{a}{c}");
                dropped.as_str()
            }
            None => html,
        };
        let attrs = ["href=\"", "src=\"", "action=\""];
        loop {
            let next = attrs.iter().filter_map(|a| rest.find(a).map(|i| (i, *a))).min();
            let Some((i, a)) = next else { break };
            out.push_str(&rest[..i + a.len()]);
            rest = &rest[i + a.len()..];
            let end = rest.find('"').unwrap_or(rest.len());
            out.push_str(&self.rewrite_url(&rest[..end], session));
            rest = &rest[end..];
        }
        out.push_str(rest);
        out.replace("method=\"post\"", "method=\"get\"")
    }

    fn rewrite_url(&self, v: &str, session: &str) -> String {
        let (path, query) = match v.split_once('?') {
            Some((p, q)) => (p, Some(q)),
            None => (v, None),
        };
        let tail = |q: Option<&str>| q.map(|q| format!("?{q}")).unwrap_or_default();
        if let Some(img) = path.strip_prefix("/img/").and_then(|p| p.strip_suffix(".png")) {
            let ext = if img.starts_with("item/") { "jpg" } else { "gif" };
            return format!("../tpcw/Images/{img}.{ext}{}", tail(query));
        }
        let i = if path == "/" { Some(Interaction::Home) } else { Interaction::from_path(path) };
        match i {
            Some(i) => {
                let sid = if self.sessions == Sessions::Url { format!(";jsessionid={session}") } else { String::new() };
                format!("{}{sid}{}", self.site.pattern(i), tail(query))
            }
            None => v.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewrites_to_the_servlet_layout() {
        let s = Strict::new(Sessions::Url, 1);
        let h = r#"<a href="/tpcw/product_detail?I_ID=7&amp;C_ID=3"><img src="/img/item/7.png"></a><img src="/img/btn/home.png"><form action="/tpcw/buy_request" method="post"></form><a href="http://x.org/">x</a>"#;
        let r = s.rewrite(h, "AB");
        assert_eq!(
            r,
            r#"<a href="TPCW_product_detail_servlet;jsessionid=AB?I_ID=7&amp;C_ID=3"><img src="../tpcw/Images/item/7.jpg"></a><img src="../tpcw/Images/btn/home.gif"><form action="TPCW_buy_request_servlet;jsessionid=AB" method="get"></form><a href="http://x.org/">x</a>"#
        );
        assert!(matches!(s.route("/tpcw/TPCW_execute_search;jsessionid=AB"), Route::Page(Interaction::SearchResults)));
        assert!(matches!(s.route("/tpcw/Images/item/7.jpg"), Route::Image(ref p, true) if p == "/img/item/7.png"));
        assert!(matches!(s.route("/tpcw/info"), Route::NotFound));
        let id = s.open();
        assert_eq!(s.known(&format!("/tpcw/TPCW_home_interaction;jsessionid={id}"), None), Some(id.clone()));
        assert_eq!(s.known("/tpcw/TPCW_home_interaction;jsessionid=nope", None), None);
        assert_eq!(s.known("/tpcw/TPCW_home_interaction", Some(&format!("JSESSIONID={id}"))), None);
        let c = Strict::new(Sessions::Cookie, 1);
        let id = c.open();
        assert_eq!(c.known("/tpcw/x", Some(&format!("a=b; JSESSIONID={id}"))), Some(id));
        assert_eq!(c.rewrite(r#"<a href="/tpcw/home">"#, "Z"), r#"<a href="TPCW_home_interaction">"#);
    }

    #[test]
    fn product_detail_links_to_no_other_product() {
        let h = "<p>x</p><h2>Readers also enjoyed</h2><p><a href=\"/tpcw/product_detail?I_ID=8\">B</a></p><a href=\"/tpcw/admin_request?I_ID=7\">u</a>";
        let r = Strict::new(Sessions::Cookie, 1).rewrite(h, "Z");
        assert_eq!(r, "<p>x</p><a href=\"TPCW_admin_request_servlet?I_ID=7\">u</a>");
    }
}

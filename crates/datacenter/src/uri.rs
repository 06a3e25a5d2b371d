//! URI references as a browser resolves them (RFC 3986 section 5): a page's `href`,
//! `src` or form `action` against the page's own URL, with dot segments removed, and the
//! path parameters servlet containers use to carry a session (`;jsessionid=...`, the
//! "URL rewriting" of the Servlet specification) kept on the path they belong to.

/// An absolute `http` URI split into its parts (no fragment: browsers never send it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Uri {
    /// `HOST:PORT` (the port always present).
    pub authority: String,
    /// Absolute path, starting with '/', path parameters included.
    pub path: String,
    /// The query without '?', if any.
    pub query: Option<String>,
}

/// Longest reference the browser follows, bytes (longer ones are a page defect).
pub const MAX_URI_BYTES: usize = 8192;

impl Uri {
    /// Parses an absolute `http://` URI.
    pub fn parse(s: &str) -> Result<Uri, String> {
        let u = crate::http::Url::parse(s)?;
        let (path, query) = split_query(&u.target);
        let path = if path.is_empty() { "/".to_string() } else { remove_dot_segments(path) };
        Ok(Uri { authority: u.authority, path, query: query.map(str::to_string) })
    }

    /// The request target: path and query.
    pub fn target(&self) -> String {
        match &self.query {
            Some(q) => format!("{}?{q}", self.path),
            None => self.path.clone(),
        }
    }

    /// The path without path parameters (`/a;x=1/b;jsessionid=2` -> `/a/b`).
    pub fn plain_path(&self) -> String {
        strip_params(&self.path)
    }

    /// Resolves a reference found in a page at this URI (RFC 3986 5.2.2, strict).
    /// Only `http` references to any authority are returned; other schemes (`mailto:`,
    /// `javascript:`, `https:`) are None.
    pub fn resolve(&self, reference: &str) -> Option<Uri> {
        let r = reference.trim();
        if r.len() > MAX_URI_BYTES {
            return None;
        }
        let r = r.split('#').next().unwrap_or("");
        // Scheme: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":" before any '/', '?'.
        if let Some(colon) = r.find(':') {
            let scheme = &r[..colon];
            let is_scheme = !scheme.is_empty()
                && scheme.as_bytes()[0].is_ascii_alphabetic()
                && scheme.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'-' || b == b'.');
            if is_scheme {
                if !scheme.eq_ignore_ascii_case("http") {
                    return None;
                }
                let rest = &r[colon + 1..];
                if rest.starts_with("//") {
                    return Uri::parse(&format!("http:{rest}")).ok();
                }
                // "http:path" with the base's scheme: RFC 3986 strict treats it as having
                // a scheme; resolve its path against nothing (an absolute path only).
                let (p, q) = split_query(rest);
                return Some(Uri { authority: self.authority.clone(), path: remove_dot_segments(p), query: q.map(str::to_string) });
            }
        }
        if let Some(rest) = r.strip_prefix("//") {
            return Uri::parse(&format!("http://{rest}")).ok();
        }
        let (p, q) = split_query(r);
        let (path, query) = if p.is_empty() {
            (self.path.clone(), q.map(str::to_string).or_else(|| self.query.clone()))
        } else if p.starts_with('/') {
            (remove_dot_segments(p), q.map(str::to_string))
        } else {
            (remove_dot_segments(&merge(&self.path, p)), q.map(str::to_string))
        };
        Some(Uri { authority: self.authority.clone(), path, query })
    }

    /// This URI's path relative to `prefix` (a directory path ending in '/'), without
    /// path parameters; None when it is not under the prefix.
    pub fn relative_to(&self, prefix: &str) -> Option<String> {
        let plain = self.plain_path();
        plain.strip_prefix(prefix).map(str::to_string)
    }

    /// The value of path parameter `name` on the last segment (`;jsessionid=ABC` -> ABC).
    pub fn path_param(&self, name: &str) -> Option<String> {
        let last = self.path.rsplit('/').next().unwrap_or("");
        last.split(';').skip(1).find_map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            k.eq_ignore_ascii_case(name).then(|| v.to_string())
        })
    }
}

fn split_query(s: &str) -> (&str, Option<&str>) {
    match s.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (s, None),
    }
}

/// RFC 3986 5.2.3: the base path up to its last '/', then the reference path.
fn merge(base: &str, r: &str) -> String {
    match base.rfind('/') {
        Some(i) => format!("{}{r}", &base[..=i]),
        None => format!("/{r}"),
    }
}

/// Removes path parameters from every segment.
pub fn strip_params(path: &str) -> String {
    path.split('/').map(|seg| seg.split(';').next().unwrap_or("")).collect::<Vec<_>>().join("/")
}

/// RFC 3986 5.2.4.
pub fn remove_dot_segments(input: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    let absolute = input.starts_with('/');
    let segs: Vec<&str> = input.split('/').collect();
    let n = segs.len();
    for (k, seg) in segs.iter().enumerate() {
        if k == 0 && absolute {
            continue;
        }
        let last = k + 1 == n;
        match *seg {
            "." => {
                if last {
                    out.push("");
                }
            }
            ".." => {
                out.pop();
                if last {
                    out.push("");
                }
            }
            s => out.push(s),
        }
    }
    let joined = out.join("/");
    if absolute {
        format!("/{joined}")
    } else {
        joined
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3986_normal_and_abnormal_examples() {
        // RFC 3986 5.4.1 and 5.4.2, with the base's scheme http and host a:80.
        let base = Uri::parse("http://a/b/c/d;p?q").unwrap();
        let cases = [
            ("g", "/b/c/g", None),
            ("./g", "/b/c/g", None),
            ("g/", "/b/c/g/", None),
            ("/g", "/g", None),
            ("?y", "/b/c/d;p", Some("y")),
            ("g?y", "/b/c/g", Some("y")),
            ("#s", "/b/c/d;p", Some("q")),
            ("g#s", "/b/c/g", None),
            (";x", "/b/c/;x", None),
            ("g;x", "/b/c/g;x", None),
            ("", "/b/c/d;p", Some("q")),
            (".", "/b/c/", None),
            ("./", "/b/c/", None),
            ("..", "/b/", None),
            ("../", "/b/", None),
            ("../g", "/b/g", None),
            ("../..", "/", None),
            ("../../", "/", None),
            ("../../g", "/g", None),
            ("../../../g", "/g", None),
            ("../../../../g", "/g", None),
            ("/./g", "/g", None),
            ("/../g", "/g", None),
            ("g.", "/b/c/g.", None),
            (".g", "/b/c/.g", None),
            ("g..", "/b/c/g..", None),
            ("..g", "/b/c/..g", None),
            ("./../g", "/b/g", None),
            ("./g/.", "/b/c/g/", None),
            ("g/./h", "/b/c/g/h", None),
            ("g/../h", "/b/c/h", None),
            ("g;x=1/./y", "/b/c/g;x=1/y", None),
            ("g;x=1/../y", "/b/c/y", None),
            ("g?y/./x", "/b/c/g", Some("y/./x")),
        ];
        for (r, path, q) in cases {
            let u = base.resolve(r).unwrap_or_else(|| panic!("{r}"));
            assert_eq!((u.path.as_str(), u.query.as_deref()), (path, q), "reference {r}");
            assert_eq!(u.authority, "a:80");
        }
        assert_eq!(base.resolve("//g").unwrap().authority, "g:80");
        assert_eq!(base.resolve("http://x:81/y").unwrap(), Uri { authority: "x:81".into(), path: "/y".into(), query: None });
        assert!(base.resolve("mailto:x@y").is_none());
        assert!(base.resolve("https://a/").is_none());
        assert!(base.resolve("javascript:void(0)").is_none());
    }

    #[test]
    fn session_path_parameters() {
        let base = Uri::parse("http://h:8080/tpcw/TPCW_home_interaction;jsessionid=AB12?C_ID=3").unwrap();
        assert_eq!(base.path_param("jsessionid").as_deref(), Some("AB12"));
        assert_eq!(base.plain_path(), "/tpcw/TPCW_home_interaction");
        assert_eq!(base.relative_to("/tpcw/").as_deref(), Some("TPCW_home_interaction"));
        let r = base.resolve("TPCW_search_request_servlet;jsessionid=AB12?C_ID=3").unwrap();
        assert_eq!(r.target(), "/tpcw/TPCW_search_request_servlet;jsessionid=AB12?C_ID=3");
        assert_eq!(base.resolve("../tpcw/Images/tpclogo.gif").unwrap().target(), "/tpcw/Images/tpclogo.gif");
        assert_eq!(base.relative_to("/other/"), None);
    }
}

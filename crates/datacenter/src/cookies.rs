//! The browser's cookie jar, an RFC 6265 subset for one site: `Set-Cookie` name=value
//! with `Path` (default-path and path-match of 5.1.4), `Max-Age` (0 or less deletes),
//! `Expires` only as "already expired" (a date before 1990, the usual way to delete),
//! `Secure` cookies refused (the emulator speaks plain HTTP); `Domain` is ignored (every
//! cookie is host-only: the emulator talks to one host). Bounded: at most
//! [`MAX_COOKIES`] cookies of at most [`MAX_COOKIE_BYTES`] each. A new session starts
//! with an empty jar.

/// Cookies kept at most (more: the oldest is dropped, RFC 6265 6.1 allows it).
pub const MAX_COOKIES: usize = 50;
/// Longest `name=value` kept, bytes.
pub const MAX_COOKIE_BYTES: usize = 4096;

#[derive(Debug, Clone, PartialEq, Eq)]
struct Cookie {
    name: String,
    value: String,
    path: String,
}

/// One browser's cookies.
#[derive(Debug, Clone, Default)]
pub struct Jar {
    cookies: Vec<Cookie>,
}

/// RFC 6265 5.1.4 default-path of a request path.
fn default_path(request_path: &str) -> String {
    if !request_path.starts_with('/') {
        return "/".into();
    }
    match request_path.rfind('/') {
        Some(0) | None => "/".into(),
        Some(i) => request_path[..i].to_string(),
    }
}

/// RFC 6265 5.1.4 path-match.
fn path_match(request_path: &str, cookie_path: &str) -> bool {
    request_path == cookie_path
        || (request_path.starts_with(cookie_path) && (cookie_path.ends_with('/') || request_path.as_bytes().get(cookie_path.len()) == Some(&b'/')))
}

impl Jar {
    pub fn clear(&mut self) {
        self.cookies.clear();
    }

    pub fn len(&self) -> usize {
        self.cookies.len()
    }

    pub fn is_empty(&self) -> bool {
        self.cookies.is_empty()
    }

    /// Takes one `Set-Cookie` header value received for `request_path` (without query
    /// or path parameters). Malformed ones are ignored, as RFC 6265 5.2 says.
    pub fn set(&mut self, header: &str, request_path: &str) {
        let mut parts = header.split(';');
        let Some((name, value)) = parts.next().and_then(|nv| nv.split_once('=')) else { return };
        let (name, value) = (name.trim(), value.trim().trim_matches('"'));
        if name.is_empty() || name.len() + value.len() > MAX_COOKIE_BYTES {
            return;
        }
        let mut path = None;
        let mut delete = false;
        for a in parts {
            let (k, v) = a.split_once('=').map(|(k, v)| (k.trim(), v.trim())).unwrap_or((a.trim(), ""));
            match k.to_ascii_lowercase().as_str() {
                "path" if v.starts_with('/') => path = Some(v.to_string()),
                "max-age" => {
                    if let Ok(n) = v.parse::<i64>() {
                        delete = n <= 0;
                    }
                }
                "expires" => {
                    // A year before 1990 is the conventional deletion date.
                    if v.split(|c: char| !c.is_ascii_digit()).filter_map(|t| t.parse::<u32>().ok()).any(|y| (1601..1990).contains(&y)) {
                        delete = true;
                    }
                }
                "secure" => return,
                _ => {}
            }
        }
        let path = path.unwrap_or_else(|| default_path(request_path));
        self.cookies.retain(|c| !(c.name == name && c.path == path));
        if delete {
            return;
        }
        if self.cookies.len() >= MAX_COOKIES {
            self.cookies.remove(0);
        }
        self.cookies.push(Cookie { name: name.to_string(), value: value.to_string(), path });
    }

    /// The `Cookie` header for a request to `request_path`, or None (RFC 6265 5.4: longer
    /// paths first, then oldest first).
    pub fn header(&self, request_path: &str) -> Option<String> {
        let mut v: Vec<(usize, &Cookie)> = self.cookies.iter().enumerate().filter(|(_, c)| path_match(request_path, &c.path)).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(|a, b| b.1.path.len().cmp(&a.1.path.len()).then(a.0.cmp(&b.0)));
        Some(v.iter().map(|(_, c)| format!("{}={}", c.name, c.value)).collect::<Vec<_>>().join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_expiry_and_order() {
        let mut j = Jar::default();
        j.set("JSESSIONID=abc; Path=/tpcw; HttpOnly", "/tpcw/TPCW_home_interaction");
        j.set("x=1", "/tpcw/sub/page");
        assert_eq!(j.header("/tpcw/TPCW_home_interaction").as_deref(), Some("JSESSIONID=abc"));
        assert_eq!(j.header("/tpcw/sub/other").as_deref(), Some("x=1; JSESSIONID=abc"));
        assert_eq!(j.header("/tpcwx"), None);
        assert_eq!(j.header("/"), None);
        j.set("JSESSIONID=def; Path=/tpcw", "/tpcw/a");
        assert_eq!(j.len(), 2);
        assert_eq!(j.header("/tpcw/a").as_deref(), Some("JSESSIONID=def"));
        j.set("JSESSIONID=; Path=/tpcw; Max-Age=0", "/tpcw/a");
        assert_eq!(j.header("/tpcw/a"), None);
        j.set("x=; Expires=Thu, 01 Jan 1970 00:00:00 GMT", "/tpcw/sub/page");
        assert!(j.is_empty());
        for bad in ["", "=v", "novalue", "s=1; Secure"] {
            j.set(bad, "/");
        }
        assert!(j.is_empty());
        for k in 0..(MAX_COOKIES + 5) {
            j.set(&format!("c{k}=v"), "/");
        }
        assert_eq!(j.len(), MAX_COOKIES);
        assert!(j.header("/").unwrap().starts_with("c5=v"));
    }
}

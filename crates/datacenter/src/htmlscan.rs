//! What the browser emulator needs from a page: links, embedded images, forms with their
//! fields and the choices of their radio groups and selects, `<base href>`, the
//! interlab interaction marker (`<meta name="tpcw-interaction" content="HOME">`) and
//! whether the document is complete. A tolerant tag scanner, not a full HTML parser;
//! bounded: at most [`MAX_ITEMS`] links, images, forms and fields each.

/// Links, images, forms, fields per form and choices per field kept at most.
pub const MAX_ITEMS: usize = 10_000;

/// A form and its fields (inputs, selects, textareas) in document order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Form {
    pub action: String,
    /// Lower case; "get" when absent.
    pub method: String,
    /// (name, value): an input's value, a select's selected (or first) option, a checked
    /// radio button or checkbox.
    pub fields: Vec<(String, String)>,
    /// The values offered by each radio group and select, in document order.
    pub choices: Vec<(String, Vec<String>)>,
}

impl Form {
    pub fn field(&self, name: &str) -> Option<&str> {
        self.fields.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
    /// Whether the form has a control named `name` (a field or a choice).
    pub fn has(&self, name: &str) -> bool {
        self.field(name).is_some() || self.choices.iter().any(|(k, _)| k == name)
    }
    /// The values a radio group or select offers.
    pub fn options(&self, name: &str) -> &[String] {
        self.choices.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_slice()).unwrap_or(&[])
    }
    fn choice(&mut self, name: &str, value: &str) {
        match self.choices.iter_mut().find(|(k, _)| k == name) {
            Some((_, v)) => {
                if v.len() < MAX_ITEMS && !v.iter().any(|x| x == value) {
                    v.push(value.to_string());
                }
            }
            None => self.choices.push((name.to_string(), vec![value.to_string()])),
        }
    }
}

/// The scanned page.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Page {
    /// `href` of every `<a>`, entity-decoded, in order.
    pub links: Vec<String>,
    /// `src` of every `<img>`.
    pub images: Vec<String>,
    pub forms: Vec<Form>,
    /// Content of `<meta name="tpcw-interaction">`.
    pub interaction: Option<String>,
    /// `<base href>`, if the page has one.
    pub base: Option<String>,
    /// The document has `<!DOCTYPE html>` (or `<html`) and ends with `</html>`.
    pub complete: bool,
}

impl Page {
    /// Links whose path (before '?') is `path`.
    pub fn links_to<'a>(&'a self, path: &'a str) -> impl Iterator<Item = &'a String> + 'a {
        self.links.iter().filter(move |l| l.split('?').next() == Some(path))
    }

    /// The first form posting to `path`.
    pub fn form_to(&self, path: &str) -> Option<&Form> {
        self.forms.iter().find(|f| f.action.split('?').next() == Some(path))
    }
}

/// Decodes the five common entities and numeric references.
pub fn decode_entities(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        let end = tail.find(';').filter(|&e| e <= 10);
        let ent = end.map(|e| &tail[1..e]);
        let rep = match ent {
            Some("amp") => Some('&'),
            Some("lt") => Some('<'),
            Some("gt") => Some('>'),
            Some("quot") => Some('"'),
            Some("apos") | Some("#39") => Some('\''),
            Some(e) if e.starts_with("#x") => u32::from_str_radix(&e[2..], 16).ok().and_then(char::from_u32),
            Some(e) if e.starts_with('#') => e[1..].parse::<u32>().ok().and_then(char::from_u32),
            _ => None,
        };
        match (rep, end) {
            (Some(c), Some(e)) => {
                out.push(c);
                rest = &tail[e + 1..];
            }
            _ => {
                out.push('&');
                rest = &tail[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

fn attrs(tag: &str) -> Vec<(String, String)> {
    let b = tag.as_bytes();
    let mut i = 0;
    let mut out = Vec::new();
    while i < b.len() {
        while i < b.len() && (b[i].is_ascii_whitespace() || b[i] == b'/') {
            i += 1;
        }
        let s = i;
        while i < b.len() && !b[i].is_ascii_whitespace() && b[i] != b'=' && b[i] != b'/' {
            i += 1;
        }
        if s == i {
            i += 1;
            continue;
        }
        let name = tag[s..i].to_ascii_lowercase();
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        let mut value = String::new();
        if i < b.len() && b[i] == b'=' {
            i += 1;
            while i < b.len() && b[i].is_ascii_whitespace() {
                i += 1;
            }
            if i < b.len() && (b[i] == b'"' || b[i] == b'\'') {
                let q = b[i];
                let vs = i + 1;
                i = vs;
                while i < b.len() && b[i] != q {
                    i += 1;
                }
                value = decode_entities(&tag[vs..i.min(b.len())]);
                i += 1;
            } else {
                let vs = i;
                while i < b.len() && !b[i].is_ascii_whitespace() {
                    i += 1;
                }
                value = decode_entities(&tag[vs..i]);
            }
        }
        out.push((name, value));
    }
    out
}

fn get<'a>(a: &'a [(String, String)], k: &str) -> Option<&'a str> {
    a.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str())
}

/// Scans a document.
pub fn scan(html: &str) -> Page {
    let mut p = Page::default();
    let lower_start = html.trim_start().get(..15).unwrap_or("").to_ascii_lowercase();
    p.complete = (lower_start.starts_with("<!doctype html") || lower_start.starts_with("<html")) && html.trim_end().to_ascii_lowercase().ends_with("</html>");
    let mut rest = html;
    let mut form: Option<Form> = None;
    let mut select: Option<(String, Option<String>, Option<String>)> = None; // name, first, selected
    while let Some(i) = rest.find('<') {
        rest = &rest[i + 1..];
        if let Some(r) = rest.strip_prefix("!--") {
            rest = match r.find("-->") {
                Some(e) => &r[e + 3..],
                None => "",
            };
            continue;
        }
        let end = match rest.find('>') {
            Some(e) => e,
            None => break,
        };
        let tag = &rest[..end];
        rest = &rest[end + 1..];
        let name_end = tag.find(|c: char| c.is_ascii_whitespace() || c == '/').unwrap_or(tag.len());
        let name = tag[..name_end].to_ascii_lowercase();
        let name = if name.is_empty() && tag.starts_with('/') { format!("/{}", tag[1..].trim().to_ascii_lowercase()) } else { name };
        let a = || attrs(&tag[name_end.min(tag.len())..]);
        match name.as_str() {
            "a" | "area" => {
                if let Some(h) = get(&a(), "href") {
                    if p.links.len() < MAX_ITEMS {
                        p.links.push(h.to_string());
                    }
                }
            }
            "img" => {
                if let Some(s) = get(&a(), "src") {
                    if p.images.len() < MAX_ITEMS {
                        p.images.push(s.to_string());
                    }
                }
            }
            "base" => {
                if p.base.is_none() {
                    p.base = get(&a(), "href").map(str::to_string);
                }
            }
            "meta" => {
                let at = a();
                if get(&at, "name") == Some("tpcw-interaction") {
                    p.interaction = get(&at, "content").map(|s| s.to_string());
                }
            }
            "form" => {
                if let Some(f) = form.take() {
                    if p.forms.len() < MAX_ITEMS {
                        p.forms.push(f);
                    }
                }
                let at = a();
                form = Some(Form {
                    action: get(&at, "action").unwrap_or("").to_string(),
                    method: get(&at, "method").unwrap_or("get").trim().to_ascii_lowercase(),
                    fields: Vec::new(),
                    choices: Vec::new(),
                });
            }
            "/form" => {
                if let Some(f) = form.take() {
                    p.forms.push(f);
                }
            }
            "input" => {
                let at = a();
                if let (Some(f), Some(n)) = (form.as_mut(), get(&at, "name")) {
                    let t = get(&at, "type").unwrap_or("text").to_ascii_lowercase();
                    let checked = at.iter().any(|(k, _)| k == "checked");
                    if t == "radio" {
                        f.choice(n, get(&at, "value").unwrap_or("on"));
                    }
                    if f.fields.len() >= MAX_ITEMS {
                        // Bounded.
                    } else if (t == "radio" || t == "checkbox") && !checked {
                        // Unchecked choices are not submitted.
                    } else if t != "submit" && t != "image" && t != "button" && t != "reset" {
                        f.fields.push((n.to_string(), get(&at, "value").unwrap_or("").to_string()));
                    }
                }
            }
            "textarea" => {
                if let (Some(f), Some(n)) = (form.as_mut(), get(&a(), "name")) {
                    let text = rest.find("</textarea").map(|e| decode_entities(&rest[..e])).unwrap_or_default();
                    f.fields.push((n.to_string(), text));
                }
            }
            "select" => select = get(&a(), "name").map(|n| (n.to_string(), None, None)),
            "option" => {
                if let Some((name, first, sel)) = select.as_mut() {
                    let at = a();
                    let v = get(&at, "value").map(|s| s.to_string()).unwrap_or_else(|| rest.split('<').next().unwrap_or("").trim().to_string());
                    if first.is_none() {
                        *first = Some(v.clone());
                    }
                    if let Some(f) = form.as_mut() {
                        f.choice(name, &v);
                    }
                    if at.iter().any(|(k, _)| k == "selected") {
                        *sel = Some(v);
                    }
                }
            }
            "/select" => {
                if let (Some((n, first, sel)), Some(f)) = (select.take(), form.as_mut()) {
                    if f.fields.len() < MAX_ITEMS {
                        f.fields.push((n, sel.or(first).unwrap_or_default()));
                    }
                }
            }
            "script" | "style" => {
                let close = format!("</{name}");
                rest = match rest.to_ascii_lowercase().find(&close) {
                    Some(e) => &rest[e..],
                    None => "",
                };
            }
            _ => {}
        }
    }
    if let Some(f) = form.take() {
        p.forms.push(f);
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_images_forms_and_marker() {
        let html = r#"<!DOCTYPE html><html><head><meta name="tpcw-interaction" content="SREQ"><style>a{x:"<a href=no>"}</style></head>
<body><!-- <a href="/hidden"> --><a href="/tpcw/home?C_ID=3&amp;SHOPPING_ID=9"><img src="/img/logo.png" alt=x></a>
<a href='/tpcw/product_detail?I_ID=5'>x</a><a href=/tpcw/product_detail?I_ID=6>y</a>
<form action="/tpcw/search_results" method="GET"><input type="hidden" name="C_ID" value="3">
<select name="search_type"><option value="author">A</option><option value="title" selected>T</option></select>
<input name="search_string"><input type="radio" name="r" value="1"><input type="radio" name="r" value="2" checked>
<textarea name="t">a &lt; b</textarea><input type="submit" value="Go"></form></body></html>"#;
        let p = scan(html);
        assert!(p.complete);
        assert_eq!(p.interaction.as_deref(), Some("SREQ"));
        assert_eq!(p.links, vec!["/tpcw/home?C_ID=3&SHOPPING_ID=9", "/tpcw/product_detail?I_ID=5", "/tpcw/product_detail?I_ID=6"]);
        assert_eq!(p.links_to("/tpcw/product_detail").count(), 2);
        assert_eq!(p.images, vec!["/img/logo.png"]);
        let f = p.form_to("/tpcw/search_results").unwrap();
        assert_eq!(f.method, "get");
        assert_eq!(f.field("C_ID"), Some("3"));
        assert_eq!(f.field("search_type"), Some("title"));
        assert_eq!(f.field("search_string"), Some(""));
        assert_eq!(f.field("r"), Some("2"));
        assert_eq!(f.options("r"), ["1", "2"]);
        assert_eq!(f.options("search_type"), ["author", "title"]);
        assert!(f.has("search_string") && !f.has("nothing"));
        assert_eq!(f.field("t"), Some("a < b"));
    }

    #[test]
    fn truncated_and_garbage_pages_do_not_panic() {
        for s in ["", "<", "<a href=", "<html><body>", "<<<>>>", "<a href=\"x", "&#xZZ; &#99999999; &", "<form><input name=a"] {
            let p = scan(s);
            assert!(!p.complete);
        }
        assert_eq!(decode_entities("&amp;&#65;&#x42;&bogus;"), "&AB&bogus;");
    }
}

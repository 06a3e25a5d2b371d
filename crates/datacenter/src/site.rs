//! Site profiles: how the browser emulator recognises a TPC-W site's pages and names its
//! form fields. A small TOML file maps each of the 14 interactions to a URL pattern
//! (relative to the `--url` prefix), names the fields where a site differs from the
//! TPC-W kits' names, gives the formats of the dates the browser types, and the scale
//! when the site has no `/tpcw/info`. Built in: `interlab` (this project's bookstore)
//! and `servlet` (the UW-Madison / PHARM servlet layout, `TPCW_home_interaction` ...).

use crate::tpcw::{Interaction, N_INTERACTIONS};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

/// Largest profile file, bytes.
pub const MAX_PROFILE_BYTES: u64 = 64 * 1024;

/// The field roles and their default names (the TPC-W kits' names, which both built-in
/// sites use).
pub const FIELD_ROLES: [(&str, &str); 37] = [
    ("customer", "C_ID"),
    ("cart", "SHOPPING_ID"),
    ("item", "I_ID"),
    ("subject", "subject"),
    ("add_flag", "ADD_FLAG"),
    ("qty_prefix", "QTY_"),
    ("search_type", "search_type"),
    ("search_string", "search_string"),
    ("returning", "RETURNING_FLAG"),
    ("uname", "UNAME"),
    ("passwd", "PASSWD"),
    ("fname", "FNAME"),
    ("lname", "LNAME"),
    ("street1", "STREET1"),
    ("street2", "STREET2"),
    ("city", "CITY"),
    ("state", "STATE"),
    ("zip", "ZIP"),
    ("country", "COUNTRY"),
    ("phone", "PHONE"),
    ("email", "EMAIL"),
    ("birthdate", "BIRTHDATE"),
    ("data", "DATA"),
    ("cc_type", "CC_TYPE"),
    ("cc_number", "CC_NUMBER"),
    ("cc_name", "CC_NAME"),
    ("cc_expiry", "CC_EXPIRY"),
    ("shipping", "SHIPPING"),
    ("ship_street1", "STREET_1"),
    ("ship_street2", "STREET_2"),
    ("ship_city", "CITY"),
    ("ship_state", "STATE"),
    ("ship_zip", "ZIP"),
    ("ship_country", "COUNTRY"),
    ("new_cost", "I_NEW_COST"),
    ("new_image", "I_NEW_IMAGE"),
    ("new_thumbnail", "I_NEW_THUMBNAIL"),
];

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    name: String,
    home: String,
    #[serde(default)]
    info: Option<String>,
    #[serde(default)]
    marker: bool,
    pages: BTreeMap<String, String>,
    #[serde(default)]
    fields: BTreeMap<String, String>,
    #[serde(default)]
    formats: Formats,
    #[serde(default)]
    scale: Option<ScaleFile>,
}

#[derive(Deserialize, Default, Clone, Debug)]
#[serde(deny_unknown_fields)]
pub struct Formats {
    /// Credit-card expiry date as the site's form takes it (`%Y`, `%m`, `%d`).
    #[serde(default = "default_expiry")]
    pub cc_expiry: String,
    /// Birth date of a new customer.
    #[serde(default = "default_birthdate")]
    pub birthdate: String,
    /// Price of the admin form's new cost (decimals).
    #[serde(default = "default_decimals")]
    pub cost_decimals: u32,
    /// The site's name for an item's image, as its admin form takes it: `{id}` is the
    /// item number, `{id%K}` its remainder by K. Used when the form leaves the field
    /// empty (TPC-W Admin Confirm: the browser supplies a new image and thumbnail, those
    /// of a random item, as the UW-Madison RBE does); a form that fills it is kept.
    #[serde(default)]
    pub new_image: Option<String>,
    /// Likewise for the thumbnail.
    #[serde(default)]
    pub new_thumbnail: Option<String>,
}

/// Expands an image-name template of [`Formats::new_image`] for item `id`.
pub fn image_name(template: &str, id: u64) -> String {
    let mut out = String::new();
    let mut rest = template;
    while let Some(i) = rest.find("{id") {
        out.push_str(&rest[..i]);
        let tail = &rest[i + 3..];
        let Some(close) = tail.find('}') else {
            out.push_str(&rest[i..]);
            return out;
        };
        let v = match tail[..close].strip_prefix('%').and_then(|k| k.parse::<u64>().ok()) {
            Some(k) if k > 0 => id % k,
            _ => id,
        };
        out.push_str(&v.to_string());
        rest = &tail[close + 1..];
    }
    out.push_str(rest);
    out
}

fn default_expiry() -> String {
    "%m/%d/%Y".into()
}
fn default_birthdate() -> String {
    "%m/%d/%Y".into()
}
fn default_decimals() -> u32 {
    2
}

#[derive(Deserialize, Clone, Copy, Debug)]
#[serde(deny_unknown_fields)]
struct ScaleFile {
    items: u64,
    customers: u64,
}

/// A loaded site profile.
#[derive(Debug, Clone)]
pub struct Site {
    pub name: String,
    /// Start page relative to the prefix.
    pub home: String,
    /// Scale endpoint relative to the prefix (interlab's `tpcw/info`).
    pub info: Option<String>,
    /// Check interlab's `<meta name="tpcw-interaction">` marker.
    pub marker: bool,
    /// Pattern per interaction, by [`Interaction::index`].
    patterns: Vec<String>,
    fields: BTreeMap<String, String>,
    pub formats: Formats,
    /// (items, customers) when the site has no scale endpoint.
    pub scale: Option<(u64, u64)>,
}

/// Glob match: '*' matches any run of characters (none included).
pub fn glob(pattern: &str, s: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == s;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !s.starts_with(first) || s.len() < first.len() + last.len() || !s.ends_with(last) {
        return false;
    }
    let mut rest = &s[first.len()..s.len() - last.len()];
    for mid in &parts[1..parts.len() - 1] {
        match rest.find(mid) {
            Some(i) => rest = &rest[i + mid.len()..],
            None => return false,
        }
    }
    true
}

impl Site {
    /// A built-in profile by name.
    pub fn builtin(name: &str) -> Option<Site> {
        let text = match name {
            "interlab" => include_str!("../sites/interlab.toml"),
            "servlet" => include_str!("../sites/servlet.toml"),
            _ => return None,
        };
        Some(Site::parse(text, &format!("built-in site profile {name}")).unwrap_or_else(|e| panic!("{e}")))
    }

    /// `interlab`, `servlet`, or a profile file.
    pub fn load(arg: &str) -> Result<Site, String> {
        if let Some(s) = Site::builtin(arg) {
            return Ok(s);
        }
        let p = Path::new(arg);
        let meta = std::fs::metadata(p).map_err(|e| format!("site profile '{arg}': not a built-in one (interlab, servlet) and not a readable file: {e}"))?;
        if meta.len() > MAX_PROFILE_BYTES {
            return Err(format!("site profile {arg}: {} bytes, over the {MAX_PROFILE_BYTES}-byte limit", meta.len()));
        }
        let text = std::fs::read_to_string(p).map_err(|e| format!("site profile {arg}: {e}"))?;
        Site::parse(&text, &format!("site profile {arg}"))
    }

    /// Parses a profile; `what` names it in errors.
    pub fn parse(text: &str, what: &str) -> Result<Site, String> {
        let f: File = toml::from_str(text).map_err(|e| format!("{what}: {e}"))?;
        let mut patterns = vec![String::new(); N_INTERACTIONS];
        for (k, v) in &f.pages {
            let i = Interaction::from_abbr(k).ok_or_else(|| {
                format!("{what}: [pages] key '{k}' is not an interaction (HOME, NEWP, BESS, PROD, SREQ, SRES, SHOP, CREG, BUYR, BUYC, ORDI, ORDD, ADMR, ADMC)")
            })?;
            if v.len() > 512 || v.starts_with('/') {
                return Err(format!("{what}: [pages] {k} = '{v:.40}': a path relative to the --url prefix (no leading '/'), at most 512 bytes"));
            }
            patterns[i.index()] = v.clone();
        }
        if let Some(i) = Interaction::ALL.iter().find(|i| patterns[i.index()].is_empty()) {
            return Err(format!("{what}: [pages] has no pattern for {} ({}); all 14 interactions are needed", i.abbr(), i.name()));
        }
        let mut fields: BTreeMap<String, String> = FIELD_ROLES.iter().map(|(r, n)| (r.to_string(), n.to_string())).collect();
        for (k, v) in &f.fields {
            if !fields.contains_key(k) {
                let roles: Vec<&str> = FIELD_ROLES.iter().map(|r| r.0).collect();
                return Err(format!("{what}: [fields] key '{k}' is not a field role; roles: {}", roles.join(", ")));
            }
            if v.is_empty() || v.len() > 128 {
                return Err(format!("{what}: [fields] {k} must be a field name of 1 to 128 bytes"));
            }
            fields.insert(k.clone(), v.clone());
        }
        for (k, v) in [("cc_expiry", &f.formats.cc_expiry), ("birthdate", &f.formats.birthdate)] {
            if !(v.contains("%Y") && v.contains("%m")) || v.len() > 32 {
                return Err(format!("{what}: [formats] {k} = '{v:.40}' must contain %Y and %m (and may contain %d), at most 32 bytes"));
            }
        }
        for (k, v) in [("new_image", &f.formats.new_image), ("new_thumbnail", &f.formats.new_thumbnail)] {
            if let Some(v) = v {
                let ok = v.len() <= 128 && v.matches("{id").count() >= 1 && v.split("{id").skip(1).all(|t| t.split_once('}').is_some_and(|(m, _)| m.is_empty() || m.strip_prefix('%').and_then(|k| k.parse::<u64>().ok()).is_some_and(|k| k > 0)));
                if !ok {
                    return Err(format!("{what}: [formats] {k} = '{v:.40}' must name the item by {{id}} (or {{id%K}}, K > 0), at most 128 bytes"));
                }
            }
        }
        if f.formats.cost_decimals > 4 {
            return Err(format!("{what}: [formats] cost_decimals = {} must be 0 to 4", f.formats.cost_decimals));
        }
        let scale = match f.scale {
            Some(s) if !(5..=1_000_000_000).contains(&s.items) || !(1..=10_000_000_000).contains(&s.customers) => {
                return Err(format!("{what}: [scale] items must be 5 to 1e9 and customers 1 to 1e10 (got {}, {})", s.items, s.customers));
            }
            Some(s) => Some((s.items, s.customers)),
            None => None,
        };
        if f.home.starts_with('/') || f.home.len() > 512 {
            return Err(format!("{what}: home = '{:.40}' must be relative to the --url prefix", f.home));
        }
        Ok(Site { name: f.name, home: f.home, info: f.info, marker: f.marker, patterns, fields, formats: f.formats, scale })
    }

    /// The field name for a role (see [`FIELD_ROLES`]).
    pub fn field(&self, role: &str) -> &str {
        self.fields.get(role).map(String::as_str).unwrap_or("")
    }

    pub fn pattern(&self, i: Interaction) -> &str {
        &self.patterns[i.index()]
    }

    /// The interaction whose pattern matches a path relative to the prefix.
    pub fn recognise(&self, rel: &str) -> Option<Interaction> {
        Interaction::ALL.into_iter().find(|i| glob(self.pattern(*i), rel))
    }
}

/// Formats a date (year, month, day) with `%Y`, `%m`, `%d`.
pub fn format_date(fmt: &str, y: i64, m: u32, d: u32) -> String {
    fmt.replace("%Y", &format!("{y:04}")).replace("%m", &format!("{m:02}")).replace("%d", &format!("{d:02}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_load_and_recognise() {
        let s = Site::builtin("interlab").unwrap();
        assert_eq!(s.recognise("tpcw/product_detail"), Some(Interaction::ProductDetail));
        assert_eq!(s.info.as_deref(), Some("tpcw/info"));
        let v = Site::builtin("servlet").unwrap();
        assert_eq!(v.recognise("TPCW_execute_search"), Some(Interaction::SearchResults));
        assert_eq!(v.recognise("Images/x.gif"), None);
        assert_eq!(v.field("cart"), "SHOPPING_ID");
        assert_eq!(format_date(&v.formats.cc_expiry, 2027, 3, 9), "03/09/2027");
        assert!(glob("a*c", "abbc") && glob("*", "") && !glob("a*c", "ab") && glob("x*y*z", "xayz"));
        // The kit's populate names item i's files img{i%100}/image_{i}.gif and .../thumb_{i}.gif.
        assert_eq!(image_name(v.formats.new_image.as_deref().unwrap(), 130), "img30/image_130.gif");
        assert_eq!(image_name(v.formats.new_thumbnail.as_deref().unwrap(), 7), "img7/thumb_7.gif");
        assert_eq!(s.formats.new_image, None, "interlab's admin form fills its own");
    }

    #[test]
    fn bad_profiles_are_clear_errors() {
        let base = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/sites/servlet.toml")).unwrap();
        let e = Site::parse(&base.replace("ADMC = ", "XXXX = "), "t").unwrap_err();
        assert!(e.contains("'XXXX' is not an interaction"), "{e}");
        let e = Site::parse(&base.replace("ADMC = \"TPCW_admin_response_servlet\"", ""), "t").unwrap_err();
        assert!(e.contains("no pattern for ADMC"), "{e}");
        let e = Site::parse(&format!("{base}\n[fields]\nbogus = \"x\"\n"), "t").unwrap_err();
        assert!(e.contains("not a field role"), "{e}");
        let e = Site::parse(&base.replace("cc_expiry = \"%m/%d/%Y\"", "cc_expiry = \"%d\""), "t").unwrap_err();
        assert!(e.contains("must contain %Y and %m"), "{e}");
        let e = Site::parse(&format!("{base}\n[scale]\nitems = 0\ncustomers = 1\n"), "t").unwrap_err();
        assert!(e.contains("[scale]"), "{e}");
        for bad in ["image.gif", "img{id%0}.gif", "img{idx}.gif"] {
            let e = Site::parse(&base.replace("new_image = \"img{id%100}/image_{id}.gif\"", &format!("new_image = \"{bad}\"")), "t").unwrap_err();
            assert!(e.contains("[formats] new_image"), "{bad}: {e}");
        }
        assert!(Site::load("/nonexistent/x.toml").unwrap_err().contains("not a built-in one"));
    }
}

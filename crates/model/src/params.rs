//! Reading profile parameters with provenance and clear errors.
//!
//! A profile parameter is written `name = { value = 3.8, src = "where this number comes from" }`.
//! A bare value (`name = 3.8`) is rejected: every physical primitive must say where it
//! comes from. Unknown keys are rejected too, so a typo never silently falls back to a
//! default.

use std::collections::BTreeSet;
use std::fmt;

/// An error in a profile or spec file: which file, which key, what was expected.
#[derive(Debug, Clone, PartialEq)]
pub struct ParamError {
    /// File (or built-in profile name) the error is in.
    pub file: String,
    /// Dotted key path, e.g. `bus.read_latency_ns`.
    pub key: String,
    /// What was expected and what was found.
    pub message: String,
}

impl fmt::Display for ParamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.key.is_empty() {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(f, "{}: key `{}`: {}", self.file, self.key, self.message)
        }
    }
}

impl std::error::Error for ParamError {}

/// Largest value a provenance-carrying number may have in `unit`: a fraction is at most 1,
/// anything else at most 10^12 (no physical primitive of a testbed comes near it; 1e300
/// lanes or a bandwidth of 1e20 MB/s is a typo).
pub fn max_param(unit: &str) -> f64 {
    match unit {
        "fraction" => 1.0,
        _ => 1e12,
    }
}

/// A number as a reader wants it in an error: plain, or in exponent form when huge.
fn num(x: f64) -> String {
    if x.abs() >= 1e9 && (x.fract() != 0.0 || x.abs() > 1e15) {
        format!("{x:e}")
    } else {
        format!("{x}")
    }
}

/// Largest value an integer parameter may have in `unit`.
pub fn max_count(unit: &str) -> u64 {
    match unit {
        "flag" | "0 or 1" => 1,
        "lanes" => 32,
        "ports" | "port" => 64,
        "logical CPUs" => 4096,
        "bytes" => 1 << 40,
        _ => 1 << 24,
    }
}

/// A TOML table being read, remembering which keys were used.
pub struct Table<'a> {
    file: &'a str,
    path: String,
    table: &'a toml::Table,
    used: BTreeSet<String>,
}

impl<'a> Table<'a> {
    /// Wraps a parsed table found in `file` at dotted `path` ("" for the root).
    pub fn new(file: &'a str, path: &str, table: &'a toml::Table) -> Self {
        Table { file, path: path.to_string(), table, used: BTreeSet::new() }
    }

    /// Parses TOML text into a root table.
    pub fn parse(file: &str, text: &str) -> Result<toml::Table, ParamError> {
        text.parse::<toml::Table>().map_err(|e| ParamError {
            file: file.to_string(),
            key: String::new(),
            message: format!("not valid TOML: {}", e.to_string().trim()),
        })
    }

    fn full(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_string()
        } else {
            format!("{}.{}", self.path, key)
        }
    }

    /// An error about `key` of this table.
    pub fn err(&self, key: &str, message: impl Into<String>) -> ParamError {
        ParamError { file: self.file.to_string(), key: self.full(key), message: message.into() }
    }

    fn raw(&mut self, key: &str) -> Option<&'a toml::Value> {
        self.used.insert(key.to_string());
        self.table.get(key)
    }

    /// True when `key` is present.
    pub fn has(&self, key: &str) -> bool {
        self.table.contains_key(key)
    }

    /// A sub-table (required).
    pub fn table(&mut self, key: &str) -> Result<Table<'a>, ParamError> {
        let full = self.full(key);
        match self.raw(key) {
            Some(toml::Value::Table(t)) => Ok(Table::new(self.file, &full, t)),
            Some(other) => Err(self.err(key, format!("expected a table, found {}", other.type_str()))),
            None => Err(self.err(key, "missing table")),
        }
    }

    /// A sub-table if present.
    pub fn opt_table(&mut self, key: &str) -> Result<Option<Table<'a>>, ParamError> {
        if self.has(key) {
            self.table(key).map(Some)
        } else {
            self.used.insert(key.to_string());
            Ok(None)
        }
    }

    /// A provenance-carrying number `{ value = X, src = "..." }`, required, at most
    /// [`max_param`] in its unit.
    pub fn param(&mut self, key: &str, unit: &str) -> Result<f64, ParamError> {
        let x = self.param_any(key, unit)?;
        let max = max_param(unit);
        if x > max {
            return Err(self.err(key, format!("{} {unit} is out of range (allowed 0 to {} {unit})", num(x), num(max))));
        }
        Ok(x)
    }

    fn param_any(&mut self, key: &str, unit: &str) -> Result<f64, ParamError> {
        let v = self.raw(key).ok_or_else(|| {
            self.err(key, format!("missing parameter (expected `{key} = {{ value = <number in {unit}>, src = \"provenance\" }}`)"))
        })?;
        let t = match v {
            toml::Value::Table(t) => t,
            toml::Value::Integer(_) | toml::Value::Float(_) => {
                return Err(self.err(key, format!("a bare number has no provenance: write `{{ value = <{unit}>, src = \"where it comes from\" }}`")))
            }
            other => return Err(self.err(key, format!("expected {{ value, src }}, found {}", other.type_str()))),
        };
        for k in t.keys() {
            if k != "value" && k != "src" {
                return Err(self.err(key, format!("unknown field `{k}` (expected `value` and `src`)")));
            }
        }
        match t.get("src") {
            Some(toml::Value::String(s)) if !s.trim().is_empty() => {}
            _ => return Err(self.err(key, "missing provenance `src = \"...\"`")),
        }
        let x = match t.get("value") {
            Some(toml::Value::Integer(i)) => *i as f64,
            Some(toml::Value::Float(f)) => *f,
            Some(other) => return Err(self.err(key, format!("`value` must be a number in {unit}, found {}", other.type_str()))),
            None => return Err(self.err(key, format!("missing `value` (a number in {unit})"))),
        };
        if !x.is_finite() || x < 0.0 {
            return Err(self.err(key, format!("expected a finite non-negative number in {unit}, found {x}")));
        }
        Ok(x)
    }

    /// Like [`Table::param`] but must be an integer in `min` ..= the unit's bound
    /// ([`max_count`]: lanes, ports, flags, bytes, packets ...).
    pub fn param_u64(&mut self, key: &str, unit: &str, min: u64) -> Result<u64, ParamError> {
        let x = self.param_any(key, unit)?;
        let max = max_count(unit);
        if x.fract() != 0.0 || x < min as f64 || x > max as f64 {
            return Err(self.err(key, format!("expected an integer in {min}..={max} ({unit}), found {}", num(x))));
        }
        Ok(x as u64)
    }

    /// An optional [`Table::param_u64`]: `None` when the key is absent.
    pub fn opt_param_u64(&mut self, key: &str, unit: &str, min: u64) -> Result<Option<u64>, ParamError> {
        if self.has(key) {
            self.param_u64(key, unit, min).map(Some)
        } else {
            Ok(None)
        }
    }

    /// An optional on/off parameter (unit "flag": 0 or 1); absent is off.
    pub fn flag(&mut self, key: &str) -> Result<bool, ParamError> {
        Ok(self.opt_param_u64(key, "flag", 0)?.is_some_and(|v| v != 0))
    }

    /// A plain string (required).
    pub fn string(&mut self, key: &str) -> Result<&'a str, ParamError> {
        match self.raw(key) {
            Some(toml::Value::String(s)) => Ok(s.as_str()),
            Some(other) => Err(self.err(key, format!("expected a string, found {}", other.type_str()))),
            None => Err(self.err(key, "missing string")),
        }
    }

    /// A plain string if present.
    pub fn opt_string(&mut self, key: &str) -> Result<Option<&'a str>, ParamError> {
        if self.has(key) { self.string(key).map(Some) } else { self.used.insert(key.into()); Ok(None) }
    }

    /// One of a fixed set of words.
    pub fn choice(&mut self, key: &str, allowed: &[&str], default: Option<&str>) -> Result<String, ParamError> {
        let s = match (self.has(key), default) {
            (true, _) => self.string(key)?,
            (false, Some(d)) => {
                self.used.insert(key.into());
                return Ok(d.to_string());
            }
            (false, None) => return Err(self.err(key, format!("missing; expected one of {}", allowed.join(", ")))),
        };
        if allowed.contains(&s) {
            Ok(s.to_string())
        } else {
            Err(self.err(key, format!("expected one of {}, found \"{s}\"", allowed.join(", "))))
        }
    }

    /// A plain integer (spec values, no provenance) in `min..=max`, with a default. The error
    /// names the value and the allowed range.
    pub fn int_in(&mut self, key: &str, default: u64, min: u64, max: u64) -> Result<u64, ParamError> {
        match self.raw(key) {
            None => Ok(default),
            Some(toml::Value::Integer(i)) if *i >= 0 && (min..=max).contains(&(*i as u64)) => Ok(*i as u64),
            Some(toml::Value::Integer(i)) => Err(self.err(key, format!("{i} is out of range (allowed {min} to {max})"))),
            Some(other) => Err(self.err(key, format!("expected an integer in {min}..={max}, found {other}"))),
        }
    }

    /// A plain integer (spec values, no provenance) with a default.
    pub fn int_or(&mut self, key: &str, default: u64, min: u64) -> Result<u64, ParamError> {
        match self.raw(key) {
            None => Ok(default),
            Some(toml::Value::Integer(i)) if *i >= min as i64 => Ok(*i as u64),
            Some(other) => Err(self.err(key, format!("expected an integer >= {min}, found {other}"))),
        }
    }

    /// A plain number (spec values, no provenance) with a default.
    pub fn num_or(&mut self, key: &str, default: f64) -> Result<f64, ParamError> {
        match self.raw(key) {
            None => Ok(default),
            Some(toml::Value::Integer(i)) => Ok(*i as f64),
            Some(toml::Value::Float(f)) if f.is_finite() => Ok(*f),
            Some(other) => Err(self.err(key, format!("expected a number, found {other}"))),
        }
    }

    /// A plain boolean with a default.
    pub fn bool_or(&mut self, key: &str, default: bool) -> Result<bool, ParamError> {
        match self.raw(key) {
            None => Ok(default),
            Some(toml::Value::Boolean(b)) => Ok(*b),
            Some(other) => Err(self.err(key, format!("expected true or false, found {other}"))),
        }
    }

    /// A raw value, if present (for callers with their own syntax).
    pub fn value(&mut self, key: &str) -> Option<&'a toml::Value> {
        self.raw(key)
    }

    /// Fails on any key that was never read: catches typos.
    pub fn finish(self) -> Result<(), ParamError> {
        let known: Vec<String> = self.used.iter().cloned().collect();
        self.finish_among(&known.iter().map(String::as_str).collect::<Vec<_>>())
    }

    /// Like [`Table::finish`], for a table whose valid keys are `known` (also those not
    /// read because they were absent): an unknown key is named with the nearest valid one.
    pub fn finish_among(self, known: &[&str]) -> Result<(), ParamError> {
        for k in self.table.keys() {
            if !self.used.contains(k) && !known.contains(&k.as_str()) {
                return Err(self.err(k, unknown_key_message(k, known)));
            }
        }
        Ok(())
    }
}

/// "unknown key (did you mean `label`? known keys here: ...)".
pub fn unknown_key_message(key: &str, known: &[&str]) -> String {
    match did_you_mean(key, known.iter().copied()) {
        Some(s) => format!("unknown key (did you mean `{s}`? known keys here: {})", known.join(", ")),
        None => format!("unknown key (known keys here: {})", known.join(", ")),
    }
}

/// The candidate nearest to `word` by edit distance, if it is close enough to be a typo
/// (at most 1 edit for words of up to 4 letters, 2 up to 8, 3 beyond).
pub fn did_you_mean<'c>(word: &str, candidates: impl IntoIterator<Item = &'c str>) -> Option<&'c str> {
    let limit = match word.chars().count() {
        0..=4 => 1,
        5..=8 => 2,
        _ => 3,
    };
    candidates
        .into_iter()
        .map(|c| (edit_distance(&word.to_lowercase(), &c.to_lowercase()), c))
        .filter(|&(d, _)| d <= limit)
        .min_by_key(|&(d, _)| d)
        .map(|(_, c)| c)
}

/// Levenshtein distance with adjacent transpositions counted as one edit (Damerau, optimal
/// string alignment), in characters.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for j in 0..=b.len() {
        d[0][j] = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[i - 1][j] + 1).min(d[i][j - 1] + 1).min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = v;
        }
    }
    d[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tbl(s: &str) -> toml::Table {
        Table::parse("t.toml", s).unwrap()
    }

    #[test]
    fn typos_get_the_nearest_valid_key() {
        assert_eq!(edit_distance("lable", "label"), 1);
        assert_eq!(edit_distance("patern", "pattern"), 1);
        assert_eq!(did_you_mean("lable", ["socket", "label", "lro"]), Some("label"));
        assert_eq!(did_you_mean("windw", ["window", "warmup"]), Some("window"));
        assert_eq!(did_you_mean("colour", ["name", "profile"]), None);
        let t = tbl("lable = 1\nsocket = 2");
        let mut r = Table::new("t.toml", "series[0]", &t);
        assert!(r.has("socket"));
        let _ = r.raw("socket");
        let e = r.finish_among(&["label", "socket", "lro"]).unwrap_err();
        assert_eq!(e.key, "series[0].lable");
        assert!(e.message.contains("did you mean `label`?"), "{}", e.message);
        assert!(e.message.contains("label, socket, lro"), "{}", e.message);
    }

    #[test]
    fn param_needs_provenance() {
        let t = tbl("a = 3\nb = { value = 2.5 }\nc = { value = 1, src = \"x\" }\nd = { value = -1, src = \"x\" }\ne = { value = 1, src = \"x\", unit = \"ns\" }");
        let mut r = Table::new("t.toml", "bus", &t);
        assert!(r.param("a", "ns").unwrap_err().to_string().contains("no provenance"));
        assert!(r.param("b", "ns").unwrap_err().to_string().contains("missing provenance"));
        assert_eq!(r.param("c", "ns").unwrap(), 1.0);
        assert!(r.param("d", "ns").unwrap_err().message.contains("non-negative"));
        assert!(r.param("e", "ns").unwrap_err().message.contains("unknown field"));
        let e = r.param("zz", "ns").unwrap_err();
        assert_eq!(e.key, "bus.zz");
        assert_eq!(e.file, "t.toml");
    }

    #[test]
    fn unknown_keys_are_reported() {
        let t = tbl("a = 1\ntypo = 2");
        let mut r = Table::new("f", "", &t);
        assert_eq!(r.int_or("a", 0, 0).unwrap(), 1);
        let e = r.finish().unwrap_err();
        assert_eq!(e.key, "typo");
    }

    #[test]
    fn choice_and_types() {
        let t = tbl("k = \"rc\"\nn = \"x\"\nb = 3");
        let mut r = Table::new("f", "", &t);
        assert_eq!(r.choice("k", &["rc", "uc"], None).unwrap(), "rc");
        assert!(r.choice("n", &["rc", "uc"], None).unwrap_err().message.contains("expected one of rc, uc"));
        assert!(r.bool_or("b", false).is_err());
        assert!(Table::parse("f", "a = ").is_err());
    }
}

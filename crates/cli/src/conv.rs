//! The conventions every subcommand shares (README "Command-line conventions"):
//!
//! - exit status 0 on success, 1 when a measurement or run failed (an unreachable daemon,
//!   a peer that died, errors in the driven site), 2 on bad usage or input (clap's own
//!   status for usage errors);
//! - `--json [FILE]` and `--csv [FILE]` write to FILE, or to standard output without one
//!   (or with `-`); the human-readable text then goes to standard error, so stdout carries
//!   only the machine-readable document;
//! - `--out DIR` is always a directory;
//! - durations carry units (`3s`, `500ms`, `2m`, `1h`; a bare number is seconds);
//! - `-q/--quiet` drops progress bars and log lines;
//! - every JSON document has `"schema": 1` and a `"kind"` naming it.

use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Version of every JSON document and record the CLI writes (`"schema": 1`).
pub const SCHEMA: u32 = interlab_patterns::RECORD_SCHEMA;

/// Why a subcommand failed, which decides its exit status.
#[derive(Debug)]
pub enum Fail {
    /// Bad usage or input (a file, key or value): exit status 2.
    Input(String),
    /// The measurement or run itself failed (a peer, the network, the site): exit status 1.
    Run(String),
}

impl Fail {
    /// The exit status of this failure.
    pub fn code(&self) -> u8 {
        match self {
            Fail::Input(_) => 2,
            Fail::Run(_) => 1,
        }
    }

    /// A run failure from any error (for `map_err`).
    pub fn run(e: impl fmt::Display) -> Fail {
        Fail::Run(e.to_string())
    }
}

impl fmt::Display for Fail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fail::Input(m) | Fail::Run(m) => f.write_str(m),
        }
    }
}

impl From<String> for Fail {
    fn from(m: String) -> Fail {
        Fail::Input(m)
    }
}

impl From<&str> for Fail {
    fn from(m: &str) -> Fail {
        Fail::Input(m.to_string())
    }
}

/// What a subcommand returns.
pub type CmdResult = Result<std::process::ExitCode, Fail>;

/// Longest duration any flag accepts: a week.
pub const MAX_DURATION: Duration = Duration::from_secs(7 * 24 * 3600);

/// Parses `3s`, `1.5s`, `500ms`, `2m`, `1h` or a bare number of seconds, at most a week
/// (a clap value parser).
pub fn duration(s: &str) -> Result<Duration, String> {
    let d = interlab_patterns::parse_duration(s)?;
    if d > MAX_DURATION {
        return Err(format!("{s}: longer than a week"));
    }
    Ok(d)
}

/// Like [`duration`], more than zero.
pub fn positive_duration(s: &str) -> Result<Duration, String> {
    let d = duration(s)?;
    if d.is_zero() {
        return Err(format!("{s}: must be more than zero"));
    }
    Ok(d)
}

/// A size with K = 2^10, M = 2^20, G = 2^30 (a clap value parser).
pub fn size(s: &str) -> Result<u64, String> {
    interlab_patterns::parse_size(s)
}

/// Whether standard output is reserved for a JSON or CSV document.
static STDOUT_IS_DATA: AtomicBool = AtomicBool::new(false);

/// Fails early (before any measurement) when the file `--FLAG PATH` names cannot be
/// created; a file that did not exist is not left behind.
pub fn check_writable_file(flag: &str, p: &Path) -> Result<(), Fail> {
    if p.is_dir() {
        return Err(Fail::Input(format!("--{flag} {}: is a directory (expected a file; --out takes directories)", p.display())));
    }
    let existed = p.exists();
    std::fs::OpenOptions::new().append(true).create(true).open(p).map_err(|e| Fail::Input(format!("--{flag} {}: cannot write: {e}", p.display())))?;
    if !existed {
        let _ = std::fs::remove_file(p);
    }
    Ok(())
}

/// Where a `--json [FILE]` / `--csv [FILE]` document goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dest {
    Stdout,
    File(PathBuf),
}

impl Dest {
    /// From the flag's value: `None` when the flag was not given; `-` is standard output.
    /// Claims standard output for the document when it goes there.
    pub fn from_flag(v: Option<&Path>) -> Option<Dest> {
        let d = match v {
            None => return None,
            Some(p) if p.as_os_str() == "-" => Dest::Stdout,
            Some(p) => Dest::File(p.to_path_buf()),
        };
        if d == Dest::Stdout {
            STDOUT_IS_DATA.store(true, Ordering::Relaxed);
        }
        Some(d)
    }

    /// Fails early (before any measurement) when the file cannot be created.
    pub fn check_writable(&self, flag: &str) -> Result<(), Fail> {
        match self {
            Dest::File(p) => check_writable_file(flag, p),
            Dest::Stdout => Ok(()),
        }
    }

    /// Writes `text` (a whole document) to the destination.
    pub fn write(&self, flag: &str, text: &str) -> Result<(), Fail> {
        match self {
            Dest::Stdout => {
                let mut o = std::io::stdout().lock();
                o.write_all(text.as_bytes()).and_then(|_| o.flush()).map_err(|e| Fail::Run(format!("stdout: {e}")))
            }
            Dest::File(p) => {
                std::fs::write(p, text).map_err(|e| Fail::Input(format!("--{flag} {}: cannot write: {e}", p.display())))?;
                say_err(&format!("wrote {}", p.display()));
                Ok(())
            }
        }
    }

    /// Writes `v` as pretty JSON with a trailing newline.
    pub fn write_json(&self, flag: &str, v: &serde_json::Value) -> Result<(), Fail> {
        let text = serde_json::to_string_pretty(v).map_err(|e| Fail::Run(e.to_string()))? + "\n";
        self.write(flag, &text)
    }
}

/// Where `--json [FILE]` and `--csv [FILE]` go, checked: both to standard output is refused.
pub fn record_dests(json: Option<&Path>, csv: Option<&Path>) -> Result<(Option<Dest>, Option<Dest>), Fail> {
    let (jd, cd) = (Dest::from_flag(json), Dest::from_flag(csv));
    if jd == Some(Dest::Stdout) && cd == Some(Dest::Stdout) {
        return Err(Fail::Input("--json and --csv both to standard output: give one of them a FILE".into()));
    }
    Ok((jd, cd))
}

/// The `--json [FILE]` and `--csv [FILE]` writers of a command that writes live records as
/// they are measured (a sweep that dies keeps what it had): JSON Lines and CSV (its header
/// before the first row), each flushed per record.
pub struct RecordWriters {
    json: Option<Box<dyn Write>>,
    csv: Option<Box<dyn Write>>,
    csv_header_done: bool,
}

impl RecordWriters {
    /// Opens the destinations (standard output or a created FILE each).
    pub fn open(json: Option<&Path>, csv: Option<&Path>) -> Result<RecordWriters, Fail> {
        let (jd, cd) = record_dests(json, csv)?;
        let open = |flag: &str, d: Option<Dest>| -> Result<Option<Box<dyn Write>>, Fail> {
            Ok(match d {
                None => None,
                Some(Dest::Stdout) => Some(Box::new(std::io::stdout())),
                Some(Dest::File(p)) => Some(Box::new(std::fs::File::create(&p).map_err(|e| Fail::Input(format!("--{flag} {}: cannot write: {e}", p.display())))?)),
            })
        };
        Ok(RecordWriters { json: open("json", jd)?, csv: open("csv", cd)?, csv_header_done: false })
    }

    /// Writes one record to each open destination.
    pub fn write(&mut self, r: &interlab_patterns::ExtendedRecord) -> Result<(), Fail> {
        use interlab_live::output::{csv_header, csv_row};
        let io = |e: std::io::Error| Fail::Run(format!("writing records: {e}"));
        if let Some(j) = &mut self.json {
            writeln!(j, "{}", interlab_live::record::to_json_line(r)).and_then(|_| j.flush()).map_err(io)?;
        }
        if let Some(c) = &mut self.csv {
            if !self.csv_header_done {
                writeln!(c, "{}", csv_header()).map_err(io)?;
                self.csv_header_done = true;
            }
            writeln!(c, "{}", csv_row(r)).and_then(|_| c.flush()).map_err(io)?;
        }
        Ok(())
    }
}

/// A JSON document with the shared header: `{"schema": 1, "kind": KIND, "version": ..., ...}`.
pub fn document(kind: &str, mut body: serde_json::Map<String, serde_json::Value>) -> serde_json::Value {
    let mut m = serde_json::Map::new();
    m.insert("schema".into(), SCHEMA.into());
    m.insert("kind".into(), kind.into());
    m.insert("version".into(), env!("CARGO_PKG_VERSION").into());
    m.append(&mut body);
    serde_json::Value::Object(m)
}

/// Prints a line of human-readable output: to stdout, or to stderr when stdout carries a
/// JSON or CSV document.
pub fn say(line: &str) {
    if STDOUT_IS_DATA.load(Ordering::Relaxed) {
        eprintln!("{line}");
    } else {
        println!("{line}");
    }
}

/// Prints a note on stderr.
pub fn say_err(line: &str) {
    eprintln!("{line}");
}

/// `say!` with format arguments.
macro_rules! say {
    ($($t:tt)*) => { $crate::conv::say(&format!($($t)*)) };
}

/// Human text is going to stderr because stdout carries a document.
pub fn stdout_is_data() -> bool {
    STDOUT_IS_DATA.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_need_no_unit_but_accept_them() {
        assert_eq!(duration("3").unwrap(), Duration::from_secs(3));
        assert_eq!(duration("3s").unwrap(), Duration::from_secs(3));
        assert_eq!(duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(duration("0.25").unwrap(), Duration::from_millis(250));
        assert!(duration("8d").is_err());
        assert!(duration("-1s").is_err());
        assert!(duration("200h").unwrap_err().contains("week"));
        assert!(positive_duration("0s").is_err());
    }

    #[test]
    fn exit_codes() {
        assert_eq!(Fail::from("bad key").code(), 2);
        assert_eq!(Fail::run("connection refused").code(), 1);
    }
}

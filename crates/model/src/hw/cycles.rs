//! Software costs that follow the host. A CPU cost a profile gives in cycles
//! (`<name>_cycles` instead of `<name>_ns` or `<name>_us`) becomes time on the profile's
//! host: cycles of the reference microarchitecture / (`[host] clock_ghz` x
//! `[host] ipc_factor`). The factor is the host's instructions per cycle on such code
//! relative to the reference microarchitecture (Skylake-SP = 1; docs/model.md gives each
//! modern host's factor and its source); a profile without it counts its cycles in its own
//! microarchitecture (factor 1). A key and its cycles form are alternatives: a section
//! gives one or the other, never both.

use crate::params::{ParamError, Table};

/// A host's clock as software costs see it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HostClock {
    /// Core clock, GHz (None: the profile gives none, so it can state no cost in cycles).
    pub ghz: Option<f64>,
    /// Instructions per cycle relative to the reference microarchitecture.
    pub ipc_factor: f64,
}

impl HostClock {
    /// Nanoseconds that `cycles` reference cycles take on this host (None without a clock).
    pub fn cycles_ns(&self, cycles: f64) -> Option<f64> {
        self.ghz.map(|g| cycles / (g * self.ipc_factor))
    }

    /// Reads the CPU cost `key` (ending in `_ns` or `_us`) of table `t`, or its form in
    /// cycles (`_ns`/`_us` replaced by `_cycles`), in `key`'s unit. Exactly one of the two
    /// must be present; cycles need the clock.
    pub fn cost(&self, t: &mut Table, key: &str) -> Result<f64, ParamError> {
        self.cost_or(t, key, None)
    }

    /// Like [`HostClock::cost`], `default` (in `key`'s unit) when neither form is present.
    pub fn opt_cost(&self, t: &mut Table, key: &str, default: f64) -> Result<f64, ParamError> {
        self.cost_or(t, key, Some(default))
    }

    fn cost_or(&self, t: &mut Table, key: &str, default: Option<f64>) -> Result<f64, ParamError> {
        let (base, unit, ns_per_unit) = split_unit(key);
        let cyc = format!("{base}_cycles");
        match (t.has(key), t.has(&cyc)) {
            (true, true) => Err(t.err(&cyc, format!("give this cost once: {key} or {cyc}, not both"))),
            (false, true) => {
                let cycles = t.param(&cyc, "cycles")?;
                let ns = self.cycles_ns(cycles).ok_or_else(|| t.err(&cyc, "a cost in cycles needs the core clock: add clock_ghz to [host]"))?;
                Ok(ns / ns_per_unit)
            }
            (false, false) if default.is_some() => Ok(default.expect("checked")),
            _ => t.param(key, unit),
        }
    }
}

/// `syscall_ns` -> ("syscall", "ns", 1), `mad_us` -> ("mad", "us", 1000).
fn split_unit(key: &str) -> (&str, &str, f64) {
    if let Some(b) = key.strip_suffix("_ns") {
        (b, "ns", 1.0)
    } else if let Some(b) = key.strip_suffix("_us") {
        (b, "us", 1000.0)
    } else {
        panic!("a CPU cost key ends in _ns or _us: {key}")
    }
}

/// Reads `[host] ipc_factor` (optional, default 1).
pub fn read_ipc_factor(t: &mut Table) -> Result<f64, ParamError> {
    if !t.has("ipc_factor") {
        return Ok(1.0);
    }
    let v = t.param("ipc_factor", "x reference IPC")?;
    if !(0.1..=10.0).contains(&v) {
        return Err(t.err("ipc_factor", format!("expected instructions per cycle of 0.1..10 times the reference microarchitecture's, found {v}")));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str, clock: HostClock, key: &str) -> Result<f64, ParamError> {
        let root = Table::parse("t.toml", text).unwrap();
        let mut t = Table::new("t.toml", "stack", &root);
        clock.cost(&mut t, key)
    }

    #[test]
    fn cycles_follow_clock_and_ipc() {
        let c = HostClock { ghz: Some(2.0), ipc_factor: 1.25 };
        assert_eq!(read("a_cycles = { value = 500, src = \"x\" }", c, "a_ns").unwrap(), 200.0);
        assert_eq!(read("a_cycles = { value = 5000, src = \"x\" }", c, "a_us").unwrap(), 2.0);
        assert_eq!(read("a_ns = { value = 7, src = \"x\" }", c, "a_ns").unwrap(), 7.0);
    }

    #[test]
    fn both_forms_or_cycles_without_clock_are_refused_by_key() {
        let both = "a_ns = { value = 7, src = \"x\" }\na_cycles = { value = 5, src = \"x\" }";
        let e = read(both, HostClock { ghz: Some(2.0), ipc_factor: 1.0 }, "a_ns").unwrap_err();
        assert_eq!(e.key, "stack.a_cycles");
        assert!(e.message.contains("not both"), "{e}");
        let e = read("a_cycles = { value = 5, src = \"x\" }", HostClock { ghz: None, ipc_factor: 1.0 }, "a_ns").unwrap_err();
        assert!(e.key == "stack.a_cycles" && e.message.contains("clock_ghz"), "{e}");
        let e = read("", HostClock { ghz: None, ipc_factor: 1.0 }, "a_ns").unwrap_err();
        assert_eq!(e.key, "stack.a_ns");
    }
}

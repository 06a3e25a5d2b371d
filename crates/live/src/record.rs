//! Building result records: the model's [`ResultRecord`] (built through its serde form, so
//! optional fields added to it later default to empty) plus [`LiveFields`].

use interlab_patterns::{ExtendedRecord, LiveFields, ResultRecord, Summary, RECORD_SCHEMA};
use serde_json::json;

/// The model-record fields a live point fills in.
#[derive(Debug, Clone)]
pub struct Base<'a> {
    pub experiment: &'a str,
    pub series: &'a str,
    /// Host description (the model puts a profile id here).
    pub profile: &'a str,
    pub pattern: &'a str,
    pub transport: &'a str,
    /// Initiating threads on this host.
    pub processes: u32,
    pub size: u64,
    pub metric: &'a str,
    /// NaN when nothing was measured (serialised as null).
    pub value: f64,
    pub unit: &'a str,
    pub summary: Option<Summary>,
    pub warmup: u32,
    pub iterations: u32,
    pub window: u32,
    /// The command line.
    pub spec: &'a str,
}

/// A record from its parts.
pub fn build(b: &Base, live: LiveFields) -> Result<ExtendedRecord, String> {
    let v = json!({
        "schema": RECORD_SCHEMA,
        "version": crate::VERSION,
        "engine": "live",
        "experiment": b.experiment,
        "series": b.series,
        "profile": b.profile,
        "pattern": b.pattern,
        "op": "send",
        "transport": b.transport,
        "ports": "one",
        "processes": b.processes,
        "size_bytes": b.size,
        "metric": b.metric,
        "value": if b.value.is_finite() { b.value } else { 0.0 },
        "unit": b.unit,
        "seed": 0,
        "warmup": b.warmup,
        "iterations": b.iterations,
        "window": b.window,
        "events": 0,
        "spec": b.spec,
    });
    let mut record: ResultRecord = serde_json::from_value(v).map_err(|e| format!("internal: result record schema changed: {e}"))?;
    record.value = b.value;
    record.summary = b.summary;
    Ok(ExtendedRecord { record, live })
}

/// One JSON line (NaN values become null).
pub fn to_json_line(r: &ExtendedRecord) -> String {
    serde_json::to_string(r).unwrap_or_else(|e| format!("{{\"error\":\"cannot serialise record: {e}\"}}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_a_flat_record() {
        let b = Base {
            experiment: "e",
            series: "tcp",
            profile: "host",
            pattern: "latency",
            transport: "tcp",
            processes: 1,
            size: 64,
            metric: "latency_us",
            value: f64::NAN,
            unit: "us",
            summary: None,
            warmup: 1,
            iterations: 2,
            window: 1,
            spec: "interlab live latency",
        };
        let r = build(&b, LiveFields { error: Some("peer died".into()), ..Default::default() }).unwrap();
        let line = to_json_line(&r);
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["engine"], "live");
        assert_eq!(v["size_bytes"], 64);
        assert!(v["value"].is_null());
        assert_eq!(v["error"], "peer died");
        assert!(v.get("cpu_local").is_none());
    }
}

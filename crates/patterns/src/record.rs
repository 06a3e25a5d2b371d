//! The tidy result record: one row per measured point, the same for model and live runs.

use serde::{Deserialize, Serialize};

/// Version of the record layout; bump on incompatible change.
pub const RECORD_SCHEMA: u32 = 1;

/// Quotes a CSV field that holds a comma, a quote or a newline.
fn q(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// One measured (or modelled) point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResultRecord {
    /// [`RECORD_SCHEMA`].
    pub schema: u32,
    /// interlab version that produced it.
    pub version: String,
    /// "model" or "live".
    pub engine: String,
    /// Experiment name (spec `experiment.name`).
    pub experiment: String,
    /// Series label inside the experiment (e.g. "PCIe", "PCI-X").
    pub series: String,
    /// Profile id (model) or host description (live).
    pub profile: String,
    /// Pattern name: latency, bandwidth, bibw, ...
    pub pattern: String,
    /// Operation: send, rdma_write, ...
    pub op: String,
    /// Transport: rc, uc, ud, tcp, ...
    pub transport: String,
    /// Port usage: one, stripe, bind.
    pub ports: String,
    /// Processes per node.
    pub processes: u32,
    /// Message size in bytes.
    pub size_bytes: u64,
    /// Wide-area loop length in miles (model runs over a WAN path).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distance_miles: Option<f64>,
    /// CPU utilisation of the server node over the run, percent: the model's, or live the
    /// daemon host's system CPU, absent when the point was shorter than one /proc/stat tick.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cpu_percent: Option<f64>,
    /// Client nodes around the server (model fan-in, fan-out, hot-spot), when more than one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clients: Option<u32>,
    /// The figure's x when it is none of size, distance or clients (e.g. `browsers` of a
    /// TPC-W load, `io_servers` of a PVFS run); its value is `x_value`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub x_name: Option<String>,
    /// Value of the x named by `x_name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub x_value: Option<f64>,
    /// Metric name: latency_us, bandwidth_MBps.
    pub metric: String,
    /// Value in the metric's unit.
    pub value: f64,
    /// Unit of `value`: "us" or "MB/s" (10^6 bytes/s).
    pub unit: String,
    /// Percentiles etc. where the metric has a distribution (latency).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<crate::Summary>,
    /// Seed of the run.
    pub seed: u64,
    /// Warm-up and measured iterations, window.
    pub warmup: u32,
    pub iterations: u32,
    pub window: u32,
    /// Simulated events (model) for this point.
    #[serde(default)]
    pub events: u64,
    /// Path or name of the spec file.
    pub spec: String,
}

impl ResultRecord {
    /// CSV header matching [`ResultRecord::csv_row`].
    pub const CSV_HEADER: &'static str = "schema,version,engine,experiment,series,profile,pattern,op,transport,ports,processes,size_bytes,metric,value,unit,seed,warmup,iterations,window,events,spec";

    /// Header of [`ResultRecord::csv_row_full`]: [`ResultRecord::CSV_HEADER`], then every
    /// optional field flattened (empty when absent), the latency summary as `summary_*`.
    pub const CSV_HEADER_FULL: &'static str = "schema,version,engine,experiment,series,profile,pattern,op,transport,ports,processes,size_bytes,metric,value,unit,seed,warmup,iterations,window,events,spec,distance_miles,clients,server_cpu_percent,x_name,x_value,summary_count,summary_mean,summary_min,summary_max,summary_stddev,summary_p50,summary_p90,summary_p99,summary_p999";

    /// One CSV row with every field (see [`ResultRecord::CSV_HEADER_FULL`]).
    pub fn csv_row_full(&self) -> String {
        let num = |v: Option<f64>| v.map_or(String::new(), |x| x.to_string());
        let s = self.summary.as_ref();
        format!(
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            self.csv_row(),
            num(self.distance_miles),
            self.clients.map_or(String::new(), |c| c.to_string()),
            num(self.server_cpu_percent),
            q(self.x_name.as_deref().unwrap_or("")),
            num(self.x_value),
            s.map_or(String::new(), |s| s.count.to_string()),
            num(s.map(|s| s.mean)),
            num(s.map(|s| s.min)),
            num(s.map(|s| s.max)),
            num(s.map(|s| s.stddev)),
            num(s.map(|s| s.p50)),
            num(s.map(|s| s.p90)),
            num(s.map(|s| s.p99)),
            num(s.map(|s| s.p999)),
        )
    }

    /// One CSV row (fields with commas or quotes are quoted).
    pub fn csv_row(&self) -> String {
        format!(
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            self.schema,
            q(&self.version),
            q(&self.engine),
            q(&self.experiment),
            q(&self.series),
            q(&self.profile),
            q(&self.pattern),
            q(&self.op),
            q(&self.transport),
            q(&self.ports),
            self.processes,
            self.size_bytes,
            q(&self.metric),
            self.value,
            q(&self.unit),
            self.seed,
            self.warmup,
            self.iterations,
            self.window,
            self.events,
            q(&self.spec)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> ResultRecord {
        ResultRecord {
            schema: RECORD_SCHEMA,
            version: "0".into(),
            engine: "model".into(),
            experiment: "e".into(),
            series: "a, \"quoted\" label".into(),
            profile: "p".into(),
            pattern: "latency".into(),
            op: "send".into(),
            transport: "rc".into(),
            ports: "one".into(),
            processes: 1,
            size_bytes: 64,
            distance_miles: None,
            server_cpu_percent: Some(12.5),
            clients: None,
            x_name: None,
            x_value: None,
            metric: "latency_us".into(),
            value: 5.25,
            unit: "us".into(),
            summary: crate::Summary::of(&[5.0, 5.5]),
            seed: 1,
            warmup: 2,
            iterations: 10,
            window: 1,
            events: 99,
            spec: "s.toml".into(),
        }
    }

    /// Splits a CSV row at commas outside quotes.
    fn fields(row: &str) -> usize {
        let mut quoted = false;
        1 + row.chars().filter(|&c| {
            if c == '"' {
                quoted = !quoted;
            }
            c == ',' && !quoted
        }).count()
    }

    #[test]
    fn full_csv_rows_line_up_with_their_header_and_carry_every_field() {
        let columns = ResultRecord::CSV_HEADER_FULL.split(',').count();
        let r = record();
        let row = r.csv_row_full();
        assert_eq!(fields(&row), columns, "{row}");
        assert!(row.contains(",12.5,"), "server CPU: {row}");
        assert!(row.contains(",2,5.25,5,5.5,"), "summary count, mean, min, max: {row}");
        let bare = ResultRecord { summary: None, server_cpu_percent: None, x_name: Some("io_servers".into()), x_value: Some(3.0), ..r };
        let row = bare.csv_row_full();
        assert_eq!(fields(&row), columns, "{row}");
        assert!(row.contains(",io_servers,3,"), "{row}");
        assert!(ResultRecord::CSV_HEADER_FULL.starts_with(ResultRecord::CSV_HEADER));
    }

    #[test]
    fn optional_fields_stay_out_of_json_when_absent() {
        let r = ResultRecord { summary: None, server_cpu_percent: None, ..record() };
        let json = serde_json::to_string(&r).unwrap();
        assert!(!json.contains("x_name") && !json.contains("x_value") && !json.contains("distance_miles"));
        let back: ResultRecord = serde_json::from_str(&json).unwrap();
        assert_eq!(back, r);
    }
}

//! The tidy result record: one row per measured point, the same for model and live runs.

use serde::{Deserialize, Serialize};

/// Version of the record layout; bump on incompatible change.
pub const RECORD_SCHEMA: u32 = 1;

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
    /// Model: CPU utilisation of the server node over the run, percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cpu_percent: Option<f64>,
    /// Client nodes around the server (model fan-in, fan-out, hot-spot), when more than one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clients: Option<u32>,
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

    /// One CSV row (fields with commas or quotes are quoted).
    pub fn csv_row(&self) -> String {
        fn q(s: &str) -> String {
            if s.contains([',', '"', '\n']) {
                format!("\"{}\"", s.replace('"', "\"\""))
            } else {
                s.to_string()
            }
        }
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

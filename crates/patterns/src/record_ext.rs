//! Live additions to the result record: the model's [`ResultRecord`] fields, flattened, plus
//! what only a measurement has (host facts, CPU utilisation of both ends, the confidence
//! interval achieved, loss, errors). Serialises as one flat JSON object, so a reader of
//! model records reads live ones too.

use crate::{Interval, ResultRecord};
use serde::{Deserialize, Serialize};

/// Facts about a host, as far as they are readable.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostFacts {
    pub hostname: String,
    /// Kernel release (`uname -r`).
    pub kernel: String,
    /// CPU model name.
    pub cpu: String,
    /// Online CPUs.
    pub cpus: u32,
    /// Network interface carrying the traffic, when known (`lo` on loopback).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface: Option<String>,
    /// Its driver, when readable from sysfs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver: Option<String>,
    /// Its speed in Mb/s, when the driver reports one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed_mbps: Option<u64>,
}

/// CPU utilisation of one end over the measured window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuUsage {
    /// Whole machine, percent of all CPUs, from /proc/stat (includes interrupt and softirq
    /// work, which per-process accounting misses).
    pub system_pct: f64,
    /// This process (user + system, all threads), percent of one CPU, from getrusage.
    pub process_pct: f64,
    /// Service demand from the whole-machine figure: CPU microseconds per KiB moved
    /// (bandwidth) or per transaction (latency, rr, connect); see `service_demand_unit`.
    pub service_demand_us: f64,
    /// "us/KB" (KB = 1024 bytes, as netperf) or "us/tran".
    pub service_demand_unit: String,
    /// Length of the window, seconds.
    pub window_s: f64,
}

/// The confidence interval achieved over repetitions, and whether it met the request.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ConfidenceReport {
    #[serde(flatten)]
    pub interval: Interval,
    /// Requested full width, percent of the mean.
    pub requested_width_pct: f64,
    /// The requested width was reached.
    pub met: bool,
}

/// One reporting interval of a run (`live --interval`), `start_s` to `end_s` seconds from the
/// start of the measured part of the repetition: for streams, what the senders handed to the
/// transport, summed over the streams; for latency-like patterns, the samples that finished
/// in the interval, pooled over the channels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IntervalReport {
    /// Repetition, from 1.
    pub repetition: u32,
    pub start_s: f64,
    pub end_s: f64,
    /// Streams: bytes in the interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// Latency-like patterns: samples that finished in the interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub samples: Option<u64>,
    /// Streams: rate over the interval; latency-like: mean of its samples. In `unit`.
    pub value: f64,
    /// "MB/s" (10^6 bytes per second) or "us".
    pub unit: String,
}

/// Fields only live measurements have.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LiveFields {
    /// Peer(s) measured against (host:port).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub peers: Vec<String>,
    /// Parallel streams / clients / senders per peer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streams: Option<u32>,
    /// Response size (rr, crr), bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_bytes: Option<u64>,
    /// Measured time per repetition, seconds (time-bounded runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_s: Option<f64>,
    /// Repetitions run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repetitions: Option<u32>,
    /// Transactions or round trips per second (latency-like metrics).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_per_s: Option<f64>,
    /// Datagrams lost, percent of bytes sent (UDP streams).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss_pct: Option<f64>,
    /// `--rate`: the offered sending rate of all streams together, Mbit/s (10^6 bit/s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offered_rate_mbps: Option<f64>,
    /// With `--rate`: the rate achieved at the receiver, Mbit/s (the value, in bits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub achieved_rate_mbps: Option<f64>,
    /// `--cpu`: the CPUs this end's data threads were pinned to (round-robin).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pinned_cpus: Vec<u32>,
    /// `--interval`: the per-interval reports of every repetition.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub intervals: Vec<IntervalReport>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<ConfidenceReport>,
    /// This end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_local: Option<CpuUsage>,
    /// The peer (first peer when there are several).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_remote: Option<CpuUsage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_local: Option<HostFacts>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_remote: Option<HostFacts>,
    /// Things that make the number less clean than it looks (short CPU window, interval
    /// not met, loss, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flags: Vec<String>,
    /// Set when the point could not be measured; `value` is then null.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A [`ResultRecord`] with [`LiveFields`], one flat object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExtendedRecord {
    #[serde(flatten)]
    pub record: ResultRecord,
    #[serde(flatten)]
    pub live: LiveFields,
}

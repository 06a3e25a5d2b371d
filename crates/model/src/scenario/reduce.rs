//! Result reduction: a finished simulation's programs and counters as one [`Point`].

use super::{ModelError, Scenario};
use super::build::Fabric;
use crate::node::Node;
use interlab_kernel::{RunStats, Time};
use interlab_patterns::{PatternKind, PatternSpec, Role, Samples, Summary};

/// One modelled point.
#[derive(Debug, Clone)]
pub struct Point {
    /// Latency in microseconds or bandwidth in MB/s (10^6 bytes/s).
    pub value: f64,
    /// "us" or "MB/s".
    pub unit: &'static str,
    /// Latency distribution in microseconds (latency patterns).
    pub summary: Option<Summary>,
    /// Events simulated.
    pub events: u64,
    /// Simulated time, picoseconds.
    pub sim_time_ps: Time,
    /// Payload bytes the nodes' adapters sent (conservation checks).
    pub bytes_sent: u64,
    /// Payload bytes the nodes' adapters placed in memory.
    pub bytes_received: u64,
    /// CPU utilisation of the server (node 0) while the traffic ran: its busy core time /
    /// (time the traffic ended x cores), percent, at most 100. The traffic ends when the last
    /// initiator finished or the last message reached a responder, whichever is later. A
    /// benchmark's CPU figure covers the test's run, as netperf's does; the simulation
    /// itself runs on past the last reply until the last timer (a TCP delayed ACK 40 ms
    /// later), which is not part of it.
    pub server_cpu_percent: f64,
    /// The server's (node 0's) busy core time over the whole run, summed over its cores, ps.
    pub server_busy_ps: Time,
    /// With two socket stacks at once: each stack's aggregate bandwidth, MB/s.
    pub by_stack: Vec<(String, f64)>,
}
/// Reduces the finished run of `s` at pattern point `spec` to its point.
pub(super) fn reduce(s: &Scenario, spec: &PatternSpec, fabric: &Fabric, stats: RunStats) -> Result<Point, ModelError> {
        let bidir = spec.kind.is_bidirectional();
        let mut latencies: Vec<f64> = Vec::new();
        let mut bw = 0.0;
        // Several flows: the aggregate is all measured bytes over the union of their
        // measured intervals (a sum of per-flow rates would count a flow that runs alone at
        // the end at full speed). A single bi-directional pair reports its two directions'
        // rates summed, as perftest and OSU do.
        let (mut union, mut total_bytes, mut flows) = (None, 0u64, 0u32);
        // Per stack (two stacks at once): (union window, bytes).
        let mut groups: Vec<(String, (u64, u64), u64)> = Vec::new();
        let mut unfinished = 0;
        // When the last program took part (an initiator finished, a responder got its last
        // message), ps: the end of the traffic.
        let mut traffic_end: Time = 0;
        let (mut sent, mut received) = (0, 0);
        for &id in &fabric.nodes {
            let n = fabric.sim.get::<Node>(id).expect("node");
            sent += n.adapter.stats.payload_bytes_sent;
            received += n.adapter.stats.payload_bytes_received;
            for p in n.host.procs() {
                for prog in &p.programs {
                    match prog.last_active_at() {
                        Some(t) => traffic_end = traffic_end.max(t),
                        None => unfinished += 1,
                    }
                    if prog.role() != Role::Initiator {
                        continue;
                    }
                    match prog.samples() {
                        Samples::Latency(v) => latencies.extend(v.iter().map(|ps| *ps as f64 / 1e6)),
                        Samples::Bandwidth { bytes, elapsed_ps, .. } if elapsed_ps > 0 => {
                            bw += bytes as f64 / elapsed_ps as f64 * 1e6;
                            let (a, b) = prog.measured_window().expect("finished bandwidth initiator");
                            union = Some(union.map_or((a, b), |(x, y): (u64, u64)| (x.min(a), y.max(b))));
                            if s.sock_mix.is_some() {
                                let name = n.ulps.sock.end(prog.chan()).map_or_else(String::new, |s| s.stack.describe());
                                match groups.iter_mut().find(|g| g.0 == name) {
                                    Some(g) => {
                                        g.1 = (g.1 .0.min(a), g.1 .1.max(b));
                                        g.2 += bytes;
                                    }
                                    None => groups.push((name, (a, b), bytes)),
                                }
                            }
                            total_bytes += bytes;
                            flows += 1;
                        }
                        _ => {}
                    }
                }
            }
        }
        if unfinished > 0 {
            return Err(ModelError(format!(
                "{unfinished} initiator(s) did not finish within {} events (simulated {:.3} ms): the scenario stalls",
                s.max_events,
                stats.end_time as f64 / 1e9
            )));
        }
        if flows > 1 && !(bidir && flows == 2) {
            if let Some((a, b)) = union.filter(|(a, b)| b > a) {
                bw = total_bytes as f64 / (b - a) as f64 * 1e6;
            }
        }
        // Two stacks at once: the aggregate is all bytes over the union of the measured
        // intervals (as for any multi-flow point); it is split between the stacks in
        // proportion to each stack's rate over its own flows' interval. (Flows move fixed
        // byte counts, so the faster stack finishes first; its own-interval rate is the one
        // it had while both ran.)
        let rates: Vec<(String, f64)> = groups
            .into_iter()
            .map(|(name, (a, b), bytes)| (name, if b > a { bytes as f64 / (b - a) as f64 * 1e6 } else { 0.0 }))
            .collect();
        let sum: f64 = rates.iter().map(|g| g.1).sum();
        let by_stack: Vec<(String, f64)> = rates.into_iter().map(|(n, r)| (n, if sum > 0.0 { bw * r / sum } else { 0.0 })).collect();
        let (value, unit, summary) = if spec.kind == PatternKind::Latency {
            let s = Summary::of(&latencies).ok_or_else(|| ModelError("no latency samples (iterations = 0?)".into()))?;
            (s.mean, "us", Some(s))
        } else {
            (bw, "MB/s", None)
        };
        let server = fabric.sim.get::<Node>(fabric.nodes[0]).expect("node");
        let busy: Time = server.host.core_busy_ps.iter().sum();
        let cores = server.host.core_busy_ps.len().max(1) as f64;
        // Busy time booked after the traffic's end (the last ACKs) is counted too: a few
        // microseconds against the milliseconds of a run, hence the bound.
        let span = if traffic_end > 0 { traffic_end } else { stats.end_time };
        let server_cpu_percent = if span > 0 { (busy as f64 / (span as f64 * cores) * 100.0).min(100.0) } else { 0.0 };
        Ok(Point {
            value,
            unit,
            summary,
            events: stats.events,
            sim_time_ps: stats.end_time,
            bytes_sent: sent,
            bytes_received: received,
            server_cpu_percent,
            server_busy_ps: busy,
            by_stack,
        })
}

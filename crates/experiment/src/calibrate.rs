//! Calibration with the model in the loop: the live engine measures a host's primitives and
//! fits them (`interlab_live::calibrate`); this module refines the fit so that the *model*
//! with the written profile reproduces the measurements (the model's own fabric adds latency
//! and per-byte time the live path may not have), renders the profile text, and compares
//! the model with that profile against the same patterns measured live. The CLI
//! (`interlab calibrate`) only wires flags to these functions. See docs/calibrate.md.

use interlab_live::calibrate::{self as cal, num, BaseShape, CalibrateOptions, Entry, Measurements, Primitives};
use interlab_live::runner::RunLength;
use interlab_live::Transport;
use interlab_model::ulp::sock::{SockKind, SockStack};
use interlab_model::{Initiator, Ports, Profile, Service, Scenario};
use interlab_patterns::{Op, PatternKind, PatternSpec, WorkloadKind};
use std::sync::Arc;

pub fn shape(p: &Profile) -> Result<BaseShape, String> {
    let st = p.stack.as_ref().ok_or_else(|| format!("base profile {} has no [stack] section (use r805-connectx-ddr)", p.id))?;
    let e = p.eth.as_ref().ok_or_else(|| format!("base profile {} has no [eth] section (use r805-connectx-ddr)", p.id))?;
    Ok(BaseShape {
        tcp_tx_ns: st.tcp_tx_ns,
        eth_tx_ns: e.tx_ns,
        interrupt_ns: st.interrupt_ns,
        eth_rx_ns: e.rx_ns,
        ip_rx_ns: st.ip_rx_ns,
        wakeup_ns: st.wakeup_ns,
        tcp_rx_ns: st.tcp_rx_ns,
        tcp_ack_tx_ns: st.tcp_ack_tx_ns,
        tcp_ack_rx_ns: st.tcp_ack_rx_ns,
        cache_bytes: st.cache_bytes,
        ip_header_bytes: st.ip_header_bytes,
        framing_bytes: e.link.framing_bytes as u64,
    })
}

/// What the profile's text gets besides the fitted primitives.
pub struct Extra {
    /// Cores the profile's host gets.
    pub cores: u32,
    /// New PCIe GT/s per lane, when the base bus is too slow for the measured path.
    pub bus_gts: Option<f64>,
}

pub fn entries(p: &Primitives, m: &Measurements, x: &Extra, how: &[(&str, String)]) -> Vec<Entry> {
    let c = |what: &str| format!("C: fitted by interlab calibrate from {what} on {} {}", m.host, m.date);
    let src_of = |key: &str, default: String| how.iter().find(|(k, _)| *k == key).map(|(_, s)| format!("{default}; {s}")).unwrap_or(default);
    let e = |section: &str, key: &str, v: f64, src: String| Entry { section: section.into(), key: key.into(), value: num(v), src: Some(src_of(key, src)) };
    let lat = "the TCP 1-byte one-way latency and the process CPU per message of both ends (split over the per-segment costs in the base profile's proportions)";
    let mut v = vec![
        e("stack", "syscall_ns", p.syscall_ns.round(), c("a recv() micro-benchmark on an empty socket")),
        e("stack", "copy_mbytes_per_s", p.copy_mbytes_per_s.round(), c("the slope of CPU time (and latency) vs message size, TCP ping-pong 1 B..64 KiB")),
        e("stack", "mem_copy_mbytes_per_s", p.mem_copy_mbytes_per_s.round(), c("the CPU per byte of single-stream TCP bandwidth with the largest message")),
        e("stack", "cache_bytes", p.cache_bytes as f64, c("sysfs cpu0 L2 cache size")),
        e("stack", "tcp_tx_ns", p.tcp_tx_ns.round(), c(lat)),
        e("stack", "tcp_rx_ns", p.tcp_rx_ns.round(), c(lat)),
        e("stack", "ip_rx_ns", p.ip_rx_ns.round(), c(lat)),
        e("stack", "tcp_ack_tx_ns", p.tcp_ack_tx_ns.round(), c("tcp_tx_ns times the base profile's ACK/segment ratio")),
        e("stack", "tcp_ack_rx_ns", p.tcp_ack_rx_ns.round(), c("tcp_rx_ns times the base profile's ACK/segment ratio")),
        e("stack", "interrupt_ns", p.interrupt_ns.round(), c(lat)),
        e("stack", "wakeup_ns", p.wakeup_ns.round(), c(&format!("{lat}, plus one-way latency not covered by CPU time (idle wake-up)"))),
        e("stack", "tcp_handshake_us", (p.tcp_handshake_us * 100.0).round() / 100.0, c("TCP connect+close time (connect pattern): connect = 2 (one-way 1 B + handshake)")),
        e("eth", "tx_ns", p.eth_tx_ns.round(), c(lat)),
        e("eth", "rx_ns", p.eth_rx_ns.round(), c(lat)),
        e("eth", "mtu_bytes", p.mtu_bytes as f64, c("the MTU of the interface the data went through")),
        Entry { section: "eth".into(), key: "lanes".into(), value: "1".into(), src: Some(format!("C: interlab calibrate on {} {}: one lane carries the path rate", m.host, m.date)) },
    ];
    let rate_src = if p.link_bound {
        c(&format!("single-stream TCP bandwidth (link-bound: the busier end used < {} % of a CPU); data rate {:.4} Gb/s with the frame geometry", cal::LINK_BOUND_BELOW_PCT, p.path_gbps))
    } else {
        c(&format!(
            "single-stream TCP bandwidth, which was CPU-bound ({:.3} Gb/s on the line): no path rate to measure, so the link is set {}x faster and never limits",
            p.path_gbps,
            cal::FABRIC_HEADROOM
        ))
    };
    v.push(e("eth", "lane_gbps", (p.lane_gbps * 1e4).round() / 1e4, rate_src));
    v.push(Entry { section: "eth".into(), key: "line_code".into(), value: "\"64b66b\"".into(), src: None });
    let cores_src = if m.same_machine {
        format!("C: interlab calibrate: client and daemon shared the {} CPUs of {} ({}), so each modelled node gets {}", m.cpus, m.host, m.date, x.cores)
    } else {
        format!("C: interlab calibrate: online CPUs of {} ({})", m.host, m.date)
    };
    v.push(Entry { section: "host".into(), key: "cores".into(), value: x.cores.to_string(), src: Some(cores_src) });
    if let Some(g) = x.bus_gts {
        v.push(Entry {
            section: "bus".into(),
            key: "gts".into(),
            value: num((g * 1000.0).round() / 1000.0),
            src: Some(format!(
                "C: interlab calibrate: the base bus was slower than the measured CPU-bound path on {} ({}); raised {}x above that path so it never limits (no bus on this path)",
                m.host,
                m.date,
                cal::FABRIC_HEADROOM
            )),
        });
    }
    v
}

pub fn render(base: &str, p: &Primitives, m: &Measurements, x: &Extra, id: &str, how: &[(&str, String)]) -> Result<String, String> {
    let desc = format!("{} calibrated by interlab calibrate against {} on {} ({}); other sections from {}", m.host, m.peer, m.host, m.date, base_id(base));
    let header = format!("Written by interlab calibrate {} on {} {} (peer {}).", interlab_live::VERSION, m.host, m.date, m.peer);
    cal::rewrite_profile(base, id, &desc, &header, &entries(p, m, x, how))
}

pub fn base_id(text: &str) -> String {
    text.lines().find_map(|l| l.trim().strip_prefix("id = ").map(|s| s.trim_matches('"').to_string())).unwrap_or_default()
}

pub fn parse(text: &str) -> Result<Arc<Profile>, String> {
    Profile::parse("calibrated profile", text).map(Arc::new).map_err(|e| format!("the fitted profile does not load: {e}"))
}

/// One model point over the profile's Ethernet stack.
pub fn model(p: &Arc<Profile>, kind: PatternKind, size: u64, procs: u32, clients: u32) -> Result<f64, String> {
    let mut v = Scenario::new(p.clone(), Service::Rc, Ports::One, procs);
    v.sock = Some(SockStack::new(SockKind::Eth));
    if clients > 1 {
        v.clients = clients;
        v.initiator = Initiator::Clients;
    }
    let (window, iterations) = match kind {
        PatternKind::Latency => (1, 20),
        _ if size >= 1 << 20 => (16, 3),
        _ => (64, 4),
    };
    let spec = PatternSpec { kind, op: Op::Send, size, window, warmup: 2, iterations };
    v.run(&spec).map(|pt| pt.value).map_err(|e| format!("model: {e}"))
}

pub fn model_connect(p: &Arc<Profile>) -> Result<f64, String> {
    let mut v = Scenario::new(p.clone(), Service::Rc, Ports::One, 1);
    v.sock = Some(SockStack::new(SockKind::Eth));
    interlab_model::connect::connect_time(&v).map(|pt| pt.value).map_err(|e| format!("model: {e}"))
}

pub fn scale_path(p: &mut Primitives, k: f64) {
    for x in [&mut p.tcp_tx_ns, &mut p.eth_tx_ns, &mut p.interrupt_ns, &mut p.eth_rx_ns, &mut p.ip_rx_ns, &mut p.wakeup_ns, &mut p.tcp_rx_ns, &mut p.tcp_ack_tx_ns, &mut p.tcp_ack_rx_ns] {
        *x *= k;
    }
}

/// Refined primitives and, per key, how each was obtained.
pub type Refined = (Primitives, Vec<(&'static str, String)>);

/// The model-in-the-loop refinement: the model's own fabric (adapter, bus, switch, wire)
/// adds latency and per-byte time the live path may not have; solve for the host costs
/// that make the model reproduce the measured primitives.
pub fn refine(base: &str, p0: Primitives, m: &Measurements, x: &Extra, id: &str, notes: &mut Vec<String>) -> Result<Refined, String> {
    let mut p = p0;
    let mut how: Vec<(&'static str, String)> = Vec::new();
    let prof = |p: &Primitives| render(base, p, m, x, id, &[]).and_then(|t| parse(&t));
    let lat = |p: &Primitives, s: u64| prof(p).and_then(|pr| model(&pr, PatternKind::Latency, s, 1, 1));
    let small = m.lat_tcp.iter().min_by_key(|l| l.size).ok_or("no latency measured")?;
    // 1. Per-message costs: latency is linear in them (one critical path).
    let mut z = p;
    scale_path(&mut z, 0.0);
    let floor = lat(&z, small.size)?;
    let full = lat(&p, small.size)?;
    if full > floor {
        let k = ((small.p50_us - floor) / (full - floor)).clamp(0.05, 20.0);
        if (small.p50_us - floor) / (full - floor) < 0.05 {
            notes.push(format!("the model's fabric alone gives {floor:.2} us one way, above the measured {:.2} us: host costs floored at 5 % of the fit", small.p50_us));
        }
        scale_path(&mut p, k);
        how.push(("tcp_tx_ns", format!("x{k:.3} so that the model's 1-byte latency equals the measured {:.2} us (model fabric alone: {floor:.2} us)", small.p50_us)));
        for key in ["tcp_rx_ns", "ip_rx_ns", "interrupt_ns", "wakeup_ns", "tx_ns", "rx_ns", "tcp_ack_tx_ns", "tcp_ack_rx_ns"] {
            how.push((key, format!("scaled x{k:.3} with tcp_tx_ns to the measured 1-byte latency")));
        }
    }
    // 2./3. Bandwidth. CPU-bound: the cache-warm copy rate to the 64 KiB single-stream
    // bandwidth, then the memory copy rate to the largest message's; link-bound: the lane
    // rate to the 64 KiB bandwidth. Secant iterations on the model.
    let bw_of = |size: u64| m.bw.iter().find(|b| b.size == size).map(|b| b.mbps);
    let mut steps: Vec<(&'static str, u64, f64)> = Vec::new();
    let small_bw = m.bw.iter().min_by_key(|b| b.size).copied();
    let big_bw = m.bw.iter().max_by_key(|b| b.size).copied();
    if let Some(b) = small_bw {
        steps.push((if p.link_bound { "lane_gbps" } else { "copy_mbytes_per_s" }, b.size, b.mbps));
    }
    if let (Some(b), false) = (big_bw, p.link_bound) {
        if Some(b.size) != small_bw.map(|s| s.size) && bw_of(b.size).is_some() {
            steps.push(("mem_copy_mbytes_per_s", b.size, b.mbps));
        }
    }
    for (key, size, target) in steps {
        let get = |p: &Primitives| match key {
            "lane_gbps" => p.lane_gbps,
            "copy_mbytes_per_s" => p.copy_mbytes_per_s,
            _ => p.mem_copy_mbytes_per_s,
        };
        let set = |p: &mut Primitives, v: f64| match key {
            "lane_gbps" => p.lane_gbps = v,
            "copy_mbytes_per_s" => {
                p.copy_mbytes_per_s = v;
                p.mem_copy_mbytes_per_s = p.mem_copy_mbytes_per_s.min(v);
            }
            _ => p.mem_copy_mbytes_per_s = v.min(p.copy_mbytes_per_s),
        };
        let f = |p: &Primitives| prof(p).and_then(|pr| model(&pr, PatternKind::Bandwidth, size, 1, 1));
        let before = get(&p);
        let (mut x0, mut y0) = (before, f(&p)?);
        let mut x1 = x0 * (target / y0).clamp(0.2, 5.0);
        for _ in 0..6 {
            if (y0 - target).abs() / target < 0.02 {
                break;
            }
            let mut q = p;
            set(&mut q, x1);
            let y1 = f(&q)?;
            let slope = (y1 - y0) / (x1 - x0);
            let next = if slope.abs() > 1e-12 && x1 != x0 { x1 + (target - y1) / slope } else { x1 * (target / y1) };
            (x0, y0) = (x1, y1);
            x1 = next.clamp(x0 * 0.2, x0 * 5.0).max(1e-3);
            if key == "lane_gbps" {
                // Past the CPU bound the lane rate no longer matters: do not run away.
                x1 = x1.min(before * 4.0);
            }
        }
        let rel = (y0 - target) / target * 100.0;
        if rel.abs() > 10.0 {
            notes.push(format!("model single-stream bandwidth at {size} B stays {rel:+.0} % off the measured {target:.0} MB/s after refining {key}"));
        }
        how.push((key, format!("refined with the model to the measured {size} B single-stream bandwidth {target:.0} MB/s (model {y0:.0}; closed-form fit {before:.0})")));
        set(&mut p, x0);
    }
    Ok((p, how))
}

/// One row of the comparison.
pub struct Row {
    /// Pattern and size, e.g. `latency 64 B`.
    pub name: String,
    /// `us` or `MB/s`.
    pub unit: &'static str,
    /// The model's value with the profile.
    pub model: Option<f64>,
    /// The live median (latency-like) or value.
    pub live: Option<f64>,
    /// The live mean.
    pub live_mean: Option<f64>,
    /// Why a side has no value.
    pub error: Option<String>,
}

pub fn compare(prof: &Arc<Profile>, o: &CalibrateOptions, quick: bool, same: bool) -> Vec<Row> {
    let lat_t = if quick { 0.2 } else { 1.0 };
    let bw_t = if quick { 0.4 } else { 2.0 };
    let time = |d: f64| RunLength::Time { warmup_s: d / 4.0, duration_s: d };
    type Case = (&'static str, WorkloadKind, u64, u32, PatternKind, u32, u32, &'static str);
    let cases: [Case; 7] = [
        ("latency 1 B", WorkloadKind::Latency, 1, 1, PatternKind::Latency, 1, 1, "us"),
        ("latency 64 KiB", WorkloadKind::Latency, 65536, 1, PatternKind::Latency, 1, 1, "us"),
        ("bandwidth 64 KiB", WorkloadKind::Bandwidth, 65536, 1, PatternKind::Bandwidth, 1, 1, "MB/s"),
        ("multi-stream 2 x 64 KiB", WorkloadKind::MultiStream, 65536, 2, PatternKind::Bandwidth, 2, 1, "MB/s"),
        ("hot-spot 4 clients 64 B", WorkloadKind::HotSpot, 64, 4, PatternKind::Latency, 1, 4, "us"),
        ("fan-in 2 senders 64 KiB", WorkloadKind::FanIn, 65536, 2, PatternKind::Bandwidth, 1, 2, "MB/s"),
        ("connect", WorkloadKind::Connect, 64, 1, PatternKind::Latency, 1, 1, "us"),
    ];
    let mut rows = Vec::new();
    for (name, wk, size, streams, pk, procs, clients, unit) in cases {
        eprintln!("  compare: {name}");
        let mut err = None;
        // One machine: every client shares its CPUs, so N clients are N processes on one
        // client node (one core) rather than N nodes with a core each.
        let (procs, clients) = if same && clients > 1 { (clients, 1) } else { (procs, clients) };
        let mv = if wk == WorkloadKind::Connect { model_connect(prof) } else { model(prof, pk, size, procs, clients) };
        let model_v = mv.map_err(|e| err = Some(e)).ok();
        let length = match wk {
            WorkloadKind::MultiStream => time(bw_t),
            WorkloadKind::Connect => RunLength::Count { warmup: Some(20), iterations: Some(if quick { 200 } else { 1000 }) },
            WorkloadKind::Bandwidth | WorkloadKind::FanIn => time(bw_t),
            _ => time(lat_t),
        };
        let (live, live_mean) = match cal::point(o, wk, Transport::Tcp, size, streams, length) {
            Ok(r) => {
                let v = if unit == "us" { cal::p50(&r) } else { r.record.value };
                (Some(v), Some(r.record.value))
            }
            Err(e) => {
                err = Some(e);
                (None, None)
            }
        };
        rows.push(Row { name: name.into(), unit, model: model_v, live, live_mean, error: err });
    }
    rows
}

/// The model's value for one point of a perftest or OSU output with profile `p`: perftest
/// runs verbs over RC (latency: ping-pong; bandwidth: perftest's pipelined loop with its
/// default 128 outstanding operations), OSU runs MPI over RC (`osu_latency` ping-pong,
/// `osu_bw`/`osu_bibw` a window of 64, then a reply). In the tool's unit (us, or MB/s =
/// 10^6 bytes/s).
pub fn model_for_tool(p: &Arc<Profile>, tool: crate::toolout::Tool, size: u64) -> Result<f64, String> {
    use crate::toolout::Tool;
    let size = size.max(1);
    let op_of = |op: &str| Op::from_name(op).ok_or_else(|| format!("no model operation `{op}`"));
    let mut v = Scenario::new(p.clone(), Service::Rc, Ports::One, 1);
    let (kind, op, window, iterations) = match tool {
        Tool::PerftestLat { op } => (PatternKind::Latency, op_of(op)?, 1, 50),
        Tool::PerftestBw { op, bidirectional } => (if bidirectional { PatternKind::BiPipelined } else { PatternKind::Pipelined }, op_of(op)?, 128, 256),
        Tool::OsuLatency | Tool::OsuBw | Tool::OsuBibw => {
            if p.mpi.is_none() {
                return Err(format!("profile {} has no [mpi] section: OSU points cannot be modelled with it", p.id));
            }
            v.mpi = Some(interlab_model::MpiDesign::Rc);
            match tool {
                Tool::OsuLatency => (PatternKind::Latency, Op::Send, 1, 50),
                Tool::OsuBw => (PatternKind::Bandwidth, Op::Send, 64, 4),
                _ => (PatternKind::BiBandwidth, Op::Send, 64, 4),
            }
        }
    };
    let spec = PatternSpec { kind, op, size, window, warmup: 2, iterations };
    v.validate(&spec).map_err(|e| format!("{} {size} B: {e}", tool.name()))?;
    v.run(&spec).map(|pt| pt.value).map_err(|e| format!("model: {e}"))
}

//! `interlab calibrate`: the primitive live measurements (small-message round trips over
//! TCP and UDP, single-stream bandwidth, connection set-up, CPU of both ends, a system-call
//! micro-benchmark) and the fitting equations that turn them into host primitives of the
//! model's profile format (`[stack]`, `[eth]`), plus the rewrite of a base profile's text.
//! The model itself is not a dependency of this crate: the model-in-the-loop refinement and
//! the model-vs-live comparison live in the CLI (`crates/cli/src/calibrate_cmd.rs`).
//! The equations are documented in docs/calibrate.md.

use crate::auth::Token;
use crate::client::Peer;
use crate::proto::Transport;
use crate::runner::{run_point, PointOptions, RunLength};
use interlab_patterns::{ExtendedRecord, Workload, WorkloadKind};
use std::time::Duration;

/// One small-message (ping-pong) point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatPoint {
    pub size: u64,
    /// One-way latency (round trip / 2), median, us.
    pub p50_us: f64,
    /// One-way latency, mean, us.
    pub mean_us: f64,
    /// Process CPU of both ends (getrusage of client and daemon) per round trip, us.
    pub cpu_us_per_rt: Option<f64>,
}

/// One single-stream bandwidth point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BwPoint {
    pub size: u64,
    /// Windowed bandwidth, MB/s (10^6 B/s).
    pub mbps: f64,
    /// Process CPU of both ends per byte moved, us/B.
    pub cpu_us_per_byte: Option<f64>,
    /// The busier end's process CPU, percent of one CPU.
    pub busiest_pct: Option<f64>,
}

/// Everything `interlab calibrate` measures.
#[derive(Debug, Clone, PartialEq)]
pub struct Measurements {
    pub host: String,
    pub date: String,
    pub peer: String,
    /// Client and daemon on one machine (loopback, or namespaces of one kernel).
    pub same_machine: bool,
    /// The peer is a loopback address (no link on the path).
    pub loopback: bool,
    /// Online CPUs here.
    pub cpus: u32,
    pub lat_tcp: Vec<LatPoint>,
    /// UDP 1-byte one-way latency, median, us.
    pub lat_udp_1b_us: Option<f64>,
    pub bw: Vec<BwPoint>,
    /// TCP connect + close time, median, us.
    pub connect_us: Option<f64>,
    /// A send()/recv() system call that does nothing (recv on an empty socket), ns.
    pub syscall_ns: f64,
    /// Per-core cache a copy's working set fits in (L2), bytes.
    pub cache_bytes: Option<u64>,
    /// MTU of the interface the data goes through, bytes.
    pub mtu: u32,
}

/// Base-profile values the fit borrows: the split of the identified sums over the
/// individual per-segment costs, and the header geometry.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BaseShape {
    pub tcp_tx_ns: f64,
    pub eth_tx_ns: f64,
    pub interrupt_ns: f64,
    pub eth_rx_ns: f64,
    pub ip_rx_ns: f64,
    pub wakeup_ns: f64,
    pub tcp_rx_ns: f64,
    pub tcp_ack_tx_ns: f64,
    pub tcp_ack_rx_ns: f64,
    pub cache_bytes: u64,
    pub ip_header_bytes: u64,
    pub framing_bytes: u64,
}

/// The fitted primitives.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Primitives {
    pub syscall_ns: f64,
    pub copy_mbytes_per_s: f64,
    pub mem_copy_mbytes_per_s: f64,
    pub cache_bytes: u64,
    pub tcp_tx_ns: f64,
    pub tcp_rx_ns: f64,
    pub ip_rx_ns: f64,
    pub tcp_ack_tx_ns: f64,
    pub tcp_ack_rx_ns: f64,
    pub interrupt_ns: f64,
    pub wakeup_ns: f64,
    pub tcp_handshake_us: f64,
    pub eth_tx_ns: f64,
    pub eth_rx_ns: f64,
    pub mtu_bytes: u32,
    /// Ethernet signalling rate per lane, Gb/s (one lane, 64b/66b).
    pub lane_gbps: f64,
    /// True: the path rate was measured (the stream was link-bound); false: the stream was
    /// CPU-bound and the link is set far above it (no rate to measure).
    pub link_bound: bool,
    /// The measured path data rate (goodput scaled to the line by the frame geometry), Gb/s.
    pub path_gbps: f64,
}

/// 64b/66b data bits per signalled bit.
pub const ETH_EFFICIENCY: f64 = 64.0 / 66.0;
/// A stream whose busier end uses less than this much of one CPU is taken as link-bound.
pub const LINK_BOUND_BELOW_PCT: f64 = 70.0;
/// A CPU-bound path gets a link (and bus) this many times faster than the best measured rate.
pub const FABRIC_HEADROOM: f64 = 50.0;

/// Least-squares line y = a + b x.
pub fn line(xs: &[f64], ys: &[f64]) -> Option<(f64, f64)> {
    let n = xs.len().min(ys.len());
    if n < 2 {
        return None;
    }
    let mx = xs[..n].iter().sum::<f64>() / n as f64;
    let my = ys[..n].iter().sum::<f64>() / n as f64;
    let sxx: f64 = xs[..n].iter().map(|x| (x - mx) * (x - mx)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let sxy: f64 = xs[..n].iter().zip(&ys[..n]).map(|(x, y)| (x - mx) * (y - my)).sum();
    let b = sxy / sxx;
    Some((my - b * mx, b))
}

/// Per-byte copy time of a `msg`-byte message's copy in us/B, as the model charges it
/// (`StackSpec::copy_ps`: the working set is twice the message).
pub fn copy_us_per_byte(copy: f64, mem: f64, cache: u64, msg: u64) -> f64 {
    let ws = 2.0 * msg.max(1) as f64;
    let miss = (1.0 - cache as f64 / ws).max(0.0);
    (1.0 - miss) / copy + miss / mem
}

/// Per-message CPU of one one-way small message, both ends, beyond the two system calls:
/// the seven per-segment costs on the latency path, ns.
pub fn path_sum(p: &Primitives) -> f64 {
    p.tcp_tx_ns + p.eth_tx_ns + p.interrupt_ns + p.eth_rx_ns + p.ip_rx_ns + p.wakeup_ns + p.tcp_rx_ns
}

/// Payload bytes per frame (MSS).
pub fn mss(mtu: u32, shape: &BaseShape) -> f64 {
    (mtu as f64 - shape.ip_header_bytes as f64).max(1.0)
}

/// The fitting equations (docs/calibrate.md). `idle_wake_ns`: the part of the wake-up that is
/// not CPU time (scheduler idle exit), identified as one-way latency minus CPU per message.
pub fn fit(m: &Measurements, shape: &BaseShape) -> Result<Primitives, String> {
    let lat: Vec<&LatPoint> = m.lat_tcp.iter().collect();
    if lat.is_empty() {
        return Err("no TCP latency was measured".into());
    }
    let small = lat.iter().min_by_key(|p| p.size).expect("non-empty");
    let syscall_ns = m.syscall_ns;
    // Latency line over sizes: L(s) = L0 + L1 s (us, us/B).
    let xs: Vec<f64> = lat.iter().map(|p| p.size as f64).collect();
    let ys: Vec<f64> = lat.iter().map(|p| p.p50_us).collect();
    let (l0, l1) = line(&xs, &ys).unwrap_or((small.p50_us, 0.0));
    let l0 = if l0 > 0.0 { l0 } else { small.p50_us };
    // CPU per round trip over sizes: C(s) = C0 + C1 s (both ends, two one-way messages).
    let cpu: Vec<(f64, f64)> = lat.iter().filter_map(|p| p.cpu_us_per_rt.map(|c| (p.size as f64, c))).collect();
    let cpu_line = line(&cpu.iter().map(|c| c.0).collect::<Vec<_>>(), &cpu.iter().map(|c| c.1).collect::<Vec<_>>());
    // Per-byte: two copies per one-way message (into the sender's socket, out of the
    // receiver's). The CPU slope is the primary estimate, the latency slope the fallback.
    let per_byte_one_way = match cpu_line {
        Some((_, c1)) if c1 > 0.0 => c1 / 2.0,
        _ if l1 > 0.0 => l1,
        _ => 2.0 / 10_000.0,
    };
    let copy = 2.0 / per_byte_one_way;
    // Per message (one way, both ends): C0 / 2, else the latency intercept.
    let per_msg_us = match cpu_line {
        Some((c0, _)) if c0 > 0.0 => c0 / 2.0,
        _ => l0,
    };
    let idle_wake_ns = ((l0 - per_msg_us) * 1000.0).max(0.0);
    let sum_ns = (per_msg_us * 1000.0 - 2.0 * syscall_ns).max(0.0);
    let w = [shape.tcp_tx_ns, shape.eth_tx_ns, shape.interrupt_ns, shape.eth_rx_ns, shape.ip_rx_ns, shape.wakeup_ns, shape.tcp_rx_ns];
    let wsum: f64 = w.iter().sum::<f64>().max(1e-9);
    let part = |x: f64| sum_ns * x / wsum;
    let cache = m.cache_bytes.unwrap_or(shape.cache_bytes);
    let mut p = Primitives {
        syscall_ns,
        copy_mbytes_per_s: copy,
        mem_copy_mbytes_per_s: copy,
        cache_bytes: cache,
        tcp_tx_ns: part(shape.tcp_tx_ns),
        tcp_rx_ns: part(shape.tcp_rx_ns),
        ip_rx_ns: part(shape.ip_rx_ns),
        tcp_ack_tx_ns: 0.0,
        tcp_ack_rx_ns: 0.0,
        interrupt_ns: part(shape.interrupt_ns),
        wakeup_ns: part(shape.wakeup_ns) + idle_wake_ns,
        tcp_handshake_us: 0.0,
        eth_tx_ns: part(shape.eth_tx_ns),
        eth_rx_ns: part(shape.eth_rx_ns),
        mtu_bytes: m.mtu.max(576),
        lane_gbps: 0.0,
        link_bound: false,
        path_gbps: 0.0,
    };
    // TCP's extra work over UDP (same driver, IP and wake-up path): when UDP is faster,
    // the difference belongs to TCP output and input; move it there from the shared parts.
    if let Some(udp) = m.lat_udp_1b_us {
        let extra_ns = ((small.p50_us - udp) * 1000.0).max(0.0).min(0.8 * (sum_ns - p.tcp_tx_ns - p.tcp_rx_ns).max(0.0));
        let tcp_w = shape.tcp_tx_ns + shape.tcp_rx_ns;
        let others = sum_ns - p.tcp_tx_ns - p.tcp_rx_ns;
        if extra_ns > 0.0 && tcp_w > 0.0 && others > 0.0 {
            let keep = (others - extra_ns) / others;
            for x in [&mut p.eth_tx_ns, &mut p.interrupt_ns, &mut p.eth_rx_ns, &mut p.ip_rx_ns] {
                *x *= keep;
            }
            let wcpu = part(shape.wakeup_ns);
            p.wakeup_ns = wcpu * keep + idle_wake_ns;
            p.tcp_tx_ns += extra_ns * shape.tcp_tx_ns / tcp_w;
            p.tcp_rx_ns += extra_ns * shape.tcp_rx_ns / tcp_w;
        }
    }
    p.tcp_ack_tx_ns = if shape.tcp_tx_ns > 0.0 { p.tcp_tx_ns * shape.tcp_ack_tx_ns / shape.tcp_tx_ns } else { p.tcp_tx_ns };
    p.tcp_ack_rx_ns = if shape.tcp_rx_ns > 0.0 { p.tcp_rx_ns * shape.tcp_ack_rx_ns / shape.tcp_rx_ns } else { p.tcp_rx_ns };
    // Memory copy rate: CPU per byte of the largest stream message, both ends, less the
    // per-frame work spread over its bytes, is two copies of the message.
    let seg_bytes = mss(p.mtu_bytes, shape);
    let per_seg_us = (p.tcp_tx_ns + p.eth_tx_ns + p.eth_rx_ns + p.ip_rx_ns + p.tcp_rx_ns) / 1000.0;
    if let Some(big) = m.bw.iter().filter(|b| b.cpu_us_per_byte.is_some()).max_by_key(|b| b.size) {
        let c = big.cpu_us_per_byte.expect("filtered") - per_seg_us / seg_bytes;
        let ws = 2.0 * big.size as f64;
        let miss = (1.0 - cache as f64 / ws).max(0.0);
        // c = 2 ((1 - miss)/copy + miss/mem)
        let rest = c / 2.0 - (1.0 - miss) / p.copy_mbytes_per_s;
        if miss > 0.0 && rest > 0.0 {
            p.mem_copy_mbytes_per_s = (miss / rest).min(p.copy_mbytes_per_s);
        } else if miss == 0.0 && c > 0.0 {
            p.mem_copy_mbytes_per_s = p.copy_mbytes_per_s;
        }
    }
    // Handshake: connect = 2 (one-way(1 B) + handshake) (SYN, SYN-ACK), model/ulp/connect.rs.
    if let Some(c) = m.connect_us {
        p.tcp_handshake_us = (c / 2.0 - small.p50_us).max(0.0);
    }
    // Link: a link-bound stream gives the path rate; a CPU-bound one gives none.
    let best = m.bw.iter().map(|b| b.mbps).fold(0.0, f64::max);
    let frame = p.mtu_bytes as f64 + shape.framing_bytes as f64;
    // Loopback has no link: its streams are CPU-bound whatever the CPU figures say (other
    // load on the machine can hold our processes below the threshold).
    p.link_bound = !m.loopback && m.bw.iter().any(|b| b.busiest_pct.is_some_and(|c| c < LINK_BOUND_BELOW_PCT));
    if best > 0.0 {
        if p.link_bound {
            let g = m.bw.iter().filter(|b| b.busiest_pct.is_some_and(|c| c < LINK_BOUND_BELOW_PCT)).map(|b| b.mbps).fold(0.0, f64::max);
            p.path_gbps = g * 8.0 / 1000.0 * frame / seg_bytes;
            p.lane_gbps = p.path_gbps / ETH_EFFICIENCY;
        } else {
            p.path_gbps = best * 8.0 / 1000.0 * frame / seg_bytes;
            p.lane_gbps = FABRIC_HEADROOM * p.path_gbps / ETH_EFFICIENCY;
        }
    } else {
        p.lane_gbps = 10.3125;
    }
    Ok(p)
}

/// The forward model of the fitting equations: what `measure` would see on a host whose
/// primitives are `p` (no noise, no fabric latency). Used to test `fit`.
pub fn synthesize(p: &Primitives, shape: &BaseShape, sizes: &[u64], bw_sizes: &[u64]) -> Measurements {
    let per_msg_cpu_ns = 2.0 * p.syscall_ns + path_sum(p) - 0.0;
    let lat_tcp = sizes
        .iter()
        .map(|&s| {
            let one_way = (per_msg_cpu_ns + s as f64 * 2.0 / p.copy_mbytes_per_s * 1000.0) / 1000.0;
            LatPoint { size: s, p50_us: one_way, mean_us: one_way, cpu_us_per_rt: Some(2.0 * one_way) }
        })
        .collect();
    let seg = mss(p.mtu_bytes, shape);
    let per_seg_us = (p.tcp_tx_ns + p.eth_tx_ns + p.eth_rx_ns + p.ip_rx_ns + p.tcp_rx_ns) / 1000.0;
    let bw = bw_sizes
        .iter()
        .map(|&s| {
            let c = 2.0 * copy_us_per_byte(p.copy_mbytes_per_s, p.mem_copy_mbytes_per_s, p.cache_bytes, s) + per_seg_us / seg;
            BwPoint { size: s, mbps: 1.0 / c, cpu_us_per_byte: Some(c), busiest_pct: Some(100.0) }
        })
        .collect();
    let one_way_1 = (per_msg_cpu_ns + 2.0 / p.copy_mbytes_per_s * 1000.0) / 1000.0;
    Measurements {
        host: "synthetic".into(),
        date: "1970-01-01".into(),
        peer: "none".into(),
        same_machine: true,
        loopback: false,
        cpus: 2,
        lat_tcp,
        lat_udp_1b_us: None,
        bw,
        connect_us: Some(2.0 * (one_way_1 + p.tcp_handshake_us)),
        syscall_ns: p.syscall_ns,
        cache_bytes: Some(p.cache_bytes),
        mtu: p.mtu_bytes,
    }
}

/// How much to measure.
#[derive(Debug, Clone)]
pub struct CalibrateOptions {
    pub peer: Peer,
    pub token: Option<Token>,
    pub quick: bool,
    pub connect_timeout: Duration,
}

fn process_cpu_pct(r: &ExtendedRecord) -> Option<(f64, f64)> {
    let l = r.live.cpu_local.as_ref()?.process_pct;
    let rm = r.live.cpu_remote.as_ref()?.process_pct;
    Some((l, rm))
}

/// Runs one live point; an error message names the pattern and size.
pub fn point(o: &CalibrateOptions, kind: WorkloadKind, transport: Transport, size: u64, streams: u32, length: RunLength) -> Result<ExtendedRecord, String> {
    let w = Workload { kind, size, response_size: size, window: 64, streams, peers: 1 };
    let po = PointOptions {
        workload: w,
        transport,
        peers: vec![o.peer.clone()],
        token: o.token.clone(),
        length,
        confidence: None,
        sockbuf: 0,
        experiment: "calibrate".into(),
        command: "interlab calibrate".into(),
        connect_timeout: o.connect_timeout,
        extras: Default::default(),
    };
    crate::runner::check(&po).map_err(|e| format!("{} {size} B: {e}", kind.name()))?;
    let out = run_point(&po)?;
    if let Some(e) = out.error {
        return Err(format!("{} over {} ({size} B) against {}: {}", kind.name(), transport.name(), o.peer.label, e.message));
    }
    Ok(out.record)
}

/// Median of a record's latency-like samples, else its value.
pub fn p50(r: &ExtendedRecord) -> f64 {
    r.record.summary.as_ref().map_or(r.record.value, |s| s.p50)
}

/// Cost of one recv() on an empty non-blocking socket, ns: the best of several batches.
pub fn syscall_ns() -> f64 {
    let s = match std::net::UdpSocket::bind("127.0.0.1:0") {
        Ok(s) => s,
        Err(_) => return 100.0,
    };
    let _ = s.set_nonblocking(true);
    let mut buf = [0u8; 16];
    let mut best = f64::MAX;
    for _ in 0..7 {
        let n = 20_000;
        let t = std::time::Instant::now();
        for _ in 0..n {
            let _ = s.recv(&mut buf);
        }
        best = best.min(t.elapsed().as_nanos() as f64 / n as f64);
    }
    best
}

/// The per-core cache a copy fits in: the largest non-shared data/unified cache level of
/// cpu0 (L2 on most x86), from sysfs.
pub fn cache_bytes() -> Option<u64> {
    let mut best = None;
    for i in 0..8 {
        let d = format!("/sys/devices/system/cpu/cpu0/cache/index{i}");
        let Ok(level) = std::fs::read_to_string(format!("{d}/level")) else { break };
        let ty = std::fs::read_to_string(format!("{d}/type")).unwrap_or_default();
        if level.trim() != "2" || ty.trim() == "Instruction" {
            continue;
        }
        let size = std::fs::read_to_string(format!("{d}/size")).ok()?;
        let s = size.trim();
        let v = if let Some(k) = s.strip_suffix('K') { k.parse::<u64>().ok()? * 1024 } else if let Some(m) = s.strip_suffix('M') { m.parse::<u64>().ok()? << 20 } else { s.parse().ok()? };
        best = Some(v);
    }
    best
}

/// MTU of `iface` from sysfs.
pub fn iface_mtu(iface: &str) -> Option<u32> {
    std::fs::read_to_string(format!("/sys/class/net/{iface}/mtu")).ok()?.trim().parse().ok()
}

/// Today's date (UTC), YYYY-MM-DD.
pub fn today() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let days = (secs / 86_400) as i64;
    // Civil from days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    format!("{:04}-{:02}-{:02}", if m <= 2 { y + 1 } else { y }, m, d)
}

/// Runs the primitive measurements. `progress` gets one line per step.
pub fn measure(o: &CalibrateOptions, progress: &mut dyn FnMut(&str)) -> Result<Measurements, String> {
    let (lat_sizes, bw_sizes, lat_s, bw_s): (&[u64], &[u64], f64, f64) =
        if o.quick { (&[1, 1024, 16384, 65536], &[65536, 1 << 20], 0.15, 0.3) } else { (&[1, 64, 1024, 4096, 16384, 65536], &[65536, 262144, 1 << 20], 0.5, 1.0) };
    let time = |d: f64| RunLength::Time { warmup_s: d / 4.0, duration_s: d };
    let mut lat_tcp = Vec::new();
    let mut host = String::new();
    let mut same = false;
    let mut mtu = None;
    for &s in lat_sizes {
        progress(&format!("tcp latency {s} B"));
        let r = point(o, WorkloadKind::Latency, Transport::Tcp, s, 1, time(lat_s))?;
        if host.is_empty() {
            let hl = r.live.host_local.clone().unwrap_or_default();
            host = hl.hostname.clone();
            same = o.peer.addr.ip().is_loopback() || r.live.host_remote.as_ref().is_some_and(|h| h.hostname == hl.hostname && h.kernel == hl.kernel);
            mtu = hl.interface.as_deref().and_then(iface_mtu);
        }
        let rate = r.live.rate_per_s.unwrap_or(0.0);
        let cpu = process_cpu_pct(&r).filter(|_| rate > 0.0).map(|(a, b)| (a + b) / 100.0 / rate * 1e6);
        lat_tcp.push(LatPoint { size: s, p50_us: p50(&r), mean_us: r.record.value, cpu_us_per_rt: cpu });
    }
    progress("udp latency 1 B");
    let lat_udp_1b_us = point(o, WorkloadKind::Latency, Transport::Udp, 1, 1, time(lat_s)).ok().map(|r| p50(&r));
    let mut bw = Vec::new();
    for &s in bw_sizes {
        progress(&format!("tcp bandwidth {s} B"));
        let r = point(o, WorkloadKind::Bandwidth, Transport::Tcp, s, 1, time(bw_s))?;
        let v = r.record.value;
        let cpu = process_cpu_pct(&r);
        bw.push(BwPoint {
            size: s,
            mbps: v,
            cpu_us_per_byte: cpu.filter(|_| v > 0.0).map(|(a, b)| (a + b) / 100.0 / v),
            busiest_pct: cpu.map(|(a, b)| a.max(b)),
        });
    }
    progress("tcp connect");
    let c = point(o, WorkloadKind::Connect, Transport::Tcp, 64, 1, RunLength::Count { warmup: Some(20), iterations: Some(if o.quick { 200 } else { 1000 }) })?;
    progress("system call micro-benchmark");
    Ok(Measurements {
        host,
        date: today(),
        peer: o.peer.label.clone(),
        same_machine: same,
        loopback: o.peer.addr.ip().is_loopback(),
        cpus: crate::cpu::cpus(),
        lat_tcp,
        lat_udp_1b_us,
        bw,
        connect_us: Some(p50(&c)),
        syscall_ns: syscall_ns(),
        cache_bytes: cache_bytes(),
        mtu: mtu.unwrap_or(1500),
    })
}

/// One value to write: `[section] key = { value = V, src = "S" }`, or a bare string value.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub section: String,
    pub key: String,
    /// The TOML value text (a number, or a quoted string for bare keys).
    pub value: String,
    /// Provenance; None writes `key = value` (line codes and other bare words).
    pub src: Option<String>,
}

fn toml_str(s: &str) -> String {
    let mut o = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04x}", c as u32)),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

/// Formats a number for a profile.
pub fn num(x: f64) -> String {
    if x == x.round() && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        let s = format!("{x:.4}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// Keys a profile section takes one of (the same quantity in two units): writing one
/// removes the other, so a fitted value never meets a stale alternative.
const ALTERNATIVE_KEYS: &[(&str, &str, &str)] = &[
    ("mpi", "overhead_ns", "overhead_cycles"),
    ("host", "post_ns", "post_cycles"),
    ("host", "cqe_poll_ns", "cqe_poll_cycles"),
    ("stack", "syscall_ns", "syscall_cycles"),
    ("stack", "interrupt_ns", "interrupt_cycles"),
    ("stack", "wakeup_ns", "wakeup_cycles"),
    ("stack", "tcp_tx_ns", "tcp_tx_cycles"),
    ("stack", "tcp_rx_ns", "tcp_rx_cycles"),
    ("stack", "ip_rx_ns", "ip_rx_cycles"),
    ("stack", "tcp_ack_tx_ns", "tcp_ack_tx_cycles"),
    ("stack", "tcp_ack_rx_ns", "tcp_ack_rx_cycles"),
    ("stack", "ipoib_tx_ns", "ipoib_tx_cycles"),
    ("stack", "ipoib_rx_ns", "ipoib_rx_cycles"),
    ("stack", "ipoib_rx_free_ns", "ipoib_rx_free_cycles"),
    ("stack", "sdp_tx_ns", "sdp_tx_cycles"),
    ("stack", "sdp_rx_ns", "sdp_rx_cycles"),
    ("stack", "reg_ns", "reg_cycles"),
    ("stack", "reg_page_ns", "reg_page_cycles"),
    ("stack", "mad_us", "mad_cycles"),
    ("stack", "tcp_handshake_us", "tcp_handshake_cycles"),
    ("eth", "tx_ns", "tx_cycles"),
    ("eth", "rx_ns", "rx_cycles"),
];

/// Rewrites profile text: `[profile]` id and description, and every entry (replacing the
/// key's line in its section, or appending it to the section; an alternative form of the
/// same key, `ALTERNATIVE_KEYS`, is removed). Everything else (comments, other keys with
/// their provenance) is kept as it was.
pub fn rewrite_profile(base: &str, id: &str, description: &str, header: &str, entries: &[Entry]) -> Result<String, String> {
    let mut lines: Vec<String> = base.lines().map(str::to_string).collect();
    let mut all = vec![
        Entry { section: "profile".into(), key: "id".into(), value: toml_str(id), src: None },
        Entry { section: "profile".into(), key: "description".into(), value: toml_str(description), src: None },
    ];
    all.extend(entries.iter().cloned());
    for e in &all {
        let text = match &e.src {
            Some(s) => format!("{} = {{ value = {}, src = {} }}", e.key, e.value, toml_str(s)),
            None => format!("{} = {}", e.key, e.value),
        };
        let head = format!("[{}]", e.section);
        let start = lines.iter().position(|l| l.trim() == head).ok_or_else(|| format!("the base profile has no [{}] section", e.section))?;
        let end = lines[start + 1..].iter().position(|l| l.trim_start().starts_with('[')).map_or(lines.len(), |k| start + 1 + k);
        let key_of = |l: &str| l.split('=').next().map(|k| k.trim().to_string()).unwrap_or_default();
        let other = ALTERNATIVE_KEYS.iter().find_map(|&(sec, a, b)| match (sec == e.section, e.key.as_str()) {
            (true, k) if k == a => Some(b),
            (true, k) if k == b => Some(a),
            _ => None,
        });
        let mut end = end;
        if let Some(other) = other {
            if let Some(i) = (start + 1..end).find(|&i| !lines[i].trim_start().starts_with('#') && key_of(&lines[i]) == other) {
                lines.remove(i);
                end -= 1;
            }
        }
        match (start + 1..end).find(|&i| !lines[i].trim_start().starts_with('#') && key_of(&lines[i]) == e.key) {
            Some(i) => lines[i] = text,
            None => {
                // After the section's last non-blank line.
                let mut at = end;
                while at > start + 1 && lines[at - 1].trim().is_empty() {
                    at -= 1;
                }
                lines.insert(at, text);
            }
        }
    }
    let mut out = String::new();
    for h in header.lines() {
        out.push_str("# ");
        out.push_str(h);
        out.push('\n');
    }
    for l in lines {
        out.push_str(&l);
        out.push('\n');
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_fit() {
        let (a, b) = line(&[0.0, 1.0, 2.0], &[1.0, 3.0, 5.0]).unwrap();
        assert!((a - 1.0).abs() < 1e-12 && (b - 2.0).abs() < 1e-12);
        assert!(line(&[1.0], &[1.0]).is_none());
    }

    #[test]
    fn dates() {
        let d = today();
        assert_eq!(d.len(), 10);
        assert!(d.starts_with("20"), "{d}");
    }

    #[test]
    fn rewrite_keeps_other_keys() {
        let base = "# c\n[profile]\nid = \"x\"\ndescription = \"d\"\n\n[stack]\na = { value = 1, src = \"R\" }\nb = { value = 2, src = \"R\" }\n\n[eth]\nc = 3\n";
        let e = [
            Entry { section: "stack".into(), key: "b".into(), value: "5".into(), src: Some("C: fitted".into()) },
            Entry { section: "stack".into(), key: "z".into(), value: "7".into(), src: Some("C: new".into()) },
        ];
        let t = rewrite_profile(base, "y", "new \"one\"", "hdr", &e).unwrap();
        assert!(t.starts_with("# hdr\n# c\n"), "{t}");
        assert!(t.contains("id = \"y\""));
        assert!(t.contains("description = \"new \\\"one\\\"\""));
        assert!(t.contains("a = { value = 1, src = \"R\" }"));
        assert!(t.contains("b = { value = 5, src = \"C: fitted\" }"));
        assert!(t.contains("z = { value = 7, src = \"C: new\" }\n\n[eth]"), "{t}");
        assert!(rewrite_profile(base, "y", "d", "", &[Entry { section: "nope".into(), key: "k".into(), value: "1".into(), src: None }]).is_err());
    }

    #[test]
    fn writing_a_cost_in_ns_replaces_its_form_in_cycles() {
        let base = "[profile]\nid = \"x\"\ndescription = \"d\"\n[mpi]\noverhead_cycles = { value = 400, src = \"R\" }\nheader_bytes = { value = 32, src = \"R\" }\n";
        let e = [Entry { section: "mpi".into(), key: "overhead_ns".into(), value: "700".into(), src: Some("C: fitted".into()) }];
        let t = rewrite_profile(base, "y", "d", "", &e).unwrap();
        assert!(!t.contains("overhead_cycles") && t.contains("overhead_ns = { value = 700"), "{t}");
        assert!(t.contains("header_bytes"), "{t}");
    }
}

//! The fitting equations of `interlab calibrate` on synthetic measurements: known
//! primitives in (through the documented forward equations), the same primitives out.

use interlab_live::calibrate::{fit, synthesize, BaseShape, Primitives};

const SHAPE: BaseShape = BaseShape {
    tcp_tx_ns: 3500.0,
    eth_tx_ns: 1000.0,
    interrupt_ns: 2000.0,
    eth_rx_ns: 1000.0,
    ip_rx_ns: 1200.0,
    wakeup_ns: 5100.0,
    tcp_rx_ns: 2200.0,
    tcp_ack_tx_ns: 1000.0,
    tcp_ack_rx_ns: 1000.0,
    cache_bytes: 524_288,
    ip_header_bytes: 52,
    framing_bytes: 38,
};

/// Primitives in the base's proportions (the split the fit assumes), scaled by `k`.
fn known(k: f64) -> Primitives {
    Primitives {
        syscall_ns: 250.0,
        copy_mbytes_per_s: 9000.0,
        mem_copy_mbytes_per_s: 4000.0,
        cache_bytes: 1 << 20,
        tcp_tx_ns: 3500.0 * k,
        tcp_rx_ns: 2200.0 * k,
        ip_rx_ns: 1200.0 * k,
        tcp_ack_tx_ns: 1000.0 * k,
        tcp_ack_rx_ns: 1000.0 * k,
        interrupt_ns: 2000.0 * k,
        wakeup_ns: 5100.0 * k,
        tcp_handshake_us: 4.5,
        eth_tx_ns: 1000.0 * k,
        eth_rx_ns: 1000.0 * k,
        mtu_bytes: 9000,
        lane_gbps: 0.0,
        link_bound: false,
        path_gbps: 0.0,
    }
}

fn close(name: &str, got: f64, want: f64) {
    assert!((got - want).abs() <= 1e-6 * want.abs().max(1.0), "{name}: fitted {got}, expected {want}");
}

#[test]
fn known_primitives_come_back() {
    for k in [0.1, 0.37, 1.0] {
        let p = known(k);
        let m = synthesize(&p, &SHAPE, &[1, 64, 1024, 16384, 65536], &[65536, 1 << 21]);
        let f = fit(&m, &SHAPE).unwrap();
        close("syscall_ns", f.syscall_ns, p.syscall_ns);
        close("copy_mbytes_per_s", f.copy_mbytes_per_s, p.copy_mbytes_per_s);
        close("mem_copy_mbytes_per_s", f.mem_copy_mbytes_per_s, p.mem_copy_mbytes_per_s);
        assert_eq!(f.cache_bytes, p.cache_bytes);
        close("tcp_tx_ns", f.tcp_tx_ns, p.tcp_tx_ns);
        close("tcp_rx_ns", f.tcp_rx_ns, p.tcp_rx_ns);
        close("ip_rx_ns", f.ip_rx_ns, p.ip_rx_ns);
        close("tcp_ack_tx_ns", f.tcp_ack_tx_ns, p.tcp_ack_tx_ns);
        close("tcp_ack_rx_ns", f.tcp_ack_rx_ns, p.tcp_ack_rx_ns);
        close("interrupt_ns", f.interrupt_ns, p.interrupt_ns);
        close("wakeup_ns", f.wakeup_ns, p.wakeup_ns);
        close("eth tx_ns", f.eth_tx_ns, p.eth_tx_ns);
        close("eth rx_ns", f.eth_rx_ns, p.eth_rx_ns);
        close("tcp_handshake_us", f.tcp_handshake_us, p.tcp_handshake_us);
        assert_eq!(f.mtu_bytes, p.mtu_bytes);
        // CPU-bound streams: no path rate, the link is set far above the measured rate.
        assert!(!f.link_bound);
        assert!(f.lane_gbps > 10.0 * f.path_gbps, "{f:?}");
    }
}

#[test]
fn link_bound_stream_gives_the_path_rate() {
    let p = known(1.0);
    let mut m = synthesize(&p, &SHAPE, &[1, 1024, 65536], &[65536]);
    // A 200 Mb/s path: goodput = rate x MSS / (MTU + framing); the ends mostly idle.
    let rate_gbps = 0.2;
    let goodput = rate_gbps * 1000.0 / 8.0 * (9000.0 - 52.0) / (9000.0 + 38.0);
    m.bw[0].mbps = goodput;
    m.bw[0].busiest_pct = Some(12.0);
    let f = fit(&m, &SHAPE).unwrap();
    assert!(f.link_bound);
    close("path_gbps", f.path_gbps, rate_gbps);
    close("lane_gbps", f.lane_gbps * 64.0 / 66.0, rate_gbps);
}

#[test]
fn idle_wakeup_and_missing_cpu() {
    // Latency above the CPU per message: the difference is idle wake-up time.
    let p = known(0.5);
    let mut m = synthesize(&p, &SHAPE, &[1, 1024, 65536], &[65536]);
    for l in &mut m.lat_tcp {
        l.p50_us += 3.0;
    }
    m.connect_us = m.connect_us.map(|c| c + 6.0);
    let f = fit(&m, &SHAPE).unwrap();
    close("wakeup_ns", f.wakeup_ns, p.wakeup_ns + 3000.0);
    close("tcp_handshake_us", f.tcp_handshake_us, p.tcp_handshake_us);
    // No CPU figures at all: the latency line alone still gives a usable fit.
    for l in &mut m.lat_tcp {
        l.cpu_us_per_rt = None;
    }
    let f = fit(&m, &SHAPE).unwrap();
    assert!(f.copy_mbytes_per_s.is_finite() && f.copy_mbytes_per_s > 0.0);
    assert!(f.tcp_tx_ns > 0.0);
    m.lat_tcp.clear();
    assert!(fit(&m, &SHAPE).is_err());
}

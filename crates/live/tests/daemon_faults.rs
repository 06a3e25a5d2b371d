//! Faults against a running daemon: malformed, truncated, oversized and out-of-order
//! control messages, a wrong token, a client that says nothing. Each gets a clear error and
//! the daemon goes on serving the next client.

use interlab_live::auth::Token;
use interlab_live::proto::{encode, read_msg, write_msg, Msg, Phase, MAX_TO_CLIENT};
use interlab_live::runner::{run_point, PointOptions, RunLength};
use interlab_live::{parse_peer, Transport};
use interlab_patterns::{Workload, WorkloadKind};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

mod common;
use common::Daemon;

fn daemon(token: Option<&str>) -> Daemon {
    common::daemon_with(token, Duration::from_millis(500), Duration::from_secs(5))
}

fn point(addr: SocketAddr, token: Option<&str>, kind: WorkloadKind, transport: Transport) -> interlab_live::runner::PointOutcome {
    let o = PointOptions {
        workload: Workload { kind, size: 64, response_size: 32, window: 8, streams: 2, peers: 1 },
        transport,
        peers: vec![parse_peer(&addr.to_string(), 0).unwrap()],
        token: token.map(|t| Token::new(t).unwrap()),
        length: RunLength::Count { warmup: Some(5), iterations: Some(50) },
        confidence: None,
        sockbuf: 0,
        experiment: "test".into(),
        command: "test".into(),
        connect_timeout: Duration::from_secs(5),
        extras: Default::default(),
    };
    run_point(&o).unwrap()
}

/// A good client still gets served.
fn still_serves(d: &Daemon, token: Option<&str>) {
    let out = point(d.addr, token, WorkloadKind::Latency, Transport::Tcp);
    assert!(out.error.is_none(), "daemon stopped serving: {:?}", out.error);
    assert!(out.record.record.value > 0.0);
}

/// Sends raw bytes and returns the daemon's answer (the Error message text, if any).
fn raw(d: &Daemon, bytes: &[u8], then_close: bool) -> Option<String> {
    let mut s = TcpStream::connect(d.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(bytes).unwrap();
    if then_close {
        s.shutdown(std::net::Shutdown::Write).unwrap();
    }
    loop {
        match read_msg(&mut s, MAX_TO_CLIENT) {
            Ok(Msg::Error { message }) => return Some(message),
            Ok(_) => continue,
            Err(_) => return None,
        }
    }
}

fn hello() -> Vec<u8> {
    encode(&Msg::Hello { client_version: "test".into(), client_nonce: [1; 16] })
}

#[test]
fn malformed_truncated_oversized_and_out_of_order() {
    let d = daemon(None);
    // Not our protocol at all.
    let e = raw(&d, b"GET / HTTP/1.0\r\n\r\n", false).unwrap();
    assert!(e.contains("not an interlab control connection"), "{e}");
    // Wrong protocol version.
    let mut v = hello();
    v[2] = 99;
    let e = raw(&d, &v, false).unwrap();
    assert!(e.contains("version 99"), "{e}");
    // Oversized frame.
    let mut big = vec![b'I', b'L', 1, 1];
    big.extend_from_slice(&(100u32 << 20).to_be_bytes());
    let e = raw(&d, &big, false).unwrap();
    assert!(e.contains("exceeds"), "{e}");
    // Malformed payload (a Hello without its nonce).
    let mut m = hello();
    m.truncate(m.len() - 4);
    let len = (m.len() - 8) as u32;
    m[4..8].copy_from_slice(&len.to_be_bytes());
    let e = raw(&d, &m, false).unwrap();
    assert!(e.contains("malformed Hello"), "{e}");
    // Truncated: half a frame, then the client closes.
    let h = hello();
    let e = raw(&d, &h[..h.len() / 2], true).unwrap();
    assert!(e.contains("closed inside a frame"), "{e}");
    // Out of order: a Phase before Hello, and a Phase before Setup.
    let e = raw(&d, &encode(&Msg::Phase(Phase { id: 1, warmup: 0, iterations: 1, warmup_ps: 0, duration_ps: 0 })), false).unwrap();
    assert!(e.contains("unexpected Phase") && e.contains("expected Hello"), "{e}");
    let mut seq = hello();
    seq.extend(encode(&Msg::Phase(Phase { id: 1, warmup: 0, iterations: 1, warmup_ps: 0, duration_ps: 0 })));
    let e = raw(&d, &seq, false).unwrap();
    assert!(e.contains("expected Setup first"), "{e}");
    still_serves(&d, None);
}

#[test]
fn silent_client_times_out_and_others_are_served_meanwhile() {
    let d = daemon(None);
    let mut silent = TcpStream::connect(d.addr).unwrap();
    // While the silent client holds its session, another client is served.
    still_serves(&d, None);
    silent.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let t = Instant::now();
    match read_msg(&mut silent, MAX_TO_CLIENT) {
        Ok(Msg::Error { message }) => assert!(message.contains("no Hello within"), "{message}"),
        other => panic!("expected an Error, got {other:?}"),
    }
    assert!(t.elapsed() < Duration::from_secs(4));
    let mut rest = Vec::new();
    let _ = silent.read_to_end(&mut rest);
    still_serves(&d, None);
}

#[test]
fn wrong_or_missing_token_is_refused_and_right_token_works() {
    let d = daemon(Some("the-right-token"));
    let out = point(d.addr, Some("the-wrong-token"), WorkloadKind::Latency, Transport::Tcp);
    let e = out.error.expect("wrong token must fail");
    assert!(e.message.contains("authentication failed"), "{}", e.message);
    assert_eq!(out.record.live.error.as_deref(), Some(e.message.as_str()));
    assert!(out.record.record.value.is_nan());
    let out = point(d.addr, None, WorkloadKind::Latency, Transport::Tcp);
    assert!(out.error.unwrap().message.contains("requires a shared secret"));
    // The token is never on the wire: a client that just reads the challenge sees only a nonce.
    let mut s = TcpStream::connect(d.addr).unwrap();
    write_msg(&mut s, &Msg::Hello { client_version: "t".into(), client_nonce: [0; 16] }).unwrap();
    let mut buf = [0u8; 256];
    s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let n = s.read(&mut buf).unwrap();
    assert!(!buf[..n].windows(15).any(|w| w == b"the-right-token"));
    still_serves(&d, Some("the-right-token"));
    // A client with a token refuses a daemon that cannot prove it knows it.
    let open = daemon(None);
    let out = point(open.addr, Some("the-right-token"), WorkloadKind::Latency, Transport::Tcp);
    assert!(out.error.unwrap().message.contains("did not prove"));
}

#[test]
fn every_pattern_and_transport_runs_on_loopback() {
    let d = daemon(None);
    for (kind, transports) in [
        (WorkloadKind::Latency, &[Transport::Tcp, Transport::Udp, Transport::Unix][..]),
        (WorkloadKind::Bandwidth, &[Transport::Tcp, Transport::Udp, Transport::Unix][..]),
        (WorkloadKind::BiBandwidth, &[Transport::Tcp, Transport::Udp, Transport::Unix][..]),
        (WorkloadKind::FanIn, &[Transport::Tcp, Transport::Udp][..]),
        (WorkloadKind::HotSpot, &[Transport::Tcp, Transport::Udp][..]),
        (WorkloadKind::Rr, &[Transport::Tcp, Transport::Udp, Transport::Unix][..]),
        (WorkloadKind::Crr, &[Transport::Tcp, Transport::Unix][..]),
        (WorkloadKind::Connect, &[Transport::Tcp][..]),
    ] {
        for &t in transports {
            let out = point(d.addr, None, kind, t);
            assert!(out.error.is_none(), "{} over {}: {:?}", kind.name(), t.name(), out.error);
            let r = &out.record;
            assert!(r.record.value > 0.0, "{} over {}: {}", kind.name(), t.name(), r.record.value);
            assert_eq!(r.record.engine, "live");
            assert!(
                r.live.cpu_local.is_some() && r.live.cpu_remote.is_some() || r.live.flags.iter().any(|f| f.starts_with("cpu not measured")),
                "{:?}",
                r.live
            );
            if r.record.unit == "us" {
                let s = r.record.summary.expect("latency summary");
                assert!(s.min <= s.p50 && s.p50 <= s.p99 && s.p99 <= s.max);
            }
        }
    }
    // Streams are time-bounded.
    let o = PointOptions {
        workload: Workload { kind: WorkloadKind::MultiStream, size: 65536, response_size: 1, window: 1, streams: 2, peers: 1 },
        transport: Transport::Tcp,
        peers: vec![parse_peer(&d.addr.to_string(), 0).unwrap()],
        token: None,
        length: RunLength::Time { warmup_s: 0.05, duration_s: 0.2 },
        confidence: Some(interlab_patterns::ConfidenceRule { level_pct: 95, width_pct: 50.0, min_reps: 2, max_reps: 3 }),
        sockbuf: 0,
        experiment: "t".into(),
        command: "t".into(),
        connect_timeout: Duration::from_secs(5),
        extras: Default::default(),
    };
    let out = run_point(&o).unwrap();
    assert!(out.error.is_none(), "{:?}", out.error);
    let reps = out.record.live.repetitions.unwrap();
    assert!((2..=3).contains(&reps));
    let ci = out.record.live.confidence.expect("interval reported");
    assert_eq!(ci.interval.repetitions, reps);
    assert!(out.record.record.value > 10.0, "{}", out.record.record.value);
    still_serves(&d, None);
}

/// A fake daemon that sets up a UDP channel and then never answers on it: the client's
/// watchdog must end the point with a clear error after the 2 s stall limit, not hang.
#[test]
fn a_channel_that_stops_answering_is_reported_not_waited_for() {
    use interlab_live::proto::{CpuWire, PhaseResult, SetupOk};
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let fake = std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        let mut r = s.try_clone().unwrap();
        let mut next = move || read_msg(&mut r, MAX_TO_CLIENT).unwrap();
        assert!(matches!(next(), Msg::Hello { .. }));
        write_msg(&mut s, &Msg::Welcome { server_version: "fake".into(), server_mac: None, host: Default::default() }).unwrap();
        assert!(matches!(next(), Msg::Setup(_)));
        let u = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let cookie = [7u8; 16];
        write_msg(&mut s, &Msg::SetupOk(SetupOk { cookie, tcp_port: 0, udp_ports: vec![u.local_addr().unwrap().port()], unix_path: String::new() })).unwrap();
        let mut b = [0u8; 64];
        let (_, from) = u.recv_from(&mut b).unwrap();
        u.send_to(&cookie, from).unwrap();
        write_msg(&mut s, &Msg::DataReady).unwrap();
        let id = match next() {
            Msg::Phase(p) => p.id,
            other => panic!("{other:?}"),
        };
        assert!(matches!(next(), Msg::PhaseEnd(_)));
        write_msg(&mut s, &Msg::PhaseResult(PhaseResult { id, channels: vec![], cpu: CpuWire::default() })).unwrap();
        drop(u);
    });
    let t = Instant::now();
    let out = point(addr, None, WorkloadKind::Latency, Transport::Udp);
    let e = out.error.expect("a stalled channel must fail the point");
    assert!(e.message.contains("no progress for 2 s") && e.message.contains("datagram was lost"), "{}", e.message);
    assert!(t.elapsed() < Duration::from_secs(8), "took {:?}", t.elapsed());
    fake.join().unwrap();
}

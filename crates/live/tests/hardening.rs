//! Hostile and careless clients against a running daemon (issue 11), on loopback only: the
//! allocation bomb, a dripped handshake, floods of idle and dripping connections, a session
//! whose daemon-initiated UDP or TCP channel goes silent, and a data hello from another
//! address than the control connection's. Each test is bounded to a few seconds.

use interlab_live::auth::Token;
use interlab_live::client::ClientSession;
use interlab_live::conn::hello;
use interlab_live::proto::{encode, read_msg, write_msg, BaseCode, ChanSetup, Msg, Phase, PhaseEnd, Setup, Transport, MAX_TO_CLIENT};
use interlab_live::runner::{check, PointOptions, RunLength};
use interlab_live::{parse_peer, Peer};
use interlab_patterns::{Workload, WorkloadKind};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::time::{Duration, Instant};

mod common;
use common::Daemon;

fn daemon(token: Option<&str>, handshake: Duration, idle: Duration) -> Daemon {
    common::daemon_with(token, handshake, idle)
}

fn peer(d: &Daemon) -> Peer {
    parse_peer(&d.addr.to_string(), 0).unwrap()
}

fn session(d: &Daemon, token: Option<&str>) -> ClientSession {
    ClientSession::connect(&peer(d), token.map(|t| Token::new(t).unwrap()).as_ref(), Duration::from_secs(5)).unwrap()
}

fn setup(transport: Transport, base: BaseCode, server_initiates: bool) -> Setup {
    Setup { transport, base, size: 1024, response_size: 0, window: 16, channels: vec![ChanSetup { chan: 0, server_initiates }], sockbuf: 0 }
}

/// Reads until the daemon closes the connection; returns the last Error message seen and when
/// the connection ended (None: still open at `limit`).
fn until_closed(s: &mut TcpStream, limit: Duration) -> (Option<String>, Option<Instant>) {
    let end = Instant::now() + limit;
    let mut last = None;
    loop {
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return (last, None);
        }
        s.set_read_timeout(Some(left)).unwrap();
        match read_msg(s, MAX_TO_CLIENT) {
            Ok(Msg::Error { message }) => last = Some(message),
            Ok(_) => {}
            Err(interlab_live::proto::ProtoError::Timeout) => return (last, None),
            Err(_) => return (last, Some(Instant::now())),
        }
    }
}

// ---- 1. The allocation bomb -------------------------------------------------------------

#[test]
fn bomb_phase_gets_an_error_not_a_crash() {
    let d = daemon(None, Duration::from_secs(2), Duration::from_secs(5));
    for (warmup, iterations) in [(0, u32::MAX), (u32::MAX, 1), (0, (60 << 20) / 8 + 1)] {
        let mut s = session(&d, None);
        s.setup(&setup(Transport::Tcp, BaseCode::PingPong, true)).unwrap();
        s.send(&Msg::Phase(Phase { id: 1, warmup, iterations, warmup_ps: 0, duration_ps: 0 })).unwrap();
        let e = s.recv(Duration::from_secs(5), "PhaseResult").unwrap_err().message;
        assert!(e.contains("phase refused") && e.contains("out of range") || e.contains("MiB of samples"), "{e}");
    }
    // Streaming times beyond a day, a window that would need gigabytes of posts.
    let mut s = session(&d, None);
    s.setup(&setup(Transport::Tcp, BaseCode::Stream, false)).unwrap();
    s.send(&Msg::Phase(Phase { id: 1, warmup: 0, iterations: 0, warmup_ps: u64::MAX, duration_ps: u64::MAX })).unwrap();
    let e = s.recv(Duration::from_secs(5), "PhaseResult").unwrap_err().message;
    assert!(e.contains("warm-up time") && e.contains("out of range"), "{e}");
    let mut s = session(&d, None);
    let mut big = setup(Transport::Tcp, BaseCode::Windowed, true);
    big.window = 1 << 20;
    big.channels = (0..64).map(|c| ChanSetup { chan: c, server_initiates: true }).collect();
    s.send(&Msg::Setup(big)).unwrap();
    let e = s.recv(Duration::from_secs(5), "SetupOk").unwrap_err().message;
    assert!(e.contains("MiB of buffers"), "{e}");
    // The daemon is still there and serves a normal phase.
    let mut s = session(&d, None);
    let (_, mut conns) = s.setup(&setup(Transport::Tcp, BaseCode::PingPong, true)).unwrap();
    let mut c = conns.remove(0).1;
    let echo = std::thread::spawn(move || {
        let mut b = vec![0u8; 1024];
        for _ in 0..10 {
            c.recv_msg(&mut b).unwrap();
            c.send_msg(&b).unwrap();
        }
    });
    s.send(&Msg::Phase(Phase { id: 1, warmup: 0, iterations: 10, warmup_ps: 0, duration_ps: 0 })).unwrap();
    echo.join().unwrap();
    s.send(&Msg::PhaseEnd(PhaseEnd { id: 1, marks: vec![] })).unwrap();
    match s.recv(Duration::from_secs(5), "PhaseResult").unwrap() {
        Msg::PhaseResult(r) => assert!(r.channels.iter().all(|c| c.error.is_empty()), "{r:?}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn client_refuses_the_bomb_before_connecting() {
    let o = |kind, iterations: u32, window: u32| PointOptions {
        workload: Workload { kind, size: 64, response_size: 64, window, streams: 1, peers: 1 },
        transport: Transport::Tcp,
        peers: vec![parse_peer("127.0.0.1:9", 0).unwrap()],
        token: None,
        length: RunLength::Count { warmup: None, iterations: Some(iterations) },
        confidence: None,
        sockbuf: 0,
        experiment: "t".into(),
        command: "t".into(),
        connect_timeout: Duration::from_secs(1),
        extras: Default::default(),
    };
    let e = check(&o(WorkloadKind::Latency, u32::MAX, 1)).unwrap_err();
    assert!(e.contains("out of range"), "{e}");
    let e = check(&o(WorkloadKind::Latency, (1 << 23) + 1, 1)).unwrap_err();
    assert!(e.contains("latency pattern"), "{e}");
    let e = check(&o(WorkloadKind::Bandwidth, 100, u32::MAX)).unwrap_err();
    assert!(e.contains("window"), "{e}");
    assert!(check(&o(WorkloadKind::Bandwidth, 100, 64)).is_ok());
}

// ---- 2. Dripped handshakes, idle floods --------------------------------------------------

#[test]
fn dripped_handshake_is_dropped_at_the_deadline() {
    let hs = Duration::from_millis(800);
    let d = daemon(Some("s3cret-token"), hs, Duration::from_secs(5));
    let frame = encode(&Msg::Hello { client_version: "drip".into(), client_nonce: [1; 16] });
    let mut s = TcpStream::connect(d.addr).unwrap();
    let t0 = Instant::now();
    // One byte every 100 ms: each read is quick, the handshake never completes.
    let mut w = s.try_clone().unwrap();
    let dripper = std::thread::spawn(move || {
        for b in frame.iter().cycle().take(40) {
            if w.write_all(&[*b]).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    });
    let (_, closed) = until_closed(&mut s, Duration::from_secs(3));
    let closed = closed.expect("the daemon kept a dripping handshake open");
    let took = closed - t0;
    assert!(took >= hs - Duration::from_millis(50) && took < hs + Duration::from_millis(700), "closed after {took:?}");
    drop(s);
    dripper.join().unwrap();
    // And a real client is then served.
    let s = session(&d, Some("s3cret-token"));
    s.bye();
}

fn raise_fd_limit(want: u64) {
    let mut r = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit/setrlimit on a struct we own.
    unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut r);
        if r.rlim_cur < want as libc::rlim_t {
            r.rlim_cur = (want as libc::rlim_t).min(r.rlim_max);
            libc::setrlimit(libc::RLIMIT_NOFILE, &r);
        }
    }
}

#[test]
fn idle_and_dripping_floods_do_not_lock_out_an_authenticated_client() {
    // 1,000 idle + 64 dripping connections here, and the daemon's side of the ones it keeps.
    raise_fd_limit(4096);
    let d = daemon(Some("s3cret-token"), Duration::from_secs(10), Duration::from_secs(10));
    let mut idle = Vec::new();
    for _ in 0..1000 {
        idle.push(TcpStream::connect(d.addr).unwrap());
    }
    let mut drip: Vec<TcpStream> = (0..64).map(|_| TcpStream::connect(d.addr).unwrap()).collect();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop2 = stop.clone();
    let dripper = std::thread::spawn(move || {
        let frame = encode(&Msg::Hello { client_version: "drip".into(), client_nonce: [1; 16] });
        let mut k = 0;
        while !stop2.load(std::sync::atomic::Ordering::Relaxed) {
            for s in &mut drip {
                let _ = s.write_all(&frame[k % 4..k % 4 + 1]);
            }
            k += 1;
            std::thread::sleep(Duration::from_millis(50));
        }
        drip
    });
    std::thread::sleep(Duration::from_millis(200));
    let t0 = Instant::now();
    let s = ClientSession::connect(&peer(&d), Some(&Token::new("s3cret-token").unwrap()), Duration::from_secs(5));
    let took = t0.elapsed();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let drip = dripper.join().unwrap();
    let s = s.expect("authenticated client locked out");
    eprintln!("authenticated session after {took:?} with 1,000 idle and 64 dripping connections");
    assert!(took < Duration::from_secs(1), "session after {took:?}");
    // It really has a session: a point runs.
    let mut s = s;
    s.setup(&setup(Transport::Tcp, BaseCode::Stream, false)).unwrap();
    s.bye();
    drop((idle, drip));
}

// ---- 3. Sessions that never end ----------------------------------------------------------

#[test]
fn lost_udp_datagram_ends_the_phase_and_a_silent_client_the_session() {
    let idle = Duration::from_millis(2500);
    let d = daemon(None, Duration::from_secs(2), idle);
    let mut s = session(&d, None);
    let mut st = setup(Transport::Udp, BaseCode::Windowed, true);
    st.size = 512;
    // Channel 0: the daemon sends windows and waits for a reply that never comes.
    let (_, conns) = s.setup(&st).unwrap();
    s.send(&Msg::Phase(Phase { id: 1, warmup: 0, iterations: 5, warmup_ps: 0, duration_ps: 0 })).unwrap();
    s.send(&Msg::PhaseEnd(PhaseEnd { id: 1, marks: vec![] })).unwrap();
    let t0 = Instant::now();
    match s.recv(idle + Duration::from_secs(1), "PhaseResult") {
        Ok(Msg::PhaseResult(r)) => {
            let e = &r.channels[0].error;
            assert!(e.contains("no progress") && e.contains("datagram was lost"), "{r:?}");
        }
        other => panic!("{other:?}"),
    }
    assert!(t0.elapsed() < idle + Duration::from_secs(1), "{:?}", t0.elapsed());
    // Now the client says nothing more: the session ends within the idle time.
    let t1 = Instant::now();
    let e = s.recv(idle + Duration::from_secs(2), "anything").unwrap_err().message;
    assert!(t1.elapsed() < idle + Duration::from_secs(1), "{:?}: {e}", t1.elapsed());
    drop(conns);
}

#[test]
fn silent_tcp_data_connection_ends_the_session_at_the_idle_timeout() {
    let idle = Duration::from_secs(1);
    let d = daemon(None, Duration::from_secs(2), idle);
    let mut s = session(&d, None);
    // The daemon initiates windows on channel 0; the client keeps the connection open and
    // never replies, but sends PhaseEnd.
    let (_, conns) = s.setup(&setup(Transport::Tcp, BaseCode::Windowed, true)).unwrap();
    s.send(&Msg::Phase(Phase { id: 1, warmup: 0, iterations: 5, warmup_ps: 0, duration_ps: 0 })).unwrap();
    s.send(&Msg::PhaseEnd(PhaseEnd { id: 1, marks: vec![] })).unwrap();
    let t0 = Instant::now();
    let e = s.recv(Duration::from_secs(5), "PhaseResult").unwrap_err().message;
    assert!(t0.elapsed() < idle + Duration::from_secs(1), "{:?}: {e}", t0.elapsed());
    assert!(e.contains("no progress"), "{e}");
    drop(conns);
}

#[test]
fn dripped_control_message_between_points_is_bounded_by_the_idle_timeout() {
    let idle = Duration::from_secs(1);
    let d = daemon(None, Duration::from_secs(2), idle);
    let mut ctl = TcpStream::connect(d.addr).unwrap();
    write_msg(&mut ctl, &Msg::Hello { client_version: "t".into(), client_nonce: [2; 16] }).unwrap();
    ctl.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    assert!(matches!(read_msg(&mut ctl, MAX_TO_CLIENT).unwrap(), Msg::Welcome { .. }));
    let frame = encode(&Msg::Setup(setup(Transport::Tcp, BaseCode::Stream, false)));
    let t0 = Instant::now();
    let mut w = ctl.try_clone().unwrap();
    std::thread::spawn(move || {
        for b in frame {
            if w.write_all(&[b]).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(150));
        }
    });
    // The first Setup is part of the handshake (2 s); give it one more second.
    let (e, closed) = until_closed(&mut ctl, Duration::from_secs(4));
    let closed = closed.expect("a dripped Setup held the session");
    assert!(closed - t0 < Duration::from_secs(3), "{:?}", closed - t0);
    assert!(e.unwrap_or_default().contains("handshake-timeout"));
}

// ---- 4. UDP reflection -------------------------------------------------------------------

#[test]
fn udp_hello_from_another_address_gets_nothing_back() {
    let d = daemon(None, Duration::from_secs(3), Duration::from_secs(5));
    let mut ctl = TcpStream::connect(d.addr).unwrap();
    ctl.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    write_msg(&mut ctl, &Msg::Hello { client_version: "t".into(), client_nonce: [2; 16] }).unwrap();
    assert!(matches!(read_msg(&mut ctl, MAX_TO_CLIENT).unwrap(), Msg::Welcome { .. }));
    write_msg(&mut ctl, &Msg::Setup(setup(Transport::Udp, BaseCode::Stream, false))).unwrap();
    let ok = match read_msg(&mut ctl, MAX_TO_CLIENT).unwrap() {
        Msg::SetupOk(ok) => ok,
        other => panic!("{other:?}"),
    };
    let target = SocketAddr::new(d.addr.ip(), ok.udp_ports[0]);
    let h = hello(&ok.cookie, 0);
    // A "spoofed" source: another loopback address than the control connection's 127.0.0.1.
    let spoof = UdpSocket::bind("127.0.0.2:0").expect("127.0.0.2 is loopback on Linux");
    spoof.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
    for _ in 0..3 {
        spoof.send_to(&h, target).unwrap();
    }
    let mut b = [0u8; 64];
    assert!(spoof.recv_from(&mut b).is_err(), "the daemon answered a hello from another address");
    // The rightful source is acknowledged and the point goes on.
    let real = UdpSocket::bind("127.0.0.1:0").unwrap();
    real.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
    let mut acked = false;
    for _ in 0..10 {
        real.send_to(&h, target).unwrap();
        if let Ok((16, _)) = real.recv_from(&mut b) {
            acked = true;
            break;
        }
    }
    assert!(acked, "no acknowledgement to the control peer's address");
    assert!(matches!(read_msg(&mut ctl, MAX_TO_CLIENT).unwrap(), Msg::DataReady));
    // Once connected, the data socket ignores the other address too.
    spoof.send_to(b"junkjunk", target).unwrap();
    assert!(spoof.recv_from(&mut b).is_err());
    write_msg(&mut ctl, &Msg::Bye).unwrap();
    let mut rest = Vec::new();
    let _ = ctl.read_to_end(&mut rest);
}

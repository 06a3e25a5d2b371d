//! The web tier against hostile clients (issue 11), on loopback: the head limit is exact, a
//! request dripped a byte at a time is cut off at the request deadline with 408, and one
//! client address cannot take every connection. No application tier is needed: unknown
//! paths are answered by the web tier itself (404).

use interlab_datacenter::webtier::{serve, WebConfig};
use interlab_datacenter::wire::Addr;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

fn web(request_timeout: Duration, max_per_client: usize) -> SocketAddr {
    let (tx, rx) = std::sync::mpsc::channel();
    let cfg = WebConfig {
        listen: Addr::parse("127.0.0.1:0").unwrap(),
        // Nothing listens there: only the web tier's own answers are used.
        app_tier: Addr::parse("127.0.0.1:9").unwrap(),
        app_connections: 1,
        max_connections: 2048,
        idle_timeout: Duration::from_secs(30),
        request_timeout,
        max_per_client,
        trace: None,
        quiet: true,
        strict: None,
    };
    std::thread::spawn(move || {
        let _ = serve(cfg, |a| tx.send(a.to_string()).unwrap());
    });
    rx.recv_timeout(Duration::from_secs(5)).unwrap().parse().unwrap()
}

/// Status code of the first response on `s` (None: closed without one).
fn status(s: &mut TcpStream) -> Option<u16> {
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut b = [0u8; 12];
    s.read_exact(&mut b).ok()?;
    std::str::from_utf8(&b[9..12]).ok()?.parse().ok()
}

/// A GET head of exactly `len` bytes (padded with a header).
fn head_of(len: usize) -> Vec<u8> {
    let start = "GET /nope HTTP/1.1\r\nHost: x\r\nX-Pad: ";
    let end = "\r\n\r\n";
    let pad = len - start.len() - end.len();
    format!("{start}{}{end}", "a".repeat(pad)).into_bytes()
}

#[test]
fn head_limit_is_exact_however_it_is_split() {
    let a = web(Duration::from_secs(5), 64);
    for (len, want) in [(16 * 1024, 404), (16 * 1024 + 1, 431), (24 * 1024, 431), (32 * 1024 - 1, 431)] {
        for chunk in [len, 1000, 16 * 1024 - 3] {
            let h = head_of(len);
            let mut s = TcpStream::connect(a).unwrap();
            for part in h.chunks(chunk) {
                if s.write_all(part).is_err() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            assert_eq!(status(&mut s), Some(want), "head of {len} bytes sent in chunks of {chunk}");
        }
    }
}

#[test]
fn dripped_request_gets_408_at_the_deadline() {
    let deadline = Duration::from_millis(800);
    let a = web(deadline, 64);
    let mut s = TcpStream::connect(a).unwrap();
    let t0 = Instant::now();
    let mut w = s.try_clone().unwrap();
    std::thread::spawn(move || {
        // One byte every 100 ms: every read is quick, the request never completes.
        for b in b"GET /nope HTTP/1.1\r\nX-Slow: ".iter().chain(std::iter::repeat(&b'a').take(200)) {
            if w.write_all(&[*b]).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    });
    assert_eq!(status(&mut s), Some(408));
    let took = t0.elapsed();
    assert!(took >= deadline && took < deadline + Duration::from_millis(700), "{took:?}");
    // A kept-alive connection may idle between requests longer than the request deadline.
    let mut k = TcpStream::connect(a).unwrap();
    std::thread::sleep(deadline + Duration::from_millis(300));
    k.write_all(b"GET /nope HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    assert_eq!(status(&mut k), Some(404));
}

#[test]
fn one_address_cannot_take_every_connection() {
    let a = web(Duration::from_secs(5), 4);
    let held: Vec<TcpStream> = (0..4).map(|_| TcpStream::connect(a).unwrap()).collect();
    std::thread::sleep(Duration::from_millis(100));
    let mut fifth = TcpStream::connect(a).unwrap();
    assert_eq!(status(&mut fifth), Some(503));
    // Another client address (127.0.0.2 is loopback too) is still served.
    let mut other = connect_from("127.0.0.2", a).expect("bind 127.0.0.2");
    other.write_all(b"GET /nope HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    assert_eq!(status(&mut other), Some(404));
    // Closing the held ones frees the address's budget.
    drop(held);
    std::thread::sleep(Duration::from_millis(200));
    let mut again = TcpStream::connect(a).unwrap();
    again.write_all(b"GET /nope HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    assert_eq!(status(&mut again), Some(404));
}

/// A TCP connection to `target` from `ip` (std cannot bind before connecting).
fn connect_from(ip: &str, target: SocketAddr) -> Option<TcpStream> {
    use std::os::fd::FromRawFd;
    {
        // SAFETY: plain BSD socket calls on a descriptor we own; handed to TcpStream after.
        unsafe {
            let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0);
            if fd < 0 {
                return None;
            }
            let mut sa: libc::sockaddr_in = std::mem::zeroed();
            sa.sin_family = libc::AF_INET as libc::sa_family_t;
            sa.sin_addr.s_addr = u32::from_ne_bytes(ip.parse::<std::net::Ipv4Addr>().ok()?.octets());
            if libc::bind(fd, &sa as *const _ as *const libc::sockaddr, std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t) != 0 {
                libc::close(fd);
                return None;
            }
            let SocketAddr::V4(t) = target else { return None };
            let mut ta: libc::sockaddr_in = std::mem::zeroed();
            ta.sin_family = libc::AF_INET as libc::sa_family_t;
            ta.sin_port = t.port().to_be();
            ta.sin_addr.s_addr = u32::from_ne_bytes(t.ip().octets());
            if libc::connect(fd, &ta as *const _ as *const libc::sockaddr, std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t) != 0 {
                libc::close(fd);
                return None;
            }
            Some(TcpStream::from_raw_fd(fd))
        }
    }
}

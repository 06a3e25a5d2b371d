//! Data connections: TCP, UDP (connected datagram sockets) and Unix stream sockets behind
//! one interface; message-exact send/receive and the socket options that matter.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream, UdpSocket};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::time::Duration;

/// Largest UDP payload over IPv4.
pub const UDP_MAX_PAYLOAD: u64 = 65_507;
/// Bytes of the hello each data connection starts with: cookie (16) + channel (4).
pub const HELLO_BYTES: usize = 20;

/// One data connection.
#[derive(Debug)]
pub enum DataConn {
    Tcp(TcpStream),
    Unix(UnixStream),
    /// Connected to its peer.
    Udp(UdpSocket),
}

/// A handle that can shut a connection down from another thread (wakes a blocked reader).
#[derive(Debug)]
pub struct Closer(DataConn);

impl Closer {
    pub fn close(&self) {
        match &self.0 {
            DataConn::Tcp(s) => {
                let _ = s.shutdown(Shutdown::Both);
            }
            DataConn::Unix(s) => {
                let _ = s.shutdown(Shutdown::Both);
            }
            DataConn::Udp(s) => {
                // SAFETY: shutdown on a socket we hold a descriptor of; wakes blocked recv on Linux.
                unsafe { libc::shutdown(s.as_raw_fd(), libc::SHUT_RDWR) };
            }
        }
    }
}

/// Sets SO_SNDBUF and SO_RCVBUF (bytes) on a socket.
pub fn set_bufs(fd: &impl AsRawFd, bytes: u32) {
    if bytes == 0 {
        return;
    }
    let v = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
    for opt in [libc::SO_SNDBUF, libc::SO_RCVBUF] {
        // SAFETY: setsockopt with a pointer to a c_int we own and its size.
        unsafe {
            libc::setsockopt(fd.as_raw_fd(), libc::SOL_SOCKET, opt, &v as *const _ as *const libc::c_void, std::mem::size_of::<libc::c_int>() as libc::socklen_t);
        }
    }
}

impl DataConn {
    /// A handle for [`Closer::close`].
    pub fn closer(&self) -> io::Result<Closer> {
        Ok(Closer(match self {
            DataConn::Tcp(s) => DataConn::Tcp(s.try_clone()?),
            DataConn::Unix(s) => DataConn::Unix(s.try_clone()?),
            DataConn::Udp(s) => DataConn::Udp(s.try_clone()?),
        }))
    }

    /// Latency-friendly options (TCP_NODELAY) and the socket buffer size (0: kernel default;
    /// UDP always gets a large receive buffer, within net.core.rmem_max, to limit loss).
    pub fn tune(&self, sockbuf: u32) {
        match self {
            DataConn::Tcp(s) => {
                let _ = s.set_nodelay(true);
                set_bufs(s, sockbuf);
            }
            DataConn::Unix(s) => set_bufs(s, sockbuf),
            DataConn::Udp(s) => set_bufs(s, if sockbuf == 0 { 4 << 20 } else { sockbuf }),
        }
    }

    /// TCP keepalive: a peer that vanished without a word is noticed after `idle` plus three
    /// 5-second probes, with no timer armed on each blocking read (as a read timeout would).
    pub fn keepalive(&self, idle: Duration) {
        if let DataConn::Tcp(s) = self {
            let fd = s.as_raw_fd();
            let set = |level: libc::c_int, opt: libc::c_int, v: libc::c_int| {
                // SAFETY: setsockopt with a pointer to a c_int we own and its size.
                unsafe {
                    libc::setsockopt(fd, level, opt, &v as *const _ as *const libc::c_void, std::mem::size_of::<libc::c_int>() as libc::socklen_t);
                }
            };
            set(libc::SOL_SOCKET, libc::SO_KEEPALIVE, 1);
            set(libc::IPPROTO_TCP, libc::TCP_KEEPIDLE, idle.as_secs().clamp(1, 32_767) as libc::c_int);
            set(libc::IPPROTO_TCP, libc::TCP_KEEPINTVL, 5);
            set(libc::IPPROTO_TCP, libc::TCP_KEEPCNT, 3);
        }
    }

    pub fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            DataConn::Tcp(s) => s.set_read_timeout(t),
            DataConn::Unix(s) => s.set_read_timeout(t),
            DataConn::Udp(s) => s.set_read_timeout(t),
        }
    }

    pub fn is_datagram(&self) -> bool {
        matches!(self, DataConn::Udp(_))
    }

    /// Sends one message (a datagram for UDP).
    #[inline]
    pub fn send_msg(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            DataConn::Tcp(s) => s.write_all(buf),
            DataConn::Unix(s) => s.write_all(buf),
            DataConn::Udp(s) => {
                let n = s.send(buf)?;
                if n != buf.len() {
                    return Err(io::Error::new(io::ErrorKind::WriteZero, format!("datagram cut to {n} of {} bytes", buf.len())));
                }
                Ok(())
            }
        }
    }

    /// Receives exactly `buf.len()` bytes (one datagram of that size for UDP). A stream that
    /// ends before the first byte gives `UnexpectedEof` with "closed" in the message.
    #[inline]
    pub fn recv_msg(&mut self, buf: &mut [u8]) -> io::Result<()> {
        match self {
            DataConn::Tcp(s) => read_exact(s, buf),
            DataConn::Unix(s) => read_exact(s, buf),
            DataConn::Udp(s) => {
                let mut n = s.recv(buf)?;
                // A repeated hello (its acknowledgement was slow) is not a message.
                while n == HELLO_BYTES && buf.len() != HELLO_BYTES {
                    n = s.recv(buf)?;
                }
                if n != buf.len() {
                    return Err(io::Error::new(io::ErrorKind::InvalidData, format!("datagram of {n} bytes, expected {}", buf.len())));
                }
                Ok(())
            }
        }
    }

    /// Receives what is there (at least one byte; 0 means the stream ended).
    #[inline]
    pub fn recv_some(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let r = match self {
                DataConn::Tcp(s) => s.read(buf),
                DataConn::Unix(s) => s.read(buf),
                DataConn::Udp(s) => s.recv(buf),
            };
            match r {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => return other,
            }
        }
    }
}

#[inline]
fn read_exact(s: &mut impl Read, buf: &mut [u8]) -> io::Result<()> {
    let mut got = 0;
    while got < buf.len() {
        match s.read(&mut buf[got..]) {
            Ok(0) if got == 0 => return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "connection closed by peer")),
            Ok(0) => return Err(io::Error::new(io::ErrorKind::UnexpectedEof, format!("connection closed by peer inside a message ({got} of {} bytes)", buf.len()))),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// True for the error a clean end of stream gives.
pub fn is_clean_close(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::UnexpectedEof && e.to_string() == "connection closed by peer"
}

/// True for a read timeout.
pub fn is_timeout(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut)
}

/// The hello a data connection starts with.
pub fn hello(cookie: &[u8; 16], chan: u32) -> [u8; HELLO_BYTES] {
    let mut h = [0u8; HELLO_BYTES];
    h[..16].copy_from_slice(cookie);
    h[16..].copy_from_slice(&chan.to_be_bytes());
    h
}

/// Parses a hello: Some(channel) when the cookie matches.
pub fn parse_hello(h: &[u8], cookie: &[u8; 16]) -> Option<u32> {
    if h.len() != HELLO_BYTES || !crate::auth::hmac::equal_ct(&h[..16], cookie) {
        return None;
    }
    Some(u32::from_be_bytes([h[16], h[17], h[18], h[19]]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hello_round_trip() {
        let c = [9u8; 16];
        assert_eq!(parse_hello(&hello(&c, 7), &c), Some(7));
        assert_eq!(parse_hello(&hello(&c, 7), &[8u8; 16]), None);
        assert_eq!(parse_hello(&[0u8; 3], &c), None);
    }

    #[test]
    fn unix_pair_messages_and_close() {
        let (a, b) = UnixStream::pair().unwrap();
        let (mut a, mut b) = (DataConn::Unix(a), DataConn::Unix(b));
        a.send_msg(b"hello").unwrap();
        let mut buf = [0u8; 5];
        b.recv_msg(&mut buf).unwrap();
        assert_eq!(&buf, b"hello");
        a.closer().unwrap().close();
        let e = b.recv_msg(&mut buf).unwrap_err();
        assert!(is_clean_close(&e), "{e}");
    }
}

//! Transport between the tiers: addresses (`HOST:PORT` for TCP, `unix:PATH` for Unix
//! stream sockets), listeners and connections over either, and the framed protocol the
//! web, application and database tiers speak (documented in docs/datacenter.md):
//!
//! ```text
//! u32 big-endian  header_len   bytes of the JSON header (1 ..= 4 MiB)
//! u32 big-endian  body_len     bytes of the opaque body (0 ..= 64 MiB)
//! header_len bytes             UTF-8 JSON object, always with "v": 1
//! body_len bytes               payload (the HTML page on app -> web replies; else empty)
//! ```

use serde::de::DeserializeOwned;
use serde::Serialize;
use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream, ToSocketAddrs};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::time::Duration;

/// Version of the inter-tier framed protocol.
pub const PROTOCOL_VERSION: u32 = 1;
/// Largest accepted frame header, bytes.
pub const MAX_HEADER_BYTES: usize = 4 << 20;
/// Largest accepted frame body, bytes.
pub const MAX_BODY_BYTES: usize = 64 << 20;
/// Bytes of the two length words before every frame.
pub const FRAME_PREFIX_BYTES: usize = 8;

/// Where a tier listens or is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Addr {
    /// `HOST:PORT` (port 0 when listening: any free port).
    Tcp(String),
    /// `unix:PATH`.
    Unix(PathBuf),
}

impl Addr {
    /// Parses `HOST:PORT`, `[V6]:PORT` or `unix:PATH`.
    pub fn parse(s: &str) -> Result<Addr, String> {
        if let Some(p) = s.strip_prefix("unix:") {
            if p.is_empty() {
                return Err(format!("address '{s}': unix: needs a socket path, e.g. unix:/tmp/app.sock"));
            }
            return Ok(Addr::Unix(PathBuf::from(p)));
        }
        let (host, port) = s
            .rsplit_once(':')
            .ok_or_else(|| format!("address '{s}': expected HOST:PORT or unix:PATH"))?;
        if host.is_empty() {
            return Err(format!("address '{s}': missing host before ':{port}'"));
        }
        port.parse::<u16>().map_err(|_| format!("address '{s}': port '{port}' is not a number from 0 to 65535"))?;
        Ok(Addr::Tcp(s.to_string()))
    }
}

impl std::fmt::Display for Addr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Addr::Tcp(s) => f.write_str(s),
            Addr::Unix(p) => write!(f, "unix:{}", p.display()),
        }
    }
}

/// A listening socket of either kind.
pub enum Listener {
    Tcp(TcpListener),
    Unix(UnixListener, PathBuf),
}

impl Listener {
    /// Binds; a stale Unix socket file left by a dead process is replaced.
    pub fn bind(addr: &Addr) -> Result<Listener, String> {
        match addr {
            Addr::Tcp(s) => TcpListener::bind(s.as_str()).map(Listener::Tcp).map_err(|e| format!("cannot listen on {s}: {e}")),
            Addr::Unix(p) => {
                if p.exists() && UnixStream::connect(p).is_err() {
                    let _ = std::fs::remove_file(p);
                }
                UnixListener::bind(p)
                    .map(|l| Listener::Unix(l, p.clone()))
                    .map_err(|e| format!("cannot listen on unix:{}: {e}", p.display()))
            }
        }
    }

    /// The bound address (with the real port when 0 was asked for).
    pub fn local_addr(&self) -> Addr {
        match self {
            Listener::Tcp(l) => Addr::Tcp(l.local_addr().map(|a| a.to_string()).unwrap_or_default()),
            Listener::Unix(_, p) => Addr::Unix(p.clone()),
        }
    }

    /// Waits for the next connection.
    pub fn accept(&self) -> io::Result<Conn> {
        match self {
            Listener::Tcp(l) => {
                let (s, _) = l.accept()?;
                let _ = s.set_nodelay(true);
                Ok(Conn::Tcp(s))
            }
            Listener::Unix(l, _) => Ok(Conn::Unix(l.accept()?.0)),
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        if let Listener::Unix(_, p) = self {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// A connected stream of either kind.
pub enum Conn {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Conn {
    /// Connects with a timeout (TCP_NODELAY on TCP).
    pub fn connect(addr: &Addr, timeout: Duration) -> io::Result<Conn> {
        match addr {
            Addr::Tcp(s) => {
                let mut last = io::Error::new(io::ErrorKind::NotFound, format!("{s}: no address"));
                for sa in s.to_socket_addrs()? {
                    match TcpStream::connect_timeout(&sa, timeout) {
                        Ok(t) => {
                            let _ = t.set_nodelay(true);
                            return Ok(Conn::Tcp(t));
                        }
                        Err(e) => last = e,
                    }
                }
                Err(last)
            }
            Addr::Unix(p) => UnixStream::connect(p).map(Conn::Unix),
        }
    }

    /// Read and write timeouts (None: block).
    pub fn set_timeouts(&self, read: Option<Duration>, write: Option<Duration>) -> io::Result<()> {
        match self {
            Conn::Tcp(s) => {
                s.set_read_timeout(read)?;
                s.set_write_timeout(write)
            }
            Conn::Unix(s) => {
                s.set_read_timeout(read)?;
                s.set_write_timeout(write)
            }
        }
    }

    /// Closes both directions.
    pub fn shutdown(&self) {
        let _ = match self {
            Conn::Tcp(s) => s.shutdown(Shutdown::Both),
            Conn::Unix(s) => s.shutdown(Shutdown::Both),
        };
    }
}

impl Read for Conn {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Conn::Tcp(s) => s.read(buf),
            Conn::Unix(s) => s.read(buf),
        }
    }
}

impl Write for Conn {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Conn::Tcp(s) => s.write(buf),
            Conn::Unix(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Conn::Tcp(s) => s.flush(),
            Conn::Unix(s) => s.flush(),
        }
    }
}

/// Why a frame could not be read.
#[derive(Debug)]
pub enum FrameError {
    /// The peer closed the connection cleanly before a new frame.
    Closed,
    Io(io::Error),
    /// Lengths out of bounds, header not JSON of the expected shape, wrong version.
    Protocol(String),
}

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FrameError::Closed => f.write_str("connection closed by peer"),
            FrameError::Io(e) => write!(f, "{e}"),
            FrameError::Protocol(m) => write!(f, "protocol error: {m}"),
        }
    }
}

impl From<io::Error> for FrameError {
    fn from(e: io::Error) -> Self {
        if e.kind() == io::ErrorKind::UnexpectedEof {
            FrameError::Io(io::Error::new(io::ErrorKind::UnexpectedEof, "connection closed in the middle of a frame"))
        } else {
            FrameError::Io(e)
        }
    }
}

/// Writes one frame in a single write; returns the bytes put on the wire.
pub fn write_frame<W: Write, H: Serialize>(w: &mut W, header: &H, body: &[u8]) -> io::Result<usize> {
    let h = serde_json::to_vec(header).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    if h.len() > MAX_HEADER_BYTES || body.len() > MAX_BODY_BYTES {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "frame too large"));
    }
    let mut buf = Vec::with_capacity(FRAME_PREFIX_BYTES + h.len() + body.len());
    buf.extend_from_slice(&(h.len() as u32).to_be_bytes());
    buf.extend_from_slice(&(body.len() as u32).to_be_bytes());
    buf.extend_from_slice(&h);
    buf.extend_from_slice(body);
    w.write_all(&buf)?;
    w.flush()?;
    Ok(buf.len())
}

/// Reads one frame: (header, body, bytes taken off the wire).
pub fn read_frame<R: Read, H: DeserializeOwned>(r: &mut R) -> Result<(H, Vec<u8>, usize), FrameError> {
    let mut prefix = [0u8; FRAME_PREFIX_BYTES];
    // A clean close is only a close before the first byte of a frame.
    let mut got = 0;
    while got < prefix.len() {
        match r.read(&mut prefix[got..]) {
            Ok(0) if got == 0 => return Err(FrameError::Closed),
            Ok(0) => return Err(io::Error::from(io::ErrorKind::UnexpectedEof).into()),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    let hl = u32::from_be_bytes(prefix[0..4].try_into().unwrap_or_default()) as usize;
    let bl = u32::from_be_bytes(prefix[4..8].try_into().unwrap_or_default()) as usize;
    if hl == 0 || hl > MAX_HEADER_BYTES {
        return Err(FrameError::Protocol(format!("header length {hl} out of range 1..={MAX_HEADER_BYTES}")));
    }
    if bl > MAX_BODY_BYTES {
        return Err(FrameError::Protocol(format!("body length {bl} over {MAX_BODY_BYTES}")));
    }
    let mut h = vec![0u8; hl];
    r.read_exact(&mut h)?;
    let mut body = vec![0u8; bl];
    r.read_exact(&mut body)?;
    let v: serde_json::Value = serde_json::from_slice(&h).map_err(|e| FrameError::Protocol(format!("header is not JSON: {e}")))?;
    match v.get("v").and_then(|x| x.as_u64()) {
        Some(1) => {}
        Some(other) => return Err(FrameError::Protocol(format!("protocol version {other}, this build speaks {PROTOCOL_VERSION}"))),
        None => return Err(FrameError::Protocol("header has no version field \"v\"".into())),
    }
    let header = serde_json::from_value(v).map_err(|e| FrameError::Protocol(format!("bad header: {e}")))?;
    Ok((header, body, FRAME_PREFIX_BYTES + hl + bl))
}

/// A pool of persistent connections to the next tier down, at most `max` open at once;
/// callers wait (up to the timeout) for a free one.
pub struct Pool {
    addr: Addr,
    max: usize,
    timeout: Duration,
    state: std::sync::Mutex<PoolState>,
    cv: std::sync::Condvar,
}

struct PoolState {
    idle: Vec<Conn>,
    open: usize,
}

/// One request/reply exchange over a pooled connection.
pub struct Exchange<R> {
    pub header: R,
    pub body: Vec<u8>,
    /// Bytes of the request frame.
    pub sent: usize,
    /// Bytes of the reply frame.
    pub received: usize,
}

impl Pool {
    pub fn new(addr: Addr, max: usize, timeout: Duration) -> Pool {
        Pool { addr, max: max.max(1), timeout, state: std::sync::Mutex::new(PoolState { idle: Vec::new(), open: 0 }), cv: std::sync::Condvar::new() }
    }

    pub fn addr(&self) -> &Addr {
        &self.addr
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, PoolState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn get(&self) -> Result<Conn, String> {
        let deadline = std::time::Instant::now() + self.timeout;
        let mut st = self.lock();
        loop {
            if let Some(c) = st.idle.pop() {
                return Ok(c);
            }
            if st.open < self.max {
                st.open += 1;
                drop(st);
                return match Conn::connect(&self.addr, self.timeout) {
                    Ok(c) => {
                        let _ = c.set_timeouts(Some(self.timeout), Some(self.timeout));
                        Ok(c)
                    }
                    Err(e) => {
                        self.discard();
                        Err(format!("cannot connect to {}: {e}", self.addr))
                    }
                };
            }
            let now = std::time::Instant::now();
            if now >= deadline {
                return Err(format!("no connection to {} free within {:?} ({} in use)", self.addr, self.timeout, self.max));
            }
            st = self.cv.wait_timeout(st, deadline - now).map(|(g, _)| g).unwrap_or_else(|p| p.into_inner().0);
        }
    }

    fn put(&self, c: Conn) {
        self.lock().idle.push(c);
        self.cv.notify_one();
    }

    fn discard(&self) {
        let mut st = self.lock();
        st.open = st.open.saturating_sub(1);
        drop(st);
        self.cv.notify_one();
    }

    /// Sends one frame and reads the reply. A broken connection is dropped, never reused.
    pub fn call<Q: Serialize, R: DeserializeOwned>(&self, req: &Q, body: &[u8]) -> Result<Exchange<R>, String> {
        let mut c = self.get()?;
        let sent = match write_frame(&mut c, req, body) {
            Ok(n) => n,
            Err(e) => {
                self.discard();
                return Err(format!("sending to {}: {e}", self.addr));
            }
        };
        match read_frame::<_, R>(&mut c) {
            Ok((header, body, received)) => {
                self.put(c);
                Ok(Exchange { header, body, sent, received })
            }
            Err(e) => {
                self.discard();
                Err(format!("reply from {}: {e}", self.addr))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    struct H {
        v: u32,
        op: String,
    }

    #[test]
    fn frame_round_trip_counts_bytes() {
        let mut buf = Vec::new();
        let n = write_frame(&mut buf, &H { v: 1, op: "ping".into() }, b"abc").unwrap();
        assert_eq!(n, buf.len());
        let (h, body, m): (H, Vec<u8>, usize) = read_frame(&mut buf.as_slice()).unwrap();
        assert_eq!(h.op, "ping");
        assert_eq!(body, b"abc");
        assert_eq!(m, n);
    }

    #[test]
    fn bad_frames_are_errors_not_panics() {
        let empty: &[u8] = &[];
        assert!(matches!(read_frame::<_, H>(&mut &*empty), Err(FrameError::Closed)));
        let short: &[u8] = &[0, 0, 0];
        assert!(matches!(read_frame::<_, H>(&mut &*short), Err(FrameError::Io(_))));
        let huge: &[u8] = &[0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0];
        assert!(matches!(read_frame::<_, H>(&mut &*huge), Err(FrameError::Protocol(_))));
        let mut v2 = Vec::new();
        write_frame(&mut v2, &H { v: 2, op: "x".into() }, b"").unwrap();
        match read_frame::<_, H>(&mut v2.as_slice()) {
            Err(FrameError::Protocol(m)) => assert!(m.contains("version 2"), "{m}"),
            other => panic!("{other:?}"),
        }
        let mut notjson = vec![0, 0, 0, 3, 0, 0, 0, 0];
        notjson.extend_from_slice(b"abc");
        assert!(matches!(read_frame::<_, H>(&mut notjson.as_slice()), Err(FrameError::Protocol(_))));
    }

    #[test]
    fn addresses() {
        assert_eq!(Addr::parse("127.0.0.1:80").unwrap(), Addr::Tcp("127.0.0.1:80".into()));
        assert_eq!(Addr::parse("unix:/tmp/x").unwrap(), Addr::Unix("/tmp/x".into()));
        assert!(Addr::parse("nohost").is_err());
        assert!(Addr::parse("h:99999").is_err());
        assert!(Addr::parse("unix:").is_err());
        assert!(Addr::parse(":80").is_err());
    }

    #[test]
    fn unix_and_tcp_connections_carry_frames() {
        let dir = std::env::temp_dir().join(format!("interlab-wire-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for addr in [Addr::Tcp("127.0.0.1:0".into()), Addr::Unix(dir.join("t.sock"))] {
            let l = Listener::bind(&addr).unwrap();
            let at = l.local_addr();
            let t = std::thread::spawn(move || {
                let mut c = l.accept().unwrap();
                let (h, b, _): (H, Vec<u8>, usize) = read_frame(&mut c).unwrap();
                write_frame(&mut c, &h, &b).unwrap();
            });
            let mut c = Conn::connect(&at, Duration::from_secs(2)).unwrap();
            write_frame(&mut c, &H { v: 1, op: "echo".into() }, b"xyz").unwrap();
            let (h, b, _): (H, Vec<u8>, usize) = read_frame(&mut c).unwrap();
            assert_eq!((h.op.as_str(), b.as_slice()), ("echo", &b"xyz"[..]));
            t.join().unwrap();
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

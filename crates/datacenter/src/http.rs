//! A small HTTP/1.1 implementation over std sockets, enough for the bookstore and its
//! browser emulator: persistent connections, Content-Length bodies (requests and
//! responses), chunked and close-delimited response bodies (RFC 9112 6.3, 7.1),
//! GET/POST with URL-encoded forms. Every size is bounded and every client wait has a
//! deadline. Anything else gets a clear 4xx/5xx or error, never a panic.

use crate::wire::{Addr, Conn};
use std::io::{self, Read, Write};
use std::time::{Duration, Instant};

/// Largest request or response head, bytes (request or status line, headers and the blank
/// line that ends them).
pub const MAX_HEAD_BYTES: usize = 16 * 1024;
/// Largest request body the server accepts, bytes.
pub const MAX_REQUEST_BODY: usize = 1 << 20;
/// Largest response body the client accepts, bytes.
pub const MAX_RESPONSE_BODY: usize = 64 << 20;
/// Longest chunk-size line (size, extensions, CRLF) of a chunked body, bytes.
pub const MAX_CHUNK_LINE: usize = 1024;

/// Why a message could not be read.
#[derive(Debug)]
pub enum HttpError {
    /// Closed cleanly before the first byte of a message.
    Closed,
    Timeout,
    Io(io::Error),
    /// Malformed message: status to answer with (server side) and why.
    Bad(u16, String),
}

impl std::fmt::Display for HttpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HttpError::Closed => f.write_str("connection closed by peer"),
            HttpError::Timeout => f.write_str("timed out"),
            HttpError::Io(e) => write!(f, "{e}"),
            HttpError::Bad(s, m) => write!(f, "bad HTTP message ({s}): {m}"),
        }
    }
}

fn io_err(e: io::Error) -> HttpError {
    match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => HttpError::Timeout,
        _ => HttpError::Io(e),
    }
}

/// A connection with a read buffer.
pub struct HttpStream {
    pub conn: Conn,
    buf: Vec<u8>,
    pos: usize,
    /// Reads fail with [`HttpError::Timeout`] once this passes, however the bytes trickle in.
    deadline: Option<Instant>,
}

fn set_read_timeout(c: &Conn, t: Option<Duration>) -> io::Result<()> {
    match c {
        Conn::Tcp(s) => s.set_read_timeout(t),
        Conn::Unix(s) => s.set_read_timeout(t),
    }
}

impl HttpStream {
    pub fn new(conn: Conn) -> HttpStream {
        HttpStream { conn, buf: Vec::with_capacity(8192), pos: 0, deadline: None }
    }

    /// Sets (or clears) an absolute deadline for every following read; `idle` is the read
    /// timeout to restore when it is cleared.
    pub fn set_deadline(&mut self, deadline: Option<Instant>, idle: Option<Duration>) {
        self.deadline = deadline;
        if deadline.is_none() {
            let _ = set_read_timeout(&self.conn, idle);
        }
    }

    /// Waits (with the connection's read timeout) until at least one byte of a next message
    /// is buffered. Err(Closed) when the peer closed first.
    pub fn wait_for_data(&mut self) -> Result<(), HttpError> {
        if self.pos < self.buf.len() {
            return Ok(());
        }
        match self.fill()? {
            0 => Err(HttpError::Closed),
            _ => Ok(()),
        }
    }

    fn fill(&mut self) -> Result<usize, HttpError> {
        if self.pos > 0 && self.pos == self.buf.len() {
            self.buf.clear();
            self.pos = 0;
        }
        if let Some(d) = self.deadline {
            let left = d.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(HttpError::Timeout);
            }
            set_read_timeout(&self.conn, Some(left)).map_err(io_err)?;
        }
        let mut tmp = [0u8; 16384];
        loop {
            match self.conn.read(&mut tmp) {
                Ok(n) => {
                    self.buf.extend_from_slice(&tmp[..n]);
                    return Ok(n);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(io_err(e)),
            }
        }
    }

    /// Reads up to and including the blank line ending a head.
    pub fn read_head(&mut self) -> Result<Vec<u8>, HttpError> {
        // Bytes already searched (a head dripped a byte at a time is not rescanned).
        let mut from = 0usize;
        loop {
            let avail = &self.buf[self.pos..];
            // The limit is exact: a head of MAX_HEAD_BYTES (its blank line included) is
            // read, one byte more is refused, wherever the reads happened to split it.
            let lim = avail.len().min(MAX_HEAD_BYTES);
            if let Some(i) = find(&avail[from.min(lim)..lim], b"\r\n\r\n").map(|i| i + from.min(lim)) {
                let head = avail[..i + 4].to_vec();
                self.pos += i + 4;
                return Ok(head);
            }
            if avail.len() >= MAX_HEAD_BYTES {
                return Err(HttpError::Bad(431, format!("head longer than {MAX_HEAD_BYTES} bytes")));
            }
            from = lim.saturating_sub(3);
            let had = avail.len();
            if self.fill()? == 0 {
                return Err(if had == 0 { HttpError::Closed } else { HttpError::Io(io::Error::new(io::ErrorKind::UnexpectedEof, "connection closed inside a head")) });
            }
        }
    }

    /// Reads exactly `n` body bytes.
    pub fn read_body(&mut self, n: usize) -> Result<Vec<u8>, HttpError> {
        while self.buf.len() - self.pos < n {
            if self.fill()? == 0 {
                return Err(HttpError::Io(io::Error::new(io::ErrorKind::UnexpectedEof, "connection closed inside a body")));
            }
        }
        let b = self.buf[self.pos..self.pos + n].to_vec();
        self.pos += n;
        Ok(b)
    }

    /// Reads one CRLF-terminated line of at most `limit` bytes (CRLF included); returns it
    /// without the CRLF.
    fn read_line(&mut self, limit: usize, what: &str) -> Result<Vec<u8>, HttpError> {
        let mut from = 0usize;
        loop {
            let avail = &self.buf[self.pos..];
            let lim = avail.len().min(limit);
            if let Some(i) = find(&avail[from.min(lim)..lim], b"\r\n").map(|i| i + from.min(lim)) {
                let line = avail[..i].to_vec();
                self.pos += i + 2;
                return Ok(line);
            }
            if avail.len() >= limit {
                return Err(HttpError::Bad(502, format!("{what} longer than {limit} bytes")));
            }
            from = lim.saturating_sub(1);
            if self.fill()? == 0 {
                return Err(HttpError::Io(io::Error::new(io::ErrorKind::UnexpectedEof, format!("connection closed inside a {what}"))));
            }
        }
    }

    /// Reads a chunked body (RFC 9112 7.1): chunks of at most `limit` bytes in all, chunk
    /// extensions ignored, trailer fields read and dropped (at most [`MAX_HEAD_BYTES`]).
    /// Returns the body and the bytes it took on the wire.
    pub fn read_chunked(&mut self, limit: usize) -> Result<(Vec<u8>, usize), HttpError> {
        let mut body = Vec::new();
        let mut wire = 0usize;
        loop {
            let line = self.read_line(MAX_CHUNK_LINE, "chunk-size line")?;
            wire += line.len() + 2;
            let text = String::from_utf8_lossy(&line);
            let hex = text.split(';').next().unwrap_or("").trim();
            if hex.is_empty() || hex.len() > 15 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(HttpError::Bad(502, format!("bad chunk size '{:.20}'", text)));
            }
            let n = usize::from_str_radix(hex, 16).map_err(|_| HttpError::Bad(502, format!("bad chunk size '{hex:.20}'")))?;
            if n == 0 {
                // Trailer section: field lines until an empty line.
                let mut trailer = 0usize;
                loop {
                    let l = self.read_line(MAX_HEAD_BYTES, "trailer line")?;
                    wire += l.len() + 2;
                    trailer += l.len() + 2;
                    if l.is_empty() {
                        return Ok((body, wire));
                    }
                    if trailer > MAX_HEAD_BYTES {
                        return Err(HttpError::Bad(502, format!("trailer longer than {MAX_HEAD_BYTES} bytes")));
                    }
                }
            }
            if body.len().saturating_add(n) > limit {
                return Err(HttpError::Bad(502, format!("chunked response body over the {limit}-byte limit")));
            }
            let data = self.read_body(n)?;
            body.extend_from_slice(&data);
            let crlf = self.read_body(2)?;
            if crlf != b"\r\n" {
                return Err(HttpError::Bad(502, "chunk data not followed by CRLF".into()));
            }
            wire += n + 2;
        }
    }

    /// Reads until the peer closes (responses without a length).
    pub fn read_to_close(&mut self, limit: usize) -> Result<Vec<u8>, HttpError> {
        while self.fill()? > 0 {
            if self.buf.len() - self.pos > limit {
                return Err(HttpError::Bad(502, "response body too large".into()));
            }
        }
        let b = self.buf[self.pos..].to_vec();
        self.pos = self.buf.len();
        Ok(b)
    }
}

fn find(h: &[u8], n: &[u8]) -> Option<usize> {
    h.windows(n.len()).position(|w| w == n)
}

fn parse_headers(lines: &mut std::str::Split<'_, &str>) -> Result<Vec<(String, String)>, HttpError> {
    let mut headers = Vec::new();
    for line in lines {
        if line.is_empty() {
            continue;
        }
        let (k, v) = line.split_once(':').ok_or_else(|| HttpError::Bad(400, format!("header line without ':': {line:.60}")))?;
        headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
    }
    Ok(headers)
}

fn header<'a>(h: &'a [(String, String)], name: &str) -> Option<&'a str> {
    h.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

/// A request as the server read it.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    /// Path without the query string, percent-decoded.
    pub path: String,
    /// Raw query string (after '?'), may be empty.
    pub query: String,
    /// HTTP/1.1 (true) or 1.0.
    pub http11: bool,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Head + body bytes on the wire.
    pub bytes: usize,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        header(&self.headers, name)
    }

    /// Whether the connection stays open after the response.
    pub fn keep_alive(&self) -> bool {
        let c = self.header("connection").map(|v| v.to_ascii_lowercase());
        match c.as_deref() {
            Some(v) if v.contains("close") => false,
            Some(v) if v.contains("keep-alive") => true,
            _ => self.http11,
        }
    }

    /// Query parameters, then URL-encoded form fields of the body.
    pub fn params(&self) -> Vec<(String, String)> {
        let mut p = parse_query(&self.query);
        let form = self.header("content-type").map(|c| c.starts_with("application/x-www-form-urlencoded")).unwrap_or(false);
        if form || (self.method == "POST" && self.header("content-type").is_none()) {
            p.extend(parse_query(&String::from_utf8_lossy(&self.body)));
        }
        p
    }
}

/// Reads one request (server side).
pub fn read_request(s: &mut HttpStream) -> Result<Request, HttpError> {
    let head = s.read_head()?;
    let text = std::str::from_utf8(&head).map_err(|_| HttpError::Bad(400, "head is not UTF-8".into()))?;
    let mut lines = text.split("\r\n");
    let first = lines.next().unwrap_or("");
    let mut parts = first.split(' ');
    let (method, target, version) = match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (Some(m), Some(t), Some(v), None) if !m.is_empty() && !t.is_empty() => (m, t, v),
        _ => return Err(HttpError::Bad(400, format!("bad request line: {first:.80}"))),
    };
    let http11 = match version {
        "HTTP/1.1" => true,
        "HTTP/1.0" => false,
        v => return Err(HttpError::Bad(505, format!("unsupported version {v:.20}"))),
    };
    let headers = parse_headers(&mut lines)?;
    if header(&headers, "transfer-encoding").is_some() {
        return Err(HttpError::Bad(411, "chunked request bodies are not supported; send Content-Length".into()));
    }
    let len = match header(&headers, "content-length") {
        None => 0,
        Some(v) => v.parse::<usize>().map_err(|_| HttpError::Bad(400, format!("bad Content-Length {v:.20}")))?,
    };
    if len > MAX_REQUEST_BODY {
        return Err(HttpError::Bad(413, format!("body of {len} bytes over the {MAX_REQUEST_BODY}-byte limit")));
    }
    let body = s.read_body(len)?;
    let (raw_path, query) = target.split_once('?').unwrap_or((target, ""));
    let path = percent_decode(raw_path);
    Ok(Request { method: method.to_string(), path, query: query.to_string(), http11, headers, body, bytes: head.len() + len })
}

/// Standard reason phrases.
pub fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        411 => "Length Required",
        413 => "Payload Too Large",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        505 => "HTTP Version Not Supported",
        _ => "Status",
    }
}

/// Writes a response in one write; returns bytes put on the wire.
pub fn write_response<W: Write>(w: &mut W, status: u16, content_type: &str, extra: &[(&str, String)], body: &[u8], keep_alive: bool) -> io::Result<usize> {
    write_response_framed(w, status, content_type, extra, body, keep_alive, Framing::Length)
}

/// How a response body is delimited on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// `Content-Length`.
    Length,
    /// `Transfer-Encoding: chunked`, in chunks of at most this many bytes.
    Chunked(usize),
    /// No length: the body ends when the server closes the connection.
    Close,
}

/// Writes a response with the given framing; returns bytes put on the wire. With
/// [`Framing::Close`] the caller must close the connection afterwards.
pub fn write_response_framed<W: Write>(w: &mut W, status: u16, content_type: &str, extra: &[(&str, String)], body: &[u8], keep_alive: bool, framing: Framing) -> io::Result<usize> {
    let keep = keep_alive && framing != Framing::Close;
    let mut head = format!("HTTP/1.1 {status} {}\r\nServer: interlab-datacenter\r\nContent-Type: {content_type}\r\n", reason(status));
    match framing {
        Framing::Length => head.push_str(&format!("Content-Length: {}\r\n", body.len())),
        Framing::Chunked(_) => head.push_str("Transfer-Encoding: chunked\r\n"),
        Framing::Close => {}
    }
    head.push_str(if keep { "Connection: keep-alive\r\n" } else { "Connection: close\r\n" });
    for (k, v) in extra {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let mut buf = Vec::with_capacity(head.len() + body.len() + 64);
    buf.extend_from_slice(head.as_bytes());
    match framing {
        Framing::Chunked(size) => {
            for c in body.chunks(size.max(1)) {
                buf.extend_from_slice(format!("{:x}\r\n", c.len()).as_bytes());
                buf.extend_from_slice(c);
                buf.extend_from_slice(b"\r\n");
            }
            buf.extend_from_slice(b"0\r\n\r\n");
        }
        _ => buf.extend_from_slice(body),
    }
    w.write_all(&buf)?;
    w.flush()?;
    Ok(buf.len())
}

/// A response as the client read it.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Head + body bytes on the wire.
    pub bytes: usize,
    /// The server will close the connection.
    pub close: bool,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        header(&self.headers, name)
    }
    /// Every value of a header that may repeat (`set-cookie`).
    pub fn headers_all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.headers.iter().filter(move |(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

/// Reads one response (client side).
pub fn read_response(s: &mut HttpStream) -> Result<Response, HttpError> {
    let head = s.read_head()?;
    let text = std::str::from_utf8(&head).map_err(|_| HttpError::Bad(502, "response head is not UTF-8".into()))?;
    let mut lines = text.split("\r\n");
    let first = lines.next().unwrap_or("");
    let mut parts = first.splitn(3, ' ');
    let (ver, code) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    if !ver.starts_with("HTTP/1.") {
        return Err(HttpError::Bad(502, format!("not an HTTP/1.x response: {first:.60}")));
    }
    let status = code.parse::<u16>().map_err(|_| HttpError::Bad(502, format!("bad status line: {first:.60}")))?;
    let headers = parse_headers(&mut lines)?;
    let conn_hdr = header(&headers, "connection").map(|v| v.to_ascii_lowercase());
    let mut close = match conn_hdr.as_deref() {
        Some(v) if v.split(',').any(|t| t.trim() == "close") => true,
        Some(v) if v.split(',').any(|t| t.trim() == "keep-alive") => false,
        _ => ver == "HTTP/1.0",
    };
    let te = header(&headers, "transfer-encoding").map(|v| v.to_ascii_lowercase());
    let chunked = match te.as_deref() {
        None | Some("identity") => false,
        Some(v) if v.split(',').map(str::trim).last() == Some("chunked") => true,
        Some(v) => return Err(HttpError::Bad(502, format!("unsupported Transfer-Encoding '{v:.40}' (this client decodes chunked only)"))),
    };
    let (body, body_wire) = if status == 204 || status == 304 || (100..200).contains(&status) {
        (Vec::new(), 0)
    } else if chunked {
        // RFC 9112 6.3: chunked wins over any Content-Length.
        s.read_chunked(MAX_RESPONSE_BODY)?
    } else {
        match header(&headers, "content-length") {
            Some(v) => {
                let n = v.trim().parse::<usize>().map_err(|_| HttpError::Bad(502, format!("bad Content-Length {v:.20}")))?;
                if n > MAX_RESPONSE_BODY {
                    return Err(HttpError::Bad(502, format!("response body of {n} bytes over the {MAX_RESPONSE_BODY}-byte limit")));
                }
                let b = s.read_body(n)?;
                let l = b.len();
                (b, l)
            }
            None => {
                // Close-delimited: the connection cannot be reused.
                close = true;
                let b = s.read_to_close(MAX_RESPONSE_BODY)?;
                let l = b.len();
                (b, l)
            }
        }
    };
    let bytes = head.len() + body_wire;
    Ok(Response { status, headers, body, bytes, close })
}

/// A parsed `http://HOST:PORT/...` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Url {
    /// `HOST:PORT` to connect to.
    pub authority: String,
    /// Path and query, starting with '/'.
    pub target: String,
}

impl Url {
    /// Parses an http URL (no https, no user info).
    pub fn parse(s: &str) -> Result<Url, String> {
        let rest = match s.split_once("://") {
            Some(("http", r)) => r,
            Some((scheme, _)) => return Err(format!("URL '{s}': only http:// is supported, not {scheme}://")),
            None => return Err(format!("URL '{s}': expected http://HOST:PORT/")),
        };
        let (auth, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        if auth.is_empty() {
            return Err(format!("URL '{s}': missing host"));
        }
        if auth.contains('@') {
            return Err(format!("URL '{s}': user info is not supported"));
        }
        let authority = if auth.starts_with('[') {
            match auth.rfind("]:") {
                Some(_) => auth.to_string(),
                None => format!("{auth}:80"),
            }
        } else {
            match auth.rsplit_once(':') {
                Some((h, p)) => {
                    if h.is_empty() {
                        return Err(format!("URL '{s}': missing host"));
                    }
                    p.parse::<u16>().map_err(|_| format!("URL '{s}': port '{p}' is not a number from 1 to 65535"))?;
                    auth.to_string()
                }
                None => format!("{auth}:80"),
            }
        };
        Ok(Url { authority, target: path.to_string() })
    }
}

/// A keep-alive client connection to one server.
pub struct Client {
    authority: String,
    addr: Addr,
    timeout: Duration,
    stream: Option<HttpStream>,
    /// Connections opened so far.
    pub connects: u32,
}

impl Client {
    pub fn new(authority: &str, timeout: Duration) -> Client {
        Client { authority: authority.to_string(), addr: Addr::Tcp(authority.to_string()), timeout, stream: None, connects: 0 }
    }

    /// Drops the connection (a new session opens new connections).
    pub fn close(&mut self) {
        if let Some(s) = self.stream.take() {
            s.conn.shutdown();
        }
    }

    fn connect(&mut self) -> Result<(), HttpError> {
        let c = Conn::connect(&self.addr, self.timeout).map_err(|e| match e.kind() {
            io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => HttpError::Timeout,
            _ => HttpError::Io(io::Error::new(e.kind(), format!("connect to {}: {e}", self.authority))),
        })?;
        c.set_timeouts(Some(self.timeout), Some(self.timeout)).map_err(HttpError::Io)?;
        self.stream = Some(HttpStream::new(c));
        self.connects += 1;
        Ok(())
    }

    /// Sends a request and reads the response. A GET on a kept-alive connection that the
    /// server had closed is retried once on a new connection. Returns the response and the
    /// request's bytes on the wire.
    pub fn request(&mut self, method: &str, target: &str, headers: &[(&str, String)], body: &[u8]) -> Result<(Response, usize), HttpError> {
        let mut head = format!("{method} {target} HTTP/1.1\r\nHost: {}\r\nUser-Agent: interlab-rbe/1\r\nAccept: */*\r\n", self.authority);
        for (k, v) in headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        if !body.is_empty() || method == "POST" {
            head.push_str(&format!("Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n", body.len()));
        }
        head.push_str("\r\n");
        let mut msg = head.into_bytes();
        msg.extend_from_slice(body);
        let reused = self.stream.is_some();
        match self.try_once(&msg) {
            Err(HttpError::Closed) | Err(HttpError::Io(_)) if reused && method == "GET" => {
                self.close();
                self.try_once(&msg)
            }
            r => r,
        }
        .map(|r| (r, msg.len()))
    }

    fn try_once(&mut self, msg: &[u8]) -> Result<Response, HttpError> {
        if self.stream.is_none() {
            self.connect()?;
        }
        let s = self.stream.as_mut().ok_or(HttpError::Closed)?;
        // One deadline for the whole exchange, however the bytes trickle in.
        s.set_deadline(Some(Instant::now() + self.timeout), None);
        let r = s.conn.write_all(msg).map_err(io_err).and_then(|_| read_response(s));
        s.set_deadline(None, Some(self.timeout));
        match r {
            Ok(resp) => {
                if resp.close {
                    self.close();
                }
                Ok(resp)
            }
            Err(e) => {
                self.close();
                Err(e)
            }
        }
    }
}

/// Decodes `%XX` and `+` (as space).
pub fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => {
                let hex = |c: u8| (c as char).to_digit(16);
                match (hex(b[i + 1]), hex(b[i + 2])) {
                    (Some(h), Some(l)) => {
                        out.push((h * 16 + l) as u8);
                        i += 2;
                    }
                    _ => out.push(b'%'),
                }
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Encodes a query-string component.
pub fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for &c in s.as_bytes() {
        match c {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => out.push(c as char),
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{c:02X}")),
        }
    }
    out
}

/// Parses `a=1&b=x+y`.
pub fn parse_query(q: &str) -> Vec<(String, String)> {
    q.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('=') {
            Some((k, v)) => (percent_decode(k), percent_decode(v)),
            None => (percent_decode(p), String::new()),
        })
        .collect()
}

/// Builds `a=1&b=x+y`.
pub fn build_query(p: &[(String, String)]) -> String {
    p.iter().map(|(k, v)| format!("{}={}", percent_encode(k), percent_encode(v))).collect::<Vec<_>>().join("&")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Listener;

    #[test]
    fn urls() {
        assert_eq!(Url::parse("http://127.0.0.1:8080").unwrap(), Url { authority: "127.0.0.1:8080".into(), target: "/".into() });
        assert_eq!(Url::parse("http://localhost/x?y=1").unwrap().authority, "localhost:80");
        assert_eq!(Url::parse("http://[::1]:9/").unwrap().authority, "[::1]:9");
        assert!(Url::parse("https://a:1/").unwrap_err().contains("only http://"));
        assert!(Url::parse("127.0.0.1:80").unwrap_err().contains("expected http://"));
        assert!(Url::parse("http://:80/").is_err());
        assert!(Url::parse("http://h:99999/").unwrap_err().contains("port"));
        assert!(Url::parse("http:///").is_err());
    }

    #[test]
    fn query_coding() {
        let p = vec![("a b".to_string(), "x&y=z".to_string()), ("c".into(), "é".into())];
        assert_eq!(parse_query(&build_query(&p)), p);
        assert_eq!(percent_decode("%zz%4"), "%zz%4");
        assert_eq!(percent_decode("a%41+b"), "aA b");
        assert_eq!(percent_decode("%"), "%");
    }

    #[test]
    fn server_and_client_talk_keep_alive_and_reject_garbage() {
        let l = Listener::bind(&Addr::Tcp("127.0.0.1:0".into())).unwrap();
        let Addr::Tcp(at) = l.local_addr() else { panic!() };
        let t = std::thread::spawn(move || {
            for _ in 0..2 {
                let c = l.accept().unwrap();
                let mut s = HttpStream::new(c);
                loop {
                    match read_request(&mut s) {
                        Ok(r) => {
                            let body = format!("{} {} {:?}", r.method, r.path, r.params());
                            write_response(&mut s.conn, 200, "text/plain", &[], body.as_bytes(), r.keep_alive()).unwrap();
                        }
                        Err(HttpError::Bad(code, m)) => {
                            write_response(&mut s.conn, code, "text/plain", &[], m.as_bytes(), false).unwrap();
                            break;
                        }
                        Err(_) => break,
                    }
                }
            }
        });
        let mut c = Client::new(&at, Duration::from_secs(5));
        let (r, n) = c.request("GET", "/a%20b?x=1", &[], b"").unwrap();
        assert!(n > 20);
        assert_eq!(String::from_utf8_lossy(&r.body), "GET /a b [(\"x\", \"1\")]");
        let (r, _) = c.request("POST", "/p", &[], b"k=v+w").unwrap();
        assert_eq!(String::from_utf8_lossy(&r.body), "POST /p [(\"k\", \"v w\")]");
        assert_eq!(c.connects, 1);
        c.close();
        // Garbage on a second connection: a 400, not a panic.
        let mut raw = std::net::TcpStream::connect(&at).unwrap();
        raw.write_all(b"NONSENSE\r\n\r\n").unwrap();
        let mut s = HttpStream::new(Conn::Tcp(raw));
        let r = read_response(&mut s).unwrap();
        assert_eq!(r.status, 400);
        t.join().unwrap();
    }

    /// A one-shot raw server: answers each connection's first request with `reply`.
    fn raw_server(replies: Vec<Vec<u8>>) -> String {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let at = l.local_addr().unwrap().to_string();
        std::thread::spawn(move || {
            for reply in replies {
                let (mut c, _) = l.accept().unwrap();
                let mut buf = [0u8; 4096];
                let _ = c.read(&mut buf);
                let _ = c.write_all(&reply);
                if !reply.is_empty() {
                    drop(c);
                } else {
                    std::thread::sleep(Duration::from_millis(1500));
                }
            }
        });
        at
    }

    #[test]
    fn chunked_close_delimited_limits_and_deadline() {
        let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n5;ext=1\r\nhello\r\n7\r\n, world\r\n0\r\nX-Trailer: 1\r\n\r\n".to_vec();
        let close = b"HTTP/1.1 200 OK\r\nContent-Type: image/gif\r\n\r\nGIF89a...".to_vec();
        let bad = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n".to_vec();
        let gzip = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n".to_vec();
        let at = raw_server(vec![chunked.clone(), close, bad, gzip, vec![]]);
        let mut c = Client::new(&at, Duration::from_millis(500));
        let (r, _) = c.request("GET", "/", &[], b"").unwrap();
        assert_eq!(r.body, b"hello, world");
        assert_eq!(r.bytes, chunked.len(), "bytes on the wire, chunk framing included");
        let (r, _) = c.request("GET", "/", &[], b"").unwrap();
        assert!(r.close && r.body == b"GIF89a...");
        match c.request("GET", "/", &[], b"") {
            Err(HttpError::Bad(_, m)) => assert!(m.contains("chunk size"), "{m}"),
            other => panic!("{:?}", other.map(|r| r.0.status)),
        }
        match c.request("GET", "/", &[], b"") {
            Err(HttpError::Bad(_, m)) => assert!(m.contains("chunked only"), "{m}"),
            other => panic!("{:?}", other.map(|r| r.0.status)),
        }
        // A server that never answers: the exchange ends at its deadline.
        let t0 = Instant::now();
        assert!(matches!(c.request("POST", "/", &[], b"x"), Err(HttpError::Timeout)));
        assert!(t0.elapsed() < Duration::from_millis(1400), "{:?}", t0.elapsed());
        // The server side writes what the client reads.
        let mut out = Vec::new();
        write_response_framed(&mut out, 200, "text/html", &[], &[b'a'; 10_000], true, Framing::Chunked(4096)).unwrap();
        assert!(String::from_utf8_lossy(&out).contains("Transfer-Encoding: chunked\r\n") && out.ends_with(b"0\r\n\r\n"));
    }
}

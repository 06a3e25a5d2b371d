//! Control frames: an 8-byte header (magic "IL", protocol version, message type, payload
//! length as a big-endian u32) and a payload of at most a given size. Lengths are checked
//! before anything is allocated.

use super::message::Msg;
use super::wire::WireError;
use std::fmt;
use std::io::{self, Read, Write};

/// The two bytes every frame starts with.
pub const MAGIC: [u8; 2] = *b"IL";
/// Control protocol version spoken here.
pub const PROTOCOL_VERSION: u8 = 1;
/// Header bytes.
pub const HEADER_BYTES: usize = 8;
/// Largest payload a daemon accepts from a client.
pub const MAX_TO_SERVER: usize = 64 * 1024;
/// Largest payload a client accepts from a daemon (results may carry samples).
pub const MAX_TO_CLIENT: usize = 64 * 1024 * 1024;

/// What went wrong reading or decoding a frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProtoError {
    /// The peer closed the connection between frames.
    Closed,
    /// The peer closed the connection inside a frame.
    Truncated { got: usize, wanted: usize },
    /// No frame arrived in time.
    Timeout,
    BadMagic([u8; 2]),
    BadVersion(u8),
    TooLarge { len: usize, max: usize },
    UnknownType(u8),
    /// The payload does not decode as its type says.
    Payload { msg: &'static str, err: WireError },
    Io(String),
}

impl fmt::Display for ProtoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProtoError::Closed => write!(f, "connection closed by peer"),
            ProtoError::Truncated { got, wanted } => write!(f, "connection closed inside a frame ({got} of {wanted} bytes)"),
            ProtoError::Timeout => write!(f, "timed out waiting for a control message"),
            ProtoError::BadMagic(m) => {
                write!(f, "not an interlab control connection (frame starts {:02x} {:02x}, expected \"IL\")", m[0], m[1])
            }
            ProtoError::BadVersion(v) => write!(f, "control protocol version {v} is not supported (this side speaks {PROTOCOL_VERSION})"),
            ProtoError::TooLarge { len, max } => write!(f, "frame of {len} bytes exceeds the {max}-byte limit"),
            ProtoError::UnknownType(t) => write!(f, "unknown control message type {t}"),
            ProtoError::Payload { msg, err } => write!(f, "malformed {msg} message: {err}"),
            ProtoError::Io(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ProtoError {}

/// A parsed header: (message type, payload length).
pub fn parse_header(h: &[u8; HEADER_BYTES], max: usize) -> Result<(u8, usize), ProtoError> {
    if h[0..2] != MAGIC {
        return Err(ProtoError::BadMagic([h[0], h[1]]));
    }
    if h[2] != PROTOCOL_VERSION {
        return Err(ProtoError::BadVersion(h[2]));
    }
    let len = u32::from_be_bytes([h[4], h[5], h[6], h[7]]) as usize;
    if len > max {
        return Err(ProtoError::TooLarge { len, max });
    }
    Ok((h[3], len))
}

/// Encodes a message as one frame.
pub fn encode(msg: &Msg) -> Vec<u8> {
    let (ty, payload) = msg.encode();
    let mut v = Vec::with_capacity(HEADER_BYTES + payload.len());
    v.extend_from_slice(&MAGIC);
    v.push(PROTOCOL_VERSION);
    v.push(ty);
    v.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    v.extend_from_slice(&payload);
    v
}

/// Decodes one frame from the front of `buf`: Ok(None) if more bytes are needed, else the
/// message and the bytes it used. Never allocates more than `max` bytes for a payload.
pub fn decode(buf: &[u8], max: usize) -> Result<Option<(Msg, usize)>, ProtoError> {
    if buf.len() < HEADER_BYTES {
        // Reject bad magic/version as early as they are visible.
        if (!buf.is_empty() && buf[0] != MAGIC[0]) || (buf.len() >= 2 && buf[1] != MAGIC[1]) {
            let b1 = if buf.len() >= 2 { buf[1] } else { 0 };
            return Err(ProtoError::BadMagic([buf[0], b1]));
        }
        return Ok(None);
    }
    let mut h = [0u8; HEADER_BYTES];
    h.copy_from_slice(&buf[..HEADER_BYTES]);
    let (ty, len) = parse_header(&h, max)?;
    if buf.len() < HEADER_BYTES + len {
        return Ok(None);
    }
    let msg = Msg::decode(ty, &buf[HEADER_BYTES..HEADER_BYTES + len])?;
    Ok(Some((msg, HEADER_BYTES + len)))
}

fn read_full(r: &mut impl Read, buf: &mut [u8]) -> Result<usize, ProtoError> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => return Err(ProtoError::Timeout),
            Err(e) => return Err(ProtoError::Io(e.to_string())),
        }
    }
    Ok(got)
}

/// Reads one message; payloads above `max` bytes are refused before they are read.
pub fn read_msg(r: &mut impl Read, max: usize) -> Result<Msg, ProtoError> {
    let mut h = [0u8; HEADER_BYTES];
    match read_full(r, &mut h)? {
        0 => return Err(ProtoError::Closed),
        n if n < HEADER_BYTES => return Err(ProtoError::Truncated { got: n, wanted: HEADER_BYTES }),
        _ => {}
    }
    let (ty, len) = parse_header(&h, max)?;
    let mut payload = vec![0u8; len];
    let got = read_full(r, &mut payload)?;
    if got < len {
        return Err(ProtoError::Truncated { got: HEADER_BYTES + got, wanted: HEADER_BYTES + len });
    }
    Msg::decode(ty, &payload)
}

/// Writes one message.
pub fn write_msg(w: &mut impl Write, msg: &Msg) -> Result<(), ProtoError> {
    w.write_all(&encode(msg)).and_then(|_| w.flush()).map_err(|e| ProtoError::Io(format!("cannot send control message: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_checks() {
        let f = encode(&Msg::Bye);
        assert_eq!(decode(&f, 16).unwrap().unwrap(), (Msg::Bye, HEADER_BYTES));
        assert_eq!(decode(&f[..3], 16).unwrap(), None);
        let mut bad = f.clone();
        bad[0] = b'X';
        assert!(matches!(decode(&bad, 16), Err(ProtoError::BadMagic(_))));
        assert!(matches!(decode(&bad[..1], 16), Err(ProtoError::BadMagic(_))));
        let mut v = f.clone();
        v[2] = 9;
        assert_eq!(decode(&v, 16).unwrap_err(), ProtoError::BadVersion(9));
        let mut big = f.clone();
        big[4..8].copy_from_slice(&1_000_000u32.to_be_bytes());
        assert_eq!(decode(&big, 64).unwrap_err(), ProtoError::TooLarge { len: 1_000_000, max: 64 });
        let mut t = f;
        t[3] = 200;
        assert_eq!(decode(&t, 16).unwrap_err(), ProtoError::UnknownType(200));
    }

    #[test]
    fn read_msg_reports_truncation_and_close() {
        let f = encode(&Msg::Error { message: "x".repeat(10) });
        assert_eq!(read_msg(&mut &f[..], 1024).unwrap(), Msg::Error { message: "x".repeat(10) });
        assert_eq!(read_msg(&mut &f[..0], 1024).unwrap_err(), ProtoError::Closed);
        assert!(matches!(read_msg(&mut &f[..5], 1024).unwrap_err(), ProtoError::Truncated { got: 5, .. }));
        assert!(matches!(read_msg(&mut &f[..12], 1024).unwrap_err(), ProtoError::Truncated { .. }));
        assert!(matches!(read_msg(&mut &f[..], 4).unwrap_err(), ProtoError::TooLarge { .. }));
    }
}

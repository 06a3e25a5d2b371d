//! Field encoding of control messages: big-endian integers, length-prefixed strings and
//! lists. The reader checks every length against the bytes that remain before allocating,
//! so decoding never allocates more than the frame holds.

use std::fmt;

/// Why a payload could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireError {
    /// The field being read.
    pub field: &'static str,
    /// Byte offset in the payload.
    pub offset: usize,
    pub what: String,
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "field `{}` at payload byte {}: {}", self.field, self.offset, self.what)
    }
}

/// Writer.
#[derive(Default)]
pub struct Wr(pub Vec<u8>);

impl Wr {
    pub fn u8(&mut self, v: u8) -> &mut Self {
        self.0.push(v);
        self
    }
    pub fn u16(&mut self, v: u16) -> &mut Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    pub fn u32(&mut self, v: u32) -> &mut Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    pub fn u64(&mut self, v: u64) -> &mut Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    pub fn bytes(&mut self, v: &[u8]) -> &mut Self {
        self.0.extend_from_slice(v);
        self
    }
    pub fn str(&mut self, v: &str) -> &mut Self {
        self.u32(v.len() as u32).bytes(v.as_bytes())
    }
    pub fn opt_str(&mut self, v: &Option<String>) -> &mut Self {
        match v {
            Some(s) => self.u8(1).str(s),
            None => self.u8(0),
        }
    }
    pub fn opt_u64(&mut self, v: Option<u64>) -> &mut Self {
        match v {
            Some(x) => self.u8(1).u64(x),
            None => self.u8(0),
        }
    }
}

/// Reader over one payload.
pub struct Rd<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Rd<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Rd { buf, pos: 0 }
    }

    fn err(&self, field: &'static str, what: impl Into<String>) -> WireError {
        WireError { field, offset: self.pos, what: what.into() }
    }

    fn take(&mut self, field: &'static str, n: usize) -> Result<&'a [u8], WireError> {
        if self.buf.len() - self.pos < n {
            return Err(self.err(field, format!("truncated: needs {n} bytes, {} left", self.buf.len() - self.pos)));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    pub fn u8(&mut self, field: &'static str) -> Result<u8, WireError> {
        Ok(self.take(field, 1)?[0])
    }
    pub fn u16(&mut self, field: &'static str) -> Result<u16, WireError> {
        let b = self.take(field, 2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }
    pub fn u32(&mut self, field: &'static str) -> Result<u32, WireError> {
        let b = self.take(field, 4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    pub fn u64(&mut self, field: &'static str) -> Result<u64, WireError> {
        let b = self.take(field, 8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_be_bytes(a))
    }
    pub fn array<const N: usize>(&mut self, field: &'static str) -> Result<[u8; N], WireError> {
        let b = self.take(field, N)?;
        let mut a = [0u8; N];
        a.copy_from_slice(b);
        Ok(a)
    }
    pub fn bool(&mut self, field: &'static str) -> Result<bool, WireError> {
        match self.u8(field)? {
            0 => Ok(false),
            1 => Ok(true),
            v => Err(self.err(field, format!("expected 0 or 1, got {v}"))),
        }
    }
    pub fn str(&mut self, field: &'static str) -> Result<String, WireError> {
        let n = self.u32(field)? as usize;
        let b = self.take(field, n)?;
        String::from_utf8(b.to_vec()).map_err(|_| self.err(field, "not UTF-8"))
    }
    pub fn opt_str(&mut self, field: &'static str) -> Result<Option<String>, WireError> {
        Ok(if self.bool(field)? { Some(self.str(field)?) } else { None })
    }
    pub fn opt_u64(&mut self, field: &'static str) -> Result<Option<u64>, WireError> {
        Ok(if self.bool(field)? { Some(self.u64(field)?) } else { None })
    }

    /// A list count whose items take at least `min_item` bytes each: checked against what
    /// is left, so a lying count cannot make the caller allocate.
    pub fn count(&mut self, field: &'static str, min_item: usize) -> Result<usize, WireError> {
        let n = self.u32(field)? as usize;
        let left = self.buf.len() - self.pos;
        if n.saturating_mul(min_item.max(1)) > left {
            return Err(self.err(field, format!("list of {n} items cannot fit in the {left} bytes left")));
        }
        Ok(n)
    }

    /// Fails unless every byte was consumed.
    pub fn end(&self, what: &'static str) -> Result<(), WireError> {
        if self.pos != self.buf.len() {
            return Err(self.err(what, format!("{} unexpected trailing bytes", self.buf.len() - self.pos)));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_truncation() {
        let mut w = Wr::default();
        w.u8(7).u16(300).u32(70_000).u64(1 << 40).str("héllo").opt_str(&None).opt_u64(Some(9));
        let b = w.0;
        let mut r = Rd::new(&b);
        assert_eq!(r.u8("a").unwrap(), 7);
        assert_eq!(r.u16("b").unwrap(), 300);
        assert_eq!(r.u32("c").unwrap(), 70_000);
        assert_eq!(r.u64("d").unwrap(), 1 << 40);
        assert_eq!(r.str("e").unwrap(), "héllo");
        assert_eq!(r.opt_str("f").unwrap(), None);
        assert_eq!(r.opt_u64("g").unwrap(), Some(9));
        r.end("msg").unwrap();
        let mut r = Rd::new(&b[..5]);
        r.u8("a").unwrap();
        r.u16("b").unwrap();
        let e = r.u32("c").unwrap_err();
        assert!(e.to_string().contains("field `c`") && e.to_string().contains("truncated"), "{e}");
    }

    #[test]
    fn lying_counts_are_refused() {
        let mut w = Wr::default();
        w.u32(u32::MAX);
        let mut r = Rd::new(&w.0);
        assert!(r.count("items", 8).is_err());
        let mut w = Wr::default();
        w.u32(u32::MAX);
        assert!(Rd::new(&w.0).str("s").is_err());
    }
}

//! The 1998 World Cup web server logs (ita.ee.lbl.gov; Arlitt and Jin, HP Labs report HPL-1999-35R1): fixed 20-byte
//! big-endian records `{timestamp u32, client u32, object u32, size u32, method u8,
//! status u8, type u8, server u8}`, as in `wc_dayX_Y` files (gunzipped). The sdp study's
//! Openload clients replayed a 20,000-request subset; the static-content replay takes the
//! response sizes of such a subset as its file-size distribution.

use std::collections::BTreeMap;
use std::path::Path;

/// Bytes per record.
pub const RECORD_BYTES: usize = 20;
/// `size` of a response without a body.
pub const NO_SIZE: u32 = u32::MAX;
/// Method code of GET.
pub const GET: u8 = 0;
/// Status-code index of 200 OK (low 6 bits of the status byte).
pub const STATUS_200: u8 = 2;

/// One request of the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    /// Seconds since the epoch (GMT).
    pub timestamp: u32,
    pub client: u32,
    pub object: u32,
    /// Response bytes; `None` where the log has none.
    pub size: Option<u32>,
    pub method: u8,
    /// Status-code index (0..=37; 2 = 200, 13 = 304, 19 = 404).
    pub status: u8,
    /// HTTP version index (top 2 bits of the status byte: 0.9, 1.0, 1.1, other).
    pub http_version: u8,
    /// Object type (0 HTML, 1 image, ...).
    pub kind: u8,
    /// Region (top 3 bits: 0 Santa Clara, 1 Plano, 2 Herndon, 3 Paris) and server.
    pub server: u8,
}

impl Request {
    /// Decodes one 20-byte record.
    pub fn decode(r: &[u8; RECORD_BYTES]) -> Request {
        let u = |i: usize| u32::from_be_bytes([r[i], r[i + 1], r[i + 2], r[i + 3]]);
        let size = u(12);
        Request {
            timestamp: u(0),
            client: u(4),
            object: u(8),
            size: (size != NO_SIZE).then_some(size),
            method: r[16],
            status: r[17] & 0x3f,
            http_version: r[17] >> 6,
            kind: r[18],
            server: r[19],
        }
    }

    /// Encodes it (for tests and synthetic logs).
    pub fn encode(&self) -> [u8; RECORD_BYTES] {
        let mut r = [0u8; RECORD_BYTES];
        r[0..4].copy_from_slice(&self.timestamp.to_be_bytes());
        r[4..8].copy_from_slice(&self.client.to_be_bytes());
        r[8..12].copy_from_slice(&self.object.to_be_bytes());
        r[12..16].copy_from_slice(&self.size.unwrap_or(NO_SIZE).to_be_bytes());
        r[16] = self.method;
        r[17] = (self.http_version << 6) | (self.status & 0x3f);
        r[18] = self.kind;
        r[19] = self.server;
        r
    }
}

/// Reads the first `max` records of a log file (uncompressed).
pub fn read(path: &Path, max: usize) -> Result<Vec<Request>, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: cannot read the World Cup log: {e}", path.display()))?;
    if bytes.is_empty() || bytes.len() % RECORD_BYTES != 0 {
        let hint = if bytes.starts_with(&[0x1f, 0x8b]) { " (it is gzip-compressed: gunzip it first)" } else { "" };
        return Err(format!(
            "{}: not a World Cup log: {} bytes is not a whole number of {RECORD_BYTES}-byte records{hint}",
            path.display(),
            bytes.len()
        ));
    }
    Ok(bytes.chunks_exact(RECORD_BYTES).take(max).map(|c| Request::decode(c.try_into().expect("20 bytes"))).collect())
}

/// The response sizes of the successful GETs with a body among `reqs`, as (bytes, count),
/// smallest first.
pub fn size_counts(reqs: &[Request]) -> Vec<(u64, u64)> {
    let mut m: BTreeMap<u64, u64> = BTreeMap::new();
    for r in reqs {
        if let (GET, STATUS_200, Some(s)) = (r.method, r.status, r.size) {
            if s > 0 {
                *m.entry(u64::from(s)).or_default() += 1;
            }
        }
    }
    m.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(size: Option<u32>, status: u8) -> Request {
        Request { timestamp: 893_964_000, client: 7, object: 42, size, method: GET, status, http_version: 1, kind: 1, server: 0x62 }
    }

    #[test]
    fn records_round_trip_and_sizes_count_successful_gets_only() {
        let rs = [req(Some(4096), STATUS_200), req(None, 13), req(Some(4096), STATUS_200), req(Some(100), 19), req(Some(0), STATUS_200), req(Some(9000), STATUS_200)];
        for r in rs {
            assert_eq!(Request::decode(&r.encode()), r);
        }
        assert_eq!(size_counts(&rs), vec![(4096, 2), (9000, 1)]);
        let dir = std::env::temp_dir().join(format!("interlab-wc98-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("wc_day_test");
        std::fs::write(&f, rs.iter().flat_map(|r| r.encode()).collect::<Vec<u8>>()).unwrap();
        assert_eq!(read(&f, 3).unwrap(), rs[..3].to_vec());
        std::fs::write(&f, [0x1f, 0x8b, 8, 0, 0]).unwrap();
        let e = read(&f, 10).unwrap_err();
        assert!(e.contains("wc_day_test") && e.contains("gunzip"), "{e}");
        let e = read(&dir.join("missing"), 10).unwrap_err();
        assert!(e.contains("missing") && e.contains("cannot read"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

//! Shared-secret challenge-response. The token never crosses the wire: the daemon sends a
//! random nonce, the client answers HMAC-SHA256(token, "interlab-client" || server nonce ||
//! client nonce), and the daemon proves it knows the token too with
//! HMAC-SHA256(token, "interlab-server" || client nonce || server nonce).

pub mod hmac;
pub mod sha256;

use std::io::Read;
use std::path::Path;

/// Nonce length in bytes.
pub const NONCE_BYTES: usize = 16;
/// MAC length in bytes.
pub const MAC_BYTES: usize = 32;
/// Shortest token accepted, bytes.
pub const MIN_TOKEN_BYTES: usize = 8;

/// A shared secret.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(Vec<u8>);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(<hidden>)")
    }
}

impl Token {
    /// A token from its text; at least [`MIN_TOKEN_BYTES`] bytes.
    pub fn new(text: &str) -> Result<Token, String> {
        let t = text.trim_end_matches(['\n', '\r']);
        if t.len() < MIN_TOKEN_BYTES {
            return Err(format!("auth token too short: {} bytes (expected at least {MIN_TOKEN_BYTES})", t.len()));
        }
        Ok(Token(t.as_bytes().to_vec()))
    }

    /// Reads a token from a file (first line; surrounding newlines ignored).
    pub fn from_file(path: &Path) -> Result<Token, String> {
        Self::from_file_inner(path)
    }

    /// Name of the environment variable `serve` and `live` read the token from when neither
    /// `--auth-token` nor `--auth-token-file` is given.
    pub const ENV: &'static str = "INTERLAB_AUTH_TOKEN";

    fn from_file_inner(path: &Path) -> Result<Token, String> {
        use std::io::Read;
        // The first line only, and at most 4 KiB of it (a token file is not a stream).
        let mut raw = Vec::new();
        std::fs::File::open(path)
            .and_then(|f| f.take(4096).read_to_end(&mut raw))
            .map_err(|e| format!("{}: cannot read auth token file: {e}", path.display()))?;
        let text = String::from_utf8_lossy(&raw);
        let line = text.lines().next().unwrap_or("");
        Token::new(line).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// The client's answer to a challenge.
    pub fn client_mac(&self, server_nonce: &[u8; NONCE_BYTES], client_nonce: &[u8; NONCE_BYTES]) -> [u8; MAC_BYTES] {
        hmac::hmac_sha256(&self.0, &[b"interlab-client", server_nonce, client_nonce])
    }

    /// The daemon's proof.
    pub fn server_mac(&self, server_nonce: &[u8; NONCE_BYTES], client_nonce: &[u8; NONCE_BYTES]) -> [u8; MAC_BYTES] {
        hmac::hmac_sha256(&self.0, &[b"interlab-server", client_nonce, server_nonce])
    }
}

/// Constant-time MAC comparison.
pub fn mac_ok(expected: &[u8; MAC_BYTES], got: &[u8; MAC_BYTES]) -> bool {
    hmac::equal_ct(expected, got)
}

/// Random bytes from the kernel (/dev/urandom).
pub fn random_bytes<const N: usize>() -> Result<[u8; N], String> {
    let mut b = [0u8; N];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .map_err(|e| format!("/dev/urandom: cannot read random bytes: {e}"))?;
    Ok(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn macs_differ_by_direction_token_and_nonce() {
        let t = Token::new("correct horse").unwrap();
        let u = Token::new("battery staple").unwrap();
        let (s, c) = ([1u8; 16], [2u8; 16]);
        assert_ne!(t.client_mac(&s, &c), t.server_mac(&s, &c));
        assert_ne!(t.client_mac(&s, &c), u.client_mac(&s, &c));
        assert_ne!(t.client_mac(&s, &c), t.client_mac(&c, &s));
        assert!(mac_ok(&t.client_mac(&s, &c), &t.client_mac(&s, &c)));
        assert!(Token::new("short").is_err());
        assert_eq!(format!("{t:?}"), "Token(<hidden>)");
        assert_ne!(random_bytes::<16>().unwrap(), random_bytes::<16>().unwrap());
    }

    #[test]
    fn token_file_first_line() {
        let p = std::env::temp_dir().join(format!("interlab-token-{}", std::process::id()));
        std::fs::write(&p, "sekrit-token\n").unwrap();
        assert_eq!(Token::from_file(&p).unwrap(), Token::new("sekrit-token").unwrap());
        std::fs::remove_file(&p).unwrap();
        assert!(Token::from_file(&p).unwrap_err().contains("cannot read"));
    }
}

//! The client's side of a session: connect, authenticate (and check the daemon's proof),
//! set up a point, open its data connections.

use crate::auth::{mac_ok, random_bytes, Token};
use crate::conn::{hello, DataConn};
use crate::proto::{read_msg, write_msg, Msg, ProtoError, Setup, SetupOk, Transport, MAX_TO_CLIENT};
use crate::LiveError;
use interlab_patterns::HostFacts;
use std::io::Write;
use std::net::{IpAddr, SocketAddr, TcpStream, ToSocketAddrs, UdpSocket};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

/// A daemon to talk to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Peer {
    pub addr: SocketAddr,
    /// As given (host:port).
    pub label: String,
}

/// Parses `HOST[:PORT]` (`[v6]:PORT` for IPv6 with a port) and resolves it.
pub fn parse_peer(text: &str, default_port: u16) -> Result<Peer, String> {
    let t = text.trim();
    if t.is_empty() {
        return Err("empty --peer (expected HOST[:PORT])".into());
    }
    let with_port = if t.parse::<IpAddr>().is_ok() && t.contains(':') {
        format!("[{t}]:{default_port}")
    } else if t.starts_with('[') && t.ends_with(']') || !t.contains(':') {
        format!("{t}:{default_port}")
    } else {
        t.to_string()
    };
    let addr = with_port
        .to_socket_addrs()
        .map_err(|e| format!("--peer {t}: cannot resolve: {e} (expected HOST[:PORT])"))?
        .next()
        .ok_or_else(|| format!("--peer {t}: no address"))?;
    Ok(Peer { addr, label: with_port })
}

/// An open control session.
pub struct ClientSession {
    ctrl: TcpStream,
    pub peer: Peer,
    pub remote_host: HostFacts,
    pub local_ip: IpAddr,
}

impl ClientSession {
    /// Connects and runs the handshake.
    pub fn connect(peer: &Peer, token: Option<&Token>, timeout: Duration) -> Result<ClientSession, LiveError> {
        let who = &peer.label;
        let ctrl = TcpStream::connect_timeout(&peer.addr, timeout).map_err(|e| {
            LiveError::peer(format!("cannot reach the daemon at {who}: {e} (is `interlab serve` running there?)"))
        })?;
        let _ = ctrl.set_nodelay(true);
        let local_ip = ctrl.local_addr().map_err(|e| LiveError::peer(e.to_string()))?.ip();
        let client_nonce = random_bytes::<16>().map_err(LiveError::peer)?;
        let mut s = ClientSession { ctrl, peer: peer.clone(), remote_host: HostFacts::default(), local_ip };
        s.send(&Msg::Hello { client_version: crate::VERSION.into(), client_nonce })?;
        let mut m = s.recv(timeout, "Welcome")?;
        let mut server_nonce = None;
        if let Msg::Challenge { server_nonce: n } = m {
            let Some(t) = token else {
                return Err(LiveError::peer(format!("the daemon at {who} requires a shared secret: give --auth-token or --auth-token-file")));
            };
            s.send(&Msg::Auth { mac: t.client_mac(&n, &client_nonce) })?;
            server_nonce = Some(n);
            m = s.recv(timeout, "Welcome")?;
        }
        match m {
            Msg::Welcome { server_mac, host, .. } => {
                if let Some(t) = token {
                    let proven = match (server_nonce, server_mac) {
                        (Some(n), Some(mac)) => mac_ok(&t.server_mac(&n, &client_nonce), &mac),
                        _ => false,
                    };
                    if !proven {
                        return Err(LiveError::peer(format!(
                            "the daemon at {who} did not prove it knows the token (it runs without --auth-token, or is not the daemon you meant)"
                        )));
                    }
                }
                s.remote_host = host;
                Ok(s)
            }
            other => Err(LiveError::peer(format!("daemon at {who}: unexpected {} message during the handshake", other.name()))),
        }
    }

    pub fn send(&mut self, m: &Msg) -> Result<(), LiveError> {
        write_msg(&mut self.ctrl, m).map_err(|e| LiveError::peer(format!("daemon at {}: {e}", self.peer.label)))
    }

    /// Receives one message; an Error from the daemon becomes an error naming it.
    pub fn recv(&mut self, timeout: Duration, waiting_for: &str) -> Result<Msg, LiveError> {
        let _ = self.ctrl.set_read_timeout(Some(timeout));
        let who = &self.peer.label;
        match read_msg(&mut self.ctrl, MAX_TO_CLIENT) {
            Ok(Msg::Error { message }) => Err(LiveError::peer(format!("daemon at {who}: {message}"))),
            Ok(m) => Ok(m),
            Err(ProtoError::Closed) => Err(LiveError::peer(format!("daemon at {who} closed the connection while we waited for {waiting_for} (did it die?)"))),
            Err(ProtoError::Timeout) => Err(LiveError::peer(format!("daemon at {who}: no {waiting_for} within {:.0} s", timeout.as_secs_f64()))),
            Err(e) => Err(LiveError::peer(format!("daemon at {who}: {e}"))),
        }
    }

    /// Sets up a point and opens its data connections (channel, connection), in the
    /// order of `setup.channels`. Connect-per-transaction points open none.
    pub fn setup(&mut self, setup: &Setup) -> Result<(SetupOk, Vec<(u32, DataConn)>), LiveError> {
        self.send(&Msg::Setup(setup.clone()))?;
        let ok = match self.recv(Duration::from_secs(10), "SetupOk")? {
            Msg::SetupOk(ok) => ok,
            other => return Err(LiveError::peer(format!("daemon at {}: unexpected {} (expected SetupOk)", self.peer.label, other.name()))),
        };
        let connecting = matches!(setup.base, crate::proto::BaseCode::Connect | crate::proto::BaseCode::Crr);
        let mut conns = Vec::new();
        if !connecting {
            for (i, c) in setup.channels.iter().enumerate() {
                let conn = self.open_data(setup, &ok, i, c.chan).map_err(|e| LiveError::peer(format!("daemon at {}: data channel {}: {e}", self.peer.label, c.chan)))?;
                conn.tune(setup.sockbuf);
                conns.push((c.chan, conn));
            }
        }
        match self.recv(Duration::from_secs(15), "DataReady")? {
            Msg::DataReady => Ok((ok, conns)),
            other => Err(LiveError::peer(format!("daemon at {}: unexpected {} (expected DataReady)", self.peer.label, other.name()))),
        }
    }

    /// The TCP address of the point's data listener.
    pub fn data_addr(&self, ok: &SetupOk) -> SocketAddr {
        SocketAddr::new(self.peer.addr.ip(), ok.tcp_port)
    }

    fn open_data(&self, setup: &Setup, ok: &SetupOk, index: usize, chan: u32) -> Result<DataConn, String> {
        let h = hello(&ok.cookie, chan);
        match setup.transport {
            Transport::Tcp => {
                let mut s = TcpStream::connect_timeout(&self.data_addr(ok), Duration::from_secs(5)).map_err(|e| e.to_string())?;
                s.write_all(&h).map_err(|e| e.to_string())?;
                Ok(DataConn::Tcp(s))
            }
            Transport::Unix => {
                if !self.peer.addr.ip().is_loopback() {
                    return Err(format!("unix sockets need the daemon on this host (peer {} is not loopback)", self.peer.label));
                }
                let mut s = UnixStream::connect(&ok.unix_path).map_err(|e| format!("{}: {e}", ok.unix_path))?;
                s.write_all(&h).map_err(|e| e.to_string())?;
                Ok(DataConn::Unix(s))
            }
            Transport::Udp => {
                let port = *ok.udp_ports.get(index).ok_or("daemon sent too few UDP ports")?;
                let local: SocketAddr = if self.peer.addr.is_ipv4() { "0.0.0.0:0".parse().expect("addr") } else { "[::]:0".parse().expect("addr") };
                let s = UdpSocket::bind(local).map_err(|e| e.to_string())?;
                s.connect(SocketAddr::new(self.peer.addr.ip(), port)).map_err(|e| e.to_string())?;
                s.set_read_timeout(Some(Duration::from_millis(200))).map_err(|e| e.to_string())?;
                let deadline = Instant::now() + Duration::from_secs(5);
                let mut b = [0u8; 17];
                loop {
                    if Instant::now() >= deadline {
                        return Err("no UDP acknowledgement from the daemon within 5 s".into());
                    }
                    let _ = s.send(&h);
                    match s.recv(&mut b) {
                        Ok(16) if b[..16] == ok.cookie => break,
                        _ => continue,
                    }
                }
                s.set_read_timeout(None).map_err(|e| e.to_string())?;
                Ok(DataConn::Udp(s))
            }
        }
    }

    /// Ends the session politely.
    pub fn bye(mut self) {
        let _ = write_msg(&mut self.ctrl, &Msg::Bye);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peers_parse() {
        assert_eq!(parse_peer("127.0.0.1", 7400).unwrap().addr, "127.0.0.1:7400".parse().unwrap());
        assert_eq!(parse_peer("127.0.0.1:9", 7400).unwrap().addr, "127.0.0.1:9".parse().unwrap());
        assert_eq!(parse_peer("::1", 7400).unwrap().addr, "[::1]:7400".parse().unwrap());
        assert_eq!(parse_peer("[::1]:5", 7400).unwrap().addr, "[::1]:5".parse().unwrap());
        assert_eq!(parse_peer("localhost:5", 7400).unwrap().addr.port(), 5);
        assert!(parse_peer("", 1).is_err());
        assert!(parse_peer("127.0.0.1:notaport", 1).is_err());
    }
}

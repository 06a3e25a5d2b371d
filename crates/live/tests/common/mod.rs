//! What the live integration tests share: a daemon on a loopback port that stops (and is
//! joined) when dropped.

use interlab_live::auth::Token;
use interlab_live::server::StopHandle;
use interlab_live::{ServeConfig, Server};
use std::net::SocketAddr;
use std::time::Duration;

/// A daemon serving on 127.0.0.1, stopped when dropped.
pub struct Daemon {
    pub addr: SocketAddr,
    stop: StopHandle,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.stop.stop();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Starts a quiet daemon on an ephemeral port with `token` (if any) and the two deadlines.
pub fn daemon_with(token: Option<&str>, handshake: Duration, idle: Duration) -> Daemon {
    let cfg = ServeConfig {
        port: 0,
        token: token.map(|t| Token::new(t).unwrap()),
        handshake_timeout: handshake,
        idle_timeout: idle,
        verbose: false,
        ..ServeConfig::default()
    };
    let (addr, stop, t) = Server::bind(cfg).unwrap().spawn();
    Daemon { addr, stop, thread: Some(t) }
}

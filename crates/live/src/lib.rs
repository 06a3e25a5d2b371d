//! The live engine of interlab: the pattern programs of `interlab_patterns` run over real
//! TCP, UDP and Unix sockets, a daemon (`interlab serve`) that runs the far side of any
//! pattern for many clients at once, its control protocol, statistics with confidence
//! control, CPU accounting of both ends, and the comparison with the reference tools.

pub mod auth;
pub mod calibrate;
pub mod clock;
pub mod compare;
pub mod conn;
pub mod cpu;
pub mod dataplane;
pub mod engine;
pub mod host;
pub mod client;
pub mod output;
pub mod proto;
pub mod record;
pub mod runner;
pub mod server;
pub mod session;

pub use client::{parse_peer, Peer};
pub use proto::Transport;
pub use runner::{run_point, PointOptions, RunLength};
pub use server::{ServeConfig, Server, DEFAULT_PORT};

/// Version written into records and exchanged in the handshake.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// An error of a live run, with how far it reaches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveError {
    /// The peer (daemon) is unusable: later points against it will fail too.
    pub peer_level: bool,
    pub message: String,
}

impl LiveError {
    pub fn peer(message: impl Into<String>) -> LiveError {
        LiveError { peer_level: true, message: message.into() }
    }

    pub fn point(message: impl Into<String>) -> LiveError {
        LiveError { peer_level: false, message: message.into() }
    }
}

impl std::fmt::Display for LiveError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for LiveError {}

//! `interlab serve`: the daemon. Binds loopback by default; refuses any other address
//! without a token. Serves many clients at once, one thread per session, up to a limit.

use crate::auth::Token;
use crate::session::{serve as serve_session, SessionConfig};
use std::net::{IpAddr, SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Default control port.
pub const DEFAULT_PORT: u16 = 7400;

/// Daemon settings.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    pub bind: IpAddr,
    pub port: u16,
    pub token: Option<Token>,
    pub handshake_timeout: Duration,
    pub idle_timeout: Duration,
    /// Sessions served at once; more are told the daemon is busy.
    pub max_sessions: usize,
    /// Log sessions to stderr.
    pub verbose: bool,
}

impl Default for ServeConfig {
    fn default() -> Self {
        ServeConfig {
            bind: IpAddr::from([127, 0, 0, 1]),
            port: DEFAULT_PORT,
            token: None,
            handshake_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            max_sessions: 64,
            verbose: true,
        }
    }
}

/// A bound daemon.
pub struct Server {
    listener: TcpListener,
    cfg: ServeConfig,
    stop: Arc<AtomicBool>,
}

/// Stops a daemon running in another thread.
#[derive(Clone)]
pub struct StopHandle {
    stop: Arc<AtomicBool>,
    addr: SocketAddr,
}

impl StopHandle {
    pub fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = std::net::TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
    }
}

impl Server {
    /// Binds the control port. Errors name the address and what to do.
    pub fn bind(cfg: ServeConfig) -> Result<Server, String> {
        if !cfg.bind.is_loopback() && cfg.token.is_none() {
            return Err(format!(
                "refusing to serve on {} without a shared secret: give --auth-token or --auth-token-file (loopback needs none)",
                cfg.bind
            ));
        }
        let listener = TcpListener::bind((cfg.bind, cfg.port)).map_err(|e| {
            if e.kind() == std::io::ErrorKind::AddrInUse {
                format!("cannot bind {}:{}: address already in use (another `interlab serve`? choose another --port)", cfg.bind, cfg.port)
            } else {
                format!("cannot bind {}:{}: {e}", cfg.bind, cfg.port)
            }
        })?;
        Ok(Server { listener, cfg, stop: Arc::new(AtomicBool::new(false)) })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.listener.local_addr().expect("bound listener has an address")
    }

    pub fn stop_handle(&self) -> StopHandle {
        StopHandle { stop: self.stop.clone(), addr: self.local_addr() }
    }

    /// Serves until stopped.
    pub fn run(self) {
        let scfg = Arc::new(SessionConfig {
            token: self.cfg.token.clone(),
            handshake_timeout: self.cfg.handshake_timeout,
            idle_timeout: self.cfg.idle_timeout,
            version: crate::VERSION.to_string(),
        });
        let active = Arc::new(AtomicUsize::new(0));
        let verbose = self.cfg.verbose;
        for conn in self.listener.incoming() {
            if self.stop.load(Ordering::SeqCst) {
                break;
            }
            let mut s = match conn {
                Ok(s) => s,
                Err(e) => {
                    if verbose {
                        eprintln!("interlab serve: accept: {e}");
                    }
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                }
            };
            let peer = s.peer_addr().map(|a| a.to_string()).unwrap_or_else(|_| "?".into());
            if active.load(Ordering::SeqCst) >= self.cfg.max_sessions {
                let _ = crate::proto::write_msg(&mut s, &crate::proto::Msg::Error { message: format!("daemon busy: {} sessions already running", self.cfg.max_sessions) });
                continue;
            }
            active.fetch_add(1, Ordering::SeqCst);
            let (scfg, active) = (scfg.clone(), active.clone());
            let spawned = std::thread::Builder::new().name(format!("session-{peer}")).spawn(move || {
                let r = serve_session(s, &scfg);
                active.fetch_sub(1, Ordering::SeqCst);
                match r {
                    Ok(()) if verbose => eprintln!("interlab serve: {peer}: session done"),
                    Err(e) if verbose => eprintln!("interlab serve: {peer}: {e}"),
                    _ => {}
                }
            });
            if let Err(e) = spawned {
                eprintln!("interlab serve: cannot start a session thread: {e}");
            }
        }
    }

    /// Runs in a background thread (tests, `bench compare`); returns the address and a stop handle.
    pub fn spawn(self) -> (SocketAddr, StopHandle, std::thread::JoinHandle<()>) {
        let addr = self.local_addr();
        let h = self.stop_handle();
        let t = std::thread::spawn(move || self.run());
        (addr, h, t)
    }
}

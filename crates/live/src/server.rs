//! `interlab serve`: the daemon. Binds loopback by default; refuses any other address
//! without a token. Serves many clients at once, one thread per connection.
//!
//! Admission: a new connection first counts against a small pre-authentication budget
//! (`max_preauth`); when that is full the oldest unauthenticated connection is dropped to
//! make room. Only an authenticated client takes one of the `max_sessions` session slots,
//! so clients that connect and say nothing, or drip their handshake, cannot lock out the
//! rightful user.

use crate::auth::Token;
use crate::session::{serve_admitted, SessionConfig};
use std::collections::VecDeque;
use std::net::{IpAddr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

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
    /// Connections still in their handshake at once; a new one beyond this drops the oldest.
    pub max_preauth: usize,
    /// Log sessions to stderr.
    pub verbose: bool,
    /// CPUs the data threads are pinned to, round-robin (empty: not pinned).
    pub cpus: Vec<usize>,
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
            max_preauth: 16,
            verbose: true,
            cpus: vec![],
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
            cpus: self.cfg.cpus.clone(),
        });
        limit_allocator_arenas();
        let gate = Arc::new(Gate {
            preauth: Mutex::new(VecDeque::new()),
            active: AtomicUsize::new(0),
            max_sessions: self.cfg.max_sessions.max(1),
            max_preauth: self.cfg.max_preauth.max(1),
        });
        let verbose = self.cfg.verbose;
        let mut next_id: u64 = 0;
        for conn in self.listener.incoming() {
            if self.stop.load(Ordering::SeqCst) {
                break;
            }
            let s = match conn {
                Ok(s) => s,
                Err(e) => {
                    if verbose {
                        eprintln!("interlab serve: accept: {e}");
                    }
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                }
            };
            let accepted = Instant::now();
            let peer = s.peer_addr().map(|a| a.to_string()).unwrap_or_else(|_| "?".into());
            let id = next_id;
            next_id += 1;
            let Ok(handle) = s.try_clone() else { continue };
            if let Some(old) = gate.enter(id, handle) {
                if verbose {
                    eprintln!("interlab serve: {old}: dropped before authenticating (more than {} connections in their handshake)", gate.max_preauth);
                }
            }
            let (scfg, gate2) = (scfg.clone(), gate.clone());
            let spawned = std::thread::Builder::new().name(format!("session-{peer}")).spawn(move || {
                let r = serve_admitted(s, &scfg, accepted, || gate2.admit(id));
                gate2.leave(id);
                match r {
                    Ok(()) if verbose => eprintln!("interlab serve: {peer}: session done"),
                    Err(e) if verbose => eprintln!("interlab serve: {peer}: {e}"),
                    _ => {}
                }
                trim_allocator();
            });
            if let Err(e) = spawned {
                gate.leave(id);
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

/// Admission control shared by the accept loop and the connection threads.
struct Gate {
    /// Unauthenticated connections, oldest first: (id, a handle to shut it down).
    preauth: Mutex<VecDeque<(u64, TcpStream)>>,
    /// Authenticated sessions running.
    active: AtomicUsize,
    max_sessions: usize,
    max_preauth: usize,
}

/// Holds a session slot; frees it when dropped.
struct Slot<'a>(&'a AtomicUsize);

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Gate {
    /// Registers a new unauthenticated connection; if the budget is full, shuts the oldest
    /// one down (its thread then ends) and returns its peer address.
    fn enter(&self, id: u64, s: TcpStream) -> Option<String> {
        let mut q = self.preauth.lock().unwrap_or_else(|e| e.into_inner());
        let mut dropped = None;
        while q.len() >= self.max_preauth {
            if let Some((_, old)) = q.pop_front() {
                dropped = Some(old.peer_addr().map(|a| a.to_string()).unwrap_or_else(|_| "?".into()));
                let _ = old.shutdown(Shutdown::Both);
            }
        }
        q.push_back((id, s));
        dropped
    }

    /// Removes a connection from the pre-authentication budget (if still there).
    fn leave(&self, id: u64) -> bool {
        let mut q = self.preauth.lock().unwrap_or_else(|e| e.into_inner());
        match q.iter().position(|(i, _)| *i == id) {
            Some(k) => {
                q.remove(k);
                true
            }
            None => false,
        }
    }

    /// An authenticated client: out of the pre-authentication budget, into a session slot.
    fn admit(&self, id: u64) -> Result<Slot<'_>, String> {
        if !self.leave(id) {
            return Err("connection dropped: the handshake budget was full".into());
        }
        let n = self.active.fetch_add(1, Ordering::SeqCst);
        let slot = Slot(&self.active);
        if n >= self.max_sessions {
            return Err(format!("daemon busy: {} sessions already running", self.max_sessions));
        }
        Ok(slot)
    }
}

/// glibc gives every thread that allocates its own arena (up to 8 per CPU) and keeps freed
/// memory in them: a daemon that served many sessions would hold far more than it uses.
/// Two arenas are plenty for a control plane whose data threads allocate once per point.
fn limit_allocator_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes a tuning parameter of the allocator.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
    }
}

/// Returns free memory to the system after a session (glibc keeps it otherwise).
fn trim_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free pages of the allocator.
    unsafe {
        libc::malloc_trim(0);
    }
}

//! The control messages. A session: Hello, [Challenge, Auth,] Welcome; then for each point
//! Setup, SetupOk, (data connections), DataReady, and per measured phase Phase, PhaseEnd,
//! PhaseResult; finally Bye. Either side may send Error.

use super::frame::ProtoError;
use super::wire::{Rd, WireError, Wr};
use crate::auth::{MAC_BYTES, NONCE_BYTES};
use interlab_patterns::HostFacts;

/// Data transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Transport {
    Tcp,
    Udp,
    Unix,
}

impl Transport {
    pub fn name(self) -> &'static str {
        match self {
            Transport::Tcp => "tcp",
            Transport::Udp => "udp",
            Transport::Unix => "unix",
        }
    }

    pub fn from_name(s: &str) -> Option<Transport> {
        [Transport::Tcp, Transport::Udp, Transport::Unix].into_iter().find(|t| t.name() == s)
    }

    fn code(self) -> u8 {
        match self {
            Transport::Tcp => 0,
            Transport::Udp => 1,
            Transport::Unix => 2,
        }
    }

    fn from_code(c: u8) -> Option<Transport> {
        [Transport::Tcp, Transport::Udp, Transport::Unix].into_iter().find(|t| t.code() == c)
    }
}

/// Program a data channel runs (see `interlab_patterns::Base`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BaseCode {
    PingPong,
    Windowed,
    Stream,
    Connect,
    Crr,
    Rr,
}

impl BaseCode {
    const ALL: [BaseCode; 6] = [BaseCode::PingPong, BaseCode::Windowed, BaseCode::Stream, BaseCode::Connect, BaseCode::Crr, BaseCode::Rr];

    fn code(self) -> u8 {
        BaseCode::ALL.iter().position(|b| *b == self).unwrap_or(0) as u8
    }

    pub fn from_base(b: interlab_patterns::Base) -> BaseCode {
        use interlab_patterns::{Base, TxnKind};
        match b {
            Base::PingPong => BaseCode::PingPong,
            Base::Windowed => BaseCode::Windowed,
            Base::Stream => BaseCode::Stream,
            Base::Txn(TxnKind::Connect) => BaseCode::Connect,
            Base::Txn(TxnKind::ConnectRequestResponse) => BaseCode::Crr,
            Base::Txn(TxnKind::RequestResponse) => BaseCode::Rr,
        }
    }

    pub fn base(self) -> interlab_patterns::Base {
        use interlab_patterns::{Base, TxnKind};
        match self {
            BaseCode::PingPong => Base::PingPong,
            BaseCode::Windowed => Base::Windowed,
            BaseCode::Stream => Base::Stream,
            BaseCode::Connect => Base::Txn(TxnKind::Connect),
            BaseCode::Crr => Base::Txn(TxnKind::ConnectRequestResponse),
            BaseCode::Rr => Base::Txn(TxnKind::RequestResponse),
        }
    }
}

/// One data channel of a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChanSetup {
    pub chan: u32,
    /// The daemon initiates on this channel (else the client does).
    pub server_initiates: bool,
}

/// A point's data plane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setup {
    pub transport: Transport,
    pub base: BaseCode,
    /// Message (request) size, bytes.
    pub size: u64,
    /// Response size, bytes (rr, crr).
    pub response_size: u64,
    /// Messages per window.
    pub window: u32,
    pub channels: Vec<ChanSetup>,
    /// Socket buffer size to set on data sockets, bytes (0: leave the kernel's autotuning).
    pub sockbuf: u32,
}

/// Where to connect data channels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetupOk {
    /// Sent first on every data connection.
    pub cookie: [u8; 16],
    /// TCP data listener port (tcp, and connect/crr).
    pub tcp_port: u16,
    /// One UDP port per channel, in channel order (udp).
    pub udp_ports: Vec<u16>,
    /// Unix socket path (unix).
    pub unix_path: String,
}

/// One measured phase (a warm-up, a calibration or a repetition).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Phase {
    pub id: u32,
    /// Program-driven channels: warm-up and measured iterations.
    pub warmup: u32,
    pub iterations: u32,
    /// Stream channels: warm-up and measured time, picoseconds.
    pub warmup_ps: u64,
    pub duration_ps: u64,
}

/// Byte offsets bounding a stream channel's measured part (counted over the connection).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamMark {
    pub chan: u32,
    pub from: u64,
    pub to: u64,
}

/// The client's initiators are done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhaseEnd {
    pub id: u32,
    /// For stream channels the client sends on.
    pub marks: Vec<StreamMark>,
}

/// What one channel measured on the daemon's side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChanSamples {
    None,
    /// Picoseconds per sample.
    Latency(Vec<u64>),
    Bandwidth { bytes: u64, elapsed_ps: u64, messages: u64 },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChanResult {
    pub chan: u32,
    pub samples: ChanSamples,
    /// Bytes this end received on the channel in total (stream receivers; loss accounting).
    pub received: u64,
    /// Empty when fine.
    pub error: String,
}

/// Raw CPU counters over the daemon's phase window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CpuWire {
    /// Whole-machine busy and total jiffies (/proc/stat).
    pub busy_ticks: u64,
    pub total_ticks: u64,
    /// Process user + system CPU time, microseconds (getrusage).
    pub process_us: u64,
    /// Window length, microseconds.
    pub window_us: u64,
    pub cpus: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhaseResult {
    pub id: u32,
    pub channels: Vec<ChanResult>,
    pub cpu: CpuWire,
}

/// A control message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Msg {
    Hello { client_version: String, client_nonce: [u8; NONCE_BYTES] },
    Challenge { server_nonce: [u8; NONCE_BYTES] },
    Auth { mac: [u8; MAC_BYTES] },
    Welcome { server_version: String, server_mac: Option<[u8; MAC_BYTES]>, host: HostFacts },
    Setup(Setup),
    SetupOk(SetupOk),
    DataReady,
    Phase(Phase),
    PhaseEnd(PhaseEnd),
    PhaseResult(PhaseResult),
    Error { message: String },
    Bye,
}

impl Msg {
    /// Message name for errors ("expected Setup, got Phase").
    pub fn name(&self) -> &'static str {
        match self {
            Msg::Hello { .. } => "Hello",
            Msg::Challenge { .. } => "Challenge",
            Msg::Auth { .. } => "Auth",
            Msg::Welcome { .. } => "Welcome",
            Msg::Setup(_) => "Setup",
            Msg::SetupOk(_) => "SetupOk",
            Msg::DataReady => "DataReady",
            Msg::Phase(_) => "Phase",
            Msg::PhaseEnd(_) => "PhaseEnd",
            Msg::PhaseResult(_) => "PhaseResult",
            Msg::Error { .. } => "Error",
            Msg::Bye => "Bye",
        }
    }

    /// (type byte, payload).
    pub fn encode(&self) -> (u8, Vec<u8>) {
        let mut w = Wr::default();
        let ty = match self {
            Msg::Hello { client_version, client_nonce } => {
                w.str(client_version).bytes(client_nonce);
                1
            }
            Msg::Challenge { server_nonce } => {
                w.bytes(server_nonce);
                2
            }
            Msg::Auth { mac } => {
                w.bytes(mac);
                3
            }
            Msg::Welcome { server_version, server_mac, host } => {
                w.str(server_version);
                match server_mac {
                    Some(m) => w.u8(1).bytes(m),
                    None => w.u8(0),
                };
                w.str(&host.hostname).str(&host.kernel).str(&host.cpu).u32(host.cpus);
                w.opt_str(&host.interface).opt_str(&host.driver).opt_u64(host.speed_mbps);
                4
            }
            Msg::Setup(s) => {
                w.u8(s.transport.code()).u8(s.base.code()).u64(s.size).u64(s.response_size).u32(s.window).u32(s.sockbuf);
                w.u32(s.channels.len() as u32);
                for c in &s.channels {
                    w.u32(c.chan).u8(c.server_initiates as u8);
                }
                5
            }
            Msg::SetupOk(s) => {
                w.bytes(&s.cookie).u16(s.tcp_port).u32(s.udp_ports.len() as u32);
                for p in &s.udp_ports {
                    w.u16(*p);
                }
                w.str(&s.unix_path);
                6
            }
            Msg::DataReady => 7,
            Msg::Phase(p) => {
                w.u32(p.id).u32(p.warmup).u32(p.iterations).u64(p.warmup_ps).u64(p.duration_ps);
                8
            }
            Msg::PhaseEnd(p) => {
                w.u32(p.id).u32(p.marks.len() as u32);
                for m in &p.marks {
                    w.u32(m.chan).u64(m.from).u64(m.to);
                }
                9
            }
            Msg::PhaseResult(p) => {
                w.u32(p.id).u32(p.channels.len() as u32);
                for c in &p.channels {
                    w.u32(c.chan);
                    match &c.samples {
                        ChanSamples::None => {
                            w.u8(0);
                        }
                        ChanSamples::Latency(v) => {
                            w.u8(1).u32(v.len() as u32);
                            for x in v {
                                w.u64(*x);
                            }
                        }
                        ChanSamples::Bandwidth { bytes, elapsed_ps, messages } => {
                            w.u8(2).u64(*bytes).u64(*elapsed_ps).u64(*messages);
                        }
                    }
                    w.u64(c.received).str(&c.error);
                }
                let c = &p.cpu;
                w.u64(c.busy_ticks).u64(c.total_ticks).u64(c.process_us).u64(c.window_us).u32(c.cpus);
                10
            }
            Msg::Error { message } => {
                w.str(message);
                11
            }
            Msg::Bye => 12,
        };
        (ty, w.0)
    }

    /// Decodes a payload of type `ty`; every byte must be used.
    pub fn decode(ty: u8, payload: &[u8]) -> Result<Msg, ProtoError> {
        let name = match ty {
            1 => "Hello",
            2 => "Challenge",
            3 => "Auth",
            4 => "Welcome",
            5 => "Setup",
            6 => "SetupOk",
            7 => "DataReady",
            8 => "Phase",
            9 => "PhaseEnd",
            10 => "PhaseResult",
            11 => "Error",
            12 => "Bye",
            t => return Err(ProtoError::UnknownType(t)),
        };
        let mut r = Rd::new(payload);
        let m = Self::decode_fields(ty, &mut r).and_then(|m| r.end("end of message").map(|_| m));
        m.map_err(|err| ProtoError::Payload { msg: name, err })
    }

    fn decode_fields(ty: u8, r: &mut Rd) -> Result<Msg, WireError> {
        Ok(match ty {
            1 => Msg::Hello { client_version: r.str("client_version")?, client_nonce: r.array("client_nonce")? },
            2 => Msg::Challenge { server_nonce: r.array("server_nonce")? },
            3 => Msg::Auth { mac: r.array("mac")? },
            4 => {
                let server_version = r.str("server_version")?;
                let server_mac = if r.bool("server_mac")? { Some(r.array("server_mac")?) } else { None };
                let host = HostFacts {
                    hostname: r.str("hostname")?,
                    kernel: r.str("kernel")?,
                    cpu: r.str("cpu")?,
                    cpus: r.u32("cpus")?,
                    interface: r.opt_str("interface")?,
                    driver: r.opt_str("driver")?,
                    speed_mbps: r.opt_u64("speed_mbps")?,
                };
                Msg::Welcome { server_version, server_mac, host }
            }
            5 => {
                let t = r.u8("transport")?;
                let transport = Transport::from_code(t).ok_or_else(|| bad("transport", t))?;
                let b = r.u8("base")?;
                let base = *BaseCode::ALL.get(b as usize).ok_or_else(|| bad("base", b))?;
                let size = r.u64("size")?;
                let response_size = r.u64("response_size")?;
                let window = r.u32("window")?;
                let sockbuf = r.u32("sockbuf")?;
                let n = r.count("channels", 5)?;
                let mut channels = Vec::with_capacity(n);
                for _ in 0..n {
                    channels.push(ChanSetup { chan: r.u32("chan")?, server_initiates: r.bool("server_initiates")? });
                }
                Msg::Setup(Setup { transport, base, size, response_size, window, channels, sockbuf })
            }
            6 => {
                let cookie = r.array("cookie")?;
                let tcp_port = r.u16("tcp_port")?;
                let n = r.count("udp_ports", 2)?;
                let mut udp_ports = Vec::with_capacity(n);
                for _ in 0..n {
                    udp_ports.push(r.u16("udp_port")?);
                }
                Msg::SetupOk(SetupOk { cookie, tcp_port, udp_ports, unix_path: r.str("unix_path")? })
            }
            7 => Msg::DataReady,
            8 => Msg::Phase(Phase {
                id: r.u32("id")?,
                warmup: r.u32("warmup")?,
                iterations: r.u32("iterations")?,
                warmup_ps: r.u64("warmup_ps")?,
                duration_ps: r.u64("duration_ps")?,
            }),
            9 => {
                let id = r.u32("id")?;
                let n = r.count("marks", 20)?;
                let mut marks = Vec::with_capacity(n);
                for _ in 0..n {
                    marks.push(StreamMark { chan: r.u32("chan")?, from: r.u64("from")?, to: r.u64("to")? });
                }
                Msg::PhaseEnd(PhaseEnd { id, marks })
            }
            10 => {
                let id = r.u32("id")?;
                let n = r.count("channels", 17)?;
                let mut channels = Vec::with_capacity(n);
                for _ in 0..n {
                    let chan = r.u32("chan")?;
                    let samples = match r.u8("samples")? {
                        0 => ChanSamples::None,
                        1 => {
                            let k = r.count("latencies", 8)?;
                            let mut v = Vec::with_capacity(k);
                            for _ in 0..k {
                                v.push(r.u64("latency")?);
                            }
                            ChanSamples::Latency(v)
                        }
                        2 => ChanSamples::Bandwidth { bytes: r.u64("bytes")?, elapsed_ps: r.u64("elapsed_ps")?, messages: r.u64("messages")? },
                        k => return Err(bad("samples", k)),
                    };
                    channels.push(ChanResult { chan, samples, received: r.u64("received")?, error: r.str("error")? });
                }
                let cpu = CpuWire {
                    busy_ticks: r.u64("busy_ticks")?,
                    total_ticks: r.u64("total_ticks")?,
                    process_us: r.u64("process_us")?,
                    window_us: r.u64("window_us")?,
                    cpus: r.u32("cpus")?,
                };
                Msg::PhaseResult(PhaseResult { id, channels, cpu })
            }
            11 => Msg::Error { message: r.str("message")? },
            _ => Msg::Bye,
        })
    }
}

fn bad(field: &'static str, v: u8) -> WireError {
    WireError { field, offset: 0, what: format!("unknown value {v}") }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::frame::{decode, encode};

    pub(crate) fn samples() -> Vec<Msg> {
        vec![
            Msg::Hello { client_version: "0.1.0".into(), client_nonce: [3; 16] },
            Msg::Challenge { server_nonce: [4; 16] },
            Msg::Auth { mac: [5; 32] },
            Msg::Welcome {
                server_version: "0.1.0".into(),
                server_mac: Some([6; 32]),
                host: HostFacts { hostname: "h".into(), kernel: "6".into(), cpu: "x".into(), cpus: 2, interface: Some("lo".into()), driver: None, speed_mbps: Some(10) },
            },
            Msg::Setup(Setup {
                transport: Transport::Udp,
                base: BaseCode::Crr,
                size: 64,
                response_size: 128,
                window: 8,
                channels: vec![ChanSetup { chan: 0, server_initiates: false }, ChanSetup { chan: 1, server_initiates: true }],
                sockbuf: 0,
            }),
            Msg::SetupOk(SetupOk { cookie: [7; 16], tcp_port: 9, udp_ports: vec![1, 2], unix_path: "/tmp/x".into() }),
            Msg::DataReady,
            Msg::Phase(Phase { id: 1, warmup: 2, iterations: 3, warmup_ps: 4, duration_ps: 5 }),
            Msg::PhaseEnd(PhaseEnd { id: 1, marks: vec![StreamMark { chan: 0, from: 1, to: 2 }] }),
            Msg::PhaseResult(PhaseResult {
                id: 1,
                channels: vec![
                    ChanResult { chan: 0, samples: ChanSamples::Latency(vec![1, 2, 3]), received: 0, error: String::new() },
                    ChanResult { chan: 1, samples: ChanSamples::Bandwidth { bytes: 1, elapsed_ps: 2, messages: 3 }, received: 9, error: "e".into() },
                    ChanResult { chan: 2, samples: ChanSamples::None, received: 0, error: String::new() },
                ],
                cpu: CpuWire { busy_ticks: 1, total_ticks: 2, process_us: 3, window_us: 4, cpus: 2 },
            }),
            Msg::Error { message: "boom".into() },
            Msg::Bye,
        ]
    }

    #[test]
    fn every_message_round_trips() {
        for m in samples() {
            let f = encode(&m);
            let (d, used) = decode(&f, 1 << 20).unwrap().unwrap();
            assert_eq!(d, m);
            assert_eq!(used, f.len());
            // Every proper prefix asks for more bytes; never a wrong message.
            for cut in 0..f.len() {
                assert_eq!(decode(&f[..cut], 1 << 20).unwrap(), None, "{} cut at {cut}", m.name());
            }
        }
    }

    #[test]
    fn trailing_and_bad_values_are_named() {
        let mut f = encode(&Msg::Bye);
        f[7] = 1;
        f.push(0);
        let e = decode(&f, 64).unwrap_err().to_string();
        assert!(e.contains("malformed Bye") && e.contains("trailing"), "{e}");
        let (_, mut p) = samples()[4].encode();
        p[0] = 9;
        let e = Msg::decode(5, &p).unwrap_err().to_string();
        assert!(e.contains("malformed Setup") && e.contains("transport"), "{e}");
    }
}

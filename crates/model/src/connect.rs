//! Connection set-up time of a socket stack, from the steps each protocol takes, every
//! message leg timed by the model itself.
//!
//! * TCP (over IPoIB or Ethernet): SYN and SYN-ACK, each a small segment through the whole
//!   stack (the model's one-way small-message socket latency) plus the handshake work at
//!   its receiver (request queue, socket creation); connect() returns when the SYN-ACK
//!   is processed.
//! * SDP (OFED SDP over the RDMA CM; docs/references.md [D1], [K12], [C1]): the peer's address by ARP over IPoIB (a round trip), a path
//!   record from the subnet administrator (a MAD round trip), then the CM exchange: REQ
//!   (the client created and initialised its QP first), REP (the server created its QP,
//!   moved it to INIT/RTR/RTS and registered its receive buffers), RTU (the client moved
//!   its QP to RTR/RTS and registered its buffers). MADs are 256-byte datagrams on QP1,
//!   each handled by the kernel CM; QP and memory operations are adapter firmware
//!   commands.

use crate::transport::packet::Service;
use crate::ulp::sock::{SockKind, SockStack};
use crate::scenario::{ModelError, Point, Scenario};
use interlab_patterns::{Op, PatternKind, PatternSpec};

/// Bytes of a management datagram (MAD).
pub const MAD_BYTES: u64 = 256;

/// Firmware commands on the critical path of an SDP connection: the client's QP create and
/// INIT before REQ; the server's create, INIT, RTR, RTS and buffer registration before
/// REP; the client's RTR, RTS and registration before RTU.
pub const SDP_CMDS: (u32, u32, u32) = (2, 5, 3);

/// One-way latency of a `bytes` message of `setup` changed to one pair over `sock` (or raw
/// `service`), us; adds the events simulated to `events`.
fn one_way(setup: &Scenario, sock: Option<SockStack>, service: Service, bytes: u64, events: &mut u64) -> Result<f64, ModelError> {
        let s = Scenario { sock, sock_mix: None, service, clients: 1, procs_per_node: 1, mpi: None, ..setup.clone() };
        let p = s.run(&PatternSpec { kind: PatternKind::Latency, op: Op::Send, size: bytes, window: 1, warmup: 2, iterations: 10 })?;
        *events += p.events;
        Ok(p.value)
    }

/// Time for a client to establish one connection of `setup`'s socket stack, us.
pub fn connect_time(setup: &Scenario) -> Result<Point, ModelError> {
        let stack = setup.sock.ok_or_else(|| ModelError("connection set-up time needs a socket stack (socket = ...)".into()))?;
        let st = setup.profile.stack.clone().ok_or_else(|| ModelError(format!("profile {} has no [stack] section", setup.profile.id)))?;
        let mut events = 0;
        let us = match stack.kind {
            SockKind::Sdp => {
                let ipoib = one_way(setup, Some(SockStack::ipoib_ud()), Service::Ud, 1, &mut events)?;
                let mad = one_way(setup, None, Service::Ud, MAD_BYTES, &mut events)? + st.mad_us;
                let (c0, s, c1) = SDP_CMDS;
                let arp = 2.0 * ipoib;
                let path = 2.0 * mad;
                let cm = c0 as f64 * st.hca_cmd_us + mad + s as f64 * st.hca_cmd_us + mad + c1 as f64 * st.hca_cmd_us + st.mad_us;
                arp + path + cm
            }
            _ => {
                let l = one_way(setup, Some(stack), stack.service(), 1, &mut events)?;
                2.0 * (l + st.tcp_handshake_us)
            }
        };
        Ok(Point { value: us, unit: "us", summary: None, events, sim_time_ps: 0, bytes_sent: 0, bytes_received: 0, server_cpu_percent: 0.0, server_busy_ps: 0, by_stack: vec![] })
    }

//! Validation of a scenario against a pattern point, before anything is built: every
//! combination the model cannot run gets an error that says why.

use super::{ModelError, Ports, Scenario, Topology};
use crate::fileio::FileStore;
use crate::transport::packet::Service;
use crate::ulp::sock::SockKind;
use interlab_patterns::{Op, PatternKind, PatternSpec};

/// Checks `s` at the pattern point `spec`.
pub(super) fn validate(s: &Scenario, spec: &PatternSpec) -> Result<(), ModelError> {
        if !matches!(
            spec.kind,
            PatternKind::Latency | PatternKind::Bandwidth | PatternKind::BiBandwidth | PatternKind::Pipelined | PatternKind::BiPipelined
        ) {
            return Err(ModelError(format!("the verbs model does not run the `{}` pattern yet", spec.kind.name())));
        }
        // Every MTU from the ports' links as the run builds them.
        let links = s.port_links();
        let port_mtu = |p: u8| links.get(p as usize).map_or(0, |l| l.mtu_bytes as u64);
        if let Some(stack) = s.sock {
            let Some(st) = &s.profile.stack else {
                return Err(ModelError(format!("profile {} has no [stack] section: it cannot model sockets", s.profile.id)));
            };
            for k in [Some(stack), s.sock_mix].into_iter().flatten() {
                k.check(&s.profile).map_err(ModelError)?;
            }
            if s.sock_mix.is_some() && s.procs_per_node < 2 {
                return Err(ModelError("two stacks at once need at least two process pairs (one per stack)".into()));
            }
            if s.ports != Ports::One {
                return Err(ModelError("socket stacks use one port each (ports = \"one\")".into()));
            }
            if s.mpi.is_some() {
                return Err(ModelError("a channel is either MPI or a socket, not both".into()));
            }
            if spec.op != Op::Send {
                return Err(ModelError(format!("sockets send messages (op send), not {}", spec.op.name())));
            }
            if !matches!(spec.kind, PatternKind::Latency | PatternKind::Bandwidth | PatternKind::BiBandwidth) {
                return Err(ModelError(format!("{} runs latency, bandwidth and bibw patterns", stack.name())));
            }
            let mtu = port_mtu(s.stack_port(stack));
            if stack.kind == SockKind::IpoibUd && st.ipoib_mtu_bytes + st.ipoib_header_bytes > mtu {
                return Err(ModelError(format!("IPoIB MTU {} exceeds the link MTU {mtu}", st.ipoib_mtu_bytes)));
            }
            if spec.size == 0 {
                return Err(ModelError("message size must be at least 1 byte".into()));
            }
            return Ok(());
        }
        if let Some(d) = s.mpi {
            if s.profile.mpi.is_none() {
                return Err(ModelError(format!("profile {} has no [mpi] section: it cannot model MPI", s.profile.id)));
            }
            if spec.op != Op::Send {
                return Err(ModelError(format!("MPI patterns send messages (op send), not {}", spec.op.name())));
            }
            if !matches!(spec.kind, PatternKind::Latency | PatternKind::Bandwidth | PatternKind::BiBandwidth) {
                return Err(ModelError(format!("MPI over {} runs latency, bandwidth and bibw patterns", d.name())));
            }
            if spec.size == 0 {
                return Err(ModelError("message size must be at least 1 byte".into()));
            }
            return Ok(());
        }
        if s.qps_per_port != 1 {
            return Err(ModelError("several QPs per port are used by MPI channels only (set mpi)".into()));
        }
        // A raw channel uses port 1, or any port when bound or striped.
        let mtu = match s.ports {
            Ports::One => port_mtu(0),
            Ports::Bind | Ports::Stripe { .. } => links.iter().map(|l| l.mtu_bytes as u64).min().unwrap_or(0),
        };
        match s.service {
            Service::Ud if spec.op != Op::Send => {
                return Err(ModelError(format!("UD carries only send/receive, not {}", spec.op.name())))
            }
            Service::Ud if spec.size > mtu => {
                return Err(ModelError(format!("UD messages are single packets: {} bytes exceeds the {mtu}-byte MTU", spec.size)))
            }
            Service::Uc if spec.op.is_request_response() => {
                return Err(ModelError(format!("UC has no {} (RC only)", spec.op.name())))
            }
            _ => {}
        }
        if spec.op.is_request_response() && matches!(spec.kind, PatternKind::BiBandwidth | PatternKind::Bandwidth) {
            return Err(ModelError(format!(
                "windowed bandwidth ends each window with a reply message; use the pipelined pattern for {}",
                spec.op.name()
            )));
        }
        if spec.size == 0 {
            return Err(ModelError("message size must be at least 1 byte".into()));
        }
        if s.procs_per_node == 0 {
            return Err(ModelError("at least one process per node".into()));
        }
        if s.clients == 0 {
            return Err(ModelError("at least one client node".into()));
        }
        if let Some(io) = &s.io {
            if io.servers == 0 {
                return Err(ModelError("at least one I/O server".into()));
            }
            if s.topology != Topology::Lan || s.mpi.is_some() || s.sock_mix.is_some() {
                return Err(ModelError("parallel file I/O runs on one switch over verbs or one socket stack".into()));
            }
            if !matches!(spec.kind, PatternKind::Bandwidth) {
                return Err(ModelError("parallel file I/O moves data in bandwidth rounds: use the bandwidth pattern".into()));
            }
            if s.profile.stack.is_none() && io.store == FileStore::Ram {
                return Err(ModelError(format!("profile {} has no [stack] section: a RAM file store copies at its rates", s.profile.id)));
            }
            if let FileStore::SyncDisk { mbytes_per_s } = io.store {
                if !(mbytes_per_s.is_finite() && mbytes_per_s > 0.0) {
                    return Err(ModelError(format!("disk rate must be a positive number of MB/s, found {mbytes_per_s}")));
                }
            }
        }
        if let Topology::Wan { miles } = s.topology {
            if s.clients > 1 {
                return Err(ModelError("a wide-area path joins two nodes: use one client".into()));
            }
            if s.profile.wan.is_none() {
                return Err(ModelError(format!("profile {} has no [wan] section: it cannot model a wide-area path", s.profile.id)));
            }
            if !(miles.is_finite() && miles >= 0.0) {
                return Err(ModelError(format!("distance must be a non-negative number of miles, found {miles}")));
            }
        }
        if let Ports::Stripe { .. } = s.ports {
            if s.profile.adapter.ports < 2 {
                return Err(ModelError(format!("striping needs two ports; profile {} has one", s.profile.id)));
            }
        }
        Ok(())
}

//! Upper-layer protocols over the verbs model: MPI (eager, rendezvous, multi-rail, and the
//! datagram- and UC-based designs with MPI-level reliability) and stream sockets (kernel
//! TCP/IP over IPoIB or Ethernet, and SDP) with the host CPU work under them.

pub mod connect;
pub mod mpi;
pub mod sdp;
pub mod sock;
pub mod stack_spec;
pub mod tcp;

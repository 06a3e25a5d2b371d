//! Upper-layer protocols over the verbs model: MPI (eager, rendezvous, multi-rail, and the
//! datagram- and UC-based designs with MPI-level reliability).

pub mod mpi;
pub mod sock;

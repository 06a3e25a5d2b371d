//! The interlab model: a discrete-event simulation of adapters, buses, links, switches and
//! transports, built on `interlab-kernel` and executing the shared patterns of
//! `interlab-patterns`.
//!
//! Layout mirrors the stack: [`hw`] (links, switch, buses, adapter and host parameters),
//! [`transport`] (headers, packets, queue pairs), [`adapter`] (engines, queue pairs, ports),
//! [`host`] (processes on cores, memory), [`ulp`] (MPI and sockets behind one trait),
//! [`node`] (host, adapter and protocols as one component), [`verbs`] (experiments over
//! nodes and switches), [`connect`] (connection set-up times).

pub mod adapter;
pub mod connect;
pub mod event;
pub mod fileio;
pub mod host;
pub mod hw;
pub use hw::bus;
pub mod node;
pub mod params;
pub mod profile;
pub mod transport;
pub mod ulp;
pub mod verbs;

pub use params::ParamError;
pub use profile::Profile;
pub use transport::packet::Service;
pub use ulp::mpi::MpiDesign;
pub use ulp::sock::SockStack;
pub use fileio::{FileServers, FileStore};
pub use verbs::{Initiator, ModelError, Point, Ports, Topology, VerbsSetup};

//! The interlab model: a discrete-event simulation of adapters, buses, links, switches and
//! transports, built on `interlab-kernel` and executing the shared patterns of
//! `interlab-patterns`.
//!
//! Layout mirrors the stack: [`hw`] (links, switch, buses, adapter and host parameters),
//! [`transport`] (headers, packets, queue pairs), [`adapter`] (engines, queue pairs, ports),
//! [`host`] (processes on cores, memory), [`ulp`] (MPI and sockets behind one trait),
//! [`node`] (host, adapter and protocols as one component), [`scenario`] (what a pattern
//! point runs on: validated, built into nodes and switches, run, reduced to a point),
//! [`connect`] (connection set-up times).

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
pub mod scenario;
pub mod ulp;

pub use params::ParamError;
pub use profile::Profile;
pub use transport::packet::Service;
pub use ulp::mpi::MpiDesign;
pub use ulp::sock::SockStack;
pub use fileio::{FileServers, FileStore};
pub use scenario::{Initiator, ModelError, Point, Ports, Scenario, Topology};

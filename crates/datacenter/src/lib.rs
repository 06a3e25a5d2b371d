//! interlab data center, live half: a three-tier TPC-W bookstore and its browser emulator.
//! (The model replay is crate `interlab-replay`; what both share is `interlab-tpcw`.)
//!
//! * [`tpcw`], [`trace`], [`wc98`]: re-exported from `interlab-tpcw`.
//! * [`db`]: SQLite / PostgreSQL storage, schema, the named queries and transactions.
//! * [`populate`]: deterministic population by the TPC-W scaling rules.
//! * [`dbtier`], [`apptier`], [`webtier`]: the three tiers; [`serve`] runs one or all.
//! * [`wire`]: TCP / Unix transport and the framed protocol between tiers; [`http`]: HTTP/1.1.
//! * [`pages`]: the HTML; [`image`]: the deterministic PNG images.
//! * [`rbe`]: the remote browser emulator (`drive`); [`htmlscan`]: what it reads from pages.
//!
//! Layout, protocols and the trace schema: docs/datacenter.md.

pub mod apptier;
pub mod cookies;
pub mod cpu;
pub mod db;
pub mod dbtier;
pub mod htmlscan;
pub mod http;
pub mod image;
pub mod pages;
pub mod populate;
pub mod profile;
pub mod rbe;
pub mod uri;
pub mod serve;
pub mod site;
pub mod strict;
pub mod webtier;
pub mod wire;

pub use interlab_tpcw::{tpcw, trace, wc98};
pub use interlab_tpcw::{Trace, TraceRecord};

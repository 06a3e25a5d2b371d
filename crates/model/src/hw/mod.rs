//! Hardware: links, the switch, host buses, adapters and host CPUs.

pub mod adapter_spec;
pub mod bus;
pub mod link;
pub mod switch;
pub mod switch_spec;

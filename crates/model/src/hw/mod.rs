//! Hardware: links, switches, host buses, adapters and host CPUs, wide-area extenders.

pub mod adapter_spec;
pub mod bus;
pub mod cqe;
pub mod cpu;
pub mod cycles;
pub mod doorbell;
pub mod eth_spec;
pub mod extender;
pub mod link;
pub mod memo;
pub mod memory;
pub mod switch;
pub mod switch_link;
pub mod switch_spec;
pub mod wan_hop;
pub mod wan_spec;
pub mod wire_queue;

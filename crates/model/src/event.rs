//! Messages between model components.

use crate::transport::packet::{MsgMeta, Packet};
use crate::transport::qp::{RespJob, Wr};
use crate::ulp::{UlpEv, UlpId};
use interlab_kernel::Time;
use interlab_patterns::Input;

/// Every message of the verbs model.
#[derive(Debug, Clone)]
pub enum Ev {
    /// Processes start their programs.
    Start,
    /// The last bit of `pkt` reached adapter port `port` of a node.
    PktAtNode { port: u8, pkt: Packet },
    /// The first bit of `pkt` reached switch input `in_port`; it takes `ser_ps` to arrive whole.
    PktAtSwitch { in_port: u16, ser_ps: Time, pkt: Packet },
    /// A process sees `input` (memory updated and noticed); `cqe` when it consumes a CQE.
    Notify { proc: u16, input: Input, cqe: bool },
    /// Something for upper-layer protocol `ulp` (an arrival, a local completion, a timer).
    Ulp { ulp: UlpId, ev: UlpEv },
    /// The CPU writes the doorbell (or BlueFlame WQE) of `wr`, `bytes` long, now: the write
    /// takes the bus when the CPU gets there, not when the post was computed.
    DoorbellWrite { qp: u32, wr: Wr, bytes: u64 },
    /// A doorbell write reached the adapter. Not scheduled when no event at all is due by
    /// then: the write's event takes the doorbell itself (`Adapter::merge_doorbells`).
    Doorbell { qp: u32, wr: Wr },
    /// The adapter has fetched the work request. Likewise taken in the doorbell's event
    /// when nothing is due by then (for BlueFlame: nothing else at that picosecond).
    WqeFetched { qp: u32, wr: Wr },
    /// A responder job is ready for the send engine.
    RespReady { qp: u32, job: RespJob },
    /// Prepared packets left their port: the engine may prepare more. `done`: the train
    /// ended an unacknowledged (UC/UD) request, which completes locally now (after the
    /// engine has looked for more work, as a second event at the same time would).
    TxSlot { packets: u32, done: Option<MsgMeta> },
    /// A train cut for adapter port `port` may be due to leave.
    Depart { port: u8 },
    /// Link-level flow control: the receiver of the link behind local port `port` has no
    /// buffer credit for new packets until `until` (picoseconds).
    Stall { port: u16, until: Time },
}

#[cfg(test)]
mod tests {
    /// The run loop copies every event into the queue and out again: at 128 bytes or less
    /// the copies compile to a few vector moves, above it to a `memmove` call per copy
    /// (about 5 % of a full reproduce; docs/performance.md). The kernel keeps the
    /// destination beside the payload, so this is the whole size that matters. Smaller by
    /// moving packets and work requests out of the event into slabs (one cache line, 56
    /// bytes) was measured and did not pay: the slab's slot misses the cache where the
    /// queue's did (docs/performance.md, "Event size").
    #[test]
    fn an_event_fits_in_128_bytes() {
        assert!(std::mem::size_of::<super::Ev>() <= 128, "Ev is {} bytes", std::mem::size_of::<super::Ev>());
    }
}

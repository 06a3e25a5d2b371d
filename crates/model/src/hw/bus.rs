//! Host I/O buses between the adapter and memory: PCI Express (full duplex, one pipe per
//! direction, TLP and DLLP overheads) and PCI-X (one half-duplex bus shared by both
//! directions and every port of the adapter, per-burst protocol cycles).
//!
//! Every transfer is charged on the pipe it crosses in first-come first-served order; the
//! caller gets the time the transfer has landed.

use crate::hw::link::LineCode;
use crate::params::{ParamError, Table};
use interlab_kernel::from_ns as ns;
use interlab_kernel::Time;

/// A serial resource. A transfer takes the earliest idle gap long enough for it at or
/// after the time it is ready, so a transfer waiting on memory latency (a split read
/// completion) does not block others from using the idle bus meanwhile.
///
/// The last booked interval is kept apart from the ones before it (`last`, beside the
/// struct's other fields): nearly every transfer is booked against it alone (after it or
/// inside it), and nearly every event finds nothing ended, so neither touches the list.
#[derive(Debug, Clone, Default)]
pub struct Pipe {
    /// The last booked busy interval `[start, end)`; `(0, 0)` when none is booked (every
    /// booked interval ends after 0).
    last: (Time, Time),
    /// End of the first booked interval (the first of `earlier`, else `last`), `Time::MAX`
    /// when none is: the next time [`Pipe::advance`] has something to forget.
    first_end: Time,
    /// Picoseconds per wire byte.
    ps_per_byte: f64,
    /// Total wire bytes carried.
    pub wire_bytes: u64,
    /// Booked busy intervals before `last`, sorted, disjoint, merged when touching (and
    /// none touches `last`).
    earlier: std::collections::VecDeque<(Time, Time)>,
    /// Four transfer sizes seen lately, `(wire_bytes, duration_ps)`, replaced in turn
    /// (`next_duration` is the next to go): a pipe carries few distinct sizes (requests,
    /// payload TLPs, completion entries), and the duration is a pure function of the size,
    /// so a hit gives exactly what the conversion gives. `(0, 0)` is true of every pipe (no
    /// bytes take no time).
    durations: [(u64, Time); 4],
    next_duration: usize,
}

impl Pipe {
    /// An idle pipe carrying `mbytes_per_s` MB/s.
    pub fn new(mbytes_per_s: f64) -> Self {
        Pipe { ps_per_byte: 1e6 / mbytes_per_s, first_end: Time::MAX, ..Default::default() }
    }

    /// Forgets intervals that ended by `now` (callers never ask for earlier times). Called
    /// before every event of the node: one compare unless an interval has ended.
    #[inline]
    pub fn advance(&mut self, now: Time) {
        if self.first_end <= now {
            if self.earlier.is_empty() {
                // The first interval is the last one: everything has ended.
                self.last = (0, 0);
                self.first_end = Time::MAX;
            } else {
                self.forget(now);
            }
        }
    }

    /// [`Pipe::advance`] when an interval before the last one has ended.
    #[inline(never)]
    fn forget(&mut self, now: Time) {
        while self.earlier.front().is_some_and(|&(_, e)| e <= now) {
            self.earlier.pop_front();
        }
        if self.earlier.is_empty() && self.last.1 <= now {
            self.last = (0, 0);
        }
        self.first_end = self.first_end();
    }

    /// End of the first booked interval, `Time::MAX` if none is.
    fn first_end(&self) -> Time {
        match self.earlier.front() {
            Some(&(_, e)) => e,
            None if self.last.1 != 0 => self.last.1,
            None => Time::MAX,
        }
    }

    /// True when nothing is reserved at or after `t`.
    #[inline]
    pub fn idle_from(&self, t: Time) -> bool {
        self.last.1 <= t
    }

    /// Picoseconds `wire_bytes` occupy the pipe (rounded up).
    #[cfg(test)]
    fn duration_ps(&mut self, wire_bytes: u64) -> Time {
        match self.durations.iter().find(|d| d.0 == wire_bytes) {
            Some(&(_, dur)) => dur,
            None => self.convert(wire_bytes),
        }
    }

    /// The duration of a size not remembered: converted, and remembered.
    fn convert(&mut self, wire_bytes: u64) -> Time {
        let dur = (wire_bytes as f64 * self.ps_per_byte).ceil() as Time;
        self.durations[self.next_duration] = (wire_bytes, dur);
        self.next_duration = (self.next_duration + 1) % self.durations.len();
        dur
    }

    /// Occupies the pipe for `wire_bytes` starting no earlier than `ready`; returns the end.
    /// The common cases (a remembered size booked after or inside the last interval) are
    /// inlined into the caller and hold nothing across a call: the rest are calls of their
    /// own, taken last, so that the common cases pay no register saves or stack frame.
    #[inline]
    pub fn reserve(&mut self, ready: Time, wire_bytes: u64) -> Time {
        match self.durations.iter().find(|d| d.0 == wire_bytes) {
            Some(&(_, dur)) => self.book(ready, wire_bytes, dur),
            None => self.reserve_new_size(ready, wire_bytes),
        }
    }

    /// [`Pipe::reserve`] of a size not remembered.
    #[inline(never)]
    fn reserve_new_size(&mut self, ready: Time, wire_bytes: u64) -> Time {
        let dur = self.convert(wire_bytes);
        self.book(ready, wire_bytes, dur)
    }

    /// Books `dur` picoseconds (`wire_bytes`) from `ready` on.
    #[inline(always)]
    fn book(&mut self, ready: Time, wire_bytes: u64, dur: Time) -> Time {
        self.wire_bytes += wire_bytes;
        if dur == 0 {
            return ready;
        }
        let (start, end) = self.last;
        if end <= ready {
            // The common case: the pipe is idle from `ready` on. The transfer goes last,
            // merged with the last interval if it touches it.
            if end == ready || end == 0 {
                // Touching it, or none is booked (then `end` is 0 and so is `start`, unless
                // `ready` is 0 too, when the transfer still starts at 0).
                self.last = (if end == ready { start } else { ready }, ready + dur);
                // The last interval is the first too (nothing before it ends as late as it
                // does), or none was booked.
                if self.first_end >= end {
                    self.first_end = ready + dur;
                }
                return ready + dur;
            }
            return self.book_after_gap(ready, dur);
        }
        if start <= ready {
            // The next most common case (a busy pipe): `ready` falls in the last interval.
            // Every earlier interval ends by its start, so no gap is left before its end:
            // the transfer follows it, merged (what the search below finds too).
            self.last.1 = end + dur;
            if self.first_end == end {
                self.first_end = end + dur;
            }
            return end + dur;
        }
        self.reserve_in_gap(ready, dur)
    }

    /// [`Pipe::book`] from `ready`, after the last interval and not touching it: that one
    /// joins the list before it (the first booked interval stays the first).
    #[inline(never)]
    fn book_after_gap(&mut self, ready: Time, dur: Time) -> Time {
        self.earlier.push_back(self.last);
        self.last = (ready, ready + dur);
        ready + dur
    }

    /// Index of the first interval of `busy` that ends after `t` (all of them end after
    /// the ones before it). Callers mostly ask about times near the front (`advance` drops
    /// what ended), so the search gallops from the front: probes 0, 1, 3, 7, ... then
    /// bisects the last step; the same index a binary search over the whole list gives.
    #[inline]
    fn first_ending_after(busy: &std::collections::VecDeque<(Time, Time)>, t: Time) -> usize {
        let n = busy.len();
        // Invariant: every interval before `lo` ends by `t`.
        let mut lo = 0;
        let mut step = 1;
        let mut hi = loop {
            let probe = lo + step - 1;
            if probe >= n {
                break n;
            }
            if busy[probe].1 > t {
                break probe;
            }
            lo = probe + 1;
            step *= 2;
        };
        // The answer lies in lo..=hi: bisect.
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if busy[mid].1 > t {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        lo
    }

    /// [`Pipe::reserve`] of `dur > 0` picoseconds when `ready` falls before the last booked
    /// interval: the first gap long enough at or after `ready`. Searches every booked
    /// interval, `last` put back behind the others for the search.
    #[inline(never)]
    fn reserve_in_gap(&mut self, ready: Time, dur: Time) -> Time {
        let busy = &mut self.earlier;
        busy.push_back(self.last);
        let n = busy.len();
        // Find the first gap of `dur` at or after `ready`.
        // Intervals are sorted and disjoint, so their ends are sorted too: skip every one
        // that ends by `ready` with a galloping search (callers may reserve far ahead).
        let mut start = ready;
        let first = Self::first_ending_after(busy, start);
        // Walk the ring's two contiguous halves as plain slices (no wrap arithmetic per step).
        let mut idx = n;
        let (front, back) = busy.as_slices();
        let (skip_front, skip_back) = (first.min(front.len()), first.saturating_sub(front.len()));
        'search: for (offset, half, skip) in [(0, front, skip_front), (front.len(), back, skip_back)] {
            for (i, &(s, e)) in half.iter().enumerate().skip(skip) {
                if s >= start + dur {
                    idx = offset + i;
                    break 'search;
                }
                start = start.max(e);
            }
        }
        let end = start + dur;
        // Insert at idx, merging with touching neighbours.
        let merge_prev = idx > 0 && busy[idx - 1].1 == start;
        let merge_next = idx < busy.len() && busy[idx].0 == end;
        match (merge_prev, merge_next) {
            (true, true) => {
                let next_end = busy[idx].1;
                busy[idx - 1].1 = next_end;
                busy.remove(idx);
            }
            (true, false) => busy[idx - 1].1 = end,
            (false, true) => busy[idx].0 = start,
            (false, false) => busy.insert(idx, (start, end)),
        }
        self.last = busy.pop_back().expect("the last interval was put back");
        self.first_end = self.first_end();
        end
    }
}

/// PCI Express link parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct PcieSpec {
    /// Transfer rate per lane, GT/s.
    pub gts: f64,
    /// Lanes.
    pub lanes: u32,
    /// Line code.
    pub code: LineCode,
    /// Max Payload Size of a write TLP, bytes.
    pub max_payload_bytes: u64,
    /// Max Read Request Size, bytes.
    pub max_read_request_bytes: u64,
    /// Read Completion Boundary: completions carry at most this many bytes each.
    pub read_completion_bytes: u64,
    /// TLP header, bytes (12 for 32-bit addresses and completions, 16 for 64-bit).
    pub tlp_header_bytes: u64,
    /// Per-TLP data-link and physical bytes (sequence 2 + LCRC 4 + framing 2).
    pub tlp_framing_bytes: u64,
    /// Share of each direction taken by DLLPs (Ack, UpdateFC) and SKP ordered sets; with
    /// `reverse_dllp_bytes` set, only what is not charged per TLP (SKP ordered sets).
    pub dllp_fraction: f64,
    /// Wire bytes of one DLLP (6 + 2 framing) sent back per TLP received: each TLP crossing
    /// one direction costs the other direction an Ack, and a write or read request (posted
    /// or non-posted) also an UpdateFC returning its credits; a completion none (the
    /// adapter advertises infinite completion credits). 0 = DLLPs only in `dllp_fraction`.
    pub reverse_dllp_bytes: u64,
    /// Memory read latency seen by the device beyond transfer times, ns.
    pub read_latency_ns: f64,
    /// Time from a posted write leaving the link to it landing (memory or device), ns.
    pub posted_latency_ns: f64,
}

/// PCI-X bus parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct PcixSpec {
    /// Bus clock, MHz.
    pub clock_mhz: f64,
    /// Data width, bytes per cycle.
    pub width_bytes: u64,
    /// Longest burst before a disconnect (allowable disconnect boundary), bytes.
    pub burst_bytes: u64,
    /// Protocol cycles per transaction/burst (address, attribute, response, turnaround).
    pub overhead_cycles: u64,
    /// Memory read latency beyond transfer times (split completion), ns.
    pub read_latency_ns: f64,
    /// Time from a posted write leaving the bus to it landing, ns.
    pub posted_latency_ns: f64,
    /// Largest read the device asks for in one split request (the PCI-X command register's
    /// Maximum Memory Read Byte Count), bytes; its split completion crosses the bus as one
    /// sequence (one set of protocol cycles). Optional: absent = `burst_bytes`.
    pub read_request_bytes: u64,
}

/// A host bus.
#[derive(Debug, Clone, PartialEq)]
pub enum BusSpec {
    Pcie(PcieSpec),
    Pcix(PcixSpec),
}

impl BusSpec {
    /// Reads `[bus]`.
    pub fn from_table(t: &mut Table) -> Result<Self, ParamError> {
        let kind = t.choice("kind", &["pcie", "pcix"], None)?;
        if kind == "pcie" {
            let s = PcieSpec {
                gts: t.param("gts", "GT/s")?,
                lanes: t.param_u64("lanes", "lanes", 1)? as u32,
                code: LineCode::parse(t, "line_code")?,
                max_payload_bytes: t.param_u64("max_payload_bytes", "bytes", 64)?,
                max_read_request_bytes: t.param_u64("max_read_request_bytes", "bytes", 64)?,
                read_completion_bytes: t.param_u64("read_completion_bytes", "bytes", 32)?,
                tlp_header_bytes: t.param_u64("tlp_header_bytes", "bytes", 12)?,
                tlp_framing_bytes: t.param_u64("tlp_framing_bytes", "bytes", 0)?,
                dllp_fraction: t.param("dllp_fraction", "fraction")?,
                reverse_dllp_bytes: t.opt_param_u64("reverse_dllp_bytes", "bytes", 0)?.unwrap_or(0),
                read_latency_ns: t.param("read_latency_ns", "ns")?,
                posted_latency_ns: t.param("posted_latency_ns", "ns")?,
            };
            if s.dllp_fraction >= 0.5 {
                return Err(t.err("dllp_fraction", "expected a fraction below 0.5"));
            }
            Ok(BusSpec::Pcie(s))
        } else {
            let burst_bytes = t.param_u64("burst_bytes", "bytes", 8)?;
            Ok(BusSpec::Pcix(PcixSpec {
                clock_mhz: t.param("clock_mhz", "MHz")?,
                width_bytes: t.param_u64("width_bytes", "bytes", 1)?,
                burst_bytes,
                overhead_cycles: t.param_u64("overhead_cycles", "cycles", 0)?,
                read_latency_ns: t.param("read_latency_ns", "ns")?,
                posted_latency_ns: t.param("posted_latency_ns", "ns")?,
                read_request_bytes: t.opt_param_u64("read_request_bytes", "bytes", 8)?.unwrap_or(burst_bytes),
            }))
        }
    }

    /// Peak data rate per direction before protocol overheads, MB/s.
    pub fn raw_mbytes_per_s(&self) -> f64 {
        match self {
            BusSpec::Pcie(p) => p.gts * 1000.0 * p.lanes as f64 * p.code.efficiency() / 8.0,
            BusSpec::Pcix(x) => x.clock_mhz * x.width_bytes as f64,
        }
    }
}

/// A divisor fixed at build, divided by with a shift when it is a power of two (every
/// profile's payload, read request and completion sizes): the same quotient without a
/// 64-bit division per transfer.
#[derive(Debug, Clone, Copy)]
struct Divisor {
    d: u64,
    /// `log2(d)` when `d` is a power of two, else `u32::MAX`.
    shift: u32,
}

impl Divisor {
    fn new(d: u64) -> Self {
        Divisor { d, shift: if d.is_power_of_two() { d.trailing_zeros() } else { u32::MAX } }
    }

    /// `x.div_ceil(d)`.
    #[inline]
    fn div_ceil(self, x: u64) -> u64 {
        if self.shift != u32::MAX {
            (x >> self.shift) + (x & (self.d - 1) != 0) as u64
        } else {
            x.div_ceil(self.d)
        }
    }
}

/// What a transfer costs on a bus, from its spec, computed once.
#[derive(Debug, Clone, Copy)]
enum Costs {
    Pcie {
        /// Max Payload Size, Max Read Request Size, Read Completion Boundary.
        mps: Divisor,
        mrrs: Divisor,
        rcb: Divisor,
        /// Bytes a request or write TLP adds (header and framing), and a completion (a
        /// 3-DW header and framing).
        tlp_bytes: u64,
        cpl_bytes: u64,
        /// `reverse_dllp_bytes`.
        dllp: u64,
    },
    Pcix {
        width_bytes: u64,
        /// Protocol cycles per burst, in bytes (`overhead_cycles * width_bytes`).
        overhead_bytes: u64,
        burst: Divisor,
        read_request: Divisor,
        width: Divisor,
    },
}

/// The state of one host bus.
#[derive(Debug, Clone)]
pub struct Bus {
    /// Device-to-host direction (PCIe) or the whole bus (PCI-X).
    pub up: Pipe,
    /// Host-to-device direction (PCIe only; unused for PCI-X).
    pub down: Pipe,
    /// The spec's `posted_latency_ns` and `read_latency_ns` in picoseconds, converted once
    /// (the same integers a conversion per transfer gives).
    posted_ps: Time,
    read_ps: Time,
    /// PCIe: DLLP bytes (`reverse_dllp_bytes`) each direction owes for TLPs that crossed
    /// the other one; they go out with its next transfer (a DLLP waits for the TLP being
    /// sent, then goes between TLPs), or in idle time if the direction is idle by then.
    owed_up: u64,
    owed_down: u64,
    costs: Costs,
    spec: BusSpec,
}

impl Bus {
    /// An idle bus.
    pub fn new(spec: &BusSpec) -> Self {
        let (up, down) = match spec {
            BusSpec::Pcie(p) => {
                let r = spec.raw_mbytes_per_s() * (1.0 - p.dllp_fraction);
                (Pipe::new(r), Pipe::new(r))
            }
            // PCI-X: the pipe is charged in bus cycles expressed as bytes at the raw rate.
            BusSpec::Pcix(_) => (Pipe::new(spec.raw_mbytes_per_s()), Pipe::new(spec.raw_mbytes_per_s())),
        };
        let (posted_ps, read_ps) = match spec {
            BusSpec::Pcie(p) => (ns(p.posted_latency_ns), ns(p.read_latency_ns)),
            BusSpec::Pcix(x) => (ns(x.posted_latency_ns), ns(x.read_latency_ns)),
        };
        let costs = match spec {
            BusSpec::Pcie(p) => Costs::Pcie {
                mps: Divisor::new(p.max_payload_bytes),
                mrrs: Divisor::new(p.max_read_request_bytes),
                rcb: Divisor::new(p.read_completion_bytes),
                tlp_bytes: p.tlp_header_bytes + p.tlp_framing_bytes,
                cpl_bytes: 12 + p.tlp_framing_bytes,
                dllp: p.reverse_dllp_bytes,
            },
            BusSpec::Pcix(x) => Costs::Pcix {
                width_bytes: x.width_bytes,
                overhead_bytes: x.overhead_cycles * x.width_bytes,
                burst: Divisor::new(x.burst_bytes),
                read_request: Divisor::new(x.read_request_bytes),
                width: Divisor::new(x.width_bytes),
            },
        };
        Bus { up, down, posted_ps, read_ps, owed_up: 0, owed_down: 0, costs, spec: spec.clone() }
    }

    /// Forgets reservations that ended by `now`.
    #[inline]
    pub fn advance(&mut self, now: Time) {
        self.up.advance(now);
        self.down.advance(now);
    }

    /// The bus parameters.
    pub fn spec(&self) -> &BusSpec {
        &self.spec
    }

    /// PCIe: a transfer of `wire` bytes on `pipe` from `ready`, carrying the DLLPs the
    /// direction owes unless it is idle at `ready` (they went out in the idle time).
    #[inline]
    fn send(pipe: &mut Pipe, owed: &mut u64, ready: Time, wire: u64) -> Time {
        let dllps = std::mem::take(owed);
        pipe.reserve(ready, if pipe.idle_from(ready) { wire } else { wire + dllps })
    }

    /// PCI-X: wire-byte equivalent of `bytes` moved in sequences of at most `burst` bytes
    /// (data cycles plus protocol cycles).
    #[inline]
    fn pcix_bursts(width_bytes: u64, overhead_bytes: u64, width: Divisor, burst: Divisor, bytes: u64) -> u64 {
        let bursts = burst.div_ceil(bytes).max(1);
        width.div_ceil(bytes) * width_bytes + bursts * overhead_bytes
    }

    /// The CPU writes `bytes` to the device (doorbell, inline WQE): returns arrival at the device.
    pub fn mmio_write(&mut self, now: Time, bytes: u64) -> Time {
        match self.costs {
            Costs::Pcie { tlp_bytes, dllp, .. } => {
                let wire = bytes.div_ceil(4) * 4 + tlp_bytes;
                let end = Self::send(&mut self.down, &mut self.owed_down, now, wire);
                self.owed_up += 2 * dllp;
                end + self.posted_ps
            }
            Costs::Pcix { width_bytes, overhead_bytes, burst, width, .. } => {
                let end = self.up.reserve(now, Self::pcix_bursts(width_bytes, overhead_bytes, width, burst, bytes));
                end + self.posted_ps
            }
        }
    }

    /// The device writes `bytes` to host memory starting at `now`: returns when they are
    /// visible to the CPU.
    pub fn dma_write(&mut self, now: Time, bytes: u64) -> Time {
        match self.costs {
            Costs::Pcie { mps, tlp_bytes, dllp, .. } => {
                let tlps = mps.div_ceil(bytes).max(1);
                let end = Self::send(&mut self.up, &mut self.owed_up, now, bytes + tlps * tlp_bytes);
                self.owed_down += tlps * 2 * dllp;
                end + self.posted_ps
            }
            Costs::Pcix { width_bytes, overhead_bytes, burst, width, .. } => {
                let end = self.up.reserve(now, Self::pcix_bursts(width_bytes, overhead_bytes, width, burst, bytes));
                end + self.posted_ps
            }
        }
    }

    /// The device writes `bytes` right behind an earlier write that became visible at
    /// `visible` (a completion entry behind its data): posted writes keep their order on the
    /// link, so this one queues behind the earlier one's last TLP and is visible its own
    /// transfer time later, not a second posted latency later.
    pub fn dma_write_behind(&mut self, visible: Time, bytes: u64) -> Time {
        self.dma_write(visible.saturating_sub(self.posted_ps), bytes)
    }

    /// The device reads `bytes` from host memory, asking at `now`: returns when the last
    /// byte has arrived at the device.
    pub fn dma_read(&mut self, now: Time, bytes: u64) -> Time {
        match self.costs {
            Costs::Pcie { mrrs, rcb, tlp_bytes, cpl_bytes, dllp, .. } => {
                let reqs = mrrs.div_ceil(bytes).max(1);
                let req_end = Self::send(&mut self.up, &mut self.owed_up, now, reqs * tlp_bytes);
                self.owed_down += reqs * 2 * dllp;
                let cpls = rcb.div_ceil(bytes).max(1);
                // Completions carry a 3-DW header.
                let end = Self::send(&mut self.down, &mut self.owed_down, req_end + self.read_ps, bytes + cpls * cpl_bytes);
                self.owed_up += cpls * dllp;
                end
            }
            Costs::Pcix { width_bytes, overhead_bytes, width, read_request, .. } => {
                // Split transactions: a request per read byte count (protocol cycles only),
                // then one split completion per request.
                let reqs = read_request.div_ceil(bytes).max(1);
                let req_end = self.up.reserve(now, reqs * overhead_bytes);
                self.up.reserve(req_end + self.read_ps, Self::pcix_bursts(width_bytes, overhead_bytes, width, read_request, bytes))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pcie() -> BusSpec {
        BusSpec::Pcie(PcieSpec {
            gts: 2.5,
            lanes: 8,
            code: LineCode::B8B10,
            max_payload_bytes: 128,
            max_read_request_bytes: 512,
            read_completion_bytes: 64,
            tlp_header_bytes: 12,
            tlp_framing_bytes: 8,
            dllp_fraction: 0.0,
            reverse_dllp_bytes: 0,
            read_latency_ns: 500.0,
            posted_latency_ns: 200.0,
        })
    }

    fn pcix() -> BusSpec {
        BusSpec::Pcix(PcixSpec { clock_mhz: 133.333, width_bytes: 8, burst_bytes: 128, overhead_cycles: 6, read_latency_ns: 800.0, posted_latency_ns: 300.0, read_request_bytes: 128 })
    }

    #[test]
    fn pcie_gen1_x8_is_2000_mbytes() {
        assert_eq!(pcie().raw_mbytes_per_s(), 2000.0);
    }

    #[test]
    fn pcie_directions_are_independent() {
        let mut b = Bus::new(&pcie());
        let w = b.dma_write(0, 1 << 20);
        let mut c = Bus::new(&pcie());
        let r0 = c.dma_read(0, 1 << 20);
        let w2 = c.dma_write(0, 1 << 20);
        // A write alongside a read (other direction, bar the small requests) barely slows.
        // The read requests (20 B per 512 B read) share the write direction: a few percent.
        assert!(w2 <= w + w / 20, "{w2} vs {w}");
        assert!(r0 > 0);
    }

    #[test]
    fn pcie_dllps_for_one_direction_go_out_with_the_other_directions_next_transfer() {
        let spec = |dllp: u64| match pcie() {
            BusSpec::Pcie(p) => BusSpec::Pcie(PcieSpec { reverse_dllp_bytes: dllp, ..p }),
            x => x,
        };
        // A read keeps the host-to-device direction busy; writes under way meanwhile owe it
        // an Ack and an UpdateFC per TLP, which lengthen its next transfer.
        let (mut a, mut b) = (Bus::new(&spec(0)), Bus::new(&spec(8)));
        for bus in [&mut a, &mut b] {
            bus.dma_read(0, 1 << 16);
            bus.dma_write(0, 1024);
        }
        let (ra, rb) = (a.dma_read(0, 1 << 16), b.dma_read(0, 1 << 16));
        assert_eq!(b.down.wire_bytes - a.down.wire_bytes, 8 * 2 * 8 + 128 * 2 * 8, "8 write TLPs, 128 read requests");
        assert!(rb > ra);
        // An idle direction sends what it owes in its idle time.
        let mut c = Bus::new(&spec(8));
        c.dma_write(0, 1024);
        let mut d = Bus::new(&spec(0));
        d.dma_write(0, 1024);
        assert_eq!(c.dma_read(1_000_000, 64), d.dma_read(1_000_000, 64));
    }

    #[test]
    fn pcix_directions_share_one_bus() {
        let mut b = Bus::new(&pcix());
        let w = b.dma_write(0, 1 << 20);
        let mut c = Bus::new(&pcix());
        c.dma_read(0, 1 << 20);
        let w2 = c.dma_write(0, 1 << 20);
        assert!(w2 > w * 19 / 10, "{w2} vs {w}");
    }

    impl Pipe {
        /// Every booked interval, in order.
        fn intervals(&self) -> Vec<(Time, Time)> {
            let mut v: Vec<_> = self.earlier.iter().copied().collect();
            if self.last.1 != 0 {
                v.push(self.last);
            }
            v
        }
    }

    #[test]
    fn pipe_fills_gaps_and_never_overlaps() {
        let mut p = Pipe::new(1000.0); // 1 ns per byte
        assert_eq!(p.reserve(10_000, 10), 20_000);
        assert_eq!(p.reserve(0, 5), 5_000); // fits before
        assert_eq!(p.reserve(0, 10), 30_000); // does not fit in [5,10): goes after 20
        assert_eq!(p.reserve(5_000, 5), 10_000); // exactly fills [5,10) and merges
        assert_eq!(p.intervals(), vec![(0, 30_000)]);
        p.advance(30_000);
        assert!(p.intervals().is_empty());
        assert_eq!(p.first_end, Time::MAX);
    }

    #[test]
    fn gallop_finds_what_a_binary_search_finds() {
        let mut busy = std::collections::VecDeque::new();
        // Disjoint intervals with gaps, some wrapped around the ring's end.
        for k in 0..40u64 {
            busy.push_back((k * 100, k * 100 + 50));
        }
        for _ in 0..13 {
            busy.pop_front();
        }
        for k in 40..50u64 {
            busy.push_back((k * 100, k * 100 + 50));
        }
        for t in 0..5_200 {
            assert_eq!(Pipe::first_ending_after(&busy, t), busy.partition_point(|&(_, e)| e <= t), "t = {t}");
        }
        busy.clear();
        assert_eq!(Pipe::first_ending_after(&busy, 7), 0);
    }

    #[test]
    fn a_transfer_ready_inside_the_last_interval_follows_it() {
        let mut p = Pipe::new(1000.0); // 1 ns per byte
        assert_eq!(p.reserve(0, 10), 10_000);
        assert_eq!(p.reserve(20_000, 10), 30_000);
        assert_eq!(p.reserve(25_000, 5), 35_000); // inside [20, 30): after it, merged
        assert_eq!(p.intervals(), vec![(0, 10_000), (20_000, 35_000)]);
        assert_eq!(p.reserve(5_000, 5), 15_000); // before it: the gap [10, 20) still fills
        assert_eq!(p.intervals(), vec![(0, 15_000), (20_000, 35_000)]);
    }

    /// The pipe as it was before its last interval was kept apart: one sorted list of
    /// every booked interval, searched for the first gap from `ready` on.
    struct ListPipe {
        busy: std::collections::VecDeque<(Time, Time)>,
    }

    impl ListPipe {
        fn advance(&mut self, now: Time) {
            while self.busy.front().is_some_and(|&(_, e)| e <= now) {
                self.busy.pop_front();
            }
        }

        fn idle_from(&self, t: Time) -> bool {
            self.busy.back().is_none_or(|&(_, e)| e <= t)
        }

        fn reserve(&mut self, ready: Time, dur: Time) -> Time {
            if dur == 0 {
                return ready;
            }
            let mut start = ready;
            let mut idx = self.busy.len();
            for (i, &(s, e)) in self.busy.iter().enumerate() {
                if e <= start {
                    continue;
                }
                if s >= start + dur {
                    idx = i;
                    break;
                }
                start = start.max(e);
            }
            let end = start + dur;
            let merge_prev = idx > 0 && self.busy[idx - 1].1 == start;
            let merge_next = idx < self.busy.len() && self.busy[idx].0 == end;
            match (merge_prev, merge_next) {
                (true, true) => {
                    self.busy[idx - 1].1 = self.busy[idx].1;
                    self.busy.remove(idx);
                }
                (true, false) => self.busy[idx - 1].1 = end,
                (false, true) => self.busy[idx].0 = start,
                (false, false) => self.busy.insert(idx, (start, end)),
            }
            end
        }
    }

    /// On random sequences of bookings (ready before, inside and after what is booked, on
    /// an interval's edge or not, sizes that fill gaps exactly or not) and of the node's
    /// time moving on, the pipe books the intervals a search of the whole list books, and
    /// answers `idle_from` alike.
    #[test]
    fn the_pipe_books_what_a_search_of_every_interval_books() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut rand = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let (mut gap_searches, mut bookings) = (0, 0);
        for _ in 0..300 {
            let mut p = Pipe::new(1000.0); // 1 ns per byte: `dur` = bytes * 1000
            let mut r = ListPipe { busy: Default::default() };
            let mut now = 0;
            for _ in 0..rand(400) {
                let (a, b) = (rand(40), rand(12));
                match rand(8) {
                    0 => {
                        now += a * 1000;
                        p.advance(now);
                        r.advance(now);
                    }
                    op => {
                        let back = r.busy.back().map_or(now, |&(_, e)| e);
                        let ready = match op {
                            1 => back,
                            2 => r.busy.get(a as usize % r.busy.len().max(1)).map_or(now, |&(s, e)| if b % 2 == 0 { s } else { e }).max(now),
                            _ => now + a * 500,
                        };
                        bookings += 1;
                        if p.last.1 != 0 && ready < p.last.0 && b > 0 {
                            gap_searches += 1;
                        }
                        assert_eq!(p.idle_from(ready), r.idle_from(ready));
                        assert_eq!(p.reserve(ready, b), r.reserve(ready, b * 1000), "ready {ready}, {b} bytes");
                    }
                }
                assert_eq!(p.intervals(), r.busy.iter().copied().collect::<Vec<_>>());
                assert_eq!(p.first_end, r.busy.front().map_or(Time::MAX, |&(_, e)| e));
            }
        }
        // Every path was taken: most bookings go last, some search for a gap.
        assert!(gap_searches > bookings / 50, "{gap_searches} gap searches in {bookings} bookings");
    }

    #[test]
    fn random_bookings_search_for_gaps() {
        // The property test above reaches the gap search: a fixed sequence that does.
        let mut p = Pipe::new(1000.0);
        p.reserve(0, 10);
        p.reserve(30_000, 10);
        p.reserve(60_000, 10);
        assert_eq!(p.reserve(5_000, 10), 20_000); // the gap [10, 30)
        assert_eq!(p.reserve(5_000, 25), 95_000); // no gap of 25 before [60, 70): after it
        assert_eq!(p.intervals(), vec![(0, 20_000), (30_000, 40_000), (60_000, 95_000)]);
        assert_eq!(p.first_end, 20_000);
    }

    #[test]
    fn a_divisor_divides_as_div_ceil_does() {
        for d in [1u64, 2, 3, 8, 12, 64, 100, 128, 512, 4096] {
            let div = Divisor::new(d);
            assert_eq!(div.shift != u32::MAX, d.is_power_of_two());
            for x in (0..5000).chain([u64::MAX - 1, u64::MAX]) {
                assert_eq!(div.div_ceil(x), x.div_ceil(d), "{x} / {d}");
            }
        }
    }

    #[test]
    fn remembered_durations_equal_computed_ones() {
        let mut p = Pipe::new(2000.0 * 0.96);
        for bytes in [0u64, 1, 84, 84, 532, 84, 532, 20, 2048, 84, 0, 3, 3, 7, 9, 11, 84, 20, 13] {
            assert_eq!(p.duration_ps(bytes), (bytes as f64 * p.ps_per_byte).ceil() as Time, "{bytes} bytes");
        }
    }

    #[test]
    fn pcix_large_transfer_efficiency() {
        let mut b = Bus::new(&pcix());
        let bytes = 1u64 << 20;
        let end = b.dma_write(0, bytes) - 300_000;
        let mbs = bytes as f64 / (end as f64 / 1e6);
        // 128-byte bursts of 16 data cycles plus 6 protocol cycles: 16/22 of 1066.7 MB/s.
        assert!((mbs - 1066.66 * 16.0 / 22.0).abs() < 2.0, "{mbs}");
    }
}

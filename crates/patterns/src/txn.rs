//! Transaction patterns (netperf `TCP_CC`, `TCP_CRR`, `TCP_RR`): connection set-up time,
//! connect/request/response/close, and request/response on a persistent connection with
//! request and response sizes of their own. Sans-IO like [`crate::Program`]; the engine turns
//! [`TxnOutput`]s into connect, send and close calls and reports [`TxnInput`]s back.

use crate::Samples;

/// Which transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TxnKind {
    /// Connect, then close: the time of connection set-up (and close).
    Connect,
    /// Connect, send a request, receive the response, close (HTTP/1.0 style; the responder
    /// closes first, so TIME_WAIT stays on the responder's side).
    ConnectRequestResponse,
    /// Request, response on one persistent connection.
    RequestResponse,
}

/// One transaction point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxnSpec {
    pub kind: TxnKind,
    /// Request bytes (none for [`TxnKind::Connect`]).
    pub request: u64,
    /// Response bytes (none for [`TxnKind::Connect`]).
    pub response: u64,
    /// Transactions run before measuring.
    pub warmup: u32,
    /// Measured transactions.
    pub iterations: u32,
}

/// What the engine tells a transaction program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxnInput {
    Start,
    /// The connection asked for is established.
    Connected,
    /// A whole request (responder) or response (initiator) arrived.
    Arrived { bytes: u64 },
    /// The connection was closed (initiator: after its close; for CRR the peer's close was seen).
    Closed,
}

/// What a transaction program asks of the engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxnOutput {
    Connect,
    Send { bytes: u64 },
    /// Close the connection (initiator: after seeing the peer close, for CRR).
    Close,
    Done,
}

/// The initiating side (the client): runs `warmup + iterations` transactions back to back
/// and records the time of each measured one in picoseconds.
#[derive(Debug, Clone)]
pub struct TxnInitiator {
    spec: TxnSpec,
    iter: u32,
    t_txn: u64,
    samples: Vec<u64>,
    done: bool,
}

impl TxnInitiator {
    pub fn new(spec: TxnSpec) -> Self {
        TxnInitiator { spec, iter: 0, t_txn: 0, samples: Vec::with_capacity((spec.iterations as usize).min(crate::limits::SAMPLE_PREALLOC)), done: false }
    }

    pub fn is_done(&self) -> bool {
        self.done
    }

    fn begin(&mut self, now: u64, out: &mut Vec<TxnOutput>) {
        self.t_txn = now;
        out.push(match self.spec.kind {
            TxnKind::Connect | TxnKind::ConnectRequestResponse => TxnOutput::Connect,
            TxnKind::RequestResponse => TxnOutput::Send { bytes: self.spec.request },
        });
    }

    fn finish_one(&mut self, now: u64, out: &mut Vec<TxnOutput>) {
        if self.iter >= self.spec.warmup {
            self.samples.push(now - self.t_txn);
        }
        self.iter += 1;
        if self.iter >= self.spec.warmup.saturating_add(self.spec.iterations) {
            self.done = true;
            out.push(TxnOutput::Done);
        } else {
            self.begin(now, out);
        }
    }

    /// Feeds one input at `now` (picoseconds).
    pub fn on(&mut self, now: u64, input: TxnInput, out: &mut Vec<TxnOutput>) {
        if self.done {
            return;
        }
        match (self.spec.kind, input) {
            (_, TxnInput::Start) => self.begin(now, out),
            (TxnKind::Connect, TxnInput::Connected) => out.push(TxnOutput::Close),
            (TxnKind::Connect, TxnInput::Closed) => self.finish_one(now, out),
            (TxnKind::ConnectRequestResponse, TxnInput::Connected) => out.push(TxnOutput::Send { bytes: self.spec.request }),
            (TxnKind::ConnectRequestResponse, TxnInput::Arrived { .. }) => out.push(TxnOutput::Close),
            (TxnKind::ConnectRequestResponse, TxnInput::Closed) => self.finish_one(now, out),
            (TxnKind::RequestResponse, TxnInput::Arrived { .. }) => self.finish_one(now, out),
            _ => {}
        }
    }

    /// Per-transaction times in picoseconds (whole transaction, not halved).
    pub fn samples(&self) -> Samples {
        Samples::Latency(self.samples.clone())
    }
}

/// The responding side (the server): answers each request; for CRR closes after answering.
#[derive(Debug, Clone, Copy)]
pub struct TxnResponder {
    spec: TxnSpec,
}

impl TxnResponder {
    pub fn new(spec: TxnSpec) -> Self {
        TxnResponder { spec }
    }

    /// Bytes the responder waits for before answering (0: none, for [`TxnKind::Connect`]).
    pub fn request_bytes(&self) -> u64 {
        match self.spec.kind {
            TxnKind::Connect => 0,
            _ => self.spec.request,
        }
    }

    pub fn on(&mut self, input: TxnInput, out: &mut Vec<TxnOutput>) {
        match (self.spec.kind, input) {
            (TxnKind::Connect, TxnInput::Connected) => out.push(TxnOutput::Close),
            (TxnKind::ConnectRequestResponse, TxnInput::Arrived { .. }) => {
                out.push(TxnOutput::Send { bytes: self.spec.response });
                out.push(TxnOutput::Close);
            }
            (TxnKind::RequestResponse, TxnInput::Arrived { .. }) => out.push(TxnOutput::Send { bytes: self.spec.response }),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each engine action takes `d` picoseconds; returns the initiator's samples.
    fn drive(kind: TxnKind, d: u64) -> Vec<u64> {
        let spec = TxnSpec { kind, request: 10, response: 20, warmup: 1, iterations: 3 };
        let mut a = TxnInitiator::new(spec);
        let mut b = TxnResponder::new(spec);
        let mut t = 0;
        let mut out = Vec::new();
        a.on(t, TxnInput::Start, &mut out);
        let mut steps = 0;
        while !a.is_done() {
            steps += 1;
            assert!(steps < 100);
            let o = out.remove(0);
            t += d;
            match o {
                TxnOutput::Connect => a.on(t, TxnInput::Connected, &mut out),
                TxnOutput::Send { bytes } => {
                    assert_eq!(bytes, 10);
                    let mut r = Vec::new();
                    b.on(TxnInput::Arrived { bytes }, &mut r);
                    assert_eq!(r[0], TxnOutput::Send { bytes: 20 });
                    t += d;
                    a.on(t, TxnInput::Arrived { bytes: 20 }, &mut out);
                }
                TxnOutput::Close => a.on(t, TxnInput::Closed, &mut out),
                TxnOutput::Done => {}
            }
        }
        match a.samples() {
            Samples::Latency(v) => v,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn connect_times_connect_and_close() {
        assert_eq!(drive(TxnKind::Connect, 5), vec![10; 3]);
    }

    #[test]
    fn crr_times_the_whole_exchange() {
        assert_eq!(drive(TxnKind::ConnectRequestResponse, 5), vec![20; 3]);
    }

    #[test]
    fn rr_times_request_and_response() {
        assert_eq!(drive(TxnKind::RequestResponse, 5), vec![10; 3]);
    }
}

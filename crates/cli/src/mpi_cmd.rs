//! `interlab mpi PATTERN`: OSU-style MPI point-to-point micro-benchmarks through the real
//! MPI library (loaded at run time, see `mpi_ffi`), started by `mpirun -np 2 interlab mpi ...`.
//!
//! - latency: ping-pong, one-way latency = round trip / 2 (osu_latency);
//! - bw: a window of W non-blocking sends, then a 4-byte reply (osu_bw);
//! - bibw: both ranks post W receives and W sends per window (osu_bibw);
//! - multi-pair: N/2 pairs (rank i sends to rank i + N/2) run bw at once; the aggregate
//!   bandwidth over the slowest pair's time (osu_mbw_mr).
//!
//! Iteration and warm-up counts follow OSU's rules (`Workload::default_counts`). Rank 0
//! prints and writes the records (engine "live", transport "mpi").

use crate::conv::{self, CmdResult, Fail};
use crate::mpi_ffi::{null_request, Mpi};
use clap::Args;
use interlab_live::output::{table_header, table_row};
use interlab_live::record::{build, Base};
use interlab_patterns::{parse_sizes, ExtendedRecord, LiveFields, Summary, Workload, WorkloadKind};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

#[derive(Args)]
pub struct MpiArgs {
    /// latency | bw (bandwidth) | bibw | multi-pair
    pattern: String,
    /// Message sizes in bytes: a list and/or power-of-two ranges, e.g. 1,2,4..4M (K = 2^10, M = 2^20).
    #[arg(long, default_value = "1..4M")]
    sizes: String,
    /// Messages per window (bw, bibw, multi-pair), as OSU's default.
    #[arg(long, default_value_t = 64)]
    window: u32,
    /// Warm-up iterations (round trips or windows) per size (default: OSU's rules by size).
    #[arg(long)]
    warmup: Option<u32>,
    /// Measured iterations per size (default: OSU's rules: latency 10 000 up to 8 KiB, 1 000
    /// above; windows 100 up to 8 KiB, 20 above).
    #[arg(long)]
    iterations: Option<u32>,
    /// JSON Lines records, to FILE or (without one, or `-`) to standard output instead of the table.
    #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = "-")]
    json: Option<PathBuf>,
    /// CSV records, to FILE or (without one, or `-`) to standard output instead of the table.
    #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = "-")]
    csv: Option<PathBuf>,
    /// Experiment name written into the records.
    #[arg(long, default_value = "mpi")]
    name: String,
    /// No notes on stderr.
    #[arg(long, short)]
    quiet: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Pat {
    Latency,
    Bw,
    Bibw,
    MultiPair,
}

impl Pat {
    fn from_name(s: &str) -> Option<Pat> {
        Some(match s {
            "latency" | "lat" => Pat::Latency,
            "bw" | "bandwidth" => Pat::Bw,
            "bibw" => Pat::Bibw,
            "multi-pair" | "mbw" | "mbw_mr" => Pat::MultiPair,
            _ => return None,
        })
    }

    /// The record's pattern name (the model's names; multi-pair has none there).
    fn record_name(self) -> &'static str {
        match self {
            Pat::Latency => "latency",
            Pat::Bw => "bandwidth",
            Pat::Bibw => "bibw",
            Pat::MultiPair => "multi-pair",
        }
    }

    fn workload_kind(self) -> WorkloadKind {
        match self {
            Pat::Latency => WorkloadKind::Latency,
            Pat::Bw | Pat::MultiPair => WorkloadKind::Bandwidth,
            Pat::Bibw => WorkloadKind::BiBandwidth,
        }
    }
}

/// OSU's counts for `size` (warm-up, measured).
fn counts(p: Pat, size: u64, window: u32) -> (u32, u32) {
    let w = Workload { kind: p.workload_kind(), size, response_size: size, window, streams: 1, peers: 1 };
    w.default_counts()
}

/// Tags: data and the windowed reply.
const TAG_DATA: i32 = 1;
const TAG_ACK: i32 = 2;
const TAG_RESULT: i32 = 3;

/// What rank 0 learns from one size.
struct Measured {
    /// Reported value: one-way latency (us) or bandwidth (MB/s, 10^6 B/s).
    value: f64,
    summary: Option<Summary>,
    rate_per_s: f64,
}

fn latency(mpi: &Mpi, rank: i32, size: usize, warmup: u32, iters: u32) -> Result<Option<Measured>, String> {
    let sbuf = vec![b'a'; size];
    let mut rbuf = vec![0u8; size];
    let mut one_way_us = Vec::with_capacity(if rank == 0 { iters as usize } else { 0 });
    mpi.barrier()?;
    let mut start = Instant::now();
    // One clock read per round trip: the end of one is the start of the next.
    let mut last = start;
    for i in 0..warmup + iters {
        if i == warmup {
            mpi.barrier()?;
            start = Instant::now();
            last = start;
        }
        if rank == 0 {
            mpi.send(&sbuf, 1, TAG_DATA)?;
            mpi.recv(&mut rbuf, 1, TAG_DATA)?;
            if i >= warmup {
                let now = Instant::now();
                one_way_us.push((now - last).as_secs_f64() * 1e6 / 2.0);
                last = now;
            }
        } else if rank == 1 {
            mpi.recv(&mut rbuf, 0, TAG_DATA)?;
            mpi.send(&sbuf, 0, TAG_DATA)?;
        }
    }
    let elapsed = start.elapsed().as_secs_f64();
    if rank != 0 {
        return Ok(None);
    }
    let value = elapsed * 1e6 / (2.0 * iters as f64);
    Ok(Some(Measured { value, summary: Summary::of(&one_way_us), rate_per_s: iters as f64 / elapsed }))
}

/// One window from `me` to `peer` (sender) or from `peer` (receiver), with the reply.
fn window_once(mpi: &Mpi, sender: bool, peer: i32, sbuf: &[u8], rbuf: &mut [u8], ack: &mut [u8], reqs: &mut [*mut std::ffi::c_void]) -> Result<(), String> {
    for r in reqs.iter_mut() {
        *r = null_request();
    }
    if sender {
        for r in reqs.iter_mut() {
            // SAFETY: sbuf outlives the requests, which complete in waitall below.
            unsafe { mpi.isend(sbuf, peer, TAG_DATA, r)? };
        }
        mpi.waitall(reqs)?;
        mpi.recv(ack, peer, TAG_ACK)?;
    } else {
        for r in reqs.iter_mut() {
            // SAFETY: rbuf outlives the requests (OSU receives every message of a window into one buffer).
            unsafe { mpi.irecv(rbuf, peer, TAG_DATA, r)? };
        }
        mpi.waitall(reqs)?;
        mpi.send(&ack[..], peer, TAG_ACK)?;
    }
    Ok(())
}

/// Windowed bandwidth between `pairs` pairs (rank i < pairs sends to i + pairs); returns
/// this rank's measured seconds, in all and per window, when it is a sender.
fn windowed(mpi: &Mpi, rank: i32, pairs: i32, size: usize, window: u32, warmup: u32, iters: u32) -> Result<Option<(f64, Vec<f64>)>, String> {
    let sbuf = vec![b'a'; size];
    let mut rbuf = vec![0u8; size];
    let mut ack = vec![0u8; 4];
    let mut reqs = vec![null_request(); window as usize];
    let sender = rank < pairs;
    let peer = if sender { rank + pairs } else { rank - pairs };
    let active = rank < 2 * pairs;
    let elapsed = timed_rounds(mpi, warmup, iters, || if active { window_once(mpi, sender, peer, &sbuf, &mut rbuf, &mut ack, &mut reqs) } else { Ok(()) })?;
    Ok(if sender && active { Some(elapsed) } else { None })
}

/// Runs `round` `warmup + iters` times on every rank and returns the seconds of the measured
/// rounds, in all and each: the clock starts after the warm-up, at a barrier all ranks pass
/// (OSU's loop); one clock read per round gives each round's time.
fn timed_rounds(mpi: &Mpi, warmup: u32, iters: u32, mut round: impl FnMut() -> Result<(), String>) -> Result<(f64, Vec<f64>), String> {
    mpi.barrier()?;
    let mut start = Instant::now();
    let mut last = start;
    let mut each = Vec::with_capacity(iters as usize);
    for i in 0..warmup + iters {
        if i == warmup {
            mpi.barrier()?;
            start = Instant::now();
            last = start;
        }
        round()?;
        if i >= warmup {
            let now = Instant::now();
            each.push((now - last).as_secs_f64());
            last = now;
        }
    }
    Ok((start.elapsed().as_secs_f64(), each))
}

fn bibw(mpi: &Mpi, rank: i32, size: usize, window: u32, warmup: u32, iters: u32) -> Result<Option<(f64, Vec<f64>)>, String> {
    let sbuf = vec![b'a'; size];
    let mut rbuf = vec![0u8; size];
    let w = window as usize;
    let mut reqs = vec![null_request(); 2 * w];
    let peer = 1 - rank;
    let elapsed = timed_rounds(mpi, warmup, iters, || {
        if rank > 1 {
            return Ok(());
        }
        for r in reqs.iter_mut() {
            *r = null_request();
        }
        let (recvs, sends) = reqs.split_at_mut(w);
        for r in recvs.iter_mut() {
            // SAFETY: rbuf outlives the requests, completed by waitall below.
            unsafe { mpi.irecv(&mut rbuf, peer, TAG_DATA, r)? };
        }
        for r in sends.iter_mut() {
            // SAFETY: sbuf outlives the requests.
            unsafe { mpi.isend(&sbuf, peer, TAG_DATA, r)? };
        }
        mpi.waitall(&mut reqs)
    })?;
    Ok(if rank == 0 { Some(elapsed) } else { None })
}

/// Collects every sender's seconds on rank 0 (the slowest decides an aggregate).
fn slowest(mpi: &Mpi, rank: i32, pairs: i32, mine: Option<f64>) -> Result<f64, String> {
    if rank == 0 {
        let mut worst = mine.unwrap_or(0.0);
        for r in 1..pairs {
            let mut b = [0u8; 8];
            mpi.recv(&mut b, r, TAG_RESULT)?;
            worst = worst.max(f64::from_le_bytes(b));
        }
        Ok(worst)
    } else {
        if let Some(s) = mine {
            mpi.send(&s.to_le_bytes(), 0, TAG_RESULT)?;
        }
        Ok(0.0)
    }
}

#[allow(clippy::too_many_arguments)]
fn measure(mpi: &Mpi, p: Pat, rank: i32, nranks: i32, size: u64, window: u32, warmup: u32, iters: u32) -> Result<Option<Measured>, String> {
    let n = usize::try_from(size).map_err(|_| "size too large".to_string())?;
    let mb = |secs: f64, streams: f64| size as f64 * window as f64 * iters as f64 * streams / secs / 1e6;
    let msgs = |secs: f64, streams: f64| window as f64 * iters as f64 * streams / secs;
    // The value is OSU's (all bytes over all the time); the summary is each window's
    // bandwidth, whose median a burst of load on a shared machine barely moves.
    let per_window = |each: &[f64], streams: f64| Summary::of(&each.iter().map(|t| size as f64 * window as f64 * streams / t / 1e6).collect::<Vec<_>>());
    Ok(match p {
        Pat::Latency => latency(mpi, rank, n, warmup, iters)?,
        Pat::Bw => windowed(mpi, rank, 1, n, window, warmup, iters)?.filter(|_| rank == 0).map(|(s, each)| Measured { value: mb(s, 1.0), summary: per_window(&each, 1.0), rate_per_s: msgs(s, 1.0) }),
        Pat::Bibw => bibw(mpi, rank, n, window, warmup, iters)?.map(|(s, each)| Measured { value: mb(s, 2.0), summary: per_window(&each, 2.0), rate_per_s: msgs(s, 2.0) }),
        Pat::MultiPair => {
            let pairs = nranks / 2;
            let mine = windowed(mpi, rank, pairs, n, window, warmup, iters)?.map(|(s, _)| s);
            let s = slowest(mpi, rank, pairs, mine)?;
            (rank == 0).then(|| Measured { value: mb(s, pairs as f64), summary: None, rate_per_s: msgs(s, pairs as f64) })
        }
    })
}

/// Rank 0's output: the table on stdout, JSON Lines or CSV to stdout or files.
struct Out {
    table: bool,
    records: conv::RecordWriters,
    header_done: bool,
}

impl Out {
    fn new(a: &MpiArgs) -> Result<Out, Fail> {
        let records = conv::RecordWriters::open(a.json.as_deref(), a.csv.as_deref())?;
        Ok(Out { table: !conv::stdout_is_data(), records, header_done: false })
    }

    fn write(&mut self, r: &ExtendedRecord, title: &str) -> Result<(), Fail> {
        let io = |e: std::io::Error| Fail::Run(format!("writing records: {e}"));
        self.records.write(r)?;
        if self.table {
            let mut o = std::io::stdout().lock();
            if !self.header_done {
                writeln!(o, "{title}").and_then(|_| writeln!(o, "{}", table_header(r))).map_err(io)?;
            }
            writeln!(o, "{}", table_row(r)).and_then(|_| o.flush()).map_err(io)?;
        }
        self.header_done = true;
        Ok(())
    }
}

/// Exchanges processor names so rank 0 can name both ends (peers in the records).
fn names(mpi: &Mpi, rank: i32, nranks: i32) -> Result<Vec<String>, String> {
    let mine = mpi.processor_name();
    if rank == 0 {
        let mut v = vec![mine];
        for r in 1..nranks {
            let mut b = vec![0u8; 256];
            mpi.recv(&mut b, r, TAG_RESULT)?;
            v.push(String::from_utf8_lossy(&b).trim_end_matches('\0').to_string());
        }
        Ok(v)
    } else {
        let mut b = mine.into_bytes();
        b.resize(256, 0);
        mpi.send(&b, 0, TAG_RESULT)?;
        Ok(vec![])
    }
}

pub fn run(a: MpiArgs) -> CmdResult {
    let p = Pat::from_name(&a.pattern).ok_or_else(|| format!("unknown MPI pattern `{}` (expected latency, bw, bibw or multi-pair)", a.pattern))?;
    let sizes = parse_sizes(&a.sizes).map_err(|e| format!("--sizes: {e}"))?;
    if let Some(&s) = sizes.iter().find(|&&s| s > i32::MAX as u64) {
        return Err(format!("--sizes: {s} B is larger than MPI's int count").into());
    }
    if a.window == 0 || a.window > 4096 {
        return Err(format!("--window {}: out of range (1 to 4096)", a.window).into());
    }
    if a.iterations == Some(0) {
        return Err("--iterations 0: must be at least 1".into());
    }
    let mpi = Mpi::load().map_err(Fail::Run)?;
    mpi.init().map_err(Fail::Run)?;
    let rank = mpi.rank().map_err(Fail::Run)?;
    let nranks = mpi.size().map_err(Fail::Run)?;
    let need = match p {
        Pat::MultiPair => nranks >= 2 && nranks % 2 == 0,
        _ => nranks == 2,
    };
    if !need {
        if rank == 0 {
            let what = if p == Pat::MultiPair { "an even number of processes (2 or more)" } else { "exactly 2 processes" };
            eprintln!("interlab: error: `interlab mpi {}` needs {what}, got {nranks}: start it with `mpirun -np 2 interlab mpi {} ...`", a.pattern, a.pattern);
        }
        let _ = mpi.finalize();
        return Ok(ExitCode::from(2));
    }
    let out = if rank == 0 { Some(Out::new(&a)) } else { None };
    let mut out = match out {
        Some(Ok(o)) => Some(o),
        Some(Err(e)) => {
            eprintln!("interlab: error: {e}");
            mpi.abort(e.code() as i32)
        }
        None => None,
    };
    let library = mpi.library_version();
    let peers = names(&mpi, rank, nranks).map_err(Fail::Run)?;
    let pairs = if p == Pat::MultiPair { nranks / 2 } else { 1 };
    let command = format!("interlab {}", std::env::args().skip(1).collect::<Vec<_>>().join(" "));
    let title = format!(
        "interlab mpi {} over {library} ({} ranks: {}){}",
        p.record_name(),
        nranks,
        peers.join(", "),
        if p == Pat::Latency { "; one-way latency = round trip / 2" } else if pairs > 1 { "; aggregate of all pairs" } else { "" }
    );
    let profile = {
        let mut u = peers.clone();
        u.dedup();
        u.join("+")
    };
    for &size in &sizes {
        let (dw, di) = counts(p, size, a.window);
        let (warmup, iters) = (a.warmup.unwrap_or(dw), a.iterations.unwrap_or(di));
        let m = match measure(&mpi, p, rank, nranks, size, a.window, warmup, iters) {
            Ok(m) => m,
            Err(e) => {
                eprintln!("interlab: error: rank {rank}: {p:?} {size} B: {e}");
                mpi.abort(1)
            }
        };
        if let (Some(m), Some(o)) = (m, out.as_mut()) {
            let latency_like = p == Pat::Latency;
            let b = Base {
                experiment: &a.name,
                series: "mpi",
                profile: &profile,
                pattern: p.record_name(),
                transport: "mpi",
                processes: pairs as u32,
                size,
                metric: if latency_like { "latency_us" } else { "bandwidth_MBps" },
                value: m.value,
                unit: if latency_like { "us" } else { "MB/s" },
                summary: m.summary,
                warmup,
                iterations: iters,
                window: if latency_like { 1 } else { a.window },
                spec: &command,
            };
            let live = LiveFields { peers: peers.clone(), streams: (pairs > 1).then_some(pairs as u32), repetitions: Some(1), rate_per_s: Some(m.rate_per_s), ..Default::default() };
            let r = build(&b, live).map_err(Fail::Run)?;
            if let Err(e) = o.write(&r, &title) {
                eprintln!("interlab: error: {e}");
                mpi.abort(e.code() as i32)
            }
        }
    }
    mpi.barrier().map_err(Fail::Run)?;
    mpi.finalize().map_err(Fail::Run)?;
    if rank == 0 && !a.quiet && !conv::stdout_is_data() {
        let _ = std::io::stdout().flush();
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_names_and_osu_counts() {
        assert_eq!(Pat::from_name("bw"), Some(Pat::Bw));
        assert_eq!(Pat::from_name("bandwidth"), Some(Pat::Bw));
        assert_eq!(Pat::from_name("multi-pair"), Some(Pat::MultiPair));
        assert_eq!(Pat::from_name("stream"), None);
        assert_eq!(counts(Pat::Latency, 8192, 64), (100, 10_000));
        assert_eq!(counts(Pat::Latency, 8193, 64), (10, 1_000));
        assert_eq!(counts(Pat::Bw, 1, 64), (10, 100));
        assert_eq!(counts(Pat::Bibw, 1 << 20, 64), (2, 20));
    }
}

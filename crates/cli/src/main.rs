//! `interlab`: argument parsing and wiring only; the work lives in the library crates.

#[macro_use]
mod conv;
mod calibrate_cmd;
mod calibrate_mpi_cmd;
mod cluster_cmd;
mod commands;
mod datacenter_cmd;
mod live_cmd;
mod mpi_cmd;
mod mpi_ffi;
mod mpi_launch;

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

/// Evaluate interconnects and their protocol stacks, live or in a calibrated model.
#[derive(Parser)]
#[command(name = "interlab", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run the five published studies in the model; write report.html, figures, claims.json, results.
    Reproduce {
        /// Study to run (vpi, pcie, ipoib-offload, ib-wan, sdp); repeat for several; default all.
        #[arg(long = "study", value_name = "ID")]
        studies: Vec<String>,
        /// Output directory.
        #[arg(long, default_value = "interlab-report")]
        out: PathBuf,
        /// Claims table to evaluate instead of the embedded copy of claims.csv.
        #[arg(long, value_name = "CSV")]
        claims: Option<PathBuf>,
        /// Also the claims document (claims.json), to FILE or (without one, or `-`) to standard output.
        #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = "-")]
        json: Option<PathBuf>,
        /// No progress bar.
        #[arg(long, short)]
        quiet: bool,
        /// Print each figure's wall time (longest first) after the run.
        #[arg(long)]
        timings: bool,
    },
    /// Run an experiment spec (TOML) in the model, live against `interlab serve` daemons, or
    /// both side by side; write results.jsonl, results.csv and a figure.
    Run(Box<commands::RunArgs>),
    /// Join the --out directories of `interlab run --points I/N` shards into one set of records.
    Merge {
        /// The shards' directories (each with shard.json and results.jsonl).
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
        /// Output directory.
        #[arg(long, default_value = "interlab-run")]
        out: PathBuf,
    },
    /// Benchmarks that print their figures.
    Bench {
        #[command(subcommand)]
        what: BenchWhat,
    },
    /// Run the daemon that serves the far side of live measurements (many clients at once).
    Serve(Box<cluster_cmd::ServeCmd>),
    /// Measure a pattern live over TCP, UDP or Unix sockets against `interlab serve` daemon(s).
    Live(Box<live_cmd::LiveArgs>),
    /// MPI micro-benchmarks (latency, bw, bibw, multi-pair) through the MPI library, OSU-style;
    /// start with `mpirun -np 2 interlab mpi latency` (see docs/mpi.md).
    Mpi(Box<mpi_cmd::MpiArgs>),
    /// Start one `interlab serve` per host through ssh, srun or mpirun (`cluster up`), write
    /// the peer list that `live`/`run --peers-file FILE` read, and stop them (`cluster down`).
    Cluster {
        #[command(subcommand)]
        cmd: cluster_cmd::ClusterCmd,
    },
    /// Three-tier TPC-W bookstore (web, app, db processes), browser emulator, traces.
    Datacenter {
        #[command(subcommand)]
        cmd: datacenter_cmd::DcCmd,
    },
    /// Measure host primitives live against a daemon and write a fitted profile (see docs/calibrate.md).
    Calibrate(Box<calibrate_cmd::CalibrateArgs>),
    /// Parallel file I/O (PVFS concurrent read/write) in the model: aggregate bandwidth per
    /// number of I/O servers (spec format: studies/sdp/pvfs-fig8.toml).
    Pvfs {
        /// The PVFS spec (TOML).
        #[arg(long)]
        spec: PathBuf,
        /// The results as JSON, to FILE or (without one, or `-`) to standard output.
        #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = "-")]
        json: Option<PathBuf>,
        /// No notes on stderr.
        #[arg(long, short)]
        quiet: bool,
    },
    /// List the built-in profiles, or print one (a profile file is checked).
    Profiles {
        /// Profile id (or file) to print.
        id: Option<String>,
        /// The list, or the profile's parameters with units and provenance, as JSON to FILE
        /// or (without one, or `-`) to standard output.
        #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = "-")]
        json: Option<PathBuf>,
    },
}

#[derive(Subcommand)]
enum BenchWhat {
    /// Event-kernel throughput (hold model) and a full verbs-model scenario, in events/s.
    Kernel {
        /// Events per run.
        #[arg(long, default_value_t = 20_000_000)]
        events: u64,
        /// Events pending in the queue.
        #[arg(long, default_value_t = 1024)]
        pending: u32,
        /// The figures as JSON, to FILE or (without one, or `-`) to standard output.
        #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = "-")]
        json: Option<PathBuf>,
    },
    /// interlab vs sockperf, iperf3 and qperf on loopback in the same run; prints ratios.
    Compare(live_cmd::CompareArgs),
    /// Model speed on a bulk transfer over one 8 Gb/s link, in simulated data packets per
    /// wall-clock second (the figure `scripts/bench-vs-ns3.sh` compares with ns-3).
    Model {
        /// Payload bytes to move, K = 2^10, M = 2^20, G = 2^30 (whole 1 MiB messages).
        #[arg(long, default_value = "200M", value_parser = conv::size)]
        bytes: u64,
        /// The figures as JSON, to FILE or (without one, or `-`) to standard output.
        #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = "-")]
        json: Option<PathBuf>,
    },
}

fn main() -> ExitCode {
    // Like other Unix tools: a closed pipe (`interlab ... | head`) ends the process quietly
    // instead of panicking on the next print.
    #[cfg(unix)]
    // SAFETY: restoring the default disposition of SIGPIPE before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    // `live`/`run --peers-file FILE` (from `cluster up`) become `--peer ...` flags.
    let args = match cluster_cmd::expand_peers_file(std::env::args_os().collect()) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("interlab: error: {e}");
            return ExitCode::from(2);
        }
    };
    let cli = Cli::parse_from(args);
    let r = match cli.cmd {
        Cmd::Reproduce { studies, out, claims, json, quiet, timings } => commands::reproduce(studies, out, claims, json.as_deref(), quiet, timings),
        Cmd::Run(a) => commands::run(*a),
        Cmd::Merge { dirs, out } => commands::merge(&dirs, &out),
        Cmd::Bench { what: BenchWhat::Kernel { events, pending, json } } => commands::bench_kernel(events, pending, json.as_deref()),
        Cmd::Bench { what: BenchWhat::Compare(a) } => live_cmd::bench_compare(a),
        Cmd::Bench { what: BenchWhat::Model { bytes, json } } => commands::bench_model(bytes, json.as_deref()),
        Cmd::Serve(a) => cluster_cmd::serve(*a),
        Cmd::Cluster { cmd } => cluster_cmd::run(cmd),
        Cmd::Live(a) => live_cmd::live(*a),
        Cmd::Mpi(a) => mpi_cmd::run(*a),
        Cmd::Datacenter { cmd } => datacenter_cmd::run(cmd),
        Cmd::Calibrate(a) => calibrate_cmd::run(*a),
        Cmd::Pvfs { spec, json, quiet } => commands::pvfs(&spec, json.as_deref(), quiet),
        Cmd::Profiles { id, json } => commands::profiles(id.as_deref(), json.as_deref()),
    };
    match r {
        Ok(code) => code,
        Err(e) => {
            eprintln!("interlab: error: {e}");
            ExitCode::from(e.code())
        }
    }
}

//! Re-running this binary under `mpirun` for commands that need live MPI points without
//! being started by `mpirun` themselves (`calibrate --mpi-run`, `run --engine live|both` on
//! an MPI series): `mpirun -np 2 [--oversubscribe] [--allow-run-as-root] interlab mpi
//! PATTERN ... --json FILE`, waited for with a deadline, its records read back.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One live MPI run of `interlab mpi`.
#[derive(Debug, Clone)]
pub struct MpiJob {
    /// `latency`, `bw` or `bibw`.
    pub pattern: &'static str,
    /// `--sizes` text.
    pub sizes: String,
    pub window: Option<u32>,
    pub warmup: Option<u32>,
    pub iterations: Option<u32>,
}

/// How `mpirun` is started: extra options (e.g. `--hostfile F`), and the deadline of one run.
#[derive(Debug, Clone)]
pub struct Launch {
    pub mpirun: String,
    pub args: Vec<String>,
    pub timeout: Duration,
}

impl Default for Launch {
    fn default() -> Self {
        Launch { mpirun: "mpirun".into(), args: vec![], timeout: Duration::from_secs(600) }
    }
}

/// The `mpirun` command line (program first) for `job`, its records going to `json`.
pub fn command_line(l: &Launch, job: &MpiJob, exe: &str, json: &str) -> Vec<String> {
    let mut v = vec![l.mpirun.clone(), "-np".into(), "2".into()];
    // Two ranks on a machine with fewer free slots, and root (the tests' and CI's user),
    // need Open MPI's explicit permission.
    v.push("--oversubscribe".into());
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        v.push("--allow-run-as-root".into());
    }
    v.extend(l.args.iter().cloned());
    v.extend([exe.to_string(), "mpi".into(), job.pattern.into(), "--sizes".into(), job.sizes.clone(), "--json".into(), json.into(), "--quiet".into()]);
    for (flag, x) in [("--window", job.window), ("--warmup", job.warmup), ("--iterations", job.iterations)] {
        if let Some(x) = x {
            v.extend([flag.to_string(), x.to_string()]);
        }
    }
    v
}

/// Runs `job` under mpirun and returns the JSON Lines text of its records and the command.
pub fn run(l: &Launch, job: &MpiJob) -> Result<(String, String), String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program to start under mpirun: {e}"))?;
    let dir = std::env::temp_dir().join(format!("interlab-mpi-{}-{}", std::process::id(), job.pattern));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let json: PathBuf = dir.join("records.jsonl");
    let _ = std::fs::remove_file(&json);
    let argv = command_line(l, job, &exe.display().to_string(), &json.display().to_string());
    let shown = argv.join(" ");
    let mut c = Command::new(&argv[0]);
    c.args(&argv[1..]).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
    std::os::unix::process::CommandExt::process_group(&mut c, 0);
    let mut child = c.spawn().map_err(|e| format!("`{}`: cannot start ({e}); live MPI needs Open MPI's mpirun (apt-get install openmpi-bin libopenmpi-dev)", l.mpirun))?;
    let t = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if t.elapsed() > l.timeout => {
                // SAFETY: the process group this function started (mpirun and its ranks).
                unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
                let _ = child.wait();
                let _ = std::fs::remove_dir_all(&dir);
                return Err(format!("`{shown}` did not finish within {} s", l.timeout.as_secs()));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => return Err(format!("waiting for mpirun: {e}")),
        }
    };
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut e, &mut err);
    }
    let text = std::fs::read_to_string(&json).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    if !status.success() || text.trim().is_empty() {
        let tail: Vec<&str> = err.lines().rev().take(6).collect::<Vec<_>>().into_iter().rev().collect();
        return Err(format!("`{shown}` failed ({status}): {}", tail.join(" | ")));
    }
    Ok((text, shown))
}

/// The live engine's MPI runner for `exp` (`run --engine live|both`): each MPI series under
/// `mpirun -np 2`. A spec with MPI series needs mpirun on PATH, checked here before anything runs.
pub fn runner(exp: &interlab_experiment::Experiment) -> Result<interlab_experiment::live::MpiRunner, String> {
    if let Some(s) = exp.series.iter().find(|s| s.setup.mpi.is_some()) {
        let found = Command::new("mpirun").arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().map(|s| s.success()).unwrap_or(false);
        if !found {
            return Err(format!(
                "{}: key `mpi` (series `{}`): live MPI runs under mpirun, which is not installed (apt-get install openmpi-bin libopenmpi-dev); or run with --engine model",
                exp.file, s.label
            ));
        }
    }
    Ok(std::sync::Arc::new(|job: &interlab_experiment::live_mpi::MpiSeriesJob| {
        let sizes = job.sizes.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(",");
        let j = MpiJob { pattern: job.pattern, sizes, window: (job.pattern != "latency").then_some(job.window), warmup: Some(job.warmup), iterations: Some(job.iterations) };
        run(&Launch::default(), &j).map(|(text, _)| text)
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_names_every_option() {
        let l = Launch { args: vec!["--hostfile".into(), "hf".into()], ..Default::default() };
        let job = MpiJob { pattern: "bw", sizes: "1..64K".into(), window: Some(64), warmup: None, iterations: Some(20) };
        let v = command_line(&l, &job, "/bin/interlab", "/tmp/x.jsonl").join(" ");
        assert!(v.starts_with("mpirun -np 2 --oversubscribe"), "{v}");
        assert!(v.contains("--hostfile hf /bin/interlab mpi bw --sizes 1..64K --json /tmp/x.jsonl --quiet --window 64 --iterations 20"), "{v}");
        assert!(!v.contains("--warmup"), "{v}");
    }
}

//! `interlab cluster up|down`: one `interlab serve` per host, started through the launchers
//! labs already use (ssh, Slurm's srun, mpirun), a fresh shared secret in a file only the
//! user can read, and the peer list in a file `live`/`run --peers-file` read. Also the
//! lifetime options of `serve` (`--exit-idle`, `--exit-with-parent`) that keep a daemon
//! from outliving its launcher. See docs/cluster.md.

use crate::conv::{self, CmdResult, Fail};
use clap::{Args, Subcommand};
use std::ffi::OsString;
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

#[derive(Subcommand)]
pub enum ClusterCmd {
    /// Start one `interlab serve` per host and write the peer list.
    Up(UpArgs),
    /// Stop the daemons `cluster up` started (and remove the peer list and the secret).
    Down(DownArgs),
}

#[derive(Args)]
#[command(group(clap::ArgGroup::new("how").required(true).args(["hosts", "slurm", "mpirun"])))]
pub struct UpArgs {
    /// One host per line ([user@]host; `#` comments), each reached with ssh.
    #[arg(long, value_name = "FILE")]
    hosts: Option<PathBuf>,
    /// One daemon per node of the current Slurm allocation (SLURM_JOB_NODELIST), through srun.
    #[arg(long)]
    slurm: bool,
    /// N daemons through `mpirun -np N` (hosts from mpirun's own host file or allocation).
    #[arg(long, value_name = "N")]
    mpirun: Option<u32>,
    /// Extra argument for the launcher (ssh, srun or mpirun); repeat for several,
    /// e.g. --launcher-arg=--oversubscribe --launcher-arg=--allow-run-as-root.
    #[arg(long = "launcher-arg", value_name = "ARG", allow_hyphen_values = true)]
    launcher_args: Vec<String>,
    /// Where to write the peer list (HOST:PORT lines); its state (secret, logs) goes in FILE.d/.
    #[arg(long, value_name = "FILE", default_value = "interlab-peers")]
    peers_file: PathBuf,
    /// Address the daemons listen on.
    #[arg(long, default_value = "0.0.0.0")]
    bind: String,
    /// Control port of every daemon (0: any free port, read back from each daemon).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// The interlab binary on the hosts (default: `interlab` on ssh hosts' PATH; this
    /// executable for srun and mpirun, which assume a shared file system).
    #[arg(long, value_name = "PATH")]
    remote_bin: Option<String>,
    /// Each daemon exits after this long without any client connection.
    #[arg(long, default_value = "10m", value_name = "DURATION", value_parser = conv::positive_duration)]
    exit_idle: Duration,
    /// Time to wait for every daemon to listen.
    #[arg(long, default_value = "30s", value_name = "DURATION", value_parser = conv::positive_duration)]
    timeout: Duration,
    /// The ssh client (for --hosts).
    #[arg(long, default_value = "ssh", value_name = "CMD")]
    ssh: String,
}

#[derive(Args)]
pub struct DownArgs {
    /// The peer list `cluster up` wrote.
    #[arg(long, value_name = "FILE", default_value = "interlab-peers")]
    peers_file: PathBuf,
    /// The ssh client (daemons started with --hosts; default: the one `up` used, with its
    /// --launcher-arg options).
    #[arg(long, value_name = "CMD")]
    ssh: Option<String>,
}

/// Lifetime options of `interlab serve`, flattened into its arguments.
#[derive(Args)]
pub struct Lifetime {
    /// Exit after this long with no client connection open (e.g. 10m; default: never).
    #[arg(long, value_name = "DURATION", value_parser = conv::positive_duration)]
    exit_idle: Option<Duration>,
    /// Exit when the process that started this daemon (ssh session, srun step, mpirun) ends.
    #[arg(long)]
    exit_with_parent: bool,
    /// Print `interlab serve: host NAME pid PID` first (for `cluster up`).
    #[arg(long, hide = true)]
    announce: bool,
}

/// `interlab serve`: the daemon's own arguments plus [`Lifetime`].
#[derive(Args)]
pub struct ServeCmd {
    #[command(flatten)]
    serve: crate::live_cmd::ServeArgs,
    #[command(flatten)]
    life: Lifetime,
}

pub fn serve(a: ServeCmd) -> CmdResult {
    if a.life.announce {
        println!("interlab serve: host {} pid {}", hostname(), std::process::id());
        let _ = std::io::stdout().flush();
    }
    watch(&a.life);
    crate::live_cmd::serve(a.serve)
}

/// Sockets this process holds (Linux: /proc/self/fd); None where that cannot be read.
fn sockets() -> Option<usize> {
    let d = std::fs::read_dir("/proc/self/fd").ok()?;
    Some(d.filter_map(|e| e.ok()).filter(|e| std::fs::read_link(e.path()).map(|l| l.to_string_lossy().starts_with("socket:")).unwrap_or(false)).count())
}

/// Starts the watchdog thread for `--exit-idle` and `--exit-with-parent`.
fn watch(l: &Lifetime) {
    if l.exit_idle.is_none() && !l.exit_with_parent {
        return;
    }
    let idle = l.exit_idle;
    let with_parent = l.exit_with_parent;
    // SAFETY: getppid has no preconditions.
    let parent = unsafe { libc::getppid() };
    // Sockets before the daemon binds; the listener adds one, any client more.
    let base = sockets().unwrap_or(0) + 1;
    std::thread::spawn(move || {
        let mut quiet_since = Instant::now();
        loop {
            std::thread::sleep(Duration::from_millis(500));
            // SAFETY: as above.
            if with_parent && unsafe { libc::getppid() } != parent {
                eprintln!("interlab serve: the launcher (pid {parent}) ended; exiting");
                std::process::exit(0);
            }
            if let Some(limit) = idle {
                match sockets() {
                    Some(n) if n > base => quiet_since = Instant::now(),
                    _ => {}
                }
                if quiet_since.elapsed() >= limit {
                    eprintln!("interlab serve: no client for {:.0} s (--exit-idle); exiting", limit.as_secs_f64());
                    std::process::exit(0);
                }
            }
        }
    });
}

pub fn run(c: ClusterCmd) -> CmdResult {
    match c {
        ClusterCmd::Up(a) => up(a),
        ClusterCmd::Down(a) => down(&a.peers_file, a.ssh.as_deref()),
    }
}

fn hostname() -> String {
    let mut b = [0u8; 256];
    // SAFETY: the buffer and its length are valid.
    let rc = unsafe { libc::gethostname(b.as_mut_ptr().cast(), b.len()) };
    if rc != 0 {
        return "localhost".into();
    }
    let n = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..n]).into_owned()
}

/// A fresh secret: 32 random bytes as hex.
fn fresh_token() -> Result<String, Fail> {
    let mut b = [0u8; 32];
    std::fs::File::open("/dev/urandom").and_then(|mut f| std::io::Read::read_exact(&mut f, &mut b)).map_err(|e| Fail::Run(format!("/dev/urandom: {e}")))?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

/// Writes `text` to a new file readable and writable by the user only (0600).
fn write_private(p: &Path, text: &str) -> Result<(), Fail> {
    let _ = std::fs::remove_file(p);
    let mut f = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(p).map_err(|e| Fail::Input(format!("{}: cannot create: {e}", p.display())))?;
    f.write_all(text.as_bytes()).map_err(|e| Fail::Run(format!("{}: {e}", p.display())))?;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o600)).map_err(|e| Fail::Run(format!("{}: {e}", p.display())))
}

/// Hosts of a --hosts file: one per line, `#` comments, anything after the host ignored.
pub fn parse_hosts(text: &str) -> Vec<String> {
    text.lines().map(|l| l.split('#').next().unwrap_or("").trim()).filter(|l| !l.is_empty()).filter_map(|l| l.split_whitespace().next()).map(str::to_string).collect()
}

/// Expands a Slurm node list (`SLURM_JOB_NODELIST`): `node[01-03,07],gpu5` is node01,
/// node02, node03, node07, gpu5 (zero padding kept; one bracket group per name).
pub fn parse_nodelist(s: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut depth = 0;
    let mut item = String::new();
    let mut items = Vec::new();
    for c in s.trim().chars() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            _ => {}
        }
        if c == ',' && depth == 0 {
            items.push(std::mem::take(&mut item));
        } else {
            item.push(c);
        }
    }
    items.push(item);
    for it in items.into_iter().filter(|i| !i.is_empty()) {
        let Some(open) = it.find('[') else {
            out.push(it);
            continue;
        };
        let close = it.rfind(']').ok_or_else(|| format!("node list `{s}`: unbalanced ["))?;
        let (prefix, ranges, suffix) = (&it[..open], &it[open + 1..close], &it[close + 1..]);
        for r in ranges.split(',') {
            let (lo, hi) = r.split_once('-').unwrap_or((r, r));
            let width = lo.len();
            let a: u64 = lo.parse().map_err(|_| format!("node list `{s}`: `{r}` is not a range"))?;
            let b: u64 = hi.parse().map_err(|_| format!("node list `{s}`: `{r}` is not a range"))?;
            if b < a || b - a > 100_000 {
                return Err(format!("node list `{s}`: bad range `{r}`"));
            }
            for n in a..=b {
                out.push(format!("{prefix}{n:0width$}{suffix}"));
            }
        }
    }
    Ok(out)
}

/// Quotes a word for a POSIX shell.
fn sh_quote(s: &str) -> String {
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:@,+".contains(c)) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

fn state_dir(peers: &Path) -> PathBuf {
    let mut s = peers.as_os_str().to_os_string();
    s.push(".d");
    PathBuf::from(s)
}

/// One started launcher: its process group, how to reach it, where it logs.
struct Launch {
    pid: u32,
    /// ssh host, or empty for srun/mpirun.
    host: String,
    log: PathBuf,
}

/// Starts `cmd` in its own session (so it outlives `cluster up` and `down` can signal its
/// whole group), output to `log`, optional `stdin` text.
fn spawn_detached(cmd: &mut Command, log: &Path, stdin: Option<&str>) -> Result<u32, Fail> {
    let out = std::fs::File::create(log).map_err(|e| Fail::Input(format!("{}: {e}", log.display())))?;
    let err = out.try_clone().map_err(|e| Fail::Run(e.to_string()))?;
    cmd.stdout(out).stderr(err).stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() });
    // SAFETY: setsid is async-signal-safe, called in the child before exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    let mut child = cmd.spawn().map_err(|e| Fail::Run(format!("cannot start {:?}: {e}", cmd.get_program())))?;
    if let (Some(t), Some(mut i)) = (stdin, child.stdin.take()) {
        let _ = i.write_all(t.as_bytes());
    }
    Ok(child.id())
}

/// Daemons found in a log: (tag, host, pid, port) from the announce and banner lines.
fn parse_log(text: &str) -> Vec<(String, String, u32, u16)> {
    let mut hosts: Vec<(String, String, u32)> = Vec::new();
    let mut out = Vec::new();
    for line in text.lines() {
        let Some(i) = line.find("interlab serve: ") else { continue };
        let (tag, rest) = (line[..i].to_string(), &line[i + "interlab serve: ".len()..]);
        let w: Vec<&str> = rest.split_whitespace().collect();
        if w.len() >= 4 && w[0] == "host" && w[2] == "pid" {
            hosts.push((tag, w[1].to_string(), w[3].parse().unwrap_or(0)));
        } else if w.len() >= 3 && w[0] == "listening" && w[1] == "on" {
            let port = w[2].rsplit(':').next().and_then(|p| p.parse().ok()).unwrap_or(0);
            if let Some(h) = hosts.iter().find(|h| h.0 == tag) {
                out.push((tag, h.1.clone(), h.2, port));
            }
        }
    }
    out
}

/// The address clients use for a daemon that reported `name`: the name when it resolves,
/// else loopback when it is this host.
fn reachable(name: &str) -> String {
    use std::net::ToSocketAddrs;
    if (name, 1u16).to_socket_addrs().map(|mut a| a.next().is_some()).unwrap_or(false) {
        name.to_string()
    } else if name == hostname() {
        "127.0.0.1".into()
    } else {
        name.to_string()
    }
}

fn up(a: UpArgs) -> CmdResult {
    let dir = state_dir(&a.peers_file);
    if dir.join("launchers").exists() {
        return Err(Fail::Input(format!("{} exists: daemons from an earlier `cluster up` may be running; run `interlab cluster down --peers-file {}` first", dir.display(), a.peers_file.display())));
    }
    std::fs::create_dir_all(&dir).map_err(|e| Fail::Input(format!("{}: cannot create: {e}", dir.display())))?;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).map_err(|e| Fail::Run(e.to_string()))?;
    let dir = dir.canonicalize().map_err(|e| Fail::Run(e.to_string()))?;
    let token = fresh_token()?;
    let token_file = dir.join("token");
    write_private(&token_file, &format!("{token}\n"))?;
    let idle = format!("{}s", a.exit_idle.as_secs().max(1));
    let port = a.port.to_string();
    let here = std::env::current_exe().map_err(|e| Fail::Run(e.to_string()))?.to_string_lossy().into_owned();
    let serve_args = |bin: &str, tokfile: &str| -> Vec<String> {
        [bin, "serve", "--announce", "--quiet", "--bind", &a.bind, "--port", &port, "--auth-token-file", tokfile, "--exit-idle", &idle, "--exit-with-parent"].iter().map(|s| s.to_string()).collect()
    };
    let mut launches: Vec<Launch> = Vec::new();
    let expected;
    if let Some(hf) = &a.hosts {
        let text = std::fs::read_to_string(hf).map_err(|e| Fail::Input(format!("--hosts {}: {e}", hf.display())))?;
        let hosts = parse_hosts(&text);
        if hosts.is_empty() {
            return Err(Fail::Input(format!("--hosts {}: no hosts", hf.display())));
        }
        expected = hosts.len();
        let bin = a.remote_bin.clone().unwrap_or_else(|| "interlab".into());
        let tag = &token[..12];
        std::fs::write(dir.join("remote-token"), tag).map_err(|e| Fail::Run(e.to_string()))?;
        // How to reach the hosts again, for `down`: the ssh command, then its options.
        let ssh_state: String = std::iter::once(a.ssh.as_str()).chain(a.launcher_args.iter().map(String::as_str)).map(|w| format!("{w}\n")).collect();
        std::fs::write(dir.join("ssh"), ssh_state).map_err(|e| Fail::Run(e.to_string()))?;
        for (i, h) in hosts.iter().enumerate() {
            // One file per entry, written whole then renamed: two entries for one host, or
            // hosts sharing a home directory, never see each other's half-written file.
            let remote_tok = format!("$HOME/.interlab/cluster-{tag}-{i}.token");
            // The secret travels on ssh's standard input into a 0600 file, never on a command line.
            let words: Vec<String> = serve_args(&bin, "\"$T\"").iter().map(|w| if w == "\"$T\"" { w.clone() } else { sh_quote(w) }).collect();
            let script = format!("umask 077; mkdir -p \"$HOME/.interlab\" && T=\"{remote_tok}\" && head -n 1 > \"$T.new\" && mv -f \"$T.new\" \"$T\" && exec {}", words.join(" "));
            let log = dir.join(format!("launch-{i}.log"));
            let mut cmd = Command::new(&a.ssh);
            cmd.args(["-o", "BatchMode=yes", "-T"]).args(&a.launcher_args).arg(h).arg(script);
            let pid = spawn_detached(&mut cmd, &log, Some(&format!("{token}\n")))?;
            launches.push(Launch { pid, host: h.clone(), log });
        }
    } else {
        let bin = a.remote_bin.clone().unwrap_or(here);
        let tok = token_file.to_string_lossy().into_owned();
        let log = dir.join("launch-0.log");
        let mut cmd;
        if a.slurm {
            let list = std::env::var("SLURM_JOB_NODELIST").map_err(|_| Fail::Input("--slurm: SLURM_JOB_NODELIST is not set (run inside an allocation: salloc -N 2, or an sbatch script)".into()))?;
            let nodes = parse_nodelist(&list).map_err(Fail::Input)?;
            expected = nodes.len();
            cmd = Command::new("srun");
            cmd.args(["--label", "-N", &nodes.len().to_string(), "--ntasks-per-node=1", "-n", &nodes.len().to_string()]);
        } else {
            let n = a.mpirun.unwrap_or(1);
            if n == 0 {
                return Err(Fail::Input("--mpirun 0: need at least one daemon".into()));
            }
            expected = n as usize;
            cmd = Command::new("mpirun");
            cmd.args(["--tag-output", "-np", &n.to_string()]);
        }
        cmd.args(&a.launcher_args).args(serve_args(&bin, &tok));
        let pid = spawn_detached(&mut cmd, &log, None)?;
        launches.push(Launch { pid, host: String::new(), log });
    }
    // The state first, so `down` can stop whatever started even if waiting fails.
    let state: String = launches.iter().map(|l| format!("{} {}\n", l.pid, if l.host.is_empty() { "-" } else { &l.host })).collect();
    std::fs::write(dir.join("launchers"), state).map_err(|e| Fail::Run(e.to_string()))?;
    let deadline = Instant::now() + a.timeout;
    let found = loop {
        let mut found: Vec<(String, u32, u16)> = Vec::new();
        for l in &launches {
            let text = std::fs::read_to_string(&l.log).unwrap_or_default();
            for (_, name, pid, port) in parse_log(&text) {
                let host = if l.host.is_empty() { reachable(&name) } else { l.host.rsplit('@').next().unwrap_or(&l.host).to_string() };
                found.push((host, pid, port));
            }
        }
        if found.len() >= expected {
            break found;
        }
        if Instant::now() > deadline {
            let logs: String = launches.iter().map(|l| format!("\n--- {}:\n{}", l.log.display(), std::fs::read_to_string(&l.log).unwrap_or_default().trim_end())).collect();
            let _ = down(&a.peers_file, None);
            return Err(Fail::Run(format!("{} of {expected} daemon(s) listening after {:.0} s; stopped them{logs}", found.len(), a.timeout.as_secs_f64())));
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut text = format!(
        "# interlab cluster: {} daemon(s); stop them with `interlab cluster down --peers-file {}`\n# auth-token-file: {}\n",
        found.len(),
        a.peers_file.display(),
        token_file.display()
    );
    let mut daemons = String::new();
    for (host, pid, port) in &found {
        let h = if host.contains(':') { format!("[{host}]") } else { host.clone() };
        text.push_str(&format!("{h}:{port}\n"));
        daemons.push_str(&format!("{host} {pid}\n"));
    }
    std::fs::write(dir.join("daemons"), daemons).map_err(|e| Fail::Run(e.to_string()))?;
    write_private(&a.peers_file, &text)?;
    for (host, _, port) in &found {
        say!("{host}:{port}");
    }
    conv::say_err(&format!("interlab cluster: {} daemon(s) up; peer list in {}, secret in {} (0600)", found.len(), a.peers_file.display(), token_file.display()));
    Ok(ExitCode::SUCCESS)
}

fn alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks for existence.
    unsafe { libc::kill(pid, 0) == 0 }
}

fn down(peers: &Path, ssh: Option<&str>) -> CmdResult {
    let dir = state_dir(peers);
    let saved = std::fs::read_to_string(dir.join("ssh")).unwrap_or_default();
    let mut saved = saved.lines().map(str::to_string);
    let (ssh, ssh_args): (String, Vec<String>) = match ssh {
        Some(c) => (c.to_string(), vec![]),
        None => (saved.next().unwrap_or_else(|| "ssh".into()), saved.collect()),
    };
    let state = std::fs::read_to_string(dir.join("launchers")).map_err(|e| Fail::Input(format!("{}: {e} (no cluster started with this --peers-file?)", dir.join("launchers").display())))?;
    let daemons = std::fs::read_to_string(dir.join("daemons")).unwrap_or_default();
    let mut groups = Vec::new();
    for line in state.lines() {
        let mut w = line.split_whitespace();
        let (Some(pid), Some(host)) = (w.next().and_then(|p| p.parse::<i32>().ok()), w.next()) else { continue };
        if host != "-" {
            // Remote daemons: stop each by pid and remove the remote copy of the secret.
            let name = host.rsplit('@').next().unwrap_or(host);
            let pids: Vec<&str> = daemons.lines().filter_map(|l| l.split_once(' ')).filter(|(h, _)| *h == name).map(|(_, p)| p).collect();
            let tag = std::fs::read_to_string(dir.join("remote-token")).unwrap_or_default();
            let tag = tag.trim();
            let script = format!("kill {} 2>/dev/null; rm -f \"$HOME\"/.interlab/cluster-{tag}-*.token; true", pids.join(" "));
            if !pids.is_empty() {
                let _ = Command::new(&ssh).args(["-o", "BatchMode=yes", "-T"]).args(&ssh_args).args([host, &script]).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).status();
            }
        }
        groups.push(pid);
    }
    for &g in &groups {
        // SAFETY: signalling the process group the launcher leads (its own session).
        unsafe { libc::kill(-g, libc::SIGTERM) };
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while groups.iter().any(|&g| alive(-g)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    for &g in &groups {
        if alive(-g) {
            // SAFETY: as above.
            unsafe { libc::kill(-g, libc::SIGKILL) };
        }
    }
    let _ = std::fs::remove_file(peers);
    let _ = std::fs::remove_dir_all(&dir);
    conv::say_err(&format!("interlab cluster: stopped {} launcher(s)", groups.len()));
    Ok(ExitCode::SUCCESS)
}

/// `live`/`run --peers-file FILE`: rewrites the arguments into `--peer HOST:PORT ...` (and
/// `--auth-token-file` from the file's `# auth-token-file:` line when no secret is given),
/// before clap parses them.
pub fn expand_peers_file(args: Vec<OsString>) -> Result<Vec<OsString>, String> {
    let sub = args.get(1).and_then(|s| s.to_str()).unwrap_or("");
    if sub != "live" && sub != "run" {
        return Ok(args);
    }
    let mut out = Vec::new();
    let mut file: Option<PathBuf> = None;
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        let s = a.to_string_lossy();
        if s == "--" {
            out.push(a);
            out.extend(it);
            break;
        }
        if s == "--peers-file" {
            file = Some(PathBuf::from(it.next().ok_or("--peers-file needs a FILE")?));
        } else if let Some(v) = s.strip_prefix("--peers-file=") {
            file = Some(PathBuf::from(v));
        } else {
            out.push(a);
        }
    }
    let Some(f) = file else { return Ok(out) };
    let text = std::fs::read_to_string(&f).map_err(|e| format!("--peers-file {}: {e}", f.display()))?;
    let has_secret = out.iter().any(|a| a.to_string_lossy().starts_with("--auth-token")) || std::env::var_os("INTERLAB_AUTH_TOKEN").is_some();
    let mut n = 0;
    for line in text.lines().map(str::trim) {
        if let Some(t) = line.strip_prefix("# auth-token-file:") {
            if !has_secret {
                out.push("--auth-token-file".into());
                out.push(t.trim().into());
            }
        } else if !line.is_empty() && !line.starts_with('#') {
            out.push("--peer".into());
            out.push(line.into());
            n += 1;
        }
    }
    if n == 0 {
        return Err(format!("--peers-file {}: no peers", f.display()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slurm_node_lists_expand() {
        assert_eq!(parse_nodelist("node[01-03,07],gpu5").unwrap(), ["node01", "node02", "node03", "node07", "gpu5"]);
        assert_eq!(parse_nodelist("a1").unwrap(), ["a1"]);
        assert_eq!(parse_nodelist("r[1-2]-ib,x[9-10]").unwrap(), ["r1-ib", "r2-ib", "x9", "x10"]);
        assert!(parse_nodelist("n[3-1]").is_err());
        assert!(parse_nodelist("n[a-b]").is_err());
    }

    #[test]
    fn host_files_and_logs_parse() {
        assert_eq!(parse_hosts("# lab\nh1\n  root@h2 slots=4\n\nh3 # spare\n"), ["h1", "root@h2", "h3"]);
        let log = "[1,1]<stdout>:interlab serve: host b pid 20\n[1,0]<stdout>:interlab serve: host a pid 10\n[1,0]<stdout>:interlab serve: listening on 0.0.0.0:4000 (control protocol 1, auth on)\n[1,1]<stdout>:interlab serve: listening on 0.0.0.0:4001 (x)\n";
        let d = parse_log(log);
        assert_eq!(d.len(), 2);
        assert_eq!((d[0].1.as_str(), d[0].2, d[0].3), ("a", 10, 4000));
        assert_eq!((d[1].1.as_str(), d[1].2, d[1].3), ("b", 20, 4001));
    }

    #[test]
    fn peers_files_become_peer_flags() {
        let dir = std::env::temp_dir().join(format!("interlab-pf-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("peers");
        std::fs::write(&f, "# x\n# auth-token-file: /t/token\nh1:1\nh2:2\n").unwrap();
        let args: Vec<OsString> = ["interlab", "live", "fan-in", "--peers-file", f.to_str().unwrap(), "--quiet"].iter().map(Into::into).collect();
        let out: Vec<String> = expand_peers_file(args).unwrap().iter().map(|s| s.to_string_lossy().into_owned()).collect();
        if std::env::var_os("INTERLAB_AUTH_TOKEN").is_none() {
            assert_eq!(out, ["interlab", "live", "fan-in", "--quiet", "--auth-token-file", "/t/token", "--peer", "h1:1", "--peer", "h2:2"]);
        }
        let run: Vec<OsString> = ["interlab", "run", "s.toml", "--peers-file", f.to_str().unwrap(), "--auth-token-file", "/mine"].iter().map(Into::into).collect();
        let out: Vec<String> = expand_peers_file(run).unwrap().iter().map(|s| s.to_string_lossy().into_owned()).collect();
        assert_eq!(out, ["interlab", "run", "s.toml", "--auth-token-file", "/mine", "--peer", "h1:1", "--peer", "h2:2"]);
        let other: Vec<OsString> = ["interlab", "serve", "--peers-file", "x"].iter().map(Into::into).collect();
        assert_eq!(expand_peers_file(other.clone()).unwrap(), other);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn shell_quoting() {
        assert_eq!(sh_quote("a-b/c"), "a-b/c");
        assert_eq!(sh_quote("it's"), "'it'\\''s'");
    }
}

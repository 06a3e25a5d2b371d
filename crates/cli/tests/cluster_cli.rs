//! `interlab cluster up|down` and the daemon lifetime options, on this machine:
//! - `--hosts` through a stand-in `ssh` on PATH that runs the remote command locally (the
//!   way sshd would: `sh -c COMMAND`, standard input passed through), with two `localhost`
//!   entries; a real sshd in network namespaces is not used here;
//! - `--mpirun 2` when Open MPI is installed (otherwise a note and a pass);
//! - a fan-in across the daemons with `live --peers-file`, and `cluster down` leaving no
//!   daemon behind;
//! - `serve --exit-idle` and `serve --exit-with-parent`.

mod common;

use common::{bin, text};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("interlab-cluster-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks for existence. A zombie counts as gone.
    (unsafe { libc::kill(pid, 0) == 0 }) && !std::fs::read_to_string(format!("/proc/{pid}/stat")).map(|s| s.contains(") Z ")).unwrap_or(true)
}

fn wait_gone(pids: &[i32], within: Duration) -> bool {
    let t = Instant::now();
    while t.elapsed() < within {
        if pids.iter().all(|&p| !alive(p)) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

/// Daemon pids `cluster up` recorded.
fn daemon_pids(peers: &Path) -> Vec<i32> {
    let d = std::fs::read_to_string(format!("{}.d/daemons", peers.display())).unwrap();
    d.lines().filter_map(|l| l.split_whitespace().nth(1)?.parse().ok()).collect()
}

/// Up, a fan-in over the peer list, down; no daemon left.
fn up_fanin_down(dir: &Path, how: &[&str], path_env: Option<&str>) {
    let peers = dir.join("peers");
    let mut up = bin();
    up.args(["cluster", "up", "--peers-file", peers.to_str().unwrap(), "--exit-idle", "60s", "--timeout", "30s"]).args(how);
    if let Some(p) = path_env {
        up.env("PATH", p);
    }
    let o = up.output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let list = std::fs::read_to_string(&peers).unwrap();
    let addrs: Vec<&str> = list.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(addrs.len(), 2, "{list}");
    assert!(list.contains("# auth-token-file: "), "{list}");
    use std::os::unix::fs::PermissionsExt;
    let tok = format!("{}.d/token", peers.display());
    assert_eq!(std::fs::metadata(&tok).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(std::fs::metadata(&peers).unwrap().permissions().mode() & 0o777, 0o600);
    let pids = daemon_pids(&peers);
    assert_eq!(pids.len(), 2);
    assert!(pids.iter().all(|&p| alive(p)));
    let o = bin().args(["live", "fan-in", "--peers-file", peers.to_str().unwrap(), "--sizes", "4K", "--iterations", "5", "--warmup", "1", "--json", "--quiet"]).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let rec: serde_json::Value = serde_json::from_str(String::from_utf8_lossy(&o.stdout).lines().next().unwrap()).unwrap();
    assert_eq!(rec["pattern"], "fan-in");
    assert_eq!(rec["peers"].as_array().unwrap().len(), 2, "{rec}");
    assert!(rec["value"].as_f64().unwrap() > 0.0);
    let mut down = bin();
    down.args(["cluster", "down", "--peers-file", peers.to_str().unwrap()]);
    if let Some(p) = path_env {
        down.env("PATH", p);
    }
    let o = down.output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(wait_gone(&pids, Duration::from_secs(10)), "daemons {pids:?} still running after cluster down");
    assert!(!peers.exists() && !Path::new(&format!("{}.d", peers.display())).exists());
}

#[test]
fn hosts_through_ssh_stand_in() {
    let dir = tmp("ssh");
    let fakebin = dir.join("bin");
    std::fs::create_dir_all(&fakebin).unwrap();
    // Like ssh: options, a host, a command line run by the login shell (here: locally).
    let ssh = fakebin.join("ssh");
    std::fs::write(&ssh, "#!/bin/sh\nwhile [ $# -gt 0 ]; do case \"$1\" in -o) shift 2;; -*) shift;; *) break;; esac; done\nhost=\"$1\"; shift\nHOME=\"$FAKE_HOME\" sh -c \"$*\"\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&ssh, std::fs::Permissions::from_mode(0o755)).unwrap();
    let interlab_dir = Path::new(env!("CARGO_BIN_EXE_interlab")).parent().unwrap().to_str().unwrap().to_string();
    let path = format!("{}:{interlab_dir}:{}", fakebin.display(), std::env::var("PATH").unwrap_or_default());
    let home = dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    std::env::set_var("FAKE_HOME", &home);
    let hosts = dir.join("hosts");
    std::fs::write(&hosts, "# two entries for this machine\nlocalhost\nlocalhost\n").unwrap();
    up_fanin_down(&dir, &["--hosts", hosts.to_str().unwrap()], Some(&path));
    let left: Vec<_> = std::fs::read_dir(home.join(".interlab")).map(|d| d.filter_map(|e| e.ok()).collect()).unwrap_or_default();
    assert!(left.is_empty(), "remote secret left behind: {left:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn mpirun_launcher() {
    if !Command::new("mpirun").arg("--version").output().map(|o| o.status.success()).unwrap_or(false) {
        eprintln!("note: skipped: mpirun not installed (apt-get install openmpi-bin)");
        return;
    }
    let dir = tmp("mpirun");
    let mut how = vec!["--mpirun", "2", "--launcher-arg=--oversubscribe"];
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        how.push("--launcher-arg=--allow-run-as-root");
    }
    up_fanin_down(&dir, &how, None);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_second_up_on_the_same_peers_file_is_refused_and_down_without_up_fails() {
    let dir = tmp("twice");
    let peers = dir.join("p");
    let o = bin().args(["cluster", "down", "--peers-file", peers.to_str().unwrap()]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    std::fs::create_dir_all(dir.join("p.d")).unwrap();
    std::fs::write(dir.join("p.d/launchers"), "").unwrap();
    let o = bin().args(["cluster", "up", "--mpirun", "1", "--peers-file", peers.to_str().unwrap()]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("cluster down"), "{}", text(&o));
    let o = bin().args(["cluster", "up", "--peers-file", peers.to_str().unwrap()]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "one of --hosts, --slurm, --mpirun is required: {}", text(&o));
    let o = bin().args(["cluster", "up", "--slurm", "--peers-file", dir.join("q").to_str().unwrap()]).env_remove("SLURM_JOB_NODELIST").output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("SLURM_JOB_NODELIST"), "{}", text(&o));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn serve_exits_when_idle() {
    let t = Instant::now();
    let o = bin().args(["serve", "--port", "0", "--quiet", "--exit-idle", "1s"]).stdin(Stdio::null()).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(t.elapsed() < Duration::from_secs(10));
    assert!(text(&o).contains("--exit-idle"), "{}", text(&o));
}

#[test]
fn serve_exits_with_its_launcher() {
    // sh starts the daemon in the background, prints its pid and is killed: the daemon's
    // parent is gone.
    let mut sh = Command::new("sh")
        .args(["-c", &format!("{} serve --port 0 --quiet --exit-with-parent >/dev/null 2>&1 & echo $!; wait", env!("CARGO_BIN_EXE_interlab"))])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(sh.stdout.take().unwrap()), &mut line).unwrap();
    let pid: i32 = line.trim().parse().unwrap();
    std::thread::sleep(Duration::from_millis(700));
    assert!(alive(pid));
    sh.kill().unwrap();
    sh.wait().unwrap();
    let gone = wait_gone(&[pid], Duration::from_secs(5));
    if !gone {
        // SAFETY: cleaning up the daemon this test started.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    assert!(gone, "daemon outlived its launcher");
}

/// A private sshd on a loopback port (root only: it needs /run/sshd and host keys), with a
/// key pair made for the test; killed on drop.
struct Sshd {
    child: std::process::Child,
    wrapper: PathBuf,
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_sshd(dir: &Path) -> Option<Sshd> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 || !Path::new("/usr/sbin/sshd").exists() || !Path::new("/usr/bin/ssh-keygen").exists() {
        eprintln!("note: skipped the real-sshd test: needs root, /usr/sbin/sshd and ssh-keygen (apt-get install openssh-server)");
        return None;
    }
    for k in ["hostkey", "userkey"] {
        let o = Command::new("ssh-keygen").args(["-q", "-t", "ed25519", "-N", "", "-f"]).arg(dir.join(k)).output().unwrap();
        assert!(o.status.success(), "{}", text(&o));
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let _ = std::fs::create_dir_all("/run/sshd");
    let d = dir.display();
    std::fs::write(
        dir.join("sshd_config"),
        format!("Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/hostkey\nAuthorizedKeysFile {d}/userkey.pub\nPermitRootLogin prohibit-password\nPasswordAuthentication no\nUsePAM no\nStrictModes no\nPidFile none\n"),
    )
    .unwrap();
    let child = Command::new("/usr/sbin/sshd").args(["-D", "-f"]).arg(dir.join("sshd_config")).arg("-E").arg(dir.join("sshd.log")).spawn().unwrap();
    let wrapper = dir.join("ssh");
    std::fs::write(&wrapper, format!("#!/bin/sh\nexec ssh -p {port} -i {d}/userkey -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR \"$@\"\n")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let sshd = Sshd { child, wrapper };
    let t = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(t.elapsed() < Duration::from_secs(10), "sshd did not start: {}", std::fs::read_to_string(dir.join("sshd.log")).unwrap_or_default());
        std::thread::sleep(Duration::from_millis(50));
    }
    Some(sshd)
}

#[test]
fn hosts_through_a_real_sshd() {
    let dir = tmp("sshd");
    let Some(sshd) = start_sshd(&dir) else { return };
    let hosts = dir.join("hosts");
    std::fs::write(&hosts, "localhost\n127.0.0.1\n").unwrap();
    let w = sshd.wrapper.to_str().unwrap().to_string();
    let home = std::env::var("HOME").unwrap_or_default();
    let secrets = |tag: &str| std::fs::read_dir(Path::new(&home).join(".interlab")).map(|d| d.filter_map(|e| e.ok()).filter(|e| e.file_name().to_string_lossy().starts_with(tag)).count()).unwrap_or(0);
    let before = secrets("cluster-");
    up_fanin_down(&dir, &["--hosts", hosts.to_str().unwrap(), "--ssh", &w, "--remote-bin", env!("CARGO_BIN_EXE_interlab")], None);
    assert_eq!(secrets("cluster-"), before, "`down` (reusing up's --ssh) removes the remote copies of the secret");
    // The client dies without `down`: the daemon ends with its ssh session.
    let one = dir.join("hosts1");
    std::fs::write(&one, "localhost\n").unwrap();
    let peers = dir.join("p1");
    let o = bin().args(["cluster", "up", "--hosts", one.to_str().unwrap(), "--ssh", &w, "--remote-bin", env!("CARGO_BIN_EXE_interlab"), "--peers-file", peers.to_str().unwrap()]).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let pids = daemon_pids(&peers);
    let launcher: i32 = std::fs::read_to_string(format!("{}.d/launchers", peers.display())).unwrap().split_whitespace().next().unwrap().parse().unwrap();
    // SAFETY: the ssh client this test's `cluster up` started.
    unsafe { libc::kill(launcher, libc::SIGKILL) };
    let gone = wait_gone(&pids, Duration::from_secs(10));
    let _ = bin().args(["cluster", "down", "--ssh", &w, "--peers-file", peers.to_str().unwrap()]).output();
    assert!(gone, "daemon {pids:?} outlived its ssh session");
    drop(sshd);
    let _ = std::fs::remove_dir_all(&dir);
}

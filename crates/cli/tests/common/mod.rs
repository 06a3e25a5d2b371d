//! Shared by the CLI integration tests: the binary under test, output text, and an
//! `interlab serve` daemon on a free loopback port.

#![allow(dead_code)]

pub mod netns;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Output, Stdio};

/// The `interlab` binary under test.
pub fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_interlab"))
}

/// Standard output and error together.
pub fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// A child process killed (and reaped) on drop, even when the test fails.
pub struct KillOnDrop(pub Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Spawns `cmd` with its standard output piped and returns it with its first line (a
/// daemon's banner, printed once it listens).
pub fn spawn_with_banner(cmd: &mut Command) -> (Child, String) {
    let mut child = cmd.stdout(Stdio::piped()).spawn().expect("the process starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    (child, line)
}

/// A daemon process on a free loopback port, killed on drop.
pub struct Serve {
    pub child: Child,
    pub addr: String,
}

impl Serve {
    /// `interlab serve --port 0 --quiet` plus `extra`; waits for its banner.
    pub fn start(extra: &[&str]) -> Serve {
        let (child, line) = spawn_with_banner(bin().args(["serve", "--port", "0", "--quiet"]).args(extra).stderr(Stdio::null()));
        // "interlab serve: listening on 127.0.0.1:PORT (...)"
        let addr = line.split_whitespace().nth(4).unwrap_or_else(|| panic!("unexpected banner: {line}")).to_string();
        Serve { child, addr }
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

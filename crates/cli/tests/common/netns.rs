//! Two hosts in network namespaces joined by a veth pair (10.213.<subnet>.1 in a, .2 in b),
//! deleted on drop. `Pair::new` gives None, with a printed notice, where `ip netns add` is
//! not permitted. Traffic stays inside the namespaces the tests create.

use std::process::Command;

pub fn ip(args: &[&str]) -> Result<(), String> {
    let o = Command::new("ip").args(args).output().map_err(|e| format!("ip: {e}"))?;
    if o.status.success() {
        Ok(())
    } else {
        Err(format!("ip {}: {}", args.join(" "), String::from_utf8_lossy(&o.stderr).trim()))
    }
}

/// Namespaces `<a>` and `<b>` joined by veth `<va>`/`<vb>`; deleted on drop, even on failure.
pub struct Pair {
    pub a: String,
    pub b: String,
    pub va: String,
    pub vb: String,
    pub subnet: u8,
}

impl Drop for Pair {
    fn drop(&mut self) {
        // Deleting a namespace deletes the veth end inside it, and with it the peer.
        let _ = ip(&["netns", "del", &self.a]);
        let _ = ip(&["netns", "del", &self.b]);
    }
}

impl Pair {
    /// None (with a printed notice) when namespaces cannot be made here.
    pub fn new(tag: u8) -> Option<Pair> {
        let id = std::process::id() % 100_000;
        let a = format!("ilab{id}{tag}a");
        let b = format!("ilab{id}{tag}b");
        if let Err(e) = ip(&["netns", "add", &a]) {
            eprintln!("NOTICE: skipping the namespace test: `ip netns add` is not permitted here ({e})");
            return None;
        }
        let p = Pair { a, b, va: format!("ilv{id}{tag}a"), vb: format!("ilv{id}{tag}b"), subnet: 100 + tag };
        let vb = p.vb.clone();
        let (na, nb) = (format!("10.213.{}.1/24", p.subnet), format!("10.213.{}.2/24", p.subnet));
        let steps: Vec<Vec<&str>> = vec![
            vec!["netns", "add", &p.b],
            vec!["link", "add", &p.va, "type", "veth", "peer", "name", &vb],
            vec!["link", "set", &p.va, "netns", &p.a],
            vec!["link", "set", &vb, "netns", &p.b],
            vec!["-n", &p.a, "addr", "add", &na, "dev", &p.va],
            vec!["-n", &p.b, "addr", "add", &nb, "dev", &vb],
            vec!["-n", &p.a, "link", "set", &p.va, "up"],
            vec!["-n", &p.b, "link", "set", &vb, "up"],
            vec!["-n", &p.a, "link", "set", "lo", "up"],
            vec!["-n", &p.b, "link", "set", "lo", "up"],
        ];
        for s in steps {
            if let Err(e) = ip(&s) {
                eprintln!("NOTICE: skipping the namespace test: {e}");
                return None;
            }
        }
        Some(p)
    }

    /// Namespace b's address (a has .1).
    pub fn server_ip(&self) -> String {
        format!("10.213.{}.2", self.subnet)
    }

    /// Runs `tc` inside namespace a (the sender's egress is shaped).
    pub fn tc(&self, args: &[&str]) {
        self.tc_in(&self.a, args);
    }

    /// Runs `tc` inside namespace `ns`.
    pub fn tc_in(&self, ns: &str, args: &[&str]) {
        let o = Command::new("ip").args(["netns", "exec", ns, "tc"]).args(args).output().expect("tc runs");
        assert!(o.status.success(), "tc {}: {}", args.join(" "), String::from_utf8_lossy(&o.stderr));
    }

    /// `interlab ARGS` inside namespace `ns`.
    pub fn exec(&self, ns: &str, args: &[&str]) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", ns, env!("CARGO_BIN_EXE_interlab")]).args(args);
        c
    }
}

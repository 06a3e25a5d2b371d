//! The bookstore's tiers on two hosts: the database tier in one network namespace, the web
//! and application tiers and the browser emulator in another, joined by a veth pair with a
//! token-bucket rate limit in both directions. Every application-to-database exchange
//! crosses the shaped link; the run must complete without errors and the veth counters
//! must carry at least the bytes the trace says went between the tiers. Skipped with a
//! notice where `ip netns add` is not permitted.

use std::process::{Command, Stdio};

mod common;
use common::netns::Pair;
use common::{spawn_with_banner, KillOnDrop};

/// Starts `interlab datacenter serve ARGS` in `ns` and returns it with its address.
fn tier(p: &Pair, ns: &str, args: &[&str]) -> (KillOnDrop, String) {
    let (c, line) = spawn_with_banner(p.exec(ns, &["datacenter", "serve", "--quiet"]).args(args).stderr(Stdio::inherit()));
    let addr = line
        .split(" listening on ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .unwrap_or_else(|| panic!("tier banner {line:?}"))
        .to_string();
    (KillOnDrop(c), addr)
}

/// Bytes sent and received by `dev` in `ns` (from `ip -s -j link`).
fn counters(ns: &str, dev: &str) -> (u64, u64) {
    let o = Command::new("ip").args(["-n", ns, "-s", "-j", "link", "show", "dev", dev]).output().expect("ip runs");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("ip -j: {e}: {}", String::from_utf8_lossy(&o.stdout)));
    let s = &v[0]["stats64"];
    (s["tx"]["bytes"].as_u64().unwrap(), s["rx"]["bytes"].as_u64().unwrap())
}

#[test]
fn database_tier_in_its_own_namespace_behind_a_rate_limited_link() {
    let Some(p) = Pair::new(20) else { return };
    // 50 Mbit/s each way: requests from the application tier, rows from the database.
    for (ns, dev) in [(&p.a, &p.va), (&p.b, &p.vb)] {
        p.tc_in(ns, &["qdisc", "add", "dev", dev, "root", "tbf", "rate", "50mbit", "burst", "32kb", "latency", "50ms"]);
    }
    let dir = std::env::temp_dir().join(format!("interlab-dcns-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("bs.sqlite");
    let db_listen = format!("{}:7482", p.server_ip());
    let (_db, db_addr) = tier(&p, &p.b.clone(), &["--tier", "db", "--listen", &db_listen, "--db", db.to_str().unwrap(), "--items", "1000", "--ebs", "1"]);
    assert_eq!(db_addr, db_listen);
    let (_app, app_addr) = tier(&p, &p.a.clone(), &["--tier", "app", "--listen", "127.0.0.1:0", "--db-tier", &db_addr]);
    let (_web, url) = tier(&p, &p.a.clone(), &["--tier", "web", "--listen", "127.0.0.1:0", "--app-tier", &app_addr]);
    let before = counters(&p.a, &p.va);
    let (json, trace) = (dir.join("wips.json"), dir.join("trace.jsonl"));
    let o = p
        .exec(&p.a, &["datacenter", "drive", "--url", &url, "--browsers", "4", "--mix", "shopping", "--duration", "4s", "--think-scale", "0.02"])
        .args(["--session-scale", "0.002", "--quiet", "--json", json.to_str().unwrap(), "--trace", trace.to_str().unwrap()])
        .output()
        .expect("drive runs");
    assert!(o.status.success(), "{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    let after = counters(&p.a, &p.va);
    let r: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(r["errors"]["total"], 0, "{r}");
    assert!(r["interactions_total"].as_u64().unwrap() > 20, "{r}");
    // What the application tier says it exchanged with the database, from the trace.
    let (mut to_db, mut from_db) = (0u64, 0u64);
    for line in std::fs::read_to_string(&trace).unwrap().lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        for t in v["tiers"].as_array().into_iter().flatten().filter(|t| t["tier"] == "app") {
            to_db += t["to_next"]["bytes"].as_u64().unwrap_or(0);
            from_db += t["from_next"]["bytes"].as_u64().unwrap_or(0);
        }
    }
    assert!(to_db > 0 && from_db > to_db, "app-db bytes from the trace: {to_db} out, {from_db} back");
    // The veth carried them (plus TCP/IP headers and ACKs).
    let (tx, rx) = (after.0 - before.0, after.1 - before.1);
    eprintln!("app->db {to_db} B over the veth's {tx} B out; db->app {from_db} B over {rx} B in");
    assert!(tx >= to_db && rx >= from_db, "veth tx {tx} rx {rx} vs trace {to_db} / {from_db}");
    let _ = std::fs::remove_dir_all(&dir);
}

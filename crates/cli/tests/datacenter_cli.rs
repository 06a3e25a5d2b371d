//! End-to-end tests of `interlab datacenter`: the three tiers as separate processes on
//! loopback driven by the browser emulator (SQLite; PostgreSQL when INTERLAB_PG_URL is
//! set), traces, clean shutdown, bad input, and headless Chromium screenshots when
//! `chromium` is installed.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_interlab"))
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("interlab-dc-cli-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn alive(pid: u32) -> bool {
    // A zombie still has /proc/<pid>; look at its state.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => !s.split(") ").nth(1).map(|r| r.starts_with('Z')).unwrap_or(false),
        Err(_) => false,
    }
}

/// `serve --tier all` on a free port, stopped with SIGTERM on drop.
struct Bookstore {
    child: Child,
    url: String,
    pids: Vec<u32>,
    /// The banner line.
    line: String,
}

impl Bookstore {
    fn start(db: &[&str], extra: &[&str]) -> Bookstore {
        Bookstore::start_in(db, extra, false)
    }

    /// `own_group`: the command leads a process group of its own, as a shell job does, so
    /// a terminal's Ctrl-C can be imitated by signalling the whole group.
    fn start_in(db: &[&str], extra: &[&str], own_group: bool) -> Bookstore {
        let mut cmd = bin();
        if own_group {
            use std::os::unix::process::CommandExt;
            cmd.process_group(0);
        }
        let mut child = cmd
            .args(["datacenter", "serve", "--tier", "all", "--listen", "127.0.0.1:0", "--items", "1000", "--ebs", "1", "--quiet"])
            .args(db)
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("serve starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        // "interlab datacenter: bookstore at http://127.0.0.1:PORT/ (web pid A, app pid B on ..., db pid C on ...); ..."
        let url = line.split_whitespace().nth(4).unwrap_or_else(|| panic!("unexpected banner: {line:?}")).to_string();
        assert!(url.starts_with("http://127.0.0.1:"), "{line}");
        let pids: Vec<u32> = line.split("pid ").skip(1).filter_map(|s| s.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()).collect();
        assert_eq!(pids.len(), 3, "{line}");
        Bookstore { child, url, pids, line }
    }

    /// SIGTERM; the command and its three tiers must be gone within 5 s, exit status 0.
    /// The database tier's TCP port, from the banner's "db pid N on ADDR:PORT)".
    fn db_port(&self) -> String {
        self.line.split("db pid ").nth(1).and_then(|s| s.split(" on ").nth(1)).and_then(|s| s.split(')').next()).and_then(|a| a.rsplit(':').next()).unwrap().to_string()
    }

    fn stop(self) {
        // SAFETY: signalling our own child by its pid.
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        self.wait_stopped();
    }

    /// Ctrl-C: SIGINT to the whole process group (the command and its three tiers).
    fn ctrl_c(self) {
        // SAFETY: signalling the process group our own child leads.
        unsafe { libc::kill(-(self.child.id() as libc::pid_t), libc::SIGINT) };
        self.wait_stopped();
    }

    fn wait_stopped(mut self) {
        let t0 = Instant::now();
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            assert!(t0.elapsed() < Duration::from_secs(10), "serve did not stop on SIGTERM");
            std::thread::sleep(Duration::from_millis(20));
        };
        assert!(status.success(), "serve exited with {status}");
        for &p in &self.pids {
            let t0 = Instant::now();
            while alive(p) && t0.elapsed() < Duration::from_secs(5) {
                std::thread::sleep(Duration::from_millis(20));
            }
            assert!(!alive(p), "tier process {p} still running after serve stopped");
        }
        self.pids.clear();
    }
}

impl Drop for Bookstore {
    fn drop(&mut self) {
        if self.pids.is_empty() {
            return;
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn drive(url: &str, args: &[&str]) -> Output {
    bin()
        .args(["datacenter", "drive", "--url", url, "--think-scale", "0.02", "--session-scale", "0.002", "--quiet"])
        .args(args)
        .output()
        .expect("drive runs")
}

fn json(p: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn jsonl(p: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(p).unwrap().lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect()
}

fn http_get(url: &str, path: &str) -> (u16, Vec<u8>) {
    let authority = url.trim_start_matches("http://").trim_end_matches('/');
    let mut s = std::net::TcpStream::connect(authority).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n").unwrap();
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).unwrap();
    let split = buf.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8_lossy(&buf[..split]).to_string();
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    (status, buf[split + 4..].to_vec())
}

fn check_report(r: &serde_json::Value, mix: &str) {
    assert_eq!(r["mix"], mix);
    assert_eq!(r["errors"]["total"], 0, "{}", serde_json::to_string_pretty(&r["errors"]).unwrap());
    assert!(r["interactions"].as_u64().unwrap() >= 10, "{r}");
    assert!(r["wips"].as_f64().unwrap() > 1.0);
    let per = r["per_interaction"].as_array().unwrap();
    assert_eq!(per.len(), 14);
    for p in per {
        if p["count"].as_u64().unwrap() > 0 {
            assert!(p["p50_ms"].as_f64().unwrap() <= p["p90_ms"].as_f64().unwrap());
            assert!(p["p90_ms"].as_f64().unwrap() <= p["p99_ms"].as_f64().unwrap());
        }
    }
}

#[test]
fn three_tiers_driven_by_every_mix_with_traces_then_clean_shutdown() {
    let d = tmpdir("e2e");
    let db = d.join("b.sqlite");
    let strace = d.join("serve.jsonl");
    let bs = Bookstore::start(&["--db", db.to_str().unwrap()], &["--trace", strace.to_str().unwrap()]);
    let (status, body) = http_get(&bs.url, "/tpcw/info");
    assert_eq!(status, 200);
    let info: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!((info["items"].as_u64(), info["customers"].as_u64()), (Some(1000), Some(2880)));
    for (mix, secs, browsers) in [("shopping", "3s", "4"), ("ordering", "2s", "3"), ("browsing", "1s", "2")] {
        let json_out = d.join(format!("{mix}.json"));
        let dtrace = d.join(format!("{mix}.jsonl"));
        let o = drive(
            &bs.url,
            &["--browsers", browsers, "--duration", secs, "--mix", mix, "--json", json_out.to_str().unwrap(), "--trace", dtrace.to_str().unwrap()],
        );
        assert!(o.status.success(), "{mix}: {}", text(&o));
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(out.contains("90th within limit") && out.contains("errors: 0"), "{out}");
        let r = json(&json_out);
        check_report(&r, mix);
        // Drive trace: one record per interaction, every tier present with CPU and messages.
        let recs = jsonl(&dtrace);
        assert_eq!(recs.len() as u64, r["interactions_total"].as_u64().unwrap());
        for rec in &recs {
            assert_eq!(rec["schema"], 1);
            assert_eq!(rec["source"], "drive");
            let tiers: Vec<&str> = rec["tiers"].as_array().unwrap().iter().map(|t| t["tier"].as_str().unwrap()).collect();
            assert_eq!(&tiers[..2], &["browser", "web"], "{rec}");
            let web = &rec["tiers"][1];
            assert_eq!(web["to_next"]["messages"], 1, "one page request to the app tier: {rec}");
            assert!(web["cpu_ns"].as_u64().unwrap() > 0);
            let browser = &rec["tiers"][0];
            assert_eq!(browser["requests"].as_u64().unwrap(), 1 + rec["images"].as_u64().unwrap());
            if rec["interaction"] != "ORDI" {
                assert!(tiers.contains(&"db"), "{rec}");
            }
        }
        // The CLI reads its own traces back.
        let o = bin().args(["datacenter", "trace", dtrace.to_str().unwrap()]).output().unwrap();
        assert!(o.status.success(), "{}", text(&o));
        assert!(String::from_utf8_lossy(&o.stdout).contains("schema version 1"));
    }
    bs.stop();
    // The web tier flushed its trace on SIGTERM: pages and images, all version 1.
    let recs = jsonl(&strace);
    assert!(recs.iter().any(|r| r["kind"] == "image") && recs.iter().any(|r| r["kind"] == "page"));
    assert!(recs.iter().all(|r| r["schema"] == 1 && r["source"] == "serve"));
    assert!(recs.iter().filter(|r| r["kind"] == "page" && r["interaction"] == "BUYC").all(|r| r["tiers"].as_array().unwrap().len() == 3));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn tiers_joined_by_unix_sockets() {
    let d = tmpdir("unix");
    let db = d.join("b.sqlite");
    let bs = Bookstore::start_in(&["--db", db.to_str().unwrap()], &["--inner", "unix"], true);
    let j = d.join("r.json");
    let o = drive(&bs.url, &["--browsers", "2", "--duration", "1s", "--json", j.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    check_report(&json(&j), "shopping");
    let parent = bs.child.id();
    bs.ctrl_c();
    let sockets = std::env::temp_dir().join(format!("interlab-dc-{parent}"));
    assert!(!sockets.exists(), "{} left behind", sockets.display());
    let _ = std::fs::remove_dir_all(&d);
}

/// Reads a tier's banner and returns its address.
fn start_tier(args: &[&str]) -> (Child, String) {
    let mut c = bin().args(["datacenter", "serve", "--quiet"]).args(args).stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn().unwrap();
    let mut line = String::new();
    BufReader::new(c.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let addr = line.split(" listening on ").nth(1).and_then(|s| s.split_whitespace().next()).unwrap_or_else(|| panic!("banner {line:?}")).to_string();
    (c, addr)
}

#[test]
fn tiers_started_one_by_one() {
    let d = tmpdir("manual");
    let db = d.join("b.sqlite");
    let (mut dbp, db_addr) = start_tier(&["--tier", "db", "--listen", "127.0.0.1:0", "--db", db.to_str().unwrap(), "--items", "1000", "--ebs", "1"]);
    let (mut app, app_addr) = start_tier(&["--tier", "app", "--listen", "127.0.0.1:0", "--db-tier", &db_addr]);
    let (mut web, url) = start_tier(&["--tier", "web", "--listen", "127.0.0.1:0", "--app-tier", &app_addr]);
    let (status, body) = http_get(&url, "/tpcw/product_detail?I_ID=42");
    let html = String::from_utf8_lossy(&body);
    assert_eq!(status, 200, "{html}");
    assert!(html.contains("<meta name=\"tpcw-interaction\" content=\"PROD\">") && html.trim_end().ends_with("</html>"));
    let (status, body) = http_get(&url, "/img/item/99.png");
    assert_eq!((status, body.len()), (200, 250 * 1024));
    let (status, body) = http_get(&url, "/tpcw/product_detail?I_ID=abc");
    assert_eq!(status, 400, "{}", String::from_utf8_lossy(&body));
    assert_eq!(http_get(&url, "/tpcw/product_detail?I_ID=99999").0, 404);
    assert_eq!(http_get(&url, "/nope").0, 404);
    // The web tier answers 502 when the application tier is gone, and keeps serving images.
    let _ = app.kill();
    let _ = app.wait();
    assert_eq!(http_get(&url, "/tpcw/home").0, 502);
    assert_eq!(http_get(&url, "/img/logo.png").0, 200);
    for c in [&mut web, &mut dbp] {
        let _ = c.kill();
        let _ = c.wait();
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn bad_input_gives_clear_errors_never_panics() {
    let d = tmpdir("bad");
    let file = d.join("plain-file");
    std::fs::write(&file, b"not a directory").unwrap();
    let under_file = file.join("db.sqlite");
    let garbage = d.join("garbage.jsonl");
    std::fs::write(&garbage, b"{\"v\":1,\"source\":\"drive\"}\n").unwrap();
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let busy_addr = busy.local_addr().unwrap().to_string();
    let busy_db = d.join("busy.sqlite");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["serve", "--tier", "all", "--listen", &busy_addr, "--db", busy_db.to_str().unwrap()], "the web tier exited before it was ready"),
        (vec!["serve", "--tier", "web", "--listen", &busy_addr], "cannot listen on"),
        (vec!["drive", "--session-scale", "1e300"], "--session-scale"),
        (vec!["drive", "--url", "ftp://127.0.0.1:1/"], "only http:// is supported"),
        (vec!["drive", "--url", "127.0.0.1:8080"], "expected http://HOST:PORT/"),
        (vec!["drive", "--url", "http://127.0.0.1:1/", "--duration", "1s"], "cannot reach the bookstore at http://127.0.0.1:1/"),
        (vec!["drive", "--mix", "fancy"], "unknown mix 'fancy': expected browsing, shopping or ordering"),
        (vec!["drive", "--duration", "soon"], "duration `soon`"),
        (vec!["drive", "--browsers", "0"], "--browsers 0"),
        (vec!["drive", "--think-scale=-1"], "--think-scale"),
        (vec!["drive", "--json", under_file.to_str().unwrap()], "--json"),
        (vec!["serve", "--tier", "db", "--listen", "127.0.0.1:0", "--db", under_file.to_str().unwrap()], "cannot open SQLite database"),
        (vec!["serve", "--tier", "all", "--listen", "127.0.0.1:0", "--db", under_file.to_str().unwrap()], "the db tier exited before it was ready"),
        (vec!["populate", "--db", under_file.to_str().unwrap()], "cannot open SQLite database"),
        (vec!["serve", "--tier", "middle"], "unknown tier 'middle'"),
        (vec!["serve", "--items", "1234"], "TPC-W allows 1000, 10000"),
        (vec!["serve", "--db-url", "mysql://x/y"], "expected postgres://"),
        (vec!["serve", "--tier", "app", "--db-tier", "nohost"], "--db-tier: address 'nohost'"),
        (vec!["serve", "--tier", "app", "--listen", "127.0.0.1:0", "--db-tier", "127.0.0.1:1"], "database tier"),
        (vec!["serve", "--tier", "db", "--trace", "x.jsonl"], "--trace is written by the web tier"),
        (vec!["serve", "--tier", "web", "--listen", "unix:/tmp/x.sock"], "HTTP over TCP"),
        (vec!["trace", garbage.to_str().unwrap()], "line 1: not a trace record"),
        (vec!["trace", "/nonexistent/t.jsonl"], "/nonexistent/t.jsonl"),
    ];
    std::thread::scope(|s| {
        for (args, want) in &cases {
            s.spawn(move || {
                let t0 = Instant::now();
                let o = bin().arg("datacenter").args(args).output().unwrap();
                let t = text(&o);
                assert!(!o.status.success(), "{args:?} succeeded: {t}");
                assert!(t.contains(want), "{args:?}: expected {want:?} in: {t}");
                assert!(!t.contains("panicked"), "{args:?}: {t}");
                assert!(t0.elapsed() < Duration::from_secs(45), "{args:?} took {:?}", t0.elapsed());
            });
        }
    });
    let _ = std::fs::remove_dir_all(&d);
}

/// A database of its own on the server INTERLAB_PG_URL points at.
fn pg_database(base: &str, name: &str) -> Option<String> {
    let (prefix, _) = base.rsplit_once('/')?;
    let admin = Command::new("psql").arg(base).args(["-v", "ON_ERROR_STOP=1", "-q", "-c", &format!("DROP DATABASE IF EXISTS {name}"), "-c", &format!("CREATE DATABASE {name}")]).output();
    match admin {
        Ok(o) if o.status.success() => Some(format!("{prefix}/{name}")),
        Ok(o) => {
            eprintln!("note: could not create database {name}: {}; using {base}", text(&o));
            Some(base.to_string())
        }
        Err(_) => Some(base.to_string()),
    }
}

#[test]
fn postgres_end_to_end_when_available() {
    let Ok(base) = std::env::var("INTERLAB_PG_URL") else {
        eprintln!("note: INTERLAB_PG_URL is not set; skipping the PostgreSQL end-to-end test (.ci/run sets it up)");
        return;
    };
    let url = pg_database(&base, "interlab_cli_test").unwrap();
    let o = bin().args(["datacenter", "populate", "--db-url", &url, "--items", "1000", "--ebs", "1", "--force"]).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let bs = Bookstore::start(&["--db-url", &url], &[]);
    let d = tmpdir("pg");
    for mix in ["ordering", "shopping"] {
        let j = d.join(format!("{mix}.json"));
        let o = drive(&bs.url, &["--browsers", "3", "--duration", "2s", "--mix", mix, "--json", j.to_str().unwrap()]);
        assert!(o.status.success(), "{}", text(&o));
        check_report(&json(&j), mix);
    }
    bs.stop();
    let _ = std::fs::remove_dir_all(&d);
}

fn png_ok(p: &Path) -> u64 {
    let b = std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    assert!(b.starts_with(b"\x89PNG\r\n\x1a\n"), "{} is not a PNG", p.display());
    b.len() as u64
}

#[test]
fn chromium_renders_home_and_product_pages() {
    let found = std::env::var_os("PATH").map(|p| std::env::split_paths(&p).any(|d| d.join("chromium").is_file())).unwrap_or(false);
    if !found {
        eprintln!("note: chromium is not on PATH; skipping the headless screenshot test");
        return;
    }
    let d = tmpdir("shots");
    let db = d.join("b.sqlite");
    let bs = Bookstore::start(&["--db", db.to_str().unwrap()], &[]);
    let shots = [("home", "tpcw/home?C_ID=12"), ("product", "tpcw/product_detail?I_ID=99&C_ID=12")];
    std::thread::scope(|s| {
        for (name, path) in shots {
            let (d, url) = (&d, &bs.url);
            s.spawn(move || {
                let out = d.join(format!("{name}.png"));
                let profile = d.join(format!("profile-{name}"));
                let o = Command::new("chromium")
                    .args(["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1200,900"])
                    .arg(format!("--user-data-dir={}", profile.display()))
                    .arg(format!("--screenshot={}", out.display()))
                    .arg(format!("{url}{path}"))
                    .output()
                    .expect("chromium runs");
                assert!(o.status.success(), "chromium: {}", text(&o));
                // A blank 1200x900 page compresses to a few KB; the bookstore's pages do not.
                let n = png_ok(&out);
                assert!(n > 20_000, "{name} screenshot only {n} bytes");
            });
        }
    });
    bs.stop();
    let _ = std::fs::remove_dir_all(&d);
}

/// A raw GET (or another method): status, head, body as sent (chunked bodies undecoded).
fn http_raw(url: &str, method: &str, path: &str, extra: &str) -> (u16, String, Vec<u8>) {
    let authority = url.trim_start_matches("http://").split('/').next().unwrap().to_string();
    let mut s = std::net::TcpStream::connect(&authority).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "{method} {path} HTTP/1.1\r\nHost: {authority}\r\n{extra}Connection: close\r\n\r\n").unwrap();
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).unwrap();
    let split = buf.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8_lossy(&buf[..split]).to_string();
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    (status, head, buf[split + 4..].to_vec())
}

#[test]
fn strict_servlet_site_is_driven_with_zero_errors_by_url_and_by_cookie_sessions() {
    for (sessions, mix) in [("url", "shopping"), ("cookie", "ordering")] {
        let d = tmpdir(&format!("strict-{sessions}"));
        let db = d.join("b.sqlite");
        let bs = Bookstore::start(&["--db", db.to_str().unwrap()], &["--strict", "--strict-sessions", sessions]);
        // What makes it strict, seen on the wire.
        assert_eq!(http_raw(&bs.url, "GET", "/tpcw/info", "").0, 404);
        let (st, head, body) = http_raw(&bs.url, "GET", "/tpcw/TPCW_home_interaction?C_ID=5", "");
        assert_eq!(st, 200, "{head}");
        assert!(head.contains("Transfer-Encoding: chunked"), "{head}");
        let page = String::from_utf8_lossy(&body);
        assert!(page.contains("href=\"TPCW_search_request_servlet") && page.contains("src=\"../tpcw/Images/logo.gif\""), "relative links and GIF images");
        assert_eq!(page.contains(";jsessionid="), sessions == "url");
        assert_eq!(head.contains("Set-Cookie: JSESSIONID="), sessions == "cookie", "{head}");
        assert_eq!(http_raw(&bs.url, "GET", "/tpcw/TPCW_product_detail_servlet?I_ID=7", "").0, 400, "a session is required");
        assert_eq!(http_raw(&bs.url, "POST", "/tpcw/TPCW_home_interaction", "Content-Length: 0\r\n").0, 405);
        let (st, head, body) = http_raw(&bs.url, "GET", "/tpcw/Images/item/7.jpg", "");
        assert!(st == 200 && head.contains("image/jpeg") && !head.to_ascii_lowercase().contains("content-length") && body.starts_with(&[0xff, 0xd8]), "{head}");
        assert_eq!(body.len(), 5 * 1024, "item 7's TPC-W image size, close-delimited");
        let (st, head, body) = http_raw(&bs.url, "GET", "/tpcw/Images/thumb/7.gif", "");
        assert!(st == 200 && head.contains("image/gif") && body.starts_with(b"GIF89a"), "{head}");
        // The interlab profile cannot drive it (no /tpcw/info), the servlet one needs the scale.
        let o = drive(&format!("{}tpcw/", bs.url), &["--browsers", "1", "--duration", "1s"]);
        assert!(o.status.code() == Some(1) && text(&o).contains("does not look like an interlab bookstore"), "{}", text(&o));
        let o = drive(&format!("{}tpcw/", bs.url), &["--site", "servlet", "--duration", "1s"]);
        assert!(o.status.code() == Some(2) && text(&o).contains("--items and --customers"), "{}", text(&o));
        // Driven through its own links, forms, sessions, chunked pages and GIF/JPEG images.
        let json_out = d.join("r.json");
        let o = drive(
            &format!("{}tpcw", bs.url),
            &["--site", "servlet", "--items", "1000", "--customers", "2880", "--browsers", "4", "--duration", "4s", "--ramp-up", "1s", "--mix", mix, "--json", json_out.to_str().unwrap()],
        );
        assert!(o.status.success(), "{sessions}: {}", text(&o));
        let r = json(&json_out);
        check_report(&r, mix);
        assert!(r["url"].as_str().unwrap().ends_with("/tpcw/"), "the prefix is kept: {}", r["url"]);
        assert!(r["images"].as_u64().unwrap() > 50 && r["sessions"].as_u64().unwrap() >= 4, "{r}");
        let busy: u64 = r["per_interaction"].as_array().unwrap().iter().filter(|p| p["count"].as_u64().unwrap() > 0).count() as u64;
        assert!(busy >= 8, "most interactions reached: {r}");
        bs.stop();
        let _ = std::fs::remove_dir_all(&d);
    }
}

#[test]
fn product_detail_to_product_detail_picks_from_the_page_before_on_a_site_whose_product_page_links_no_product() {
    // TPC-W's Product Detail -> Product Detail transition is <CURL>: the user goes back and
    // picks another item; the strict site's Product Detail page (as the servlet kits')
    // links to no other product, so the browser must pick from the page that led to it.
    let d = tmpdir("strict-curl");
    let db = d.join("b.sqlite");
    let bs = Bookstore::start(&["--db", db.to_str().unwrap()], &["--strict", "--strict-sessions", "cookie"]);
    let trace = d.join("t.jsonl");
    let json_out = d.join("r.json");
    let o = drive(
        &format!("{}tpcw/", bs.url),
        &["--site", "servlet", "--items", "1000", "--customers", "2880", "--browsers", "4", "--duration", "8s", "--ramp-up", "1s", "--mix", "browsing", "--trace", trace.to_str().unwrap(), "--json", json_out.to_str().unwrap()],
    );
    assert!(o.status.success(), "{}", text(&o));
    check_report(&json(&json_out), "browsing");
    // Consecutive Product Detail pages of one browser's session, each a product page.
    let recs = jsonl(&trace);
    let page = |r: &serde_json::Value| (r["eb"].as_u64(), r["session"].as_u64(), r["seq"].as_u64().unwrap_or(0), r["interaction"].as_str().unwrap_or("").to_string());
    let mut pages: Vec<_> = recs.iter().filter(|r| r["kind"] == "page").map(page).collect();
    pages.sort();
    let pairs = pages.windows(2).filter(|w| w[0].0 == w[1].0 && w[0].1 == w[1].1 && w[1].2 == w[0].2 + 1 && w[0].3 == "PROD" && w[1].3 == "PROD").count();
    assert!(pairs >= 1, "no Product Detail -> Product Detail transition in {} pages", pages.len());
    bs.stop();
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn profile_of_a_launcher_instead_of_the_server_is_warned_about() {
    // A common slip: the PID of the shell that started the server. Its CPU stays 0 and it
    // holds no connection to the database port; profile says so.
    let d = tmpdir("profile-wrong-pid");
    let db = d.join("b.sqlite");
    let bs = Bookstore::start(&["--db", db.to_str().unwrap()], &[]);
    let db_port = bs.db_port();
    let mut idle = std::process::Command::new("sleep").arg("60").spawn().unwrap();
    let out = d.join("p.jsonl");
    let o = bin()
        .args(["datacenter", "profile", "--url", &bs.url, "--warmup", "5", "--interactions", "20", "--db-port", &db_port, "--quiet"])
        .args(["--tier", &format!("app={}", idle.id()), "--tier", &format!("db={}", bs.pids[2]), "--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    let _ = idle.kill();
    let _ = idle.wait();
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains(&format!("--tier app={} used no CPU", idle.id())) && t.contains(&format!("had no TCP traffic to port {db_port}")), "{t}");
    assert!(!t.contains("--tier db="), "the database tier is the right process: {t}");
    bs.stop();
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn profile_of_the_bookstore_writes_a_trace_that_replay_takes() {
    let d = tmpdir("profile");
    let db = d.join("b.sqlite");
    let bs = Bookstore::start(&["--db", db.to_str().unwrap()], &[]);
    let (web, app, dbp) = (bs.pids[0], bs.pids[1], bs.pids[2]);
    let db_port = bs.db_port();
    let out = d.join("profile.jsonl");
    let o = bin()
        .args(["datacenter", "profile", "--url", &bs.url, "--mix", "shopping", "--warmup", "20", "--interactions", "80", "--db-port", &db_port, "--quiet"])
        .args(["--tier", &format!("web={web}"), "--tier", &format!("app={app}"), "--tier", &format!("db={dbp}"), "--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("80 records"), "{}", text(&o));
    let recs = jsonl(&out);
    assert_eq!(recs.len(), 80, "warm-up discarded");
    let (mut app_cpu, mut db_cpu, mut with_db_msgs) = (0u64, 0u64, 0);
    for r in &recs {
        assert_eq!(r["source"], "drive");
        assert!(r["error"].is_null(), "{r}");
        assert!(r["seq"].as_u64().unwrap() > 20, "{r}");
        let tiers: Vec<&str> = r["tiers"].as_array().unwrap().iter().map(|t| t["tier"].as_str().unwrap()).collect();
        assert_eq!(tiers, ["browser", "web", "app", "db"], "{r}");
        app_cpu += r["tiers"][2]["cpu_ns"].as_u64().unwrap();
        db_cpu += r["tiers"][3]["cpu_ns"].as_u64().unwrap();
        let m = &r["tiers"][2]["to_next"];
        if m["messages"].as_u64().unwrap() > 0 {
            with_db_msgs += 1;
            assert_eq!(m["sizes"].as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).sum::<u64>(), m["bytes"].as_u64().unwrap());
        }
    }
    assert!(app_cpu > 80 * 10_000 && db_cpu > 80 * 10_000, "tiers' CPU measured: app {app_cpu} ns, db {db_cpu} ns");
    // Every interaction but Order Inquiry queries the database.
    assert!(with_db_msgs >= 60, "{with_db_msgs} of 80 with app -> db messages");
    let o = bin().args(["datacenter", "trace", out.to_str().unwrap()]).output().unwrap();
    assert!(o.status.success() && String::from_utf8_lossy(&o.stdout).contains("app"), "{}", text(&o));
    let spec = d.join("dc.toml");
    std::fs::write(&spec, "[datacenter]\nthink_scale = 0.1\nwarmup_s = 0.2\nmeasure_s = 0.5\nbrowsers = [20]\n").unwrap();
    let o = bin().args(["datacenter", "replay", "--spec", spec.to_str().unwrap(), "--trace", out.to_str().unwrap()]).output().unwrap();
    assert!(o.status.success() && String::from_utf8_lossy(&o.stdout).contains("WIPS"), "{}", text(&o));
    // Bad tiers are clear errors.
    for (args, want) in [
        (vec!["--tier", "app=0"], "PID 0"),
        (vec!["--tier", "cache=1"], "not web, app or db"),
        (vec!["--tier", "db=/nonexistent"], "neither a PID nor a cgroup"),
        (vec!["--tier", &format!("db={dbp}"), "--db-port", "5"], "give --tier app="),
    ] {
        let o = bin().args(["datacenter", "profile", "--url", &bs.url, "--out", d.join("x.jsonl").to_str().unwrap()]).args(&args).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(text(&o).contains(want), "{args:?}: {}", text(&o));
    }
    bs.stop();
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_truncated_page_is_reported_as_the_sites_defect_and_the_run_goes_on() {
    // A site whose every page stops before </html> (as one servlet kit's Order Display does).
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let at = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for c in l.incoming().take(200) {
            let Ok(mut c) = c else { continue };
            std::thread::spawn(move || {
                c.set_read_timeout(Some(Duration::from_secs(5))).ok();
                let mut buf = [0u8; 8192];
                while let Ok(n) = c.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    let body = "<HTML><HEAD><TITLE>TPC-W Home Page</TITLE></HEAD><BODY><A HREF=\"TPCW_search_request_servlet\">search</A>";
                    let r = format!("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\n\r\n{body}", body.len());
                    if c.write_all(r.as_bytes()).is_err() {
                        break;
                    }
                }
            });
        }
    });
    let d = tmpdir("truncated");
    let json_out = d.join("r.json");
    let o = drive(&format!("http://{at}/tpcw/"), &["--site", "servlet", "--items", "1000", "--customers", "2880", "--browsers", "1", "--duration", "1s", "--ramp-up", "0s", "--json", json_out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let r = json(&json_out);
    let e = &r["errors"];
    assert!(e["truncated"].as_u64().unwrap() >= 2, "the browser kept going: {e}");
    assert_eq!(e["total"], e["truncated"], "{e}");
    assert!(e["samples"][0].as_str().unwrap().contains("site defect"), "{e}");
    assert!(String::from_utf8_lossy(&o.stdout).contains("truncated pages (site defect)"));
    let _ = std::fs::remove_dir_all(&d);
}

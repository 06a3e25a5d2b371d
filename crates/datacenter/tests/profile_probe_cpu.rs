//! `profile` writes the browser's share of each interaction without the profiler's own
//! counter reads: those run in the browser's thread (three per interaction: /proc of every
//! thread of the named tiers, `ss`) and are not browser work. A replay on one shared host
//! charges the browser's share on the host's cores, so a share that kept them made a Java
//! + MariaDB deployment look 1.6x costlier than it is at saturation (issue 19).
//!
//! A loopback site that answers every request with one page linking and holding a form
//! to every interaction of the servlet layout, driven with a probe whose reads burn CPU.

use interlab_datacenter::http::Url;
use interlab_datacenter::rbe::{drive, DriveConfig, Probe};
use interlab_datacenter::site::Site;
use interlab_datacenter::trace::{Tier, TierTrace, TraceWriter};
use interlab_datacenter::tpcw::Mix;
use interlab_datacenter::Trace;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::time::{Duration, Instant};

const PAGE: &str = r#"<HTML><HEAD><TITLE>t</TITLE></HEAD><BODY>
<A HREF="TPCW_home_interaction">h</A> <A HREF="TPCW_new_products_servlet?subject=ARTS">n</A>
<A HREF="TPCW_best_sellers_servlet?subject=ARTS">b</A> <A HREF="TPCW_product_detail_servlet?I_ID=1">p</A>
<A HREF="TPCW_search_request_servlet">s</A> <A HREF="TPCW_shopping_cart_interaction?I_ID=1&amp;QTY=1&amp;ADD_FLAG=Y">add</A>
<A HREF="TPCW_shopping_cart_interaction?ADD_FLAG=N">cart</A> <A HREF="TPCW_customer_registration_servlet">c</A>
<A HREF="TPCW_order_inquiry_servlet">o</A> <A HREF="TPCW_admin_request_servlet?I_ID=1">a</A>
<FORM ACTION="TPCW_execute_search"><SELECT NAME="search_type"><OPTION VALUE="author">a</OPTION><OPTION VALUE="title">t</OPTION><OPTION VALUE="subject">s</OPTION></SELECT><INPUT NAME="search_string"></FORM>
<FORM ACTION="TPCW_buy_request_servlet"><INPUT NAME="RETURNING_FLAG" VALUE="Y"><INPUT NAME="UNAME"><INPUT NAME="PASSWD"><INPUT TYPE=HIDDEN NAME="C_ID" VALUE="3"></FORM>
<FORM ACTION="TPCW_buy_confirm_servlet"><INPUT NAME="CC_TYPE"><INPUT NAME="CC_NUMBER"><INPUT NAME="CC_EXPIRY"><INPUT NAME="SHIPPING"></FORM>
<FORM ACTION="TPCW_order_display_servlet"><INPUT NAME="UNAME"><INPUT NAME="PASSWD"></FORM>
<FORM ACTION="TPCW_admin_response_servlet"><INPUT TYPE=hidden NAME="I_ID" VALUE="1"><INPUT NAME="I_NEW_COST" VALUE="1"><INPUT NAME="I_NEW_IMAGE" VALUE="x.gif"><INPUT NAME="I_NEW_THUMBNAIL" VALUE="y.gif"></FORM>
</BODY></HTML>"#;

/// Serves PAGE to every request (HTTP/1.1, keep-alive) until the test ends.
fn site() -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let at = l.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            std::thread::spawn(move || {
                let mut w = s.try_clone().unwrap();
                let mut r = BufReader::new(s);
                loop {
                    let mut line = String::new();
                    let mut len = 0usize;
                    loop {
                        line.clear();
                        if r.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                            len = v.trim().parse().unwrap_or(0);
                        }
                        if line == "\r\n" {
                            break;
                        }
                    }
                    let mut body = vec![0; len];
                    let _ = r.read_exact(&mut body);
                    let resp = format!("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\n\r\n{PAGE}", PAGE.len());
                    if w.write_all(resp.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    at
}

/// Burns `burn` of this thread's CPU per read, as reading a JVM's /proc and running `ss` do.
#[derive(Debug)]
struct BurnProbe {
    burn: Duration,
}

impl Probe for BurnProbe {
    fn sample(&self) -> Vec<u64> {
        let t = Instant::now();
        let mut x = 0u64;
        while t.elapsed() < self.burn {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        vec![x]
    }
    fn tiers(&self, _: &[u64], _: &[u64], _: &[u64], _: u64, _: u64) -> Vec<TierTrace> {
        vec![TierTrace::new(Tier::App)]
    }
}

#[test]
fn the_profilers_own_reads_are_not_the_browsers_cpu() {
    let at = site();
    let dir = std::env::temp_dir().join(format!("interlab-probe-cpu-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("p.jsonl");
    let burn = Duration::from_millis(4);
    let cfg = DriveConfig {
        url: Url::parse(&format!("http://{at}/tpcw/")).unwrap(),
        browsers: 1,
        mix: Mix::Browsing,
        ramp_up: Duration::ZERO,
        duration: Duration::from_secs(60),
        ramp_down: Duration::ZERO,
        think_scale: 0.0,
        session_scale: 1.0,
        seed: 1,
        timeout: Duration::from_secs(10),
        image_connections: 1,
        items: Some(1000),
        customers: Some(2880),
        trace: Some(TraceWriter::create(&out).unwrap()),
        wait: Duration::ZERO,
        site: Arc::new(Site::builtin("servlet").unwrap()),
        probe: Some(Arc::new(BurnProbe { burn })),
        trace_skip: 0,
        max_interactions: Some(40),
    };
    let r = drive(&cfg, &mut |_| {}, &|| false).unwrap();
    assert_eq!(r.errors.total, 0, "{:?}", r.errors.samples);
    drop(cfg);
    let t = Trace::read(&out).unwrap();
    let cpu: Vec<u64> = t.records.iter().filter_map(|r| r.tier(Tier::Browser)).map(|b| b.cpu_ns).collect();
    assert!(cpu.len() >= 30, "{} records", cpu.len());
    let mean = cpu.iter().sum::<u64>() as f64 / cpu.len() as f64;
    // Three reads of 4 ms each per interaction; the browser's own work here is far below 1 read.
    assert!(mean < burn.as_nanos() as f64, "browser CPU {mean:.0} ns per interaction includes the probe's {} ns", 3 * burn.as_nanos());
    let _ = std::fs::remove_dir_all(&dir);
}

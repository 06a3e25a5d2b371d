//! Replay tests: conservation, determinism, directions, the SDP idle penalty.

use super::*;
use std::sync::Arc;

fn spec(extra: &str) -> DcSpec {
    let text = format!(
        "[datacenter]\nthink_scale = 0.05\nwarmup_s = 1.0\nmeasure_s = 3.0\nbrowsers = 200\nprotocol = \"ipoib-rc\"\n{extra}\n"
    );
    DcSpec::parse("t.toml", &text).unwrap().remove(0)
}

fn quick_costs() -> CostCache {
    let c = CostCache::new();
    // Fast and slow made-up protocols (us): (size, latency, cpu per end).
    c.insert("r805-connectx-ddr", NetCost::from_points(Protocol::IpoibRc, &[(1, 20.0, 8.0), (1 << 20, 900.0, 400.0)], 60.0, None));
    c.insert("r805-connectx-ddr", NetCost::from_points(Protocol::IpoibUdOffload, &[(1, 15.0, 5.0), (1 << 20, 500.0, 150.0)], 60.0, None));
    c.insert("r805-connectx-ddr", NetCost::from_points(Protocol::Sdp, &[(1, 12.0, 4.0), (1 << 20, 300.0, 60.0)], 500.0, Some(1000.0)));
    c
}

fn table() -> Arc<InteractionTable> {
    Arc::new(InteractionTable::builtin())
}

#[test]
fn replay_conserves_requests() {
    let s = spec("");
    let costs = quick_costs();
    let o = s.run_point(&table(), &costs, 100, 0).unwrap();
    assert!(o.issued > 100);
    assert_eq!(o.issued, o.completed + o.in_flight);
    // Drained: every request issued completes.
    let wl = workload::Tpcw::new(table(), interlab_tpcw::tpcw::Mix::Browsing, 50, Some(workload::secs(0.2)), workload::secs(900.0));
    let cost = costs.get("r805-connectx-ddr", Protocol::IpoibRc).unwrap();
    let cfg = Config {
        tiers: ["client", "web", "app", "db"].iter().enumerate().map(|(i, n)| TierCfg { name: n.to_string(), cores: if i == 0 { 0 } else { 2 }, shared: false }).collect(),
        host_cores: 0,
        links: (0..3).map(|i| LinkCfg { name: format!("l{i}"), from: i, to: i + 1, cost: cost.clone(), pool: [0, 5, 3][i] }).collect(),
        browsers: 50,
        seed: 3,
        start_spread: workload::secs(0.2),
        warmup: workload::secs(0.5),
        measure: workload::secs(2.0),
        drain: true,
        max_events: 50_000_000,
    };
    let o = engine::run(&cfg, Box::new(wl)).unwrap();
    assert!(o.issued > 200, "{}", o.issued);
    assert_eq!(o.issued, o.completed, "drained run: every request completes");
    assert_eq!(o.in_flight, 0);
}

#[test]
fn replay_is_deterministic() {
    let s = spec("");
    let a = s.run_point(&table(), &quick_costs(), 150, 0).unwrap();
    let b = s.run_point(&table(), &quick_costs(), 150, 0).unwrap();
    assert_eq!(a.measured, b.measured);
    assert_eq!(a.events, b.events);
    let c = DcSpec { seed: 9, ..s }.run_point(&table(), &quick_costs(), 150, 0).unwrap();
    assert_ne!(a.measured, c.measured);
}

#[test]
fn faster_protocol_never_lowers_wips_and_think_time_lowers_load() {
    let costs = quick_costs();
    // Saturated: 1 core per tier.
    let slow = spec("web_cores = 1\napp_cores = 1\ndb_cores = 1");
    let fast = DcSpec { protocols: [Protocol::IpoibUdOffload; 3], ..slow.clone() };
    let (ws, wf) = (slow.run_point(&table(), &costs, 400, 0).unwrap(), fast.run_point(&table(), &costs, 400, 0).unwrap());
    assert!(wf.throughput() >= ws.throughput(), "fast {} slow {}", wf.throughput(), ws.throughput());
    let more_think = DcSpec { think_scale: slow.think_scale * 4.0, ..slow.clone() };
    let wt = more_think.run_point(&table(), &costs, 400, 0).unwrap();
    assert!(wt.throughput() < ws.throughput(), "think x4 {} vs {}", wt.throughput(), ws.throughput());
    assert!(wt.tier_util[1] < ws.tier_util[1]);
}

#[test]
fn sdp_idle_penalty_with_many_idle_connections_not_with_few_busy_ones() {
    let costs = quick_costs();
    let many = DcSpec { protocols: [Protocol::Sdp; 3], think_scale: 0.1, ..spec("") };
    let o = many.run_point(&table(), &costs, 300, 0).unwrap();
    assert!(o.idle_penalties as f64 > 0.2 * o.messages as f64, "{} of {}", o.idle_penalties, o.messages);
    // Few busy connections (50 shared client connections, 10 web-app, 5 app-db).
    let few = DcSpec { connections: [20, 5, 3], think_scale: 0.01, ..many.clone() };
    let f = few.run_point(&table(), &costs, 300, 0).unwrap();
    let (fm, ff) = (o.idle_penalties as f64 / o.messages as f64, f.idle_penalties as f64 / f.messages as f64);
    assert!(ff < fm / 3.0, "idle share with few busy connections {ff:.3}, with many idle ones {fm:.3}");
    // No idle threshold (IPoIB): never.
    let ip = DcSpec { protocols: [Protocol::IpoibRc; 3], ..many };
    assert_eq!(ip.run_point(&table(), &costs, 300, 0).unwrap().idle_penalties, 0);
}

#[test]
fn one_shared_host_caps_the_sum_of_all_tiers_work() {
    let costs = quick_costs();
    // Saturated: every tier on its own 2 cores, vs all tiers and the browsers on one 2-core host.
    let own = DcSpec { think_scale: 0.001, ..spec("web_cores = 2\napp_cores = 2\ndb_cores = 2") };
    let shared = DcSpec { host_cores: 2, ..own.clone() };
    let (o, s) = (own.run_point(&table(), &costs, 300, 0).unwrap(), shared.run_point(&table(), &costs, 300, 0).unwrap());
    assert!(s.throughput() < o.throughput(), "shared host {} own hosts {}", s.throughput(), o.throughput());
    // The host's utilisation is the sum of its tiers', at most 100% (jobs reserved just
    // before the end may run past it: 1% slack), and it is saturated.
    let host: f64 = s.tier_util.iter().sum();
    assert!(host <= 1.01 && host > 0.9, "host utilisation {host}");
    // The browsers' own CPU is charged only on the shared host.
    assert!(s.tier_util[0] > 0.0 && o.tier_util[0] == 0.0, "{:?} {:?}", s.tier_util, o.tier_util);
    // Throughput is bounded by 2 cores over the CPU time per interaction (busy time over
    // requests issued: those still in flight have had part of theirs).
    let busy: f64 = s.tier_busy_s.iter().sum();
    assert!(s.throughput() <= 2.0 / (busy / s.issued as f64), "{} vs {busy} s for {}", s.throughput(), s.issued);
    let e = DcSpec::parse("x.toml", "[datacenter]\nhost_cores = -1\n").unwrap_err();
    assert!(e.contains("x.toml") && e.contains("host_cores"), "{e}");
}

#[test]
fn ssl_on_the_secure_pages_costs_web_tier_cpu() {
    let costs = quick_costs();
    let plain = spec("mix = \"ordering\"");
    let ssl = spec("mix = \"ordering\"\n[datacenter.params]\nssl_ns_per_byte = 20\nssl_handshake_ns = 2000000");
    let (a, b) = (plain.run_point(&table(), &costs, 200, 0).unwrap(), ssl.run_point(&table(), &costs, 200, 0).unwrap());
    assert!(b.tier_busy_s[1] > a.tier_busy_s[1] * 1.05, "web busy {:.3} s with SSL vs {:.3} s", b.tier_busy_s[1], a.tier_busy_s[1]);
    // Only the secure pages pay: the app and db tiers' work per request does not change.
    let per = |o: &Outcome, t: usize| o.tier_busy_s[t] / o.completed as f64;
    assert!((per(&b, 3) / per(&a, 3) - 1.0).abs() < 0.15, "db per request {} vs {}", per(&b, 3), per(&a, 3));
    let e = DcSpec::parse("x.toml", "[datacenter]\n[datacenter.params]\nssl_ns_per_byte = 20\n").unwrap_err();
    assert!(e.contains("x.toml") && e.contains("ssl_handshake_ns"), "{e}");
}

#[test]
fn static_file_sizes_from_a_world_cup_log() {
    use interlab_tpcw::wc98::{Request, GET, STATUS_200};
    let dir = std::env::temp_dir().join(format!("interlab-wc98spec-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // 3 x 1000 B, 1 x 9000 B, one 304 and one request without a size (ignored).
    let r = |size: Option<u32>, status: u8| Request { timestamp: 0, client: 1, object: 2, size, method: GET, status, http_version: 1, kind: 1, server: 0 };
    let log: Vec<u8> = [r(Some(1000), STATUS_200), r(Some(1000), STATUS_200), r(Some(9000), STATUS_200), r(Some(1000), STATUS_200), r(Some(5), 13), r(None, STATUS_200)]
        .iter()
        .flat_map(|x| x.encode())
        .collect();
    std::fs::write(dir.join("wc_day1_1"), log).unwrap();
    let text = "[datacenter]\nworkload = \"static\"\nprotocol = \"ipoib-rc\"\nwarmup_s = 0.05\nmeasure_s = 0.2\nbrowsers = [4]\nfile_sizes = [8192]\n\
                [datacenter.params]\nrequest_bytes = 300\nproxy_cpu_ns = 10000\nweb_cpu_ns = 10000\nread_mbytes_per_s = 1000\nwc98_log = \"wc_day1_1\"\n";
    let spec_path = dir.join("s.toml");
    let s = DcSpec::parse(spec_path.to_str().unwrap(), text).unwrap().remove(0);
    // The log's sizes relative to their mean: (3 x 1000 + 9000) / 4 = 3000.
    assert_eq!(s.file_sizes_shape().unwrap().mean(), 3000.0);
    let o = s.run_point(&table(), &quick_costs(), 4, 8192).unwrap();
    assert!(o.completed > 10, "{}", o.completed);
    // A missing log or one that is not a log: the spec's file and the log's path.
    let e = DcSpec::parse(spec_path.to_str().unwrap(), &text.replace("wc_day1_1", "nope")).unwrap_err();
    assert!(e.contains("s.toml") && e.contains("nope") && e.contains("cannot read"), "{e}");
    std::fs::write(dir.join("odd"), [1u8, 2, 3]).unwrap();
    let e = DcSpec::parse(spec_path.to_str().unwrap(), &text.replace("wc_day1_1", "odd")).unwrap_err();
    assert!(e.contains("20-byte records"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn spec_errors_name_the_file_and_key() {
    let e = DcSpec::parse("x.toml", "[datacenter]\nbrowsers = \"many\"\n").unwrap_err();
    assert!(e.contains("x.toml") && e.contains("browsers"), "{e}");
    let e = DcSpec::parse("x.toml", "[datacenter]\nweb_app = \"carrier-pigeon\"\n").unwrap_err();
    assert!(e.contains("web_app") && e.contains("unknown protocol"), "{e}");
    let e = DcSpec::parse("x.toml", "[datacenter]\nbogus = 1\n").unwrap_err();
    assert!(e.contains("unknown key `bogus`"), "{e}");
    let e = DcSpec::parse("x.toml", "[nope]\n").unwrap_err();
    assert!(e.contains("unknown table"), "{e}");
    let e = DcSpec::parse("x.toml", "[datacenter]\nbrowsers = 0\n").unwrap_err();
    assert!(e.contains("at least 1"), "{e}");
}

#[test]
#[ignore]
fn explore() {
    let costs = CostCache::new();
    let t = table();
    for p in Protocol::ALL {
        let c = costs.get("r805-connectx-ddr", p).unwrap();
        println!("{:?} lat {:?}\n cpu {:?} conn {:.0}", p, c.latency_us.iter().map(|x| *x as i64).collect::<Vec<_>>(), c.sizes.iter().map(|&b| (c.send_cpu(b) * 10.0).round() / 10.0).zip(c.sizes.iter().map(|&b| (c.recv_cpu(b) * 10.0).round() / 10.0)).collect::<Vec<_>>(), c.connect_us);
    }
    for n in [1000u32, 2000, 3000, 4000] {
        for p in [Protocol::Eth, Protocol::IpoibUd, Protocol::IpoibUdOffload, Protocol::IpoibRc, Protocol::Sdp] {
            let s = DcSpec::parse("e", &format!("[datacenter]\nthink_scale=0.1\nwarmup_s=3\nmeasure_s=6\nprotocol=\"{}\"\n", p.name())).unwrap().remove(0);
            let t0 = std::time::Instant::now();
            let o = s.run_point(&t, &costs, n, 0).unwrap();
            println!("{n} {:?}: wips {:.0} util {:?} p90 {:.3} idle {} ev {} {:.2}s", p, o.throughput(), o.tier_util.iter().map(|u| (u * 100.0).round()).collect::<Vec<_>>(), o.percentile(None, 90.0).unwrap_or(0.0), o.idle_penalties, o.events, t0.elapsed().as_secs_f64());
        }
    }
}

/// One message of `bytes` from the web tier to the client per request (or the other way).
#[derive(Clone)]
struct OneWay {
    bytes: u64,
    up: bool,
}

impl Workload for OneWay {
    fn classes(&self) -> Vec<String> {
        vec!["m".into()]
    }
    fn next(&mut self, b: u32, _now: interlab_kernel::Time, _rng: &mut interlab_kernel::Rng, p: &mut Program) -> usize {
        p.extend([Step::Acquire { link: 0, slot: b }, Step::Send { link: 0, bytes: self.bytes, up: self.up }, Step::Release { link: 0 }]);
        0
    }
    fn think(&mut self, _b: u32, _rng: &mut interlab_kernel::Rng) -> interlab_kernel::Time {
        workload::secs(0.01)
    }
}

/// A client tier and a web tier of 4 cores each, joined by one link of `cost`: `browsers`
/// browsers started within 1 ms, measured for `measure_s` seconds with no warm-up, drained.
fn client_web_cfg(cost: Arc<NetCost>, browsers: u32, measure_s: f64) -> Config {
    Config {
        tiers: vec![TierCfg { name: "client".into(), cores: 4, shared: false }, TierCfg { name: "web".into(), cores: 4, shared: false }],
        host_cores: 0,
        links: vec![LinkCfg { name: "l".into(), from: 0, to: 1, cost, pool: 0 }],
        browsers,
        seed: 1,
        start_spread: workload::secs(0.001),
        warmup: 0,
        measure: workload::secs(measure_s),
        drain: true,
        max_events: 1_000_000,
    }
}

#[test]
fn a_message_costs_its_sender_the_send_side_and_its_receiver_the_receive_side() {
    // Sending costs 10 us, receiving 30 us (any size); latency 100 us.
    let cost = Arc::new(NetCost::from_split_points(Protocol::IpoibUd, &[(1, 100.0, 10.0, 30.0), (1 << 20, 100.0, 10.0, 30.0)], 50.0, None));
    for up in [true, false] {
        let cfg = client_web_cfg(cost.clone(), 2, 0.5);
        let o = engine::run(&cfg, Box::new(OneWay { bytes: 65536, up })).unwrap();
        let n = o.messages as f64;
        assert!(n > 50.0, "{n}");
        let (client, web) = (o.tier_busy_s[0] * 1e6 / n, o.tier_busy_s[1] * 1e6 / n);
        let (want_web, want_client) = if up { (10.0, 30.0) } else { (30.0, 10.0) };
        assert!((web - want_web).abs() < 1e-3 && (client - want_client).abs() < 1e-3, "up {up}: web {web} client {client} us per message");
        let t = o.mean(None).unwrap() * 1e6;
        assert!((t - 100.0).abs() < 1e-3, "an unloaded message takes the latency: {t} us");
    }
    // Every microsecond either end spent is the network stack's.
    let cfg_net = |o: &Outcome| (o.tier_net_busy_s[0] - o.tier_busy_s[0]).abs() < 1e-12 && (o.tier_net_busy_s[1] - o.tier_busy_s[1]).abs() < 1e-12;
    let cfg = client_web_cfg(cost, 2, 0.2);
    assert!(cfg_net(&engine::run(&cfg, Box::new(OneWay { bytes: 4096, up: true })).unwrap()));
}

#[test]
fn the_network_stacks_share_of_a_tiers_time_excludes_its_own_work() {
    let o = spec("").run_point(&table(), &quick_costs(), 150, 0).unwrap();
    for t in 1..4 {
        let (net, busy) = (o.tier_net_busy_s[t], o.tier_busy_s[t]);
        assert!(net > 0.0 && net < busy, "tier {t}: network {net} s of {busy} s busy");
    }
    // A costlier protocol adds to the network share only: the trace's own work stays.
    let slow = DcSpec { protocols: [Protocol::IpoibRc; 3], ..spec("") };
    let fast = DcSpec { protocols: [Protocol::Sdp; 3], sdp_idle_penalty: false, ..spec("") };
    let (a, b) = (slow.run_point(&table(), &quick_costs(), 150, 0).unwrap(), fast.run_point(&table(), &quick_costs(), 150, 0).unwrap());
    let own = |o: &Outcome| (o.tier_busy_s[1] - o.tier_net_busy_s[1]) / o.completed as f64;
    let net = |o: &Outcome| o.tier_net_busy_s[1] / o.completed as f64;
    assert!((own(&a) / own(&b) - 1.0).abs() < 0.1, "web work per request {} vs {}", own(&a), own(&b));
    assert!(net(&a) > 1.5 * net(&b), "web network per request {} vs {}", net(&a), net(&b));
}

/// The studies' TPC-W configuration in small: browsing mix, think time 7 s x 0.01,
/// `web`/`db` cores, the socket model's real costs for `protocol` on every link.
fn studies_like(protocol: Protocol, web_cores: u32, db_cores: u32) -> DcSpec {
    let text = format!(
        "[datacenter]\nthink_scale = 0.01\nwarmup_s = 1.0\nmeasure_s = 3.0\nbrowsers = 400\nweb_cores = {web_cores}\napp_cores = 8\ndb_cores = {db_cores}\n\
         web_app_connections = 200\napp_db_connections = 50\nprotocol = \"{}\"\n",
        protocol.name()
    );
    DcSpec::parse("t.toml", &text).unwrap().remove(0)
}

#[test]
fn offloads_raise_wips_when_the_web_tier_binds_and_not_when_the_database_does() {
    // Real per-message costs from the socket model (r805-connectx-ddr).
    let costs = CostCache::new();
    let run = |p: Protocol, web: u32, db: u32| studies_like(p, web, db).run_point(&table(), &costs, 400, 0).unwrap();
    let per = |o: &Outcome, v: f64| v / o.completed as f64 * 1e6;
    // Web-bound (one web core, a database that never binds): the web tier's CPU per
    // interaction is its own work plus its network stack's, and LRO/LSO shrink the latter
    // (pages and images go out as 64 KiB sends, not 2 KiB segments).
    let (off, ud) = (run(Protocol::IpoibUdOffload, 1, 64), run(Protocol::IpoibUd, 1, 64));
    assert!(off.tier_util[1] > 0.95 && ud.tier_util[1] > 0.95, "web tier saturated: {:?} {:?}", off.tier_util, ud.tier_util);
    let ratio = off.throughput() / ud.throughput();
    let (net_off, net_ud) = (per(&off, off.tier_net_busy_s[1]), per(&ud, ud.tier_net_busy_s[1]));
    let own = per(&ud, ud.tier_busy_s[1] - ud.tier_net_busy_s[1]);
    assert!(net_ud > net_off * 1.2, "web network CPU per interaction: no offload {net_ud:.0} us, LRO+LSO {net_off:.0} us");
    // The WIPS ratio is the ratio of the bottleneck's CPU per interaction.
    let predicted = (own + net_ud) / (own + net_off);
    assert!(ratio > 1.05 && (ratio / predicted - 1.0).abs() < 0.04, "WIPS ratio {ratio:.3}, from the web tier's CPU per interaction {predicted:.3}");
    // Database-bound (one database core): the same two protocols change the web tier's
    // network CPU as much, but not WIPS.
    let (off, ud) = (run(Protocol::IpoibUdOffload, 8, 1), run(Protocol::IpoibUd, 8, 1));
    assert!(off.tier_util[3] > 0.95 && off.tier_util[1] < 0.5, "database-bound: {:?}", off.tier_util);
    let ratio = off.throughput() / ud.throughput();
    assert!((ratio - 1.0).abs() < 0.03, "database-bound WIPS ratio {ratio:.3}");
    assert!(per(&ud, ud.tier_net_busy_s[1]) > 1.2 * per(&off, off.tier_net_busy_s[1]));
}

#[test]
fn a_window_short_against_the_response_times_is_flagged() {
    // Saturated (one core per tier, short think times): response times of a sizeable
    // fraction of a 0.3 s window; a 6 s window holds many response times.
    let costs = quick_costs();
    let short = DcSpec { measure_s: 0.3, ..spec("web_cores = 1\napp_cores = 1\ndb_cores = 1") };
    let long = DcSpec { measure_s: 6.0, ..short.clone() };
    let (a, b) = (short.run_point(&table(), &costs, 400, 0).unwrap(), long.run_point(&table(), &costs, 400, 0).unwrap());
    assert!(a.window_bias() > 0.1, "short window: {} in flight, {} measured", a.in_flight, a.measured.len());
    assert!(b.window_bias() < a.window_bias() / 5.0, "long window: {:.3} vs short {:.3}", b.window_bias(), a.window_bias());
    // Little's law: in flight per completion is the mean response time over the window.
    let r = b.mean(None).unwrap();
    assert!((b.window_bias() / (r / 6.0) - 1.0).abs() < 0.35, "bias {:.3}, mean response {r:.3} s / 6 s", b.window_bias());
}

/// A request that forks two programs, the first of which forks two more: a request and its
/// response around them, all CPU on the web tier.
#[derive(Clone)]
struct Nested;

impl Workload for Nested {
    fn classes(&self) -> Vec<String> {
        vec!["n".into()]
    }
    fn next(&mut self, b: u32, _now: interlab_kernel::Time, _rng: &mut interlab_kernel::Rng, p: &mut Program) -> usize {
        use Step::*;
        p.extend([
            Acquire { link: 0, slot: b },
            Send { link: 0, bytes: 1000, up: false },
            Fork(2),
            Cpu { tier: 1, ns: 10_000 },
            Fork(2),
            Cpu { tier: 1, ns: 5_000 },
            Join,
            Cpu { tier: 1, ns: 5_000 },
            Join,
            Join,
            Cpu { tier: 1, ns: 20_000 },
            Join,
            Mark(1),
            Send { link: 0, bytes: 1000, up: true },
            Release { link: 0 },
        ]);
        0
    }
    fn think(&mut self, _b: u32, _rng: &mut interlab_kernel::Rng) -> interlab_kernel::Time {
        workload::secs(0.01)
    }
}

#[test]
fn forked_programs_run_in_parallel_and_the_request_goes_on_when_all_are_done() {
    // Sending costs 10 us, receiving 30 us; latency 100 us.
    let cost = Arc::new(NetCost::from_split_points(Protocol::IpoibUd, &[(1, 100.0, 10.0, 30.0), (1 << 20, 100.0, 10.0, 30.0)], 50.0, None));
    let cfg = client_web_cfg(cost, 1, 0.5);
    let o = engine::run(&cfg, Box::new(Nested)).unwrap();
    assert!(o.completed > 40 && o.completed == o.issued, "{} of {}", o.completed, o.issued);
    // The request arrives after 100 us; the forks take max(10 + 5, 20) us; the response 100 us.
    let (t, page) = (o.mean(None).unwrap() * 1e6, o.mean_between(0, 1) * 1e6);
    assert!((t - 220.0).abs() < 1e-3 && (page - 120.0).abs() < 1e-3, "response {t} us, mark {page} us");
    // The web tier: 30 us to receive, 10 + 5 + 5 + 20 us of work, 10 us to send.
    let web = o.tier_busy_s[1] * 1e6 / o.completed as f64;
    assert!((web - 80.0).abs() < 1e-3, "{web} us per request");
}

/// Folding arrivals at the browsers (a tier without cores) into their sends changes no
/// outcome: every point below, light and saturated, TPC-W, SPECweb-like pages with image
/// lanes, static content with a connection per request, equals its run without folding
/// field for field (floats by their bits, through `Debug`). Some folded runs are exact as
/// they stand, and some (eight closed-loop clients without think time, the pattern of the
/// sdp static sweeps, whose lanes run in lockstep) find a push that could order against a
/// folded event otherwise and are rerun without folding.
#[test]
fn folded_replays_equal_the_replays_without_folding() {
    let costs = quick_costs();
    // The socket model's own costs for SPECweb (a run that ignored the order of pushes
    // against folded events differs there).
    let model_costs = CostCache::new();
    let static_spec = "[datacenter]\nworkload = \"static\"\nprotocol = \"ipoib-rc\"\nwarmup_s = 0.05\nmeasure_s = 0.3\nbrowsers = [8]\n\
        file_sizes = [4096]\nconnect_per_request = true\n[datacenter.params]\nrequest_bytes = 300\nproxy_cpu_ns = 38462\nweb_cpu_ns = 38462\n\
        read_mbytes_per_s = 1000\nshape = [[5, 45], [10, 35], [50, 15], [100, 4], [250, 1]]\n";
    // SPECweb (the ipoib-offload study's fig13, IPoIB-RC, 3000 sessions): ignoring the
    // order of pushes against folded events changes this point's outcome.
    let fig13 = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../studies/ipoib-offload/dc-fig13.toml")).unwrap();
    let specweb = DcSpec::parse("dc-fig13.toml", &fig13).unwrap().remove(2);
    let specs = [
        (specweb, vec![(3000, 0)]),
        (spec(""), vec![(50, 0), (400, 0)]),
        (studies_like(Protocol::IpoibRc, 2, 1), vec![(400, 0)]),
        (DcSpec::parse("s.toml", static_spec).unwrap().remove(0), vec![(8, 1024), (8, 4096), (8, 65536), (8, 262144)]),
    ];
    let (mut exact, mut reruns) = (0, 0);
    for (s, points) in &specs {
        for &(b, f) in points {
            let (cfg, wl) = s.point(&table(), if s.kind == Kind::Specweb { &model_costs } else { &costs }, b, f).unwrap();
            let plain = engine::run_once(&cfg, wl.boxed_clone(), false).expect("a run without folding is always exact");
            match engine::run_once(&cfg, wl.boxed_clone(), true) {
                Some(o) => {
                    exact += 1;
                    assert_eq!(format!("{o:?}"), format!("{plain:?}"), "{b} browsers, file {f}");
                }
                None => reruns += 1,
            }
            let o = engine::run(&cfg, wl).unwrap();
            assert_eq!(format!("{o:?}"), format!("{plain:?}"), "{b} browsers, file {f}");
        }
    }
    assert!(exact >= 3 && reruns >= 1, "both paths taken: {exact} exact folded runs, {reruns} reruns");
}

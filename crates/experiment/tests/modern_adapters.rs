//! Direction tests of the modern-adapter mechanisms (issue 22) on the built-in what-if
//! profiles: receive-WQE prefetch, inline sends, RoCE v2 path MTU and loss-free fan-in.
//! Each compares two runs of one spec that differ in one profile value.

use interlab_experiment::{parse_experiment, run_experiment, SeriesResult};
use std::path::Path;

/// Runs `spec` (an experiment spec text) with profile paths relative to `dir`.
fn run(dir: &Path, spec: &str) -> Vec<SeriesResult> {
    let exp = parse_experiment("test.toml", spec, Some(dir)).unwrap_or_else(|e| panic!("spec: {e}\n{spec}"));
    run_experiment(&exp, &|| {}).expect("run")
}

/// Writes the built-in profile `id` as `name` in `dir`, each `(key, line)` replacing the
/// first line that sets `key` (or, when `key` holds an `=`, the first line starting with it).
fn variant(dir: &Path, id: &str, changes: &[(&str, &str)], name: &str) {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../profiles/{id}.toml"))).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    for (key, line) in changes {
        let i = lines.iter().position(|l| if key.contains('=') { l.starts_with(key) } else { l.starts_with(&format!("{key} =")) }).unwrap_or_else(|| panic!("{id} has no {key}"));
        lines[i] = line.to_string();
    }
    std::fs::write(dir.join(name), lines.join("\n")).unwrap();
}

fn tmp(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("interlab-modern-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn latency_spec(op: &str, sizes: &str, series: &[(&str, &str)]) -> String {
    let mut s = format!("[experiment]\nname = \"t\"\n[pattern]\nkind = \"latency\"\nop = \"{op}\"\nwarmup = 2\niterations = 4\nsizes = {sizes}\n");
    for (label, profile) in series {
        s += &format!("[[series]]\nlabel = \"{label}\"\nprofile = \"{profile}\"\n");
    }
    s
}

#[test]
fn receive_wqe_prefetch_never_raises_send_latency() {
    let dir = tmp("prefetch");
    variant(&dir, "cx5-edr-pcie3", &[("rx_wqe_prefetch", "rx_wqe_prefetch = { value = 0, src = \"test\" }")], "off.toml");
    let r = run(&dir, &latency_spec("send", "[2, 64, 1024, 65536]", &[("on", "cx5-edr-pcie3"), ("off", "off.toml")]));
    for &(size, on) in &r[0].points {
        let off = r[1].at(size).unwrap();
        assert!(on <= off, "{size} B: prefetch {on} us > fetch on arrival {off} us");
    }
    // The fetch is a DMA read round trip: off the path it saves at least the read latency.
    assert!(r[1].at(2).unwrap() - r[0].at(2).unwrap() > 0.4, "{:?} vs {:?}", r[0].points, r[1].points);
}

#[test]
fn send_latency_is_within_0_2_us_of_rdma_write_on_prefetching_adapters() {
    for id in ["cx3-fdr-pcie3", "cx5-edr-pcie3", "cx5-roce100-pcie3", "epyc-hdr-pcie4", "cx7-ndr-pcie5"] {
        let send = run(Path::new("."), &latency_spec("send", "[2, 64]", &[("s", id)]));
        let write = run(Path::new("."), &latency_spec("rdma_write", "[2, 64]", &[("w", id)]));
        for &(size, s) in &send[0].points {
            let w = write[0].at(size).unwrap();
            assert!((s - w).abs() <= 0.2, "{id} {size} B: send {s} us, write {w} us");
        }
    }
}

#[test]
fn inline_never_raises_small_message_latency() {
    let dir = tmp("inline");
    let none = [
        ("inline_bytes", "inline_bytes = { value = 0, src = \"test\" }"),
        ("inline_send_bytes", "inline_send_bytes = { value = 0, src = \"test\" }"),
    ];
    variant(&dir, "cx5-edr-pcie3", &none, "noinline.toml");
    // perftest's sizes: 220 B for writes, 236 for sends, each still one BlueFlame write.
    for (op, sizes) in [("send", "[2, 16, 64, 128, 236]"), ("rdma_write", "[2, 16, 64, 128, 220]")] {
        let r = run(&dir, &latency_spec(op, sizes, &[("inline", "cx5-edr-pcie3"), ("dma", "noinline.toml")]));
        for &(size, inl) in &r[0].points {
            let dma = r[1].at(size).unwrap();
            assert!(inl < dma, "{op} {size} B: inline {inl} us, payload by DMA read {dma} us");
        }
    }
}

#[test]
fn inline_never_raises_mpi_small_message_latency() {
    // The MPI library's own limit ([mpi] inline_bytes, MVAPICH2's 128 B with the header)
    // decides for its eager writes: below it the message and header go in the WQE.
    let dir = tmp("mpiinline");
    variant(&dir, "cx5-edr-pcie3", &[("inline_bytes = { value = 128", "inline_bytes = { value = 0, src = \"test\" }")], "mpinoinline.toml");
    let r = run(&dir, &mpi_latency_spec("[2, 32, 96, 200]", &[("inline", "cx5-edr-pcie3"), ("dma", "mpinoinline.toml")]));
    for &(size, inl) in &r[0].points {
        let dma = r[1].at(size).unwrap();
        if size + 32 <= 128 {
            assert!(inl < dma, "{size} B: inline {inl} us, payload by DMA read {dma} us");
        } else {
            assert!((inl - dma).abs() < 1e-9, "{size} B + header is above the library's inline limit: {inl} vs {dma} us");
        }
    }
}

#[test]
fn roce_with_a_4096_path_mtu_never_has_lower_large_message_bandwidth_than_1024() {
    // On PCIe 4.0 x16, so that the link, not the bus, binds and the headers per packet show.
    let dir = tmp("mtu");
    let gen4 = ("gts", "gts = { value = 16, src = \"test: PCIe 4.0\" }");
    variant(&dir, "cx5-roce100-pcie3", &[gen4], "mtu1024.toml");
    variant(&dir, "cx5-roce100-pcie3", &[gen4, ("mtu_bytes", "mtu_bytes = { value = 4096, src = \"test: jumbo frames\" }")], "mtu4096.toml");
    let spec = "[experiment]\nname = \"t\"\n[pattern]\nkind = \"bandwidth\"\nop = \"rdma_write\"\nwindow = 64\nwarmup = 2\niterations = 4\nsizes = [65536, 1048576, 4194304]\n\
                [[series]]\nlabel = \"1024\"\nprofile = \"mtu1024.toml\"\n[[series]]\nlabel = \"4096\"\nprofile = \"mtu4096.toml\"\n";
    let r = run(&dir, spec);
    for &(size, bw1024) in &r[0].points {
        let bw4096 = r[1].at(size).unwrap();
        assert!(bw4096 >= bw1024, "{size} B: 4096 MTU {bw4096} MB/s < 1024 MTU {bw1024} MB/s");
    }
    // At 4 MiB both fill the link: their ratio is that of payload per wire byte.
    let ratio = r[1].at(4194304).unwrap() / r[0].at(4194304).unwrap();
    let expect = (4096.0 / 4178.0) / (1024.0 / 1106.0);
    assert!((ratio - expect).abs() < 0.01, "4096/1024 bandwidth ratio {ratio}, headers give {expect}");
}

#[test]
fn roce_fan_in_under_priority_flow_control_loses_nothing_and_fills_the_server_link() {
    // Four clients write to one server through one switch port: the port pauses them
    // (PFC) rather than dropping, so every message arrives and the server's link runs full.
    let spec = "[experiment]\nname = \"t\"\n[pattern]\nkind = \"bandwidth\"\nop = \"rdma_write\"\nwindow = 16\nwarmup = 1\niterations = 2\nsizes = [1048576]\n\
                [transport]\nservice = \"rc\"\n[[series]]\nlabel = \"fan-in\"\nprofile = \"cx5-roce100-pcie3\"\nclients = 4\ninitiator = \"clients\"\n";
    let r = run(Path::new("."), spec);
    let agg = r[0].at(1048576).unwrap();
    // 100 Gb/s of 1024-B packets, each with 28 B of IPv4/UDP, 16 B of BTH/ICRC and 38 B of
    // Ethernet framing: 12,500 MB/s x 1024 / 1106.
    let link = 12_500.0 * 1024.0 / 1106.0;
    assert!(agg <= link * 1.001, "aggregate {agg} MB/s above the link's {link}");
    assert!(agg >= link * 0.95, "aggregate {agg} MB/s: the server link is not kept full ({link})");
}

fn mpi_latency_spec(sizes: &str, series: &[(&str, &str)]) -> String {
    let mut s = latency_spec("send", sizes, series);
    s = s.replace("[pattern]\n", "[pattern]\nmpi = \"rc\"\n");
    s
}

#[test]
fn a_faster_cpu_never_raises_the_per_message_mpi_cost() {
    // A higher clock, or a microarchitecture that runs more instructions per cycle, on the
    // same profile: every cost in cycles (the library's, the post's, the poll's) shrinks.
    let dir = tmp("clock");
    variant(&dir, "cx5-edr-pcie3", &[("clock_ghz", "clock_ghz = { value = 3.6, src = \"test\" }")], "fast.toml");
    variant(&dir, "cx5-edr-pcie3", &[("ipc_factor", "ipc_factor = { value = 1.5, src = \"test\" }")], "wide.toml");
    let series = [("2.4 GHz", "cx5-edr-pcie3"), ("3.6 GHz", "fast.toml"), ("2.4 GHz x 1.5 IPC", "wide.toml")];
    let mpi = run(&dir, &mpi_latency_spec("[2, 64, 1024]", &series));
    let write = run(&dir, &latency_spec("rdma_write", "[34, 96, 1056]", &series));
    for &(size, slow) in &mpi[0].points {
        for faster in [&mpi[1], &mpi[2]] {
            let fast = faster.at(size).unwrap();
            assert!(fast < slow, "{size} B: {} {fast} us >= 2.4 GHz {slow} us", faster.label);
        }
        // Beyond what the verbs path under it gains (its post in cycles), the library's 400
        // cycles at each end scale: 3.6 GHz and 2.4 GHz x 1.5 are the same 3.6 G cycles/s.
        let expect_us = 2.0 * 400.0 * (1.0 / 2.4 - 1.0 / 3.6) / 1000.0;
        for k in [1, 2] {
            let (w_slow, w_fast) = (write[0].points.iter().find(|p| p.0 == size + 32).unwrap().1, write[k].at(size + 32).unwrap());
            let gain = (slow - mpi[k].at(size).unwrap()) - (w_slow - w_fast);
            assert!((gain - expect_us).abs() < 0.005, "{size} B, {}: the library gains {gain} us, its cycles give {expect_us}", mpi[k].label);
        }
    }
}

#[test]
fn a_faster_cpu_never_raises_the_per_message_socket_cost() {
    // The modern profiles give the socket stack's per-call and per-packet costs in cycles:
    // TCP over IPoIB on a faster host (clock or IPC) is never slower, message by message.
    let dir = tmp("sockclock");
    variant(&dir, "cx5-edr-pcie3", &[("clock_ghz", "clock_ghz = { value = 3.6, src = \"test\" }")], "fast.toml");
    variant(&dir, "cx5-edr-pcie3", &[("ipc_factor", "ipc_factor = { value = 1.5, src = \"test\" }")], "wide.toml");
    for socket in ["ipoib-ud", "ipoib-rc"] {
        let mut spec = latency_spec("send", "[1, 1024, 65536]", &[("2.4 GHz", "cx5-edr-pcie3"), ("3.6 GHz", "fast.toml"), ("x1.5 IPC", "wide.toml")]);
        spec = spec.replace("[[series]]\n", &format!("[[series]]\nsocket = \"{socket}\"\n"));
        let r = run(&dir, &spec);
        for &(size, slow) in &r[0].points {
            for k in [1, 2] {
                let fast = r[k].at(size).unwrap();
                assert!(fast < slow, "{socket} {size} B: {} {fast} us >= 2.4 GHz {slow} us", r[k].label);
            }
            // Same cycles per second either way: the same latency.
            let (a, b) = (r[1].at(size).unwrap(), r[2].at(size).unwrap());
            assert!((a - b).abs() < 1e-6, "{socket} {size} B: 3.6 GHz {a} us, 2.4 GHz x 1.5 {b} us");
        }
    }
}

#[test]
fn mpi_small_message_latency_exceeds_rdma_write_by_the_library_cost_at_both_ends() {
    // MVAPICH-style eager over RC is an RDMA write of the message and its 32-byte header,
    // so MPI latency at 2 B = write latency at 34 B + the library's cost at each end
    // (overhead_cycles / clock_ghz) + copying 2 bytes twice.
    // The cycles are the reference microarchitecture's: each host runs them at its clock
    // times its IPC factor ([host] ipc_factor).
    for (id, ghz, ipc) in [("cx5-edr-pcie3", 2.4, 1.0), ("cx5-roce100-pcie3", 2.4, 1.0), ("epyc-hdr-pcie4", 2.45, 1.19), ("cx7-ndr-pcie5", 3.1, 1.34)] {
        let mpi = run(Path::new("."), &mpi_latency_spec("[2]", &[("mpi", id)]))[0].at(2).unwrap();
        let write = run(Path::new("."), &latency_spec("rdma_write", "[34]", &[("w", id)]))[0].at(34).unwrap();
        let cost_us = 2.0 * 400.0 / (ghz * ipc) / 1000.0;
        assert!(((mpi - write) - cost_us).abs() < 0.005, "{id}: MPI {mpi} us - write {write} us != 2 x 400 cycles at {ghz} GHz x {ipc} = {cost_us} us");
    }
}

#[test]
fn a_cost_in_cycles_without_a_clock_is_refused_by_key() {
    let dir = tmp("noclock");
    variant(&dir, "cx5-edr-pcie3", &[("clock_ghz", "")], "noclock.toml");
    let e = interlab_model::profile::Profile::load(dir.join("noclock.toml").to_str().unwrap()).unwrap_err().to_string();
    assert!(e.contains("_cycles") && e.contains("clock_ghz"), "{e}");
}

#[test]
fn a_bad_adapter_or_host_key_is_refused_by_key() {
    let dir = tmp("badkeys");
    for (key, line, expect) in [
        ("rx_wqe_prefetch", "rx_wqe_prefetch = { value = 2, src = \"test\" }", "0..=1"),
        ("layer", "layer = \"ethernet\"", "infiniband, roce-v2"),
        ("cqe_compression", "cqe_compression = { value = 2, src = \"test\" }", "0..=1"),
        ("bf_buf_bytes", "bf_buf_bytes = { value = 8, src = \"test\" }", "64..="),
        ("rnr_timer_us", "", "missing parameter"),
        ("ipc_factor", "ipc_factor = { value = 40, src = \"test\" }", "0.1..10"),
    ] {
        variant(&dir, "cx5-roce100-pcie3", &[(key, line)], "bad.toml");
        let e = interlab_model::profile::Profile::load(dir.join("bad.toml").to_str().unwrap()).unwrap_err().to_string();
        assert!(e.contains(key) && e.contains(expect), "{key}: {e}");
    }
}

fn bandwidth_spec(op: &str, sizes: &str, series: &[(&str, &str)]) -> String {
    let mut s = format!("[experiment]\nname = \"t\"\n[pattern]\nkind = \"bandwidth\"\nop = \"{op}\"\nwindow = 64\nwarmup = 2\niterations = 8\nsizes = {sizes}\n");
    for (label, profile) in series {
        s += &format!("[[series]]\nlabel = \"{label}\"\nprofile = \"{profile}\"\n");
    }
    s
}

#[test]
fn blueflame_never_raises_small_message_latency() {
    // The WQE written with the doorbell saves the adapter its DMA read of the WQE: a read
    // round trip on the message's path.
    let dir = tmp("blueflame");
    variant(&dir, "cx5-edr-pcie3", &[("blueflame", "blueflame = { value = 0, src = \"test\" }")], "nobf.toml");
    for op in ["send", "rdma_write"] {
        let r = run(&dir, &latency_spec(op, "[2, 64, 220, 1024, 4096]", &[("bf", "cx5-edr-pcie3"), ("doorbell", "nobf.toml")]));
        for &(size, bf) in &r[0].points {
            let db = r[1].at(size).unwrap();
            assert!(bf < db, "{op} {size} B: BlueFlame {bf} us, doorbell and fetch {db} us");
        }
        assert!(r[1].at(2).unwrap() - r[0].at(2).unwrap() > 0.4, "{op}: {:?} vs {:?}", r[0].points, r[1].points);
    }
}

#[test]
fn an_mlx4_post_without_inline_data_rings_a_doorbell_and_is_fetched() {
    // rdma-core's mlx4 provider uses BlueFlame only for inline WQEs: above the inline size
    // the WQE is fetched, so the latency steps up by a DMA read there, and only there.
    let dir = tmp("mlx4bf");
    variant(&dir, "cx3-fdr-pcie3", &[("bf_needs_inline", "bf_needs_inline = { value = 0, src = \"test\" }")], "anybf.toml");
    let r = run(&dir, &latency_spec("rdma_write", "[64, 220, 256, 1024]", &[("mlx4", "cx3-fdr-pcie3"), ("any", "anybf.toml")]));
    for &(size, mlx4) in &r[0].points {
        let any = r[1].at(size).unwrap();
        if size <= 220 {
            assert!((mlx4 - any).abs() < 1e-9, "{size} B inline: {mlx4} vs {any} us");
        } else {
            assert!(mlx4 - any > 0.4, "{size} B: mlx4 {mlx4} us, BlueFlame without inline {any} us");
        }
    }
}

#[test]
fn cqe_compression_never_lowers_message_rate() {
    // On a slot narrower than the link (PCIe 3.0 x2 behind EDR), receive completions share
    // the bus with the data: mini CQEs leave more of it to the data. It never costs a lone message anything.
    let dir = tmp("cqezip");
    let x2 = ("lanes", "lanes = { value = 2, src = \"test: a x2 slot\" }");
    variant(&dir, "cx5-edr-pcie3", &[x2], "x2.toml");
    variant(&dir, "cx5-edr-pcie3", &[x2, ("cqe_compression", "cqe_compression = { value = 1, src = \"test\" }")], "x2zip.toml");
    let r = run(&dir, &bandwidth_spec("send", "[64, 256, 1024, 4096, 65536]", &[("full", "x2.toml"), ("zip", "x2zip.toml")]));
    let mut gained = false;
    for &(size, full) in &r[0].points {
        let zip = r[1].at(size).unwrap();
        assert!(zip >= full, "{size} B: compressed {zip} MB/s < full CQEs {full} MB/s");
        gained |= zip > full * 1.01;
    }
    assert!(gained, "compression changed nothing on a bus-bound receiver: {:?} vs {:?}", r[0].points, r[1].points);
    let lat = run(&dir, &latency_spec("send", "[2, 1024]", &[("full", "x2.toml"), ("zip", "x2zip.toml")]));
    for &(size, full) in &lat[0].points {
        assert_eq!(lat[1].at(size).unwrap(), full, "{size} B: a lone message's completion is written whole");
    }
}

fn fan_in_spec(clients: u32, sizes: &str, series: &[(&str, &str)]) -> String {
    let mut s = format!("[experiment]\nname = \"t\"\n[pattern]\nkind = \"bandwidth\"\nop = \"send\"\nwindow = 16\nwarmup = 2\niterations = 20\nsizes = {sizes}\n[transport]\nservice = \"rc\"\n");
    for (label, profile) in series {
        s += &format!("[[series]]\nlabel = \"{label}\"\nprofile = \"{profile}\"\nclients = {clients}\ninitiator = \"clients\"\n");
    }
    s
}

fn rq(depth: u64, srq: bool) -> [(&'static str, String); 2] {
    [
        ("rq_wqes", format!("rq_wqes = {{ value = {depth}, src = \"test\" }}")),
        ("srq", format!("srq = {{ value = {}, src = \"test\" }}", u8::from(srq))),
    ]
}

fn rq_variant(dir: &Path, depth: u64, srq: bool, name: &str) {
    let [a, b] = rq(depth, srq);
    variant(dir, "cx5-edr-pcie3", &[(a.0, a.1.as_str()), (b.0, b.1.as_str())], name);
}

#[test]
fn receive_queues_as_deep_as_the_window_never_cost_bandwidth() {
    // Four clients, each with 16 sends outstanding, into one server. Receive queues of 16
    // per QP (or the profile's 512) never run dry: the result is that of unlimited receives.
    // Shallower queues meet RNR NAKs and wait the RNR timer: never more bandwidth.
    let dir = tmp("rqdepth");
    variant(&dir, "cx5-edr-pcie3", &[("rq_wqes", "")], "unlimited.toml");
    rq_variant(&dir, 16, false, "rq16.toml");
    rq_variant(&dir, 8, false, "rq8.toml");
    let r = run(&dir, &fan_in_spec(4, "[64, 4096, 65536]", &[("unlimited", "unlimited.toml"), ("512", "cx5-edr-pcie3"), ("16", "rq16.toml"), ("8", "rq8.toml")]));
    for &(size, free) in &r[0].points {
        assert_eq!(r[1].at(size).unwrap(), free, "{size} B: 512 receives per QP");
        assert_eq!(r[2].at(size).unwrap(), free, "{size} B: 16 receives per QP, 16 outstanding");
        assert!(r[3].at(size).unwrap() <= free, "{size} B: 8 receives per QP");
    }
    assert!(r[3].at(64).unwrap() < 0.5 * r[0].at(64).unwrap(), "small sends outrun 8 receives per QP: {:?}", r[3].points);
}

#[test]
fn a_shared_receive_queue_never_does_worse_than_per_qp_queues_with_the_same_buffers() {
    // The same receive buffers, 4 x d, as one shared queue or d per client's QP: pooled,
    // the buffers one client is not using serve another.
    let dir = tmp("srq");
    let mut better = false;
    for d in [4u64, 8, 12] {
        rq_variant(&dir, d, false, "per.toml");
        rq_variant(&dir, 4 * d, true, "shared.toml");
        let r = run(&dir, &fan_in_spec(4, "[64, 1024, 65536]", &[("per-QP", "per.toml"), ("SRQ", "shared.toml")]));
        for &(size, per) in &r[0].points {
            let shared = r[1].at(size).unwrap();
            assert!(shared >= per, "{d} per QP, {size} B: SRQ of {} {shared} MB/s < per-QP {per} MB/s", 4 * d);
            better |= shared > per * 1.1;
        }
    }
    assert!(better, "pooling the buffers never helped");
}

#[test]
fn one_queue_pair_on_a_shared_receive_queue_is_one_queue_pair_on_its_own() {
    let dir = tmp("srq1");
    rq_variant(&dir, 8, false, "per.toml");
    rq_variant(&dir, 8, true, "shared.toml");
    let r = run(&dir, &fan_in_spec(1, "[64, 1024, 65536]", &[("per-QP", "per.toml"), ("SRQ", "shared.toml")]));
    assert_eq!(r[0].points, r[1].points);
}

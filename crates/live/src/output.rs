//! Output of live points: a readable table, JSON Lines (the model's record schema plus live
//! fields), and CSV (the model's columns plus live columns).

use interlab_patterns::{ExtendedRecord, ResultRecord};

fn f(v: Option<f64>, prec: usize) -> String {
    match v {
        Some(x) if x.is_finite() => format!("{x:.prec$}"),
        _ => "-".into(),
    }
}

fn latency_like(r: &ExtendedRecord) -> bool {
    r.record.unit == "us"
}

/// Table header for records like `r`.
pub fn table_header(r: &ExtendedRecord) -> String {
    if latency_like(r) {
        format!(
            "{:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8} {:>10} {:>8} {:>6} {:>6} {:>9}",
            "bytes", "mean_us", "p50", "p90", "p99", "p99.9", "min", "max", "stddev", "rate/s", "ci+-%", "cpuL%", "cpuR%", "us/tran"
        )
    } else {
        format!(
            "{:>9} {:>11} {:>9} {:>8} {:>7} {:>6} {:>6} {:>9} {:>9}",
            "bytes", "MB/s", "Gbit/s", "ci+-%", "loss%", "cpuL%", "cpuR%", "usL/KB", "usR/KB"
        )
    }
}

/// One table row (plus indented lines for flags and errors).
pub fn table_row(r: &ExtendedRecord) -> String {
    let l = &r.live;
    let ci = l.confidence.map(|c| c.interval.width_pct / 2.0);
    let cl = l.cpu_local.as_ref();
    let cr = l.cpu_remote.as_ref();
    let mut s = if let Some(e) = &l.error {
        format!("{:>9} error: {e}", r.record.size_bytes)
    } else if latency_like(r) {
        let sm = r.record.summary;
        format!(
            "{:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8} {:>10} {:>8} {:>6} {:>6} {:>9}",
            r.record.size_bytes,
            f(Some(r.record.value), 2),
            f(sm.map(|s| s.p50), 2),
            f(sm.map(|s| s.p90), 2),
            f(sm.map(|s| s.p99), 2),
            f(sm.map(|s| s.p999), 2),
            f(sm.map(|s| s.min), 2),
            f(sm.map(|s| s.max), 2),
            f(sm.map(|s| s.stddev), 2),
            f(l.rate_per_s, 0),
            f(ci, 2),
            f(cl.map(|c| c.system_pct), 1),
            f(cr.map(|c| c.system_pct), 1),
            f(cl.map(|c| c.service_demand_us), 2),
        )
    } else {
        format!(
            "{:>9} {:>11} {:>9} {:>8} {:>7} {:>6} {:>6} {:>9} {:>9}",
            r.record.size_bytes,
            f(Some(r.record.value), 1),
            f(Some(r.record.value * 8.0 / 1000.0), 3),
            f(ci, 2),
            f(l.loss_pct, 2),
            f(cl.map(|c| c.system_pct), 1),
            f(cr.map(|c| c.system_pct), 1),
            f(cl.map(|c| c.service_demand_us), 3),
            f(cr.map(|c| c.service_demand_us), 3),
        )
    };
    for fl in &l.flags {
        s.push_str(&format!("\n{:>9} ! {fl}", ""));
    }
    s
}

/// [`table_row`] with each warning flag shown only the first time a sweep meets it
/// (`seen` holds those already shown).
pub fn table_row_once(r: &ExtendedRecord, seen: &mut std::collections::BTreeSet<String>) -> String {
    let mut shown = r.clone();
    shown.live.flags.retain(|fl| seen.insert(fl.clone()));
    table_row(&shown)
}

/// Buckets of a latency histogram: log-spaced edges 1, 2, 5 per decade (us); every sample
/// falls in exactly one bucket `[lo, hi)`. Returns (lo, hi, count) from the bucket of the
/// smallest sample to that of the largest, empty ones between included.
pub fn histogram(samples_us: &[f64]) -> Vec<(f64, f64, u64)> {
    let finite: Vec<f64> = samples_us.iter().copied().filter(|x| x.is_finite()).collect();
    if finite.is_empty() {
        return vec![];
    }
    // Bucket k covers [edge(k), edge(k+1)), edge(3d + j) = {1, 2, 5}[j] * 10^d us.
    let edge = |k: i64| -> f64 { [1.0, 2.0, 5.0][k.rem_euclid(3) as usize] * 10f64.powi(k.div_euclid(3) as i32) };
    let bucket = |x: f64| -> i64 {
        let x = x.max(1e-3);
        let mut k = 3 * x.log10().floor() as i64;
        while edge(k + 1) <= x {
            k += 1;
        }
        while k > -9 && edge(k) > x {
            k -= 1;
        }
        k
    };
    let ks: Vec<i64> = finite.iter().map(|&x| bucket(x)).collect();
    let (lo, hi) = (*ks.iter().min().unwrap_or(&0), *ks.iter().max().unwrap_or(&0));
    let mut counts = vec![0u64; (hi - lo + 1) as usize];
    for k in ks {
        counts[(k - lo) as usize] += 1;
    }
    counts.into_iter().enumerate().map(|(i, c)| (edge(lo + i as i64), edge(lo + i as i64 + 1), c)).collect()
}

/// The histogram as indented lines under a table row (`--histogram`): range, count, share
/// and a bar.
pub fn histogram_lines(samples_us: &[f64]) -> Vec<String> {
    let h = histogram(samples_us);
    let total: u64 = h.iter().map(|b| b.2).sum();
    let most = h.iter().map(|b| b.2).max().unwrap_or(0).max(1);
    let mut out = vec![format!("{:>9} histogram of {total} samples (us):", "")];
    for (lo, hi, c) in h {
        let bar = "#".repeat(((c as f64 / most as f64) * 40.0).ceil() as usize);
        out.push(format!("{:>9} [{:>9} , {:>9}) {:>10} {:>6.2} % {bar}", "", trim(lo), trim(hi), c, 100.0 * c as f64 / total.max(1) as f64));
    }
    out
}

fn trim(x: f64) -> String {
    let s = format!("{x:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Live columns appended to the model's CSV columns.
pub const CSV_LIVE_COLUMNS: &str = "p50,p90,p99,p999,min,max,stddev,rate_per_s,repetitions,ci_level_pct,ci_width_pct,ci_met,loss_pct,cpu_local_system_pct,cpu_local_process_pct,service_demand_local,cpu_remote_system_pct,cpu_remote_process_pct,service_demand_remote,service_demand_unit,peers,kernel,cpu,interface,driver,remote_kernel,remote_cpu,flags,error";

/// CSV header.
pub fn csv_header() -> String {
    format!("{},{}", ResultRecord::CSV_HEADER, CSV_LIVE_COLUMNS)
}

fn q(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn n(v: Option<f64>) -> String {
    v.filter(|x| x.is_finite()).map(|x| x.to_string()).unwrap_or_default()
}

/// One CSV row.
pub fn csv_row(r: &ExtendedRecord) -> String {
    let l = &r.live;
    let sm = r.record.summary;
    let cl = l.cpu_local.as_ref();
    let cr = l.cpu_remote.as_ref();
    let hl = l.host_local.as_ref();
    let hr = l.host_remote.as_ref();
    let mut base = r.record.csv_row();
    if !r.record.value.is_finite() {
        // The model's writer prints NaN; keep the column empty instead.
        base = base.replace(",NaN,", ",,");
    }
    let cols = [
        n(sm.map(|s| s.p50)),
        n(sm.map(|s| s.p90)),
        n(sm.map(|s| s.p99)),
        n(sm.map(|s| s.p999)),
        n(sm.map(|s| s.min)),
        n(sm.map(|s| s.max)),
        n(sm.map(|s| s.stddev)),
        n(l.rate_per_s),
        l.repetitions.map(|x| x.to_string()).unwrap_or_default(),
        l.confidence.map(|c| c.interval.level_pct.to_string()).unwrap_or_default(),
        n(l.confidence.map(|c| c.interval.width_pct)),
        l.confidence.map(|c| c.met.to_string()).unwrap_or_default(),
        n(l.loss_pct),
        n(cl.map(|c| c.system_pct)),
        n(cl.map(|c| c.process_pct)),
        n(cl.map(|c| c.service_demand_us)),
        n(cr.map(|c| c.system_pct)),
        n(cr.map(|c| c.process_pct)),
        n(cr.map(|c| c.service_demand_us)),
        cl.or(cr).map(|c| c.service_demand_unit.clone()).unwrap_or_default(),
        q(&l.peers.join(" ")),
        q(&hl.map(|h| h.kernel.clone()).unwrap_or_default()),
        q(&hl.map(|h| h.cpu.clone()).unwrap_or_default()),
        q(&hl.and_then(|h| h.interface.clone()).unwrap_or_default()),
        q(&hl.and_then(|h| h.driver.clone()).unwrap_or_default()),
        q(&hr.map(|h| h.kernel.clone()).unwrap_or_default()),
        q(&hr.map(|h| h.cpu.clone()).unwrap_or_default()),
        q(&l.flags.join("; ")),
        q(l.error.as_deref().unwrap_or("")),
    ];
    format!("{base},{}", cols.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{build, Base};
    use interlab_patterns::{LiveFields, Summary};

    fn rec(unit: &str, value: f64, error: Option<&str>) -> ExtendedRecord {
        let b = Base {
            experiment: "e",
            series: "s",
            profile: "p",
            pattern: "latency",
            transport: "tcp",
            processes: 1,
            size: 64,
            metric: "latency_us",
            value,
            unit,
            summary: Summary::of(&[1.0, 2.0, 3.0]),
            warmup: 1,
            iterations: 3,
            window: 1,
            spec: "cmd, with comma",
        };
        build(&b, LiveFields { error: error.map(String::from), flags: vec!["a flag".into()], ..Default::default() }).unwrap()
    }

    #[test]
    fn csv_columns_line_up() {
        let h = csv_header().split(',').count();
        for r in [rec("us", 2.0, None), rec("us", f64::NAN, Some("x, y")), rec("MB/s", 5.0, None)] {
            let row = csv_row(&r);
            // Count fields outside quotes.
            let mut fields = 1;
            let mut inq = false;
            for ch in row.chars() {
                match ch {
                    '"' => inq = !inq,
                    ',' if !inq => fields += 1,
                    _ => {}
                }
            }
            assert_eq!(fields, h, "{row}");
            assert!(!row.contains("NaN"), "{row}");
        }
    }

    #[test]
    fn histogram_buckets_are_log_spaced_and_hold_every_sample() {
        let v = [0.7, 1.0, 1.5, 2.0, 4.9, 5.0, 19.0, 20.0, 1234.0, f64::NAN];
        let h = histogram(&v);
        assert_eq!(h.first().map(|b| (b.0, b.1)), Some((0.5, 1.0)));
        assert_eq!(h.last().map(|b| (b.0, b.1)), Some((1000.0, 2000.0)));
        assert_eq!(h.iter().map(|b| b.2).sum::<u64>(), 9);
        let count = |lo: f64| h.iter().find(|b| b.0 == lo).map(|b| b.2);
        assert_eq!(count(1.0), Some(2));
        assert_eq!(count(2.0), Some(2));
        assert_eq!(count(5.0), Some(1));
        assert_eq!(count(10.0), Some(1));
        assert_eq!(count(20.0), Some(1));
        assert_eq!(count(200.0), Some(0));
        for w in h.windows(2) {
            assert_eq!(w[0].1, w[1].0, "contiguous buckets");
        }
        assert!(histogram(&[]).is_empty());
        let lines = histogram_lines(&[3.0, 3.5, 12.0]);
        assert!(lines[0].contains("3 samples"));
        assert_eq!(lines.len(), 1 + 3);
    }

    #[test]
    fn table_rows() {
        let r = rec("us", 2.0, None);
        assert!(table_header(&r).contains("p99.9"));
        assert!(table_row(&r).contains("a flag"));
        let mut seen = std::collections::BTreeSet::new();
        assert!(table_row_once(&r, &mut seen).contains("a flag"));
        assert!(!table_row_once(&r, &mut seen).contains("a flag"), "a warning is shown once per sweep");
        assert!(table_row(&rec("us", f64::NAN, Some("peer died"))).contains("error: peer died"));
        assert!(table_header(&rec("MB/s", 1.0, None)).contains("Gbit/s"));
    }
}

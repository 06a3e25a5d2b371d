//! CPU accounting over a measured window: whole-machine busy time from /proc/stat (which
//! includes interrupt and softirq work done for the network stack) and this process's CPU
//! time from getrusage; service demand as netperf defines it.

use crate::proto::CpuWire;
use interlab_patterns::CpuUsage;
use std::time::Instant;

/// Counters at one instant.
#[derive(Debug, Clone, Copy)]
pub struct CpuSnapshot {
    busy_ticks: u64,
    total_ticks: u64,
    process_us: u64,
    at: Instant,
}

/// (busy, total) jiffies of the whole machine from the `cpu` line of /proc/stat: busy =
/// user + nice + system + irq + softirq; total adds idle, iowait and steal.
pub fn parse_proc_stat(text: &str) -> Option<(u64, u64)> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line.split_whitespace().skip(1).map(|x| x.parse().unwrap_or(0)).collect();
    let f = |i: usize| v.get(i).copied().unwrap_or(0);
    let busy = f(0) + f(1) + f(2) + f(5) + f(6);
    Some((busy, busy + f(3) + f(4) + f(7)))
}

fn process_cpu_us() -> u64 {
    // SAFETY: getrusage writes into the zeroed struct we own.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return 0;
    }
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Online CPUs.
pub fn cpus() -> u32 {
    std::thread::available_parallelism().map(|n| n.get() as u32).unwrap_or(1)
}

impl CpuSnapshot {
    pub fn take() -> CpuSnapshot {
        let (busy_ticks, total_ticks) = std::fs::read_to_string("/proc/stat").ok().and_then(|t| parse_proc_stat(&t)).unwrap_or((0, 0));
        CpuSnapshot { busy_ticks, total_ticks, process_us: process_cpu_us(), at: Instant::now() }
    }

    /// Counters from `self` to `later`.
    pub fn until(&self, later: &CpuSnapshot) -> CpuWire {
        CpuWire {
            busy_ticks: later.busy_ticks.saturating_sub(self.busy_ticks),
            total_ticks: later.total_ticks.saturating_sub(self.total_ticks),
            process_us: later.process_us.saturating_sub(self.process_us),
            window_us: later.at.duration_since(self.at).as_micros() as u64,
            cpus: cpus(),
        }
    }
}

/// Adds two windows (repetitions), for an overall figure.
pub fn add(a: &CpuWire, b: &CpuWire) -> CpuWire {
    CpuWire {
        busy_ticks: a.busy_ticks + b.busy_ticks,
        total_ticks: a.total_ticks + b.total_ticks,
        process_us: a.process_us + b.process_us,
        window_us: a.window_us + b.window_us,
        cpus: a.cpus.max(b.cpus),
    }
}

/// Utilisation and service demand: per KiB of `bytes` when bytes > 0, else per
/// transaction. None when the window is empty.
pub fn usage(w: &CpuWire, bytes: u64, transactions: u64) -> Option<CpuUsage> {
    if w.total_ticks == 0 || w.window_us == 0 {
        return None;
    }
    let busy_frac = w.busy_ticks as f64 / w.total_ticks as f64;
    let cpu_us = busy_frac * w.cpus.max(1) as f64 * w.window_us as f64;
    let (demand, unit) = if bytes > 0 {
        (cpu_us / (bytes as f64 / 1024.0), "us/KB")
    } else {
        (cpu_us / transactions.max(1) as f64, "us/tran")
    };
    Some(CpuUsage {
        system_pct: 100.0 * busy_frac,
        process_pct: 100.0 * w.process_us as f64 / w.window_us as f64,
        service_demand_us: demand,
        service_demand_unit: unit.into(),
        window_s: w.window_us as f64 / 1e6,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_stat_line() {
        let t = "cpu  100 5 50 800 10 3 2 30 0 0\ncpu0 1 2 3 4\n";
        assert_eq!(parse_proc_stat(t), Some((160, 1000)));
        assert_eq!(parse_proc_stat("intr 5"), None);
    }

    #[test]
    fn usage_and_service_demand() {
        let w = CpuWire { busy_ticks: 50, total_ticks: 200, process_us: 500_000, window_us: 1_000_000, cpus: 2 };
        let u = usage(&w, 1024 * 1000, 0).unwrap();
        assert_eq!(u.system_pct, 25.0);
        assert_eq!(u.process_pct, 50.0);
        // 0.25 * 2 CPUs * 1 s = 500 000 us over 1000 KiB.
        assert_eq!(u.service_demand_us, 500.0);
        assert_eq!(u.service_demand_unit, "us/KB");
        assert_eq!(usage(&w, 0, 1000).unwrap().service_demand_us, 500.0);
        assert!(usage(&CpuWire::default(), 1, 1).is_none());
        let s = CpuSnapshot::take();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let d = s.until(&CpuSnapshot::take());
        assert!(d.window_us >= 20_000 && d.total_ticks > 0, "{d:?}");
    }
}

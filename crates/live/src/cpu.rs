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

/// Highest CPU number a `--cpu` list may name (the size of the kernel's default cpu_set_t).
pub const MAX_CPU: usize = libc::CPU_SETSIZE as usize - 1;

/// Parses a CPU list as taskset and iperf3 `-A` take it: numbers and inclusive ranges
/// separated by commas (`0`, `0,2`, `0-3`, `0-1,4`). The result is sorted, without
/// duplicates, each at most [`MAX_CPU`].
pub fn parse_cpu_list(text: &str) -> Result<Vec<usize>, String> {
    let mut out = Vec::new();
    let num = |t: &str| -> Result<usize, String> {
        let t = t.trim();
        let v: usize = t.parse().map_err(|_| format!("`{t}` is not a CPU number (expected e.g. 0,1 or 0-3)"))?;
        if v > MAX_CPU {
            return Err(format!("CPU {v} is out of range (0 to {MAX_CPU})"));
        }
        Ok(v)
    };
    for part in text.split(',') {
        if part.trim().is_empty() {
            return Err(format!("`{text}`: empty entry (expected e.g. 0,1 or 0-3)"));
        }
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (num(a)?, num(b)?);
                if a > b {
                    return Err(format!("`{part}`: a range runs from low to high (e.g. 0-3)"));
                }
                out.extend(a..=b);
            }
            None => out.push(num(part)?),
        }
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// Writes a CPU list compactly (`0-3,6`).
pub fn format_cpu_list(cpus: &[usize]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        parts.push(if j > i { format!("{}-{}", cpus[i], cpus[j]) } else { cpus[i].to_string() });
        i = j + 1;
    }
    parts.join(",")
}

/// CPUs this process may run on (its affinity mask; every online CPU unless restricted).
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: sched_getaffinity fills the zeroed set we own; CPU_ISSET reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return (0..cpus() as usize).collect();
        }
        (0..=MAX_CPU).filter(|&c| libc::CPU_ISSET(c, &set)).collect()
    }
}

/// Parses a `--cpu` list and checks every CPU against the ones this process may use.
pub fn check_cpu_list(text: &str) -> Result<Vec<usize>, String> {
    let allowed = allowed_cpus();
    let list = parse_cpu_list(text).map_err(|e| format!("{e}; usable CPUs here: {}", format_cpu_list(&allowed)))?;
    let missing: Vec<usize> = list.iter().copied().filter(|c| !allowed.contains(c)).collect();
    if !missing.is_empty() {
        return Err(format!(
            "CPU {} not available on this machine (usable CPUs: {})",
            format_cpu_list(&missing),
            format_cpu_list(&allowed)
        ));
    }
    Ok(list)
}

/// The CPU the `k`-th data thread is pinned to: the list round-robin (None: no pinning).
pub fn cpu_for(list: &[usize], k: usize) -> Option<usize> {
    (!list.is_empty()).then(|| list[k % list.len()])
}

/// Pins the calling thread to one CPU (sched_setaffinity on the thread).
pub fn pin_current_thread(cpu: usize) -> Result<(), String> {
    if cpu > MAX_CPU {
        return Err(format!("CPU {cpu} is out of range"));
    }
    // SAFETY: CPU_SET on a zeroed set we own (cpu < CPU_SETSIZE); pid 0 is this thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(format!("cannot pin a data thread to CPU {cpu}: {}", std::io::Error::last_os_error()));
        }
    }
    Ok(())
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

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0").unwrap(), vec![0]);
        assert_eq!(parse_cpu_list("0,1").unwrap(), vec![0, 1]);
        assert_eq!(parse_cpu_list("0-3").unwrap(), vec![0, 1, 2, 3]);
        assert_eq!(parse_cpu_list("5, 1-2,2").unwrap(), vec![1, 2, 5]);
        assert!(parse_cpu_list("3-1").unwrap_err().contains("low to high"));
        assert!(parse_cpu_list("").is_err());
        assert!(parse_cpu_list("0,,1").unwrap_err().contains("empty"));
        assert!(parse_cpu_list("x").unwrap_err().contains("not a CPU number"));
        assert!(parse_cpu_list("-1").is_err());
        assert!(parse_cpu_list("99999").unwrap_err().contains("out of range"));
        assert_eq!(format_cpu_list(&[0, 1, 2, 3, 6, 8, 9]), "0-3,6,8-9");
        assert_eq!(cpu_for(&[2, 5], 3), Some(5));
        assert_eq!(cpu_for(&[], 3), None);
        let allowed = allowed_cpus();
        assert!(!allowed.is_empty());
        assert_eq!(check_cpu_list(&allowed[0].to_string()).unwrap(), vec![allowed[0]]);
        assert!(check_cpu_list("1023").unwrap_err().contains("not available"));
        // Pinning this test thread to a CPU it may use works.
        std::thread::spawn(move || pin_current_thread(allowed[0])).join().unwrap().unwrap();
    }
}

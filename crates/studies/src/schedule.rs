//! The run-wide work queue of `reproduce`: every simulation of the run (figure points,
//! data-center replays, PVFS points, the replays' cost tables) as one list, started
//! longest first on every core (longest-processing-time-first scheduling: Graham 1969
//! bounds its finish at 4/3 of the best; the long points cannot serialise the end of the
//! run behind them). Each task writes its own result; the order of starting decides no
//! result.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

/// One unit of work and a rough measure of its length (estimated events; only the order
/// of the estimates matters).
pub struct Task<'a> {
    pub cost: u64,
    pub run: Box<dyn FnOnce() + Send + 'a>,
}

impl<'a> Task<'a> {
    pub fn new(cost: u64, run: impl FnOnce() + Send + 'a) -> Task<'a> {
        Task { cost, run: Box::new(run) }
    }
}

/// When each task started and ended, in seconds from the start of [`run_longest_first`],
/// in the order the tasks were given.
pub type Spans = Vec<(f64, f64)>;

/// Runs every task on the rayon pool's threads, the largest `cost` first (ties in the
/// order given), each thread taking the next task as it frees.
pub fn run_longest_first(tasks: Vec<Task<'_>>) -> Spans {
    let n = tasks.len();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(tasks[i].cost));
    let slots: Vec<Mutex<Option<Box<dyn FnOnce() + Send + '_>>>> = tasks.into_iter().map(|t| Mutex::new(Some(t.run))).collect();
    let spans: Vec<Mutex<(f64, f64)>> = (0..n).map(|_| Mutex::new((0.0, 0.0))).collect();
    let next = AtomicUsize::new(0);
    let t0 = Instant::now();
    let worker = || loop {
        let k = next.fetch_add(1, Ordering::Relaxed);
        let Some(&i) = order.get(k) else { return };
        let run = slots[i].lock().ok().and_then(|mut s| s.take());
        let start = t0.elapsed().as_secs_f64();
        if let Some(run) = run {
            run();
        }
        if let Ok(mut s) = spans[i].lock() {
            *s = (start, t0.elapsed().as_secs_f64());
        }
    };
    let threads = rayon::current_num_threads().max(1);
    rayon::scope(|s| {
        for _ in 0..threads {
            s.spawn(|_| worker());
        }
    });
    spans.into_iter().map(|m| m.into_inner().unwrap_or((0.0, 0.0))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_task_runs_once_and_the_longest_start_first() {
        let started: Mutex<Vec<u64>> = Mutex::new(Vec::new());
        let costs = [3u64, 50, 7, 50, 1, 9];
        let tasks: Vec<Task> = costs
            .iter()
            .map(|&c| {
                let started = &started;
                Task::new(c, move || started.lock().expect("lock").push(c))
            })
            .collect();
        let spans = run_longest_first(tasks);
        assert_eq!(spans.len(), costs.len());
        assert!(spans.iter().all(|&(a, b)| b >= a));
        let mut got = started.into_inner().expect("lock");
        assert_eq!(got.len(), costs.len());
        got.sort_unstable();
        assert_eq!(got, vec![1, 3, 7, 9, 50, 50]);
    }

    #[test]
    fn on_one_thread_the_order_is_longest_first() {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().expect("pool");
        let started: Mutex<Vec<u64>> = Mutex::new(Vec::new());
        pool.install(|| {
            let tasks: Vec<Task> = [3u64, 50, 7, 9, 1]
                .iter()
                .map(|&c| {
                    let started = &started;
                    Task::new(c, move || started.lock().expect("lock").push(c))
                })
                .collect();
            run_longest_first(tasks);
        });
        assert_eq!(started.into_inner().expect("lock"), vec![50, 9, 7, 3, 1]);
    }
}

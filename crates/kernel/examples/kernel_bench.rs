//! Kernel micro benchmark, no harness needed:
//!
//! ```text
//! cargo run --release -p interlab-kernel --example kernel_bench [events] [runs]
//! ```
//!
//! * the hold model of `interlab bench kernel` (64 components, 1024 pending), `runs` times;
//! * the bare [`EventQueue`] in a hold loop (pop one, push one at an exponential delay) for
//!   several queue sizes and a small (16-byte) and a model-sized (128-byte) payload.
//!
//! The machine is noisy: compare medians over several runs, or count instructions with
//! `valgrind --tool=callgrind`.

use interlab_kernel::{bench::hold_model, EventQueue, Rng, Time};
use std::hint::black_box;
use std::time::Instant;

/// Bare queue hold loop; returns events per second.
fn queue_hold<const WORDS: usize>(pending: u32, events: u64) -> f64 {
    let mut q: EventQueue<[u64; WORDS]> = EventQueue::new();
    let mut rng = Rng::new(7);
    for i in 0..pending {
        q.push(rng.below(1_000_000), [i as u64; WORDS]);
    }
    let t0 = Instant::now();
    for _ in 0..events {
        let s = q.pop().expect("hold keeps the queue full");
        let delay = rng.exp(1_000_000.0) as Time;
        let mut payload = black_box(s.event);
        payload[0] = payload[0].wrapping_add(1);
        q.push(s.time + delay, payload);
    }
    events as f64 / t0.elapsed().as_secs_f64()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() {
    let mut args = std::env::args().skip(1);
    let events: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(5_000_000);
    let runs: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(5).max(1);

    let hold: Vec<f64> = (0..runs).map(|r| hold_model(64, 1024, events, r as u64 + 1).events_per_s / 1e6).collect();
    let shown: Vec<String> = hold.iter().map(|x| format!("{x:.2}")).collect();
    println!("hold model, 64 components, 1024 pending: median {:.2} M events/s  [{}]", median(hold), shown.join(" "));

    for pending in [32, 1024, 65_536] {
        let small = median((0..runs).map(|_| queue_hold::<2>(pending, events) / 1e6).collect());
        let large = median((0..runs).map(|_| queue_hold::<16>(pending, events) / 1e6).collect());
        println!("bare queue hold, {pending:>6} pending: {small:6.2} M events/s (16-byte payload), {large:6.2} (128-byte)");
    }
}

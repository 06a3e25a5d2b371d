//! The hold model of `interlab bench kernel` alone, once (for timing with `/usr/bin/time`
//! or counting instructions, without the other scenarios of `kernel_bench`):
//!
//! ```text
//! cargo run --release -p interlab-kernel --example hold [events] [pending]
//! ```

fn main() {
    let events: u64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(20_000_000);
    let pending: u32 = std::env::args().nth(2).and_then(|s| s.parse().ok()).unwrap_or(1024);
    let r = interlab_kernel::bench::hold_model(64, pending, events, 1);
    println!("hold model, 64 components, {pending} pending: {:.2} M events/s ({} events in {:.3} s)", r.events_per_s / 1e6, r.events, r.seconds);
}

//! A warm run of `return 1 + 1` through the `Harness`, started after the process idled for a
//! while: its wall time and the page faults it took, by the length of the idle gap before it.
//!
//! ```text
//! cargo run --release --example after_idle -- [RUNS=30] [GAP_US...]
//! SPIN=1 cargo run --release --example after_idle     # the caller spins through each gap
//! ```
//!
//! Each run starts `GAP_US` microseconds after the pool held its warm isolate (default gaps: 0,
//! 1,000, 5,000, 20,000 and 100,000). With `SPIN`, the calling thread spins through the gap
//! instead of sleeping, so its core never idles.

use std::time::{Duration, Instant};

use codemode::sandbox::{Sandbox, SandboxConfig};
use codemode::{Harness, ToolRegistry};

/// Minor page faults of this process so far.
fn minor_faults() -> i64 {
    // SAFETY: `getrusage` fills the zeroed struct it is given and reads nothing else.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    usage.ru_minflt
}

fn idle(gap: Duration, spin: bool) {
    if spin {
        let until = Instant::now() + gap;
        while Instant::now() < until {
            std::hint::spin_loop();
        }
    } else {
        std::thread::sleep(gap);
    }
}

fn main() {
    codemode::sandbox::make_startup_snapshot().unwrap();
    let host = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let sandbox = Sandbox::new(SandboxConfig {
        workers: 1,
        ..SandboxConfig::default()
    })
    .unwrap();
    let harness = Harness::builder()
        .sandbox(sandbox.clone())
        .build(ToolRegistry::new())
        .unwrap();
    let mut args = std::env::args().skip(1);
    let runs: usize = args.next().map_or(30, |a| a.parse().unwrap());
    let mut gaps: Vec<u64> = args.map(|a| a.parse().unwrap()).collect();
    if gaps.is_empty() {
        gaps = vec![0, 1_000, 5_000, 20_000, 100_000];
    }
    let spin = std::env::var_os("SPIN").is_some();
    // The process's first runs touch code and data for the first time.
    for _ in 0..3 {
        host.block_on(harness.run("return 1 + 1")).unwrap();
    }
    for gap in gaps {
        let mut times = Vec::with_capacity(runs);
        let mut faults = 0;
        for _ in 0..runs {
            while sandbox.warm_workers() < 1 {
                std::thread::sleep(Duration::from_micros(200));
            }
            idle(Duration::from_micros(gap), spin);
            let before = minor_faults();
            let started = Instant::now();
            let outcome = host.block_on(harness.run("return 1 + 1")).unwrap();
            times.push(started.elapsed());
            faults += minor_faults() - before;
            assert!(outcome.is_ok(), "{}", outcome.to_json());
        }
        times.sort();
        let at = |q: usize| times[(times.len() - 1) * q / 4];
        println!(
            "gap {gap:>6} µs{}: p25 {:>7.1?}  median {:>7.1?}  p75 {:>7.1?}  page faults per run {:.1}",
            if spin { " (spun)" } else { "" },
            at(1),
            at(2),
            at(3),
            faults as f64 / runs as f64
        );
    }
}

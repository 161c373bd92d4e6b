//! RSS per idle pooled isolate: a sandbox with N warm workers against one with 1.
use codemode::sandbox::{Sandbox, SandboxConfig};
use std::time::Duration;

fn rss_mb() -> f64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    let l = s.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    l.split_whitespace().nth(1).unwrap().parse::<f64>().unwrap() / 1024.0
}

fn main() {
    // Steady state: every isolate restored from the startup snapshot (docs/PERFORMANCE.md).
    codemode::sandbox::make_startup_snapshot().unwrap();
    let n: usize = std::env::args().nth(1).map_or(16, |a| a.parse().unwrap());
    let before = rss_mb();
    let one = Sandbox::new(SandboxConfig {
        workers: 1,
        ..SandboxConfig::default()
    })
    .unwrap();
    while one.warm_workers() < 1 {
        std::thread::sleep(Duration::from_millis(5));
    }
    let after_one = rss_mb();
    let many = Sandbox::new(SandboxConfig {
        workers: n,
        ..SandboxConfig::default()
    })
    .unwrap();
    while many.warm_workers() < n {
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(200));
    let after_many = rss_mb();
    println!(
        "start {before:.1} MB; 1 warm isolate {after_one:.1} MB; +{n} warm isolates {after_many:.1} MB: {:.2} MB per idle isolate",
        (after_many - after_one) / n as f64
    );
}

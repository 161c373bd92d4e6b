//! Where a warm run of `return 1 + 1` spends its time, layer by layer: the sandbox alone, through
//! `CodeMode` (plus the static plan and admission), and through the `Harness` (plus the outer
//! pipeline and the `run_code` tool). Each run starts once the pool holds a warm isolate.
//!
//! cargo run --release --example run_layers -- [RUNS=300]
//!
//! `TOOLS=N` registers N tools with the harness (the program calls none; each run's `tools`
//! object has them all), and `ONLY_HARNESS=1` times the `Harness` layer alone, so that every run
//! of the worker has the same catalog, as a harness's runs do.

use codemode::sandbox::{Sandbox, SandboxConfig};
use codemode::{Harness, ToolDefinition, ToolRegistry};
use std::time::{Duration, Instant};

fn main() {
    // Steady state: every isolate restored from the startup snapshot (docs/PERFORMANCE.md).
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
        .build(registry_of(tool_count()))
        .unwrap();
    let n: u32 = std::env::args().nth(1).map_or(300, |a| a.parse().unwrap());
    let wait = || {
        while sandbox.warm_workers() < 1 {
            std::thread::sleep(Duration::from_micros(200));
        }
    };
    let only_harness = std::env::var_os("ONLY_HARNESS").is_some();
    for round in 0..2 {
        let mut t = [Duration::ZERO; 3];
        for _ in 0..n {
            if only_harness {
                wait();
                let s = Instant::now();
                host.block_on(harness.run("return 1 + 1")).unwrap();
                t[2] += s.elapsed();
                continue;
            }
            wait();
            let s = Instant::now();
            host.block_on(sandbox.run("return 1 + 1"));
            t[0] += s.elapsed();
            wait();
            let s = Instant::now();
            host.block_on(harness.code_mode().run(
                "return 1 + 1",
                Default::default(),
                &Default::default(),
            ));
            t[1] += s.elapsed();
            wait();
            let s = Instant::now();
            host.block_on(harness.run("return 1 + 1")).unwrap();
            t[2] += s.elapsed();
        }
        println!(
            "round {round}: sandbox {:?}, code_mode {:?}, harness {:?} per run",
            t[0] / n,
            t[1] / n,
            t[2] / n
        );
    }
}

fn tool_count() -> usize {
    std::env::var("TOOLS").map_or(0, |n| n.parse().expect("TOOLS is a number"))
}

/// `count` tools `tool_0`, `tool_1`, ... that answer with their arguments.
fn registry_of(count: usize) -> ToolRegistry {
    let mut registry = ToolRegistry::new();
    for i in 0..count {
        let tool = ToolDefinition::builder(format!("tool_{i}"))
            .description("answers with its arguments")
            .parameters(serde_json::json!({"type": "object"}))
            .parallel_safe()
            .execute(|args: serde_json::Value, _exec| async move { Ok(args) })
            .build()
            .unwrap();
        registry.register(tool).unwrap();
    }
    registry
}

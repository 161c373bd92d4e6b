//! W4 split into its parts, run as the workloads bench runs it: each run through `Harness` on a
//! fresh isolate from a warm pool (`examples/profile_binding.rs` instead repeats a part inside
//! one long program, which profilers prefer but which never sees a fresh isolate's heap).
//!
//! `cargo run --release --example w4_split -- [RUNS] [PART]` prints the fastest, median and
//! slowest run of each part (or of PART alone):
//!
//! - `one`: `return 1`, the run's own cost;
//! - `fetch`: the call alone (the tool builds 10,000 records, the pipeline checks them, the engine
//!   builds them for the program);
//! - `w4`: the whole workload (the fetch, the sort, the top 5);
//! - `w4x2`: the fetch twice, then the sort (the second fetch's cost, on a heap that has grown).
//!
//! With `W4_SPLIT_EACH=1` it also prints every run's time, in order, to stderr: a drift over a
//! process's runs (the allocator's state, not the run's work) shows there.

use std::time::{Duration, Instant};

use codemode::sandbox::{Limits, Sandbox, SandboxConfig};
use codemode::{Harness, ToolDefinition, ToolRegistry};
use serde_json::{Value, json};

/// The workloads bench's records.
fn records() -> Value {
    Value::Array(
        (0..10_000u64)
            .map(|id| json!({"id": id, "name": format!("record {id}"), "score": (id * 7919) % 10007}))
            .collect(),
    )
}

const PARTS: [(&str, &str); 4] = [
    ("one", "return 1"),
    (
        "fetch",
        "const rs = await tools.get_records({}); return rs.length",
    ),
    (
        "w4",
        "const rs = await tools.get_records({}); return rs.sort((a, b) => b.score - a.score).slice(0, 5)",
    ),
    (
        "w4x2",
        "let rs = await tools.get_records({}); rs = await tools.get_records({}); return rs.sort((a, b) => b.score - a.score).slice(0, 5)",
    ),
];

fn main() {
    let mut args = std::env::args().skip(1);
    let runs: usize = args
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(20)
        .max(1);
    let only = args.next();
    if let Some(part) = &only
        && !PARTS.iter().any(|(name, _)| name == part)
    {
        eprintln!("unknown part `{part}`: one, fetch, w4 or w4x2");
        std::process::exit(2);
    }

    codemode::sandbox::make_startup_snapshot().unwrap();
    let host = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let sandbox = Sandbox::new(SandboxConfig {
        workers: 1,
        limits: Limits::default(),
        ..SandboxConfig::default()
    })
    .unwrap();
    let mut registry = ToolRegistry::new();
    let tool = ToolDefinition::builder("get_records")
        .description("10,000 records {id, name, score}")
        .parameters(json!({"type": "object"}))
        .parallel_safe()
        .execute(|_args: Value, _exec| async move { Ok(records()) });
    registry.register(tool.build().unwrap()).unwrap();
    let harness = Harness::builder()
        .sandbox(sandbox.clone())
        .build(registry)
        .unwrap();

    for (name, program) in PARTS {
        if only.as_deref().is_some_and(|part| part != name) {
            continue;
        }
        let mut times = Vec::with_capacity(runs);
        for _ in 0..runs {
            while sandbox.warm_workers() < 1 {
                std::thread::sleep(Duration::from_micros(200));
            }
            let started = Instant::now();
            let outcome = host.block_on(harness.run(program)).unwrap();
            times.push(started.elapsed());
            if std::env::var_os("W4_SPLIT_EACH").is_some() {
                eprint!("{:.1} ", started.elapsed().as_secs_f64() * 1e3);
            }
            assert!(outcome.is_ok(), "{}", outcome.to_json());
        }
        times.sort();
        println!(
            "{name}: fastest {:.2?}, median {:.2?}, slowest {:.2?} of {runs} runs",
            times[0],
            times[runs / 2],
            times[runs - 1]
        );
    }
}

//! The four workloads of issue 14, exactly as defined there, each through the public API and
//! the full pipeline (`Harness`: `run_code` in the outer pipeline, every nested call in the inner
//! one), each timed on a warm pool:
//!
//! - `w1_return_1_plus_1`: a fresh sandbox run of `return 1 + 1`;
//! - `w2_echo_x1000`: 1,000 sequential awaited calls of an echo tool;
//! - `w3_parallel_100_sleep10`: 100 calls of a 10 ms tool under `Promise.all`;
//! - `w4_top5_of_10000_records`: a tool returns 10,000 `{id, name, score}` records
//!   (`score = (id * 7919) % 10007`), the program sorts them and returns the top 5.
//!
//! Beside W3 the bench times its floor, `w3_floor_tokio_100_sleep10`: the same 100 sleeps of
//! 10 ms spawned and joined on a bare current-thread tokio runtime (the kind each pool worker
//! runs), no engine and no pipeline. Tokio's timer rounds every deadline up to a whole
//! millisecond and parks in whole milliseconds, so this floor is above 11 ms on its own; W3
//! minus the floor is what codemode adds.
//!
//! Before the first run the bench makes the process's startup snapshot
//! (`codemode::sandbox::make_startup_snapshot`), so every run is on an isolate restored from it:
//! the steady state. A process that does not ask for it makes it in the background after its
//! first few isolates; `codemode run` and a server's first runs are that cold start.
//!
//! After the group, the process's peak RSS (`VmHWM`) is printed: the memory of running W1-W4.
//! Criterion runs each workload thousands of times, each run on a fresh isolate, so that peak
//! includes what the engine facade keeps of every dropped isolate in thread isolation
//! (docs/LIFECYCLE.md). `CODEMODE_WORKLOADS_RUNS=N` instead runs each workload N times in this
//! process (no criterion), prints each run's time and the median, then the peak RSS: the method
//! of the table (a process running W1-W4, medians of 3). It also times
//! `w1_cold_new_isolate` (thread isolation): W1 on an isolate built inside the timer, without the
//! pool or the pipeline. With `CODEMODE_WORKLOADS_JSON` set as well, it prints one JSON object per
//! line, in the format of the peer runners of `benches/peers/` (`scripts/peers.sh` runs them all),
//! and works as they do: one untimed run of each workload first, and W1 also through the sandbox
//! alone (`w1_sandbox_alone`), as the peers run it, with no pipeline.
//!
//! `CODEMODE_WORKLOADS_ISOLATION=process` runs the same workloads in worker processes (this bench
//! binary serves as the worker program) instead of engine threads. The peak RSS printed is then
//! the host's alone; each worker process has its own.

use std::time::{Duration, Instant};

use codemode::sandbox::{Isolation, Limits, ProcessConfig, RunOutcome, Sandbox, SandboxConfig};
use codemode::{Harness, ToolDefinition, ToolRegistry};
use criterion::{Criterion, criterion_group};
use serde_json::{Value, json};

const W1: &str = "return 1 + 1";
const W2: &str = "let n = 0; for (let i = 0; i < 1000; i++) { const r = await tools.echo({ x: i }); if (r === i) n++ } return n";
const W3: &str = "const r = await Promise.all(Array.from({ length: 100 }, (_, i) => tools.sleep10({ x: i }))); return r.length";
const W4: &str = "const rs = await tools.get_records({}); return rs.sort((a, b) => b.score - a.score).slice(0, 5)";

fn records() -> Value {
    Value::Array(
        (0..10_000u64)
            .map(|id| json!({"id": id, "name": format!("record {id}"), "score": (id * 7919) % 10007}))
            .collect(),
    )
}

fn registry() -> ToolRegistry {
    let object = json!({"type": "object"});
    let tools = [
        ToolDefinition::builder("echo")
            .description("returns its `x`")
            .parameters(object.clone())
            .parallel_safe()
            .execute(|args: Value, _exec| async move { Ok(args["x"].clone()) }),
        ToolDefinition::builder("sleep10")
            .description("sleeps 10 ms, returns its `x`")
            .parameters(object.clone())
            .parallel_safe()
            .execute(|args: Value, _exec| async move {
                tokio::time::sleep(Duration::from_millis(10)).await;
                Ok(args["x"].clone())
            }),
        ToolDefinition::builder("get_records")
            .description("10,000 records {id, name, score}")
            .parameters(object)
            .parallel_safe()
            .execute(|_args: Value, _exec| async move { Ok(records()) }),
    ];
    let mut registry = ToolRegistry::new();
    for tool in tools {
        registry.register(tool.build().unwrap()).unwrap();
    }
    registry
}

/// Times `iters` runs of `program` through the `Harness`, each started once the pool holds a
/// warm isolate.
fn warm_runs(
    iters: u64,
    host: &tokio::runtime::Runtime,
    harness: &Harness,
    sandbox: &Sandbox,
    program: &str,
    expected: &Value,
) -> Duration {
    timed_on_warm_pool(
        iters,
        sandbox,
        || host.block_on(harness.run(program)).unwrap(),
        expected,
    )
}

/// Times `iters` runs of W1 through the sandbox alone (no pipeline, no plan), each started once
/// the pool holds a warm isolate.
fn sandbox_runs(iters: u64, host: &tokio::runtime::Runtime, sandbox: &Sandbox) -> Duration {
    timed_on_warm_pool(iters, sandbox, || host.block_on(sandbox.run(W1)), &json!(2))
}

fn timed_on_warm_pool(
    iters: u64,
    sandbox: &Sandbox,
    mut run: impl FnMut() -> RunOutcome,
    expected: &Value,
) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        while sandbox.warm_workers() < 1 {
            std::thread::sleep(Duration::from_micros(200));
        }
        let started = Instant::now();
        let outcome = run();
        total += started.elapsed();
        assert!(outcome.is_ok(), "{}", outcome.to_json());
        assert_eq!(outcome.value_json().as_ref(), Some(expected));
    }
    total
}

/// Times `iters` runs of W3's floor: 100 tokio sleeps of 10 ms spawned and joined on `runtime`,
/// a long-lived current-thread runtime like a pool worker's (so, as there, where the runs fall
/// between the timer's millisecond ticks varies from run to run).
fn floor_runs(iters: u64, runtime: &tokio::runtime::Runtime) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let started = Instant::now();
        let woken = runtime.block_on(async {
            let sleeps: Vec<_> = (0..100)
                .map(|_| tokio::spawn(tokio::time::sleep(Duration::from_millis(10))))
                .collect();
            let mut woken = 0;
            for sleep in sleeps {
                sleep.await.unwrap();
                woken += 1;
            }
            woken
        });
        total += started.elapsed();
        assert_eq!(woken, 100);
    }
    total
}

/// Times one run of W1 on an isolate built inside the timer, without the pool or the pipeline
/// (`w1_cold_new_isolate`): what the pool hides, and what a peer that builds a sandbox per run
/// pays. The isolate is restored from the startup snapshot the bench made first.
fn cold_run(limits: &Limits) -> Duration {
    let started = Instant::now();
    let outcome = codemode::sandbox::run_cold_blocking(W1, limits);
    let elapsed = started.elapsed();
    assert_eq!(
        outcome.value_json(),
        Some(json!(2)),
        "{}",
        outcome.to_json()
    );
    elapsed
}

/// How `CODEMODE_WORKLOADS_RUNS` mode prints: text for people, or with `CODEMODE_WORKLOADS_JSON`
/// set one JSON object per line, in the format of the peer runners in `benches/peers/`, which
/// `benches/peers/summarize.py` reads.
struct RunsReport {
    json: bool,
    runtime: String,
}

impl RunsReport {
    /// Prints each run's time and the median; returns the median.
    fn workload(&self, name: &str, mut times: Vec<Duration>) -> Duration {
        let shown: Vec<String> = times.iter().map(|t| format!("{t:.2?}")).collect();
        let runs_ms: Vec<f64> = times.iter().map(|t| millis(*t)).collect();
        times.sort();
        let median = times[times.len() / 2];
        if self.json {
            // The short id the peers use: `w1`, `w1_cold`, `w2`, `w3`, `w3_floor`, `w4`.
            let id = match name {
                "w1_cold_new_isolate" => "w1_cold",
                "w1_sandbox_alone" => "w1_sandbox",
                "w3_floor_tokio_100_sleep10" => "w3_floor",
                _ => &name[..2],
            };
            let mut line = json!({
                "runtime": self.runtime,
                "workload": id,
                "name": name,
                "runs_ms": runs_ms,
                "median_ms": millis(median),
            });
            if id == "w2" {
                line["per_call_us"] = json!(millis(median));
            }
            println!("{line}");
        } else {
            println!("{name}: median {median:.2?} of {}", shown.join(", "));
        }
        median
    }

    fn w3_above_floor(&self, w3: Duration, floor: Duration) {
        if !self.json {
            // What codemode adds to the timer's own cost (the floor: the same sleeps, no engine).
            println!(
                "w3 above its floor: {:+.2} ms",
                (w3.as_secs_f64() - floor.as_secs_f64()) * 1000.0
            );
        }
    }

    fn peak_rss(&self, runs: u32, mb: f64) {
        if self.json {
            println!(
                "{}",
                json!({"runtime": self.runtime, "peak_rss_mb": (mb * 10.0).round() / 10.0})
            );
        } else {
            println!(
                "workloads: peak RSS of the process running W1-W4 {runs} times each: {mb:.1} MB"
            );
        }
    }
}

/// Milliseconds to the microsecond.
fn millis(t: Duration) -> f64 {
    (t.as_secs_f64() * 1e6).round() / 1e3
}

/// Peak resident memory of this process, from `/proc/self/status`.
fn peak_rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

fn benches(c: &mut Criterion) {
    // The steady state: every isolate restored from the startup snapshot, which a process
    // otherwise makes in the background after its first few isolates (docs/PERFORMANCE.md).
    codemode::sandbox::make_startup_snapshot().unwrap();
    let host = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    // W3 needs its 100 calls in flight at once (the default allows 64).
    let limits = Limits {
        in_flight_calls: 128,
        ..Limits::default()
    };
    let isolation = match std::env::var("CODEMODE_WORKLOADS_ISOLATION").as_deref() {
        Ok("process") => Isolation::Process(ProcessConfig::default()),
        Ok("thread") | Err(_) => Isolation::Thread,
        Ok(other) => panic!("CODEMODE_WORKLOADS_ISOLATION is `thread` or `process`, not `{other}`"),
    };
    let process = matches!(isolation, Isolation::Process(_));
    let limits_for_cold = limits.clone();
    let sandbox = Sandbox::new(SandboxConfig {
        workers: 1,
        limits: limits.clone(),
        isolation,
        ..SandboxConfig::default()
    })
    .unwrap();
    let harness = Harness::builder()
        .limits(limits)
        .sandbox(sandbox.clone())
        .inner(|pipeline| pipeline.pool_size(128))
        .build(registry())
        .unwrap();

    let floor_runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let top5: Value = {
        let mut all: Vec<Value> = records().as_array().unwrap().clone();
        all.sort_by_key(|r| std::cmp::Reverse(r["score"].as_u64().unwrap()));
        Value::Array(all.into_iter().take(5).collect())
    };
    let cases = [
        ("w1_return_1_plus_1", W1, json!(2)),
        ("w2_echo_x1000", W2, json!(1000)),
        ("w3_parallel_100_sleep10", W3, json!(100)),
        ("w4_top5_of_10000_records", W4, top5),
    ];
    if let Some(runs) = std::env::var("CODEMODE_WORKLOADS_RUNS")
        .ok()
        .and_then(|n| n.parse::<u32>().ok())
    {
        let out = RunsReport {
            json: std::env::var_os("CODEMODE_WORKLOADS_JSON").is_some(),
            runtime: format!(
                "codemode {} ({} isolation)",
                env!("CARGO_PKG_VERSION"),
                if process { "process" } else { "thread" }
            ),
        };
        let mut w3 = Duration::ZERO;
        for (name, program, expected) in &cases {
            if out.json {
                // Beside the peers, which each get one untimed run of a workload first.
                warm_runs(1, &host, &harness, &sandbox, program, expected);
            }
            let times = (0..runs)
                .map(|_| warm_runs(1, &host, &harness, &sandbox, program, expected))
                .collect();
            let median = out.workload(name, times);
            if *program == W3 {
                w3 = median;
            }
        }
        if out.json {
            // W1 without the pipeline, as the peers run it: the sandbox alone.
            sandbox_runs(1, &host, &sandbox);
            let times = (0..runs)
                .map(|_| sandbox_runs(1, &host, &sandbox))
                .collect();
            out.workload("w1_sandbox_alone", times);
        }
        if !process {
            let times = (0..runs).map(|_| cold_run(&limits_for_cold)).collect();
            out.workload("w1_cold_new_isolate", times);
        }
        let floor = out.workload(
            "w3_floor_tokio_100_sleep10",
            (0..runs).map(|_| floor_runs(1, &floor_runtime)).collect(),
        );
        out.w3_above_floor(w3, floor);
        if let Some(mb) = peak_rss_mb() {
            out.peak_rss(runs, mb);
        }
        return;
    }
    let mut group = c.benchmark_group("workloads");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(6));
    for (name, program, expected) in &cases {
        group.bench_function(*name, |b| {
            b.iter_custom(|iters| warm_runs(iters, &host, &harness, &sandbox, program, expected))
        });
    }
    group.bench_function("w3_floor_tokio_100_sleep10", |b| {
        b.iter_custom(|iters| floor_runs(iters, &floor_runtime))
    });
    group.finish();
    if let Some(mb) = peak_rss_mb() {
        println!("workloads: peak RSS of the process running W1-W4: {mb:.1} MB");
    }
}

criterion_group!(workloads, benches);

fn main() {
    // In process isolation this binary is also the worker program.
    codemode::sandbox::serve_worker_if_requested();
    workloads();
    Criterion::default().configure_from_args().final_summary();
}

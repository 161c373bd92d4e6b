//! Code Mode costs, each measured in the same run as its floor.
//!
//! - `raw_async_op_floor_x1000`: 1000 sequential `await op(string)` of a raw async deno_core op
//!   that takes a string and returns one, on one warm `JsRuntime` (no glue, no limits); each
//!   iteration is one `execute_script` + event loop, the shape of a run.
//! - `raw_async_op_json_glue_x1000`: the floor plus the least glue of a JSON-over-string binding
//!   (`JSON.stringify` the arguments, `JSON.parse` the result in a `then`).
//! - `binding_roundtrip_x1000`: one program making 1000 sequential `await tools.noop({})`; every
//!   call crosses the op and runs the full pipeline (validation, scheduler, wrappers, events).
//!   Includes the run itself (transpile, glue, outcome): see `run_overhead`.
//! - `direct_pipeline_call_x1000`: 1000 sequential pipeline calls of the same tool from Rust.
//! - `parallel_100`: one program making 100 parallel-safe calls of a 10 ms tool under
//!   `Promise.all` (pool and in-flight limits 128); the ideal is 10 ms.
//! - `run_overhead`: one program that makes no call.
//! - `process_run_overhead`, `process_binding_roundtrip_x1000`: the same two with the program in
//!   a worker process (`Isolation::Process`): every call crosses the pipe to the host and back.
//!
//! Every program run is timed on a warm worker: the pool builds the next isolate after each run
//! (tens of ms), which back-to-back iterations would otherwise wait for; that cost is the
//! `sandbox` bench's business. Transpile, run, calls and the outcome are all inside the timing.

use std::time::{Duration, Instant};

use codemode::harness::CodeMode;
use codemode::sandbox::{Isolation, Limits, ProcessConfig, Sandbox, SandboxConfig};
use codemode::{CallRequest, Pipeline, ToolDefinition, ToolRegistry};
use criterion::{Criterion, criterion_group, criterion_main};
use deno_core::{JsRuntime, PollEventLoopOptions, RuntimeOptions, op2};
use serde_json::json;

#[op2]
#[string]
async fn op_bench_echo(#[string] text: String) -> String {
    text
}

deno_core::extension!(bench_floor, ops = [op_bench_echo]);

/// Times `iters` runs, each started once the sandbox's worker holds a pre-built isolate.
fn warm_runs(iters: u64, sandbox: &Sandbox, mut run: impl FnMut()) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        while sandbox.warm_workers() < 1 {
            std::thread::sleep(Duration::from_micros(200));
        }
        let started = Instant::now();
        run();
        total += started.elapsed();
    }
    total
}

fn pipeline_with_tools() -> Pipeline {
    let mut registry = ToolRegistry::new();
    registry
        .register(
            ToolDefinition::builder("noop")
                .description("does nothing")
                .parameters(json!({"type": "object"}))
                .execute(|_args, _exec| async { Ok(json!(null)) })
                .parallel_safe()
                .build()
                .unwrap(),
        )
        .unwrap();
    registry
        .register(
            ToolDefinition::builder("sleep10")
                .description("sleeps 10 ms")
                .parameters(json!({"type": "object"}))
                .execute(|_args, _exec| async {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    Ok(json!(1))
                })
                .parallel_safe()
                .build()
                .unwrap(),
        )
        .unwrap();
    Pipeline::builder(registry).pool_size(128).build()
}

fn benches(c: &mut Criterion) {
    // Steady state: every isolate restored from the startup snapshot (docs/PERFORMANCE.md).
    codemode::sandbox::make_startup_snapshot().unwrap();
    let mut group = c.benchmark_group("code_mode");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(6));
    let host = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();

    // The floor: 1000 awaits of a string-in, string-out op on one warm isolate.
    group.bench_function("raw_async_op_floor_x1000", |b| {
        bench_op_script(
            b,
            "(async () => { const op = Deno.core.ops.op_bench_echo; let r; for (let i = 0; i < 1000; i++) r = await op('{}'); return r; })()",
        )
    });

    // The same op with the least glue a binding can have: arguments through `JSON.stringify`,
    // the result through `JSON.parse` in a `then`. Not a floor to beat: it shows how much of
    // the ratio any JSON-over-string binding spends before doing any work of its own.
    group.bench_function("raw_async_op_json_glue_x1000", |b| {
        bench_op_script(
            b,
            "(async () => { const op = Deno.core.ops.op_bench_echo; const then = Promise.prototype.then; let r; for (let i = 0; i < 1000; i++) r = await then.call(op(JSON.stringify({})), JSON.parse); return r; })()",
        )
    });

    let limits = Limits {
        in_flight_calls: 128,
        ..Limits::default()
    };
    let sandbox = Sandbox::new(SandboxConfig {
        workers: 1,
        limits: limits.clone(),
        ..SandboxConfig::default()
    })
    .unwrap();
    let pipeline = pipeline_with_tools();
    let code_mode = CodeMode::new(sandbox.clone(), limits.clone(), pipeline.clone());

    group.bench_function("run_overhead", |b| {
        b.iter_custom(|iters| {
            warm_runs(iters, &sandbox, || {
                let outcome = host.block_on(code_mode.run(
                    "return 1;",
                    Default::default(),
                    &Default::default(),
                ));
                assert!(outcome.is_ok());
            })
        })
    });

    group.bench_function("binding_roundtrip_x1000", |b| {
        b.iter_custom(|iters| {
            warm_runs(iters, &sandbox, || {
                let outcome = host.block_on(code_mode.run(
                    "for (let i = 0; i < 1000; i++) await tools.noop({}); return 1;",
                    Default::default(),
                    &Default::default(),
                ));
                assert!(outcome.is_ok(), "{}", outcome.to_json());
            })
        })
    });

    let processes = Sandbox::new(SandboxConfig {
        workers: 1,
        limits: limits.clone(),
        isolation: Isolation::Process(ProcessConfig::with_program(env!("CARGO_BIN_EXE_codemode"))),
        ..SandboxConfig::default()
    })
    .unwrap();
    let in_process = CodeMode::new(processes.clone(), limits.clone(), pipeline.clone());
    for (name, program) in [
        ("process_run_overhead", "return 1;"),
        (
            "process_binding_roundtrip_x1000",
            "for (let i = 0; i < 1000; i++) await tools.noop({}); return 1;",
        ),
    ] {
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                warm_runs(iters, &processes, || {
                    let outcome = host.block_on(in_process.run(
                        program,
                        Default::default(),
                        &Default::default(),
                    ));
                    assert!(outcome.is_ok(), "{}", outcome.to_json());
                })
            })
        });
    }

    group.bench_function("direct_pipeline_call_x1000", |b| {
        b.iter(|| {
            host.block_on(async {
                for _ in 0..1000 {
                    let outcome = pipeline.call(CallRequest::new("noop", json!({}))).await;
                    assert!(outcome.is_ok());
                }
            })
        })
    });

    group.bench_function("parallel_100", |b| {
        b.iter_custom(|iters| {
            warm_runs(iters, &sandbox, || {
                let outcome = host.block_on(code_mode.run(
                    "const r = await Promise.all(Array.from({ length: 100 }, () => tools.sleep10({}))); return r.length;",
                    Default::default(),
                    &Default::default(),
                ));
                assert!(outcome.is_ok(), "{}", outcome.to_json());
                assert_eq!(outcome.value.as_ref().map(|v| v.get()), Some("100"));
                assert_eq!(outcome.stats.tool_calls, 100);
            })
        })
    });
    group.finish();
}

/// Time `script` (which awaits the bench op 1000 times) on one warm isolate: the floor is the
/// op, not isolate creation.
fn bench_op_script(b: &mut criterion::Bencher<'_>, script: &'static str) {
    let local = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut runtime = JsRuntime::new(RuntimeOptions {
        extensions: vec![bench_floor::init()],
        ..Default::default()
    });
    b.iter(|| {
        runtime.execute_script("floor", script).unwrap();
        local
            .block_on(runtime.run_event_loop(PollEventLoopOptions::default()))
            .unwrap();
    })
}

criterion_group!(code_mode_benches, benches);
criterion_main!(code_mode_benches);

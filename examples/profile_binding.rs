//! A profiling harness for the tool binding: one long run per shape, so isolate creation and the
//! run's own overhead vanish next to the calls. Criterion (`benches/code_mode.rs`) gives the
//! wall-clock numbers; this gives steady per-call costs that profilers can read, e.g. instructions
//! per call with `scripts/instructions-per-call.sh SHAPE` (callgrind, two call counts, difference).
//!
//! ```text
//! cargo run --release --example profile_binding -- SHAPE [CALLS]
//! ```
//!
//! Shapes:
//! - `floor`: `await op(string)` of a raw deno_core async op on a bare `JsRuntime`;
//! - `glue`: the floor plus `JSON.stringify` of the arguments and `then(JSON.parse)`;
//! - `direct`: the same `noop` called through the pipeline from Rust, no sandbox (the pipeline's
//!   own share of a binding call);
//! - `binding`: `await tools.noop({})`, every call through the full pipeline;
//! - `echo`: issue 14's W2 call, `await tools.echo({ x: i })`, which answers its `x`;
//! - `pending`: `await tools.yield_once({})`, a tool that is not ready on its first poll, so
//!   each call takes deno_core's pending-op path and one event-loop turn;
//! - `parallel`: `Promise.all` over batches of 100 `tools.yield_once({})` (CALLS counts calls).
//!
//! Issue 14's W4, split (CALLS counts repetitions; each moves 10,000 `{id, name, score}`):
//! - `records`: `await tools.records({})`, sorted by score, top 5 (the whole workload);
//! - `records_fetch`: the call alone (serialization, hand-over, building the objects);
//! - `records_js`: the same records built in JavaScript, then sorted (the engine's floor);
//! - `sort_parsed`: one fetch, then CALLS sorts of copies of what it handed over;
//! - `sort_built`: the same sorts of records built in JavaScript (integers, where the hand-over
//!   used to give floats).

use std::time::{Duration, Instant};

use codemode::harness::CodeMode;
use codemode::sandbox::{Limits, Sandbox, SandboxConfig};
use codemode::{Pipeline, ToolDefinition, ToolRegistry};
use serde_json::json;

#[deno_core::op2]
#[string]
async fn op_profile_echo(#[string] text: String) -> String {
    text
}

deno_core::extension!(profile_floor, ops = [op_profile_echo]);

fn main() {
    // Steady state: every isolate restored from the startup snapshot (docs/PERFORMANCE.md).
    codemode::sandbox::make_startup_snapshot().unwrap();
    let mut args = std::env::args().skip(1);
    let shape = args.next().unwrap_or_else(|| "binding".to_string());
    let calls: u64 = args
        .next()
        .map(|n| n.parse().expect("CALLS is a number"))
        .unwrap_or(100_000);
    let elapsed = match shape.as_str() {
        "floor" => raw_op(calls, "r = await op('{}')"),
        "glue" => raw_op(
            calls,
            "r = await then.call(op(JSON.stringify({})), JSON.parse)",
        ),
        "direct" => direct(calls),
        "binding" => program(&format!(
            "for (let i = 0; i < {calls}; i++) await tools.noop({{}}); return 1;"
        )),
        "echo" => program(&format!(
            "let n = 0; for (let i = 0; i < {calls}; i++) {{ const r = await tools.echo({{ x: i }}); if (r === i) n++ }} return n;"
        )),
        "pending" => program(&format!(
            "for (let i = 0; i < {calls}; i++) await tools.yield_once({{}}); return 1;"
        )),
        "parallel" => program(&format!(
            "for (let k = 0; k < {}; k++) await Promise.all(Array.from({{ length: 100 }}, () => tools.yield_once({{}}))); return 1;",
            calls / 100
        )),
        "records" => program(&format!(
            "let top; for (let i = 0; i < {calls}; i++) {{ const rs = await tools.records({{}}); top = rs.sort((a, b) => b.score - a.score).slice(0, 5) }} return top.length;"
        )),
        "records_fetch" => program(&format!(
            "let n = 0; for (let i = 0; i < {calls}; i++) {{ const rs = await tools.records({{}}); n += rs.length }} return n;"
        )),
        "sort_parsed" => program(&format!(
            "const rs = await tools.records({{}}); let top; for (let i = 0; i < {calls}; i++) {{ top = rs.slice().sort((a, b) => b.score - a.score).slice(0, 5) }} return top.length;"
        )),
        "sort_built" => program(&format!(
            "const rs = []; for (let id = 0; id < 10000; id++) rs.push({{ id, name: 'record ' + id, score: (id * 7919) % 10007 }}); let top; for (let i = 0; i < {calls}; i++) {{ top = rs.slice().sort((a, b) => b.score - a.score).slice(0, 5) }} return top.length;"
        )),
        "records_js" => program(&format!(
            "let top; for (let i = 0; i < {calls}; i++) {{ const rs = []; for (let id = 0; id < 10000; id++) rs.push({{ id, name: 'record ' + id, score: (id * 7919) % 10007 }}); top = rs.sort((a, b) => b.score - a.score).slice(0, 5) }} return top.length;"
        )),
        other => {
            eprintln!(
                "unknown shape `{other}`: floor, glue, direct, binding, echo, pending, parallel, records, records_fetch, records_js, sort_parsed or sort_built"
            );
            std::process::exit(2);
        }
    };
    println!(
        "{shape}: {calls} calls in {elapsed:?} ({:?} per call)",
        elapsed / calls.max(1) as u32
    );
}

/// The floor shapes: `body` (which awaits `op`) in a loop on one warm bare runtime.
fn raw_op(calls: u64, body: &str) -> Duration {
    let local = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut runtime = deno_core::JsRuntime::new(deno_core::RuntimeOptions {
        extensions: vec![profile_floor::init()],
        ..Default::default()
    });
    let script = format!(
        "(async () => {{ const op = Deno.core.ops.op_profile_echo; const then = Promise.prototype.then; let r; for (let i = 0; i < {calls}; i++) {body}; return r; }})()"
    );
    let started = Instant::now();
    runtime.execute_script("floor", script).unwrap();
    local
        .block_on(runtime.run_event_loop(deno_core::PollEventLoopOptions::default()))
        .unwrap();
    started.elapsed()
}

/// `calls` sequential pipeline calls of `noop` from Rust.
fn direct(calls: u64) -> Duration {
    let pipeline = Pipeline::builder(tools()).pool_size(128).build();
    let local = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let started = Instant::now();
    local.block_on(async {
        for _ in 0..calls {
            let outcome = pipeline
                .call(codemode::CallRequest::new("noop", json!({})))
                .await;
            assert!(outcome.is_ok());
        }
    });
    started.elapsed()
}

/// `noop` answers at once, `echo` answers its `x`; `yield_once` yields to the runtime first; `records` answers W4's
/// 10,000 records.
fn tools() -> ToolRegistry {
    let mut registry = ToolRegistry::new();
    let records: serde_json::Value = (0..10_000u64)
        .map(|id| json!({"id": id, "name": format!("record {id}"), "score": (id * 7919) % 10007}))
        .collect();
    let records = std::sync::Arc::new(records);
    registry
        .register(
            ToolDefinition::builder("records")
                .description("10,000 records")
                .parameters(json!({"type": "object"}))
                .execute(move |_args, _exec| {
                    let records = std::sync::Arc::clone(&records);
                    async move { Ok(serde_json::Value::clone(&records)) }
                })
                .parallel_safe()
                .build()
                .unwrap(),
        )
        .unwrap();
    let echo = ToolDefinition::builder("echo")
        .description("answers its `x`")
        .parameters(json!({"type": "object"}))
        .execute(|args: serde_json::Value, _exec| async move { Ok(args["x"].clone()) })
        .parallel_safe()
        .build()
        .unwrap();
    registry.register(echo).unwrap();
    for (name, yields) in [("noop", false), ("yield_once", true)] {
        let tool = ToolDefinition::builder(name)
            .description("answers null")
            .parameters(json!({"type": "object"}))
            .execute(move |_args, _exec| async move {
                if yields {
                    tokio::task::yield_now().await;
                }
                Ok(json!(null))
            })
            .parallel_safe()
            .build()
            .unwrap();
        registry.register(tool).unwrap();
    }
    registry
}

/// One Code Mode run of `code` on a warm worker, against `noop` and `yield_once`.
fn program(code: &str) -> Duration {
    let limits = Limits {
        in_flight_calls: 128,
        tool_calls: u64::MAX,
        ..Limits::default().with_deadline(Duration::from_secs(600))
    };
    let sandbox = Sandbox::new(SandboxConfig {
        workers: 1,
        limits: limits.clone(),
        ..SandboxConfig::default()
    })
    .unwrap();
    let pipeline = Pipeline::builder(tools()).pool_size(128).build();
    let code_mode = CodeMode::new(sandbox.clone(), limits, pipeline);
    while sandbox.warm_workers() < 1 {
        std::thread::sleep(Duration::from_millis(1));
    }
    let host = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let started = Instant::now();
    let outcome = host.block_on(code_mode.run(code, Default::default(), &Default::default()));
    let elapsed = started.elapsed();
    assert!(outcome.is_ok(), "{}", outcome.to_json());
    elapsed
}

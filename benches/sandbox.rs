//! (Cold starts each run on a fresh thread: the engine facade fails to create isolates after some
//! hundreds on one thread, which is why the pool recycles its worker threads.)
//!
//! Sandbox latencies against the floor of a raw `JsRuntime::new` + `execute_script`, measured in
//! the same run (absolute times on shared machines are noisy; the ratios are the result).
//!
//! - `raw_runtime_floor`: deno_core alone, no glue, no limits.
//! - `sandbox_cold_start`: a fresh sandboxed isolate (glue, limits, watchdog) + trivial program.
//! - `sandbox_pooled_run`: a trivial program through the warm pool (refilled outside the timing).
//! - `sandbox_back_to_back`: runs submitted back to back (steady-state throughput).
//! - `process_pooled_run`, `process_back_to_back`: the same two with worker processes
//!   (`Isolation::Process`, the `codemode` binary as the worker program).
//! - `console_1000_lines_1kb` against `console_floor_1000_calls`: a pooled run logging 1,000
//!   lines of 1 KB, and the same loop calling an empty function; the difference / 1,000 is the
//!   cost of one `console.log` of a 1 KB string (formatting, the op, the host's buffer).
//! - `plan_program` against `transpile_program`: the static plan every harness run reads in the
//!   host, beside the transpilation every run does anyway, of the same 12-line program.

use std::time::{Duration, Instant};

use codemode::sandbox::{Isolation, Limits, ProcessConfig, Sandbox, SandboxConfig};
use criterion::{Criterion, criterion_group, criterion_main};
use deno_core::{JsRuntime, RuntimeOptions};

const PROGRAM: &str = "return 1 + 1;";
const CONSOLE_PROGRAM: &str =
    "const line = 'x'.repeat(1024); for (let i = 0; i < 1000; i++) console.log(line); return 1;";
const CONSOLE_FLOOR: &str = "const line = 'x'.repeat(1024); const f = (s) => s; for (let i = 0; i < 1000; i++) f(line); return 1;";

/// A typical model-written program: a few calls, a loop, a filter.
const PLANNED: &str = r#"const files = await tools.glob({ pattern: "src/**/*.rs" });
const hits = [];
for (const f of files.paths.slice(0, 20)) {
  const r = await tools.grep({ pattern: "TODO", path: f });
  hits.push(...r.matches.map((m) => ({ file: f, line: m.line })));
}
const summary = hits.filter((h) => h.line > 10);
await tools.write_file({ path: "todo.md", content: summary.map((h) => `${h.file}:${h.line}`).join("\n") });
const gh = tools.github;
console.log(summary.length, "todos");
return { count: summary.length, first: summary[0] };
"#;

fn benches(c: &mut Criterion) {
    // Steady state: every isolate restored from the startup snapshot (docs/PERFORMANCE.md).
    codemode::sandbox::make_startup_snapshot().unwrap();
    plan_benches(c);
    let mut group = c.benchmark_group("sandbox");
    group
        .sample_size(30)
        .measurement_time(Duration::from_secs(5));

    group.bench_function("sandbox_cold_start", |b| {
        b.iter(|| {
            on_fresh_thread(|| {
                let outcome = codemode::sandbox::run_cold_blocking(PROGRAM, &Limits::default());
                assert!(outcome.is_ok());
            })
        })
    });

    group.bench_function("raw_runtime_floor", |b| {
        b.iter(|| {
            on_fresh_thread(|| {
                let mut runtime = JsRuntime::new(RuntimeOptions::default());
                runtime.execute_script("floor", "1 + 1").unwrap();
            })
        })
    });

    let host = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    for (name, isolation) in [
        ("sandbox_pooled_run", Isolation::Thread),
        ("process_pooled_run", processes()),
    ] {
        let sandbox = Sandbox::new(SandboxConfig {
            workers: 1,
            isolation,
            ..SandboxConfig::default()
        })
        .unwrap();
        pooled_run(&mut group, name, &sandbox, &host, PROGRAM);
    }
    let sandbox = Sandbox::new(SandboxConfig {
        workers: 1,
        ..SandboxConfig::default()
    })
    .unwrap();
    for (name, program) in [
        ("console_1000_lines_1kb", CONSOLE_PROGRAM),
        ("console_floor_1000_calls", CONSOLE_FLOOR),
    ] {
        pooled_run(&mut group, name, &sandbox, &host, program);
    }
    for (name, isolation) in [
        ("sandbox_back_to_back", Isolation::Thread),
        ("process_back_to_back", processes()),
    ] {
        let pair = Sandbox::new(SandboxConfig {
            workers: 2,
            isolation,
            ..SandboxConfig::default()
        })
        .unwrap();
        group.bench_function(name, |b| {
            b.iter(|| {
                let outcome = host.block_on(pair.run(PROGRAM));
                assert!(outcome.is_ok());
            })
        });
    }
    group.finish();
}

fn plan_benches(c: &mut Criterion) {
    let mut group = c.benchmark_group("plan");
    group.bench_function("transpile_program", |b| {
        b.iter(|| codemode::sandbox::transpile(std::hint::black_box(PLANNED)).unwrap())
    });
    group.bench_function("plan_program", |b| {
        b.iter(|| codemode::sandbox::plan(std::hint::black_box(PLANNED)).unwrap())
    });
    group.finish();
}

fn processes() -> Isolation {
    Isolation::Process(ProcessConfig::with_program(env!("CARGO_BIN_EXE_codemode")))
}

/// `program` through the warm pool (refilled outside the timing).
fn pooled_run(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    sandbox: &Sandbox,
    host: &tokio::runtime::Runtime,
    program: &str,
) {
    group.bench_function(name, |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                // Refill outside the timed part: wait until the worker has its next isolate ready.
                while sandbox.warm_workers() < 1 {
                    std::thread::sleep(Duration::from_micros(200));
                }
                let started = Instant::now();
                let outcome = host.block_on(sandbox.run(program));
                total += started.elapsed();
                assert!(outcome.is_ok());
            }
            total
        })
    });
}

/// Runs `f` on a thread of its own, as the pool's workers do (16 MiB stack). The engine facade
/// keeps per-thread state and fails to create isolates after some hundreds on one thread, which
/// back-to-back cold starts on the bench thread reach. Both cold benches pay the same spawn
/// (tens of microseconds against milliseconds).
fn on_fresh_thread(f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .stack_size(16 << 20)
        .spawn(f)
        .unwrap()
        .join()
        .unwrap();
}

criterion_group!(sandbox_benches, benches);
criterion_main!(sandbox_benches);

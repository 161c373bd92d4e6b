//! Memory and time of fresh isolates, N in a row: the reproducer of docs/LIFECYCLE.md.
//!
//! ```text
//! cargo run --release --example engine_churn -- MODE [N] [PER_THREAD]
//! ```
//!
//! Modes:
//! - `bare`: an engine isolate and one context, created and dropped (the facade alone);
//! - `template`: the same, plus one function template whose data is an object of the context;
//! - `runtime`: a deno_core `JsRuntime` with no extensions, created and dropped;
//! - `thread`: `return 1` runs on a one-worker sandbox with engine threads;
//! - `process`: the same on worker processes (`WORKER`: the worker program, default
//!   `target/release/codemode`; `RUNS_PER_WORKER`: recycle after that many runs, whatever the
//!   worker's RSS).
//!
//! Every 100 cycles it prints this process's RSS, its children's, and the mean time per cycle.
//! `PER_THREAD` (default 64) is the number of isolates a thread builds before a fresh thread
//! takes over, as the sandbox pool does.

use std::time::Instant;

use codemode::sandbox::{Isolation, ProcessConfig, Sandbox, SandboxConfig};
use deno_core::{JsRuntime, RuntimeOptions, v8};

fn main() {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_else(|| "runtime".into());
    let cycles: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(500);
    let per_thread: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(64);
    JsRuntime::init_platform(None);
    let started = Instant::now();
    let report = |done: usize| {
        println!(
            "{done:>6} cycles  rss {:>7} kB  children {:>7} kB  {:.2} ms/cycle",
            rss_kb(std::process::id()),
            children_rss_kb(),
            started.elapsed().as_secs_f64() * 1000.0 / done as f64
        );
    };
    println!("start rss {} kB", rss_kb(std::process::id()));
    match mode.as_str() {
        "bare" | "template" | "runtime" => {
            let mut done = 0;
            while done < cycles {
                let batch = per_thread.min(cycles - done);
                let mode = mode.clone();
                std::thread::spawn(move || {
                    for _ in 0..batch {
                        if mode != "runtime" {
                            let mut isolate = v8::Isolate::new(Default::default());
                            v8::scope!(let scope, &mut isolate);
                            let context = v8::Context::new(scope, Default::default());
                            if mode == "template" {
                                // One function template whose data is an object of the context.
                                let scope = &mut v8::ContextScope::new(scope, context);
                                let data = v8::Object::new(scope);
                                let template = v8::FunctionTemplate::builder(
                                    |_: &mut v8::PinScope,
                                     _: v8::FunctionCallbackArguments,
                                     _: v8::ReturnValue| {},
                                )
                                .data(data.into())
                                .build(scope);
                                let _function = template.get_function(scope);
                            }
                        } else {
                            drop(JsRuntime::new(RuntimeOptions::default()));
                        }
                    }
                })
                .join()
                .expect("the engine thread panicked");
                done += batch;
                if done % 100 == 0 {
                    report(done);
                }
            }
        }
        "thread" | "process" => {
            let mut config = SandboxConfig {
                workers: 1,
                isolates_per_thread: per_thread,
                ..SandboxConfig::default()
            };
            if mode == "process" {
                let worker = std::env::var("WORKER").unwrap_or("target/release/codemode".into());
                let mut process = ProcessConfig::with_program(worker);
                if let Some(runs) = std::env::var("RUNS_PER_WORKER")
                    .ok()
                    .and_then(|v| v.parse().ok())
                {
                    process.runs_per_worker = runs;
                    process.rss_ceiling_bytes = u64::MAX;
                }
                config.isolation = Isolation::Process(process);
            }
            let sandbox = Sandbox::new(config).expect("sandbox starts");
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("tokio runtime");
            for done in 1..=cycles {
                let outcome = runtime.block_on(sandbox.run("return 1"));
                assert!(outcome.is_ok(), "{}", outcome.to_json());
                if done % 100 == 0 {
                    report(done);
                }
            }
        }
        other => panic!("unknown mode `{other}`: bare, runtime, thread or process"),
    }
}

fn rss_kb(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|line| line.starts_with("VmRSS"))?
                .split_whitespace()
                .nth(1)?
                .parse()
                .ok()
        })
        .unwrap_or(0)
}

fn children_rss_kb() -> u64 {
    let me = std::process::id().to_string();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            let parent = stat.rsplit(')').next()?.split_whitespace().nth(1)?;
            (parent == me).then(|| rss_kb(pid))
        })
        .sum()
}

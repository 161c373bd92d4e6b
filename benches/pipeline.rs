//! A full pipeline call of a trivial tool against calling its body directly, in the same run.
//!
//! Full call: lookup, snapshot, argument limit, validation, classification, scheduler place,
//! one pre-execute hook and one post-execute hook, the default wrapper stack (metrics, retry,
//! timeout), output validation, render, a live observer and the session log (temp file).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use codemode::pipeline::{
    CallRequest, Event, HookDecision, PostAction, SessionLog, SessionLogOptions, post_hook_fn,
    pre_hook_fn,
};
use codemode::schema::{object, string};
use codemode::{Caller, Pipeline, ToolDefinition, ToolFailure, ToolRegistry};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::{Value, json};

async fn echo_body(args: Value) -> Result<Value, ToolFailure> {
    Ok(json!({ "echo": args["text"] }))
}

fn registry_with_echo() -> ToolRegistry {
    let tool = ToolDefinition::builder("echo")
        .parameters(object().property("text", string()))
        .output_schema(object().property("echo", string()))
        .parallel_safe()
        .execute(|args, _exec| echo_body(args))
        .build()
        .unwrap();
    let mut registry = ToolRegistry::new();
    registry.register(tool).unwrap();
    registry
}

fn pipeline(log_path: Option<&std::path::Path>, seen: Arc<AtomicU64>) -> Pipeline {
    let builder = Pipeline::builder(registry_with_echo())
        .pre_hook(pre_hook_fn("allow", |_| HookDecision::Allow))
        .post_hook(post_hook_fn("note", |_| PostAction::keep()))
        .observer(move |_: &Event| {
            seen.fetch_add(1, Ordering::Relaxed);
        });
    match log_path {
        Some(path) => builder.session_log(Arc::new(
            SessionLog::open(path, SessionLogOptions::default()).unwrap(),
        )),
        None => builder,
    }
    .build()
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // CODEMODE_BENCH_DIR picks the file system of the log (e.g. /dev/shm to compare with tmpfs).
    let dir = match std::env::var_os("CODEMODE_BENCH_DIR") {
        Some(base) => tempfile::tempdir_in(base).unwrap(),
        None => tempfile::tempdir().unwrap(),
    };
    let seen = Arc::new(AtomicU64::new(0));
    let p = pipeline(Some(&dir.path().join("session.jsonl")), seen.clone());
    let no_log = pipeline(None, seen.clone());
    let args = json!({"text": "hello"});

    let mut group = c.benchmark_group("pipeline");
    group.throughput(Throughput::Elements(1));
    group.bench_function("body_direct", |b| {
        b.to_async(&rt)
            .iter(|| echo_body(std::hint::black_box(args.clone())));
    });
    group.bench_function("tool_call_full", |b| {
        b.to_async(&rt).iter(|| {
            let fut = p.call(CallRequest::new("echo", args.clone()));
            async move {
                let out = fut.await;
                assert!(out.is_ok());
                out
            }
        });
    });
    // A nested code-mode call through the same pipeline: live events only, never the durable write.
    group.bench_function("tool_call_nested_code_mode", |b| {
        let caller = Caller::code_mode("r_bench", 1);
        b.to_async(&rt)
            .iter(|| p.call(CallRequest::new("echo", args.clone()).caller(caller.clone())));
    });
    // The same call without the session log: shows what the one `write` per event costs.
    group.bench_function("tool_call_no_session_log", |b| {
        b.to_async(&rt)
            .iter(|| no_log.call(CallRequest::new("echo", args.clone())));
    });
    // The durable write alone (serialize one `tool/result` + one `write`): the log's floor.
    let sample = Arc::new(std::sync::Mutex::new(None));
    let keep = sample.clone();
    let recorder = Pipeline::builder(registry_with_echo())
        .durable_sink(move |e: &Event| *keep.lock().unwrap() = Some(e.clone()))
        .build();
    rt.block_on(recorder.call(CallRequest::new("echo", args.clone())));
    let event = sample.lock().unwrap().take().expect("a durable event");
    let log = SessionLog::open(
        dir.path().join("append.jsonl"),
        SessionLogOptions::default(),
    )
    .unwrap();
    group.bench_function("session_log_append", |b| {
        b.iter(|| log.append(&event).unwrap())
    });
    let mut buf = Vec::with_capacity(1024);
    group.bench_function("event_serialize", |b| {
        b.iter(|| {
            buf.clear();
            serde_json::to_writer(&mut buf, &event).unwrap();
        })
    });
    group.finish();
    assert!(seen.load(Ordering::Relaxed) > 0);
}

criterion_group!(benches, bench);
criterion_main!(benches);

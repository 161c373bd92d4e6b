//! Ordering tests on tokio's paused clock: times are virtual, so they are exact.

use std::time::Duration;

use codemode::pipeline::{CallRequest, HookDecision, pre_hook_fn};
use codemode::schema::{boolean, integer, object, string};
use codemode::{CallOutcome, Pipeline, PipelineBuilder, ToolDefinition, ToolFailure};
use serde_json::{Value, json};

use crate::support::{Trace, registry};

/// `work({label, ms, parallel?, panic?})`: records start and end with virtual milliseconds.
fn work_tool(trace: Trace, t0: tokio::time::Instant) -> ToolDefinition {
    ToolDefinition::builder("work")
        .parameters(
            object()
                .property("label", string())
                .property("ms", integer())
                .property("parallel", boolean().optional())
                .property("panic", boolean().optional()),
        )
        .is_concurrency_safe(|args| {
            assert!(args["panic"] != json!(true), "classifier bug");
            args["parallel"] == json!(true)
        })
        .execute(move |args: Value, _| {
            let trace = trace.clone();
            async move {
                let label = args["label"].as_str().unwrap().to_owned();
                trace.push(format!("{label}+{}", t0.elapsed().as_millis()));
                tokio::time::sleep(Duration::from_millis(args["ms"].as_u64().unwrap())).await;
                trace.push(format!("{label}-{}", t0.elapsed().as_millis()));
                Ok::<_, ToolFailure>(Value::Null)
            }
        })
        .build()
        .unwrap()
}

fn setup(configure: impl FnOnce(PipelineBuilder) -> PipelineBuilder) -> (Pipeline, Trace) {
    let trace = Trace::default();
    let tool = work_tool(trace.clone(), tokio::time::Instant::now());
    (
        configure(Pipeline::builder(registry([tool]))).build(),
        trace,
    )
}

fn par(label: &str, ms: u64) -> Value {
    json!({"label": label, "ms": ms, "parallel": true})
}

fn excl(label: &str, ms: u64) -> Value {
    json!({"label": label, "ms": ms})
}

async fn run_all(p: &Pipeline, calls: Vec<Value>) -> Vec<CallOutcome> {
    let handles: Vec<_> = calls
        .into_iter()
        .map(|a| tokio::spawn(p.call(CallRequest::new("work", a))))
        .collect();
    let mut out = Vec::new();
    for h in handles {
        out.push(h.await.unwrap());
    }
    out
}

#[tokio::test(start_paused = true)]
async fn parallel_calls_overlap() {
    let (p, trace) = setup(|b| b);
    run_all(&p, vec![par("a", 10), par("b", 10), par("c", 10)]).await;
    assert_eq!(trace.steps(), ["a+0", "b+0", "c+0", "a-10", "b-10", "c-10"]);
}

#[tokio::test(start_paused = true)]
async fn an_exclusive_call_is_a_barrier_in_issue_order() {
    let (p, trace) = setup(|b| b);
    run_all(
        &p,
        vec![
            par("a", 10),
            par("b", 20),
            excl("x", 5),
            par("c", 10),
            excl("y", 1),
            par("d", 1),
        ],
    )
    .await;
    assert_eq!(
        trace.steps(),
        [
            "a+0", "b+0", "a-10", "b-20", "x+20", "x-25", "c+25", "c-35", "y+35", "y-36", "d+36",
            "d-37"
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn the_parallel_pool_is_bounded_and_rolling() {
    let (p, trace) = setup(|b| b.pool_size(2));
    run_all(
        &p,
        vec![par("a", 10), par("b", 30), par("c", 10), par("d", 10)],
    )
    .await;
    // `c` takes `a`'s place at 10 without waiting for `b`; `d` takes `c`'s at 20.
    assert_eq!(
        trace.steps(),
        ["a+0", "b+0", "a-10", "c+10", "c-20", "d+20", "b-30", "d-30"]
    );
}

#[tokio::test(start_paused = true)]
async fn a_classifier_that_panics_or_says_no_makes_the_call_exclusive() {
    let (p, trace) = setup(|b| b);
    let panicking = json!({"label": "p", "ms": 5, "parallel": true, "panic": true});
    let outs = run_all(&p, vec![par("a", 10), panicking, par("b", 10)]).await;
    assert!(outs.iter().all(CallOutcome::is_ok));
    assert_eq!(
        trace.steps(),
        ["a+0", "a-10", "p+10", "p-15", "b+15", "b-25"]
    );
}

#[tokio::test(start_paused = true)]
async fn an_invalid_call_completes_at_once_even_behind_a_barrier() {
    let (p, trace) = setup(|b| b);
    let x = tokio::spawn(p.call(CallRequest::new("work", excl("x", 100))));
    let t0 = tokio::time::Instant::now();
    let bad = p.call(CallRequest::new("work", json!({"label": 3}))).await;
    assert_eq!(bad.error.unwrap().code().as_str(), "INVALID_ARGS");
    assert_eq!(t0.elapsed(), Duration::ZERO);
    x.await.unwrap();
    assert_eq!(trace.steps(), ["x+0", "x-100"]);
}

#[tokio::test(start_paused = true)]
async fn a_denied_call_releases_its_place_at_once() {
    let (p, trace) = setup(|b| {
        b.pre_hook(pre_hook_fn("no-d", |c| {
            if c.args["label"] == "d" {
                HookDecision::Deny {
                    reason: "no".into(),
                }
            } else {
                HookDecision::Allow
            }
        }))
    });
    let outs = run_all(&p, vec![excl("x", 10), excl("d", 50), par("a", 10)]).await;
    assert_eq!(outs[1].error.as_ref().unwrap().code().as_str(), "DENIED");
    assert_eq!(trace.steps(), ["x+0", "x-10", "a+10", "a-20"]);
}

#[tokio::test(start_paused = true)]
async fn child_scopes_order_independently() {
    let (p, trace) = setup(|b| b);
    let child = p.root_scope().sibling();
    let outer = tokio::spawn(p.call(CallRequest::new("work", excl("run_code", 100))));
    tokio::time::sleep(Duration::from_millis(1)).await;
    let inner = p
        .call(CallRequest::new("work", excl("nested", 10)).scope(child))
        .await;
    assert!(inner.is_ok());
    outer.await.unwrap();
    assert_eq!(
        trace.steps(),
        ["run_code+0", "nested+1", "nested-11", "run_code-100"]
    );
}

#[tokio::test(start_paused = true)]
async fn dropping_a_queued_call_gives_its_place_back() {
    let (p, trace) = setup(|b| b);
    let x = tokio::spawn(p.call(CallRequest::new("work", excl("x", 10))));
    let queued = p.call(CallRequest::new("work", excl("dropped", 10)));
    let after = tokio::spawn(p.call(CallRequest::new("work", par("a", 10))));
    drop(queued);
    x.await.unwrap();
    after.await.unwrap();
    assert_eq!(trace.steps(), ["x+0", "x-10", "a+10", "a-20"]);
    assert_eq!(p.root_scope().running(), 0);
}

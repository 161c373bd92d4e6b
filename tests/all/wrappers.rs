use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

use codemode::pipeline::{CallRequest, RetryPolicy, around_fn};
use codemode::{Pipeline, ToolDefinition, ToolFailure};
use serde_json::{Value, json};

use crate::support::{Trace, registry};

/// Sets its flag when dropped: proves a body's future was dropped.
pub struct DropFlag(pub Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

fn sleepy(dropped: Arc<AtomicBool>) -> ToolDefinition {
    ToolDefinition::builder("sleepy")
        .timeout_ms(1_000)
        .execute(move |_, _| {
            let guard = DropFlag(dropped.clone());
            async move {
                let _guard = guard;
                tokio::time::sleep(Duration::from_secs(5)).await;
                Ok::<_, ToolFailure>(json!("woke"))
            }
        })
        .build()
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn declared_timeout_is_only_metadata_without_the_timeout_wrapper() {
    let dropped = Arc::new(AtomicBool::new(false));
    let p = Pipeline::builder(registry([sleepy(dropped.clone())]))
        .clear_wrappers()
        .build();
    let start = tokio::time::Instant::now();
    let out = p.call(CallRequest::new("sleepy", json!({}))).await;
    assert_eq!(out.value.as_deref(), Some(&json!("woke")));
    assert_eq!(start.elapsed(), Duration::from_secs(5));
}

#[tokio::test(start_paused = true)]
async fn timeout_wrapper_ends_the_call_and_drops_the_body() {
    let dropped = Arc::new(AtomicBool::new(false));
    let p = Pipeline::builder(registry([sleepy(dropped.clone())])).build();
    let start = tokio::time::Instant::now();
    let out = p.call(CallRequest::new("sleepy", json!({}))).await;
    let err = out.error.unwrap();
    assert_eq!(err.code().as_str(), "TIMEOUT");
    assert_eq!(err.details(), json!({"after_ms": 1000}));
    assert_eq!(start.elapsed(), Duration::from_secs(1));
    assert!(
        dropped.load(Ordering::SeqCst),
        "the body's future was dropped"
    );
}

#[tokio::test(start_paused = true)]
async fn tools_without_a_declared_timeout_get_the_default() {
    let slow = ToolDefinition::builder("slow")
        .execute(|_, _| async {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Ok::<_, ToolFailure>(Value::Null)
        })
        .build()
        .unwrap();
    let p = Pipeline::builder(registry([slow])).build();
    let err = p
        .call(CallRequest::new("slow", json!({})))
        .await
        .error
        .unwrap();
    assert_eq!(err.details(), json!({"after_ms": 60000}));
}

fn flaky(
    parallel: bool,
    fail_times: u32,
    retryable: bool,
    calls: Arc<AtomicU32>,
) -> ToolDefinition {
    let b = ToolDefinition::builder("flaky").execute(move |_, exec| {
        let n = calls.fetch_add(1, Ordering::SeqCst) + 1;
        let attempt = exec.attempt;
        async move {
            assert!(attempt <= n, "attempt numbers count up within one call");
            if n <= fail_times {
                Err(ToolFailure {
                    message: format!("attempt {n} failed"),
                    retryable,
                    limit: None,
                    timed_out_after_ms: None,
                })
            } else {
                Ok(json!(n))
            }
        }
    });
    if parallel { b.parallel_safe() } else { b }
        .build()
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn retry_recovers_retryable_errors_of_parallel_calls_with_backoff() {
    let calls = Arc::new(AtomicU32::new(0));
    let p = Pipeline::builder(registry([flaky(true, 2, true, calls.clone())])).build();
    let start = tokio::time::Instant::now();
    let out = p.call(CallRequest::new("flaky", json!({}))).await;
    assert_eq!(out.value.as_deref(), Some(&json!(3)));
    // 100 ms then 200 ms of backoff.
    assert_eq!(start.elapsed(), Duration::from_millis(300));
}

#[tokio::test(start_paused = true)]
async fn retry_gives_up_after_the_cap_and_reports_attempts() {
    let calls = Arc::new(AtomicU32::new(0));
    let p = Pipeline::builder(registry([flaky(true, 10, true, calls.clone())])).build();
    let err = p
        .call(CallRequest::new("flaky", json!({})))
        .await
        .error
        .unwrap();
    assert_eq!(err.details(), json!({"retryable": true, "attempts": 3}));
    assert_eq!(calls.load(Ordering::SeqCst), 3);
}

#[tokio::test(start_paused = true)]
async fn no_retry_for_exclusive_calls_or_non_retryable_errors() {
    for (parallel, retryable) in [(false, true), (true, false)] {
        let calls = Arc::new(AtomicU32::new(0));
        let p =
            Pipeline::builder(registry([flaky(parallel, 10, retryable, calls.clone())])).build();
        let err = p
            .call(CallRequest::new("flaky", json!({})))
            .await
            .error
            .unwrap();
        assert_eq!(err.details()["attempts"], 1);
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }
}

#[test]
fn backoff_is_exponential_and_capped() {
    let p = RetryPolicy {
        max_retries: 10,
        initial_backoff: Duration::from_millis(100),
        max_backoff: Duration::from_secs(1),
    };
    let waits: Vec<u128> = (1..=6).map(|r| p.backoff(r).as_millis()).collect();
    assert_eq!(waits, [100, 200, 400, 800, 1000, 1000]);
}

#[tokio::test]
async fn the_first_wrapper_added_sees_the_call_first_and_the_result_last() {
    let trace = Trace::default();
    let (a, b) = (trace.clone(), trace.clone());
    let tool = ToolDefinition::builder("t")
        .execute(|_, _| async { Ok::<_, ToolFailure>(json!(1)) })
        .build()
        .unwrap();
    let p = Pipeline::builder(registry([tool]))
        .clear_wrappers()
        .wrap(around_fn(move |call, next| {
            let t = a.clone();
            async move {
                t.push("outer in");
                let r = next.run(call).await;
                t.push("outer out");
                r
            }
        }))
        .wrap(around_fn(move |call, next| {
            let t = b.clone();
            async move {
                t.push("inner in");
                let r = next.run(call).await;
                t.push("inner out");
                r
            }
        }))
        .build();
    assert!(p.call(CallRequest::new("t", json!({}))).await.is_ok());
    assert_eq!(
        trace.steps(),
        ["outer in", "inner in", "inner out", "outer out"]
    );
}

#[tokio::test]
async fn metrics_wrapper_counts_calls_and_errors_per_tool() {
    let calls = Arc::new(AtomicU32::new(0));
    let p = Pipeline::builder(registry([flaky(false, 1, false, calls)])).build();
    let _ = p.call(CallRequest::new("flaky", json!({}))).await;
    let _ = p.call(CallRequest::new("flaky", json!({}))).await;
    let stats = p.metrics().snapshot()["flaky"];
    assert_eq!((stats.calls, stats.errors), (2, 1));
}

#[tokio::test(start_paused = true)]
async fn stats_count_every_attempt_of_a_call_that_succeeded_after_retries() {
    let calls = Arc::new(AtomicU32::new(0));
    let p = Pipeline::builder(registry([flaky(true, 2, true, calls.clone())])).build();
    let out = p.call(CallRequest::new("flaky", json!({}))).await;
    assert_eq!(out.value.as_deref(), Some(&json!(3)));
    let stats = p.metrics().snapshot()["flaky"];
    assert_eq!((stats.calls, stats.errors, stats.attempts), (1, 0, 3));
}

#[tokio::test]
async fn a_hand_written_retry_wrapper_sees_true_attempt_numbers() {
    // The body counts its own attempts, so a wrapper that re-runs `next` itself (no access to
    // any counter) still yields correct `attempts` in the body and the error.
    let calls = Arc::new(AtomicU32::new(0));
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    let p = Pipeline::builder(registry([flaky(false, 10, false, calls.clone())]))
        .clear_wrappers()
        .wrap(around_fn(move |call, next| {
            let log = log.clone();
            async move {
                let mut last = None;
                for _ in 0..4 {
                    log.lock().unwrap().push(call.attempts());
                    last = Some(next.clone().run(call.clone()).await);
                }
                log.lock().unwrap().push(call.attempts());
                last.unwrap()
            }
        }))
        .build();
    let err = p
        .call(CallRequest::new("flaky", json!({})))
        .await
        .error
        .unwrap();
    assert_eq!(err.details(), json!({"retryable": false, "attempts": 4}));
    assert_eq!(*seen.lock().unwrap(), [0, 1, 2, 3, 4]);
}

#[tokio::test]
async fn a_wrapper_cannot_make_the_body_run_other_arguments_than_the_logged_ones() {
    // `Dispatch` has no public fields and no public constructor: a wrapper can read the snapshot
    // and choose whether to run it, nothing else. The body and the durable record agree.
    let ran = Arc::new(std::sync::Mutex::new(Vec::new()));
    let bodies = ran.clone();
    let tool = ToolDefinition::builder("read")
        .execute(move |args, _| {
            bodies.lock().unwrap().push(args.clone());
            async move { Ok::<_, ToolFailure>(json!("done")) }
        })
        .build()
        .unwrap();
    let p = Pipeline::builder(registry([tool]))
        .wrap(around_fn(|call, next| async move {
            // All a wrapper can do with the call: look at it, clone it, pass it on.
            let copy = call.clone();
            assert_eq!(copy.args(), &json!({"path": "public.txt"}));
            assert!(!copy.parallel());
            next.run(copy).await
        }))
        .build();
    let out = p
        .call(CallRequest::new("read", json!({"path": "public.txt"})))
        .await;
    assert_eq!(out.value.as_deref(), Some(&json!("done")));
    assert_eq!(*ran.lock().unwrap(), [json!({"path": "public.txt"})]);
}

#[tokio::test(start_paused = true)]
async fn a_timeout_fires_the_bodys_cancellation_token() {
    let fired = Arc::new(AtomicBool::new(false));
    let flag = fired.clone();
    let tool = ToolDefinition::builder("spawner")
        .timeout_ms(10)
        .execute(move |_, exec| {
            // Work the body spawned outside its own future: only the token can stop it.
            let flag = flag.clone();
            let token = exec.cancel.clone();
            tokio::spawn(async move {
                token.cancelled().await;
                flag.store(true, Ordering::SeqCst);
            });
            futures::future::pending::<Result<Value, ToolFailure>>()
        })
        .build()
        .unwrap();
    let p = Pipeline::builder(registry([tool])).build();
    let err = p
        .call(CallRequest::new("spawner", json!({})))
        .await
        .error
        .unwrap();
    assert_eq!(err.code().as_str(), "TIMEOUT");
    tokio::task::yield_now().await;
    assert!(fired.load(Ordering::SeqCst));
}

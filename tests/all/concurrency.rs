//! Runs execute on worker threads; many concurrent runs from a multi-threaded host all complete.

use std::time::Duration;

use codemode::sandbox::{Limits, RunOptions, RunStatus, Sandbox, SandboxConfig};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::common::sandbox;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn many_concurrent_runs_complete() {
    let mut handles = Vec::new();
    for i in 0..40 {
        handles.push(tokio::spawn(async move {
            let outcome = sandbox()
                .run(&format!("await new Promise((r) => setTimeout(r, 2)); globalThis.mine = {i}; return mine * 2;"))
                .await;
            (i, outcome)
        }));
    }
    for handle in handles {
        let (i, outcome) = handle.await.unwrap();
        assert_eq!(
            outcome.value_json(),
            Some(json!(i * 2)),
            "{}",
            outcome.to_json()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_run_stops_it() {
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        trigger.cancel();
    });
    let outcome = sandbox()
        .run_with(
            "while (true) {}",
            RunOptions::new(Limits::default()).with_cancel(cancel),
        )
        .await;
    assert_eq!(
        outcome.status,
        RunStatus::Cancelled,
        "{}",
        outcome.to_json()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_run_frees_its_worker() {
    let pool = Sandbox::new(SandboxConfig {
        workers: 1,
        ..SandboxConfig::default()
    })
    .unwrap();
    let hung = pool.run("while (true) {}");
    let _ = tokio::time::timeout(Duration::from_millis(200), hung).await;
    // With one worker, this only completes if dropping the first run stopped it.
    let outcome = tokio::time::timeout(Duration::from_secs(20), pool.run("return 'next'"))
        .await
        .expect("worker freed");
    assert_eq!(outcome.value_json(), Some(json!("next")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_with_their_own_heap_limit_work() {
    let limits = Limits {
        heap_bytes: 32 * codemode::sandbox::MIB,
        ..Limits::default()
    };
    let outcome = sandbox()
        .run_with("return 'small heap'", RunOptions::new(limits))
        .await;
    assert_eq!(outcome.value_json(), Some(json!("small heap")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker_threads_are_recycled_and_keep_serving() {
    // Each thread builds 3 isolates (serving a run on each), then a fresh thread takes its
    // place; with 1, each thread serves one run (a thread once built its one isolate and handed
    // over before serving any, forever).
    for per_thread in [3, 1] {
        recycled_threads_serve(per_thread).await;
    }
}

async fn recycled_threads_serve(isolates_per_thread: usize) {
    let pool = Sandbox::new(SandboxConfig {
        workers: 1,
        isolates_per_thread,
        ..SandboxConfig::default()
    })
    .unwrap();
    for i in 0..10 {
        let outcome =
            tokio::time::timeout(Duration::from_secs(30), pool.run(&format!("return {i};")))
                .await
                .expect("the recycled pool keeps serving");
        assert_eq!(
            outcome.value_json(),
            Some(json!(i)),
            "{}",
            outcome.to_json()
        );
    }
}

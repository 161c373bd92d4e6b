use std::sync::Arc;
use std::time::Duration;

use codemode::Pipeline;
use codemode::pipeline::{
    ApprovalDecision, ApprovalObserver, ApprovalRequest, Approver, CallRequest, GuardDecision,
    HookDecision, HookError, approver_fn, guard_fn, pre_hook_fn,
};
use futures::future::BoxFuture;
use serde_json::json;

use crate::support::{Trace, echo_tool, registry};

fn asking() -> impl codemode::pipeline::PreExecuteHook {
    pre_hook_fn("ask", |_| HookDecision::Ask {
        reason: "writes a file".into(),
    })
}

#[tokio::test]
async fn ask_goes_to_the_approver_with_the_reasons() {
    let trace = Trace::default();
    let t = trace.clone();
    let p = Pipeline::builder(registry([echo_tool("echo")]))
        .pre_hook(asking())
        .approver(approver_fn(move |req: &ApprovalRequest<'_>| {
            t.push(format!("{} {}", req.call.path, req.reasons.join(",")));
            ApprovalDecision::Approve
        }))
        .build();
    let out = p.call(CallRequest::new("echo", json!({"text": "x"}))).await;
    assert!(out.is_ok());
    assert_eq!(trace.steps(), ["echo writes a file"]);
}

#[tokio::test]
async fn ask_without_an_approver_or_with_a_refusal_is_denied_by_approver() {
    let p = Pipeline::builder(registry([echo_tool("echo")]))
        .pre_hook(asking())
        .build();
    let err = p
        .call(CallRequest::new("echo", json!({"text": "x"})))
        .await
        .error
        .unwrap();
    assert_eq!(err.details()["by"], "approver");
    assert!(
        err.details()["reason"]
            .as_str()
            .unwrap()
            .contains("no approver")
    );

    let p = Pipeline::builder(registry([echo_tool("echo")]))
        .pre_hook(asking())
        .approver(approver_fn(|_| ApprovalDecision::Refuse {
            reason: "user said no".into(),
        }))
        .build();
    let err = p
        .call(CallRequest::new("echo", json!({"text": "x"})))
        .await
        .error
        .unwrap();
    assert_eq!(
        err.details(),
        json!({"by": "approver", "reason": "user said no"})
    );
}

struct BrokenApprover;

impl Approver for BrokenApprover {
    fn approve<'a>(
        &'a self,
        _: &'a ApprovalRequest<'a>,
    ) -> BoxFuture<'a, Result<ApprovalDecision, HookError>> {
        Box::pin(async { Err(HookError::new("ui crashed")) })
    }
}

#[tokio::test]
async fn approver_errors_and_panics_deny() {
    let p = Pipeline::builder(registry([echo_tool("echo")]))
        .pre_hook(asking())
        .approver(BrokenApprover)
        .build();
    let err = p
        .call(CallRequest::new("echo", json!({"text": "x"})))
        .await
        .error
        .unwrap();
    assert_eq!(err.details()["by"], "approver");
    assert!(
        err.details()["reason"]
            .as_str()
            .unwrap()
            .contains("ui crashed")
    );

    let p = Pipeline::builder(registry([echo_tool("echo")]))
        .pre_hook(asking())
        .approver(approver_fn(|_| panic!("approver bug")))
        .build();
    let err = p
        .call(CallRequest::new("echo", json!({"text": "x"})))
        .await
        .error
        .unwrap();
    assert_eq!(err.details()["by"], "approver");
}

#[tokio::test]
async fn a_guard_still_denies_after_approval() {
    let p = Pipeline::builder(registry([echo_tool("echo")]))
        .pre_hook(asking())
        .approver(approver_fn(|_| ApprovalDecision::Approve))
        .guard(guard_fn("root", |_| GuardDecision::Deny {
            reason: "outside root".into(),
        }))
        .build();
    let err = p
        .call(CallRequest::new("echo", json!({"text": "x"})))
        .await
        .error
        .unwrap();
    assert_eq!(err.details()["by"], "guard");
}

/// Never answers: a human who walked away.
struct Silent;

impl Approver for Silent {
    fn approve<'a>(
        &'a self,
        _: &'a ApprovalRequest<'a>,
    ) -> BoxFuture<'a, Result<ApprovalDecision, HookError>> {
        Box::pin(futures::future::pending())
    }
}

/// Records when the wait started and ended, in seconds since `1`.
struct Watch(Trace, tokio::time::Instant);

impl ApprovalObserver for Watch {
    fn waiting_started(&self) {
        self.0
            .push(format!("started {}", self.1.elapsed().as_secs()));
    }
    fn waiting_ended(&self) {
        self.0.push(format!("ended {}", self.1.elapsed().as_secs()));
    }
}

#[tokio::test(start_paused = true)]
async fn approval_timeout_denies_and_the_observer_brackets_the_wait() {
    let trace = Trace::default();
    let p = Pipeline::builder(registry([echo_tool("echo")]))
        .pre_hook(asking())
        .approver(Silent)
        .approval_timeout(Duration::from_secs(300))
        .build();
    let start = tokio::time::Instant::now();
    let req = CallRequest::new("echo", json!({"text": "x"}))
        .approval_observer(Arc::new(Watch(trace.clone(), start)));
    let out = p.call(req).await;
    let err = out.error.unwrap();
    assert_eq!(err.details()["by"], "approver");
    assert!(
        err.details()["reason"]
            .as_str()
            .unwrap()
            .contains("300000 ms")
    );
    assert_eq!(start.elapsed(), Duration::from_secs(300));
    assert_eq!(out.timing.awaiting_approval, Duration::from_secs(300));
    assert_eq!(trace.steps(), ["started 0", "ended 300"]);
}

#[tokio::test]
async fn no_observer_calls_without_an_ask() {
    let trace = Trace::default();
    let p = Pipeline::builder(registry([echo_tool("echo")])).build();
    let watch = Watch(trace.clone(), tokio::time::Instant::now());
    let req = CallRequest::new("echo", json!({"text": "x"})).approval_observer(Arc::new(watch));
    assert!(p.call(req).await.is_ok());
    assert!(trace.steps().is_empty());
}

//! Authorization stages: pre-execute hooks, the Approver on `ask`, then guards. Every error,
//! panic or timeout denies (fails closed).

use std::panic::AssertUnwindSafe;
use std::time::Duration;

use tokio::time::Instant;

use futures::FutureExt;
use futures::future::BoxFuture;

use super::Inner;
use super::approval::{ApprovalDecision, ApprovalObserver, ApprovalRequest, WaitingGuard};
use super::events::{Authorization, AuthorizationDecision};
use super::guards::GuardDecision;
use super::hooks::{CallInfo, HookDecision};
use crate::call::{ApprovedPlan, CallError, DeniedBy, ErrorKind, HookError};

/// Runs a hook-like future, turning an error or a panic (while building or polling it) into a message.
pub(crate) async fn guarded<'a, T>(
    name: &str,
    make: impl FnOnce() -> BoxFuture<'a, Result<T, HookError>>,
) -> Result<T, String> {
    let fut = match std::panic::catch_unwind(AssertUnwindSafe(make)) {
        Ok(fut) => fut,
        Err(_) => return Err(format!("`{name}` panicked")),
    };
    match AssertUnwindSafe(fut).catch_unwind().await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(format!("`{name}` failed: {e}")),
        Err(_) => Err(format!("`{name}` panicked")),
    }
}

/// Decides whether the call may run. `waited` receives the time spent waiting for the Approver,
/// also when the answer is a denial; `record` receives who decided and why, for a call that was
/// denied or asked about.
pub(crate) async fn authorize(
    inner: &Inner,
    info: &CallInfo<'_>,
    observer: Option<&dyn ApprovalObserver>,
    waited: &mut Duration,
    record: &mut Option<Authorization>,
) -> Result<(), CallError> {
    let result = gates(inner, info, observer, waited, record).await;
    if let Err(e) = &result
        && let ErrorKind::Denied { by, reason } = &e.kind
    {
        // The approval (if any) is kept as `asked`: the denial came after or from it.
        let asked = record.take().map(|approved| approved.reason);
        *record = Some(Authorization {
            decision: AuthorizationDecision::Deny,
            by: by.as_str().to_owned(),
            reason: reason.clone(),
            asked,
            with_program: false,
        });
    }
    result
}

/// Runs every pre-execute hook: the reasons of those that ask (empty: all allow), or who denied
/// and why (an error or a panic of a hook denies too).
pub(crate) async fn pre_hooks(
    inner: &Inner,
    info: &CallInfo<'_>,
) -> Result<Vec<String>, (DeniedBy, String)> {
    let mut asks = Vec::new();
    for hook in &inner.pre_hooks {
        let name = hook.name();
        match guarded(name, || hook.before(info)).await {
            Ok(HookDecision::Allow) => {}
            Ok(HookDecision::Ask { reason }) => asks.push(reason),
            Ok(HookDecision::Deny { reason }) => return Err((hook.denied_by(), reason)),
            Err(why) => return Err((hook.denied_by(), format!("hook {why}"))),
        }
    }
    Ok(asks)
}

async fn gates(
    inner: &Inner,
    info: &CallInfo<'_>,
    observer: Option<&dyn ApprovalObserver>,
    waited: &mut Duration,
    record: &mut Option<Authorization>,
) -> Result<(), CallError> {
    let asks = pre_hooks(inner, info)
        .await
        .map_err(|(by, reason)| CallError::denied(by, reason))?;
    if !asks.is_empty() {
        let asked = asks.join("; ");
        // The approver said yes to the whole program, and its plan names this tool.
        let with_program = info
            .extensions
            .get::<ApprovedPlan>()
            .is_some_and(|approved| approved.0.covers(info.path));
        // Until the answer, the record says what was asked (a refusal moves it to `asked`).
        *record = Some(Authorization {
            decision: AuthorizationDecision::Approved,
            by: DeniedBy::Approver.as_str().to_owned(),
            reason: asked,
            asked: None,
            with_program,
        });
        if !with_program {
            approve(inner, info, &asks, observer, waited).await?;
        }
    }
    for guard in &inner.guards {
        let name = guard.name();
        match guarded(name, || guard.check(info)).await {
            Ok(GuardDecision::Pass) => {}
            Ok(GuardDecision::Deny { reason }) => {
                return Err(CallError::denied(guard.denied_by(), reason));
            }
            Err(why) => return Err(CallError::denied(guard.denied_by(), format!("guard {why}"))),
        }
    }
    Ok(())
}

async fn approve(
    inner: &Inner,
    info: &CallInfo<'_>,
    reasons: &[String],
    observer: Option<&dyn ApprovalObserver>,
    waited: &mut Duration,
) -> Result<(), CallError> {
    let Some(approver) = &inner.approver else {
        let why = format!(
            "approval required ({}) but no approver is configured",
            reasons.join("; ")
        );
        return Err(CallError::denied(DeniedBy::Approver, why));
    };
    let request = ApprovalRequest {
        call: info,
        reasons,
    };
    let started = Instant::now();
    let waiting = WaitingGuard::start(observer);
    let answer = tokio::time::timeout(
        inner.approval_timeout,
        guarded("approver", || approver.approve(&request)),
    )
    .await;
    drop(waiting);
    *waited = started.elapsed();
    match answer {
        Ok(Ok(ApprovalDecision::Approve)) => Ok(()),
        Ok(Ok(ApprovalDecision::Refuse { reason })) => {
            Err(CallError::denied(DeniedBy::Approver, reason))
        }
        Ok(Err(why)) => Err(CallError::denied(DeniedBy::Approver, why)),
        Err(_) => {
            let ms = inner.approval_timeout.as_millis();
            Err(CallError::denied(
                DeniedBy::Approver,
                format!("no approval within {ms} ms"),
            ))
        }
    }
}

//! One call from issue to events. See the module docs of `pipeline` for the order.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::time::Instant;

use futures::future::Either;
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::approval::ApprovalObserver;
use super::call::{ArgsInput, CallOutcome, CallRequest, Timing};
use super::call_span::{InSubscriber, call_span};
use super::events::{Authorization, CallEvent, Event, ResultEvent, StartedEvent};
use super::hooks::CallInfo;
use super::scheduler::Ticket;
use super::wrappers::{Dispatch, Next};
use super::{Inner, gates, post};
use crate::call::CANCEL_GRACE;
use crate::call::ids::{next_call_id, now_rfc3339};
use crate::call::{CallError, ErrorKind, LimitKind};
use crate::call::{CallStatus, Caller, ContextEntry};
use crate::call::{Extensions, RunId, Typed};
use crate::tool::{Card, ProgressReporter, RegisteredTool, ResultView};

/// What every call has, valid or not.
struct Base {
    call_id: Arc<str>,
    path: String,
    caller: Caller,
    args: Arc<Value>,
    started: Instant,
    started_at: String,
    tool: Option<Arc<RegisteredTool>>,
    call_card: Option<Card>,
    extensions: Extensions,
}

/// A valid call with its scheduler place.
struct Ready {
    ticket: Option<Ticket>,
    parallel: bool,
    /// The call's own token, until the body takes it (`None` after: taking it must not
    /// allocate a replacement token on every call, which `mem::take` of a token would).
    cancel: Option<CancellationToken>,
    observer: Option<Arc<dyn ApprovalObserver>>,
}

struct Success {
    value: Arc<Value>,
    content: String,
    content_is_value_json: bool,
    typed: Option<Typed>,
}

#[derive(Default)]
struct Waits {
    queued: Duration,
    approval: Duration,
    authorization: Option<Authorization>,
}

pub(crate) fn call(
    inner: Arc<Inner>,
    req: CallRequest,
) -> impl Future<Output = CallOutcome> + Send + 'static {
    let call_id = next_call_id();
    let (span, home) = call_span(req.parent_span.as_ref(), &req.tool, &call_id, &req.caller);
    let cancellable = req.cancel.is_some();
    let (base, ready) = span.in_scope(|| issue(&inner, req, call_id));
    // Boxed at once: the state machine is large, and the layers above (the span, the
    // subscriber, the caller's own adapters) would each move it again.
    let call = Box::pin(async move {
        let mut contexts = Vec::new();
        let mut waits = Waits::default();
        let result = match (ready, &base.tool) {
            (Ok(mut ready), Some(tool)) => {
                let cancel = if cancellable { ready.cancel.clone() } else { None };
                let started = AtomicBool::new(false);
                // Boxed so the (large) state machine is placed once instead of being moved
                // through every layer that wraps the call future.
                let mut run = Box::pin(run(&inner, &base, tool, &mut ready, &mut contexts, &mut waits, &started));
                // Watching the token costs a lock per poll; only a caller-supplied token can fire.
                let result = if let Some(cancel) = cancel {
                    let early = tokio::select! {
                        biased;
                        _ = cancel.cancelled() => None,
                        r = &mut run => Some(r),
                    };
                    match early {
                        Some(result) => result,
                        None if !started.load(Ordering::Acquire) => Err(CallError::cancelled()),
                        // The body has started: it sees the token (a child of the one that
                        // fired) and gets the grace to finish.
                        None => match tokio::time::timeout(CANCEL_GRACE, &mut run).await {
                            // A body that failed once told to stop was cancelled part-way.
                            Ok(Err(e)) if matches!(e.kind, ErrorKind::ToolError { .. }) => {
                                Err(CallError::new(
                                    ErrorKind::CancelledAfterStart { abandoned_after_ms: None },
                                    format!("the call was cancelled after its tool had started: {}", e.message),
                                ))
                            }
                            Ok(result) => result,
                            Err(_) => Err(abandoned()),
                        },
                    }
                } else {
                    (&mut run).await
                };
                drop(run);
                let executed = started.load(Ordering::Acquire);
                // Denied and failed calls give their place back before the events are written;
                // successful ones hold it until the end (DESIGN.md section 3).
                if result.is_err() {
                    ready.ticket = None;
                }
                let outcome = complete(&inner, base, result, contexts, waits, executed);
                drop(ready);
                outcome
            }
            (Ok(_), None) => unreachable!("a ready call has a tool"),
            (Err(e), _) => complete(&inner, base, Err(e), contexts, waits, false),
        };
        tracing::debug!(status = ?result.status, code = result.error.as_ref().map(|e| e.code().as_str()), "tool call done");
        result
    })
    .instrument(span);
    match home {
        Some(dispatch) => Either::Left(InSubscriber::new(call, dispatch)),
        None => Either::Right(call),
    }
}

/// The synchronous prefix: lookup, snapshot, argument limit, validation, classification, place.
fn issue(
    inner: &Arc<Inner>,
    req: CallRequest,
    call_id: Arc<str>,
) -> (Base, Result<Ready, CallError>) {
    let started = Instant::now();
    let tool = inner.registry.get(&req.tool).cloned();
    let (args, snapshot_issues) = match req.args {
        ArgsInput::Value(v) => (Arc::new(v), None),
        ArgsInput::Unconvertible(issues) => (Arc::new(Value::Null), Some(issues)),
    };
    let mut base = Base {
        call_id,
        path: req.tool,
        caller: req.caller,
        args,
        started,
        started_at: now_rfc3339(),
        tool,
        call_card: None,
        extensions: req.extensions,
    };
    let checked = check(inner, &base, snapshot_issues);
    base.call_card = match (&checked, &base.tool) {
        (Ok(_), Some(t)) => t.tool.present_call(&base.args),
        _ => None,
    };
    let ready = checked.map(|parallel| {
        let scope = req.scope.as_ref().unwrap_or(&inner.root);
        Ready {
            ticket: Some(scope.enqueue(parallel)),
            parallel,
            cancel: Some(req.cancel.map(|t| t.child_token()).unwrap_or_default()),
            observer: req.approval_observer,
        }
    });
    // Nobody to tell: skip building the event (its clones are most of a nested call's cost).
    if !inner.sinks.live.is_empty() {
        let queued = matches!(&ready, Ok(r) if r.ticket.as_ref().is_some_and(Ticket::must_wait));
        let event = Event::Call(CallEvent {
            call_id: base.call_id.clone(),
            tool: std::mem::take(&mut base.path),
            caller: base.caller.clone(),
            args: base.args.clone(),
            card: base.call_card.clone(),
            at: base.started_at.clone(),
            queued,
            extensions: base.extensions.clone(),
        });
        inner.sinks.live(&event);
        let Event::Call(event) = event else {
            unreachable!()
        };
        base.path = event.tool;
    }
    (base, ready)
}

/// Returns whether the call is parallel, or why it cannot run at all.
fn check(
    inner: &Inner,
    base: &Base,
    snapshot_issues: Option<Vec<crate::schema::ArgIssue>>,
) -> Result<bool, CallError> {
    let Some(tool) = &base.tool else {
        let suggestions = inner.registry.suggestions(&base.path);
        let hint = if suggestions.is_empty() {
            String::new()
        } else {
            format!("; did you mean {}?", suggestions.join(", "))
        };
        let message = format!("no tool named `{}`{hint}", base.path);
        return Err(CallError::new(
            ErrorKind::UnknownTool { suggestions },
            message,
        ));
    };
    if let Some(issues) = snapshot_issues {
        return Err(invalid_args(&base.path, issues));
    }
    let size = crate::call::json_size(&base.args);
    if size > inner.limits.max_arg_bytes {
        let message = format!(
            "arguments are {size} bytes, over the limit of {} bytes",
            inner.limits.max_arg_bytes
        );
        return Err(CallError::new(
            ErrorKind::LimitExceeded {
                limit: LimitKind::ArgumentBytes,
                value: size,
            },
            message,
        ));
    }
    let issues = tool.tool.inner.parameters.issues(&base.args);
    if !issues.is_empty() {
        return Err(invalid_args(&base.path, issues));
    }
    // Parallel only on an exact `true`; a panicking classifier makes the call exclusive.
    Ok(match &tool.tool.inner.classifier {
        Some(classify) => {
            std::panic::catch_unwind(AssertUnwindSafe(|| classify(&base.args))).unwrap_or(false)
        }
        None => false,
    })
}

fn abandoned() -> CallError {
    let after_ms = CANCEL_GRACE.as_millis() as u64;
    CallError::new(
        ErrorKind::CancelledAfterStart {
            abandoned_after_ms: Some(after_ms),
        },
        format!(
            "the call was cancelled after its tool had started; the tool was still running {after_ms} ms later and was abandoned, so what it did is unknown"
        ),
    )
}

fn invalid_args(path: &str, issues: Vec<crate::schema::ArgIssue>) -> CallError {
    let list: Vec<String> = issues.iter().map(ToString::to_string).collect();
    let message = format!("invalid arguments for `{path}`: {}", list.join("; "));
    CallError::new(ErrorKind::InvalidArgs { issues }, message)
}

async fn run(
    inner: &Inner,
    base: &Base,
    tool: &RegisteredTool,
    ready: &mut Ready,
    contexts: &mut Vec<ContextEntry>,
    waits: &mut Waits,
    started: &AtomicBool,
) -> Result<Success, CallError> {
    if let Some(ticket) = ready.ticket.as_mut().filter(|t| t.must_wait()) {
        let queued_from = Instant::now();
        ticket.ready().await;
        waits.queued = queued_from.elapsed();
        if !inner.sinks.live.is_empty() {
            inner.sinks.live(&Event::Started(StartedEvent {
                call_id: base.call_id.clone(),
                tool: base.path.clone(),
                caller: base.caller.clone(),
                queued_ms: waits.queued.as_secs_f64() * 1000.0,
                extensions: base.extensions.clone(),
            }));
        }
    }
    let info = CallInfo {
        call_id: &base.call_id,
        path: &base.path,
        tool: &tool.tool,
        args: &base.args,
        caller: &base.caller,
        parallel: ready.parallel,
        extensions: &base.extensions,
    };
    gates::authorize(
        inner,
        &info,
        ready.observer.as_deref(),
        &mut waits.approval,
        &mut waits.authorization,
    )
    .await?;
    let dispatch = Dispatch::new(
        base.call_id.clone(),
        tool.shared_path.clone(),
        tool.tool.clone(),
        base.args.clone(),
        base.caller.clone(),
        ready.parallel,
        ready.cancel.take().unwrap_or_default(),
        base.extensions.clone(),
        Arc::clone(&inner.sinks) as Arc<dyn ProgressReporter>,
    );
    let typed = dispatch.typed_slot();
    // The point of no return for cancellation (see `CANCEL_GRACE`).
    started.store(true, Ordering::Release);
    let value = Next::new(inner.wrappers.clone()).run(dispatch).await?;
    let done = post::finish(inner, &info, value, typed.take(), contexts).await?;
    Ok(Success {
        value: done.value,
        content: done.content,
        content_is_value_json: done.content_is_value_json,
        typed: done.typed,
    })
}

/// Builds the outcome and writes the events: live first, then durable for direct calls.
fn complete(
    inner: &Inner,
    base: Base,
    result: Result<Success, CallError>,
    contexts: Vec<ContextEntry>,
    waits: Waits,
    executed: bool,
) -> CallOutcome {
    let content_is_value_json = result.as_ref().is_ok_and(|s| s.content_is_value_json);
    let (status, value, content, typed, error) = match result {
        Ok(s) => (CallStatus::Ok, Some(s.value), s.content, s.typed, None),
        Err(e) => (CallStatus::Error, None, e.message.clone(), None, Some(e)),
    };
    let code = error.as_ref().map(|e| e.code().as_str());
    let view = ResultView {
        status,
        code,
        value: value.as_deref(),
        content: &content,
        typed: typed.as_ref(),
    };
    let card = base
        .tool
        .as_ref()
        .and_then(|t| t.tool.present_result(&base.args, &view));
    let duration = base.started.elapsed();
    // A value can report a failure of its own (`run_code`'s outcome): the event follows it.
    let value_failure = base
        .tool
        .as_ref()
        .zip(value.as_deref())
        .and_then(|(t, v)| t.tool.value_failure(v, typed.as_ref()));
    let (event_status, event_code, event_message, event_details) = match (&error, value_failure) {
        (Some(e), _) => (
            CallStatus::Error,
            Some(e.code().as_str().to_owned()),
            Some(e.message.clone()),
            Some(e.details()),
        ),
        (None, Some(f)) => (
            CallStatus::Error,
            Some(f.code),
            Some(f.message),
            Some(f.details),
        ),
        (None, None) => (status, None, None, None),
    };
    // `complete` runs inside the call's span (see `call`): a failed call, or a run that did not
    // end ok, is an error span whose `error.type` is the code the events carry.
    if let Some(code) = &event_code {
        let span = tracing::Span::current();
        span.record("otel.status_code", "ERROR");
        span.record("error.type", code.as_str());
    }
    let run_id = match &base.caller {
        Caller::CodeMode { run_id, .. } => Some(Arc::clone(run_id)),
        Caller::Direct => base.extensions.get::<RunId>().map(|id| Arc::clone(&id.0)),
    };
    let mut event = Event::Result(ResultEvent {
        call_id: base.call_id,
        tool: base.path,
        caller: base.caller,
        run_id,
        status: event_status,
        code: event_code,
        message: event_message,
        details: event_details,
        value,
        content,
        contexts,
        card,
        started_at: base.started_at,
        duration_ms: duration.as_secs_f64() * 1000.0,
        args: base.args,
        executed,
        authorization: waits.authorization,
        queued_ms: waits.queued.as_secs_f64() * 1000.0,
        approval_ms: waits.approval.as_secs_f64() * 1000.0,
        extensions: base.extensions,
    });
    inner.sinks.live(&event);
    let durable = matches!(&event, Event::Result(e) if e.caller.is_durable());
    let mut durable_error = None;
    if durable && !inner.sinks.durable.is_empty() {
        event = match event {
            Event::Result(e) => Event::Durable(e),
            other => other,
        };
        durable_error = inner.sinks.durable(&event);
    }
    let (Event::Result(e) | Event::Durable(e)) = event else {
        unreachable!()
    };
    CallOutcome {
        call_id: e.call_id,
        tool: e.tool,
        caller: e.caller,
        status,
        value: e.value,
        content: e.content,
        contexts: e.contexts,
        call_card: base.call_card,
        result_card: e.card,
        timing: Timing {
            started_at: e.started_at,
            duration,
            queued: waits.queued,
            awaiting_approval: waits.approval,
        },
        error,
        executed,
        typed,
        durable_error,
        content_is_value_json,
    }
}

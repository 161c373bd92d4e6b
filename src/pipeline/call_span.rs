//! The `tool_call` span of a call: named and attributed after the OpenTelemetry GenAI semantic
//! conventions for tool execution, and kept in its parent's subscriber.
//!
//! A nested call is issued on the sandbox's thread (or, for a worker process, on the thread
//! that reads its frames), not where its run started. With a subscriber that is a thread's
//! default rather than the global one, the call's span would land in no subscriber at all, and
//! `tracing-subscriber`'s registry closes a span's parent through the *current* thread's
//! default: a child closed elsewhere would keep its parent open for ever. So a call with an
//! explicit parent is made, polled and dropped with the parent's subscriber as the default.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tracing::Dispatch;

use crate::call::Caller;

/// The span of one call under `parent` (`None`: the span current now), and the subscriber the
/// call's future must run in when that is the parent's rather than this thread's.
pub(super) fn call_span(
    parent: Option<&tracing::Span>,
    tool: &str,
    call_id: &str,
    caller: &Caller,
) -> (tracing::Span, Option<Dispatch>) {
    let Some(parent) = parent else {
        return (
            new_span(&tracing::Span::current(), tool, call_id, caller),
            None,
        );
    };
    match parent.with_subscriber(|(_, dispatch)| dispatch.clone()) {
        Some(dispatch) => {
            let span = tracing::dispatcher::with_default(&dispatch, || {
                new_span(parent, tool, call_id, caller)
            });
            (span, Some(dispatch))
        }
        None => (new_span(parent, tool, call_id, caller), None),
    }
}

/// `execute_tool {tool}` with the GenAI attributes. `otel.status_code` and `error.type` are
/// recorded when the call ends (see `stages::complete`).
fn new_span(parent: &tracing::Span, tool: &str, call_id: &str, caller: &Caller) -> tracing::Span {
    let (kind, run_id, seq) = match caller {
        Caller::Direct => ("direct", None, None),
        Caller::CodeMode { run_id, seq } => ("code_mode", Some(&**run_id), Some(*seq)),
    };
    tracing::info_span!(
        parent: parent,
        "tool_call",
        otel.name = format_args!("execute_tool {tool}"),
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = tool,
        gen_ai.tool.call.id = call_id,
        codemode.caller = kind,
        codemode.run_id = run_id,
        codemode.seq = seq,
        otel.status_code = tracing::field::Empty,
        error.type = tracing::field::Empty,
    )
}

/// A future polled, and dropped, with `dispatch` as the thread's default subscriber (unlike
/// `tracing`'s `WithDispatch`, which does not cover the drop, where the span closes).
pub(super) struct InSubscriber<F> {
    future: Option<Pin<Box<F>>>,
    dispatch: Dispatch,
}

impl<F> InSubscriber<F> {
    pub(super) fn new(future: F, dispatch: Dispatch) -> Self {
        InSubscriber {
            future: Some(Box::pin(future)),
            dispatch,
        }
    }
}

impl<F: Future> Future for InSubscriber<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = &mut *self;
        let _default = tracing::dispatcher::set_default(&this.dispatch);
        let future = this
            .future
            .as_mut()
            .expect("InSubscriber polled after completion");
        let poll = future.as_mut().poll(cx);
        if poll.is_ready() {
            // Closes the span while its subscriber is still the default.
            this.future = None;
        }
        poll
    }
}

impl<F> Drop for InSubscriber<F> {
    fn drop(&mut self) {
        if let Some(future) = self.future.take() {
            let _default = tracing::dispatcher::set_default(&self.dispatch);
            drop(future);
        }
    }
}

//! [`ToolHost`] over the pipeline: every call of a program becomes one pipeline call with caller
//! provenance `code_mode{run_id, seq}`, in the run's own scheduler scope.

use std::sync::{Arc, Mutex};

use futures::FutureExt;
use futures::future::BoxFuture;

use crate::call::{ArgIssue, CallError, CallWave, Caller};
use crate::pipeline::{ApprovalObserver, CallRequest, Pipeline, Scope};
use crate::sandbox::{DeadlinePause, ToolHost, ToolReply, ToolRequest};

pub(crate) struct PipelineHost {
    pub pipeline: Pipeline,
    /// The run's child scope: its exclusive calls never wait on the `run_code` call itself.
    pub scope: Arc<Scope>,
    pub paths: Vec<String>,
    /// The run's span: every nested call's span is its child, whichever thread or process the
    /// program runs on.
    pub run_span: RunSpan,
}

/// The run's span as the host holds it: let go of when the run ends ([`RunSpan::end`]), so the
/// span closes (and is exported) when the run does, not whenever the sandbox drops the host.
#[derive(Clone)]
pub(crate) struct RunSpan(Arc<Mutex<Option<tracing::Span>>>);

impl RunSpan {
    pub(super) fn new(span: tracing::Span) -> RunSpan {
        RunSpan(Arc::new(Mutex::new(Some(span))))
    }

    /// The span, while the run goes.
    fn get(&self) -> Option<tracing::Span> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The run ended: no call is issued after, and the host no longer keeps the span open.
    pub(super) fn end(&self) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).take();
    }
}

/// Stops the run's deadline clock while a nested call awaits its approver.
struct PauseDeadline(DeadlinePause);

impl ApprovalObserver for PauseDeadline {
    fn waiting_started(&self) {
        self.0.pause();
    }

    fn waiting_ended(&self) {
        self.0.resume();
    }
}

impl ToolHost for PipelineHost {
    fn paths(&self) -> Vec<String> {
        self.paths.clone()
    }

    fn call(&self, request: ToolRequest) -> BoxFuture<'static, Result<ToolReply, CallError>> {
        let mut call = match request.unconvertible {
            Some(problem) => {
                CallRequest::unconvertible(request.path, vec![ArgIssue::new("", problem)])
            }
            None => CallRequest::new(request.path, request.args),
        };
        // Filled in place: this runs once per tool call, and each builder step would move the
        // whole request.
        call.caller = Caller::code_mode(request.run_id, request.seq);
        call.scope = Some(Arc::clone(&self.scope));
        call.cancel = Some(request.cancel);
        call.approval_observer = Some(Arc::new(PauseDeadline(request.deadline)));
        call.extensions.extend(&request.extensions);
        if let Some(wave) = request.wave {
            call.extensions.insert(CallWave(wave));
        }
        call.parent_span = self.run_span.get();
        // `call()` takes the call's place in the scope now, in issue order. The call runs on the
        // sandbox worker's event loop, next to the program that awaits it: hopping to the host
        // runtime and back cost two cross-thread wake-ups per call (measured: ~40x the raw op).
        // `map`, not an `async` block awaiting it: the pipeline's future is large, and awaiting
        // would move it once more on the first poll.
        self.pipeline
            .call(call)
            .map(|outcome| {
                let json = outcome.content_is_value_json.then_some(outcome.content);
                match (outcome.value, outcome.error) {
                    (_, Some(error)) => Err(error),
                    (Some(value), None) => {
                        // The outcome is the last owner unless an observer kept the value.
                        let value =
                            Arc::try_unwrap(value).unwrap_or_else(|shared| (*shared).clone());
                        let mut reply = ToolReply::new(value);
                        reply.contexts = outcome.contexts;
                        reply.json = json;
                        Ok(reply)
                    }
                    (None, None) => unreachable!("an outcome has a value or an error"),
                }
            })
            .boxed()
    }
}

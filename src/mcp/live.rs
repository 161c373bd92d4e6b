//! What the server knows about each `tools/call` in progress: where its progress notifications go
//! and how its approvals are asked. The handler puts the request's [`LiveRequest`] on the call
//! as an extension; a `run_code` call hands its extensions on to every nested call, so the
//! approver and the progress observer find the request on the call itself.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::{Peer, RoleServer};
use tokio::sync::{mpsc, oneshot};

use crate::call::{Caller, Extensions};
use crate::pipeline::{Event, EventSink};

/// How an `ask` is put to the client for one request.
pub(crate) enum AskRoute {
    /// Legacy sessions (protocol before 2026-07-28): an `elicitation/create` request.
    Elicit(Peer<RoleServer>),
    /// Protocol 2026-07-28: the request answers with `InputRequiredResult` and the client retries
    /// with the user's answer (multi round-trip requests); the handler takes asks from this queue.
    InputRequired(mpsc::UnboundedSender<PendingAsk>),
    /// The client cannot be asked (no elicitation capability): asks are refused with this reason.
    Refuse(String),
}

/// An approval waiting for the client's answer.
pub(crate) struct PendingAsk {
    pub(crate) message: String,
    pub(crate) reply: oneshot::Sender<bool>,
}

/// One request in progress.
pub(crate) struct LiveRequest {
    peer: Peer<RoleServer>,
    /// The token of the request that currently awaits the call: an MRTR retry brings its own.
    progress_token: Mutex<Option<ProgressToken>>,
    pub(crate) asks: AskRoute,
    progress: AtomicU64,
    queue: ProgressQueue,
}

impl LiveRequest {
    pub(crate) fn new(
        peer: Peer<RoleServer>,
        progress_token: Option<ProgressToken>,
        asks: AskRoute,
        queue: ProgressQueue,
    ) -> Self {
        LiveRequest {
            peer,
            progress_token: Mutex::new(progress_token),
            asks,
            progress: AtomicU64::new(0),
            queue,
        }
    }

    /// The request a call belongs to, from the call's extensions.
    pub(crate) fn of(extensions: &Extensions) -> Option<&Arc<LiveRequest>> {
        extensions.get::<Arc<LiveRequest>>()
    }

    /// Progress now goes to the request that resumed the call (or nowhere, without a token).
    pub(crate) fn set_progress_token(&self, token: Option<ProgressToken>) {
        *self
            .progress_token
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = token;
    }

    fn progress_token(&self) -> Option<ProgressToken> {
        self.progress_token
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn report(self: &Arc<Self>, message: String) {
        if self.progress_token().is_some() {
            let _ = self
                .queue
                .0
                .send(ProgressItem::Report(Arc::clone(self), message));
        }
    }
}

/// What the progress task is asked to do, in order.
enum ProgressItem {
    Report(Arc<LiveRequest>, String),
    /// Answered once every report queued before it was sent: a result must not overtake the
    /// progress of its own nested calls.
    Flush(oneshot::Sender<()>),
}

/// The queue progress notifications go through, in order. Events are emitted synchronously on
/// sandbox worker threads, which must not wait on the client's pipe. Cheap to clone.
#[derive(Clone)]
pub(crate) struct ProgressQueue(mpsc::UnboundedSender<ProgressItem>);

impl ProgressQueue {
    /// The queue, and the task that sends its notifications. Call inside a Tokio runtime.
    pub(crate) fn start() -> ProgressQueue {
        let (tx, mut rx) = mpsc::unbounded_channel::<ProgressItem>();
        tokio::spawn(async move {
            while let Some(item) = rx.recv().await {
                let (request, message) = match item {
                    ProgressItem::Report(request, message) => (request, message),
                    ProgressItem::Flush(done) => {
                        let _ = done.send(());
                        continue;
                    }
                };
                let Some(token) = request.progress_token() else {
                    continue;
                };
                let progress = request.progress.fetch_add(1, Ordering::Relaxed) + 1;
                let param =
                    ProgressNotificationParam::new(token, progress as f64).with_message(message);
                // A client that went away is not an error of the run.
                let _ = request.peer.notify_progress(param).await;
            }
        });
        ProgressQueue(tx)
    }

    /// Waits until the progress queued so far has been sent.
    pub(crate) async fn flush(&self) {
        let (done, sent) = oneshot::channel();
        if self.0.send(ProgressItem::Flush(done)).is_ok() {
            let _ = sent.await;
        }
    }
}

/// Turns the nested calls of a run into progress notifications of its request.
pub(crate) struct ProgressObserver;

impl EventSink for ProgressObserver {
    fn emit(&self, event: &Event) {
        match event {
            Event::Call(call) if matches!(call.caller, Caller::CodeMode { .. }) => {
                if let Some(request) = LiveRequest::of(&call.extensions) {
                    request.report(format!("calling {}", call.tool));
                }
            }
            Event::Result(result) if matches!(result.caller, Caller::CodeMode { .. }) => {
                if let Some(request) = LiveRequest::of(&result.extensions) {
                    let outcome = match &result.code {
                        Some(code) => format!("failed with {code}"),
                        None => "done".to_string(),
                    };
                    request.report(format!(
                        "{} {outcome} in {:.1} ms",
                        result.tool, result.duration_ms
                    ));
                }
            }
            _ => {}
        }
    }
}

//! What the server knows about each `tools/call` in progress: where its progress notifications go
//! and how its approvals are asked. Nested calls of a run are matched to their request by run id
//! (the handler chooses it with [`crate::codemode::with_run_id`]); direct calls (`--expose-direct`)
//! run inside the request's own task and find it through a task-local.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::{Peer, RoleServer};
use tokio::sync::{mpsc, oneshot};

use crate::pipeline::{Caller, Event, EventSink};

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
    pub message: String,
    pub reply: oneshot::Sender<bool>,
}

/// One request in progress.
pub(crate) struct LiveRequest {
    pub peer: Peer<RoleServer>,
    /// The token of the request that currently awaits the call: an MRTR retry brings its own.
    progress_token: Mutex<Option<ProgressToken>>,
    pub asks: AskRoute,
    progress: AtomicU64,
}

impl LiveRequest {
    pub fn new(
        peer: Peer<RoleServer>,
        progress_token: Option<ProgressToken>,
        asks: AskRoute,
    ) -> Self {
        LiveRequest {
            peer,
            progress_token: Mutex::new(progress_token),
            asks,
            progress: AtomicU64::new(0),
        }
    }

    /// Progress now goes to the request that resumed the call (or nowhere, without a token).
    pub fn set_progress_token(&self, token: Option<ProgressToken>) {
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
}

/// What the progress task is asked to do, in order.
enum ProgressItem {
    Report(Arc<LiveRequest>, String),
    /// Answered once every report queued before it was sent: a result must not overtake the
    /// progress of its own nested calls.
    Flush(oneshot::Sender<()>),
}

tokio::task_local! {
    /// The request a direct call (`--expose-direct`) belongs to.
    pub(crate) static CURRENT_REQUEST: Arc<LiveRequest>;
}

/// Requests in progress by run id, and the queue their progress notifications go through.
pub(crate) struct LiveRequests {
    by_run: Mutex<HashMap<Arc<str>, Arc<LiveRequest>>>,
    progress: mpsc::UnboundedSender<ProgressItem>,
}

impl LiveRequests {
    /// The registry, and the task that sends progress notifications in order (events are emitted
    /// synchronously on sandbox worker threads, which must not wait on the client's pipe).
    pub fn start() -> Arc<LiveRequests> {
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
        Arc::new(LiveRequests {
            by_run: Mutex::new(HashMap::new()),
            progress: tx,
        })
    }

    /// Track `request` under `run_id` until the guard is dropped.
    pub fn track(self: &Arc<Self>, run_id: Arc<str>, request: Arc<LiveRequest>) -> Tracked {
        self.lock().insert(Arc::clone(&run_id), request);
        Tracked {
            requests: Arc::clone(self),
            run_id,
        }
    }

    pub fn for_caller(&self, caller: &Caller) -> Option<Arc<LiveRequest>> {
        match caller {
            Caller::CodeMode { run_id, .. } => self.lock().get(run_id).cloned(),
            Caller::Direct => CURRENT_REQUEST.try_with(Arc::clone).ok(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Arc<str>, Arc<LiveRequest>>> {
        self.by_run.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn report(&self, caller: &Caller, message: String) {
        if let Some(request) = self.for_caller(caller)
            && request.progress_token().is_some()
        {
            let _ = self.progress.send(ProgressItem::Report(request, message));
        }
    }

    /// Wait until the progress queued so far has been sent.
    pub async fn flush_progress(&self) {
        let (done, sent) = oneshot::channel();
        if self.progress.send(ProgressItem::Flush(done)).is_ok() {
            let _ = sent.await;
        }
    }
}

/// Removes a tracked request when its `tools/call` is done.
pub(crate) struct Tracked {
    requests: Arc<LiveRequests>,
    run_id: Arc<str>,
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.requests.lock().remove(&self.run_id);
    }
}

/// Turns the nested calls of a run into progress notifications of its request.
pub(crate) struct ProgressObserver(pub Arc<LiveRequests>);

impl EventSink for ProgressObserver {
    fn emit(&self, event: &Event) {
        match event {
            Event::Call(call) if matches!(call.caller, Caller::CodeMode { .. }) => {
                self.0
                    .report(&call.caller, format!("calling {}", call.tool));
            }
            Event::Result(result) if matches!(result.caller, Caller::CodeMode { .. }) => {
                let outcome = match &result.code {
                    Some(code) => format!("failed with {code}"),
                    None => "done".to_string(),
                };
                self.0.report(
                    &result.caller,
                    format!("{} {outcome} in {:.1} ms", result.tool, result.duration_ms),
                );
            }
            _ => {}
        }
    }
}

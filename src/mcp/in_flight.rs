//! Calls in progress, and the multi round-trip requests of MCP 2026-07-28: a call whose
//! approver must ask the user is suspended (the request answers `InputRequiredResult`), waits
//! for the client's retry with the answer, and goes on under the retry's request.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    ElicitRequest, ElicitRequestParams, InputRequest, InputRequests, InputRequiredResult,
    InputResponses,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use tokio::sync::{mpsc, oneshot};
use tokio::task::{JoinError, JoinHandle};
use tokio_util::sync::CancellationToken;

use super::catalog::Catalog;
use super::elicitation::{approval_form, approves};
use super::live::{LiveRequest, PendingAsk};
use crate::call::RunId;
use crate::harness::CodeMode;
use crate::pipeline::{CallOutcome, DEFAULT_APPROVAL_TIMEOUT};

/// How long a call suspended on an approval waits for the client's retry before it is stopped:
/// the approver's own timeout, after which the answer could no longer count anyway.
const SUSPENDED_TTL: Duration = DEFAULT_APPROVAL_TIMEOUT;
/// The key of the approval in `inputRequests` / `inputResponses`.
const APPROVAL_KEY: &str = "approval";

/// A call in progress, possibly suspended between two requests of one MRTR exchange.
pub(super) struct InFlight {
    /// The tool called (an MRTR retry must name the same one).
    pub(super) name: String,
    pub(super) task: JoinHandle<CallOutcome>,
    /// The catalog the call started with (its tools decide the shape of the result).
    pub(super) catalog: Arc<Catalog>,
    pub(super) request: Arc<LiveRequest>,
    pub(super) asks: mpsc::UnboundedReceiver<PendingAsk>,
    pub(super) stop: Stop,
    /// Whether dropping this stops the call: yes while a request awaits it (the SDK drops the
    /// handler of a cancelled request), no while it is suspended waiting for the client's retry.
    pub(super) armed: bool,
    /// The approver's reply channel while the client is being asked.
    pub(super) waiting: Option<oneshot::Sender<bool>>,
}

/// How a call in progress is stopped.
#[derive(Clone)]
pub(super) enum Stop {
    /// A run: stopped by id, so it still returns its outcome (status `cancelled`), which is
    /// what the durable log records. Before the run has started (queued behind the scheduler),
    /// the call itself is cancelled instead.
    Run {
        code_mode: CodeMode,
        run_id: RunId,
        call: CancellationToken,
    },
    /// A direct call: cancelled through the pipeline (`CANCELLED`).
    Call(CancellationToken),
}

impl Stop {
    pub(super) fn stop(&self) {
        match self {
            Stop::Run {
                code_mode,
                run_id,
                call,
            } => {
                if !code_mode.stop_run(run_id.as_str()) {
                    call.cancel();
                }
            }
            Stop::Call(token) => token.cancel(),
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if self.armed {
            self.stop.stop();
        }
    }
}

/// Where a driven call stands.
pub(super) enum Step {
    /// The call ended (or its task failed): answer with its result.
    Ended(Box<Result<CallOutcome, JoinError>>, Arc<Catalog>),
    /// An approval must be asked by MRTR: the call is suspended, answer with this.
    AskClient(InputRequiredResult),
}

impl InFlight {
    /// Awaits the call until it ends, the client cancels, or an approval must be asked by
    /// MRTR (then the call is put in `suspended`).
    pub(super) async fn drive(
        mut self,
        request_cancelled: &CancellationToken,
        suspended: &Arc<Suspended>,
    ) -> Result<Step, McpError> {
        loop {
            tokio::select! {
                biased;
                outcome = &mut self.task => return Ok(Step::Ended(Box::new(outcome), Arc::clone(&self.catalog))),
                () = request_cancelled.cancelled() => {
                    self.stop.stop();
                    let outcome = (&mut self.task).await;
                    return Ok(Step::Ended(Box::new(outcome), Arc::clone(&self.catalog)));
                }
                Some(ask) = self.asks.recv() => {
                    // An approver that timed out or was cancelled no longer waits for this.
                    if ask.reply.is_closed() {
                        continue;
                    }
                    let params: ElicitRequestParams = serde_json::from_value(approval_form(&ask.message))
                        .map_err(|e| McpError::internal_error(format!("bad elicitation form: {e}"), None))?;
                    let mut requests = InputRequests::new();
                    requests.insert(APPROVAL_KEY.to_string(), InputRequest::Elicitation(ElicitRequest::new(params)));
                    let state = format!("codemode-{}", uuid::Uuid::new_v4());
                    self.waiting = Some(ask.reply);
                    // The call waits for the client's retry; only the TTL (or the retry's own
                    // cancellation) stops it now.
                    self.armed = false;
                    suspended.insert(state.clone(), self);
                    return Ok(Step::AskClient(InputRequiredResult::new(Some(requests), Some(state))));
                }
            }
        }
    }
}

/// Calls suspended on an approval, by their `requestState`.
#[derive(Default)]
pub(super) struct Suspended(Mutex<HashMap<String, InFlight>>);

impl Suspended {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, InFlight>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Keeps `call` until the client's retry, or stops it after [`SUSPENDED_TTL`].
    fn insert(self: &Arc<Self>, state: String, call: InFlight) {
        self.lock().insert(state.clone(), call);
        let suspended = Arc::downgrade(self);
        tokio::spawn(async move {
            tokio::time::sleep(SUSPENDED_TTL).await;
            if let Some(suspended) = suspended.upgrade() {
                let expired = suspended.lock().remove(&state);
                if let Some(call) = expired {
                    call.stop.stop();
                }
            }
        });
    }

    /// The client's retry of an `InputRequiredResult`: hands the answer to the waiting
    /// approver and gives the call back, to be driven under the retry's request.
    pub(super) fn resume(
        &self,
        name: &str,
        state: &str,
        responses: Option<InputResponses>,
        context: &RequestContext<RoleServer>,
    ) -> Result<InFlight, McpError> {
        let mut call = {
            let mut suspended = self.lock();
            match suspended.get(state) {
                None => {
                    return Err(McpError::invalid_params(
                        "unknown or expired requestState: the run it belonged to has ended; call the tool again",
                        None,
                    ));
                }
                // A retry must repeat the request it continues; the call stays suspended for it.
                Some(call) if call.name != name => {
                    return Err(McpError::invalid_params(
                        format!(
                            "this requestState continues a call of `{}`, not of `{name}`; retry that call",
                            call.name
                        ),
                        None,
                    ));
                }
                Some(_) => suspended.remove(state).expect("present under the lock"),
            }
        };
        call.armed = true;
        call.request
            .set_progress_token(context.meta.get_progress_token());
        let approved = responses
            .as_ref()
            .and_then(|r| r.get(APPROVAL_KEY))
            .is_some_and(approves);
        let delivered = call
            .waiting
            .take()
            .is_some_and(|reply| reply.send(approved).is_ok());
        if !delivered {
            // The approver gave up (its timeout); the call went on without this answer.
            return Err(McpError::invalid_params(
                "the approval request expired before this answer arrived; the call was refused",
                None,
            ));
        }
        Ok(call)
    }
}

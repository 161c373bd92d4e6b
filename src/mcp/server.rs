//! The MCP server (`codemode mcp`): `tools/list` answers `run_code` (and, with `--expose-direct`,
//! the visible tools); `tools/call` runs through the pipeline.
//!
//! A run_code result has `isError = (status != "ok")`, the rendered outcome as its text content and
//! the RunOutcome as `structuredContent` (DESIGN.md §5). While a run goes, its nested calls become
//! progress notifications when the client sent a progress token. `notifications/cancelled` ends the
//! run with status `cancelled`. Approvals use elicitation: a server-to-client request on sessions
//! before protocol 2026-07-28, an `InputRequiredResult` round trip on 2026-07-28 (the run waits,
//! suspended, for the client's retry).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ElicitRequest,
    ElicitRequestParams, Implementation, InputRequest, InputRequests, InputRequiredResult,
    InputResponses, ListToolsResult, PaginatedRequestParams, ProtocolVersion, ServerCapabilities,
    ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::approve::{approval_form, approves};
use super::catalog::{self, Catalog, CatalogParts};
use super::live::{AskRoute, CURRENT_REQUEST, LiveRequest, LiveRequests, PendingAsk};
use crate::codemode::{CodeMode, RUN_CODE, with_run_id};
use crate::pipeline::{CallOutcome, CallRequest, DEFAULT_APPROVAL_TIMEOUT};
use crate::sandbox::new_run_id;

/// How long a call suspended on an approval waits for the client's retry before it is stopped:
/// the approver's own timeout, after which the answer could no longer count anyway.
const SUSPENDED_TTL: Duration = DEFAULT_APPROVAL_TIMEOUT;
/// The key of the approval in `inputRequests` / `inputResponses`.
const APPROVAL_KEY: &str = "approval";

const INSTRUCTIONS: &str = "Call `run_code` with a TypeScript program (the body of an async function) \
that uses the typed `tools` SDK shown in its description. Only what the program prints and returns \
comes back, so filter and join data inside the program.";

/// A call in progress, possibly suspended between two requests of one MRTR exchange.
struct InFlight {
    /// The tool called (an MRTR retry must name the same one).
    name: String,
    task: JoinHandle<CallOutcome>,
    /// The catalog the call started with (its tools decide the shape of the result).
    catalog: Arc<Catalog>,
    request: Arc<LiveRequest>,
    asks: mpsc::UnboundedReceiver<PendingAsk>,
    stop: Stop,
    /// Whether dropping this stops the call: yes while a request awaits it (the SDK drops the
    /// handler of a cancelled request), no while it is suspended waiting for the client's retry.
    armed: bool,
    /// The approver's reply channel while the client is being asked.
    waiting: Option<oneshot::Sender<bool>>,
}

/// How a call in progress is stopped.
#[derive(Clone)]
enum Stop {
    /// A run: stopped by id, so it still returns its outcome (status `cancelled`), which is
    /// what the durable log records. Before the run has started (queued behind the scheduler),
    /// the call itself is cancelled instead.
    Run {
        code_mode: CodeMode,
        run_id: Arc<str>,
        call: CancellationToken,
    },
    /// A direct call: cancelled through the pipeline (`CANCELLED`).
    Call(CancellationToken),
}

impl Stop {
    fn stop(&self) {
        match self {
            Stop::Run {
                code_mode,
                run_id,
                call,
            } => {
                if !code_mode.stop_run(run_id) {
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

/// The `ServerHandler`. Cheap to clone (the SDK clones it per session).
#[derive(Clone)]
pub struct CodemodeServer {
    shared: Arc<Shared>,
}

struct Shared {
    parts: tokio::sync::Mutex<CatalogParts>,
    catalog: RwLock<Arc<Catalog>>,
    live: Arc<LiveRequests>,
    suspended: Mutex<HashMap<String, InFlight>>,
    peer: Mutex<Option<rmcp::Peer<RoleServer>>>,
    /// Upstreams that could not start: shown in the server's instructions.
    unavailable: Vec<String>,
}

impl CodemodeServer {
    /// Build the first catalog. Call inside a Tokio runtime.
    ///
    /// # Errors
    /// A clash between sources (names or namespaces), with both parties named.
    pub fn new(parts: CatalogParts, unavailable: Vec<String>) -> Result<CodemodeServer, String> {
        let live = LiveRequests::start();
        let catalog = catalog::build(&parts, &live).map_err(|e| e.to_string())?;
        Ok(CodemodeServer {
            shared: Arc::new(Shared {
                parts: tokio::sync::Mutex::new(parts),
                catalog: RwLock::new(Arc::new(catalog)),
                live,
                suspended: Mutex::new(HashMap::new()),
                peer: Mutex::new(None),
                unavailable,
            }),
        })
    }

    /// The names `tools/list` answers (for tests and the CLI's startup line).
    pub fn tool_names(&self) -> Vec<String> {
        self.catalog()
            .tools
            .iter()
            .map(|t| t.name.to_string())
            .collect()
    }

    fn catalog(&self) -> Arc<Catalog> {
        Arc::clone(
            &self
                .shared
                .catalog
                .read()
                .unwrap_or_else(|e| e.into_inner()),
        )
    }

    /// An upstream said its tools changed: re-list them, rebuild the catalog for the next runs,
    /// and tell the client (the `run_code` description embeds the SDK).
    pub async fn refresh(&self, namespace: &str) {
        let mut parts = self.shared.parts.lock().await;
        let rebuilt = match catalog::refresh_upstream(&mut parts, namespace).await {
            Ok(()) => catalog::build(&parts, &self.shared.live),
            Err(e) => Err(e),
        };
        match rebuilt {
            Ok(catalog) => {
                *self
                    .shared
                    .catalog
                    .write()
                    .unwrap_or_else(|e| e.into_inner()) = Arc::new(catalog);
                let peer = self
                    .shared
                    .peer
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .clone();
                if let Some(peer) = peer {
                    let _ = peer.notify_tool_list_changed().await;
                }
            }
            Err(e) => eprintln!("codemode mcp: keeping the previous tool list: {e}"),
        }
    }

    async fn start(
        &self,
        request: CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let catalog = self.catalog();
        let name = request.name.to_string();
        if !catalog.tools.iter().any(|t| t.name == name) {
            return Err(McpError::invalid_params(
                format!(
                    "unknown tool `{name}`; this server offers: {}",
                    self.tool_names().join(", ")
                ),
                None,
            ));
        }
        let args = Value::Object(request.arguments.unwrap_or_default());
        let (ask_tx, ask_rx) = mpsc::unbounded_channel();
        let live = Arc::new(LiveRequest::new(
            context.peer.clone(),
            context.meta.get_progress_token(),
            ask_route(context, ask_tx),
        ));
        let run_id: Arc<str> = new_run_id().into();
        let tracked = self
            .shared
            .live
            .track(Arc::clone(&run_id), Arc::clone(&live));
        let cancel = CancellationToken::new();
        let call = CallRequest::new(&name, args).cancel_token(cancel.clone());
        let (call, pipeline, stop) = if name == RUN_CODE {
            let stop = Stop::Run {
                code_mode: catalog.code_mode.clone(),
                run_id: Arc::clone(&run_id),
                call: cancel,
            };
            // Each request's run is exclusive in its own scope: concurrent requests run side
            // by side (their nested calls have scopes of their own anyway).
            let call = call.scope(catalog.outer.root_scope().child());
            (call, catalog.outer.clone(), stop)
        } else {
            (call, catalog.inner.clone(), Stop::Call(cancel))
        };
        let run =
            CURRENT_REQUEST.scope(Arc::clone(&live), with_run_id(run_id, pipeline.call(call)));
        // Spawned, so a run suspended on an approval outlives the request that started it.
        let task = tokio::spawn(async move {
            let outcome = run.await;
            drop(tracked);
            outcome
        });
        let in_flight = InFlight {
            name,
            task,
            catalog,
            request: live,
            asks: ask_rx,
            stop,
            armed: true,
            waiting: None,
        };
        self.drive(in_flight, &context.ct).await
    }

    /// Await the call until it ends, the client cancels, or an approval must be asked by MRTR.
    async fn drive(
        &self,
        mut call: InFlight,
        request_cancelled: &CancellationToken,
    ) -> Result<CallToolResponse, McpError> {
        loop {
            tokio::select! {
                biased;
                outcome = &mut call.task => return Ok(self.finish(outcome, &call.catalog).await),
                () = request_cancelled.cancelled() => {
                    call.stop.stop();
                    let outcome = (&mut call.task).await;
                    return Ok(self.finish(outcome, &call.catalog).await);
                }
                Some(ask) = call.asks.recv() => {
                    // An approver that timed out or was cancelled no longer waits for this.
                    if ask.reply.is_closed() {
                        continue;
                    }
                    let params: ElicitRequestParams = serde_json::from_value(approval_form(&ask.message))
                        .map_err(|e| McpError::internal_error(format!("bad elicitation form: {e}"), None))?;
                    let mut requests = InputRequests::new();
                    requests.insert(APPROVAL_KEY.to_string(), InputRequest::Elicitation(ElicitRequest::new(params)));
                    let state = format!("codemode-{}", uuid::Uuid::new_v4());
                    call.waiting = Some(ask.reply);
                    // The call waits for the client's retry; only the TTL (or the retry's own
                    // cancellation) stops it now.
                    call.armed = false;
                    self.suspend(state.clone(), call);
                    return Ok(InputRequiredResult::new(Some(requests), Some(state)).into());
                }
            }
        }
    }

    /// The result of a finished call, after the progress of its nested calls went out.
    async fn finish(
        &self,
        outcome: Result<CallOutcome, tokio::task::JoinError>,
        catalog: &Catalog,
    ) -> CallToolResponse {
        self.shared.live.flush_progress().await;
        to_result(outcome, catalog).into()
    }

    fn suspend(&self, state: String, call: InFlight) {
        self.lock_suspended().insert(state.clone(), call);
        let shared = Arc::downgrade(&self.shared);
        tokio::spawn(async move {
            tokio::time::sleep(SUSPENDED_TTL).await;
            if let Some(shared) = shared.upgrade() {
                let expired = shared
                    .suspended
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(&state);
                if let Some(call) = expired {
                    call.stop.stop();
                }
            }
        });
    }

    fn lock_suspended(&self) -> std::sync::MutexGuard<'_, HashMap<String, InFlight>> {
        self.shared
            .suspended
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// The client's retry of an `InputRequiredResult`: hand the answer to the waiting approver.
    async fn resume(
        &self,
        name: &str,
        state: &str,
        responses: Option<InputResponses>,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let mut call = {
            let mut suspended = self.lock_suspended();
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
        self.drive(call, &context.ct).await
    }

    /// Stop the upstream servers (their process groups are killed).
    pub async fn shutdown(&self) {
        let mut parts = self.shared.parts.lock().await;
        for source in parts.upstreams.drain(..) {
            source.upstream.kill();
        }
    }
}

/// How this request's approvals are asked.
fn ask_route(
    context: &RequestContext<RoleServer>,
    queue: mpsc::UnboundedSender<PendingAsk>,
) -> AskRoute {
    let can_elicit = context
        .client_capabilities()
        .is_some_and(|c| c.elicitation.is_some());
    if !can_elicit {
        return AskRoute::Refuse(
            "the MCP client does not support elicitation, so asks are refused (allow the tool in the policy to run it)"
                .into(),
        );
    }
    let modern = context
        .protocol_version()
        .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28);
    if modern {
        AskRoute::InputRequired(queue)
    } else {
        AskRoute::Elicit(context.peer.clone())
    }
}

/// The MCP result of a finished call.
fn to_result(
    joined: Result<CallOutcome, tokio::task::JoinError>,
    catalog: &Catalog,
) -> CallToolResult {
    let outcome = match joined {
        Ok(outcome) => outcome,
        Err(e) => {
            return CallToolResult::error(vec![ContentBlock::text(format!(
                "[INTERNAL] the call did not complete: {e}"
            ))]);
        }
    };
    match outcome.result() {
        Ok(value) if outcome.tool == RUN_CODE => {
            let ok = value.get("status").and_then(Value::as_str) == Some("ok");
            let mut result = if ok {
                CallToolResult::success(vec![ContentBlock::text(outcome.content.clone())])
            } else {
                CallToolResult::error(vec![ContentBlock::text(outcome.content.clone())])
            };
            result.structured_content = Some(value.clone());
            result
        }
        Ok(value) => {
            let mut result =
                CallToolResult::success(vec![ContentBlock::text(outcome.content.clone())]);
            let declares_output = catalog
                .tools
                .iter()
                .any(|t| t.name == outcome.tool && t.output_schema.is_some());
            if declares_output {
                result.structured_content = Some(value.clone());
            }
            result
        }
        Err(error) => CallToolResult::error(vec![ContentBlock::text(format!(
            "[{}] {}",
            error.code().as_str(),
            error.message
        ))]),
    }
}

impl ServerHandler for CodemodeServer {
    fn get_info(&self) -> ServerConfig {
        let mut instructions = INSTRUCTIONS.to_string();
        if !self.shared.unavailable.is_empty() {
            instructions.push_str("\nUnavailable tool sources: ");
            instructions.push_str(&self.shared.unavailable.join("; "));
        }
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
        .with_server_info(Implementation::new("codemode", env!("CARGO_PKG_VERSION")))
        .with_instructions(instructions)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        *self.shared.peer.lock().unwrap_or_else(|e| e.into_inner()) = Some(context.peer.clone());
        Ok(ListToolsResult::with_all_items(
            self.catalog().tools.clone(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        *self.shared.peer.lock().unwrap_or_else(|e| e.into_inner()) = Some(context.peer.clone());
        match request.request_state.clone() {
            Some(state) => {
                self.resume(&request.name, &state, request.input_responses, &context)
                    .await
            }
            None => self.start(request, &context).await,
        }
    }
}

//! The MCP server (`codemode mcp`): `tools/list` answers `run_code` (and, with `--expose-direct`,
//! the visible tools); `tools/call` runs through the pipeline.
//!
//! A run_code result has `isError = (status != "ok")`, the rendered outcome as its text content and
//! the RunOutcome as `structuredContent` (DESIGN.md §5). While a run goes, its nested calls become
//! progress notifications when the client sent a progress token. `notifications/cancelled` ends the
//! run with status `cancelled`. Approvals use elicitation: a server-to-client request on sessions
//! before protocol 2026-07-28, an `InputRequiredResult` round trip on 2026-07-28 (the run waits,
//! suspended, for the client's retry).

use std::sync::{Arc, Mutex, RwLock};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde::Deserialize;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::catalog::{self, Catalog, CatalogError, CatalogParts};
use super::elicitation::ElicitationApprover;
use super::in_flight::{InFlight, Step, Stop, Suspended};
use super::live::{AskRoute, LiveRequest, PendingAsk, ProgressObserver, ProgressQueue};
use crate::call::RunId;
use crate::harness::RUN_CODE;
use crate::pipeline::{CallOutcome, CallRequest};
use crate::sandbox::{RunOutcome, capped_outcome};

const INSTRUCTIONS: &str = "Call `run_code` with a TypeScript program (the body of an async function) \
that uses the typed `tools` SDK shown in its description. Only what the program prints and returns \
comes back, so filter and join data inside the program.";

/// The `ServerHandler`. Cheap to clone (the SDK clones it per session).
#[derive(Clone)]
pub struct CodemodeServer {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for CodemodeServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodemodeServer")
            .field("tools", &self.tool_names())
            .finish_non_exhaustive()
    }
}

struct Shared {
    parts: tokio::sync::Mutex<CatalogParts>,
    catalog: RwLock<Arc<Catalog>>,
    progress: ProgressQueue,
    /// Calls suspended on an approval, by their `requestState`.
    suspended: Arc<Suspended>,
    peer: Mutex<Option<rmcp::Peer<RoleServer>>>,
    /// Upstreams that could not start: shown in the server's instructions.
    unavailable: Vec<String>,
}

impl CodemodeServer {
    /// Build the first catalog. Call inside a Tokio runtime.
    ///
    /// # Errors
    /// A clash between sources (names or namespaces), with both parties named.
    pub fn new(
        mut parts: CatalogParts,
        unavailable: Vec<String>,
    ) -> Result<CodemodeServer, CatalogError> {
        // Asks go to the user of the request a call belongs to; nested calls report progress
        // to it. Both find the request on the call's extensions.
        parts.harness = parts.harness.inner(|pipeline| {
            pipeline
                .shared_approver(Arc::new(ElicitationApprover))
                .observer(ProgressObserver)
        });
        let catalog = catalog::build(&parts)?;
        Ok(CodemodeServer {
            shared: Arc::new(Shared {
                parts: tokio::sync::Mutex::new(parts),
                catalog: RwLock::new(Arc::new(catalog)),
                progress: ProgressQueue::start(),
                suspended: Arc::default(),
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
            Ok(()) => catalog::build(&parts),
            Err(e) => Err(e.into()),
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
            self.shared.progress.clone(),
        ));
        let run_id = RunId::fresh();
        let cancel = CancellationToken::new();
        // The request travels with the call (and, for a run, with every nested call).
        let call = CallRequest::new(&name, args)
            .cancel_token(cancel.clone())
            .extension(Arc::clone(&live))
            .extension(run_id.clone());
        let harness = &catalog.harness;
        let (call, pipeline, stop) = if name == RUN_CODE {
            let stop = Stop::Run {
                code_mode: harness.code_mode().clone(),
                run_id,
                call: cancel,
            };
            // Each request's run is exclusive in its own scope: concurrent requests run side
            // by side (their nested calls have scopes of their own anyway).
            let call = call.scope(harness.outer().root_scope().sibling());
            (call, harness.outer().clone(), stop)
        } else {
            (call, harness.inner().clone(), Stop::Call(cancel))
        };
        // Spawned, so a run suspended on an approval outlives the request that started it.
        let task = tokio::spawn(pipeline.call(call));
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

    /// Awaits the call until it ends, the client cancels, or an approval must be asked by MRTR.
    async fn drive(
        &self,
        call: InFlight,
        request_cancelled: &CancellationToken,
    ) -> Result<CallToolResponse, McpError> {
        match call
            .drive(request_cancelled, &self.shared.suspended)
            .await?
        {
            Step::Ended(outcome, catalog) => Ok(self.finish(*outcome, &catalog).await),
            Step::AskClient(ask) => Ok(ask.into()),
        }
    }

    /// The result of a finished call, after the progress of its nested calls went out.
    async fn finish(
        &self,
        outcome: Result<CallOutcome, tokio::task::JoinError>,
        catalog: &Catalog,
    ) -> CallToolResponse {
        self.shared.progress.flush().await;
        to_result(outcome, catalog).into()
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
            let parsed;
            let run = match outcome.typed::<RunOutcome>() {
                Some(run) => Some(run),
                // An outer post hook replaced the outcome: read what it left.
                None => {
                    parsed = RunOutcome::deserialize(value).ok();
                    parsed.as_ref()
                }
            };
            let ran_ok = match run {
                Some(run) => run.is_ok(),
                None => value.get("status").and_then(Value::as_str) == Some("ok"),
            };
            // Many clients give the model `structuredContent`: it keeps the text's budget.
            let output_bytes = catalog.harness.code_mode().limits().output_bytes;
            let mut structured = match run {
                Some(run) => capped_outcome(run, output_bytes),
                None => value.clone(),
            };
            let mut text = outcome.content.clone();
            // A run whose durable record is missing is not reported as a clean success.
            if let Some(why) = &outcome.durable_error {
                text.push_str(&format!("\n[not recorded] {why}"));
                if let Value::Object(fields) = &mut structured {
                    fields.insert("record_error".into(), Value::String(why.clone()));
                }
            }
            let mut result = if ran_ok && outcome.durable_error.is_none() {
                CallToolResult::success(vec![ContentBlock::text(text)])
            } else {
                CallToolResult::error(vec![ContentBlock::text(text)])
            };
            result.structured_content = Some(structured);
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
                let call = self.shared.suspended.resume(
                    &request.name,
                    &state,
                    request.input_responses,
                    &context,
                )?;
                self.drive(call, &context.ct).await
            }
            None => self.start(request, &context).await,
        }
    }
}

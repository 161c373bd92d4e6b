//! Code Mode: the sandbox and the pipeline joined (DESIGN.md §5).
//!
//! [`CodeMode`] builds the `run_code` tool, whose description embeds the SDK of the visible tools,
//! and runs programs whose `tools.x(args)` calls each go through the full pipeline.
//!
//! ```no_run
//! # async fn demo(mut registry: codemode::ToolRegistry) -> Result<(), Box<dyn std::error::Error>> {
//! use codemode::codemode::CodeMode;
//! use codemode::sandbox::{Sandbox, SandboxConfig, Limits};
//! use codemode::{CallRequest, Pipeline};
//!
//! let code_mode = CodeMode::new(Sandbox::new(SandboxConfig::default())?, Limits::default());
//! registry.register(code_mode.tool(&registry)?)?;      // run_code, with the SDK in its description
//! let pipeline = Pipeline::builder(registry).build();
//! code_mode.attach(pipeline.clone());
//! let outcome = pipeline
//!     .call(CallRequest::new("run_code", serde_json::json!({"code": "return 1 + 1"})))
//!     .await;
//! # Ok(()) }
//! ```

pub mod discovery;
mod host;
mod run_code;

use std::sync::{Arc, OnceLock};

use tokio_util::sync::CancellationToken;

use crate::pipeline::Pipeline;
use crate::sandbox::{Limits, RunError, RunOptions, RunOutcome, RunStatus, Sandbox};
use crate::sdk::{SdkTool, generate_sdk};
use crate::tool::{ToolInfo, ToolRegistry};

pub use run_code::RUN_CODE;

tokio::task_local! {
    static CHOSEN_RUN_ID: Arc<str>;
}

/// Drive `call` (a future that calls `run_code` through the pipeline) so that its run uses
/// `run_id`: nested calls then carry `code_mode{run_id, seq}` with an id the caller chose, which lets
/// a harness match their events and approval requests to its own request (the MCP server does, for
/// progress notifications and elicitation). Pipeline bodies run inside the caller's future, so the
/// choice reaches the `run_code` body without threading it through the pipeline's types.
pub async fn with_run_id<F: Future>(run_id: impl Into<Arc<str>>, call: F) -> F::Output {
    CHOSEN_RUN_ID.scope(run_id.into(), call).await
}

/// Runs programs against the visible tools of a pipeline. Cheap to clone.
#[derive(Clone)]
pub struct CodeMode {
    inner: Arc<Inner>,
}

struct Inner {
    sandbox: Sandbox,
    limits: Limits,
    /// Set once the pipeline exists (it contains `run_code`, which contains this).
    pipeline: OnceLock<Pipeline>,
    /// Parent of every run's cancellation: [`CodeMode::stop_all`].
    stop: CancellationToken,
    /// Runs whose id the caller chose ([`with_run_id`]), for [`CodeMode::stop_run`].
    by_id: std::sync::Mutex<std::collections::HashMap<Arc<str>, CancellationToken>>,
}

impl CodeMode {
    pub fn new(sandbox: Sandbox, limits: Limits) -> CodeMode {
        CodeMode {
            inner: Arc::new(Inner {
                sandbox,
                limits,
                pipeline: OnceLock::new(),
                stop: CancellationToken::new(),
                by_id: std::sync::Mutex::new(std::collections::HashMap::new()),
            }),
        }
    }

    pub fn limits(&self) -> &Limits {
        &self.inner.limits
    }

    /// Connect to the pipeline whose registry holds the tools (and usually `run_code` itself).
    /// The first pipeline attached wins.
    pub fn attach(&self, pipeline: Pipeline) {
        let _ = self.inner.pipeline.set(pipeline);
    }

    /// Stops every run in progress and every later one: each ends `cancelled` and still returns
    /// its outcome (console output so far included). For a process shutting down, e.g. on
    /// Ctrl-C, where cancelling the enclosing `run_code` call would drop the outcome.
    pub fn stop_all(&self) {
        self.inner.stop.cancel();
    }

    /// Stop the run whose id was chosen with [`with_run_id`]; it still returns its outcome
    /// (status `cancelled`, console kept), unlike cancelling the `run_code` call, which discards
    /// it. Returns whether such a run was going.
    pub fn stop_run(&self, run_id: &str) -> bool {
        let runs = self.inner.by_id.lock().unwrap_or_else(|e| e.into_inner());
        match runs.get(run_id) {
            Some(token) => {
                token.cancel();
                true
            }
            None => false,
        }
    }

    /// Run a program against the attached pipeline's visible tools.
    pub async fn run(&self, code: &str, cancel: CancellationToken) -> RunOutcome {
        let Some(pipeline) = self.inner.pipeline.get() else {
            return RunOutcome::failed(
                RunStatus::Error,
                RunError::new(
                    "InternalError",
                    "code mode is not attached to a pipeline (call CodeMode::attach)",
                ),
            );
        };
        let paths = visible_tools(pipeline.registry())
            .into_iter()
            .map(|t| t.path)
            .collect();
        let host = host::PipelineHost {
            pipeline: pipeline.clone(),
            scope: pipeline.root_scope().child(),
            paths,
        };
        let run_cancel = self.inner.stop.child_token();
        let mut options = RunOptions::new(self.inner.limits.clone())
            .with_cancel(run_cancel.clone())
            .with_tools(Arc::new(host));
        let chosen = CHOSEN_RUN_ID.try_with(Arc::clone).ok();
        if let Some(run_id) = &chosen {
            options = options.with_run_id(run_id.to_string());
        }
        let _registered =
            chosen.map(|run_id| RegisteredRun::new(&self.inner, run_id, run_cancel.clone()));
        let run = self.inner.sandbox.run_with(code, options);
        tokio::pin!(run);
        tokio::select! {
            biased;
            outcome = &mut run => outcome,
            () = cancel.cancelled() => {
                run_cancel.cancel();
                run.await
            }
        }
    }
}

/// Keeps a run stoppable by id while it goes.
struct RegisteredRun<'a> {
    inner: &'a Inner,
    run_id: Arc<str>,
}

impl<'a> RegisteredRun<'a> {
    fn new(inner: &'a Inner, run_id: Arc<str>, token: CancellationToken) -> Self {
        let mut runs = inner.by_id.lock().unwrap_or_else(|e| e.into_inner());
        runs.insert(Arc::clone(&run_id), token);
        RegisteredRun { inner, run_id }
    }
}

impl Drop for RegisteredRun<'_> {
    fn drop(&mut self) {
        let mut runs = self.inner.by_id.lock().unwrap_or_else(|e| e.into_inner());
        runs.remove(&self.run_id);
    }
}

/// The tools a program sees: the registry without `run_code` (it never sees itself).
pub fn visible_tools(registry: &ToolRegistry) -> Vec<ToolInfo> {
    registry
        .tools()
        .into_iter()
        .filter(|t| t.path != RUN_CODE)
        .collect()
}

/// The TypeScript SDK (`tools.d.ts`) of the visible tools.
pub fn sdk_for(registry: &ToolRegistry) -> String {
    let tools: Vec<SdkTool> = visible_tools(registry).into_iter().map(sdk_tool).collect();
    generate_sdk(&tools)
}

/// A visible tool as the SDK generator sees it.
pub(crate) fn sdk_tool(t: ToolInfo) -> SdkTool {
    SdkTool {
        namespace: t.namespace,
        sandbox_name: t.sandbox_name,
        original_name: t.name,
        description: t.description,
        input_schema: t.parameters,
        output_schema: t.output_schema,
    }
}

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
}

impl CodeMode {
    pub fn new(sandbox: Sandbox, limits: Limits) -> CodeMode {
        CodeMode {
            inner: Arc::new(Inner {
                sandbox,
                limits,
                pipeline: OnceLock::new(),
                stop: CancellationToken::new(),
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
        if let Ok(run_id) = CHOSEN_RUN_ID.try_with(|id| id.to_string()) {
            options = options.with_run_id(run_id);
        }
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
    let tools: Vec<SdkTool> = visible_tools(registry)
        .into_iter()
        .map(|t| SdkTool {
            namespace: t.namespace,
            sandbox_name: t.sandbox_name,
            original_name: t.name,
            description: t.description,
            input_schema: t.parameters,
            output_schema: t.output_schema,
        })
        .collect();
    generate_sdk(&tools)
}

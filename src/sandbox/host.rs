//! The boundary between a run and the tools it may call. The sandbox knows nothing about the
//! pipeline: Code Mode implements [`ToolHost`] over it, and every `tools.x(args)` of a program
//! becomes one [`ToolHost::call`].

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::watchdog::RunControl;

/// What a run's program may call.
pub trait ToolHost: Send + Sync + 'static {
    /// The sandbox paths visible to programs: `grep`, `memory.search_nodes`, ...
    fn paths(&self) -> Vec<String>;

    /// Execute one call. The future runs on the sandbox worker; implementations that need their
    /// own runtime (the pipeline) spawn onto it and await the handle.
    fn call(&self, request: ToolRequest) -> BoxFuture<'static, ToolResponse>;
}

/// One call issued by a program.
pub struct ToolRequest {
    /// The sandbox path the program used (may name no tool: the host answers `UNKNOWN_TOOL`).
    pub path: String,
    /// The arguments after the value mapping of DESIGN.md §5 (`null` when unconvertible).
    pub args: Value,
    /// Why the arguments could not be converted (a cycle, a throwing getter, a proxy trap): the
    /// host must answer `INVALID_ARGS` without running the tool.
    pub unconvertible: Option<String>,
    /// Run id and 1-based sequence number of this call within the run (caller provenance).
    pub run_id: String,
    pub seq: u64,
    /// Cancelled when the run ends while the call is in flight. It is the run's own token,
    /// shared by all its calls: watch it, never cancel it (make a `child_token()` to stop one
    /// call's work).
    pub cancel: CancellationToken,
    /// Pauses the run's deadline while the call awaits an approver.
    pub deadline: DeadlinePause,
}

/// How a call ended, as the program will see it.
pub enum ToolResponse {
    Ok {
        value: Value,
        /// Context attachments (`{kind, text}`) of post-execute hooks.
        contexts: Vec<(String, String)>,
    },
    Err(ToolFailure),
}

/// A failed call; becomes a rejected promise with a `ToolError` in the program.
#[derive(Debug, Clone)]
pub struct ToolFailure {
    pub code: String,
    pub message: String,
    pub details: Value,
    /// Whether the tool's body started (so the call may have had an effect). The sandbox
    /// reports a call in flight at the run's end as cancelled, with no effect, only when this
    /// is `false`. [`ToolFailure::new`] sets it by the pipeline's convention: `false` for
    /// `CANCELLED` unless `details.executed` is `true`, `true` for every other code.
    pub executed: bool,
}

impl ToolFailure {
    pub fn new(code: impl Into<String>, message: impl Into<String>, details: Value) -> ToolFailure {
        let code = code.into();
        let executed = code != "CANCELLED" || details.get("executed") == Some(&Value::Bool(true));
        ToolFailure {
            code,
            message: message.into(),
            details,
            executed,
        }
    }

    /// The call stopped before the tool's body started: it had no effect.
    pub fn not_executed(mut self) -> ToolFailure {
        self.executed = false;
        self
    }
}

/// A handle that stops and restarts the run's deadline clock (nested pauses are counted).
#[derive(Clone)]
pub struct DeadlinePause(pub(crate) Arc<RunControl>);

impl DeadlinePause {
    pub fn pause(&self) {
        self.0.pause();
    }

    pub fn resume(&self) {
        self.0.resume();
    }
}

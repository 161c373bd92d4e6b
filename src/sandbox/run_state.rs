//! What the ops of a run write into (console, the finish report, the tool side), read by the
//! host when the run ends.

use super::console::ConsoleBuffer;
use super::outcome::{RunError, RunStatus};
use super::tool_run::ToolRun;

/// How the run ended, written once: by the glue (`op_codemode_finish`), or by the host when it
/// ends the run itself (the tool-call cap).
#[derive(Debug, Clone)]
pub(crate) enum FinishReport {
    /// The glue's report (JSON text the glue wrote without running program code) and the
    /// return value as JSON text.
    Js {
        report_json: String,
        value_json: Option<String>,
    },
    /// The host ended the run.
    Host { status: RunStatus, error: RunError },
}

/// Per-run state the ops write into; read by the host when the run ends.
#[derive(Default)]
pub(crate) struct RunState {
    pub console: ConsoleBuffer,
    pub finish: Option<FinishReport>,
    /// Present when the run has a tool host.
    pub tools: Option<ToolRun>,
}

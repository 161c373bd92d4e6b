//! The result of one run, serialised exactly as DESIGN.md §8 (`RunOutcome`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::call::{DynamicAccess, PlannedCall};

/// Version of the outcome JSON; bumped only on incompatible changes.
pub const OUTCOME_VERSION: u32 = 1;

/// How a run ended. The first limit to fire decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// The program finished; `value` holds its return value, if any.
    Ok,
    /// The program threw, awaited a promise that can never settle (`UnsettledPromise`), or was
    /// rejected before running (syntax error, program too large).
    Error,
    /// The wall-clock deadline (default 30 s) passed; the isolate was terminated.
    Timeout,
    /// The heap limit (default 256 MiB) was reached; the isolate was terminated.
    OutOfMemory,
    /// The run used more tool calls than allowed (default 1000) or returned a value over the
    /// return-value limit (default 4 MiB serialized).
    LimitExceeded,
    /// The embedder cancelled the run.
    Cancelled,
    /// The worker process running the program died (it panicked, aborted, was killed or ran
    /// past its memory ceiling); the error says how (signal or exit code). Only with
    /// process isolation: the host keeps serving and a fresh worker takes the place.
    Crashed,
}

impl RunStatus {
    /// The wire form (`"out_of_memory"`), identical to the serde form.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Ok => "ok",
            RunStatus::Error => "error",
            RunStatus::Timeout => "timeout",
            RunStatus::OutOfMemory => "out_of_memory",
            RunStatus::LimitExceeded => "limit_exceeded",
            RunStatus::Cancelled => "cancelled",
            RunStatus::Crashed => "crashed",
        }
    }
}

/// Console level of one entry; `table` and `dir` log at `log`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LogLevel {
    /// `console.log`, `console.table` and `console.dir`.
    Log,
    /// `console.info`.
    Info,
    /// `console.warn`; prefixed with its level in the model-visible content.
    Warn,
    /// `console.error`; prefixed with its level in the model-visible content.
    Error,
    /// `console.debug`.
    Debug,
}

impl LogLevel {
    pub(crate) fn from_code(code: u32) -> LogLevel {
        match code {
            1 => LogLevel::Info,
            2 => LogLevel::Warn,
            3 => LogLevel::Error,
            4 => LogLevel::Debug,
            _ => LogLevel::Log,
        }
    }

    /// The wire form (`"warn"`), identical to the serde form.
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Log => "log",
            LogLevel::Info => "info",
            LogLevel::Warn => "warn",
            LogLevel::Error => "error",
            LogLevel::Debug => "debug",
        }
    }
}

/// One `console.*` call of the program (an entry of `logs`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogEntry {
    /// Which console method wrote it.
    pub level: LogLevel,
    /// The formatted arguments: strings raw, other values in compact `util.inspect` form.
    pub text: String,
}

/// Why a run did not end `ok`. Positions are the model's own (1-based) lines and columns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunError {
    /// The error's class or kind: `TypeError`, `ToolError`, `UnsettledPromise`, `Timeout`, ...
    pub name: String,
    /// The error's message.
    pub message: String,
    /// Line in the model's program: of a syntax error, or of the innermost stack frame in the
    /// program; `None` when there is none (limits, host-side failures).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// Column on `line`; `None` exactly when `line` is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<u32>,
    /// The JS stack, rewritten to the model's positions with glue frames dropped; `None` when
    /// the error had no stack.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stack: Option<String>,
    /// `ToolError` only, and `ProgramRefused` (`DENIED`): the stable error code
    /// (`INVALID_ARGS`, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// `ToolError` only: the sandbox path of the tool.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// `ToolError` (and `ProgramRefused`) only: the `details` object of the error code
    /// (DESIGN.md section 3).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<serde_json::Value>,
}

impl RunError {
    /// An error with only a name and a message (no position, stack or tool fields).
    pub fn new(name: impl Into<String>, message: impl Into<String>) -> RunError {
        RunError {
            name: name.into(),
            message: message.into(),
            line: None,
            column: None,
            stack: None,
            code: None,
            tool: None,
            details: None,
        }
    }
}

/// A context attachment of a nested tool call (post-execute hooks add them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunContext {
    /// Sandbox path of the tool whose call carried the attachment (`grep`, `ns.name`).
    pub tool: String,
    /// Label chosen by the hook (e.g. `"note"`).
    pub kind: String,
    /// The attached text.
    pub text: String,
}

/// Counters of one run (`stats` in the outcome JSON, DESIGN.md section 8).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RunStats {
    /// Every call the program issued that reached the pipeline, failed and denied ones
    /// included.
    pub tool_calls: u64,
    /// `tool_calls` split by sandbox path (`grep`, `ns.name`).
    pub calls_by_tool: BTreeMap<String, u64>,
    /// Calls in flight when the run ended that were stopped before their tool started: they
    /// had no effect.
    pub cancelled_calls: u64,
    /// Calls in flight when the run ended whose tool had already started: they ran to their
    /// end after the run (their outcomes are in the events and the audit log), or were
    /// abandoned after the pipeline's grace.
    #[serde(default)]
    pub finished_after_end: u64,
    /// Wall-clock duration of the run, in milliseconds.
    pub wall_ms: f64,
    /// Sum of the serialized canonical values of the successful nested calls: data the
    /// program consumed without it reaching the model.
    pub bytes_kept_in_sandbox: u64,
    /// Size in bytes of the model-visible content (the render of the outcome).
    pub bytes_returned: u64,
}

/// Everything a run hands back: console output, the return value, the error, and stats.
///
/// `value` is kept as raw JSON text: it was serialised inside the sandbox under the value
/// mapping of DESIGN.md §5, and re-parsing it here would only add a depth limit and a copy.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunOutcome {
    /// Always [`OUTCOME_VERSION`].
    pub version: u32,
    /// How the run ended.
    pub status: RunStatus,
    /// Absent when the program returned nothing; a `null` return is `Some("null")`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present_value"
    )]
    pub value: Option<Box<RawValue>>,
    /// Console entries kept, in order (at most 1 MiB by default, then one truncation marker).
    pub logs: Vec<LogEntry>,
    /// Why the run did not end `ok`; `Some` exactly when `status` is not [`RunStatus::Ok`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<RunError>,
    /// Context attachments of the nested calls, in the order they completed.
    pub contexts: Vec<RunContext>,
    /// Call counts, timing and byte counts.
    pub stats: RunStats,
    /// The run's durable record (its `tool/result` in the session log) could not be written:
    /// why. Set by the harness after the run; the run itself may have ended `ok`, but its
    /// record is missing, so callers must not treat it as complete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record_error: Option<String>,
    /// The program's static plan: every place its source names a tool, with constant arguments
    /// where they are constant. Set by the harness, which reads it before the run; empty for a
    /// program that names no tool (or runs without a harness).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub planned_calls: Vec<PlannedCall>,
    /// Where the program reaches tools in ways its plan cannot follow (`tools[name]`,
    /// aliasing, destructuring, passing `tools`, dynamic code): not empty means it may call any
    /// tool.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dynamic_access: Vec<DynamicAccess>,
}

/// A `value` key that is present is a value, `null` included (serde's default for an `Option`
/// would read `"value": null` as absent, and a program's `return null` would vanish).
fn present_value<'de, D>(deserializer: D) -> Result<Option<Box<RawValue>>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    Box::<RawValue>::deserialize(deserializer).map(Some)
}

impl RunOutcome {
    /// An outcome for a run that never started (bad program, oversized input, ...).
    pub fn failed(status: RunStatus, error: RunError) -> RunOutcome {
        RunOutcome {
            version: OUTCOME_VERSION,
            status,
            value: None,
            logs: Vec::new(),
            error: Some(error),
            contexts: Vec::new(),
            stats: RunStats::default(),
            record_error: None,
            planned_calls: Vec::new(),
            dynamic_access: Vec::new(),
        }
    }

    /// Whether `status` is [`RunStatus::Ok`].
    pub fn is_ok(&self) -> bool {
        self.status == RunStatus::Ok
    }

    /// The return value parsed into a `serde_json::Value` (`None` when absent or too deep).
    pub fn value_json(&self) -> Option<serde_json::Value> {
        self.value
            .as_ref()
            .and_then(|raw| serde_json::from_str(raw.get()).ok())
    }

    /// The outcome as compact JSON (DESIGN.md section 8).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("RunOutcome always serialises")
    }
}

//! The result of one run, serialised exactly as DESIGN.md §8 (`RunOutcome`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// Version of the outcome JSON; bumped only on incompatible changes.
pub const OUTCOME_VERSION: u32 = 1;

/// How a run ended. The first limit to fire decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    Ok,
    Error,
    Timeout,
    OutOfMemory,
    LimitExceeded,
    Cancelled,
}

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Ok => "ok",
            RunStatus::Error => "error",
            RunStatus::Timeout => "timeout",
            RunStatus::OutOfMemory => "out_of_memory",
            RunStatus::LimitExceeded => "limit_exceeded",
            RunStatus::Cancelled => "cancelled",
        }
    }
}

/// Console level of one entry; `table` and `dir` log at `log`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LogLevel {
    Log,
    Info,
    Warn,
    Error,
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

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogEntry {
    pub level: LogLevel,
    pub text: String,
}

/// Why a run did not end `ok`. Positions are the model's own (1-based) lines and columns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunError {
    pub name: String,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stack: Option<String>,
    /// `ToolError` only: the stable error code (`INVALID_ARGS`, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// `ToolError` only: the sandbox path of the tool.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<serde_json::Value>,
}

impl RunError {
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
    pub tool: String,
    pub kind: String,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RunStats {
    pub tool_calls: u64,
    pub calls_by_tool: BTreeMap<String, u64>,
    /// Calls in flight when the run ended that were stopped before their tool started: they
    /// had no effect.
    pub cancelled_calls: u64,
    /// Calls in flight when the run ended whose tool had already started: they ran to their
    /// end after the run (their outcomes are in the events and the audit log), or were
    /// abandoned after the pipeline's grace.
    #[serde(default)]
    pub finished_after_end: u64,
    pub wall_ms: f64,
    pub bytes_kept_in_sandbox: u64,
    pub bytes_returned: u64,
}

/// Everything a run hands back: console output, the return value, the error, and stats.
///
/// `value` is kept as raw JSON text: it was serialised inside the sandbox under the value
/// mapping of DESIGN.md §5, and re-parsing it here would only add a depth limit and a copy.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunOutcome {
    pub version: u32,
    pub status: RunStatus,
    /// Absent when the program returned nothing; a `null` return is `Some("null")`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present_value"
    )]
    pub value: Option<Box<RawValue>>,
    pub logs: Vec<LogEntry>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<RunError>,
    pub contexts: Vec<RunContext>,
    pub stats: RunStats,
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
        }
    }

    pub fn is_ok(&self) -> bool {
        self.status == RunStatus::Ok
    }

    /// The return value parsed into a `serde_json::Value` (`None` when absent or too deep).
    pub fn value_json(&self) -> Option<serde_json::Value> {
        self.value
            .as_ref()
            .and_then(|raw| serde_json::from_str(raw.get()).ok())
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("RunOutcome always serialises")
    }
}

//! Stable machine codes of failed calls. One definition serves the pipeline, the sandbox and
//! the SDK: the TypeScript `ToolErrorCode` union is generated from this very type.

use serde::Serialize;
use typescript_type_def::TypeDef;

// Variants carry no `///` docs (hence the `allow`): the type-def derive would copy them into the
// SDK and spread the union over many lines; the meanings reach the model through the `run_code`
// description (`ErrorCode::meaning`), and DESIGN.md section 3 lists each code with its `details`.
/// Stable machine code of a failed tool call (`err.code`).
#[allow(missing_docs)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, TypeDef)]
// The SDK names the union `ToolErrorCode` (the type-def derive reads serde's `rename`).
#[serde(rename = "ToolErrorCode", rename_all = "SCREAMING_SNAKE_CASE")]
#[non_exhaustive]
pub enum ErrorCode {
    UnknownTool,
    InvalidArgs,
    Denied,
    Timeout,
    ToolError,
    OutputInvalid,
    Blocked,
    Cancelled,
    LimitExceeded,
}

impl ErrorCode {
    /// Every code, in the order of the design contract's table.
    pub const ALL: [ErrorCode; 9] = [
        Self::UnknownTool,
        Self::InvalidArgs,
        Self::Denied,
        Self::Timeout,
        Self::ToolError,
        Self::OutputInvalid,
        Self::Blocked,
        Self::Cancelled,
        Self::LimitExceeded,
    ];

    /// The wire form (`"INVALID_ARGS"`), identical to the serde form.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::UnknownTool => "UNKNOWN_TOOL",
            Self::InvalidArgs => "INVALID_ARGS",
            Self::Denied => "DENIED",
            Self::Timeout => "TIMEOUT",
            Self::ToolError => "TOOL_ERROR",
            Self::OutputInvalid => "OUTPUT_INVALID",
            Self::Blocked => "BLOCKED",
            Self::Cancelled => "CANCELLED",
            Self::LimitExceeded => "LIMIT_EXCEEDED",
        }
    }

    /// When the code happens and what `details` holds, phrased for the model.
    pub fn meaning(self) -> &'static str {
        match self {
            Self::UnknownTool => "no visible tool by that name; details: {suggestions: string[]}",
            Self::InvalidArgs => {
                "the arguments do not match the tool's input type; details: {issues: {path, message}[]}"
            }
            Self::Denied => {
                "a hook, guard, approver or policy refused the call; details: {by, reason}"
            }
            Self::Timeout => "the tool took too long; details: {after_ms}",
            Self::ToolError => "the tool itself failed; details: {retryable, attempts}",
            Self::OutputInvalid => {
                "the tool returned a value that breaks its output type; details: {issues, by?}"
            }
            Self::Blocked => "a post-execute hook withheld the result; details: {reason}",
            Self::Cancelled => "the call was cancelled because the run ended; details: {}",
            Self::LimitExceeded => {
                "the arguments or the result were too large; details: {limit, value}"
            }
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

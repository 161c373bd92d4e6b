//! The one error type callers see. `code()` is what a program sees as `err.code`; `details()` is
//! exactly the `details` column of DESIGN.md section 3.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::code::ErrorCode;
use super::issue::ArgIssue;

/// Who denied a call (`details.by` of `DENIED`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum DeniedBy {
    /// A pre-execute hook returned `deny` (or failed, which fails closed).
    Hook,
    /// A guard denied the call.
    Guard,
    /// The approver refused an `ask`, errored or timed out, or there was no approver.
    Approver,
    /// A rule of the policy file denied the call.
    Policy,
}

impl DeniedBy {
    /// The wire form used in `details.by`: `"hook"`, `"guard"`, `"approver"` or `"policy"`.
    pub fn as_str(self) -> &'static str {
        match self {
            DeniedBy::Hook => "hook",
            DeniedBy::Guard => "guard",
            DeniedBy::Approver => "approver",
            DeniedBy::Policy => "policy",
        }
    }
}

/// Which per-call limit fired (`details.limit` of `LIMIT_EXCEEDED`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum LimitKind {
    /// The serialized arguments were larger than `CallLimits::max_arg_bytes`.
    ArgumentBytes,
    /// The serialized result value was larger than `CallLimits::max_result_bytes`, or the body
    /// reported an oversized answer.
    ResultBytes,
}

impl LimitKind {
    /// The wire form used in `details.limit`: `"argument_bytes"` or `"result_bytes"`.
    pub fn as_str(self) -> &'static str {
        match self {
            LimitKind::ArgumentBytes => "argument_bytes",
            LimitKind::ResultBytes => "result_bytes",
        }
    }
}

/// The typed payload of a [`CallError`]; one variant per code. Serde gives it a lossless form
/// (it crosses the worker-process boundary); the wire form for programs is
/// [`CallError::details`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum ErrorKind {
    /// `UNKNOWN_TOOL`: no visible tool by that name.
    UnknownTool {
        /// Visible tool names close to the one asked for; may be empty.
        suggestions: Vec<String>,
    },
    /// `INVALID_ARGS`: the arguments could not be snapshotted or broke the input schema.
    InvalidArgs {
        /// One entry per problem, each with a JSON-pointer path.
        issues: Vec<ArgIssue>,
    },
    /// `DENIED`: a hook, guard, approver or policy said no.
    Denied {
        /// Which gate refused.
        by: DeniedBy,
        /// Why, as the gate put it.
        reason: String,
    },
    /// `TIMEOUT`: the timeout wrapper fired and the body's future was dropped.
    Timeout {
        /// The per-attempt limit that elapsed, in milliseconds.
        after_ms: u64,
    },
    /// `TOOL_ERROR`: the body failed (or the tool's `render` or `finalize_content` panicked).
    ToolError {
        /// Whether the body marked the failure as worth retrying.
        retryable: bool,
        /// How many attempts ran, the first one included.
        attempts: u32,
    },
    /// `OUTPUT_INVALID`: the final value breaks the tool's output schema.
    OutputInvalid {
        /// One entry per problem, each with a JSON-pointer path into the value.
        issues: Vec<ArgIssue>,
        /// Name of the post-execute hook that replaced the value; `None` when the body's own
        /// value was invalid.
        by: Option<String>,
    },
    /// `BLOCKED`: a post-execute hook withheld the result.
    Blocked {
        /// Why, as the hook put it.
        reason: String,
    },
    /// `CANCELLED` before the body started: the caller or the run went away (`details = {}`).
    Cancelled,
    /// Cancelled after the tool's body had started (code `CANCELLED`, `details.executed =
    /// true`): the body stopped with a failure when told to (a killed `shell` command), or ran
    /// past the grace and was dropped (`abandoned_after_ms`). It may have had part of its
    /// effect.
    CancelledAfterStart {
        /// Milliseconds the body was given after cancellation before it was dropped; `None`
        /// when it stopped on its own.
        abandoned_after_ms: Option<u64>,
    },
    /// `LIMIT_EXCEEDED`: a per-call size limit (argument or result bytes).
    LimitExceeded {
        /// Which limit fired.
        limit: LimitKind,
        /// The measured size, in bytes.
        value: u64,
    },
}

/// A failed call: a stable code, a human message and structured details.
#[derive(Clone, Debug, PartialEq, thiserror::Error, Serialize, Deserialize)]
#[error("{}: {message}", self.code())]
pub struct CallError {
    /// The code and its structured details.
    pub kind: ErrorKind,
    /// Human-readable explanation, lowercase without a trailing period; becomes `err.message`.
    pub message: String,
}

impl CallError {
    /// An error of `kind` with a human-readable `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        CallError {
            kind,
            message: message.into(),
        }
    }

    /// `DENIED` by `by`; the message reads `denied by <by>: <reason>`.
    pub fn denied(by: DeniedBy, reason: impl Into<String>) -> Self {
        let reason = reason.into();
        let message = format!("denied by {}: {reason}", by.as_str());
        CallError::new(ErrorKind::Denied { by, reason }, message)
    }

    /// `CANCELLED` before the body started.
    pub fn cancelled() -> Self {
        CallError::new(ErrorKind::Cancelled, "the call was cancelled")
    }

    /// The stable machine code, what a program sees as `err.code`.
    pub fn code(&self) -> ErrorCode {
        match &self.kind {
            ErrorKind::UnknownTool { .. } => ErrorCode::UnknownTool,
            ErrorKind::InvalidArgs { .. } => ErrorCode::InvalidArgs,
            ErrorKind::Denied { .. } => ErrorCode::Denied,
            ErrorKind::Timeout { .. } => ErrorCode::Timeout,
            ErrorKind::ToolError { .. } => ErrorCode::ToolError,
            ErrorKind::OutputInvalid { .. } => ErrorCode::OutputInvalid,
            ErrorKind::Blocked { .. } => ErrorCode::Blocked,
            ErrorKind::Cancelled | ErrorKind::CancelledAfterStart { .. } => ErrorCode::Cancelled,
            ErrorKind::LimitExceeded { .. } => ErrorCode::LimitExceeded,
        }
    }

    /// The `details` object of DESIGN.md section 3.
    pub fn details(&self) -> Value {
        match &self.kind {
            ErrorKind::UnknownTool { suggestions } => json!({ "suggestions": suggestions }),
            ErrorKind::InvalidArgs { issues } => json!({ "issues": issues }),
            ErrorKind::Denied { by, reason } => json!({ "by": by.as_str(), "reason": reason }),
            ErrorKind::Timeout { after_ms } => json!({ "after_ms": after_ms }),
            ErrorKind::ToolError {
                retryable,
                attempts,
            } => json!({ "retryable": retryable, "attempts": attempts }),
            ErrorKind::OutputInvalid {
                issues,
                by: Some(by),
            } => json!({ "issues": issues, "by": by }),
            ErrorKind::OutputInvalid { issues, by: None } => json!({ "issues": issues }),
            ErrorKind::Blocked { reason } => json!({ "reason": reason }),
            ErrorKind::Cancelled => json!({}),
            ErrorKind::CancelledAfterStart {
                abandoned_after_ms: None,
            } => json!({ "executed": true }),
            ErrorKind::CancelledAfterStart {
                abandoned_after_ms: Some(after_ms),
            } => json!({ "executed": true, "abandoned_after_ms": after_ms }),
            ErrorKind::LimitExceeded { limit, value } => {
                json!({ "limit": limit.as_str(), "value": value })
            }
        }
    }

    /// `{code, message, details}`, the shape a sandbox turns into a `ToolError`.
    pub fn to_json(&self) -> Value {
        json!({ "code": self.code().as_str(), "message": self.message, "details": self.details() })
    }
}

/// A body's failure. `retryable` lets the retry wrapper try again (parallel-safe calls only).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ToolFailure {
    /// Human-readable explanation; becomes the [`CallError`]'s message.
    pub message: String,
    /// Whether trying again may succeed (`details.retryable` of `TOOL_ERROR`).
    pub retryable: bool,
    /// A size limit the body ran into (e.g. an upstream answer over 16 MiB): the call fails with
    /// `LIMIT_EXCEEDED` and `details = {limit, value}` instead of `TOOL_ERROR`.
    pub limit: Option<(LimitKind, u64)>,
    /// The body enforced its own time limit (e.g. the shell tool's `timeout_ms`): the call fails
    /// with `TIMEOUT` and `details = {after_ms}`, like the pipeline's own timeout.
    pub timed_out_after_ms: Option<u64>,
}

impl ToolFailure {
    /// A failure that is not worth retrying.
    pub fn new(message: impl Into<String>) -> Self {
        ToolFailure {
            message: message.into(),
            retryable: false,
            limit: None,
            timed_out_after_ms: None,
        }
    }

    /// A transient failure the retry wrapper may try again.
    pub fn retryable(message: impl Into<String>) -> Self {
        ToolFailure {
            message: message.into(),
            retryable: true,
            limit: None,
            timed_out_after_ms: None,
        }
    }

    /// The body hit `limit` with `value` (bytes): `LIMIT_EXCEEDED`, not retryable.
    pub fn limit_exceeded(limit: LimitKind, value: u64, message: impl Into<String>) -> Self {
        ToolFailure {
            message: message.into(),
            retryable: false,
            limit: Some((limit, value)),
            timed_out_after_ms: None,
        }
    }

    /// The body stopped itself after its own time limit of `after_ms`: `TIMEOUT`, not retryable.
    pub fn timed_out(after_ms: u64, message: impl Into<String>) -> Self {
        ToolFailure {
            message: message.into(),
            retryable: false,
            limit: None,
            timed_out_after_ms: Some(after_ms),
        }
    }
}

/// The error hooks, guards and approvers may return; the pipeline fails closed on it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct HookError(pub String);

impl HookError {
    /// An error with the given message.
    pub fn new(message: impl Into<String>) -> Self {
        HookError(message.into())
    }
}

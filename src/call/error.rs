//! The one error type callers see. `code()` is what a program sees as `err.code`; `details()` is
//! exactly the `details` column of DESIGN.md section 3.

use serde_json::{Value, json};

use super::code::ErrorCode;
use super::issue::ArgIssue;

/// Who denied a call (`details.by` of `DENIED`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeniedBy {
    Hook,
    Guard,
    Approver,
    Policy,
}

impl DeniedBy {
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
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LimitKind {
    ArgumentBytes,
    ResultBytes,
}

impl LimitKind {
    pub fn as_str(self) -> &'static str {
        match self {
            LimitKind::ArgumentBytes => "argument_bytes",
            LimitKind::ResultBytes => "result_bytes",
        }
    }
}

/// The typed payload of a [`CallError`]; one variant per code.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ErrorKind {
    UnknownTool {
        suggestions: Vec<String>,
    },
    InvalidArgs {
        issues: Vec<ArgIssue>,
    },
    Denied {
        by: DeniedBy,
        reason: String,
    },
    Timeout {
        after_ms: u64,
    },
    ToolError {
        retryable: bool,
        attempts: u32,
    },
    OutputInvalid {
        issues: Vec<ArgIssue>,
        by: Option<String>,
    },
    Blocked {
        reason: String,
    },
    Cancelled,
    /// Cancelled after the tool's body had started (code `CANCELLED`, `details.executed =
    /// true`): the body stopped with a failure when told to (a killed `shell` command), or ran
    /// past the grace and was dropped (`abandoned_after_ms`). It may have had part of its
    /// effect.
    CancelledAfterStart {
        abandoned_after_ms: Option<u64>,
    },
    LimitExceeded {
        limit: LimitKind,
        value: u64,
    },
}

/// A failed call: a stable code, a human message and structured details.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{}: {message}", self.code())]
pub struct CallError {
    pub kind: ErrorKind,
    pub message: String,
}

impl CallError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        CallError {
            kind,
            message: message.into(),
        }
    }

    pub fn denied(by: DeniedBy, reason: impl Into<String>) -> Self {
        let reason = reason.into();
        let message = format!("denied by {}: {reason}", by.as_str());
        CallError::new(ErrorKind::Denied { by, reason }, message)
    }

    pub fn cancelled() -> Self {
        CallError::new(ErrorKind::Cancelled, "the call was cancelled")
    }

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
    pub message: String,
    pub retryable: bool,
    /// A size limit the body ran into (e.g. an upstream answer over 16 MiB): the call fails with
    /// `LIMIT_EXCEEDED` and `details = {limit, value}` instead of `TOOL_ERROR`.
    pub limit: Option<(LimitKind, u64)>,
}

impl ToolFailure {
    pub fn new(message: impl Into<String>) -> Self {
        ToolFailure {
            message: message.into(),
            retryable: false,
            limit: None,
        }
    }

    pub fn retryable(message: impl Into<String>) -> Self {
        ToolFailure {
            message: message.into(),
            retryable: true,
            limit: None,
        }
    }

    /// The body hit `limit` with `value` (bytes): `LIMIT_EXCEEDED`, not retryable.
    pub fn limit_exceeded(limit: LimitKind, value: u64, message: impl Into<String>) -> Self {
        ToolFailure {
            message: message.into(),
            retryable: false,
            limit: Some((limit, value)),
        }
    }
}

/// The error hooks, guards and approvers may return; the pipeline fails closed on it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct HookError(pub String);

impl HookError {
    pub fn new(message: impl Into<String>) -> Self {
        HookError(message.into())
    }
}

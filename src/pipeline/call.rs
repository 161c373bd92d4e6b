//! What goes into a call and what comes out of it.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::approval::ApprovalObserver;
use super::error::CallError;
use super::scheduler::Scope;
use crate::schema::ArgIssue;
use crate::tool::Card;

/// Who issued a call. Serialises as `{"kind":"direct"}` or
/// `{"kind":"code_mode","run_id":"r_..","seq":3}` (DESIGN.md section 8).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Caller {
    Direct,
    CodeMode { run_id: Arc<str>, seq: u64 },
}

impl Caller {
    pub fn code_mode(run_id: impl Into<Arc<str>>, seq: u64) -> Self {
        Caller::CodeMode {
            run_id: run_id.into(),
            seq,
        }
    }

    /// Direct calls are durable; nested code-mode calls are observations only.
    pub fn is_durable(&self) -> bool {
        matches!(self, Caller::Direct)
    }
}

impl fmt::Display for Caller {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Caller::Direct => f.write_str("direct"),
            Caller::CodeMode { run_id, seq } => write!(f, "code_mode:{run_id}:{seq}"),
        }
    }
}

/// A context attachment from a post-execute hook.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextEntry {
    pub kind: String,
    pub text: String,
}

impl ContextEntry {
    pub fn new(kind: impl Into<String>, text: impl Into<String>) -> Self {
        ContextEntry {
            kind: kind.into(),
            text: text.into(),
        }
    }
}

/// `ok` or `error`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallStatus {
    Ok,
    Error,
}

pub(crate) enum ArgsInput {
    Value(Value),
    Unconvertible(Vec<ArgIssue>),
}

/// One call to issue: `Pipeline::call(CallRequest::new("grep", json!({..})))`.
pub struct CallRequest {
    pub(crate) tool: String,
    pub(crate) args: ArgsInput,
    pub(crate) caller: Caller,
    pub(crate) scope: Option<Arc<Scope>>,
    pub(crate) cancel: Option<CancellationToken>,
    pub(crate) approval_observer: Option<Arc<dyn ApprovalObserver>>,
    pub(crate) parent_span: Option<tracing::Span>,
}

impl CallRequest {
    /// A direct call of the tool at sandbox path `tool` (`grep`, `ns.name`).
    pub fn new(tool: impl Into<String>, args: Value) -> Self {
        CallRequest {
            tool: tool.into(),
            args: ArgsInput::Value(args),
            caller: Caller::Direct,
            scope: None,
            cancel: None,
            approval_observer: None,
            parent_span: None,
        }
    }

    /// A call whose arguments could not be converted into a host value (a throwing getter, a
    /// proxy, a cycle): it goes through the pipeline's events and ends as `INVALID_ARGS`.
    pub fn unconvertible(tool: impl Into<String>, issues: Vec<ArgIssue>) -> Self {
        let mut req = CallRequest::new(tool, Value::Null);
        req.args = ArgsInput::Unconvertible(issues);
        req
    }

    pub fn caller(mut self, caller: Caller) -> Self {
        self.caller = caller;
        self
    }

    /// The scheduler scope to order this call in (default: the pipeline's root scope).
    pub fn scope(mut self, scope: Arc<Scope>) -> Self {
        self.scope = Some(scope);
        self
    }

    /// Cancelling the token ends the call as `CANCELLED` (the body's future is dropped).
    pub fn cancel_token(mut self, token: CancellationToken) -> Self {
        self.cancel = Some(token);
        self
    }

    /// Told when the call starts and stops waiting for the Approver (a run pauses its deadline).
    pub fn approval_observer(mut self, observer: Arc<dyn ApprovalObserver>) -> Self {
        self.approval_observer = Some(observer);
        self
    }

    /// The span the call's `tool_call` span nests under (default: the span current at `call`).
    pub fn parent_span(mut self, span: tracing::Span) -> Self {
        self.parent_span = Some(span);
        self
    }
}

/// Timing of one call.
#[derive(Clone, Debug, PartialEq)]
pub struct Timing {
    /// RFC 3339 wall-clock time the call was issued.
    pub started_at: String,
    /// Issue to completion.
    pub duration: Duration,
    /// Time spent waiting for the scheduler.
    pub queued: Duration,
    /// Time spent waiting for the Approver.
    pub awaiting_approval: Duration,
}

/// The result of a call. Programs consume `value`; the model reads `content`.
#[derive(Clone, Debug)]
pub struct CallOutcome {
    pub call_id: Arc<str>,
    /// Sandbox path (`grep`, `ns.name`).
    pub tool: String,
    pub caller: Caller,
    pub status: CallStatus,
    /// The final canonical value (after post hooks); `None` on error.
    pub value: Option<Arc<Value>>,
    /// The final model-visible content (after hooks and `finalize_content`); the error message on error.
    pub content: String,
    pub contexts: Vec<ContextEntry>,
    pub call_card: Option<Card>,
    pub result_card: Option<Card>,
    pub timing: Timing,
    pub error: Option<CallError>,
    /// Whether the tool's body started (a call cancelled or refused before it did had no
    /// effect).
    pub executed: bool,
}

impl CallOutcome {
    pub fn is_ok(&self) -> bool {
        self.status == CallStatus::Ok
    }

    /// The value on success, the error otherwise.
    pub fn result(&self) -> Result<&Value, &CallError> {
        match (&self.value, &self.error) {
            (Some(v), None) => Ok(v),
            (_, Some(e)) => Err(e),
            (None, None) => unreachable!("an outcome has a value or an error"),
        }
    }
}

/// Per-call size limits (DESIGN.md section 5), measured on serialized JSON.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallLimits {
    pub max_arg_bytes: u64,
    pub max_result_bytes: u64,
}

impl Default for CallLimits {
    fn default() -> Self {
        CallLimits {
            max_arg_bytes: 8 << 20,
            max_result_bytes: 8 << 20,
        }
    }
}

//! What goes into a call and what comes out of it.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::approval::ApprovalObserver;
use super::scheduler::Scope;
use crate::call::{CallError, CallStatus, Caller, ContextEntry, ErrorCode, Extensions, Typed};
use crate::schema::ArgIssue;
use crate::tool::Card;
use serde::de::DeserializeOwned;

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
    pub(crate) extensions: Extensions,
}

impl std::fmt::Debug for CallRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallRequest")
            .field("tool", &self.tool)
            .field("caller", &self.caller)
            .field("extensions", &self.extensions)
            .finish_non_exhaustive()
    }
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
            extensions: Extensions::new(),
        }
    }

    /// A call whose arguments could not be converted into a host value (a throwing getter, a
    /// proxy, a cycle): it goes through the pipeline's events and ends as `INVALID_ARGS`.
    pub fn unconvertible(tool: impl Into<String>, issues: Vec<ArgIssue>) -> Self {
        let mut req = CallRequest::new(tool, Value::Null);
        req.args = ArgsInput::Unconvertible(issues);
        req
    }

    /// Who issues the call (default [`Caller::Direct`]).
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

    /// Puts typed data on the call. It reaches the body ([`ExecContext::extensions`]), hooks,
    /// guards and the Approver ([`CallInfo::extensions`]) and the events; a `run_code` call
    /// hands its extensions on to every nested call of its program.
    ///
    /// [`ExecContext::extensions`]: crate::ExecContext
    /// [`CallInfo::extensions`]: super::CallInfo
    pub fn extension<T: Send + Sync + 'static>(mut self, value: T) -> Self {
        self.extensions.insert(value);
        self
    }

    /// Puts every value of `extensions` on the call (over any of the same type).
    pub fn extensions(mut self, extensions: &Extensions) -> Self {
        self.extensions.extend(extensions);
        self
    }

    /// The span the call's `tool_call` span nests under (default: the span current at `call`).
    /// The call's span is made, entered and closed in that span's subscriber, so it nests under
    /// it whichever thread issues the call (a nested call of a run, on the sandbox's thread).
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
    /// The call's id.
    pub call_id: Arc<str>,
    /// Sandbox path (`grep`, `ns.name`).
    pub tool: String,
    /// Who issued the call.
    pub caller: Caller,
    /// `ok` or `error`.
    pub status: CallStatus,
    /// The final canonical value (after post hooks); `None` on error.
    pub value: Option<Arc<Value>>,
    /// The final model-visible content (after hooks and `finalize_content`); the error message on error.
    pub content: String,
    /// Context attachments of post-execute hooks.
    pub contexts: Vec<ContextEntry>,
    /// The tool's presenter card for the call, if it has one.
    pub call_card: Option<Card>,
    /// The tool's presenter card for the result, if it has one.
    pub result_card: Option<Card>,
    /// When the call started and how long it queued, awaited approval and ran.
    pub timing: Timing,
    /// Why the call failed; `None` on success.
    pub error: Option<CallError>,
    /// Whether the tool's body started (a call cancelled or refused before it did had no
    /// effect).
    pub executed: bool,
    /// The typed value of an `execute_typed` body, when the value is still the body's own.
    pub typed: Option<Typed>,
    /// Why the call's durable record (its `tool/result` in the session log) could not be
    /// written; `None` when it was, or when the call has none (nested calls).
    pub durable_error: Option<String>,
    /// `content` is exactly the compact JSON text of `value` (the default render of a value that
    /// is not a string, untouched by post hooks and `finalize_content`): a caller that needs
    /// that text takes `content` instead of serialising the value again.
    pub content_is_value_json: bool,
}

impl CallOutcome {
    /// Whether the call succeeded.
    pub fn is_ok(&self) -> bool {
        self.status == CallStatus::Ok
    }

    /// The error's stable code, on error.
    pub fn error_code(&self) -> Option<ErrorCode> {
        self.error.as_ref().map(CallError::code)
    }

    /// The typed value of an `execute_typed` body, if it is a `T`.
    pub fn typed<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.typed.as_ref()?.downcast::<T>()
    }

    /// The value as a `T`: the body's typed value when it kept one, else read from the JSON.
    ///
    /// # Errors
    /// The call failed, or its value is not a `T`.
    pub fn value_as<T>(&self) -> Result<T, ValueError>
    where
        T: DeserializeOwned + Clone + Send + Sync + 'static,
    {
        if let Some(typed) = self.typed::<T>() {
            return Ok(typed.clone());
        }
        match self.result() {
            Ok(value) => T::deserialize(value).map_err(ValueError::Shape),
            Err(error) => Err(ValueError::Failed(error.clone())),
        }
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

/// Why [`CallOutcome::value_as`] has no value to give.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ValueError {
    /// The call failed.
    #[error("the call failed: {0}")]
    Failed(CallError),
    /// The value is not of the type asked for.
    #[error("the value does not have the type asked for: {0}")]
    Shape(serde_json::Error),
}

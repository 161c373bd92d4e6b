//! Pre- and post-execute hooks. Pre hooks decide; they see the arguments only by shared
//! reference to the snapshot, so they cannot change what executes. Post hooks may block, replace
//! content or value, and attach context entries.

use futures::FutureExt;
use futures::future::{BoxFuture, ready};
use serde_json::Value;

use crate::call::{Caller, ContextEntry, DeniedBy, Extensions, HookError};
use crate::tool::ToolDefinition;

/// Read-only view of a call, shared by hooks, guards and approvers.
#[derive(Clone, Copy, Debug)]
pub struct CallInfo<'a> {
    /// The call's id.
    pub call_id: &'a str,
    /// Sandbox path (`grep`, `ns.name`).
    pub path: &'a str,
    /// The tool called.
    pub tool: &'a ToolDefinition,
    /// The immutable arguments snapshot; the body executes exactly this value.
    pub args: &'a Value,
    /// Who issued the call.
    pub caller: &'a Caller,
    /// Whether the scheduler runs this call in the parallel pool.
    pub parallel: bool,
    /// The call's typed data ([`CallRequest::extension`](super::CallRequest::extension)).
    pub extensions: &'a Extensions,
}

/// A pre-execute decision. Combining: any deny wins, then any ask, else allow.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HookDecision {
    /// Let the call run.
    Allow,
    /// Ask the Approver first.
    Ask {
        /// Why, shown to the approver.
        reason: String,
    },
    /// Refuse the call (`DENIED`).
    Deny {
        /// Why; it becomes the `DENIED` error's reason.
        reason: String,
    },
}

/// Decides whether a call may run. An error or a panic denies the call (fails closed).
pub trait PreExecuteHook: Send + Sync + 'static {
    /// The hook's name, for errors and traces.
    fn name(&self) -> &str;
    /// What `details.by` says when this hook denies: `hook`, or `policy` for a policy layer.
    fn denied_by(&self) -> DeniedBy {
        DeniedBy::Hook
    }
    /// Decides about one call.
    fn before<'a>(
        &'a self,
        call: &'a CallInfo<'a>,
    ) -> BoxFuture<'a, Result<HookDecision, HookError>>;
}

/// What a post-execute hook wants done with a successful result.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PostAction {
    /// Block the result: the call ends as `BLOCKED` with this reason.
    pub block: Option<String>,
    /// New model-visible content. Not a secrecy boundary: programs still get the value.
    pub replace_content: Option<String>,
    /// New canonical value; validated against the output schema and rendered again unless the
    /// content was replaced (by this hook or an earlier one).
    pub replace_value: Option<Value>,
    /// Context attachments handed on with the result.
    pub contexts: Vec<ContextEntry>,
}

impl PostAction {
    /// Keep the result as it is.
    pub fn keep() -> Self {
        Self::default()
    }
    /// Block the result with `reason` (`BLOCKED`).
    pub fn block(reason: impl Into<String>) -> Self {
        PostAction {
            block: Some(reason.into()),
            ..Self::default()
        }
    }
    /// Replace the model-visible content.
    pub fn with_content(mut self, content: impl Into<String>) -> Self {
        self.replace_content = Some(content.into());
        self
    }
    /// Replace the canonical value (validated against the output schema again).
    pub fn with_value(mut self, value: Value) -> Self {
        self.replace_value = Some(value);
        self
    }
    /// Attach a context entry.
    pub fn with_context(mut self, kind: impl Into<String>, text: impl Into<String>) -> Self {
        self.contexts.push(ContextEntry::new(kind, text));
        self
    }
}

/// A successful result as a post hook sees it (after earlier hooks).
#[derive(Debug)]
pub struct PostInfo<'a> {
    /// The call.
    pub call: &'a CallInfo<'a>,
    /// The canonical value after earlier hooks.
    pub value: &'a Value,
    /// The model-visible content after earlier hooks.
    pub content: &'a str,
}

/// Runs after output validation and render, on successful results only. An error or a panic
/// blocks the result (fails closed).
pub trait PostExecuteHook: Send + Sync + 'static {
    /// The hook's name, for errors and traces.
    fn name(&self) -> &str;
    /// Looks at one successful result.
    fn after<'a>(
        &'a self,
        result: &'a PostInfo<'a>,
    ) -> BoxFuture<'a, Result<PostAction, HookError>>;
}

struct PreFn<F> {
    name: String,
    f: F,
}

impl<F> PreExecuteHook for PreFn<F>
where
    F: Fn(&CallInfo<'_>) -> HookDecision + Send + Sync + 'static,
{
    fn name(&self) -> &str {
        &self.name
    }
    fn before<'a>(
        &'a self,
        call: &'a CallInfo<'a>,
    ) -> BoxFuture<'a, Result<HookDecision, HookError>> {
        ready(Ok((self.f)(call))).boxed()
    }
}

/// A synchronous pre-execute hook from a closure.
pub fn pre_hook_fn<F>(name: impl Into<String>, f: F) -> impl PreExecuteHook
where
    F: Fn(&CallInfo<'_>) -> HookDecision + Send + Sync + 'static,
{
    PreFn {
        name: name.into(),
        f,
    }
}

struct PostFn<F> {
    name: String,
    f: F,
}

impl<F> PostExecuteHook for PostFn<F>
where
    F: Fn(&PostInfo<'_>) -> PostAction + Send + Sync + 'static,
{
    fn name(&self) -> &str {
        &self.name
    }
    fn after<'a>(
        &'a self,
        result: &'a PostInfo<'a>,
    ) -> BoxFuture<'a, Result<PostAction, HookError>> {
        ready(Ok((self.f)(result))).boxed()
    }
}

/// A synchronous post-execute hook from a closure.
pub fn post_hook_fn<F>(name: impl Into<String>, f: F) -> impl PostExecuteHook
where
    F: Fn(&PostInfo<'_>) -> PostAction + Send + Sync + 'static,
{
    PostFn {
        name: name.into(),
        f,
    }
}

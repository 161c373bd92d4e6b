//! Async closures as hooks, guards and approvers, in axum's `from_fn` style. A closure gets an
//! owned view of the call (it may hold it across `.await`s) and returns a future.
//!
//! The views clone the call's arguments (and a post hook's value): for a hook on a hot path,
//! implement the trait instead, which borrows them.
//!
//! ```
//! use codemode::pipeline::{HookDecision, pre_hook_from_fn};
//!
//! let hook = pre_hook_from_fn("rate-limit", |call| async move {
//!     // e.g. ask a remote quota service about `call.path`
//!     Ok(if call.path == "shell" {
//!         HookDecision::Ask { reason: "runs a command".into() }
//!     } else {
//!         HookDecision::Allow
//!     })
//! });
//! # let _ = hook;
//! ```

use std::future::Future;

use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::Value;

use super::approval::{ApprovalDecision, ApprovalRequest, Approver};
use super::guards::{Guard, GuardDecision};
use super::hooks::{CallInfo, HookDecision, PostAction, PostExecuteHook, PostInfo, PreExecuteHook};
use crate::call::{Caller, DeniedBy, Extensions, HookError};
use crate::tool::ToolDefinition;

/// An owned copy of a [`CallInfo`], for async closures.
#[derive(Clone, Debug)]
pub struct CallSnapshot {
    /// The call's id.
    pub call_id: String,
    /// Sandbox path (`grep`, `ns.name`).
    pub path: String,
    /// The tool called.
    pub tool: ToolDefinition,
    /// The arguments snapshot (a copy: the body executes the pipeline's own).
    pub args: Value,
    /// Who issued the call.
    pub caller: Caller,
    /// Whether the scheduler runs this call in the parallel pool.
    pub parallel: bool,
    /// The call's typed data.
    pub extensions: Extensions,
}

impl CallSnapshot {
    /// Copies `call`.
    pub fn of(call: &CallInfo<'_>) -> CallSnapshot {
        CallSnapshot {
            call_id: call.call_id.to_string(),
            path: call.path.to_string(),
            tool: call.tool.clone(),
            args: call.args.clone(),
            caller: call.caller.clone(),
            parallel: call.parallel,
            extensions: call.extensions.clone(),
        }
    }
}

/// An owned copy of a [`PostInfo`].
#[derive(Clone, Debug)]
pub struct PostSnapshot {
    /// The call.
    pub call: CallSnapshot,
    /// The canonical value after earlier hooks.
    pub value: Value,
    /// The model-visible content after earlier hooks.
    pub content: String,
}

/// An owned copy of an [`ApprovalRequest`].
#[derive(Clone, Debug)]
pub struct ApprovalSnapshot {
    /// The call waiting for the answer.
    pub call: CallSnapshot,
    /// Why it asks (the reasons of every hook that said `ask`).
    pub reasons: Vec<String>,
}

struct PreFromFn<F> {
    name: String,
    f: F,
}

impl<F, Fut> PreExecuteHook for PreFromFn<F>
where
    F: Fn(CallSnapshot) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<HookDecision, HookError>> + Send + 'static,
{
    fn name(&self) -> &str {
        &self.name
    }
    fn before<'a>(
        &'a self,
        call: &'a CallInfo<'a>,
    ) -> BoxFuture<'a, Result<HookDecision, HookError>> {
        (self.f)(CallSnapshot::of(call)).boxed()
    }
}

/// A pre-execute hook from an async closure. An error (or a panic) denies the call.
pub fn pre_hook_from_fn<F, Fut>(name: impl Into<String>, f: F) -> impl PreExecuteHook
where
    F: Fn(CallSnapshot) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<HookDecision, HookError>> + Send + 'static,
{
    PreFromFn {
        name: name.into(),
        f,
    }
}

struct PostFromFn<F> {
    name: String,
    f: F,
}

impl<F, Fut> PostExecuteHook for PostFromFn<F>
where
    F: Fn(PostSnapshot) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<PostAction, HookError>> + Send + 'static,
{
    fn name(&self) -> &str {
        &self.name
    }
    fn after<'a>(
        &'a self,
        result: &'a PostInfo<'a>,
    ) -> BoxFuture<'a, Result<PostAction, HookError>> {
        (self.f)(PostSnapshot {
            call: CallSnapshot::of(result.call),
            value: result.value.clone(),
            content: result.content.to_string(),
        })
        .boxed()
    }
}

/// A post-execute hook from an async closure. An error (or a panic) blocks the result.
pub fn post_hook_from_fn<F, Fut>(name: impl Into<String>, f: F) -> impl PostExecuteHook
where
    F: Fn(PostSnapshot) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<PostAction, HookError>> + Send + 'static,
{
    PostFromFn {
        name: name.into(),
        f,
    }
}

struct GuardFromFn<F> {
    name: String,
    f: F,
}

impl<F, Fut> Guard for GuardFromFn<F>
where
    F: Fn(CallSnapshot) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<GuardDecision, HookError>> + Send + 'static,
{
    fn name(&self) -> &str {
        &self.name
    }
    fn denied_by(&self) -> DeniedBy {
        DeniedBy::Guard
    }
    fn check<'a>(
        &'a self,
        call: &'a CallInfo<'a>,
    ) -> BoxFuture<'a, Result<GuardDecision, HookError>> {
        (self.f)(CallSnapshot::of(call)).boxed()
    }
}

/// A guard from an async closure. An error (or a panic) denies the call.
pub fn guard_from_fn<F, Fut>(name: impl Into<String>, f: F) -> impl Guard
where
    F: Fn(CallSnapshot) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<GuardDecision, HookError>> + Send + 'static,
{
    GuardFromFn {
        name: name.into(),
        f,
    }
}

struct ApproverFromFn<F>(F);

impl<F, Fut> Approver for ApproverFromFn<F>
where
    F: Fn(ApprovalSnapshot) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ApprovalDecision, HookError>> + Send + 'static,
{
    fn approve<'a>(
        &'a self,
        request: &'a ApprovalRequest<'a>,
    ) -> BoxFuture<'a, Result<ApprovalDecision, HookError>> {
        (self.0)(ApprovalSnapshot {
            call: CallSnapshot::of(request.call),
            reasons: request.reasons.to_vec(),
        })
        .boxed()
    }
}

/// An Approver from an async closure (e.g. one that asks a user over the network). An error
/// (or a panic, or the pipeline's approval timeout) refuses the call.
pub fn approver_from_fn<F, Fut>(f: F) -> impl Approver
where
    F: Fn(ApprovalSnapshot) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ApprovalDecision, HookError>> + Send + 'static,
{
    ApproverFromFn(f)
}

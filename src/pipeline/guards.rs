//! Guards only deny: a guard runs after the pre hooks and the Approver, so nothing later can
//! turn a denial back into an allow (monotonic). An error or a panic denies.

use futures::FutureExt;
use futures::future::{BoxFuture, ready};

use super::hooks::CallInfo;
use crate::call::{DeniedBy, HookError};

#[derive(Clone, Debug, PartialEq, Eq)]
/// A guard's verdict.
pub enum GuardDecision {
    /// No objection.
    Pass,
    /// Refuse the call (`DENIED`).
    Deny {
        /// Why; it becomes the `DENIED` error's reason.
        reason: String,
    },
}

/// Checks a call after the pre hooks and the approver; a guard can only deny. An error or a
/// panic denies.
pub trait Guard: Send + Sync + 'static {
    /// The guard's name, for errors and traces.
    fn name(&self) -> &str;
    /// What `details.by` says when this guard denies: `guard`, or `policy` for a policy layer.
    fn denied_by(&self) -> DeniedBy {
        DeniedBy::Guard
    }
    /// Checks one call.
    fn check<'a>(
        &'a self,
        call: &'a CallInfo<'a>,
    ) -> BoxFuture<'a, Result<GuardDecision, HookError>>;
}

struct GuardFn<F> {
    name: String,
    by: DeniedBy,
    f: F,
}

impl<F> Guard for GuardFn<F>
where
    F: Fn(&CallInfo<'_>) -> GuardDecision + Send + Sync + 'static,
{
    fn name(&self) -> &str {
        &self.name
    }
    fn denied_by(&self) -> DeniedBy {
        self.by
    }
    fn check<'a>(
        &'a self,
        call: &'a CallInfo<'a>,
    ) -> BoxFuture<'a, Result<GuardDecision, HookError>> {
        ready(Ok((self.f)(call))).boxed()
    }
}

/// A synchronous guard from a closure.
pub fn guard_fn<F>(name: impl Into<String>, f: F) -> impl Guard
where
    F: Fn(&CallInfo<'_>) -> GuardDecision + Send + Sync + 'static,
{
    GuardFn {
        name: name.into(),
        by: DeniedBy::Guard,
        f,
    }
}

/// A synchronous guard whose denials read `by: "policy"` (a harness's permission policy).
pub fn policy_fn<F>(name: impl Into<String>, f: F) -> impl Guard
where
    F: Fn(&CallInfo<'_>) -> GuardDecision + Send + Sync + 'static,
{
    GuardFn {
        name: name.into(),
        by: DeniedBy::Policy,
        f,
    }
}

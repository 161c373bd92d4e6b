//! Approvals: an `ask` from a pre hook goes to the embedder's [`Approver`], with its own timeout.
//! No Approver, a refusal, an error, a panic or the timeout is a denial by `approver`.

use futures::FutureExt;
use futures::future::{BoxFuture, ready};

use super::hooks::CallInfo;
use crate::call::{Extensions, HookError, ProgramPlan};

/// What the Approver is asked.
#[derive(Debug)]
pub struct ApprovalRequest<'a> {
    /// The call waiting for the answer.
    pub call: &'a CallInfo<'a>,
    /// The reasons of every hook that said `ask`.
    pub reasons: &'a [String],
}

#[derive(Clone, Debug, PartialEq, Eq)]
/// An Approver's answer.
pub enum ApprovalDecision {
    /// Run the call.
    Approve,
    /// Do not run it.
    Refuse {
        /// Why; it becomes the `DENIED` error's reason.
        reason: String,
    },
}

/// Answers the `ask`s of pre-execute hooks (a person at a terminal, an MCP client's user).
/// No Approver, a refusal, an error, a panic or the pipeline's approval timeout denies the call
/// (`DENIED`, `details.by = "approver"`).
pub trait Approver: Send + Sync + 'static {
    /// Decides about one call.
    fn approve<'a>(
        &'a self,
        request: &'a ApprovalRequest<'a>,
    ) -> BoxFuture<'a, Result<ApprovalDecision, HookError>>;

    /// Decides about a whole program before it runs (program approval is on, and its plan
    /// names calls that would ask): `Some(Approve)` answers yes to the `ask`s of every call the
    /// plan covers, `Some(Refuse)` keeps the run from starting. The default, `None`, says this
    /// approver does not judge programs: each `ask` then comes to [`approve`](Self::approve)
    /// when its call is made.
    fn approve_program<'a>(
        &'a self,
        request: &'a ProgramApprovalRequest<'a>,
    ) -> BoxFuture<'a, Result<Option<ApprovalDecision>, HookError>> {
        let _ = request;
        per_call()
    }
}

/// Told around the wait for the Approver, so a code-mode run can stop its deadline clock
/// (time awaiting a human does not count against the run).
pub trait ApprovalObserver: Send + Sync + 'static {
    /// The call started waiting for the approver (a run pauses its deadline here).
    fn waiting_started(&self);
    /// The wait ended, however it ended.
    fn waiting_ended(&self);
}

struct ApproverFn<F>(F);

impl<F> Approver for ApproverFn<F>
where
    F: Fn(&ApprovalRequest<'_>) -> ApprovalDecision + Send + Sync + 'static,
{
    fn approve<'a>(
        &'a self,
        request: &'a ApprovalRequest<'a>,
    ) -> BoxFuture<'a, Result<ApprovalDecision, HookError>> {
        ready(Ok((self.0)(request))).boxed()
    }
}

/// A synchronous Approver from a closure.
pub fn approver_fn<F>(f: F) -> impl Approver
where
    F: Fn(&ApprovalRequest<'_>) -> ApprovalDecision + Send + Sync + 'static,
{
    ApproverFn(f)
}

/// Calls `waiting_ended` even when the wait is cut short (timeout, cancellation, drop).
pub(crate) struct WaitingGuard<'a>(pub(crate) Option<&'a dyn ApprovalObserver>);

impl<'a> WaitingGuard<'a> {
    pub(crate) fn start(observer: Option<&'a dyn ApprovalObserver>) -> Self {
        if let Some(o) = observer {
            o.waiting_started();
        }
        WaitingGuard(observer)
    }
}

impl Drop for WaitingGuard<'_> {
    fn drop(&mut self) {
        if let Some(o) = self.0 {
            o.waiting_ended();
        }
    }
}

/// A tool path of the plan whose calls the pre-execute hooks would put to the approver.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedAsk {
    /// The sandbox path (`write_file`, `github.create_issue`).
    pub path: String,
    /// Why the hooks ask, as the approver would be told per call.
    pub reasons: Vec<String>,
}

/// What the approver is asked before a run: the program, its plan, and the planned calls that
/// would ask.
#[derive(Debug)]
pub struct ProgramApprovalRequest<'a> {
    /// The run's id (`r_...`), also on its audit records.
    pub run_id: &'a str,
    /// The program as the model wrote it.
    pub code: &'a str,
    /// Its static plan.
    pub plan: &'a ProgramPlan,
    /// The planned tool paths that would ask, in plan order; never empty.
    pub asks: &'a [PlannedAsk],
    /// The run's typed data (an MCP approver finds its request here).
    pub extensions: &'a Extensions,
}

/// The no-op default of [`Approver::approve_program`](super::Approver::approve_program).
fn per_call<'a>() -> BoxFuture<'a, Result<Option<ApprovalDecision>, HookError>> {
    ready(Ok(None)).boxed()
}

//! The policy as a pre-execute hook: `allow`, `ask` (to the Approver) or `deny` (`details.by =
//! "policy"`).

use futures::FutureExt;
use futures::future::{BoxFuture, ready};

use super::Policy;
use crate::pipeline::{CallInfo, HookDecision, PreExecuteHook};
use crate::pipeline::{DeniedBy, HookError};

/// [`Policy::decide_call`] for every call (the built-in file tools' paths normalised). Register
/// with `PipelineBuilder::pre_hook`.
#[derive(Clone, Debug)]
pub struct PolicyHook {
    pub(super) policy: Policy,
}

impl PreExecuteHook for PolicyHook {
    fn name(&self) -> &str {
        "policy"
    }

    fn denied_by(&self) -> DeniedBy {
        DeniedBy::Policy
    }

    fn before<'a>(
        &'a self,
        call: &'a CallInfo<'a>,
    ) -> BoxFuture<'a, Result<HookDecision, HookError>> {
        ready(Ok(self.policy.decide_call(call.tool, call.path, call.args))).boxed()
    }
}

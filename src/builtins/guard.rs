//! The path-confinement guard of the built-in file tools.

use std::sync::Arc;

use futures::FutureExt;
use futures::future::{BoxFuture, ready};
use serde_json::Value;

use super::{Root, paths};
use crate::pipeline::{CallInfo, Guard, GuardDecision, HookError};
use crate::tool::ToolDefinition;

/// Denies calls of this catalog's file tools whose path arguments resolve outside the root.
pub(crate) struct PathGuard {
    root: Arc<Root>,
    /// This catalog's file tools (matched by identity) and their path arguments.
    tools: Vec<(ToolDefinition, &'static [&'static str])>,
}

impl PathGuard {
    pub(crate) fn new(root: Arc<Root>, tools: &[ToolDefinition]) -> Self {
        let tools = tools
            .iter()
            .filter_map(|t| Some((t.clone(), t.path_args()?.keys)))
            .collect();
        PathGuard { root, tools }
    }

    fn decide(&self, tool: &ToolDefinition, args: &Value) -> GuardDecision {
        let Some((_, keys)) = self
            .tools
            .iter()
            .find(|(ours, _)| Arc::ptr_eq(&ours.inner, &tool.inner))
        else {
            return GuardDecision::Pass;
        };
        for key in keys.iter() {
            let Some(path) = args.get(*key).and_then(Value::as_str) else {
                continue;
            };
            if let Err(e) = paths::resolve(&self.root.path, path) {
                return GuardDecision::Deny {
                    reason: format!("{}: {e}", tool.name()),
                };
            }
        }
        GuardDecision::Pass
    }
}

impl Guard for PathGuard {
    fn name(&self) -> &str {
        "builtin_path_confinement"
    }

    fn check<'a>(
        &'a self,
        call: &'a CallInfo<'a>,
    ) -> BoxFuture<'a, Result<GuardDecision, HookError>> {
        ready(Ok(self.decide(call.tool, call.args))).boxed()
    }
}

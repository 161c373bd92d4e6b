//! Tool sources of the CLI: `--tools FILE` (mock executors) and `--root DIR` (the built-ins).
//!
//! Until the policy file lands, the built-in default policy is fixed: reads and searches are
//! allowed; `write_file`, `edit_file` and `shell` ask, and since terminal prompts are not
//! implemented yet, every ask is refused (the documented no-terminal fallback).

use std::path::{Path, PathBuf};

use super::tools_file::load_mock_registry;
use crate::Pipeline;
use crate::pipeline::approval::{ApprovalDecision, approver_fn};
use crate::pipeline::hooks::{HookDecision, pre_hook_fn};
use crate::tool::ToolRegistry;
use crate::tools::BuiltinTools;

/// Tools that ask before they run under the default policy.
const ASK_BEFORE: [&str; 3] = ["write_file", "edit_file", "shell"];

pub struct Sources {
    pub registry: ToolRegistry,
    builtins: Option<BuiltinTools>,
}

/// Build the registry from the flags. Errors are input errors, ready to print.
pub fn load(tools: Option<&Path>, root: Option<&PathBuf>) -> Result<Sources, String> {
    let mut registry = match tools {
        Some(path) => load_mock_registry(path)?,
        None => ToolRegistry::new(),
    };
    let builtins = match root {
        Some(root) => {
            let builtins = BuiltinTools::new(root).map_err(|e| format!("--root: {e}"))?;
            builtins
                .register(&mut registry)
                .map_err(|e| format!("--root: the built-in tools clash with --tools: {e}"))?;
            Some(builtins)
        }
        None => None,
    };
    Ok(Sources { registry, builtins })
}

impl Sources {
    /// The pipeline over these sources, with the path guard and the default policy.
    pub fn pipeline(self) -> Pipeline {
        let mut builder = Pipeline::builder(self.registry);
        if let Some(builtins) = &self.builtins {
            builder = builder
                .guard(builtins.guard())
                .pre_hook(pre_hook_fn("default-policy", |call| {
                    if ASK_BEFORE.contains(&call.path) {
                        HookDecision::Ask { reason: format!("`{}` changes files or runs commands", call.path) }
                    } else {
                        HookDecision::Allow
                    }
                }))
                .approver(approver_fn(|request| ApprovalDecision::Refuse {
                    reason: format!(
                        "{}; interactive approval is not available in this build, so asks are refused",
                        request.reasons.join("; ")
                    ),
                }));
        }
        builder.build()
    }
}

//! Tool sources and the policy, shared by `run`, `sdk` and `tools`: `--tools FILE` (mock
//! executors), `--root DIR` (the built-ins) and `--policy FILE` (without it, the built-in
//! [`Policy::default_policy`]).
//!
//! A new source registers its tools into [`Sources::registry`] in [`load`]; the policy's visible
//! filter, hook and the approver apply to every source alike.

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;

use super::tools_file::load_mock_registry;
use crate::PipelineBuilder;
use crate::pipeline::Approver;
use crate::policy::Policy;
use crate::tool::ToolRegistry;
use crate::tools::BuiltinTools;

/// The source and policy flags of `run`, `sdk` and `tools`.
#[derive(Args, Clone, Debug, Default)]
pub struct SourceArgs {
    /// Tool definitions: an MCP tools/list result or OpenAI function definitions (JSON). With
    /// `run`, a mock executor answers them (validated arguments, schema-conforming samples).
    #[arg(long, value_name = "FILE")]
    pub tools: Option<PathBuf>,
    /// Enable the built-in tools (read_file, list_dir, glob, grep, write_file, edit_file,
    /// shell), confined to DIR (shell runs there but is not confined). Default: none.
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Policy file (TOML; see examples/policy.toml): allow/ask/deny rules, visible tools,
    /// limits. Default: the built-in policy (write_file, edit_file and shell ask; the rest is
    /// allowed).
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
}

/// Every tool of every source, and the policy over them.
pub struct Sources {
    /// All tools, hidden ones included; see [`Sources::visible`].
    pub registry: ToolRegistry,
    pub policy: Policy,
    /// Whether the policy came from `--policy` (only then are unmatched globs worth a warning).
    policy_given: bool,
    builtins: Option<BuiltinTools>,
}

/// Loads the policy and builds the registry from the flags. Errors are input errors (exit 2),
/// ready to print.
pub fn load(args: &SourceArgs) -> Result<Sources, String> {
    let policy = match &args.policy {
        Some(path) => Policy::load(path).map_err(|e| e.to_string())?,
        None => Policy::default_policy(),
    };
    let mut registry = match &args.tools {
        Some(path) => load_mock_registry(path)?,
        None => ToolRegistry::new(),
    };
    let builtins = match &args.root {
        Some(root) => {
            let builtins = BuiltinTools::new(root).map_err(|e| format!("--root: {e}"))?;
            builtins
                .register(&mut registry)
                .map_err(|e| format!("--root: the built-in tools clash with --tools: {e}"))?;
            Some(builtins)
        }
        None => None,
    };
    Ok(Sources {
        registry,
        policy,
        policy_given: args.policy.is_some(),
        builtins,
    })
}

impl Sources {
    /// The tools programs see: the registry without the tools the policy hides.
    pub fn visible(&self) -> ToolRegistry {
        self.policy.visible_registry(&self.registry)
    }

    /// Warnings for `--policy` globs that match no loaded tool (printed, never fatal).
    pub fn warnings(&self) -> Vec<String> {
        if self.policy_given {
            self.policy.lint(&self.registry)
        } else {
            Vec::new()
        }
    }

    /// A pipeline builder over the visible tools, with the path guard of the built-ins, the
    /// policy hook and `approver` for its asks (the terminal for `run`, elicitation for MCP).
    pub fn pipeline(self, approver: Arc<dyn Approver>) -> PipelineBuilder {
        let mut builder = PipelineBuilder::new(self.visible())
            .pre_hook(self.policy.pre_hook())
            .shared_approver(approver);
        if let Some(builtins) = &self.builtins {
            builder = builder.guard(builtins.guard());
        }
        builder
    }
}

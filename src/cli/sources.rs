//! Tool sources and the policy, shared by `run`, `sdk`, `tools` and `mcp`: `--tools FILE` (mock
//! executors), `--root DIR` (the built-ins), `--upstream NS=CMD` (upstream MCP servers) and
//! `--policy FILE` (without it, the built-in [`Policy::default_policy`]).
//!
//! A new source registers its tools into [`Sources::registry`] in [`load`]; the policy's visible
//! filter, hook and the approver apply to every source alike (see [`super::wiring`]).

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::tools_file::load_mock_registry;
use codemode::builtins::BuiltinTools;
use codemode::harness::RUN_CODE;
use codemode::mcp::{DEFAULT_STARTUP_TIMEOUT, UpstreamSource, UpstreamSpec, start_upstreams};
use codemode::policy::Policy;
use codemode::tool::ToolRegistry;

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
    /// An upstream MCP server (stdio), started as CMD; its tools become `tools.NS.*`.
    /// Repeatable. CMD is split like a shell would (quotes work) but no shell runs it.
    #[arg(long = "upstream", value_name = "NS=CMD")]
    pub upstreams: Vec<String>,
    /// Pass an environment variable to upstream NS: `NS:KEY` copies codemode's value, `NS:KEY=VALUE`
    /// sets it. Upstreams otherwise get only PATH and HOME. Repeatable.
    #[arg(long = "upstream-env", value_name = "NS:KEY[=VALUE]")]
    pub upstream_env: Vec<String>,
    /// How long an upstream may take to start and list its tools, in milliseconds.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_STARTUP_TIMEOUT.as_millis() as u64, value_parser = clap::value_parser!(u64).range(1..))]
    pub upstream_timeout_ms: u64,
}

/// Every tool of every source, and the policy over them.
pub struct Sources {
    /// All tools, hidden ones included; see [`Sources::visible`].
    pub registry: ToolRegistry,
    pub policy: Policy,
    /// Whether the policy came from `--policy` (only then are unmatched globs worth a warning).
    policy_given: bool,
    builtins: Option<BuiltinTools>,
    /// The tools that never change (mock tools and built-ins), without the upstreams'.
    base: ToolRegistry,
    upstream_specs: Vec<UpstreamSpec>,
    upstream_timeout: Duration,
    /// The upstreams that started (see [`Sources::start_upstreams`]).
    pub upstreams: Vec<UpstreamSource>,
    /// Upstreams that failed to start, with the reason.
    pub unavailable: Vec<String>,
    /// The paths of the mock tools (`--tools`).
    mock_paths: Vec<String>,
    /// Namespaces of started upstreams whose tool list changed.
    pub list_changed: Option<tokio::sync::mpsc::UnboundedReceiver<String>>,
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
    let mock_paths: Vec<String> = registry.tools().into_iter().map(|t| t.path).collect();
    let builtins = match &args.root {
        Some(root) => {
            let builtins = BuiltinTools::new(root).map_err(|e| format!("--root: {e}"))?;
            builtins
                .register(&mut registry)
                .map_err(|e| format!("--root: the built-in tools clash with --tools: {e}"))?;
            // Deny path rules also keep the files out of list_dir, glob and grep.
            policy.hide_denied_files(&registry);
            Some(builtins)
        }
        None => None,
    };
    if let Some(tool) = registry.get(RUN_CODE) {
        return Err(format!(
            "the tool `{}` maps to `run_code`, the name of the Code Mode tool itself; rename it in its source",
            tool.tool.name()
        ));
    }
    let mut upstream_specs = Vec::new();
    for flag in &args.upstreams {
        let spec = UpstreamSpec::parse(flag).map_err(|e| e.to_string())?;
        if upstream_specs
            .iter()
            .any(|s: &UpstreamSpec| s.namespace == spec.namespace)
        {
            return Err(format!(
                "--upstream: the namespace `{}` is given twice; each upstream needs its own",
                spec.namespace
            ));
        }
        if let Some(tool) = registry.get(&spec.namespace) {
            return Err(format!(
                "--upstream {}: the namespace `{}` clashes with the tool `{}` (tools.{} cannot be both); pick another namespace",
                flag,
                spec.namespace,
                tool.tool.name(),
                spec.namespace
            ));
        }
        upstream_specs.push(spec);
    }
    UpstreamSpec::apply_env_flags(&mut upstream_specs, &args.upstream_env)
        .map_err(|e| e.to_string())?;
    Ok(Sources {
        base: registry.clone(),
        registry,
        policy,
        policy_given: args.policy.is_some(),
        builtins,
        upstream_specs,
        upstream_timeout: Duration::from_millis(args.upstream_timeout_ms),
        upstreams: Vec::new(),
        mock_paths,
        list_changed: None,
        unavailable: Vec::new(),
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

    /// The built-in tools, with `--root`.
    pub fn builtins(&self) -> Option<&BuiltinTools> {
        self.builtins.as_ref()
    }

    /// The paths of the mock tools (`--tools`).
    pub fn mock_paths(&self) -> Vec<String> {
        self.mock_paths.clone()
    }

    /// The tools that never change (mock tools and built-ins).
    pub fn base(&self) -> &ToolRegistry {
        &self.base
    }

    pub fn has_upstreams(&self) -> bool {
        !self.upstream_specs.is_empty()
    }

    /// Start the `--upstream` servers (concurrently) and register their tools. An upstream that
    /// fails to start is reported in the returned warnings and left out; the others keep working.
    /// Must run inside the Tokio runtime that will serve the calls (it owns the connections).
    ///
    /// # Errors
    /// A clash between an upstream's tools (two names mapping to one sandbox name).
    pub async fn start_upstreams(&mut self) -> Result<Vec<String>, String> {
        let started = start_upstreams(&self.upstream_specs, self.upstream_timeout).await;
        self.unavailable = started.failures.iter().map(ToString::to_string).collect();
        let warnings = started
            .failures
            .iter()
            .map(|e| format!("{e} (its tools are not available; the other sources are)"))
            .collect();
        for source in &started.sources {
            source
                .upstream
                .register(&source.specs, &mut self.registry)
                .map_err(|e| e.to_string())?;
        }
        self.upstreams = started.sources;
        self.list_changed = Some(started.list_changed);
        Ok(warnings)
    }
}

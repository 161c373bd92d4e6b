//! `codemode mcp`: an MCP server over stdio exposing `run_code` (and, with `--expose-direct`, the
//! visible tools), over the built-ins and upstream MCP servers, behind the policy.

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;

use super::run::{open_logs, run_limits};
use super::sdk::{load_sources, runtime};
use super::sources::SourceArgs;
use super::{EXIT_FAILED, EXIT_USAGE};
use crate::codemode::discovery::CATALOG_NAMESPACE;
use crate::mcp::{
    CatalogParts, CodemodeServer, Discovery, OuterFactory, PipelineFactory, serve_stdio,
};
use crate::pipeline::{CallLimits, EventSink, Pipeline};
use crate::sandbox::{Sandbox, SandboxConfig};

#[derive(Args)]
#[command(
    after_help = "Examples:\n  codemode mcp --root .\n  codemode mcp --root . --upstream 'memory=npx -y @modelcontextprotocol/server-memory'\n  codemode mcp --upstream 'gh=github-mcp-server stdio' --upstream-env gh:GITHUB_TOKEN --policy policy.toml\n\nAn MCP client configuration (e.g. Claude Desktop, Cursor):\n  {\"mcpServers\": {\"codemode\": {\"command\": \"codemode\", \"args\": [\"mcp\", \"--root\", \"/path/to/repo\"]}}}\n\nCalls the policy asks about are put to the user through the client's elicitation; clients\nwithout elicitation get them refused."
)]
pub struct McpArgs {
    #[command(flatten)]
    sources: SourceArgs,
    /// Also expose the visible tools directly, beside run_code (hybrid mode).
    #[arg(long)]
    expose_direct: bool,
    /// Progressive discovery: the run_code description shows only `catalog.search` and
    /// `catalog.describe` (and a count of tools per namespace) instead of the whole SDK. `auto`
    /// turns it on when the whole SDK would exceed 64 KiB.
    #[arg(long, value_enum, default_value_t = Discovery::Auto)]
    discovery: Discovery,
    /// Wall-clock deadline of each run, in milliseconds [default: the policy's limits.timeout_ms,
    /// else 30000].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    timeout_ms: Option<u64>,
    /// Heap limit of each run's isolate, in MiB [default: the policy's limits.heap_mb, else 256].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(8..=16384))]
    heap_mb: Option<u64>,
    /// Append the durable `tool/result` events (each run_code call with its outcome, and direct
    /// calls) to FILE as JSON lines.
    #[arg(long, value_name = "FILE")]
    session_log: Option<PathBuf>,
    /// Append one audit record per nested tool call (tool, SHA-256 of the arguments, outcome,
    /// timing; never values) to FILE as JSON lines.
    #[arg(long, value_name = "FILE")]
    audit_log: Option<PathBuf>,
}

pub fn mcp(args: McpArgs) -> i32 {
    let Some(runtime) = runtime("mcp") else {
        return EXIT_FAILED;
    };
    if args.discovery != Discovery::Off
        && let Some(flag) = args
            .sources
            .upstreams
            .iter()
            .find(|flag| flag.split('=').next().map(str::trim) == Some(CATALOG_NAMESPACE))
    {
        eprintln!(
            "codemode mcp: --upstream {flag}: the namespace `{CATALOG_NAMESPACE}` holds the discovery tools (catalog.search, catalog.describe); pick another namespace, or pass --discovery off"
        );
        return EXIT_USAGE;
    }
    let Some(mut sources) = load_sources("mcp", &args.sources, &runtime) else {
        return EXIT_USAGE;
    };
    let limits = run_limits(sources.policy.limits(), args.timeout_ms, args.heap_mb);
    let (session_log, audit_log) = match open_logs(&args.session_log, &args.audit_log) {
        Ok(logs) => logs,
        Err(message) => {
            eprintln!("codemode mcp: {message}");
            return EXIT_USAGE;
        }
    };
    let served = runtime.block_on(async {
        let sandbox = Sandbox::new(SandboxConfig {
            workers: 2,
            limits: limits.clone(),
            ..SandboxConfig::default()
        })
        .map_err(|e| e.to_string())?;
        let recipe = sources.recipe();
        let audit: Option<Arc<dyn EventSink>> =
            audit_log.map(|log| Arc::new(log) as Arc<dyn EventSink>);
        let call_limits = CallLimits {
            max_arg_bytes: limits.call_arg_bytes as u64,
            max_result_bytes: limits.call_result_bytes as u64,
        };
        let inner_log = session_log.clone();
        let factory: PipelineFactory = Arc::new(move |registry, approver| {
            let mut builder = recipe.builder(registry, approver).limits(call_limits);
            if let Some(audit) = &audit {
                builder = builder.shared_observer(Arc::clone(audit));
            }
            // Direct calls (`--expose-direct`) are durable; nested calls never are.
            if let Some(log) = &inner_log {
                builder = builder.session_log(Arc::clone(log));
            }
            builder
        });
        let outer: OuterFactory = Arc::new(move |registry| {
            let mut builder = Pipeline::builder(registry).limits(CallLimits {
                max_arg_bytes: u64::MAX,
                max_result_bytes: u64::MAX,
            });
            if let Some(log) = &session_log {
                builder = builder.session_log(Arc::clone(log));
            }
            builder
        });
        let policy = sources.policy.clone();
        let parts = CatalogParts {
            base: sources.base().clone(),
            upstreams: std::mem::take(&mut sources.upstreams),
            factory,
            outer,
            visible: Arc::new(move |path: &str| policy.is_visible(path)),
            sandbox,
            limits,
            expose_direct: args.expose_direct,
            discovery: args.discovery,
        };
        let server = CodemodeServer::new(parts, sources.unavailable.clone())?;
        eprintln!(
            "codemode mcp: serving {} on stdio",
            server.tool_names().join(", ")
        );
        let list_changed = sources
            .list_changed
            .take()
            .unwrap_or_else(|| tokio::sync::mpsc::unbounded_channel().1);
        serve_stdio(server, list_changed).await
    });
    // Upstream processes are killed with their connections; don't wait on stray tasks.
    runtime.shutdown_background();
    match served {
        Ok(()) => 0,
        Err(message) => {
            eprintln!("codemode mcp: {message}");
            EXIT_FAILED
        }
    }
}

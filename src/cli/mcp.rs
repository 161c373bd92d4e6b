//! `codemode mcp`: an MCP server over stdio exposing `run_code` (and, with `--expose-direct`, the
//! visible tools), over the built-ins and upstream MCP servers, behind the policy.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::sdk::{load_sources, runtime};
use super::sources::SourceArgs;
use super::types::{TypesCacheArgs, save_types};
use super::wiring::{self, IsolationFlag, Logs, ProgramApprovalFlag, run_limits};
use super::{EXIT_FAILED, EXIT_USAGE};
use codemode::harness::CATALOG_NAMESPACE;
use codemode::harness::{AUTO_DISCOVERY_BYTES, Discovery};
use codemode::mcp::{CatalogParts, CodemodeServer, serve_stdio};

/// `--discovery`: whether the `run_code` description embeds the whole SDK.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum DiscoveryFlag {
    /// Discovery when the whole SDK would exceed 64 KiB.
    Auto,
    /// Always discovery.
    On,
    /// Never: the whole SDK.
    Off,
}

impl From<DiscoveryFlag> for Discovery {
    fn from(flag: DiscoveryFlag) -> Discovery {
        match flag {
            DiscoveryFlag::Auto => Discovery::Auto,
            DiscoveryFlag::On => Discovery::On,
            DiscoveryFlag::Off => Discovery::Off,
        }
    }
}

const _: () = assert!(
    AUTO_DISCOVERY_BYTES == 64 * 1024,
    "the --discovery help says 64 KiB"
);

#[derive(Args)]
#[command(
    after_help = "Examples:\n  codemode mcp --root .\n  codemode mcp --root . --upstream 'memory=npx -y @modelcontextprotocol/server-memory'\n  codemode mcp --upstream 'gh=github-mcp-server stdio' --upstream-env gh:GITHUB_TOKEN --policy policy.toml\n\nAn MCP client configuration (e.g. Claude Desktop, Cursor):\n  {\"mcpServers\": {\"codemode\": {\"command\": \"codemode\", \"args\": [\"mcp\", \"--root\", \"/path/to/repo\"]}}}\n\nCalls the policy asks about are put to the user through the client's elicitation; clients\nwithout elicitation get them refused."
)]
pub struct McpArgs {
    #[command(flatten)]
    sources: SourceArgs,
    #[command(flatten)]
    types: TypesCacheArgs,
    /// Also expose the visible tools directly, beside run_code (hybrid mode).
    #[arg(long)]
    expose_direct: bool,
    /// Where programs run: `process` (worker processes of this binary; a crash ends only its
    /// run, and workers are recycled) or `thread` (engine threads in the server process).
    #[arg(long, value_enum, default_value_t = IsolationFlag::Process)]
    isolation: IsolationFlag,
    /// Programs running at once (sandbox workers) [default: the policy's limits.workers, else 2].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=256))]
    workers: Option<u64>,
    /// Extra worker processes started while runs queue and every worker's run only waits on tools
    /// or an approver; they stop when the queue is empty [default: the policy's
    /// limits.waiting_workers, else 16]. Process isolation only.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(0..=1024))]
    waiting_workers: Option<u64>,
    /// Progressive discovery: the run_code description shows only `catalog.search` and
    /// `catalog.describe` (and a count of tools per namespace) instead of the whole SDK. `auto`
    /// turns it on when the whole SDK would exceed 64 KiB.
    #[arg(long, value_enum, default_value_t = DiscoveryFlag::Auto)]
    discovery: DiscoveryFlag,
    /// Wall-clock deadline of each run, in milliseconds [default: the policy's limits.timeout_ms,
    /// else 30000].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    timeout_ms: Option<u64>,
    /// Heap limit of each run's isolate, in MiB [default: the policy's limits.heap_mb, else 256].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(8..=16384))]
    heap_mb: Option<u64>,
    /// Put each program whose planned calls include one the policy asks about to the approver
    /// once, before it runs, with its source and plan; an approval answers the asks of the
    /// planned tools (calls the plan cannot see still ask; denials stay) [default: the
    /// policy's program_approval, else off].
    #[arg(long, value_enum, value_name = "MODE")]
    program_approval: Option<ProgramApprovalFlag>,
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
    if args.discovery != DiscoveryFlag::Off
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
    let types = match args.types.open("mcp") {
        Ok(types) => types,
        Err(message) => {
            eprintln!("codemode mcp: {message}");
            return EXIT_USAGE;
        }
    };
    // A server runs many programs: its isolates are restored from the startup snapshot from the
    // first request on (made while the client connects), whatever the isolation.
    codemode::sandbox::make_startup_snapshot_in_background();
    let limits = run_limits(sources.policy.limits(), args.timeout_ms, args.heap_mb);
    let policy_limits = sources.policy.limits();
    let workers = args.workers.or(policy_limits.workers).unwrap_or(2) as usize;
    let waiting_workers = args
        .waiting_workers
        .or(policy_limits.waiting_workers)
        .unwrap_or(16) as usize;
    let logs = match Logs::open(&args.session_log, &args.audit_log) {
        Ok(logs) => logs,
        Err(message) => {
            eprintln!("codemode mcp: {message}");
            return EXIT_USAGE;
        }
    };
    let served = runtime.block_on(async {
        let policy = sources.policy.clone();
        let parts = CatalogParts {
            base: sources.base().clone(),
            upstreams: std::mem::take(&mut sources.upstreams),
            harness: wiring::harness(&sources, limits, logs, args.program_approval, types.clone())
                .workers(workers)
                .isolation(args.isolation.isolation(waiting_workers))
                .discovery(args.discovery.into()),
            visible: std::sync::Arc::new(move |path: &str| policy.is_visible(path)),
            expose_direct: args.expose_direct,
        };
        let server =
            CodemodeServer::new(parts, sources.unavailable.clone()).map_err(|e| e.to_string())?;
        eprintln!(
            "codemode mcp: serving {} on stdio",
            server.tool_names().join(", ")
        );
        let list_changed = sources
            .list_changed
            .take()
            .unwrap_or_else(|| tokio::sync::mpsc::unbounded_channel().1);
        serve_stdio(server, list_changed)
            .await
            .map_err(|e| e.to_string())
    });
    // Upstream processes are killed with their connections; don't wait on stray tasks.
    runtime.shutdown_background();
    save_types("mcp", types.as_ref());
    match served {
        Ok(()) => 0,
        Err(message) => {
            eprintln!("codemode mcp: {message}");
            EXIT_FAILED
        }
    }
}

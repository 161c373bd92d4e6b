//! `codemode sdk` and `codemode tools`: the SDK and the list of visible tools.

use std::path::PathBuf;

use clap::Args;

use super::output;
use super::sources::{self, SourceArgs, Sources};
use super::types::TypesCacheArgs;
use super::{EXIT_FAILED, EXIT_USAGE};
use codemode::harness::{sdk_with_types, visible_tools};

#[derive(Args)]
#[command(
    after_help = "Examples:\n  codemode sdk --tools tools.json\n  codemode sdk --tools tools.json --out tools.d.ts\n  codemode sdk --root . --policy examples/policy.toml"
)]
pub struct SdkArgs {
    #[command(flatten)]
    sources: SourceArgs,
    #[command(flatten)]
    types: TypesCacheArgs,
    /// Write the SDK here instead of stdout.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    #[command(flatten)]
    missing: MissingUpstreams,
}

/// An SDK or a tool list without an upstream's tools would look complete to a script, so an
/// upstream that does not start is an error unless this flag says otherwise.
#[derive(Args)]
struct MissingUpstreams {
    /// Print the SDK (or the list) of the sources that started when an upstream fails to start,
    /// instead of failing with exit code 2.
    #[arg(long)]
    allow_missing_upstreams: bool,
}

impl MissingUpstreams {
    /// Whether to go on: `false` after printing the error.
    fn check(&self, command: &str, sources: &Sources) -> bool {
        if self.allow_missing_upstreams || sources.unavailable.is_empty() {
            return true;
        }
        eprintln!(
            "codemode {command}: {} upstream(s) did not start, so their tools would be missing: {}. Fix the upstream, or pass --allow-missing-upstreams to go on without its tools",
            sources.unavailable.len(),
            sources.unavailable.join("; ")
        );
        false
    }
}

#[derive(Args)]
#[command(
    after_help = "Examples:\n  codemode tools --tools tools.json\n  codemode tools --root . --policy examples/policy.toml"
)]
pub struct ToolsArgs {
    #[command(flatten)]
    sources: SourceArgs,
    #[command(flatten)]
    missing: MissingUpstreams,
}

/// Loads the sources (starting the upstreams on `runtime`, which must outlive their use) and
/// prints warnings; `None` after printing an input error.
pub(super) fn load_sources(
    command: &str,
    args: &SourceArgs,
    runtime: &tokio::runtime::Runtime,
) -> Option<Sources> {
    let loaded = sources::load(args).and_then(|mut sources| {
        if sources.has_upstreams() {
            for warning in runtime.block_on(sources.start_upstreams())? {
                eprintln!("codemode {command}: warning: {warning}");
            }
        }
        Ok(sources)
    });
    match loaded {
        Ok(sources) => {
            for warning in sources.warnings() {
                eprintln!("codemode {command}: warning: {warning}");
            }
            Some(sources)
        }
        Err(message) => {
            eprintln!("codemode {command}: {message}");
            None
        }
    }
}

/// The async runtime of a command: one worker thread is plenty (runs execute on sandbox threads).
pub(super) fn runtime(command: &str) -> Option<tokio::runtime::Runtime> {
    match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
    {
        Ok(runtime) => Some(runtime),
        Err(e) => {
            eprintln!("codemode {command}: cannot start the async runtime: {e}");
            None
        }
    }
}

pub fn sdk(args: SdkArgs) -> i32 {
    let Some(runtime) = runtime("sdk") else {
        return EXIT_FAILED;
    };
    let Some(sources) = load_sources("sdk", &args.sources, &runtime) else {
        return EXIT_USAGE;
    };
    if !args.missing.check("sdk", &sources) {
        return EXIT_USAGE;
    }
    let types = match args.types.open("sdk") {
        Ok(types) => types,
        Err(message) => {
            eprintln!("codemode sdk: {message}");
            return EXIT_USAGE;
        }
    };
    let text = sdk_with_types(&sources.visible(), types.as_ref());
    match args.out {
        Some(path) => match std::fs::write(&path, text) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("codemode sdk: cannot write {}: {e}", path.display());
                EXIT_FAILED
            }
        },
        None => match output::emit("sdk", &text) {
            Ok(()) => 0,
            Err(code) => code,
        },
    }
}

pub fn tools(args: ToolsArgs) -> i32 {
    let Some(runtime) = runtime("tools") else {
        return EXIT_FAILED;
    };
    let Some(sources) = load_sources("tools", &args.sources, &runtime) else {
        return EXIT_USAGE;
    };
    if !args.missing.check("tools", &sources) {
        return EXIT_USAGE;
    }
    let tools = visible_tools(&sources.visible());
    let width = tools.iter().map(|t| t.path.len() + 6).max().unwrap_or(0);
    let mut listing = String::new();
    for tool in tools {
        let sandbox = format!("tools.{}", tool.path);
        let original = if tool.name != tool.sandbox_name {
            format!(" (source name: {})", tool.name)
        } else {
            String::new()
        };
        let summary = tool.description.lines().next().unwrap_or_default();
        listing.push_str(&format!("{sandbox:width$}  {summary}{original}\n"));
    }
    match output::emit("tools", &listing) {
        Ok(()) => 0,
        Err(code) => code,
    }
}

//! `codemode sdk` and `codemode tools`: the SDK and the list of visible tools.

use std::path::PathBuf;

use clap::Args;

use super::sources;
use super::{EXIT_FAILED, EXIT_USAGE};
use crate::codemode::{sdk_for, visible_tools};

#[derive(Args)]
#[command(
    after_help = "Examples:\n  codemode sdk --tools tools.json\n  codemode sdk --tools tools.json --out tools.d.ts"
)]
pub struct SdkArgs {
    /// Tool definitions: an MCP tools/list result or OpenAI function definitions (JSON).
    #[arg(long, value_name = "FILE")]
    tools: Option<PathBuf>,
    /// Include the built-in tools (confined to DIR).
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
    /// Write the SDK here instead of stdout.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

#[derive(Args)]
#[command(after_help = "Examples:\n  codemode tools --tools tools.json")]
pub struct ToolsArgs {
    /// Tool definitions: an MCP tools/list result or OpenAI function definitions (JSON).
    #[arg(long, value_name = "FILE")]
    tools: Option<PathBuf>,
    /// Include the built-in tools (confined to DIR).
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
}

pub fn sdk(args: SdkArgs) -> i32 {
    let registry = match sources::load(args.tools.as_deref(), args.root.as_ref()) {
        Ok(sources) => sources.registry,
        Err(message) => {
            eprintln!("codemode sdk: {message}");
            return EXIT_USAGE;
        }
    };
    let text = sdk_for(&registry);
    match args.out {
        Some(path) => match std::fs::write(&path, text) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("codemode sdk: cannot write {}: {e}", path.display());
                EXIT_FAILED
            }
        },
        None => {
            print!("{text}");
            0
        }
    }
}

pub fn tools(args: ToolsArgs) -> i32 {
    let registry = match sources::load(args.tools.as_deref(), args.root.as_ref()) {
        Ok(sources) => sources.registry,
        Err(message) => {
            eprintln!("codemode tools: {message}");
            return EXIT_USAGE;
        }
    };
    let tools = visible_tools(&registry);
    let width = tools.iter().map(|t| t.path.len() + 6).max().unwrap_or(0);
    for tool in tools {
        let sandbox = format!("tools.{}", tool.path);
        let original = if tool.name != tool.sandbox_name {
            format!(" (source name: {})", tool.name)
        } else {
            String::new()
        };
        let summary = tool.description.lines().next().unwrap_or_default();
        println!("{sandbox:width$}  {summary}{original}");
    }
    0
}

//! The `codemode` command line (DESIGN.md §8). Exit codes: 0 ok, 1 the run or operation failed,
//! 2 usage or input error.

mod mcp;
mod output;
mod progress;
mod run;
mod sdk;
mod sources;
mod tools_file;
mod wiring;

use clap::{Parser, Subcommand};

/// Exit code when the run or operation failed.
pub const EXIT_FAILED: i32 = 1;
/// Exit code for usage and input errors.
pub const EXIT_USAGE: i32 = 2;

#[derive(Parser)]
#[command(
    name = "codemode",
    version,
    about = "Run model-written TypeScript against a typed tools SDK in a sandboxed isolate",
    after_help = "Exit codes: 0 ok, 1 the run failed, 2 usage or input error."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a program in the sandbox (optionally against mock tools).
    Run(run::RunArgs),
    /// Print the TypeScript SDK (tools.d.ts) of the visible tools.
    Sdk(sdk::SdkArgs),
    /// List the visible tools with their sandbox names.
    Tools(sdk::ToolsArgs),
    /// Serve run_code as an MCP server over stdio.
    Mcp(mcp::McpArgs),
}

/// Parse the arguments, run the command, and return the process exit code.
pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { EXIT_USAGE } else { 0 };
            let _ = e.print();
            return code;
        }
    };
    match cli.command {
        Command::Run(args) => run::run(args),
        Command::Sdk(args) => sdk::sdk(args),
        Command::Tools(args) => sdk::tools(args),
        Command::Mcp(args) => mcp::mcp(args),
    }
}

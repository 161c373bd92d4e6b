//! The `codemode` command line (DESIGN.md §8). Exit codes: 0 ok, 1 the run or operation failed,
//! 2 usage or input error.

mod bench;
mod mcp;
mod output;
mod progress;
mod run;
mod sdk;
mod sources;
mod telemetry;
mod tools_file;
mod types;
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
    /// What to log on stderr: a level (`error`, `warn`, `info`, `debug`, `trace`) or a RUST_LOG
    /// directive list (`codemode=debug,rmcp=info`). Beats RUST_LOG [default: RUST_LOG, else
    /// warn].
    #[arg(long, global = true, value_name = "LEVEL", value_parser = telemetry::parse_log_level)]
    log_level: Option<String>,
    /// Export codemode's spans (each tool call as `execute_tool {tool}`, each run as
    /// `code_mode_run`) over OTLP/HTTP with JSON bodies to the collector at URL (e.g.
    /// http://localhost:4318; `/v1/traces` is appended unless the URL ends with it).
    #[arg(long, global = true, value_name = "URL")]
    otlp_endpoint: Option<String>,
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
    /// Measure code mode against direct tool calls on scenario files.
    Bench(bench::BenchArgs),
    /// The output types learned from results (show them, or learn from sample calls).
    Types(types::TypesArgs),
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
    // One TLS crypto provider for every HTTP client of the process (reqwest is built without
    // one of its own: `--otlp-endpoint`, `bench --live`).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let telemetry = match telemetry::install(cli.log_level.as_deref(), cli.otlp_endpoint.as_deref())
    {
        Ok(telemetry) => telemetry,
        Err(message) => {
            eprintln!("codemode: {message}");
            return EXIT_USAGE;
        }
    };
    let code = match cli.command {
        Command::Run(args) => run::run(args),
        Command::Sdk(args) => sdk::sdk(args),
        Command::Tools(args) => sdk::tools(args),
        Command::Mcp(args) => mcp::mcp(args),
        Command::Bench(args) => bench::bench(args),
        Command::Types(args) => types::types(args),
    };
    // `main` ends the process with `std::process::exit`, which would drop buffered spans.
    telemetry.shutdown();
    code
}

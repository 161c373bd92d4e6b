//! `codemode run FILE`: run a program in the sandbox and print its outcome.

use std::io::Read;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::sources;
use super::{EXIT_FAILED, EXIT_USAGE};
use crate::codemode::CodeMode;
use crate::sandbox::{
    Limits, MIB, RunError, RunOptions, RunOutcome, RunStatus, Sandbox, SandboxConfig, render,
    transpile,
};

#[derive(Args)]
#[command(
    after_help = "Examples:\n  codemode run examples/demo.ts\n  echo 'return 6 * 7' | codemode run - --json\n  codemode run script.ts --timeout-ms 2000 --heap-mb 64\n  codemode run script.ts --tools tools.json   # against mock tools\n  codemode run examples/repo_tour.ts --root .  # with the built-in tools"
)]
pub struct RunArgs {
    /// The program (TypeScript or JavaScript, the body of an async function); `-` reads stdin.
    file: PathBuf,
    /// Print the RunOutcome as JSON instead of the human rendering.
    #[arg(long)]
    json: bool,
    /// Wall-clock deadline of the run, in milliseconds.
    #[arg(long, value_name = "N", default_value_t = 30_000, value_parser = clap::value_parser!(u64).range(1..))]
    timeout_ms: u64,
    /// Heap limit of the isolate, in MiB.
    #[arg(long, value_name = "N", default_value_t = 256, value_parser = clap::value_parser!(u64).range(8..=16384))]
    heap_mb: u64,
    /// Tools for the program: an MCP tools/list result or OpenAI function definitions (JSON),
    /// answered by a mock executor (validated arguments, schema-conforming sample values).
    #[arg(long, value_name = "FILE")]
    tools: Option<PathBuf>,
    /// Enable the built-in tools (read_file, list_dir, glob, grep, write_file, edit_file, shell),
    /// confined to DIR. Writes and shell ask first, and asks are refused in this build.
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
}

pub fn run(args: RunArgs) -> i32 {
    let limits = Limits::default()
        .with_deadline(Duration::from_millis(args.timeout_ms))
        .with_heap_bytes(args.heap_mb as usize * MIB);
    let source = match read_program(&args.file, limits.program_bytes) {
        Ok(source) => source,
        Err(message) => {
            eprintln!("codemode run: {message}");
            return EXIT_USAGE;
        }
    };
    // A syntax error is an input error (exit 2), reported with the model's line and column.
    if let Err(e) = transpile(&source) {
        if args.json {
            let mut error = RunError::new("SyntaxError", e.message.clone());
            error.line = Some(e.line);
            error.column = Some(e.column);
            println!("{}", RunOutcome::failed(RunStatus::Error, error).to_json());
        } else {
            eprintln!(
                "codemode run: {}: syntax error at line {}, column {}: {}",
                args.file.display(),
                e.line,
                e.column,
                e.message
            );
        }
        return EXIT_USAGE;
    }
    let with_tools = args.tools.is_some() || args.root.is_some();
    let sources = match sources::load(args.tools.as_deref(), args.root.as_ref()) {
        Ok(sources) => with_tools.then_some(sources),
        Err(message) => {
            eprintln!("codemode run: {message}");
            return EXIT_USAGE;
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("codemode run: cannot start the async runtime: {e}");
            return EXIT_FAILED;
        }
    };
    let outcome = runtime.block_on(async {
        let sandbox = Sandbox::new(SandboxConfig {
            workers: 1,
            limits: limits.clone(),
            ..SandboxConfig::default()
        })?;
        let cancel = tokio_util::sync::CancellationToken::new();
        let on_ctrl_c = cancel.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                on_ctrl_c.cancel();
            }
        });
        let outcome = match sources {
            // Every `tools.x(args)` goes through the full pipeline.
            Some(sources) => {
                let code_mode = CodeMode::new(sandbox, limits.clone());
                code_mode.attach(sources.pipeline());
                code_mode.run(&source, cancel).await
            }
            None => {
                sandbox
                    .run_with(&source, RunOptions::new(limits.clone()).with_cancel(cancel))
                    .await
            }
        };
        Ok::<_, crate::sandbox::SandboxStartError>(outcome)
    });
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(e) => {
            eprintln!("codemode run: {e}");
            return EXIT_FAILED;
        }
    };
    if args.json {
        println!("{}", outcome.to_json());
    } else {
        print!("{}", render(&outcome, usize::MAX));
        if outcome.stats.tool_calls > 0 {
            let stats = &outcome.stats;
            eprintln!(
                "[{} tool calls in {:.1} ms; {} bytes kept in the sandbox, {} bytes returned]",
                stats.tool_calls, stats.wall_ms, stats.bytes_kept_in_sandbox, stats.bytes_returned
            );
        }
    }
    if outcome.is_ok() { 0 } else { EXIT_FAILED }
}

/// Read the program, with the input errors of the CLI contract: missing file, not UTF-8, too
/// large, empty.
fn read_program(path: &PathBuf, max_bytes: usize) -> Result<String, String> {
    let mut bytes = Vec::new();
    let name = if path.as_os_str() == "-" {
        std::io::stdin()
            .take(max_bytes as u64 + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| format!("cannot read the program from stdin: {e}"))?;
        "stdin".to_string()
    } else {
        let file = std::fs::File::open(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => format!("{}: no such file", path.display()),
            _ => format!("{}: cannot open: {e}", path.display()),
        })?;
        file.take(max_bytes as u64 + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
        path.display().to_string()
    };
    if bytes.len() > max_bytes {
        return Err(format!(
            "{name}: the program is larger than the limit of {max_bytes} bytes"
        ));
    }
    let source = String::from_utf8(bytes).map_err(|e| {
        format!(
            "{name}: the program is not valid UTF-8 (first bad byte at offset {})",
            e.utf8_error().valid_up_to()
        )
    })?;
    if source.trim().is_empty() {
        return Err(format!("{name}: the program is empty"));
    }
    Ok(source)
}

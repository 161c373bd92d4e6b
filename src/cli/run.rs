//! `codemode run FILE`: run a program in the sandbox and print its outcome.
//!
//! The program runs as one `run_code` call of an outer pipeline (so `--session-log` gets the
//! durable `tool/result` of DESIGN.md §8); its `tools.x(args)` calls go through the inner
//! pipeline over the visible tools, with the policy, the terminal approver, the audit log and
//! the live progress display.

use std::io::{IsTerminal, Read};
use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;

use super::output;
use super::progress::{ProgressDisplay, ProgressSink};
use super::sdk::{load_sources, runtime};
use super::sources::SourceArgs;
use super::types::{TypesCacheArgs, save_types};
use super::wiring::{self, IsolationFlag, Logs, ProgramApprovalFlag, run_limits};
use super::{EXIT_FAILED, EXIT_USAGE};
use codemode::pipeline::Approver;
use codemode::policy::TerminalApprover;
use codemode::sandbox::{RunError, RunOutcome, RunStatus, render, transpile};

#[derive(Args)]
#[command(
    after_help = "Examples:\n  codemode run examples/demo.ts\n  echo 'return 6 * 7' | codemode run - --json\n  codemode run script.ts --timeout-ms 2000 --heap-mb 64\n  codemode run script.ts --tools tools.json   # against mock tools\n  codemode run examples/repo_tour.ts --root .  # with the built-in tools\n  codemode run script.ts --root . --policy examples/policy.toml --audit-log audit.jsonl\n\nCalls the policy asks about are prompted on the terminal (/dev/tty); without a terminal they\nare refused. Flags beat the policy's [limits], which beat the defaults."
)]
pub struct RunArgs {
    /// The program (TypeScript or JavaScript, the body of an async function); `-` reads stdin.
    file: PathBuf,
    /// Print the RunOutcome as JSON instead of the human rendering.
    #[arg(long)]
    json: bool,
    /// Print the whole human rendering; by default it is cut at the model's output budget
    /// (limits.output_bytes, 40000) with a `[... N bytes truncated]` marker, exactly as a model
    /// would see it.
    #[arg(long, conflicts_with = "json")]
    full_output: bool,
    /// Where the program runs: `thread` (an engine thread of this process) or `process` (a
    /// worker process of this binary; a crash gives status `crashed`).
    #[arg(long, value_enum, default_value_t = IsolationFlag::Thread)]
    isolation: IsolationFlag,
    /// Wall-clock deadline of the run, in milliseconds [default: the policy's limits.timeout_ms,
    /// else 30000].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    timeout_ms: Option<u64>,
    /// Heap limit of the isolate, in MiB [default: the policy's limits.heap_mb, else 256].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(8..=16384))]
    heap_mb: Option<u64>,
    /// Put each program whose planned calls include one the policy asks about to the approver
    /// once, before it runs, with its source and plan; an approval answers the asks of the
    /// planned tools (calls the plan cannot see still ask; denials stay) [default: the
    /// policy's program_approval, else off].
    #[arg(long, value_enum, value_name = "MODE")]
    program_approval: Option<ProgramApprovalFlag>,
    #[command(flatten)]
    sources: SourceArgs,
    #[command(flatten)]
    types: TypesCacheArgs,
    /// Append the durable `tool/result` event of the run (the `run_code` call, with its outcome)
    /// to FILE as a JSON line.
    #[arg(long, value_name = "FILE")]
    session_log: Option<PathBuf>,
    /// Append one audit record per nested tool call (tool, SHA-256 of the arguments, outcome,
    /// timing; never values) to FILE as JSON lines.
    #[arg(long, value_name = "FILE")]
    audit_log: Option<PathBuf>,
}

pub fn run(args: RunArgs) -> i32 {
    let Some(runtime) = runtime("run") else {
        return EXIT_FAILED;
    };
    let Some(sources) = load_sources("run", &args.sources, &runtime) else {
        return EXIT_USAGE;
    };
    let types = match args.types.open("run") {
        Ok(types) => types,
        Err(message) => {
            eprintln!("codemode run: {message}");
            return EXIT_USAGE;
        }
    };
    let limits = run_limits(sources.policy.limits(), args.timeout_ms, args.heap_mb);
    let output_bytes = limits.output_bytes;
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
            let json = RunOutcome::failed(RunStatus::Error, error).to_json();
            if let Err(code) = output::emit("run", &format!("{json}\n")) {
                return code;
            }
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
    let logs = match Logs::open(&args.session_log, &args.audit_log) {
        Ok(logs) => logs,
        Err(message) => {
            eprintln!("codemode run: {message}");
            return EXIT_USAGE;
        }
    };
    // Kept to ask, after the run, whether every record reached its file.
    let watched_logs = logs.clone();
    let outcome = runtime.block_on(async {
        let approver = Arc::new(TerminalApprover::new());
        let screen = approver.screen_lock();
        let progress = ProgressSink::default();
        let observed = progress.clone();
        let harness = wiring::harness(&sources, limits, logs, args.program_approval, types.clone())
            .workers(1)
            // One run: no other run could wait behind it.
            .isolation(args.isolation.isolation(0))
            .inner(move |pipeline| {
                let approver: Arc<dyn Approver> = approver.clone();
                pipeline
                    .shared_approver(approver)
                    .observer(observed.clone())
            })
            .build(sources.visible())
            .map_err(|e| e.to_string())?;
        // Ctrl-C stops the run, which still returns its outcome (status `cancelled`).
        let code_mode = harness.code_mode().clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                code_mode.stop_all();
            }
        });
        let display = std::io::stderr()
            .is_terminal()
            .then(|| ProgressDisplay::start(progress, screen));
        let outcome = harness.run(&source).await;
        if let Some(display) = display {
            display.finish();
        }
        outcome.map_err(|e| e.to_string())
    });
    // A prompt still waiting on the terminal must not keep the process alive.
    runtime.shutdown_background();
    // The run's own save is in the background; the process is about to end.
    save_types("run", types.as_ref());
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(message) => {
            eprintln!("codemode run: {message}");
            return EXIT_FAILED;
        }
    };
    if args.json {
        if let Err(code) = output::emit("run", &format!("{}\n", outcome.to_json())) {
            return code;
        }
    } else {
        let budget = if args.full_output {
            usize::MAX
        } else {
            output_bytes
        };
        if let Err(code) = output::emit("run", &render(&outcome, budget)) {
            return code;
        }
        if outcome.stats.tool_calls > 0 {
            eprintln!("{}", summary_line(&outcome));
        }
    }
    // A run whose records did not all reach their files is not a clean success.
    let failures = watched_logs.failures();
    for failure in &failures {
        eprintln!("codemode run: {failure}");
    }
    if outcome.is_ok() && outcome.record_error.is_none() && failures.is_empty() {
        0
    } else {
        EXIT_FAILED
    }
}

/// The closing line on stderr (human mode, runs that called tools).
pub fn summary_line(outcome: &RunOutcome) -> String {
    let stats = &outcome.stats;
    format!(
        "[{} tool calls in {:.1} ms; {} bytes kept in the sandbox, {} bytes returned]",
        stats.tool_calls, stats.wall_ms, stats.bytes_kept_in_sandbox, stats.bytes_returned
    )
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

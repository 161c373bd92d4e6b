//! One run on one engine: wrap the program into the async entry, drive the event loop until the
//! program finishes, a limit fires or the run is cancelled, and build the `RunOutcome`.

use std::future::poll_fn;
use std::sync::Arc;
use std::task::{Poll, Waker};
use std::time::Instant;

use deno_core::v8;
use serde::Deserialize;
use serde_json::value::RawValue;

use super::console::ConsoleBuffer;
use super::engine::Engine;
use super::host::RunTools;
use super::outcome::{OUTCOME_VERSION, RunError, RunOutcome, RunStats, RunStatus};
use super::report::render;
use super::run_state::FinishReport;
use super::run_state::RunState;
use super::stack::{self, ProgramPositions};
use super::tool_ops::{awaits_results, take_results};
use super::tool_run::ToolRun;
use super::transpile::Transpiled;
use super::watchdog::{RunControl, StopReason, Watchdog};
use crate::call::{Limits, MIB, TrackWaves};

const PROGRAM_NAME: &str = "codemode:program";

/// Execute `program` on a fresh `engine`; the caller discards it afterwards (one run per isolate).
pub(crate) async fn execute(
    engine: &mut Engine,
    program: &Transpiled,
    limits: &Limits,
    tools: Option<RunTools>,
    watchdog: &Watchdog,
    on_start: impl FnOnce(Arc<RunControl>),
) -> RunOutcome {
    let started = Instant::now();
    let control = RunControl::new(engine.isolate_handle(), limits.deadline);
    let paths = tools
        .as_ref()
        .map(|tools| tools.host.paths())
        .unwrap_or_default();
    let track_waves = tools
        .as_ref()
        .is_some_and(|tools| tools.extensions.get::<TrackWaves>().is_some());
    {
        let state = engine.runtime.op_state();
        let mut state = state.borrow_mut();
        let run = state.borrow_mut::<RunState>();
        run.console = ConsoleBuffer::with_cap(limits.console_bytes);
        run.finish = None;
        run.tools = tools.map(|tools| {
            ToolRun::new(
                tools.host,
                paths.clone(),
                tools.run_id,
                Arc::clone(&control),
                limits,
                tools.extensions,
            )
        });
    }
    if !paths.is_empty() {
        super::tick::quiet_timer_registrations().await;
    }
    watchdog.arm(Arc::clone(&control));
    on_start(Arc::clone(&control));

    // The prefix sits on its own line, so the program's line N is script line N + 1. `null`
    // takes the `tools` object the isolate holds for this very catalog, built before the run.
    let catalog = if engine.tools_prebuilt_for.as_ref() == Some(&paths) {
        "null".to_string()
    } else {
        serde_json::to_string(&paths).expect("paths serialise")
    };
    engine.tools_prebuilt_for = None;
    engine.ran_with_catalog = Some(paths);
    let script = format!(
        "globalThis.__codemodeEntry(async function () {{ \"use strict\";\n{}\n}}, {}, {catalog}, {track_waves});",
        program.js, limits.return_bytes
    );
    // The script only compiles the program and queues its start (see `entry` in 98_run.js), so
    // every line of it runs with the heap guarded.
    let loop_result = match start(engine, &script) {
        Err(message) => Err(message),
        Ok(()) => {
            engine.guard_heap(Arc::clone(&control));
            drive(engine, &control).await
        }
    };
    watchdog.disarm();

    let run_state = std::mem::take(
        engine
            .runtime
            .op_state()
            .borrow_mut()
            .borrow_mut::<RunState>(),
    );
    let logs = run_state.console.finish();
    let mut stats = RunStats::default();
    let mut contexts = Vec::new();
    if let Some(tools) = run_state.tools {
        // Calls still in flight are cancelled (the program never resumes) and awaited: those
        // whose tool had not started end at once with no effect; started ones finish.
        let settled = tools.ledger.settle(&tools.cancel).await;
        stats.tool_calls = tools.issued;
        stats.calls_by_tool = tools.calls_by_tool;
        stats.cancelled_calls = settled.cancelled;
        stats.finished_after_end = settled.finished_after_end;
        stats.bytes_kept_in_sandbox = tools.bytes_kept;
        contexts = tools.contexts;
    }
    let mut outcome = RunOutcome {
        version: OUTCOME_VERSION,
        status: RunStatus::Ok,
        value: None,
        logs,
        error: None,
        contexts,
        stats,
        record_error: None,
        planned_calls: Vec::new(),
        dynamic_access: Vec::new(),
    };
    let positions = ProgramPositions::new(program, PROGRAM_NAME);
    if control
        .out_of_memory
        .load(std::sync::atomic::Ordering::SeqCst)
    {
        outcome.status = RunStatus::OutOfMemory;
        outcome.error = Some(RunError::new(
            "OutOfMemory",
            format!(
                "the program exceeded the heap limit of {} MiB",
                limits.heap_bytes / MIB
            ),
        ));
    } else if let Some(reason) = control.stop_reason() {
        let (status, name, message) = match reason {
            StopReason::Deadline => (
                RunStatus::Timeout,
                "Timeout",
                format!("timeout after {} ms", limits.deadline.as_millis()),
            ),
            StopReason::Cancelled => (
                RunStatus::Cancelled,
                "Cancelled",
                "the run was cancelled".to_string(),
            ),
        };
        outcome.status = status;
        outcome.error = Some(RunError::new(name, message));
    } else if let Some(finish) = run_state.finish {
        match finish {
            FinishReport::Js {
                report_json,
                value_json,
            } => apply_finish(
                &mut outcome,
                &report_json,
                value_json,
                limits.return_bytes,
                &positions,
            ),
            FinishReport::Host { status, error } => {
                outcome.status = status;
                outcome.error = Some(error);
            }
        }
    } else {
        outcome.status = RunStatus::Error;
        outcome.error = Some(match loop_result {
            Ok(()) => RunError::new(
                "UnsettledPromise",
                "the program awaited a promise that can never settle (nothing left to run and no pending timers or tool calls)",
            ),
            Err(message) => RunError::new("Error", message),
        });
    }
    outcome.stats.wall_ms = started.elapsed().as_secs_f64() * 1000.0;
    outcome.stats.bytes_returned = render(&outcome, limits.output_bytes).len() as u64;
    outcome
}

/// Compiles the run's script as a function's body, named [`PROGRAM_NAME`], and calls it.
///
/// Not `execute_script`: the engine facade parses a script twice (once when it is compiled, to
/// report syntax errors then, as V8 does, and again when it runs), and on the run reads the
/// facade's bytecode cache on disk and writes each new program there (one file per program,
/// never pruned, unless the process set `V82JSC_NO_BC_CACHE`). A function is parsed once, and
/// the facade reports its lines as a script's, from its first line.
fn start(engine: &mut Engine, script: &str) -> Result<(), String> {
    let runtime = &mut engine.runtime;
    deno_core::scope!(scope, runtime);
    let (Some(source), Some(name)) = (
        v8::String::new(scope, script),
        v8::String::new(scope, PROGRAM_NAME),
    ) else {
        return Err("the program does not fit in the engine's strings".to_string());
    };
    let origin = v8::ScriptOrigin::new(
        scope,
        name.into(),
        0,
        0,
        false,
        0,
        None,
        false,
        false,
        false,
        None,
    );
    v8::tc_scope!(let scope, scope);
    let mut source = v8::script_compiler::Source::new(source, Some(&origin));
    let called = v8::script_compiler::compile_function(
        scope,
        &mut source,
        &[],
        &[],
        v8::script_compiler::CompileOptions::NoCompileOptions,
        v8::script_compiler::NoCacheReason::NoReason,
    )
    .and_then(|function| {
        let undefined = v8::undefined(scope).into();
        function.call(scope, undefined, &[])
    });
    if called.is_some() {
        return Ok(());
    }
    Err(match scope.exception() {
        Some(exception) => deno_core::error::JsError::from_v8_exception(scope, exception)
            .exception_message
            .clone(),
        None => "the program could not be started".to_string(),
    })
}

/// Poll the event loop until the program reported its end, the loop ran dry, or the watchdog
/// (deadline, heap, cancellation) woke us. The results of tool calls that went on reach the
/// program here, not through deno_core's op driver (see `op_codemode_tool_call`): so the loop is
/// dry only when no call of the program is in flight either.
async fn drive(engine: &mut Engine, control: &RunControl) -> Result<(), String> {
    let finished = |runtime: &mut deno_core::JsRuntime| {
        runtime
            .op_state()
            .borrow()
            .borrow::<RunState>()
            .finish
            .is_some()
    };
    let event_loop = poll_fn(|cx| {
        if finished(&mut engine.runtime) {
            return Poll::Ready(Ok(()));
        }
        hand_over_results(engine, cx.waker());
        // Polled even when the results just handed over let the program return: the loop
        // dispatches the turn's unhandled rejections, which still fail the run (98_run.js).
        let runtime = &mut engine.runtime;
        let polled = runtime.poll_event_loop(cx, Default::default());
        if finished(runtime) {
            return Poll::Ready(Ok(()));
        }
        match polled {
            Poll::Ready(Ok(())) if awaits_results(&runtime.op_state().borrow()) => Poll::Pending,
            Poll::Ready(Ok(())) => Poll::Ready(Ok(())),
            Poll::Ready(Err(error)) => Poll::Ready(Err(error.to_string())),
            Poll::Pending => Poll::Pending,
        }
    });
    tokio::select! {
        biased;
        () = control.wake.notified() => Ok(()),
        result = event_loop => result,
    }
}

/// Hands the results that arrived since the last look to the glue's `settleCalls`, then runs
/// the microtasks they queued (the program's continuations), as deno_core does after resolving
/// its own ops. `waker` is woken when the next result arrives.
fn hand_over_results(engine: &mut Engine, waker: &Waker) {
    let runtime = &mut engine.runtime;
    let Some(results) = take_results(&mut runtime.op_state().borrow_mut(), waker) else {
        return;
    };
    deno_core::scope!(scope, runtime);
    let settle = v8::Local::new(scope, &engine.settle_calls);
    v8::tc_scope!(let scope, scope);
    // A value the engine refused is handed over as its failure (see `Results`); what it threw
    // meanwhile is dropped, so it cannot fail the calls below.
    let groups = results.into_arguments(scope);
    if scope.has_caught() {
        scope.reset();
    }
    let undefined = v8::undefined(scope).into();
    for arguments in groups {
        // `settleCalls` catches what it runs; an exception here is the engine stopping the run
        // (termination), which the watchdog reports.
        if settle.call(scope, undefined, &arguments).is_none() && scope.is_execution_terminating() {
            break;
        }
    }
    if !scope.is_execution_terminating() {
        scope.perform_microtask_checkpoint();
    }
}

#[derive(Deserialize)]
struct FinishJson {
    status: RunStatus,
    error: Option<ErrorJson>,
}

#[derive(Deserialize)]
struct ErrorJson {
    name: String,
    message: String,
    #[serde(default)]
    stack: String,
    code: Option<String>,
    tool: Option<String>,
    #[serde(rename = "detailsJson")]
    details_json: Option<String>,
}

fn apply_finish(
    outcome: &mut RunOutcome,
    report_json: &str,
    value_json: Option<String>,
    return_bytes: usize,
    positions: &ProgramPositions<'_>,
) {
    let report: FinishJson = match serde_json::from_str(report_json) {
        Ok(report) => report,
        Err(e) => {
            outcome.status = RunStatus::Error;
            outcome.error = Some(RunError::new(
                "InternalError",
                format!("unreadable run report: {e}"),
            ));
            return;
        }
    };
    outcome.status = report.status;
    if report.status == RunStatus::Ok {
        if let Some(text) = value_json.as_ref().filter(|text| text.len() > return_bytes) {
            outcome.status = RunStatus::LimitExceeded;
            outcome.error = Some(RunError::new(
                "LimitExceeded",
                format!(
                    "the return value is too large: {} bytes serialized; the limit is {return_bytes} bytes",
                    text.len()
                ),
            ));
            return;
        }
        let Some(text) = value_json else {
            return;
        };
        // The glue's serializer refuses deeper values (`MAX_NESTING` in runtime-js/01_values.js);
        // this is the backstop, so a value the rest of the host could not read (serde_json stops
        // at 128 levels) never leaves as an outcome.
        const MAX_NESTING: usize = 100;
        fn nesting(text: &str) -> usize {
            let (mut depth, mut deepest, mut in_string, mut escaped) =
                (0usize, 0usize, false, false);
            for byte in text.bytes() {
                if in_string {
                    match byte {
                        _ if escaped => escaped = false,
                        b'\\' => escaped = true,
                        b'"' => in_string = false,
                        _ => {}
                    }
                    continue;
                }
                match byte {
                    b'"' => in_string = true,
                    b'[' | b'{' => {
                        depth += 1;
                        deepest = deepest.max(depth);
                    }
                    b']' | b'}' => depth = depth.saturating_sub(1),
                    _ => {}
                }
            }
            deepest
        }
        // Never dropped silently: a value that cannot be taken ends the run with an error.
        // `RawValue` checks only the shape of a `\u` escape; a lone surrogate (which the glue never
        // writes) would make the outcome itself unwritable later, so text holding such an escape
        // is read in full.
        let deepest = nesting(&text);
        let has_surrogate_escape = text.contains("\\ud") || text.contains("\\uD");
        let problem = if deepest > MAX_NESTING {
            format!("value is nested {deepest} levels deep; the limit is {MAX_NESTING} levels")
        } else if let Some(Err(e)) =
            has_surrogate_escape.then(|| serde_json::from_str::<serde_json::Value>(&text))
        {
            format!("its JSON text is unreadable ({e})")
        } else {
            match RawValue::from_string(text) {
                Ok(value) => {
                    outcome.value = Some(value);
                    return;
                }
                Err(e) => format!("its JSON text is unreadable ({e})"),
            }
        };
        outcome.status = RunStatus::Error;
        outcome.error = Some(RunError::new(
            "TypeError",
            format!("the return value cannot be serialized: {problem}"),
        ));
        return;
    }
    let Some(error) = report.error else {
        outcome.error = Some(RunError::new(
            "Error",
            "the run failed without an error record",
        ));
        return;
    };
    let mut run_error = RunError::new(error.name, error.message);
    if !error.stack.is_empty() {
        let mapped = stack::rewrite(&error.stack, positions);
        run_error.line = mapped.line;
        run_error.column = mapped.column;
        run_error.stack = Some(mapped.text);
    }
    run_error.code = error.code;
    run_error.tool = error.tool;
    run_error.details = error
        .details_json
        .and_then(|text| serde_json::from_str(&text).ok());
    outcome.error = Some(run_error);
}

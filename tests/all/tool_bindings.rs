//! The sandbox side of tool calls, with a scripted host: values, ToolError shape, unknown names,
//! per-run limits, back-pressure, cancellation of in-flight calls, and the deadline rules.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use codemode::call::{ArgIssue, CallError, CallLimits, ContextEntry, ErrorKind};
use codemode::sandbox::{Limits, RunOptions, RunStatus, ToolHost, ToolReply, ToolRequest};
use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::{Value, json};

use crate::common::sandbox;

#[derive(Default)]
struct HostState {
    executed: Mutex<Vec<(String, Value, u64)>>,
    running: AtomicUsize,
    max_running: AtomicUsize,
    cancelled: AtomicUsize,
}

/// A host whose tools behave as their names say; it records what ran.
#[derive(Default)]
struct ScriptedHost(Arc<HostState>);

impl std::ops::Deref for ScriptedHost {
    type Target = HostState;
    fn deref(&self) -> &HostState {
        &self.0
    }
}

impl ToolHost for ScriptedHost {
    fn paths(&self) -> Vec<String> {
        [
            "echo", "slow", "fail", "approve", "forever", "mem.get", "delete", "after", "panics",
            "writes",
        ]
        .map(String::from)
        .to_vec()
    }

    fn call(&self, request: ToolRequest) -> BoxFuture<'static, Result<ToolReply, CallError>> {
        if let Some(problem) = request.unconvertible {
            let issues = vec![ArgIssue::new("", problem.clone())];
            let failure = CallError::new(ErrorKind::InvalidArgs { issues }, problem);
            return async move { Err(failure) }.boxed();
        }
        self.executed.lock().unwrap().push((
            request.path.clone(),
            request.args.clone(),
            request.seq,
        ));
        let host = Arc::clone(&self.0);
        async move {
            let now = host.running.fetch_add(1, Ordering::SeqCst) + 1;
            host.max_running.fetch_max(now, Ordering::SeqCst);
            let response = match request.path.as_str() {
                "echo" | "mem.get" | "delete" => {
                    let mut reply =
                        ToolReply::new(json!({"echo": request.args, "seq": request.seq}));
                    reply.contexts =
                        vec![ContextEntry::new("note", format!("{} ran", request.path))];
                    Ok(reply)
                }
                "slow" => {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    Ok(ToolReply::new(json!("slow done")))
                }
                // `{i}` after `ms` milliseconds: a call that goes on past its first poll.
                "after" => {
                    let ms = request.args["ms"].as_u64().unwrap_or(0);
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    tokio::task::yield_now().await;
                    let args = &request.args;
                    match (
                        args["bytes"].as_u64(),
                        args["depth"].as_u64(),
                        args["records"].as_u64(),
                    ) {
                        // A string result of that many bytes instead.
                        (Some(bytes), _, _) => {
                            Ok(ToolReply::new(json!("x".repeat(bytes as usize))))
                        }
                        // Arrays nested that deep around `{i}`.
                        (_, Some(depth), _) => Ok(ToolReply::new(
                            (0..depth).fold(json!({"i": args["i"]}), |inner, _| json!([inner])),
                        )),
                        // That many records `{id, name}`.
                        (_, _, Some(n)) => Ok(ToolReply::new(Value::Array(
                            (0..n)
                                .map(|id| json!({"id": id, "name": format!("record {id}")}))
                                .collect(),
                        ))),
                        _ => Ok(ToolReply::new(json!({"i": args["i"]}))),
                    }
                }
                // The `write` system calls the calling thread has made so far (Linux).
                "writes" => Ok(ToolReply::new(json!(thread_write_calls()))),
                "fail" => Err(CallError::new(
                    ErrorKind::ToolError {
                        retryable: false,
                        attempts: 1,
                    },
                    "the body failed",
                )),
                "approve" => {
                    // An approval wait longer than the deadline: it must not count.
                    request.deadline.pause();
                    tokio::time::sleep(Duration::from_millis(600)).await;
                    request.deadline.resume();
                    Ok(ToolReply::new(json!("approved")))
                }
                // A host bug: the call's future panics after its first poll.
                "panics" => {
                    tokio::task::yield_now().await;
                    panic!("a scripted host bug");
                }
                "forever" => {
                    // Counts once whether the call is cancelled through its token or dropped.
                    let _guard = CountOnDrop(Arc::clone(&host));
                    request.cancel.cancelled().await;
                    Err(CallError::new(ErrorKind::Cancelled, "cancelled"))
                }
                other => Err(CallError::new(
                    ErrorKind::UnknownTool {
                        suggestions: vec!["echo".into()],
                    },
                    format!("no tool named `{other}`"),
                )),
            };
            host.running.fetch_sub(1, Ordering::SeqCst);
            response
        }
        .boxed()
    }
}

/// `syscw` of `/proc/thread-self/io`: the `write` system calls this thread has made.
fn thread_write_calls() -> u64 {
    let io = std::fs::read_to_string("/proc/thread-self/io").unwrap_or_default();
    io.lines()
        .find_map(|line| line.strip_prefix("syscw: "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

struct CountOnDrop(Arc<HostState>);

impl Drop for CountOnDrop {
    fn drop(&mut self) {
        self.0.cancelled.fetch_add(1, Ordering::SeqCst);
    }
}

fn host() -> Arc<ScriptedHost> {
    Arc::new(ScriptedHost::default())
}

async fn run_with(
    host: &Arc<ScriptedHost>,
    source: &str,
    limits: Limits,
) -> codemode::sandbox::RunOutcome {
    let tools: Arc<dyn ToolHost> = host.clone();
    sandbox()
        .run_with(
            source,
            RunOptions::new(limits)
                .with_tools(tools)
                .with_run_id("r_test"),
        )
        .await
}

#[tokio::test]
async fn calls_return_canonical_values_and_fill_stats() {
    let host = host();
    let outcome = run_with(&host, "const a = await tools.echo({ x: 1n, y: [undefined] }); const b = await tools.mem.get({}); return [a, b.seq];", Limits::default()).await;
    assert_eq!(
        outcome.value_json(),
        Some(json!([{"echo": {"x": "1", "y": [null]}, "seq": 1}, 2])),
        "{}",
        outcome.to_json()
    );
    assert_eq!(outcome.stats.tool_calls, 2);
    assert_eq!(outcome.stats.calls_by_tool.get("mem.get"), Some(&1));
    assert!(outcome.stats.bytes_kept_in_sandbox > 20);
    assert_eq!(outcome.contexts.len(), 2);
    assert_eq!(outcome.contexts[1].tool, "mem.get");
    assert_eq!(host.executed.lock().unwrap().len(), 2);
}

#[tokio::test]
async fn failures_reject_with_a_tool_error() {
    let host = host();
    let source = r#"
        try { await tools.fail({}); } catch (e) {
            return { isToolError: e instanceof ToolError, isError: e instanceof Error, name: e.name, code: e.code, tool: e.tool, message: e.message, details: e.details };
        }
    "#;
    let outcome = run_with(&host, source, Limits::default()).await;
    assert_eq!(
        outcome.value_json(),
        Some(
            json!({"isToolError": true, "isError": true, "name": "ToolError", "code": "TOOL_ERROR", "tool": "fail", "message": "the body failed", "details": {"retryable": false, "attempts": 1}})
        )
    );
}

#[tokio::test]
async fn an_uncaught_tool_error_fails_the_run_with_its_code() {
    let outcome = run_with(&host(), "\nawait tools.fail({});", Limits::default()).await;
    assert_eq!(outcome.status, RunStatus::Error);
    let error = outcome.error.unwrap();
    assert_eq!(
        (
            error.name.as_str(),
            error.code.as_deref(),
            error.tool.as_deref()
        ),
        ("ToolError", Some("TOOL_ERROR"), Some("fail"))
    );
    assert_eq!(
        error.details,
        Some(json!({"retryable": false, "attempts": 1}))
    );
}

#[tokio::test]
async fn unknown_names_reach_the_host_and_reject() {
    let host = host();
    let source = r#"
        const codes = [];
        for (const f of [() => tools.ecko({}), () => tools.nope.deeper({}), () => tools.mem.missing({})]) {
            try { await f(); } catch (e) { codes.push([e.code, e.tool]); }
        }
        return { codes, thenable: typeof tools.then, reserved: typeof tools.delete };
    "#;
    let outcome = run_with(&host, source, Limits::default()).await;
    assert_eq!(
        outcome.value_json(),
        Some(
            json!({"codes": [["UNKNOWN_TOOL", "ecko"], ["UNKNOWN_TOOL", "nope.deeper"], ["UNKNOWN_TOOL", "mem.missing"]], "thenable": "undefined", "reserved": "function"})
        )
    );
}

#[tokio::test]
async fn an_unknown_tool_reads_as_a_function_of_its_name() {
    // Its `name` and `length` are its function's own (a proxy may not answer otherwise for a
    // frozen function's fixed properties: reading them threw "proxy: inconsistent get"); other
    // names are deeper unknown tools. Printing one works too.
    let host = host();
    let source = r#"
        console.log(tools.nope, tools.mem.missing);
        return [tools.nope.name, tools.nope.length, tools.mem.missing.name, typeof tools.nope.deeper, tools.nope.deeper.name];
    "#;
    let outcome = run_with(&host, source, Limits::default()).await;
    assert_eq!(
        outcome.value_json(),
        Some(json!(["nope", 1, "mem.missing", "function", "nope.deeper"])),
        "{}",
        outcome.to_json()
    );
    assert_eq!(outcome.logs.len(), 1, "{}", outcome.to_json());
}

#[tokio::test]
async fn unconvertible_arguments_are_invalid_args() {
    let host = host();
    let source = "const a = {}; a.self = a; try { await tools.echo(a); } catch (e) { return [e.code, e.details.issues[0].message]; }";
    let value = run_with(&host, source, Limits::default())
        .await
        .value_json()
        .unwrap();
    assert_eq!(value[0], "INVALID_ARGS");
    assert!(value[1].as_str().unwrap().contains("cyclic"), "{value}");
    assert!(
        host.executed.lock().unwrap().is_empty(),
        "the body must not run"
    );
}

#[tokio::test]
async fn in_flight_calls_are_bounded_and_queue() {
    let host = host();
    let limits = Limits {
        in_flight_calls: 3,
        ..Limits::default()
    };
    let outcome = run_with(&host, "const r = await Promise.all(Array.from({ length: 12 }, () => tools.slow({}))); return r.length;", limits).await;
    assert_eq!(
        outcome.value_json(),
        Some(json!(12)),
        "{}",
        outcome.to_json()
    );
    assert_eq!(host.max_running.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn tool_call_cap_ends_the_run() {
    let host = host();
    let limits = Limits {
        tool_calls: 5,
        ..Limits::default()
    };
    let outcome = run_with(&host, "for (let i = 0; i < 10; i++) { try { await tools.echo({ i }); } catch {} } return 'not reached';", limits).await;
    assert_eq!(
        outcome.status,
        RunStatus::LimitExceeded,
        "{}",
        outcome.to_json()
    );
    assert_eq!(host.executed.lock().unwrap().len(), 5);
    assert_eq!(outcome.stats.tool_calls, 5);
}

#[tokio::test]
async fn calls_in_flight_when_the_program_returns_are_cancelled() {
    let host = host();
    let outcome = run_with(&host, "tools.forever({}).catch(() => {}); tools.forever({}).catch(() => {}); await tools.echo({}); return 'done';", Limits::default()).await;
    assert_eq!(outcome.value_json(), Some(json!("done")));
    assert_eq!(outcome.stats.cancelled_calls, 2);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        host.cancelled.load(Ordering::SeqCst),
        2,
        "both calls were cancelled"
    );
}

/// A call that goes on is settled later, in a batch with the others that arrived meanwhile:
/// each result must still reach the promise of its own call, whatever the order they end in,
/// with calls that finish at once (which take no place in the table) issued in between.
#[tokio::test]
async fn results_of_calls_that_go_on_reach_their_own_callers_in_any_order() {
    let source = "
        const order = [];
        const calls = [];
        [240, 20, 140, 0, 80, 180, 40, 100].forEach((ms, i) => {
            calls.push(tools.after({ ms, i }).then((r) => { order.push(r.i); return r.i; }));
            calls.push(tools.echo({ i }).then((r) => r.echo.i));
        });
        return { values: await Promise.all(calls), order };";
    let outcome = run_with(&host(), source, Limits::default()).await;
    let value = outcome.value_json().unwrap_or_default();
    assert_eq!(
        value["values"],
        json!([0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7]),
        "{}",
        outcome.to_json()
    );
    // By their delays the results end in the order 3, 1, 6, 4, 7, 2, 5, 0. The exact order
    // depends on how long issuing takes (slow on a loaded machine); that they did not come in
    // the order issued does not.
    let mut order: Vec<u64> = serde_json::from_value(value["order"].clone()).unwrap();
    assert_ne!(order, (0..8).collect::<Vec<u64>>(), "{}", outcome.to_json());
    order.sort_unstable();
    assert_eq!(order, (0..8).collect::<Vec<u64>>(), "{}", outcome.to_json());
    assert_eq!(outcome.stats.tool_calls, 16);
}

/// The glue hands out the id of a settled call again, so its table never outgrows the calls
/// awaited at once. Waves that overlap (some calls still in flight while new ones are issued,
/// on ids just given back) must still deliver every result to its own caller.
#[tokio::test]
async fn reused_call_ids_still_reach_their_own_callers() {
    let source = "
        const got = [];
        const pending = [];
        for (let i = 0; i < 60; i++) {
            pending.push(tools.after({ ms: (i * 7) % 13, i }).then((r) => r.i));
            if (i % 10 === 9) got.push(...await Promise.all(pending.splice(0, 5)));
        }
        got.push(...await Promise.all(pending));
        return got;";
    let outcome = run_with(&host(), source, Limits::default()).await;
    assert_eq!(
        outcome.value_json(),
        Some(json!((0..60).collect::<Vec<u64>>())),
        "{}",
        outcome.to_json()
    );
    assert_eq!(outcome.stats.tool_calls, 60);
}

/// Every call that goes on registers a timer (here the tool's own sleep). Tokio wakes its
/// driver for a timer registered while it remembers no earlier one, a `write` to its eventfd,
/// and a run starts with nothing remembered: 50 calls issued in one turn made 50 writes on the
/// run's thread. The worker now has the driver remember the next tick before the program starts
/// (`tick::quiet_timer_registrations`), so issuing them makes none.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn calls_that_go_on_register_their_timers_without_a_system_call_each() {
    let source = "
        const before = await tools.writes({});
        const calls = Array.from({ length: 50 }, (_, i) => tools.after({ ms: 20, i }));
        const after = await tools.writes({});
        await Promise.all(calls);
        return after - before;";
    let outcome = run_with(&host(), source, Limits::default()).await;
    let writes = outcome.value_json().and_then(|v| v.as_u64());
    assert!(
        writes.is_some_and(|n| n < 5),
        "{writes:?} writes while issuing 50 calls: {}",
        outcome.to_json()
    );
}

/// Index accessors the program puts on `Array.prototype` and `Object.prototype` must never
/// receive the resolving functions of the calls awaited (the glue's table is indexed by id), nor
/// stand in for them, nor catch the array of results the host hands over (the engine facade
/// fills arrays by assignment): every call still settles with its own result.
#[tokio::test]
async fn index_accessors_on_prototypes_never_reach_the_awaited_calls() {
    let source = "
        let leaked = 0;
        let hijacked = 0;
        for (const proto of [Array.prototype, Object.prototype]) {
            for (let i = 0; i < 8; i++) {
                Object.defineProperty(proto, i, { configurable: true,
                    get() { return () => { hijacked++; }; },
                    set(v) { if (typeof v === 'function') leaked++; } });
            }
        }
        const values = await Promise.all([0, 1, 2, 3, 4].map((i) => tools.after({ ms: 5, i })));
        const again = await tools.after({ ms: 1, i: 9 });
        return { ids: values.map((r) => r.i), again: again.i, leaked, hijacked };";
    let outcome = run_with(&host(), source, Limits::default()).await;
    assert_eq!(
        outcome.value_json(),
        Some(json!({"ids": [0, 1, 2, 3, 4], "again": 9, "leaked": 0, "hijacked": 0})),
        "{}",
        outcome.to_json()
    );
}

/// The results of calls that go on do not come through deno_core's op driver, so the run's
/// event loop must count them itself: a call in flight keeps the run going (its result still
/// reaches the program), and once it ended the run reports the promise that can never settle.
#[tokio::test]
async fn a_call_in_flight_keeps_the_run_alive_until_its_result_arrives() {
    let source = "
        tools.after({ ms: 50, i: 7 }).then((r) => console.log('arrived', r.i));
        await new Promise(() => {});";
    let outcome = run_with(&host(), source, Limits::default()).await;
    assert_eq!(outcome.status, RunStatus::Error, "{}", outcome.to_json());
    assert_eq!(outcome.error.as_ref().unwrap().name, "UnsettledPromise");
    let logs: Vec<&str> = outcome.logs.iter().map(|l| l.text.as_str()).collect();
    assert_eq!(logs, ["arrived 7"], "{}", outcome.to_json());
    assert_eq!(outcome.stats.cancelled_calls, 0);
    let source = "
        let got = 'nothing';
        tools.after({ ms: 30, i: 8 }).then((r) => { got = r.i; });
        // Far past the call's 30 ms: a worker starved for longer than the gap (the whole suite
        // on 2 cores) finds both due at once and may run the timer's callback first.
        await new Promise((resolve) => setTimeout(resolve, 400));
        return got;";
    let outcome = run_with(&host(), source, Limits::default()).await;
    assert_eq!(
        outcome.value_json(),
        Some(json!(8)),
        "{}",
        outcome.to_json()
    );
}

/// Settling a call with an object reads its `then`; a getter the program put there runs while
/// the host hands results over, and may issue calls itself. They join the table like any other
/// and are settled in a later batch; the results being handed over still reach their callers.
#[tokio::test]
async fn calls_issued_while_results_are_handed_over_are_settled_too() {
    let source = "
        let issued = 0;
        const extra = [];
        Object.defineProperty(Object.prototype, 'then', { configurable: true, get() {
            if (issued < 2) { issued++; extra.push(tools.after({ ms: 5, i: 100 + issued })); }
            return undefined;
        } });
        const first = await Promise.all([tools.after({ ms: 10, i: 1 }), tools.after({ ms: 10, i: 2 })]);
        delete Object.prototype.then;
        const more = await Promise.all(extra);
        return [first.map((r) => r.i), more.map((r) => r.i)];";
    let outcome = run_with(&host(), source, Limits::default()).await;
    assert_eq!(
        outcome.value_json(),
        Some(json!([[1, 2], [101, 102]])),
        "{}",
        outcome.to_json()
    );
    assert_eq!(outcome.stats.tool_calls, 4);
}

/// A result of a call that went on which the engine cannot hold (here: larger than the run's
/// heap) rejects that call with a `RangeError` saying so, which the program can catch: the call
/// neither hangs the run nor settles without a word.
#[tokio::test]
async fn a_result_the_engine_cannot_hold_rejects_its_call_with_a_range_error() {
    let limits = Limits {
        heap_bytes: 16 * codemode::call::MIB,
        ..crate::common::short(30_000)
    };
    let source = "
        try { await tools.after({ ms: 5, bytes: 64 * 1024 * 1024 }); return 'held'; }
        catch (e) { return [e instanceof RangeError, e.message]; }";
    let outcome = run_with(&host(), source, limits).await;
    let value = outcome.value_json().unwrap_or_default();
    assert_eq!(value[0], json!(true), "{}", outcome.to_json());
    let message = value[1].as_str().unwrap_or_default();
    assert!(
        message.starts_with("the tool result (67108864 bytes as text) does not fit in the sandbox")
            && message.contains("heap limit"),
        "{message}"
    );
}

/// Structured results reach the program in the engine's binary object format; what that format
/// does not carry (here: arrays nested 700 deep, past its 512) goes as JSON text, whole.
#[tokio::test]
async fn a_result_nested_past_the_binary_forms_depth_arrives_whole_as_text() {
    let source = "
        const r = await tools.after({ ms: 0, depth: 700, i: 'core' });
        let depth = 0, v = r;
        while (Array.isArray(v)) { v = v[0]; depth++ }
        return [depth, v.i];";
    let outcome = run_with(&host(), source, Limits::default()).await;
    assert_eq!(
        outcome.value_json(),
        Some(json!([700, "core"])),
        "{}",
        outcome.to_json()
    );
}

/// A structured result the run's heap cannot hold ends the run as out of memory, naming the
/// limit: the engine builds it in the heap, as `JSON.parse` of its text did before the binary
/// hand-over.
#[tokio::test]
async fn a_structured_result_the_heap_cannot_hold_ends_the_run_as_out_of_memory() {
    let limits = Limits {
        heap_bytes: 16 * codemode::call::MIB,
        ..crate::common::short(30_000)
    };
    let source = "
        try { await tools.after({ ms: 1, records: 400000 }); } catch (e) { return 'caught'; }
        return 'held';";
    let outcome = run_with(&host(), source, limits).await;
    assert_eq!(
        outcome.status,
        RunStatus::OutOfMemory,
        "{}",
        outcome.to_json()
    );
    assert_eq!(
        outcome.error.unwrap().message,
        "the program exceeded the heap limit of 16 MiB"
    );
}

/// A rejection nobody handles fails the run even when the program returns in the same turn
/// (98_run.js). Here that turn is the one in which the host hands over a call's result: the
/// run's event loop must still dispatch the turn's rejections before the run ends.
#[tokio::test]
async fn a_rejection_in_the_turn_a_result_arrives_still_fails_the_run() {
    let source = "
        const r = await tools.after({ ms: 5, i: 1 });
        Promise.reject(new Error('lost'));
        return r.i;";
    let outcome = run_with(&host(), source, Limits::default()).await;
    assert_eq!(outcome.status, RunStatus::Error, "{}", outcome.to_json());
    let error = outcome.error.unwrap();
    assert_eq!(
        (error.name.as_str(), error.message.as_str()),
        ("Error", "lost")
    );
}

/// A `ToolHost` is the embedder's code: when its future panics after the first poll, that call
/// fails with a `ToolError` the program can catch, and the run goes on (it does not wait for
/// the call until its deadline).
#[tokio::test]
async fn a_host_that_panics_fails_its_call_not_the_run() {
    let source = "
        let failure;
        try { await tools.panics({}); } catch (e) { failure = [e.code, e.message]; }
        const after = await tools.after({ ms: 1, i: 2 });
        return [failure, after.i];";
    let started = std::time::Instant::now();
    let outcome = run_with(&host(), source, crate::common::short(10_000)).await;
    assert_eq!(
        outcome.value_json(),
        Some(json!([
            [
                "TOOL_ERROR",
                "the tool host panicked while running this call"
            ],
            2
        ])),
        "{}",
        outcome.to_json()
    );
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn the_deadline_covers_time_awaiting_tools() {
    let outcome = run_with(
        &host(),
        "await tools.forever({});",
        crate::common::short(300),
    )
    .await;
    assert_eq!(outcome.status, RunStatus::Timeout);
    assert_eq!(outcome.stats.cancelled_calls, 1);
}

#[tokio::test]
async fn time_awaiting_an_approver_does_not_count() {
    let outcome = run_with(
        &host(),
        "return await tools.approve({});",
        crate::common::short(300),
    )
    .await;
    assert_eq!(
        outcome.value_json(),
        Some(json!("approved")),
        "{}",
        outcome.to_json()
    );
}

#[tokio::test]
async fn a_call_after_the_run_ended_never_executes() {
    let host = host();
    // A timer never fires once the run is over; a chain of microtasks does run after the run
    // has finished (same checkpoint), so its call reaches the op and must be refused there.
    let source = "setTimeout(() => tools.echo({ late: 'timer' }), 0);
        (async () => { for (let i = 0; i < 20; i++) await null; tools.echo({ late: 'microtask' }).catch(() => {}); })();
        return 'returned first';";
    let outcome = run_with(&host, source, Limits::default()).await;
    assert_eq!(outcome.value_json(), Some(json!("returned first")));
    assert_eq!(outcome.stats.tool_calls, 0, "{}", outcome.to_json());
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(
        host.executed.lock().unwrap().is_empty(),
        "{:?}",
        host.executed.lock().unwrap()
    );
}

/// Per-call byte limits belong to the pipeline (the sandbox keeps per-run limits): a program
/// meets them through Code Mode, with the pipeline's `details` shape.
#[tokio::test]
async fn oversized_results_and_arguments_are_limit_exceeded() {
    let echo = codemode::ToolDefinition::builder("echo")
        .description("echoes its arguments")
        .execute(|args: Value, _exec| async move { Ok(json!({"echo": args, "seq": 2})) })
        .build()
        .unwrap();
    let mut registry = codemode::ToolRegistry::new();
    registry.register(echo).unwrap();
    let limits = Limits {
        call: CallLimits {
            max_arg_bytes: 100,
            max_result_bytes: 100,
        },
        ..Limits::default()
    };
    let harness = codemode::Harness::builder()
        .sandbox(sandbox().clone())
        .limits(limits)
        .build(registry)
        .unwrap();
    let source = r#"
        const out = [];
        try { await tools.echo({ big: "x".repeat(200) }); } catch (e) { out.push([e.code, e.details]); }
        try { await tools.echo({ mid: "y".repeat(80) }); } catch (e) { out.push([e.code, e.details.limit]); }
        return out;
    "#;
    let outcome = harness.run(source).await.unwrap();
    assert_eq!(
        outcome.value_json(),
        Some(json!([
            ["LIMIT_EXCEEDED", {"limit": "argument_bytes", "value": 210}],
            ["LIMIT_EXCEEDED", "result_bytes"]
        ])),
        "{}",
        outcome.to_json()
    );
}

/// Answers the `v` of its arguments: what the program sent comes back as the tool's value.
struct ValueHost;

impl ToolHost for ValueHost {
    fn paths(&self) -> Vec<String> {
        vec!["value".to_string()]
    }

    fn call(&self, request: ToolRequest) -> BoxFuture<'static, Result<ToolReply, CallError>> {
        let value = request.args["v"].clone();
        async move { Ok(ToolReply::new(value)) }.boxed()
    }
}

#[tokio::test]
async fn scalar_results_keep_their_type_and_exact_size() {
    // Scalars reach the program as engine values made directly (not parsed from text): each
    // keeps its JavaScript type and value, and the run still counts each result's JSON size.
    let source = r#"
        const vs = [7, -0.5, 1e300, true, false, null, "", "q\"u\\o\n\u00e9", { a: [1] }];
        const out = [];
        for (const v of vs) {
            const r = await tools.value({ v });
            out.push([typeof r, JSON.stringify(r) === JSON.stringify(v), Object.is(r, v) || typeof r === "object"]);
        }
        return out;
    "#;
    let tools: Arc<dyn ToolHost> = Arc::new(ValueHost);
    let outcome = sandbox()
        .run_with(source, RunOptions::new(Limits::default()).with_tools(tools))
        .await;
    let expected = json!([
        ["number", true, true],
        ["number", true, true],
        ["number", true, true],
        ["boolean", true, true],
        ["boolean", true, true],
        ["object", true, true],
        ["string", true, true],
        ["string", true, true],
        ["object", true, true]
    ]);
    assert_eq!(
        outcome.value_json(),
        Some(expected),
        "{}",
        outcome.to_json()
    );
    let sizes: u64 = [
        json!(7),
        json!(-0.5),
        json!(1e300),
        json!(true),
        json!(false),
        json!(null),
        json!(""),
        json!("q\"u\\o\né"),
        json!({"a": [1]}),
    ]
    .iter()
    .map(|v| v.to_string().len() as u64)
    .sum();
    assert_eq!(outcome.stats.bytes_kept_in_sandbox, sizes);
}

#[tokio::test]
async fn argument_texts_arrive_whole_on_either_side_of_the_one_pass_buffer() {
    // The op reads argument texts up to 512 bytes in one pass and longer ones in two: a text
    // ending just before, at or after that size, with multi-byte characters across the edge,
    // arrives whole.
    let source = r#"
        const out = [];
        for (const n of [0, 490, 500, 505, 506, 507, 508, 509, 510, 2000]) {
            for (const fill of ["a", "é", "€", "😀"]) {
                const s = fill.repeat(n);
                const r = await tools.value({ v: s });
                out.push(r === s);
            }
        }
        return out.every((ok) => ok) ? out.length : out;
    "#;
    let tools: Arc<dyn ToolHost> = Arc::new(ValueHost);
    let outcome = sandbox()
        .run_with(source, RunOptions::new(Limits::default()).with_tools(tools))
        .await;
    assert_eq!(
        outcome.value_json(),
        Some(json!(40)),
        "{}",
        outcome.to_json()
    );
}

#[tokio::test]
async fn a_lone_surrogate_in_the_arguments_is_refused_with_its_cause_and_a_fix() {
    // JavaScript strings may hold an unpaired UTF-16 surrogate; JSON text for a tool cannot
    // (it has no UTF-8 form). The call fails as INVALID_ARGS naming the cause, not as a
    // parser's "unexpected end of hex escape".
    let source = r#"
        const messages = [];
        for (const v of ["x\ud800y", "\udc00", "end\ud83d"]) {
            try { await tools.value({ v }); messages.push("accepted"); }
            catch (e) { messages.push(e.code + ": " + e.message); }
        }
        const paired = await tools.value({ v: "ok \ud83d\ude00" });
        const fixed = await tools.value({ v: "x\ud800y".toWellFormed() });
        return { messages, paired, fixed };
    "#;
    let tools: Arc<dyn ToolHost> = Arc::new(ValueHost);
    let outcome = sandbox()
        .run_with(source, RunOptions::new(Limits::default()).with_tools(tools))
        .await;
    let value = outcome.value_json().expect("the run returns");
    assert_eq!(value["paired"], json!("ok 😀"), "{value}");
    // The fix the message names works in the engine.
    assert_eq!(value["fixed"], json!("x\u{FFFD}y"), "{value}");
    assert_eq!(
        value["messages"].as_array().map(Vec::len),
        Some(3),
        "{value}"
    );
    for message in value["messages"].as_array().unwrap() {
        let message = message.as_str().unwrap();
        assert!(message.starts_with("INVALID_ARGS: "), "{message}");
        assert!(message.contains("lone UTF-16 surrogate (`\\u"), "{message}");
        assert!(message.contains("toWellFormed"), "{message}");
    }
}

/// A host whose every tool answers with the path it was called by.
struct PathEcho(Vec<&'static str>);

impl ToolHost for PathEcho {
    fn paths(&self) -> Vec<String> {
        self.0.iter().map(|p| p.to_string()).collect()
    }

    fn call(&self, request: ToolRequest) -> BoxFuture<'static, Result<ToolReply, CallError>> {
        let reply = ToolReply::new(json!(request.path));
        async move { Ok(reply) }.boxed()
    }
}

#[test]
fn each_run_of_a_worker_sees_its_own_catalog_in_both_isolation_modes() {
    // A worker builds the next isolate's `tools` ahead of its run, for the catalog of the run it
    // just served; a run of another catalog (another harness sharing the sandbox, or none) must
    // still see exactly its own. Index 0 is `alpha` in one catalog and `beta` in the other.
    let probe = r#"
        const seen = Object.getOwnPropertyNames(tools).sort();
        const reached = [];
        for (const call of [() => tools.alpha({}), () => tools.ns.two({}), () => tools.beta({})]) {
            try { reached.push(await call()) } catch (e) { reached.push(e.code ?? String(e)) }
        }
        return { seen, reached };
    "#;
    let first: Arc<dyn ToolHost> = Arc::new(PathEcho(vec!["alpha", "ns.two"]));
    let second: Arc<dyn ToolHost> = Arc::new(PathEcho(vec!["beta", "ns.two"]));
    let expected_first = json!({"seen": ["alpha", "ns"], "reached": ["alpha", "ns.two", "beta"]});
    let expected_second = json!({"seen": ["beta", "ns"], "reached": ["alpha", "ns.two", "beta"]});
    let no_tools = json!([]);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    for isolation in [
        codemode::sandbox::Isolation::Thread,
        codemode::sandbox::Isolation::Process(codemode::sandbox::ProcessConfig::with_program(
            crate::common::worker_program(),
        )),
    ] {
        let sandbox = codemode::sandbox::Sandbox::new(codemode::sandbox::SandboxConfig {
            workers: 1,
            isolation,
            ..Default::default()
        })
        .unwrap();
        let sequence = [
            (Some(&first), &expected_first),
            (Some(&first), &expected_first),
            (Some(&second), &expected_second),
            (None, &no_tools),
            (Some(&first), &expected_first),
            (Some(&second), &expected_second),
            (Some(&second), &expected_second),
        ];
        for (turn, (host, expected)) in sequence.into_iter().enumerate() {
            let mut options = RunOptions::new(Limits::default());
            if let Some(host) = host {
                options = options.with_tools(Arc::clone(host));
            }
            let outcome = runtime.block_on(sandbox.run_with(probe, options));
            if host.is_none() {
                // With no host, `tools` is empty and every call is refused by the sandbox.
                assert_eq!(
                    outcome.value_json().unwrap()["seen"],
                    no_tools,
                    "run {turn}: {}",
                    outcome.to_json()
                );
                continue;
            }
            assert_eq!(
                outcome.value_json().as_ref(),
                Some(expected),
                "run {turn}: {}",
                outcome.to_json()
            );
        }
    }
}

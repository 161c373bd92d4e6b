//! Code Mode end to end: programs whose `tools.x(args)` calls go through the real pipeline.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use codemode::PipelineBuilder;
use codemode::harness::RUN_CODE;
use codemode::pipeline::{
    ApprovalDecision, ApprovalRequest, Approver, CallRequest, ChannelSink, ContextEntry, Event,
    EventSink, HookDecision, HookError, PostAction, SessionLog, SessionLogOptions, post_hook_fn,
    pre_hook_fn,
};
use codemode::sandbox::{Limits, RunOutcome, RunStatus};
use codemode::{ToolDefinition, ToolRegistry};
use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::{Value, json};

use crate::common::sandbox;

/// Start and end marks of tool bodies, in the order they happened.
type Marks = Arc<Mutex<Vec<String>>>;

fn timed_tool(name: &str, marks: &Marks, parallel: bool) -> ToolDefinition {
    let marks = Arc::clone(marks);
    let builder = ToolDefinition::builder(name)
        .description(format!("{name}: sleeps 30 ms and echoes its id"))
        .parameters(json!({"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"], "additionalProperties": false}))
        .output_schema(json!({"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}))
        .execute(move |args: Value, _exec| {
            let marks = Arc::clone(&marks);
            async move {
                let id = args["id"].as_i64().unwrap_or(-1);
                marks.lock().unwrap().push(format!("start {id}"));
                tokio::time::sleep(Duration::from_millis(30)).await;
                marks.lock().unwrap().push(format!("end {id}"));
                Ok(json!({"id": id}))
            }
        });
    let builder = if parallel {
        builder.parallel_safe()
    } else {
        builder
    };
    builder.build().unwrap()
}

struct SlowApprover {
    delay: Duration,
}

impl Approver for SlowApprover {
    fn approve<'a>(
        &'a self,
        request: &'a ApprovalRequest<'a>,
    ) -> BoxFuture<'a, Result<ApprovalDecision, HookError>> {
        let deny = request.call.args.get("deny").and_then(Value::as_bool) == Some(true);
        let delay = self.delay;
        async move {
            tokio::time::sleep(delay).await;
            Ok(if deny {
                ApprovalDecision::Refuse {
                    reason: "not today".into(),
                }
            } else {
                ApprovalDecision::Approve
            })
        }
        .boxed()
    }
}

struct Harness {
    harness: codemode::Harness,
    marks: Marks,
    events: tokio::sync::mpsc::UnboundedReceiver<Event>,
    log_path: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

fn harness(limits: Limits) -> Harness {
    let marks: Marks = Arc::default();
    let mut registry = ToolRegistry::new();
    registry.register(timed_tool("read", &marks, true)).unwrap();
    registry
        .register(timed_tool("write", &marks, false))
        .unwrap();
    registry
        .register(
            ToolDefinition::builder("guarded")
                .description("asks for approval first")
                .parameters(json!({"type": "object", "properties": {"deny": {"type": "boolean"}}}))
                .execute(|_args, _exec| async { Ok(json!("approved and ran")) })
                .build()
                .unwrap(),
        )
        .unwrap();
    registry
        .register_namespaced(
            "memory",
            ToolDefinition::builder("search-nodes")
                .description("finds nodes")
                .parameters(json!({"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}))
                .execute(|args: Value, _exec| async move { Ok(json!({"nodes": [args["query"].clone()], "secret": "intermediate"})) })
                .parallel_safe()
                .build()
                .unwrap(),
        )
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let log_path = dir.path().join("session.jsonl");
    let (sink, events) = ChannelSink::new();
    // One sink sees the run_code call (outer pipeline) and its nested calls (inner pipeline).
    let sink: Arc<dyn EventSink> = Arc::new(sink);
    let outer_sink = Arc::clone(&sink);
    let log = Arc::new(SessionLog::open(&log_path, SessionLogOptions::default()).unwrap());
    let inner = move |pipeline: PipelineBuilder| {
        pipeline
            .pre_hook(pre_hook_fn("ask-guarded", |call| {
                if call.path == "guarded" {
                    HookDecision::Ask {
                        reason: "guarded tool".into(),
                    }
                } else {
                    HookDecision::Allow
                }
            }))
            .post_hook(post_hook_fn("note", |info| {
                let mut action = PostAction::keep();
                if info.call.path == "memory.search_nodes" {
                    action
                        .contexts
                        .push(ContextEntry::new("note", "memory was consulted"));
                }
                action
            }))
            .approver(SlowApprover {
                delay: Duration::from_millis(500),
            })
            .shared_observer(Arc::clone(&sink))
    };
    let harness = codemode::Harness::builder()
        .limits(limits)
        .sandbox(sandbox().clone())
        .inner(inner)
        .outer(move |pipeline| {
            pipeline
                .shared_observer(Arc::clone(&outer_sink))
                .session_log(Arc::clone(&log))
        })
        .build(registry)
        .unwrap();
    Harness {
        harness,
        marks,
        events,
        log_path,
        _dir: dir,
    }
}

async fn run_code(h: &Harness, code: &str) -> RunOutcome {
    let outcome = h
        .harness
        .outer()
        .call(CallRequest::new(RUN_CODE, json!({ "code": code })))
        .await;
    let value = outcome
        .result()
        .unwrap_or_else(|e| panic!("run_code failed: {e:?}"))
        .clone();
    serde_json::from_value(value).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nested_calls_go_through_the_pipeline_and_return_canonical_values() {
    let h = harness(Limits::default());
    let outcome = run_code(
        &h,
        "const r = await tools.memory.search_nodes({ query: 'rust' }); return r.nodes;",
    )
    .await;
    assert_eq!(
        outcome.value_json(),
        Some(json!(["rust"])),
        "{}",
        outcome.to_json()
    );
    assert_eq!(
        outcome.stats.calls_by_tool.get("memory.search_nodes"),
        Some(&1)
    );
    assert_eq!(outcome.contexts.len(), 1);
    assert_eq!(
        (
            outcome.contexts[0].tool.as_str(),
            outcome.contexts[0].text.as_str()
        ),
        ("memory.search_nodes", "memory was consulted")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_safe_calls_overlap_and_exclusive_calls_serialize() {
    let h = harness(Limits::default());
    let outcome = run_code(
        &h,
        "await Promise.all([1, 2, 3].map((id) => tools.read({ id }))); return 'ok';",
    )
    .await;
    assert!(outcome.is_ok(), "{}", outcome.to_json());
    let marks = h.marks.lock().unwrap().clone();
    // All three started before any ended: they overlapped.
    assert_eq!(
        &marks[..3].iter().filter(|m| m.starts_with("start")).count(),
        &3,
        "{marks:?}"
    );
    h.marks.lock().unwrap().clear();

    let outcome = run_code(
        &h,
        "await Promise.all([1, 2, 3].map((id) => tools.write({ id }))); return 'ok';",
    )
    .await;
    assert!(outcome.is_ok(), "{}", outcome.to_json());
    let marks = h.marks.lock().unwrap().clone();
    assert_eq!(
        marks,
        ["start 1", "end 1", "start 2", "end 2", "start 3", "end 3"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exclusive_call_is_a_barrier_in_issue_order() {
    let h = harness(Limits::default());
    let outcome = run_code(&h, "await Promise.all([tools.read({ id: 1 }), tools.write({ id: 2 }), tools.read({ id: 3 })]); return 'ok';").await;
    assert!(outcome.is_ok(), "{}", outcome.to_json());
    let marks = h.marks.lock().unwrap().clone();
    assert_eq!(
        marks,
        ["start 1", "end 1", "start 2", "end 2", "start 3", "end 3"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_reject_with_pipeline_error_codes() {
    let h = harness(Limits::default());
    let source = r#"
        const seen = [];
        try { await tools.read({ id: "one" }); } catch (e) { seen.push([e.code, e.details.issues[0].path]); }
        try { await tools.raed({ id: 1 }); } catch (e) { seen.push([e.code, e.details.suggestions]); }
        const cyclic = {}; cyclic.self = cyclic;
        try { await tools.read(cyclic); } catch (e) { seen.push([e.code, e.details.issues[0].message]); }
        // An unknown name is refused as such, whatever its arguments.
        try { await tools.raed(cyclic); } catch (e) { seen.push([e.code]); }
        // What JSON.stringify refuses still maps: a BigInt becomes its decimal string.
        const big = await tools.memory.search_nodes({ query: 12345678901234567890n, skip: undefined });
        return [seen, big.nodes];
    "#;
    let outcome = run_code(&h, source).await;
    assert_eq!(
        outcome.value_json(),
        Some(json!([
            [
                ["INVALID_ARGS", "/id"],
                ["UNKNOWN_TOOL", ["read"]],
                [
                    "INVALID_ARGS",
                    "cyclic value: $.self refers back to $ (at $.self)"
                ],
                ["UNKNOWN_TOOL"],
            ],
            ["12345678901234567890"]
        ])),
        "{}",
        outcome.to_json()
    );
    assert_eq!(outcome.stats.tool_calls, 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_errors_and_arguments_hold_against_hostile_programs() {
    let h = harness(Limits::default());
    // A failed call's ToolError is built while deno_core converts the error: hooks the program
    // installs must not reach that step (or turn the failure into something else).
    let source = r#"
        Error.prepareStackTrace = () => { throw new Error("hooked"); };
        Object.prototype.toJSON = function () { if ("issues" in this || "by" in this) throw 1; return this; };
        let redirected = "no";
        try { Object.setPrototypeOf(ToolError, function () { throw 0; }); redirected = "yes"; } catch {}
        const seen = [redirected];
        try { await tools.read({ id: "bad" }); } catch (e) { seen.push([e.name, e.code, e instanceof ToolError, e.details.issues[0].path]); }
        try { await tools.guarded({ deny: true }); } catch (e) { seen.push([e.name, e.code, e.details.by]); }
        delete Object.prototype.toJSON;
        // A getter that throws once is an error, even though a second reading would succeed.
        let first = true;
        const flaky = { get id() { if (first) { first = false; throw new Error("first read"); } return 1; } };
        try { await tools.read(flaky); } catch (e) { seen.push([e.code, e.details.issues[0].message]); }
        return seen;
    "#;
    let outcome = run_code(&h, source).await;
    assert_eq!(
        outcome.value_json(),
        Some(json!([
            "no",
            ["ToolError", "INVALID_ARGS", true, "/id"],
            ["ToolError", "DENIED", "approver"],
            [
                "INVALID_ARGS",
                "reading the arguments threw: first read (at $)"
            ]
        ])),
        "{}",
        outcome.to_json()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approval_waits_do_not_count_against_the_deadline() {
    // The approver takes 500 ms; the run's deadline is 300 ms.
    let h = harness(Limits::default().with_deadline(Duration::from_millis(300)));
    let started = Instant::now();
    let outcome = run_code(&h, "return await tools.guarded({});").await;
    assert_eq!(
        outcome.value_json(),
        Some(json!("approved and ran")),
        "{}",
        outcome.to_json()
    );
    assert!(started.elapsed() >= Duration::from_millis(500));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approver_refusal_rejects_only_that_call() {
    let h = harness(Limits::default());
    let source = "let denied; try { await tools.guarded({ deny: true }); } catch (e) { denied = [e.code, e.details.by, e.details.reason]; } const after = await tools.memory.search_nodes({ query: 'x' }); return { denied, after: after.nodes };";
    let outcome = run_code(&h, source).await;
    assert_eq!(
        outcome.value_json(),
        Some(json!({"denied": ["DENIED", "approver", "not today"], "after": ["x"]})),
        "{}",
        outcome.to_json()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_run_code_is_durable_and_nested_calls_are_observed_live() {
    let mut h = harness(Limits::default());
    let outcome = run_code(
        &h,
        "const r = await tools.memory.search_nodes({ query: 'q' }); return r.nodes.length;",
    )
    .await;
    assert!(outcome.is_ok());
    let log = std::fs::read_to_string(&h.log_path).unwrap();
    let lines: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 1, "{log}");
    assert_eq!(lines[0]["tool"], "run_code");
    assert_eq!(lines[0]["event"], "tool/result");
    assert!(
        !log.contains("intermediate"),
        "a nested value reached the durable log: {log}"
    );

    let mut nested = Vec::new();
    while let Ok(event) = h.events.try_recv() {
        if let Event::Result(result) = event
            && result.tool == "memory.search_nodes"
        {
            nested.push(serde_json::to_value(&result.caller).unwrap());
        }
    }
    assert_eq!(nested.len(), 1);
    assert_eq!(nested[0]["kind"], "code_mode");
    assert_eq!(nested[0]["seq"], 1);
    assert!(nested[0]["run_id"].as_str().unwrap().starts_with("r_"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_durable_result_event_follows_the_runs_status() {
    let h = harness(Limits {
        deadline: Duration::from_millis(300),
        ..Limits::default()
    });
    for source in ["return 1", "throw new TypeError('boom')", "while (true) {}"] {
        run_code(&h, source).await;
    }
    let log = std::fs::read_to_string(&h.log_path).unwrap();
    let lines: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let seen: Vec<(Value, Value, Value)> = lines
        .iter()
        .map(|l| {
            (
                l["status"].clone(),
                l["code"].clone(),
                l["value"]["status"].clone(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            (json!("ok"), Value::Null, json!("ok")),
            (json!("error"), json!("ERROR"), json!("error")),
            (json!("error"), json!("TIMEOUT"), json!("timeout")),
        ],
        "{log}"
    );
    assert_eq!(lines[1]["message"], "boom");
    assert_eq!(
        lines[1]["details"],
        json!({"status": "error", "name": "TypeError"})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_code_description_embeds_the_sdk_of_visible_tools() {
    let h = harness(Limits::default());
    let description = h.harness.run_code().description();
    assert!(description.contains("declare const tools"), "{description}");
    assert!(description.contains("search_nodes"), "{description}");
    assert!(
        !description.contains("run_code("),
        "run_code must not see itself"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_code_renders_status_console_and_value() {
    let h = harness(Limits::default());
    let outcome = h
        .harness
        .outer()
        .call(CallRequest::new(
            RUN_CODE,
            json!({"code": "console.log('hi'); console.error('bad'); return {a: 1};"}),
        ))
        .await;
    assert_eq!(outcome.content, "hi\nerror: bad\n=> {\n  \"a\": 1\n}\n");
    let failed = h
        .harness
        .outer()
        .call(CallRequest::new(
            RUN_CODE,
            json!({"code": "\n\nthrow new TypeError('boom');"}),
        ))
        .await;
    assert!(
        failed
            .content
            .starts_with("[error] TypeError: boom (line 3)"),
        "{}",
        failed.content
    );
    let card = serde_json::to_value(failed.result_card.unwrap()).unwrap();
    assert_eq!(
        (card["kind"].as_str(), card["exit_code"].as_i64()),
        (Some("terminal"), Some(1))
    );
    let call_card = serde_json::to_value(failed.call_card.unwrap()).unwrap();
    assert_eq!(call_card["body"], "\n\nthrow new TypeError('boom');");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_status_reflects_program_failures() {
    let h = harness(Limits::default().with_deadline(Duration::from_millis(300)));
    assert_eq!(
        run_code(&h, "while (true) {}").await.status,
        RunStatus::Timeout
    );
    let uncaught = run_code(&h, "const a = 1;\n\n  await tools.read({ id: 'bad' });").await;
    assert_eq!(uncaught.status, RunStatus::Error);
    let error = uncaught.error.unwrap();
    assert_eq!(error.code.as_deref(), Some("INVALID_ARGS"));
    // The error points at the call that failed, and its stack shows only the program's frames.
    assert_eq!(
        (error.line, error.column),
        (Some(3), Some(15)),
        "{:?}",
        error.stack
    );
    let stack = error.stack.unwrap();
    assert!(
        stack.starts_with("ToolError: invalid arguments for `read`"),
        "{stack}"
    );
    assert!(stack.contains("\n    at program:3:15"), "{stack}");
    assert!(
        stack
            .lines()
            .skip(1)
            .all(|frame| frame.trim_start().starts_with("at ") && frame.contains("program:")),
        "{stack}"
    );
    // A failure that arrives later (the approver refuses after a wait) points at its call too.
    let refused = run_code(&h, "const a = 1;\n  await tools.guarded({ deny: true });").await;
    let error = refused.error.unwrap();
    assert_eq!(error.code.as_deref(), Some("DENIED"));
    assert_eq!(error.line, Some(2), "{:?}", error.stack);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_log_records_nested_calls_without_values() {
    let dir = tempfile::tempdir().unwrap();
    let audit_path = dir.path().join("audit.jsonl");
    let mut registry = ToolRegistry::new();
    registry
        .register(
            ToolDefinition::builder("lookup")
                .description("returns a secret")
                .parameters(json!({"type": "object", "properties": {"key": {"type": "string"}}}))
                .execute(|_args, _exec| async { Ok(json!({"secret": "do-not-log-me"})) })
                .build()
                .unwrap(),
        )
        .unwrap();
    let audit: Arc<dyn EventSink> =
        Arc::new(codemode::pipeline::AuditLog::open(&audit_path).unwrap());
    let harness = codemode::Harness::builder()
        .sandbox(sandbox().clone())
        .inner(move |pipeline| pipeline.shared_observer(Arc::clone(&audit)))
        .build(registry)
        .unwrap();
    let outcome = harness
        .outer()
        .call(CallRequest::new(RUN_CODE, json!({"code": "await tools.lookup({ key: 'a' }); try { await tools.lookup({ key: 1 }); } catch {} return 'done';"})))
        .await;
    assert!(outcome.is_ok());
    let audit = std::fs::read_to_string(&audit_path).unwrap();
    let (plans, records): (Vec<Value>, Vec<Value>) = audit
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .partition(|r| r["event"] == "audit_plan");
    // The plan: both call sites, the constant arguments as digests only.
    assert_eq!(plans.len(), 1, "{audit}");
    let planned = plans[0]["planned_calls"].as_array().unwrap();
    assert_eq!(planned.len(), 2, "{audit}");
    assert_eq!(
        planned[0]["args_sha256"],
        codemode::pipeline::args_digest(&json!({"key": "a"}))
    );
    assert_eq!(records.len(), 2, "{audit}");
    assert_eq!(records[0]["tool"], "lookup");
    assert_eq!(records[0]["status"], "ok");
    assert_eq!(records[1]["code"], "INVALID_ARGS");
    assert_eq!(records[0]["args_sha256"].as_str().unwrap().len(), 64);
    assert!(
        !audit.contains("do-not-log-me"),
        "a value reached the audit log: {audit}"
    );
}

//! OpenTelemetry: the spans of a run as an exporter receives them. A harness run whose program
//! makes nested calls gives one trace: `execute_tool run_code` → `code_mode_run` → one
//! `execute_tool {tool}` per nested call, with the GenAI attributes and an error status for a
//! failed call; in thread and in process isolation.

use std::collections::HashMap;

use codemode::Harness;
use codemode::pipeline::{HookDecision, pre_hook_fn};
use codemode::sandbox::Sandbox;
use opentelemetry::trace::{SpanId, Status, TracerProvider as _};
use opentelemetry::{Array, Value as OtelValue};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use serde_json::json;
use tracing_subscriber::layer::SubscriberExt;

use crate::common::{process_sandbox, sandbox};
use crate::support::{echo_tool, registry};

/// Calls echo twice; the second call is denied by a pre hook.
const PROGRAM: &str = r#"
const a = await tools.echo({ text: "one" });
let code;
try { await tools.echo({ text: "deny me" }); } catch (e) { code = e.code; }
return { a: a.echo, code };
"#;

/// Runs `PROGRAM` on `sandbox` with a tracing subscriber (this thread's default) that exports
/// to memory, and returns the finished spans.
async fn exported_spans(sandbox: &Sandbox) -> Vec<SpanData> {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("test")));
    // Scoped to this thread (the test's current-thread runtime): the nested calls are issued on
    // other threads, and still reach it through their parent span.
    let _default = tracing::subscriber::set_default(subscriber);
    let harness = Harness::builder()
        .sandbox(sandbox.clone())
        .inner(|pipeline| {
            pipeline.pre_hook(pre_hook_fn("deny", |call| {
                if call.args.get("text") == Some(&json!("deny me")) {
                    HookDecision::Deny {
                        reason: "not this one".into(),
                    }
                } else {
                    HookDecision::Allow
                }
            }))
        })
        .build(registry([echo_tool("echo")]))
        .unwrap();
    let outcome = harness.run(PROGRAM).await.unwrap();
    assert_eq!(
        outcome.value_json(),
        Some(json!({"a": "one", "code": "DENIED"})),
        "{}",
        outcome.to_json()
    );
    drop(harness);
    provider.force_flush().unwrap();
    exporter.get_finished_spans().unwrap()
}

fn attributes(span: &SpanData) -> HashMap<String, String> {
    span.attributes
        .iter()
        .map(|kv| {
            let value = match &kv.value {
                OtelValue::String(s) => s.to_string(),
                OtelValue::I64(n) => n.to_string(),
                OtelValue::Bool(b) => b.to_string(),
                OtelValue::F64(f) => f.to_string(),
                OtelValue::Array(Array::String(items)) => format!("{items:?}"),
                other => format!("{other:?}"),
            };
            (kv.key.to_string(), value)
        })
        .collect()
}

fn named<'a>(spans: &'a [SpanData], name: &str) -> Vec<&'a SpanData> {
    spans.iter().filter(|s| s.name == name).collect()
}

fn assert_one_trace_of_a_run(spans: &[SpanData]) {
    let names: Vec<&str> = spans.iter().map(|s| &*s.name).collect();
    let [outer] = named(spans, "execute_tool run_code")[..] else {
        panic!("one run_code span: {names:?}")
    };
    let [run] = named(spans, "code_mode_run")[..] else {
        panic!("one run span: {names:?}")
    };
    let nested = named(spans, "execute_tool echo");
    assert_eq!(nested.len(), 2, "{names:?}");

    // One trace: run_code → run → each nested call.
    let trace_id = outer.span_context.trace_id();
    assert_eq!(
        outer.parent_span_id,
        SpanId::INVALID,
        "run_code is the root"
    );
    assert_eq!(run.span_context.trace_id(), trace_id);
    assert_eq!(run.parent_span_id, outer.span_context.span_id());
    for call in &nested {
        assert_eq!(call.span_context.trace_id(), trace_id);
        assert_eq!(call.parent_span_id, run.span_context.span_id());
    }

    // GenAI semantic conventions for tool execution, and codemode's own attributes.
    let outer_attrs = attributes(outer);
    assert_eq!(outer_attrs["gen_ai.operation.name"], "execute_tool");
    assert_eq!(outer_attrs["gen_ai.tool.name"], "run_code");
    assert_eq!(outer_attrs["codemode.caller"], "direct");
    let run_attrs = attributes(run);
    let run_id = &run_attrs["codemode.run_id"];
    assert!(run_id.starts_with("r_"), "{run_attrs:?}");
    assert_eq!(run_attrs["codemode.run.status"], "ok");
    assert_eq!(run_attrs["codemode.run.tool_calls"], "2");
    assert_eq!(
        outer_attrs.get("codemode.run_id"),
        None,
        "a direct call is not nested in a run"
    );

    let mut by_seq: Vec<(String, &SpanData, HashMap<String, String>)> = nested
        .iter()
        .map(|s| {
            let attrs = attributes(s);
            (attrs["codemode.seq"].clone(), *s, attrs)
        })
        .collect();
    by_seq.sort_by(|a, b| a.0.cmp(&b.0));
    let seqs: Vec<&str> = by_seq.iter().map(|(seq, ..)| seq.as_str()).collect();
    assert_eq!(seqs, ["1", "2"]);
    for (_, _, attrs) in &by_seq {
        assert_eq!(attrs["gen_ai.operation.name"], "execute_tool");
        assert_eq!(attrs["gen_ai.tool.name"], "echo");
        assert!(attrs["gen_ai.tool.call.id"].starts_with("c_"), "{attrs:?}");
        assert_eq!(attrs["codemode.caller"], "code_mode");
        assert_eq!(&attrs["codemode.run_id"], run_id);
    }
    assert_ne!(
        by_seq[0].2["gen_ai.tool.call.id"],
        by_seq[1].2["gen_ai.tool.call.id"]
    );
    let (_, ok_call, ok_attrs) = &by_seq[0];
    assert_eq!(ok_call.status, Status::Unset);
    assert_eq!(ok_attrs.get("error.type"), None);
    let (_, denied, denied_attrs) = &by_seq[1];
    assert!(
        matches!(denied.status, Status::Error { .. }),
        "{:?}",
        denied.status
    );
    assert_eq!(denied_attrs["error.type"], "DENIED");
    // The program caught the denial: the run and its call are ok.
    assert_eq!(run.status, Status::Unset);
    assert_eq!(outer.status, Status::Unset);
}

#[tokio::test]
async fn a_runs_nested_calls_are_children_of_its_span_in_thread_isolation() {
    let spans = exported_spans(sandbox()).await;
    assert_one_trace_of_a_run(&spans);
}

#[tokio::test]
async fn a_runs_nested_calls_are_children_of_its_span_in_process_isolation() {
    let spans = exported_spans(process_sandbox()).await;
    assert_one_trace_of_a_run(&spans);
}

#[tokio::test]
async fn a_run_that_fails_is_an_error_span_with_its_status_as_error_type() {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("test")));
    let _default = tracing::subscriber::set_default(subscriber);
    let harness = Harness::builder()
        .sandbox(sandbox().clone())
        .build(registry([echo_tool("echo")]))
        .unwrap();
    let outcome = harness.run("throw new Error('boom')").await.unwrap();
    assert!(!outcome.is_ok());
    drop(harness);
    provider.force_flush().unwrap();
    let spans = exporter.get_finished_spans().unwrap();
    for name in ["execute_tool run_code", "code_mode_run"] {
        let [span] = named(&spans, name)[..] else {
            panic!("one {name} span")
        };
        assert!(matches!(span.status, Status::Error { .. }), "{name}");
        assert_eq!(attributes(span)["error.type"], "ERROR", "{name}");
    }
}

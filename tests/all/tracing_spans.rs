use std::sync::{Arc, Mutex};

use codemode::pipeline::CallRequest;
use codemode::{Caller, Pipeline};
use serde_json::json;
use tracing::Subscriber;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

use crate::support::{echo_tool, registry};

#[derive(Clone, Debug, Default)]
struct Seen {
    name: String,
    parent: Option<String>,
    fields: Vec<(String, String)>,
}

#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<Seen>>>);

struct Fields<'a>(&'a mut Vec<(String, String)>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.push((field.name().to_owned(), format!("{value:?}")));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.push((field.name().to_owned(), value.to_owned()));
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Capture {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let span = ctx.span(id).expect("new span exists");
        let mut seen = Seen {
            name: span.name().to_owned(),
            parent: span.parent().map(|p| p.name().to_owned()),
            ..Default::default()
        };
        attrs.record(&mut Fields(&mut seen.fields));
        self.0.lock().unwrap().push(seen);
    }
}

#[test]
fn each_call_gets_a_tool_call_span_nested_under_the_callers_span() {
    let capture = Capture::default();
    let subscriber = tracing_subscriber::registry().with(capture.clone());
    tracing::subscriber::with_default(subscriber, || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let p = Pipeline::builder(registry([echo_tool("echo")])).build();
        let run = tracing::info_span!("run_code", run_id = "r_1");
        let out = run.in_scope(|| {
            let fut = p.call(
                CallRequest::new("echo", json!({"text": "a"})).caller(Caller::code_mode("r_1", 1)),
            );
            rt.block_on(fut)
        });
        assert!(out.is_ok());
        let explicit = tracing::info_span!("sandbox_op");
        let req = CallRequest::new("echo", json!({"text": "b"})).parent_span(explicit.clone());
        let out2 = rt.block_on(p.call(req));
        let seen = capture.0.lock().unwrap().clone();
        let calls: Vec<&Seen> = seen.iter().filter(|s| s.name == "tool_call").collect();
        assert_eq!(calls.len(), 2, "{seen:?}");
        assert_eq!(calls[0].parent.as_deref(), Some("run_code"));
        let fields: Vec<(&str, &str)> = calls[0]
            .fields
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        // The OpenTelemetry GenAI conventions for tool execution; status and error come at
        // the end (recorded, not set here).
        assert_eq!(
            fields,
            [
                ("otel.name", "execute_tool echo"),
                ("gen_ai.operation.name", "execute_tool"),
                ("gen_ai.tool.name", "echo"),
                ("gen_ai.tool.call.id", &*out.call_id),
                ("codemode.caller", "code_mode"),
                ("codemode.run_id", "r_1"),
                ("codemode.seq", "1"),
            ]
        );
        assert_eq!(calls[1].parent.as_deref(), Some("sandbox_op"));
        assert!(
            calls[1]
                .fields
                .iter()
                .any(|(k, v)| k == "codemode.caller" && v == "direct")
        );
        assert!(!calls[1].fields.iter().any(|(k, _)| k == "codemode.run_id"));
        assert!(
            calls[1]
                .fields
                .iter()
                .any(|(k, v)| k == "gen_ai.tool.call.id" && *v == *out2.call_id)
        );
    });
}

#[test]
fn a_call_issued_on_another_thread_nests_under_its_explicit_parent() {
    let capture = Capture::default();
    let subscriber = tracing_subscriber::registry().with(capture.clone());
    // Only this thread has the subscriber: the call is issued on a thread without one, as a
    // nested call is on the sandbox's thread.
    let run = tracing::subscriber::with_default(subscriber, || {
        tracing::info_span!("code_mode_run", codemode.run_id = "r_2")
    });
    let p = Pipeline::builder(registry([echo_tool("echo")])).build();
    let out = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(
            p.call(
                CallRequest::new("echo", json!({"text": "a"}))
                    .caller(Caller::code_mode("r_2", 1))
                    .parent_span(run),
            ),
        )
    })
    .join()
    .unwrap();
    assert!(out.is_ok());
    let seen = capture.0.lock().unwrap().clone();
    let calls: Vec<&Seen> = seen.iter().filter(|s| s.name == "tool_call").collect();
    assert_eq!(calls.len(), 1, "{seen:?}");
    assert_eq!(calls[0].parent.as_deref(), Some("code_mode_run"));
}

use codemode::pipeline::{CallRequest, ChannelSink, Event};
use codemode::schema::{object, string};
use codemode::tool::{Card, SearchHit};
use codemode::{Caller, Pipeline, ToolDefinition, ToolFailure};
use serde_json::{Value, json};

use crate::support::{Recorder, registry};

/// `search({query})` with presenters and progress reports.
pub fn search_tool() -> ToolDefinition {
    ToolDefinition::builder("search")
        .parameters(object().property("query", string()))
        .parallel_safe()
        .execute(|args: Value, exec| async move {
            exec.progress("scanning");
            Ok::<_, ToolFailure>(
                json!({"hits": [{"path": "a.rs", "line": 3, "text": args["query"]}]}),
            )
        })
        .present_call(|args| Card::Generic {
            title: format!("search {}", args["query"]),
            body: None,
        })
        .present_result(|args, result| Card::Search {
            title: format!(
                "{} ({})",
                args["query"].as_str().unwrap_or(""),
                result.code.unwrap_or("ok")
            ),
            query: args["query"].as_str().unwrap_or("").to_owned(),
            hits: result
                .value
                .and_then(|v| v["hits"].as_array())
                .map(|hits| {
                    hits.iter()
                        .map(|h| SearchHit {
                            path: h["path"].as_str().unwrap().into(),
                            line: h["line"].as_u64().unwrap(),
                            text: h["text"].as_str().unwrap().into(),
                        })
                        .collect()
                })
                .unwrap_or_default(),
        })
        .build()
        .unwrap()
}

fn pipeline() -> (Pipeline, Recorder, Recorder) {
    let live = Recorder::default();
    let durable = Recorder::default();
    let p = Pipeline::builder(registry([search_tool()]))
        .observer(live.clone())
        .durable_sink(durable.clone())
        .build();
    (p, live, durable)
}

#[tokio::test]
async fn direct_calls_emit_live_observations_and_the_durable_event() {
    let (p, live, durable) = pipeline();
    let out = p
        .call(CallRequest::new("search", json!({"query": "fn main"})))
        .await;
    assert_eq!(
        live.names(),
        ["tools/call", "tools/progress", "tools/result"]
    );
    assert_eq!(durable.names(), ["tool/result"]);

    let call = serde_json::to_value(&live.events()[0]).unwrap();
    assert_eq!(call["event"], "tools/call");
    assert_eq!(call["call_id"], *out.call_id);
    assert_eq!(call["caller"], json!({"kind": "direct"}));
    assert_eq!(call["args"], json!({"query": "fn main"}));
    assert_eq!(
        call["card"],
        json!({"kind": "generic", "title": "search \"fn main\""})
    );
    assert!(call["at"].as_str().unwrap().ends_with('Z'));

    let progress = serde_json::to_value(&live.events()[1]).unwrap();
    assert_eq!(progress["message"], "scanning");

    let result = serde_json::to_value(&durable.events()[0]).unwrap();
    assert_eq!(result["event"], "tool/result");
    assert_eq!(result["tool"], "search");
    assert_eq!(result["status"], "ok");
    assert!(result.get("code").is_none());
    assert_eq!(result["value"]["hits"][0]["line"], 3);
    assert_eq!(result["content"], out.content);
    assert_eq!(result["contexts"], json!([]));
    assert_eq!(result["card"]["kind"], "search");
    assert_eq!(
        result["card"]["hits"][0],
        json!({"path": "a.rs", "line": 3, "text": "fn main"})
    );
    assert!(result["duration_ms"].as_f64().unwrap() >= 0.0);
    assert!(result["started_at"].is_string());
    assert_eq!(
        out.result_card,
        serde_json::from_value(result["card"].clone()).ok()
    );
}

#[tokio::test]
async fn nested_code_mode_calls_are_never_durable() {
    let (p, live, durable) = pipeline();
    let req = CallRequest::new("search", json!({"query": "x"})).caller(Caller::code_mode("r_1", 3));
    assert!(p.call(req).await.is_ok());
    assert_eq!(
        live.names(),
        ["tools/call", "tools/progress", "tools/result"]
    );
    assert!(durable.events().is_empty());
    let call = serde_json::to_value(&live.events()[0]).unwrap();
    assert_eq!(
        call["caller"],
        json!({"kind": "code_mode", "run_id": "r_1", "seq": 3})
    );
}

#[tokio::test]
async fn error_results_carry_the_code_and_no_value() {
    let (p, live, durable) = pipeline();
    let _ = p
        .call(CallRequest::new("search", json!({"query": 1})))
        .await;
    let _ = p.call(CallRequest::new("nope", json!({}))).await;
    assert_eq!(
        live.names(),
        ["tools/call", "tools/result", "tools/call", "tools/result"]
    );
    let r = serde_json::to_value(&durable.events()[0]).unwrap();
    assert_eq!(r["status"], "error");
    assert_eq!(r["code"], "INVALID_ARGS");
    assert_eq!(r["details"]["issues"][0]["path"], "/query");
    assert!(r.get("value").is_none());
    let r = serde_json::to_value(&durable.events()[1]).unwrap();
    assert_eq!(r["code"], "UNKNOWN_TOOL");
}

#[test]
fn caller_serialises_per_the_interface() {
    assert_eq!(
        serde_json::to_value(Caller::Direct).unwrap(),
        json!({"kind": "direct"})
    );
    assert_eq!(
        serde_json::to_value(Caller::code_mode("r_9", 1)).unwrap(),
        json!({"kind": "code_mode", "run_id": "r_9", "seq": 1})
    );
    let back: Caller =
        serde_json::from_value(json!({"kind": "code_mode", "run_id": "r", "seq": 2})).unwrap();
    assert_eq!(back, Caller::code_mode("r", 2));
}

#[test]
fn events_round_trip_through_json() {
    let line = r#"{"event":"tools/progress","call_id":"c_1","message":"half","at":"2026-01-01T00:00:00Z"}"#;
    let e: Event = serde_json::from_str(line).unwrap();
    assert_eq!(e.name(), "tools/progress");
    assert_eq!(serde_json::to_string(&e).unwrap(), line);
}

#[tokio::test]
async fn channel_sink_streams_events_without_blocking() {
    let (sink, mut rx) = ChannelSink::new();
    let p = Pipeline::builder(registry([search_tool()]))
        .observer(sink)
        .build();
    let out = p
        .call(CallRequest::new("search", json!({"query": "q"})))
        .await;
    let mut ids = Vec::new();
    while let Ok(e) = rx.try_recv() {
        ids.push(e.call_id().to_owned());
    }
    assert_eq!(ids, vec![out.call_id.to_string(); 3]);
}

#[tokio::test]
async fn durable_event_is_one_compact_line_in_interface_order() {
    let durable = Recorder::default();
    let p = Pipeline::builder(registry([crate::support::echo_tool("echo")]))
        .durable_sink(durable.clone())
        .build();
    p.call(CallRequest::new("echo", json!({"text": "hello"})))
        .await;
    let line = serde_json::to_string(&durable.events()[0]).unwrap();
    assert!(!line.contains('\n'));
    let v: Value = serde_json::from_str(&line).unwrap();
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "event",
            "call_id",
            "tool",
            "caller",
            "status",
            "value",
            "content",
            "contexts",
            "started_at",
            "duration_ms",
            "args",
            "executed"
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_call_queued_behind_an_exclusive_one_says_so_and_when_its_turn_comes() {
    let slow = ToolDefinition::builder("slow")
        .execute(|_, _| async {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            Ok::<_, ToolFailure>(json!(1))
        })
        .build()
        .unwrap();
    let (sink, mut events) = ChannelSink::new();
    let p = Pipeline::builder(registry([slow])).observer(sink).build();
    let first = p.call(CallRequest::new("slow", json!({})));
    let second = p.call(CallRequest::new("slow", json!({})));
    futures::future::join(first, second).await;
    let mut seen = Vec::new();
    while let Ok(event) = events.try_recv() {
        seen.push(match event {
            Event::Call(e) => format!("call queued={}", e.queued),
            Event::Started(e) => format!("started after {} ms", e.queued_ms.round()),
            Event::Result(e) => format!("result queued {} ms", e.queued_ms.round()),
            other => other.name().to_string(),
        });
    }
    assert_eq!(
        seen,
        [
            "call queued=false",
            "call queued=true",
            "result queued 0 ms",
            "started after 50 ms",
            "result queued 50 ms",
        ]
    );
}

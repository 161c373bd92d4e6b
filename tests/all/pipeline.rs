use std::sync::Arc;

use codemode::pipeline::{CallLimits, CallRequest, CallStatus, ErrorCode};
use codemode::schema::{integer, object, string};
use codemode::{Pipeline, ToolDefinition, ToolFailure};
use serde_json::{Value, json};

use crate::support::{echo_tool, registry};

fn pipeline(tools: impl IntoIterator<Item = ToolDefinition>) -> Pipeline {
    Pipeline::builder(registry(tools)).build()
}

#[tokio::test]
async fn successful_call_returns_value_content_and_timing() {
    let p = pipeline([echo_tool("echo")]);
    let out = p
        .call(CallRequest::new("echo", json!({"text": "hi"})))
        .await;
    assert_eq!(out.status, CallStatus::Ok);
    assert_eq!(out.value.as_deref(), Some(&json!({"echo": "hi"})));
    assert_eq!(out.content, r#"{"echo":"hi"}"#);
    assert!(out.error.is_none());
    assert!(out.call_id.starts_with("c_"));
    assert!(out.timing.started_at.contains('T'));
    assert_eq!(out.result().unwrap(), &json!({"echo": "hi"}));
}

#[tokio::test]
async fn unknown_tool_suggests_close_names() {
    let p = pipeline([echo_tool("grep"), echo_tool("glob")]);
    let out = p.call(CallRequest::new("grpe", json!({}))).await;
    let err = out.error.unwrap();
    assert_eq!(err.code(), ErrorCode::UnknownTool);
    assert_eq!(err.code().as_str(), "UNKNOWN_TOOL");
    assert_eq!(err.details()["suggestions"][0], "grep");
    assert!(err.message.contains("did you mean grep"), "{}", err.message);
    assert_eq!(out.content, err.message);
}

#[tokio::test]
async fn invalid_args_list_every_issue_and_never_run_the_body() {
    let ran = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = ran.clone();
    let tool = ToolDefinition::builder("t")
        .parameters(
            object()
                .property("a", string())
                .property("n", integer().minimum(1)),
        )
        .execute(move |_, _| {
            flag.store(true, std::sync::atomic::Ordering::SeqCst);
            async { Ok::<_, ToolFailure>(Value::Null) }
        })
        .build()
        .unwrap();
    let p = pipeline([tool]);
    let out = p.call(CallRequest::new("t", json!({"a": 1, "n": 0}))).await;
    let err = out.error.unwrap();
    assert_eq!(err.code().as_str(), "INVALID_ARGS");
    let issues = err.details()["issues"].as_array().unwrap().clone();
    let paths: Vec<&str> = issues.iter().map(|i| i["path"].as_str().unwrap()).collect();
    assert_eq!(paths, ["/a", "/n"]);
    assert!(
        issues
            .iter()
            .all(|i| i["message"].as_str().is_some_and(|m| !m.is_empty()))
    );
    assert!(!ran.load(std::sync::atomic::Ordering::SeqCst));
}

#[tokio::test]
async fn unconvertible_arguments_are_invalid_args() {
    let p = pipeline([echo_tool("echo")]);
    let issue = codemode::schema::ArgIssue::new("/self", "cycle at /self");
    let out = p
        .call(CallRequest::unconvertible("echo", vec![issue]))
        .await;
    let err = out.error.unwrap();
    assert_eq!(err.code(), ErrorCode::InvalidArgs);
    assert_eq!(
        err.details(),
        json!({"issues": [{"path": "/self", "message": "cycle at /self"}]})
    );
}

#[tokio::test]
async fn argument_and_result_bytes_are_limited() {
    let big = ToolDefinition::builder("big")
        .parameters(json!({"type": "object"}))
        .execute(|_, _| async { Ok::<_, ToolFailure>(json!("x".repeat(100))) })
        .build()
        .unwrap();
    let p = Pipeline::builder(registry([big]))
        .limits(CallLimits {
            max_arg_bytes: 50,
            max_result_bytes: 64,
        })
        .build();
    let out = p
        .call(CallRequest::new("big", json!({"pad": "y".repeat(60)})))
        .await;
    let err = out.error.unwrap();
    assert_eq!(err.code().as_str(), "LIMIT_EXCEEDED");
    assert_eq!(
        err.details(),
        json!({"limit": "argument_bytes", "value": 70})
    );
    let out = p.call(CallRequest::new("big", json!({}))).await;
    let err = out.error.unwrap();
    assert_eq!(
        err.details(),
        json!({"limit": "result_bytes", "value": 102})
    );
}

#[tokio::test]
async fn output_breaking_the_schema_is_never_a_success() {
    let liar = ToolDefinition::builder("liar")
        .output_schema(object().property("n", integer()))
        .execute(|_, _| async { Ok::<_, ToolFailure>(json!({"n": "three"})) })
        .build()
        .unwrap();
    let p = pipeline([liar]);
    let out = p.call(CallRequest::new("liar", json!({}))).await;
    assert_eq!(out.status, CallStatus::Error);
    assert!(out.value.is_none());
    let err = out.error.unwrap();
    assert_eq!(err.code().as_str(), "OUTPUT_INVALID");
    assert_eq!(err.details()["issues"][0]["path"], "/n");
    assert!(err.details().get("by").is_none());
}

#[tokio::test]
async fn body_failure_is_tool_error_with_retryable_and_attempts() {
    let failing = ToolDefinition::builder("fails")
        .execute(|_, _| async { Err::<Value, _>(ToolFailure::new("disk on fire")) })
        .build()
        .unwrap();
    let p = pipeline([failing]);
    let out = p.call(CallRequest::new("fails", json!({}))).await;
    let err = out.error.unwrap();
    assert_eq!(err.code().as_str(), "TOOL_ERROR");
    assert_eq!(err.details(), json!({"retryable": false, "attempts": 1}));
    assert_eq!(err.message, "disk on fire");
    assert_eq!(err.to_json()["code"], "TOOL_ERROR");
}

#[tokio::test]
async fn render_and_finalize_shape_the_content_but_not_the_value() {
    let tool = ToolDefinition::builder("lines")
        .execute(|_, _| async { Ok::<_, ToolFailure>(json!(["a", "b", "c", "d"])) })
        .render(|v| {
            v.as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_str().unwrap())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .finalize_content(|content, _| content.chars().take(3).collect::<String>() + "…")
        .build()
        .unwrap();
    let p = pipeline([tool]);
    let out = p.call(CallRequest::new("lines", json!({}))).await;
    assert_eq!(out.content, "a\nb…");
    assert_eq!(out.value.as_deref(), Some(&json!(["a", "b", "c", "d"])));
}

#[test]
fn error_codes_match_the_design_table() {
    let all = [
        (ErrorCode::UnknownTool, "UNKNOWN_TOOL"),
        (ErrorCode::InvalidArgs, "INVALID_ARGS"),
        (ErrorCode::Denied, "DENIED"),
        (ErrorCode::Timeout, "TIMEOUT"),
        (ErrorCode::ToolError, "TOOL_ERROR"),
        (ErrorCode::OutputInvalid, "OUTPUT_INVALID"),
        (ErrorCode::Blocked, "BLOCKED"),
        (ErrorCode::Cancelled, "CANCELLED"),
        (ErrorCode::LimitExceeded, "LIMIT_EXCEEDED"),
    ];
    for (code, text) in all {
        assert_eq!(code.as_str(), text);
    }
}

#[test]
fn call_future_can_be_spawned_from_another_thread() {
    fn assert_send_static<T: Send + 'static>(_: &T) {}
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let p = pipeline([echo_tool("echo")]);
    // A sandbox thread issues the call and spawns it on the host runtime.
    let handle = rt.handle().clone();
    let join = std::thread::spawn(move || {
        let fut = p.call(CallRequest::new("echo", json!({"text": "from a sandbox"})));
        assert_send_static(&fut);
        handle.spawn(fut)
    })
    .join()
    .unwrap();
    let out = rt.block_on(join).unwrap();
    assert_eq!(out.value.unwrap()["echo"], "from a sandbox");
}

#[tokio::test]
async fn cancelling_the_token_ends_the_call_as_cancelled_and_drops_the_body() {
    let dropped = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = dropped.clone();
    let slow = ToolDefinition::builder("slow")
        .execute(move |_, _| {
            let guard = crate::wrappers::DropFlag(flag.clone());
            async move {
                let _guard = guard;
                futures::future::pending::<()>().await;
                Ok::<_, ToolFailure>(Value::Null)
            }
        })
        .build()
        .unwrap();
    let p = pipeline([slow]);
    let token = tokio_util::sync::CancellationToken::new();
    let fut = p.call(CallRequest::new("slow", json!({})).cancel_token(token.clone()));
    let handle = tokio::spawn(fut);
    tokio::task::yield_now().await;
    token.cancel();
    let out = handle.await.unwrap();
    assert_eq!(out.error.unwrap().code().as_str(), "CANCELLED");
    assert!(dropped.load(std::sync::atomic::Ordering::SeqCst));
}

#[tokio::test]
async fn a_call_issued_with_a_cancelled_token_never_runs() {
    let ran = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = ran.clone();
    let tool = ToolDefinition::builder("t")
        .execute(move |_, _| {
            flag.store(true, std::sync::atomic::Ordering::SeqCst);
            async { Ok::<_, ToolFailure>(Value::Null) }
        })
        .build()
        .unwrap();
    let p = pipeline([tool]);
    let token = tokio_util::sync::CancellationToken::new();
    token.cancel();
    let out = p
        .call(CallRequest::new("t", json!({})).cancel_token(token))
        .await;
    assert_eq!(out.error.unwrap().code(), ErrorCode::Cancelled);
    assert!(!ran.load(std::sync::atomic::Ordering::SeqCst));
    assert_eq!(p.root_scope().running(), 0);
}

use std::sync::Arc;

use codemode::pipeline::{AuditLog, CallRequest, args_digest};
use codemode::{Caller, Pipeline};
use serde_json::{Value, json};

use crate::support::{echo_tool, registry};

#[test]
fn digest_ignores_key_order_and_whitespace() {
    let a = args_digest(&json!({"b": [1, {"y": 2, "x": 1}], "a": "s"}));
    let b = args_digest(
        &serde_json::from_str::<Value>(r#"{ "a":"s", "b":[1,{"x":1,"y":2}] }"#).unwrap(),
    );
    assert_eq!(a, b);
    assert_eq!(a.len(), 64);
    assert_ne!(a, args_digest(&json!({"a": "t"})));
}

#[tokio::test]
async fn audit_records_nested_calls_without_values() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let audit = Arc::new(AuditLog::open(&path).unwrap());
    let p = Pipeline::builder(registry([echo_tool("echo")]))
        .shared_observer(audit)
        .build();
    let secret = json!({"text": "top secret"});
    p.call(CallRequest::new("echo", secret.clone()).caller(Caller::code_mode("r_1", 1)))
        .await;
    p.call(CallRequest::new("echo", json!({"text": 5})).caller(Caller::code_mode("r_1", 2)))
        .await;
    p.call(CallRequest::new("echo", secret.clone())).await;
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(!text.contains("top secret"), "no values in the audit log");
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "direct calls are not audited by default");
    assert_eq!(lines[0]["args_sha256"], args_digest(&secret));
    assert_eq!(lines[0]["status"], "ok");
    assert_eq!(lines[1]["code"], "INVALID_ARGS");
    assert_eq!(
        lines[1]["caller"],
        json!({"kind": "code_mode", "run_id": "r_1", "seq": 2})
    );
}

use std::sync::Arc;

use codemode::pipeline::{
    ApprovalDecision, ApprovalRequest, AuditLog, CallRequest, GuardDecision, approver_fn,
    args_digest, guard_fn,
};
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
    // Top level too: the key that joins a record to its run's durable result and spans.
    assert_eq!(lines[0]["run_id"], "r_1");
    assert_eq!(lines[1]["run_id"], "r_1");
}

#[tokio::test]
async fn audit_records_say_who_decided_and_why() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let audit = Arc::new(AuditLog::open(&path).unwrap());
    let policy = codemode::policy::Policy::from_toml_str(
        r#"
default = "allow"
[[rule]]
tools = ["echo"]
args.text = { glob = "secret*" }
decision = "deny"
reason = "no secrets"
[[rule]]
tools = ["echo"]
args.text = { glob = "ask*" }
decision = "ask"
reason = "needs a human"
"#,
        "test",
    )
    .unwrap();
    let p = Pipeline::builder(registry([echo_tool("echo")]))
        .pre_hook(policy.pre_hook())
        .approver(approver_fn(|req: &ApprovalRequest<'_>| {
            match req.call.args["text"].as_str() {
                Some("ask yes") | Some("ask guarded") => ApprovalDecision::Approve,
                _ => ApprovalDecision::Refuse {
                    reason: "not now".into(),
                },
            }
        }))
        .guard(guard_fn("no_guarded", |c| {
            if c.args["text"] == "ask guarded" {
                GuardDecision::Deny {
                    reason: "guarded text".into(),
                }
            } else {
                GuardDecision::Pass
            }
        }))
        .shared_observer(audit)
        .build();
    for (seq, text) in ["plain", "secret key", "ask yes", "ask no", "ask guarded"]
        .into_iter()
        .enumerate()
    {
        let caller = Caller::code_mode("r_1", seq as u64 + 1);
        p.call(CallRequest::new("echo", json!({ "text": text })).caller(caller))
            .await;
    }
    let text = std::fs::read_to_string(&path).unwrap();
    let decided: Vec<Value> = text
        .lines()
        .map(|l| {
            let r: Value = serde_json::from_str(l).unwrap();
            json!([r["status"], r["decision"], r["by"], r["reason"], r["asked"]])
        })
        .collect();
    assert_eq!(
        decided,
        [
            json!(["ok", null, null, null, null]),
            json!(["error", "deny", "policy", "no secrets", null]),
            json!(["ok", "approved", "approver", "needs a human", null]),
            json!(["error", "deny", "approver", "not now", "needs a human"]),
            json!(["error", "deny", "guard", "guarded text", "needs a human"]),
        ],
        "{text}"
    );
}

#[tokio::test(start_paused = true)]
async fn audit_duration_separates_time_queued_behind_an_exclusive_call() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let audit = Arc::new(AuditLog::open(&path).unwrap());
    // An exclusive tool that takes 100 ms: the second call waits for the first.
    let slow = codemode::ToolDefinition::builder("slow")
        .execute(|_, _| async {
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            Ok::<_, codemode::ToolFailure>(json!(1))
        })
        .build()
        .unwrap();
    let p = Pipeline::builder(registry([slow]))
        .shared_observer(audit)
        .build();
    let first = p.call(CallRequest::new("slow", json!({})).caller(Caller::code_mode("r_1", 1)));
    let second = p.call(CallRequest::new("slow", json!({})).caller(Caller::code_mode("r_1", 2)));
    futures::future::join(first, second).await;
    let text = std::fs::read_to_string(&path).unwrap();
    let mut times: Vec<(f64, f64)> = text
        .lines()
        .map(|l| {
            let r: Value = serde_json::from_str(l).unwrap();
            (
                r["duration_ms"].as_f64().unwrap(),
                r["queued_ms"].as_f64().unwrap(),
            )
        })
        .collect();
    times.sort_by(|a, b| a.1.total_cmp(&b.1));
    assert_eq!(times.len(), 2, "{text}");
    let ((d1, q1), (d2, q2)) = (times[0], times[1]);
    assert!(q1 < 1.0 && (99.0..101.0).contains(&d1), "{text}");
    assert!((99.0..101.0).contains(&q2), "{text}");
    assert!((199.0..201.0).contains(&d2), "{text}");
}

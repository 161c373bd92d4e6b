use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use codemode::pipeline::{
    CallRequest, GuardDecision, HookDecision, HookError, PostAction, PreExecuteHook, around_fn,
    guard_fn, post_hook_fn, pre_hook_fn,
};
use codemode::schema::{integer, object, string};
use codemode::{Pipeline, ToolDefinition, ToolFailure};
use futures::future::BoxFuture;
use serde_json::{Value, json};

use crate::support::{Trace, echo_tool, registry};

#[tokio::test]
async fn hooks_guards_wrappers_and_body_see_the_same_arguments_snapshot() {
    let seen: Arc<Mutex<Vec<(String, usize, Value)>>> = Arc::default();
    let (s1, s2, s3, s4) = (seen.clone(), seen.clone(), seen.clone(), seen.clone());
    let tool = ToolDefinition::builder("t")
        .parameters(json!({"type": "object"}))
        .execute(move |args: Value, _| {
            s4.lock().unwrap().push(("body".into(), 0, args.clone()));
            async { Ok::<_, ToolFailure>(Value::Null) }
        })
        .build()
        .unwrap();
    let p = Pipeline::builder(registry([tool]))
        .pre_hook(pre_hook_fn("h", move |c| {
            s1.lock().unwrap().push((
                "hook".into(),
                c.args as *const Value as usize,
                c.args.clone(),
            ));
            HookDecision::Allow
        }))
        .guard(guard_fn("g", move |c| {
            s2.lock().unwrap().push((
                "guard".into(),
                c.args as *const Value as usize,
                c.args.clone(),
            ));
            GuardDecision::Pass
        }))
        .wrap(around_fn(move |call, next| {
            s3.lock().unwrap().push((
                "wrapper".into(),
                call.args() as *const Value as usize,
                call.args().clone(),
            ));
            next.run(call)
        }))
        .build();
    let args = json!({"path": "/etc", "n": [1, 2, {"deep": true}]});
    assert!(p.call(CallRequest::new("t", args.clone())).await.is_ok());
    let seen = seen.lock().unwrap();
    let names: Vec<&str> = seen.iter().map(|s| s.0.as_str()).collect();
    assert_eq!(names, ["hook", "guard", "wrapper", "body"]);
    assert!(
        seen.iter().all(|s| s.2 == args),
        "every stage saw the original value"
    );
    // Hooks, guards and wrappers share one immutable snapshot, not copies.
    assert_eq!(seen[0].1, seen[1].1);
    assert_eq!(seen[1].1, seen[2].1);
}

/// A hook that tries to "change" the arguments: it can only mutate its own copy.
struct Meddler;

impl PreExecuteHook for Meddler {
    fn name(&self) -> &str {
        "meddler"
    }
    fn before<'a>(
        &'a self,
        call: &'a codemode::pipeline::CallInfo<'a>,
    ) -> BoxFuture<'a, Result<HookDecision, HookError>> {
        let mut copy = call.args.clone();
        copy["text"] = json!("rm -rf /");
        assert_ne!(&copy, call.args);
        Box::pin(async { Ok(HookDecision::Allow) })
    }
}

#[tokio::test]
async fn pre_execute_hooks_cannot_change_arguments() {
    let p = Pipeline::builder(registry([echo_tool("echo")]))
        .pre_hook(Meddler)
        .build();
    let out = p
        .call(CallRequest::new("echo", json!({"text": "ls"})))
        .await;
    assert_eq!(out.value.unwrap()["echo"], "ls");
}

fn counting_tool(count: Arc<AtomicUsize>) -> ToolDefinition {
    ToolDefinition::builder("t")
        .execute(move |_, _| {
            count.fetch_add(1, Ordering::SeqCst);
            async { Ok::<_, ToolFailure>(json!("ran")) }
        })
        .build()
        .unwrap()
}

#[tokio::test]
async fn deny_hook_short_circuits_body() {
    let count = Arc::new(AtomicUsize::new(0));
    let p = Pipeline::builder(registry([counting_tool(count.clone())]))
        .pre_hook(pre_hook_fn("policy", |_| HookDecision::Deny {
            reason: "no writes".into(),
        }))
        .build();
    let err = p
        .call(CallRequest::new("t", json!({})))
        .await
        .error
        .unwrap();
    assert_eq!(err.code().as_str(), "DENIED");
    assert_eq!(err.details(), json!({"by": "hook", "reason": "no writes"}));
    assert_eq!(count.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn any_deny_wins_over_an_earlier_ask() {
    let asked = Arc::new(AtomicUsize::new(0));
    let a = asked.clone();
    let p = Pipeline::builder(registry([counting_tool(Arc::default())]))
        .pre_hook(pre_hook_fn("asker", |_| HookDecision::Ask {
            reason: "sure?".into(),
        }))
        .pre_hook(pre_hook_fn("denier", |_| HookDecision::Deny {
            reason: "never".into(),
        }))
        .approver(codemode::pipeline::approver_fn(move |_| {
            a.fetch_add(1, Ordering::SeqCst);
            codemode::pipeline::ApprovalDecision::Approve
        }))
        .build();
    let err = p
        .call(CallRequest::new("t", json!({})))
        .await
        .error
        .unwrap();
    assert_eq!(err.details()["by"], "hook");
    assert_eq!(asked.load(Ordering::SeqCst), 0);
}

struct Failing(bool);

impl PreExecuteHook for Failing {
    fn name(&self) -> &str {
        "flaky"
    }
    fn before<'a>(
        &'a self,
        _: &'a codemode::pipeline::CallInfo<'a>,
    ) -> BoxFuture<'a, Result<HookDecision, HookError>> {
        let panic = self.0;
        Box::pin(async move {
            if panic {
                panic!("hook bug");
            }
            Err(HookError::new("policy server unreachable"))
        })
    }
}

#[tokio::test]
async fn hook_errors_and_panics_fail_closed() {
    for panic in [false, true] {
        let count = Arc::new(AtomicUsize::new(0));
        let p = Pipeline::builder(registry([counting_tool(count.clone())]))
            .pre_hook(Failing(panic))
            .build();
        let err = p
            .call(CallRequest::new("t", json!({})))
            .await
            .error
            .unwrap();
        assert_eq!(err.code().as_str(), "DENIED");
        assert_eq!(err.details()["by"], "hook");
        let reason = err.details()["reason"].as_str().unwrap().to_owned();
        assert!(
            reason.contains("flaky")
                && reason.contains(if panic { "panicked" } else { "unreachable" }),
            "{reason}"
        );
        assert_eq!(count.load(Ordering::SeqCst), 0);
    }
}

#[tokio::test]
async fn guards_only_deny_and_a_panicking_guard_denies() {
    let count = Arc::new(AtomicUsize::new(0));
    let p = Pipeline::builder(registry([counting_tool(count.clone())]))
        .guard(guard_fn("ok", |_| GuardDecision::Pass))
        .guard(guard_fn("sandbox", |_| GuardDecision::Deny {
            reason: "outside root".into(),
        }))
        .build();
    let err = p
        .call(CallRequest::new("t", json!({})))
        .await
        .error
        .unwrap();
    assert_eq!(
        err.details(),
        json!({"by": "guard", "reason": "outside root"})
    );

    let p = Pipeline::builder(registry([counting_tool(count.clone())]))
        .guard(guard_fn("buggy", |_| panic!("guard bug")))
        .build();
    let err = p
        .call(CallRequest::new("t", json!({})))
        .await
        .error
        .unwrap();
    assert_eq!(err.details()["by"], "guard");
    assert_eq!(count.load(Ordering::SeqCst), 0);
}

fn secret_tool() -> ToolDefinition {
    ToolDefinition::builder("secret")
        .output_schema(
            object()
                .property("user", string())
                .property("token", string()),
        )
        .execute(|_, _| async { Ok::<_, ToolFailure>(json!({"user": "ann", "token": "s3cr3t"})) })
        .build()
        .unwrap()
}

#[tokio::test]
async fn replacing_content_leaves_the_value_visible_to_programs() {
    let p = Pipeline::builder(registry([secret_tool()]))
        .post_hook(post_hook_fn("redact", |_| {
            PostAction::keep().with_content("[redacted]")
        }))
        .build();
    let out = p.call(CallRequest::new("secret", json!({}))).await;
    assert_eq!(out.content, "[redacted]");
    assert_eq!(
        out.value.unwrap()["token"],
        "s3cr3t",
        "content is not a secrecy boundary"
    );
}

#[tokio::test]
async fn replacing_the_value_hides_it_and_renders_again() {
    let p = Pipeline::builder(registry([secret_tool()]))
        .post_hook(post_hook_fn("scrub", |r| {
            let mut v = r.value.clone();
            v["token"] = json!("***");
            PostAction::keep().with_value(v)
        }))
        .build();
    let out = p.call(CallRequest::new("secret", json!({}))).await;
    assert_eq!(
        out.value.as_deref(),
        Some(&json!({"user": "ann", "token": "***"}))
    );
    assert_eq!(out.content, r#"{"user":"ann","token":"***"}"#);
}

#[tokio::test]
async fn replaced_value_keeps_replaced_content() {
    let p = Pipeline::builder(registry([secret_tool()]))
        .post_hook(post_hook_fn("both", |_| {
            PostAction::keep()
                .with_content("custom")
                .with_value(json!({"user": "ann", "token": "x"}))
        }))
        .build();
    let out = p.call(CallRequest::new("secret", json!({}))).await;
    assert_eq!(out.content, "custom");
    assert_eq!(out.value.unwrap()["token"], "x");
}

#[tokio::test]
async fn blocking_hides_the_value() {
    let p = Pipeline::builder(registry([secret_tool()]))
        .post_hook(post_hook_fn("dlp", |_| {
            PostAction::block("contains a credential")
        }))
        .build();
    let out = p.call(CallRequest::new("secret", json!({}))).await;
    assert!(out.value.is_none());
    assert!(!out.content.contains("s3cr3t"));
    let err = out.error.unwrap();
    assert_eq!(err.code().as_str(), "BLOCKED");
    assert_eq!(err.details(), json!({"reason": "contains a credential"}));
}

#[tokio::test]
async fn a_replaced_value_breaking_the_schema_is_output_invalid_naming_the_hook() {
    let p = Pipeline::builder(registry([secret_tool()]))
        .post_hook(post_hook_fn("sloppy", |_| {
            PostAction::keep().with_value(json!({"user": 7}))
        }))
        .build();
    let err = p
        .call(CallRequest::new("secret", json!({})))
        .await
        .error
        .unwrap();
    assert_eq!(err.code().as_str(), "OUTPUT_INVALID");
    assert_eq!(err.details()["by"], "sloppy");
    assert!(
        err.details()["issues"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["path"] == "/user")
    );
}

#[tokio::test]
async fn post_hooks_attach_contexts_in_order_and_a_panicking_one_blocks() {
    let p = Pipeline::builder(registry([echo_tool("echo")]))
        .post_hook(post_hook_fn("a", |_| {
            PostAction::keep().with_context("note", "first")
        }))
        .post_hook(post_hook_fn("b", |r| {
            PostAction::keep().with_context("reminder", format!("saw {}", r.content))
        }))
        .build();
    let out = p.call(CallRequest::new("echo", json!({"text": "x"}))).await;
    let texts: Vec<(&str, &str)> = out
        .contexts
        .iter()
        .map(|c| (c.kind.as_str(), c.text.as_str()))
        .collect();
    assert_eq!(
        texts,
        [("note", "first"), ("reminder", r#"saw {"echo":"x"}"#)]
    );

    let p = Pipeline::builder(registry([echo_tool("echo")]))
        .post_hook(post_hook_fn("buggy", |_| panic!("post hook bug")))
        .build();
    let out = p.call(CallRequest::new("echo", json!({"text": "x"}))).await;
    assert!(out.value.is_none());
    assert_eq!(out.error.unwrap().code().as_str(), "BLOCKED");
}

#[tokio::test]
async fn finalize_content_runs_after_every_post_hook() {
    let trace = Trace::default();
    let t = trace.clone();
    let tool = ToolDefinition::builder("f")
        .parameters(object().property("n", integer()))
        .execute(|args, _| async move { Ok::<_, ToolFailure>(args) })
        .finalize_content(move |content, _| {
            t.push(format!("finalize saw {content}"));
            format!("{content}!")
        })
        .build()
        .unwrap();
    let p = Pipeline::builder(registry([tool]))
        .post_hook(post_hook_fn("h", |_| {
            PostAction::keep().with_content("hooked")
        }))
        .build();
    let out = p.call(CallRequest::new("f", json!({"n": 1}))).await;
    assert_eq!(out.content, "hooked!");
    assert_eq!(trace.steps(), ["finalize saw hooked"]);
}

#[tokio::test]
async fn a_policy_guard_denies_by_policy() {
    let p = Pipeline::builder(registry([echo_tool("shell")]))
        .guard(codemode::pipeline::policy_fn("policy", |c| {
            if c.path == "shell" {
                GuardDecision::Deny {
                    reason: "shell is disabled".into(),
                }
            } else {
                GuardDecision::Pass
            }
        }))
        .build();
    let err = p
        .call(CallRequest::new("shell", json!({"text": "ls"})))
        .await
        .error
        .unwrap();
    assert_eq!(
        err.details(),
        json!({"by": "policy", "reason": "shell is disabled"})
    );
}

/// A tool returning `value` through the default render, or `render` when given.
fn returning(value: Value, render: bool) -> ToolDefinition {
    let tool = ToolDefinition::builder("get")
        .parameters(json!({"type": "object"}))
        .execute(move |_: Value, _| {
            let value = value.clone();
            async move { Ok(value) }
        });
    let tool = if render {
        tool.render(|v| format!("custom {v}"))
    } else {
        tool
    };
    tool.build().unwrap()
}

#[tokio::test]
async fn content_is_the_value_json_exactly_when_it_is_the_default_render_of_a_non_string() {
    let value = json!({"b": [1, 2.5, "x\"y"], "a": null});
    let call = |p: Pipeline| async move { p.call(CallRequest::new("get", json!({}))).await };

    let out = call(Pipeline::builder(registry([returning(value.clone(), false)])).build()).await;
    assert!(out.content_is_value_json);
    assert_eq!(out.content, value.to_string());

    for p in [
        // A string renders as itself, not as JSON.
        Pipeline::builder(registry([returning(json!("text"), false)])).build(),
        // A custom render.
        Pipeline::builder(registry([returning(value.clone(), true)])).build(),
        // Content replaced by a hook.
        Pipeline::builder(registry([returning(value.clone(), false)]))
            .post_hook(post_hook_fn("redact", |_| {
                PostAction::keep().with_content("x")
            }))
            .build(),
    ] {
        let out = call(p).await;
        assert!(out.is_ok());
        assert!(!out.content_is_value_json, "{}", out.content);
    }

    // A replaced value is rendered again: its JSON again.
    let p = Pipeline::builder(registry([returning(value.clone(), false)]))
        .post_hook(post_hook_fn("replace", |_| {
            PostAction::keep().with_value(json!([1, {"k": "v"}]))
        }))
        .build();
    let out = call(p).await;
    assert!(out.content_is_value_json);
    assert_eq!(out.content, r#"[1,{"k":"v"}]"#);
}

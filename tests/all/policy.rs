//! Policy files: parsing and error positions, decisions and their precedence, argument matchers,
//! visibility, limits, and the policy hook in a pipeline.

use std::time::Duration;

use codemode::Pipeline;
use codemode::pipeline::{ApprovalDecision, CallRequest, HookDecision, approver_fn};
use codemode::policy::{Decision, Policy, PolicyError};
use codemode::sandbox::{Limits, MIB};
use serde_json::json;

use crate::support::{echo_tool, registry};

fn policy(text: &str) -> Policy {
    Policy::from_toml_str(text, "p.toml").unwrap_or_else(|e| panic!("{e}"))
}

fn error(text: &str) -> String {
    match Policy::from_toml_str(text, "p.toml") {
        Ok(_) => panic!("expected an error for:\n{text}"),
        Err(e) => e.to_string(),
    }
}

fn ask(reason: &str) -> HookDecision {
    HookDecision::Ask {
        reason: reason.into(),
    }
}

fn deny(reason: &str) -> HookDecision {
    HookDecision::Deny {
        reason: reason.into(),
    }
}

#[test]
fn the_documented_example_loads() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/policy.toml");
    let p = Policy::load(std::path::Path::new(path)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(p.default_decision(), Decision::Ask);
    assert_eq!(
        p.decide("grep", &json!({"pattern": "x"})),
        HookDecision::Allow
    );
    assert!(matches!(
        p.decide(
            "write_file",
            &json!({"path": "src/.env.local", "content": ""})
        ),
        HookDecision::Deny { .. }
    ));
    assert!(matches!(
        p.decide("edit_file", &json!({"path": ".git/config"})),
        HookDecision::Deny { .. }
    ));
    assert!(matches!(
        p.decide("write_file", &json!({"path": "src/main.rs", "content": ""})),
        HookDecision::Ask { .. }
    ));
    assert!(matches!(
        p.decide("shell", &json!({"command": "rm -rf /"})),
        HookDecision::Deny { .. }
    ));
    assert!(!p.is_visible("memory.debug_dump"));
    assert_eq!(p.limits().heap_mb, Some(256));
}

#[test]
fn deny_beats_ask_beats_allow_whatever_the_order() {
    let p = policy(
        r#"
        default = "allow"
        [[rule]]
        tools = ["**"]
        decision = "deny"
        reason = "nothing runs"
        [[rule]]
        tools = ["grep"]
        decision = "allow"
        [[rule]]
        tools = ["grep"]
        decision = "ask"
        reason = "careful"
        "#,
    );
    assert_eq!(p.decide("grep", &json!({})), deny("nothing runs"));

    let p = policy(
        r#"
        [[rule]]
        tools = ["grep"]
        decision = "allow"
        [[rule]]
        tools = ["grep", "glob"]
        decision = "ask"
        reason = "one"
        [[rule]]
        tools = ["g*"]
        decision = "ask"
        reason = "two"
        "#,
    );
    assert_eq!(p.decide("grep", &json!({})), ask("one; two"));
}

#[test]
fn unmatched_tools_get_the_default_which_is_ask_unless_set() {
    let p = policy("");
    assert_eq!(p.default_decision(), Decision::Ask);
    assert!(
        matches!(p.decide("grep", &json!({})), HookDecision::Ask { reason } if reason.contains("no rule of p.toml matches `grep`"))
    );
    let p = policy("default = \"deny\"");
    assert!(matches!(
        p.decide("grep", &json!({})),
        HookDecision::Deny { .. }
    ));
    let p = policy("default = \"allow\"");
    assert_eq!(p.decide("grep", &json!({})), HookDecision::Allow);
}

#[test]
fn tool_globs_are_namespace_aware() {
    let p = policy(
        r#"
        default = "allow"
        [[rule]]
        tools = ["memory.*"]
        decision = "deny"
        reason = "no memory"
        "#,
    );
    assert_eq!(
        p.decide("memory.search_nodes", &json!({})),
        deny("no memory")
    );
    assert_eq!(p.decide("memory_search", &json!({})), HookDecision::Allow);
    assert_eq!(p.decide("other.search", &json!({})), HookDecision::Allow);
}

#[test]
fn argument_matchers_glob_regex_equals_and_pointer() {
    let p = policy(
        r#"
        default = "allow"
        [[rule]]
        tools = ["write_file"]
        decision = "deny"
        reason = "env"
        args.path = { glob = "**/.env*" }
        [[rule]]
        tools = ["shell"]
        decision = "deny"
        reason = "rm"
        args.command = { regex = '^rm\s' }
        [[rule]]
        tools = ["deploy"]
        decision = "ask"
        reason = "prod"
        args."/target/env" = { equals = "prod" }
        args.replicas = { equals = 3 }
        "#,
    );
    assert_eq!(
        p.decide("write_file", &json!({"path": ".env"})),
        deny("env")
    );
    assert_eq!(
        p.decide("write_file", &json!({"path": "a/b/.env.x"})),
        deny("env")
    );
    assert_eq!(
        p.decide("write_file", &json!({"path": "a/env"})),
        HookDecision::Allow
    );
    // A missing argument or a non-string never matches a glob.
    assert_eq!(p.decide("write_file", &json!({})), HookDecision::Allow);
    assert_eq!(
        p.decide("write_file", &json!({"path": 1})),
        HookDecision::Allow
    );
    assert_eq!(p.decide("shell", &json!({"command": "rm x"})), deny("rm"));
    assert_eq!(
        p.decide("shell", &json!({"command": "echo rm x"})),
        HookDecision::Allow
    );
    // Every matcher of a rule must match; numbers compare by value.
    let prod = json!({"target": {"env": "prod"}, "replicas": 3.0});
    assert_eq!(p.decide("deploy", &prod), ask("prod"));
    let staging = json!({"target": {"env": "staging"}, "replicas": 3});
    assert_eq!(p.decide("deploy", &staging), HookDecision::Allow);
    let fewer = json!({"target": {"env": "prod"}, "replicas": 2});
    assert_eq!(p.decide("deploy", &fewer), HookDecision::Allow);
}

#[test]
fn syntax_errors_have_line_and_column() {
    let e = error("default = \"ask\"\n[[rule]\ntools = []\n");
    assert!(e.starts_with("p.toml:2:"), "{e}");
    let e = error("default = \n");
    assert!(e.starts_with("p.toml:1:"), "{e}");
}

#[test]
fn semantic_errors_have_line_and_column() {
    // Unknown key.
    let e = error("default = \"ask\"\n\n[[rule]]\ntools = [\"grep\"]\ndecison = \"deny\"\n");
    assert!(e.starts_with("p.toml:5:1: unknown field `decison`"), "{e}");
    // Unknown decision, at the value.
    let e = error("[[rule]]\ntools = [\"grep\"]\ndecision = \"permit\"\n");
    assert!(
        e.starts_with("p.toml:3:12: unknown decision `permit`; use \"allow\", \"ask\" or \"deny\""),
        "{e}"
    );
    let e = error("default = \"sometimes\"");
    assert!(e.starts_with("p.toml:1:11: unknown decision"), "{e}");
    // Bad glob, at the string.
    let e = error("[[rule]]\ntools = [\"grep\", \"[abc\"]\ndecision = \"deny\"\n");
    assert!(e.starts_with("p.toml:2:18: bad tool glob `[abc`"), "{e}");
    // Bad regex.
    let e = error(
        "[[rule]]\ntools = [\"shell\"]\ndecision = \"deny\"\nargs.command = { regex = \"(\" }\n",
    );
    assert!(e.starts_with("p.toml:4:26: bad regex"), "{e}");
    // Matcher with two tests.
    let e = error(
        "[[rule]]\ntools = [\"shell\"]\ndecision = \"deny\"\nargs.command = { regex = \"a\", glob = \"b\" }\n",
    );
    assert!(
        e.starts_with("p.toml:4:16: argument matcher `command` needs exactly one"),
        "{e}"
    );
    // Bad limit value and wrong type.
    let e = error("[limits]\ntimeout_ms = 10\nheap_mb = 4\n");
    assert!(
        e.starts_with("p.toml:3:11: limits.heap_mb = 4 is out of range"),
        "{e}"
    );
    let e = error("[limits]\ntimeout_ms = \"fast\"\n");
    assert!(e.starts_with("p.toml:2:14: invalid type"), "{e}");
    // Missing required key of a rule.
    let e = error("\n[[rule]]\ntools = [\"grep\"]\n");
    assert!(
        e.starts_with("p.toml:2:") && e.contains("missing field `decision`"),
        "{e}"
    );
}

#[test]
fn a_missing_file_is_a_read_error() {
    let e = Policy::load(std::path::Path::new("/nope/policy.toml")).unwrap_err();
    assert!(matches!(e, PolicyError::Read { .. }), "{e}");
    assert!(
        e.to_string().starts_with("/nope/policy.toml: cannot read"),
        "{e}"
    );
}

#[test]
fn the_default_policy_allows_reads_and_asks_before_writes_and_shell() {
    let p = Policy::default_policy();
    for tool in [
        "read_file",
        "list_dir",
        "glob",
        "grep",
        "anything_else",
        "ns.tool",
    ] {
        assert_eq!(p.decide(tool, &json!({})), HookDecision::Allow, "{tool}");
    }
    for tool in ["write_file", "edit_file", "shell"] {
        assert!(
            matches!(p.decide(tool, &json!({})), HookDecision::Ask { .. }),
            "{tool}"
        );
    }
    // It hides nothing and overrides no limit.
    assert!(p.is_visible("shell") && p.is_visible("ns.tool"));
    assert_eq!(p.limits().apply(Limits::default()), Limits::default());
}

#[test]
fn visible_filters_include_then_exclude() {
    let p =
        policy("[visible]\ninclude = [\"memory.*\", \"grep\"]\nexclude = [\"memory.delete_*\"]\n");
    assert!(p.is_visible("grep"));
    assert!(p.is_visible("memory.search"));
    assert!(!p.is_visible("memory.delete_node"));
    assert!(!p.is_visible("glob"));
    let everything = policy("");
    assert!(everything.is_visible("glob") && everything.is_visible("a.b"));
}

#[test]
fn policy_limits_apply_over_defaults() {
    let p = policy("[limits]\ntimeout_ms = 1500\nheap_mb = 64\nmax_tool_calls = 7\n");
    let limits = p.limits().apply(Limits::default());
    assert_eq!(limits.deadline, Duration::from_millis(1500));
    assert_eq!(limits.heap_bytes, 64 * MIB);
    assert_eq!(limits.tool_calls, 7);
    assert_eq!(limits.console_bytes, Limits::default().console_bytes);
}

#[test]
fn lint_reports_globs_that_match_no_tool() {
    let p = policy(
        "[[rule]]\ntools = [\"echo\", \"ecko\"]\ndecision = \"allow\"\n[visible]\nexclude = [\"nope.*\"]\n",
    );
    let warnings = p.lint(&registry([echo_tool("echo")]));
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(
        warnings[0].contains("p.toml:1: rule tool glob `ecko` matches no tool"),
        "{warnings:?}"
    );
    assert!(warnings[1].contains("`nope.*`"), "{warnings:?}");
}

#[tokio::test]
async fn the_hook_denies_by_policy_and_asks_the_approver() {
    let p = policy(
        r#"
        default = "deny"
        [[rule]]
        tools = ["allowed"]
        decision = "allow"
        [[rule]]
        tools = ["asked"]
        decision = "ask"
        reason = "needs a human"
        "#,
    );
    let pipeline = Pipeline::builder(registry([
        echo_tool("allowed"),
        echo_tool("asked"),
        echo_tool("other"),
    ]))
    .pre_hook(p.pre_hook())
    .approver(approver_fn(|req| ApprovalDecision::Refuse {
        reason: format!("saw: {}", req.reasons.join("|")),
    }))
    .build();
    let ok = pipeline
        .call(CallRequest::new("allowed", json!({"text": "a"})))
        .await;
    assert_eq!(ok.result().unwrap(), &json!({"echo": "a"}));
    let denied = pipeline
        .call(CallRequest::new("other", json!({"text": "a"})))
        .await;
    let e = denied.error.unwrap();
    assert_eq!(e.code().as_str(), "DENIED");
    assert_eq!(e.details()["by"], "policy");
    assert!(
        e.details()["reason"]
            .as_str()
            .unwrap()
            .contains("default is deny")
    );
    let asked = pipeline
        .call(CallRequest::new("asked", json!({"text": "a"})))
        .await;
    let e = asked.error.unwrap();
    assert_eq!(e.details()["by"], "approver");
    assert_eq!(e.details()["reason"], "saw: needs a human");
}

#[tokio::test]
async fn hidden_tools_are_not_in_the_sdk_and_not_callable() {
    use codemode::harness::sdk_for;
    let p = policy("default = \"allow\"\n[visible]\nexclude = [\"secret\"]\n");
    let full = registry([echo_tool("shown"), echo_tool("secret")]);
    let visible = p.visible_registry(&full);
    let sdk = sdk_for(&visible);
    assert!(sdk.contains("shown(") && !sdk.contains("secret"), "{sdk}");
    let harness = codemode::Harness::builder()
        .sandbox(crate::common::sandbox().clone())
        .inner(move |pipeline| pipeline.pre_hook(p.pre_hook()))
        .build(visible)
        .unwrap();
    let outcome = harness
        .code_mode()
        .run(
            "const a = await tools.shown({text: 'x'}); let code; try { await tools.secret({text: 'y'}); } catch (e) { code = e.code; } return [a.echo, code, typeof tools.secret];",
            Default::default(),
            &Default::default(),
        )
        .await;
    assert_eq!(
        crate::common::value(&outcome),
        json!(["x", "UNKNOWN_TOOL", "function"])
    );
}

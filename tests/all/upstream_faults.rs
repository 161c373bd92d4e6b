//! Upstream MCP servers that answer with messages a client must not swallow: over the 16 MiB a
//! message may have, or nested deeper than a JSON parser goes. Each such answer fails its call at
//! once with the reason (instead of waiting out the run's deadline, or arriving as a string), and
//! the connection stays usable for the next call.
//!
//! The upstream is `tests/mcp/fault_server.py`, a stdlib-only Python server.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::cli::{codemode, run_stdin};

/// The deadline of each run: far longer than any of these runs may take.
const DEADLINE_MS: &str = "20000";

fn fault_server() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/fault_server.py")
}

/// `--upstream` for the fault server as namespace `f`.
fn upstream(mode: &str) -> String {
    format!("f=python3 '{}' {mode}", fault_server().display())
}

/// `codemode run - --json` of `program` against the fault server: the outcome and how long it took.
fn run(program: &str) -> (Value, Duration) {
    let started = Instant::now();
    let (code, stdout, stderr) = run_stdin(
        &[
            "run",
            "-",
            "--json",
            "--timeout-ms",
            DEADLINE_MS,
            "--upstream",
            &upstream(""),
        ],
        program.as_bytes(),
    );
    let took = started.elapsed();
    let outcome: Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("no outcome ({e}), exit {code}:\n{stdout}\n{stderr}"));
    assert_eq!(outcome["status"], "ok", "{outcome:#}\n{stderr}");
    (outcome, took)
}

/// Well under the deadline: the calls failed at once.
fn assert_fast(took: Duration, outcome: &Value) {
    assert!(
        took < Duration::from_secs(8),
        "the run took {took:?} (deadline {DEADLINE_MS} ms): {outcome:#}"
    );
}

/// The `[code, message]` a failed call left in the program's result.
fn failure<'a>(value: &'a Value, name: &str) -> (&'a str, &'a str) {
    let entry = &value[name];
    match (entry[0].as_str(), entry[1].as_str()) {
        (Some(code), Some(message)) => (code, message),
        _ => panic!("`{name}` did not fail: {entry}"),
    }
}

/// Calls each tool, catching its error as `[code, message]`.
const CALL_EACH: &str = r#"
async function each(names: string[]) {
  const out: Record<string, unknown> = {};
  for (const name of names) {
    try {
      out[name] = ["answered", await (tools.f as any)[name]({})];
    } catch (e: any) {
      out[name] = [e.code, e.message];
    }
  }
  return out;
}
"#;

#[test]
fn an_upstream_answer_over_16_mib_fails_its_call_at_once_and_the_connection_stays_usable() {
    let program = format!(
        "{CALL_EACH}
const out = await each(['huge', 'huge_id_last']);
out.after = await tools.f.echo({{n: 1}});
return out;"
    );
    let (outcome, took) = run(&program);
    let value = &outcome["value"];
    for name in ["huge", "huge_id_last"] {
        let (code, message) = failure(value, name);
        assert_eq!(code, "LIMIT_EXCEEDED", "{name}: {message}");
        assert!(
            message.contains("the answer to `huge")
                && message.contains("is over 16777216 bytes (17825"),
            "{name}: {message}"
        );
    }
    assert_eq!(value["after"], json!({"n": 1}), "{outcome:#}");
    assert_fast(took, &outcome);
}

#[test]
fn a_huge_notification_is_dropped_and_a_huge_server_request_fails_the_calls_in_flight() {
    let program = format!(
        "{CALL_EACH}
const out = await each(['huge_notice', 'huge_request']);
out.after = await tools.f.ok({{}});
return out;"
    );
    let (outcome, took) = run(&program);
    let value = &outcome["value"];
    // Nobody waits for a notification: dropping it costs the call nothing.
    assert_eq!(value["huge_notice"], json!(["answered", {"ok": true}]));
    // A request from the server that never arrives leaves the server stuck: the call fails.
    let (code, message) = failure(value, "huge_request");
    assert_eq!(code, "LIMIT_EXCEEDED", "{message}");
    assert!(
        message.contains("sent a message that answers no call")
            && message.contains("`huge_request`")
            && message.contains("over 16777216 bytes"),
        "{message}"
    );
    assert_eq!(value["after"], json!({"ok": true}), "{outcome:#}");
    assert_fast(took, &outcome);
}

#[test]
fn an_upstream_answer_nested_too_deep_is_an_error_never_a_string() {
    let program = format!(
        "{CALL_EACH}
const out = await each(['deep', 'deep_some', 'deep_text', 'brackets_text']);
let v: any = await tools.f.nested_ok({{}});
let levels = 0;
while (typeof v === 'object' && v !== null) {{ v = v.a; levels++; }}
out.nested_ok = levels;
out.after = await tools.f.ok({{}});
return out;"
    );
    let (outcome, took) = run(&program);
    let value = &outcome["value"];
    // 200 levels (more than the client's parser takes), 110 levels as structured content, and
    // 200 levels as the JSON text of a text block.
    for name in ["deep", "deep_some", "deep_text"] {
        let (code, message) = failure(value, name);
        assert_eq!(code, "TOOL_ERROR", "{name}: {message}");
        assert!(
            message.contains(&format!("the answer to `{name}`"))
                && message.contains("nested deeper than the limit of 100 levels"),
            "{name}: {message}"
        );
    }
    // Text that merely starts like deep JSON is still text.
    let brackets = format!("{} is how deep it goes", "[".repeat(200));
    assert_eq!(value["brackets_text"], json!(["answered", brackets]));
    assert_eq!(value["nested_ok"], 50, "{outcome:#}");
    assert_eq!(value["after"], json!({"ok": true}), "{outcome:#}");
    assert_fast(took, &outcome);
}

#[test]
fn an_upstream_tool_with_deeply_nested_schemas_is_listed_typed_and_called() {
    // Input and output schemas 60 levels deep (about as deep as a message can carry them): every
    // walk of them on the host (import, SDK types, validation) must come through.
    let out = codemode()
        .args(["sdk", "--upstream", &upstream("deep_schema")])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run codemode");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("nested("), "{stdout}");
    let program = "let arg: any = 'leaf';
for (let i = 0; i < 60; i++) arg = {a: arg};
const back: any = await tools.f.nested(arg);
let v = back, levels = 0;
while (typeof v === 'object') { v = v.a; levels++; }
return [levels, v];";
    let (code, stdout, stderr) = run_stdin(
        &[
            "run",
            "-",
            "--json",
            "--timeout-ms",
            DEADLINE_MS,
            "--upstream",
            &upstream("deep_schema"),
        ],
        program.as_bytes(),
    );
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let outcome: Value = serde_json::from_str(&stdout).expect("outcome JSON");
    assert_eq!(outcome["value"], json!([60, "leaf"]), "{outcome:#}");
}

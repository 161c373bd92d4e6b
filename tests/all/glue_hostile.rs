//! Hostile programs against the glue: patched prototypes, huge error texts, deep values, late tool
//! calls. Each test here failed before the glue was hardened against it.

use std::sync::{Arc, Mutex};

use codemode::call::{CallError, ErrorKind};
use codemode::sandbox::{
    Limits, RunOptions, RunOutcome, RunStatus, ToolHost, ToolReply, ToolRequest,
};
use futures::FutureExt;
use futures::future::{BoxFuture, join_all};
use serde_json::{Value, json};

use crate::common::sandbox;

/// Tools that record every call that reached the host: `echo` and `fs.read` answer their
/// arguments, `fail` fails, `write_file` answers "written".
#[derive(Default)]
struct Recorder {
    ran: Mutex<Vec<(String, Value)>>,
}

impl Recorder {
    fn ran(&self) -> Vec<(String, Value)> {
        self.ran.lock().unwrap().clone()
    }
}

impl ToolHost for Recorder {
    fn paths(&self) -> Vec<String> {
        ["echo", "fail", "write_file", "fs.read"]
            .map(String::from)
            .to_vec()
    }

    fn call(&self, request: ToolRequest) -> BoxFuture<'static, Result<ToolReply, CallError>> {
        let response = if let Some(problem) = request.unconvertible {
            Err(CallError::new(
                ErrorKind::InvalidArgs { issues: vec![] },
                problem,
            ))
        } else {
            self.ran
                .lock()
                .unwrap()
                .push((request.path.clone(), request.args.clone()));
            match request.path.as_str() {
                "echo" | "fs.read" => Ok(ToolReply::new(json!({"echo": request.args}))),
                "write_file" => Ok(ToolReply::new(json!("written"))),
                "fail" => Err(CallError::new(
                    ErrorKind::ToolError {
                        retryable: false,
                        attempts: 1,
                    },
                    "the body failed",
                )),
                other => Err(CallError::new(
                    ErrorKind::UnknownTool {
                        suggestions: vec![],
                    },
                    format!("no tool named `{other}`"),
                )),
            }
        };
        async move { response }.boxed()
    }
}

async fn run_tools(source: &str) -> (RunOutcome, Arc<Recorder>) {
    let host = Arc::new(Recorder::default());
    let tools: Arc<dyn ToolHost> = host.clone();
    let outcome = sandbox()
        .run_with(
            source,
            RunOptions::new(Limits::default())
                .with_tools(tools)
                .with_run_id("r_hostile"),
        )
        .await;
    (outcome, host)
}

fn error_of(outcome: &RunOutcome) -> codemode::sandbox::RunError {
    assert_eq!(outcome.status, RunStatus::Error, "{}", outcome.to_json());
    outcome.error.clone().expect("an error")
}

// --- Item 7: setters on Array.prototype / Object.prototype -----------------------------------

/// Programs run once as is and once after each patch; every outcome must be the same. The
/// program starts on line 2 in both, so positions in errors and stacks match.
const SCENARIOS: &[(&str, &str)] = &[
    (
        "values and console",
        r#"console.log('a', 1, { x: [1, 2], s: 'q' }, [3, [4]]);
console.log('%s=%d %o', 'k', 5, { z: null });
console.info(new Map([[1, { a: 2 }]]), new Set([1]), String(new TypeError('shown')), function named() {}, class K {});
console.warn('only a string');
console.table([{ a: 1 }, { a: 2, b: 3 }]);
console.table({ r: { c: 1 } }, ['c']);
console.dir({ deep: { er: { est: { x: 1 } } } });
console.assert(false, 'asserted', 2);
const o = { n: 1 }; o.self = o; console.log(o);
return { n: 42, list: [1, 'two', [3], { four: 4 }], big: 5n, nan: NaN, date: new Date(0), u: undefined, s: 'x' };"#,
    ),
    (
        "web globals",
        r#"const q = new URLSearchParams('a=1&a=2&b=3'); q.append('c', '4'); q.set('d', '5'); q.sort(); q.delete('b');
const url = new URL('https://example.org/p?x=1#h'); url.searchParams.append('y', '2'); url.pathname = '/q'; url.search = '?z=3';
const clone = structuredClone({ a: [1, { b: 2 }], d: new Date(0), e: new RangeError('r'), m: new Map([[1, 2]]) });
return { all: q.getAll('a'), text: q.toString(), has: q.has('c'), href: url.href, params: url.searchParams.get('z'),
  clone: [clone.a, clone.d.getTime(), clone.e.message, clone.m.get(1), Array.isArray(clone.a), Object.getPrototypeOf(clone) === Object.prototype],
  bytes: Array.from(new TextEncoder().encode('hé')), decoded: new TextDecoder().decode(new Uint8Array([104, 105])),
  b64: btoa('hi'), raw: atob('aGk='), dom: new DOMException('m', 'DataCloneError').name };"#,
    ),
    (
        "tool calls",
        r#"const a = await tools.echo({ x: [1, { y: 'z' }], n: 2 });
const b = await tools.fs.read({ big: 1n, list: [1, 2] });
let caught;
try { await tools.fail({}); } catch (e) { caught = [e.name, e.code, e.tool, e.message, e.details, e instanceof ToolError]; }
let unknown;
try { await tools.nope({}); } catch (e) { unknown = [e.code, e.tool]; }
let invalid;
try { await tools.echo({ get x() { throw new Error('no x'); } }); } catch (e) { invalid = [e.code, e.message]; }
const both = await Promise.all([tools.echo({ i: 1 }), tools.echo({ i: 2 })]);
return { a, b, caught, unknown, invalid, both };"#,
    ),
    (
        "timers",
        r#"let log = '';
const t = setTimeout(() => { log += 'never;'; }, 1); clearTimeout(t);
let ticks = 0;
await new Promise((resolve) => { const id = setInterval(() => { ticks++; if (ticks === 3) { clearInterval(id); resolve(); } }, 1); });
queueMicrotask(() => { log += 'micro;'; });
await new Promise((resolve) => setTimeout(resolve, 1));
return { log, ticks, late: await new Promise((resolve) => setTimeout((v) => resolve(v), 1, 'arg')) };"#,
    ),
    ("a thrown error", "throw new TypeError('bad thing');"),
    ("a thrown string", "throw 'text';"),
    (
        "a thrown object",
        "throw { code: 1, nested: [1, { two: 2 }] };",
    ),
    ("an uncaught tool error", "await tools.fail({});"),
    (
        "a throw in a timer",
        "setTimeout(() => { throw new RangeError('in a timer'); }, 1);\nawait new Promise(() => {});",
    ),
    (
        "an unhandled rejection",
        "Promise.reject(new Error('unhandled'));\nawait new Promise((resolve) => setTimeout(resolve, 1));",
    ),
    (
        "a return value that cannot be serialized",
        "return { b: 1n, c: { get d() { throw new Error('getter'); } } };",
    ),
    (
        "a cyclic return value",
        "const a = { k: [1] }; a.k2 = { back: a }; return a;",
    ),
];

/// The names the glue gives the records and objects it makes while a program runs (errors,
/// reports, value-walk state, tool errors, descriptors, the tool gate), and a few more.
const OBJECT_PROTOTYPE_NAMES: &[&str] = &[
    "message",
    "stack",
    "name",
    "code",
    "tool",
    "details",
    "detailsJson",
    "status",
    "error",
    "path",
    "limit",
    "parts",
    "keys",
    "value",
    "closed",
    "promise",
    "resolve",
    "reject",
    "get",
    "set",
    "enumerable",
    "writable",
    "configurable",
    "length",
    "0",
];

fn patches() -> Vec<(String, String)> {
    let mut patches = Vec::new();
    let mut setter = |target: &str, key: &str| {
        for (kind, body) in [
            ("no-op", ""),
            ("throwing", "throw new Error('a patched setter ran');"),
        ] {
            patches.push((
                format!("{kind} setter on {target}[{key:?}]"),
                format!(
                    "Object.defineProperty({target}, {key:?}, {{ set(v) {{ {body} }}, configurable: true }});"
                ),
            ));
        }
    };
    for index in ["0", "1"] {
        setter("Array.prototype", index);
    }
    for name in OBJECT_PROTOTYPE_NAMES {
        setter("Object.prototype", name);
    }
    // Data properties that poison property descriptors made as ordinary objects.
    for (name, value) in [
        ("get", "function () { return 1; }"),
        ("set", "function () {}"),
        ("enumerable", "true"),
        ("writable", "false"),
    ] {
        patches.push((
            format!("Object.prototype.{name} = {value}"),
            format!("Object.prototype.{name} = {value};"),
        ));
    }
    patches
}

/// What the glue decides must not change. Not compared: timing, and the positions and stacks
/// of errors, which the engine makes (a setter on Array.prototype[1] makes it lose the position
/// of a frame at the program's top level, with or without the glue).
fn comparable(outcome: &RunOutcome, host: &Recorder) -> Value {
    let error = outcome.error.as_ref().map(|e| {
        json!({"name": e.name, "message": e.message, "code": e.code, "tool": e.tool, "details": e.details})
    });
    json!({
        "status": outcome.status,
        "value": outcome.value_json(),
        "error": error,
        "logs": serde_json::to_value(&outcome.logs).unwrap(),
        "tool_calls": outcome.stats.tool_calls,
        "host_saw": host.ran(),
    })
}

#[tokio::test]
async fn patched_prototype_setters_change_no_outcome() {
    let mut baselines = Vec::new();
    for (label, body) in SCENARIOS {
        let (outcome, host) = run_tools(&format!("\n{body}")).await;
        // The scenarios themselves are sound: the ones meant to succeed do.
        if !label.starts_with('a') {
            assert_eq!(
                outcome.status,
                RunStatus::Ok,
                "{label}: {}",
                outcome.to_json()
            );
        }
        baselines.push(comparable(&outcome, &host));
    }
    let mut failures = Vec::new();
    for (patch_label, patch) in patches() {
        let runs = SCENARIOS.iter().map(|(_, body)| {
            let source = format!("{patch}\n{body}");
            async move {
                let (outcome, host) = run_tools(&source).await;
                comparable(&outcome, &host)
            }
        });
        let outcomes = join_all(runs).await;
        for ((label, _), (got, want)) in SCENARIOS.iter().zip(outcomes.iter().zip(&baselines)) {
            if got != want {
                failures.push(format!(
                    "{patch_label} / {label}:\n  want {want}\n  got  {got}"
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} outcomes changed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[tokio::test]
async fn a_setter_on_array_prototype_0_keeps_the_value_and_the_console() {
    // The two symptoms of the issue, spelled out.
    for body in ["", "throw new Error('hooked');"] {
        let (outcome, _) = run_tools(&format!(
            "Object.defineProperty(Array.prototype, 0, {{ set() {{ {body} }} }});\nconsole.log('first', 'second');\nreturn 42;"
        ))
        .await;
        assert_eq!(outcome.status, RunStatus::Ok, "{}", outcome.to_json());
        assert_eq!(outcome.value_json(), Some(json!(42)));
        assert_eq!(outcome.logs[0].text, "first second");
    }
}

// --- Item 6: caps on error text --------------------------------------------------------------

const CAP: usize = 65536;

/// Length in UTF-16 units, as the glue counts.
fn units(text: &str) -> usize {
    text.encode_utf16().count()
}

#[tokio::test]
async fn a_huge_error_message_is_cut_with_a_marker_and_keeps_its_position() {
    let outcome = crate::common::run("\nthrow new Error('m'.repeat(3e7));").await;
    let error = error_of(&outcome);
    assert!(
        error
            .message
            .ends_with("… [message truncated: 30000000 chars in all]"),
        "{}",
        &error.message[error.message.len() - 100..]
    );
    assert!(error.message.starts_with("mmmm"));
    assert!(
        units(&error.message) <= CAP + 64,
        "{}",
        units(&error.message)
    );
    let stack = error.stack.clone().unwrap_or_default();
    assert!(stack.len() <= CAP + 128, "stack of {} bytes", stack.len());
    assert!(
        stack.contains("[stack truncated: "),
        "{}",
        &stack[stack.len() - 200..]
    );
    // The frames at the end of the stack survive the cut.
    assert_eq!(error.line, Some(2), "{}", &stack[stack.len() - 200..]);
    assert!(
        outcome.to_json().len() < 4 * CAP,
        "{}",
        outcome.to_json().len()
    );
}

#[tokio::test]
async fn a_huge_stack_set_by_the_program_ends_as_a_capped_error() {
    // Before: writing the report failed after the run was marked finished: UnsettledPromise.
    let outcome =
        crate::common::run("const e = new Error('x'); e.stack = 's'.repeat(1e8); throw e;").await;
    let error = error_of(&outcome);
    assert_eq!(
        (error.name.as_str(), error.message.as_str()),
        ("Error", "x")
    );
    let stack = error.stack.unwrap_or_default();
    assert!(
        stack.contains("… [stack truncated: 100000000 chars in all] …"),
        "{}",
        &stack[..200]
    );
    assert!(stack.len() <= CAP + 128, "stack of {} bytes", stack.len());
}

#[tokio::test]
async fn a_huge_thrown_string_is_cut_like_a_message() {
    let outcome = crate::common::run("throw 'x'.repeat(1e8);").await;
    let error = error_of(&outcome);
    assert!(error.message.starts_with("Uncaught xxx"));
    assert!(
        error
            .message
            .ends_with("… [message truncated: 100000009 chars in all]"),
        "{}",
        &error.message[error.message.len() - 100..]
    );
    assert!(units(&error.message) <= CAP + 64);
}

#[tokio::test]
async fn huge_names_and_non_string_messages_are_capped() {
    let outcome = crate::common::run(
        "const e = new Error('m'); e.name = 'N'.repeat(1e6); e.message = { text: 't'.repeat(1e6) }; throw e;",
    )
    .await;
    let error = error_of(&outcome);
    assert!(
        error
            .name
            .ends_with("… [name truncated: 1000000 chars in all]")
    );
    assert!(
        units(&error.message) <= CAP + 64,
        "{}",
        units(&error.message)
    );
}

#[tokio::test]
async fn a_cut_never_splits_a_surrogate_pair() {
    for source in [
        // The cut falls between the two halves of a pair.
        "throw new Error('a' + '😀'.repeat(40000));",
        "throw 'a' + '😀'.repeat(40000);",
        "const e = new Error('x'); e.stack = 'b' + '😀'.repeat(40000); throw e;",
    ] {
        let outcome = crate::common::run(source).await;
        let error = error_of(&outcome);
        let stack = error.stack.clone().unwrap_or_default();
        for text in [&error.message, &stack] {
            assert!(
                !text.contains('\u{FFFD}'),
                "{source}: a surrogate was split"
            );
        }
        assert!(
            error.message.contains("truncated") || stack.contains("truncated"),
            "{source}"
        );
    }
}

#[tokio::test]
async fn a_tool_error_with_a_huge_stack_or_message_is_capped() {
    let (outcome, _) = run_tools(
        "try { await tools.fail({}); } catch (e) { e.stack = 's'.repeat(1e7); throw e; }",
    )
    .await;
    let error = error_of(&outcome);
    assert_eq!(
        (error.name.as_str(), error.code.as_deref()),
        ("ToolError", Some("TOOL_ERROR"))
    );
    let stack = error.stack.unwrap_or_default();
    assert!(stack.contains("[stack truncated: 10000000 chars in all]"));
    assert!(stack.len() <= CAP + 128);
}

#[tokio::test]
async fn huge_messages_inside_value_and_argument_errors_are_capped() {
    let outcome =
        crate::common::run("return { get x() { throw new Error('q'.repeat(1e7)); } };").await;
    let error = error_of(&outcome);
    assert!(
        error
            .message
            .starts_with("the return value cannot be serialized: reading the property threw: qqq"),
        "{}",
        &error.message[..100]
    );
    assert!(
        units(&error.message) <= CAP + 256,
        "{}",
        units(&error.message)
    );

    // The reason an argument could not be read goes to the host capped as well.
    let (outcome, _) = run_tools(
        "try { await tools.echo({ get x() { throw new Error('q'.repeat(1e7)); } }); } catch (e) { return [e.code, e.message.length]; }",
    )
    .await;
    let value = outcome.value_json().expect("a value");
    assert_eq!(value[0], "INVALID_ARGS", "{value}");
    assert!(value[1].as_u64().unwrap() <= (CAP + 256) as u64, "{value}");
}

#[tokio::test]
async fn lone_surrogates_in_errors_and_values_keep_the_outcome() {
    // JSON.stringify writes a lone surrogate as an escape the host's reader refuses: before, the
    // report was unreadable (InternalError) or the outcome could not be written at all.
    let error = error_of(&crate::common::run("throw new Error('a\\ud800b');").await);
    assert_eq!(
        (error.name.as_str(), error.message.as_str()),
        ("Error", "a\u{FFFD}b")
    );

    let outcome =
        crate::common::run("return ['a\\ud800b', { ['k\\udc00']: 1 }, '\\\\ud800'];").await;
    assert_eq!(
        outcome.value_json(),
        Some(json!(["a\u{FFFD}b", {"k\u{FFFD}": 1}, "\\ud800"])),
        "{}",
        outcome.to_json()
    );
}

// --- Item 9: nesting limit -------------------------------------------------------------------

fn nested_array(levels: usize) -> String {
    format!("let v = 1; for (let i = 0; i < {levels}; i++) v = [v];")
}

#[tokio::test]
async fn a_value_of_100_levels_is_returned_and_readable() {
    let outcome = crate::common::run(&format!("{} return v;", nested_array(100))).await;
    assert_eq!(outcome.status, RunStatus::Ok, "{}", outcome.to_json());
    let mut value = outcome.value_json().expect("the host reads it");
    let mut levels = 0;
    while let Value::Array(mut items) = value {
        levels += 1;
        value = items.pop().unwrap();
    }
    assert_eq!((levels, value), (100, json!(1)));
}

#[tokio::test]
async fn return_values_nested_deeper_than_100_levels_are_an_error_naming_the_path() {
    for (source, path_start, path_end) in [
        (
            format!("{} return v;", nested_array(101)),
            "(at $[0][0][0]",
            "[0][0][0])",
        ),
        (
            "let v = 1; for (let i = 0; i < 150; i++) v = { a: v }; return v;".to_string(),
            "(at $.a.a.a",
            ".a.a.a)",
        ),
        // Built by toJSON while the value is written.
        (
            "const deep = (n) => n === 0 ? 1 : { toJSON() { return [deep(n - 1)]; } }; return deep(1000);"
                .to_string(),
            "(at $[0][0]",
            "[0][0])",
        ),
        // Far deeper than the engine's stack allows a recursive walk.
        (
            format!("{} return {{ top: v }};", nested_array(100_000)),
            "(at $.top[0]",
            "[0][0])",
        ),
    ] {
        let error = error_of(&crate::common::run(&source).await);
        assert_eq!(error.name, "TypeError", "{source}");
        let message = &error.message;
        assert!(
            message.starts_with(
                "the return value cannot be serialized: value is nested deeper than 100 levels "
            ),
            "{message}"
        );
        assert!(
            message.contains(path_start) && message.ends_with(path_end),
            "{message}"
        );
        // A long path keeps its two ends.
        assert!(message.len() < 400 && message.contains('…'), "{message}");
    }
}

#[tokio::test]
async fn deep_tool_arguments_are_a_catchable_invalid_args() {
    // Plain data is written by the engine's JSON.stringify and the host refuses what it cannot
    // read (serde_json stops at 128 levels) and says so; what takes the careful walk meets the
    // glue's limit.
    let source = format!(
        r#"{}
const codes = [];
for (const args of [{{ v }}, {{ v, big: 1n }}]) {{
  try {{ await tools.echo(args); codes.push('ran'); }} catch (e) {{ codes.push([e.name, e.code, e.message]); }}
}}
return codes;"#,
        nested_array(200)
    );
    let (outcome, host) = run_tools(&source).await;
    let value = outcome.value_json().expect("a value");
    assert!(host.ran().is_empty(), "{:?}", host.ran());
    for (i, expected) in [
        "nest arrays and objects more than 125 levels deep",
        "nested deeper than 100 levels",
    ]
    .iter()
    .enumerate()
    {
        assert_eq!(value[i][0], "ToolError", "{value}");
        assert_eq!(value[i][1], "INVALID_ARGS", "{value}");
        assert!(value[i][2].as_str().unwrap().contains(expected), "{value}");
    }
}

// --- Item 5: tool calls after the body returned ----------------------------------------------

#[tokio::test]
async fn tool_calls_made_while_the_return_value_is_serialized_never_run() {
    for (source, expected) in [
        (
            "return { toJSON() { tools.write_file({ path: 'x', content: 'y' }); return 1; } };",
            json!(1),
        ),
        (
            "return { a: { get b() { tools.write_file({}); return 2; } } };",
            json!({"a": {"b": 2}}),
        ),
        (
            "return [{ toJSON() { return tools.write_file({}) instanceof Promise; } }];",
            json!([true]),
        ),
        // Awaiting the refused call in toJSON's own promise chain changes nothing either.
        (
            "return { toJSON() { tools.write_file({}).then(() => {}, () => {}); return 'v'; } };",
            json!("v"),
        ),
    ] {
        let (outcome, host) = run_tools(source).await;
        assert_eq!(
            outcome.status,
            RunStatus::Ok,
            "{source}: {}",
            outcome.to_json()
        );
        assert_eq!(outcome.value_json(), Some(expected), "{source}");
        assert!(host.ran().is_empty(), "{source}: {:?}", host.ran());
        assert_eq!(outcome.stats.tool_calls, 0, "{source}");
    }
}

#[tokio::test]
async fn tool_calls_made_while_a_thrown_value_is_described_never_run() {
    for (source, message) in [
        (
            "const e = new Error('x'); Object.defineProperty(e, 'message', { get() { tools.write_file({}); return 'm'; } }); throw e;",
            Some("m"),
        ),
        (
            "const e = new Error('x'); Object.defineProperty(e, 'name', { get() { tools.write_file({}); return 'N'; } }); throw e;",
            Some("x"),
        ),
        (
            "const e = new Error('x'); Object.defineProperty(e, 'stack', { get() { tools.write_file({}); return 'S'; } }); throw e;",
            Some("x"),
        ),
        // A return value that cannot be serialized, whose error message is read by the glue.
        (
            "return { get v() { throw { get message() { tools.write_file({}); return 'inner'; } }; } };",
            None,
        ),
    ] {
        let (outcome, host) = run_tools(source).await;
        let error = error_of(&outcome);
        if let Some(message) = message {
            assert_eq!(error.message, message, "{source}");
        }
        assert!(host.ran().is_empty(), "{source}: {:?}", host.ran());
        assert_eq!(outcome.stats.tool_calls, 0, "{source}");
    }
}

#[tokio::test]
async fn a_thrown_plain_object_is_described_without_running_its_getters() {
    // The engine itself reads `name` and `message` of a thrown object while the throw unwinds the
    // program (to build a stack), so a getter there runs during the program's own throw, caught or
    // not; those calls are the program's. The glue adds none: inspection prints `[Getter]`.
    let thrown = "{ get message() { tools.write_file({}); return 'm'; } }";
    let (caught, caught_host) = run_tools(&format!(
        "try {{ throw {thrown}; }} catch {{}}\nawait new Promise((resolve) => setTimeout(resolve, 1));\nreturn 0;"
    ))
    .await;
    assert_eq!(caught.status, RunStatus::Ok, "{}", caught.to_json());
    let (outcome, host) = run_tools(&format!("throw {thrown};")).await;
    let error = error_of(&outcome);
    assert_eq!(error.message, "Uncaught { message: [Getter] }");
    assert_eq!(host.ran().len(), caught_host.ran().len());
}

#[tokio::test]
async fn calls_made_by_the_body_before_it_returns_still_run() {
    let (outcome, host) = run_tools(
        "const p = tools.write_file({ path: 'a' }); const v = { toJSON() { return 'done'; } }; await p; return v;",
    )
    .await;
    assert_eq!(
        outcome.value_json(),
        Some(json!("done")),
        "{}",
        outcome.to_json()
    );
    assert_eq!(host.ran().len(), 1);
    assert_eq!(outcome.stats.tool_calls, 1);
}

//! Property tests over randomly nested and randomly shaped programs, values and schemas: the
//! host never crashes, and every input ends in a result or a clear error.
//!
//! CI runs a bounded number of cases; `make fuzz` runs many more (`CODEMODE_FUZZ_CASES`).

use std::sync::OnceLock;

use codemode::sandbox::{Sandbox, SandboxConfig, transpile};
use codemode::sdk::{SdkTool, generate_sdk};
use proptest::prelude::*;
use proptest::test_runner::Config;
use serde_json::{Value, json};

fn cases() -> u32 {
    std::env::var("CODEMODE_FUZZ_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(48)
}

fn config() -> Config {
    Config {
        cases: cases(),
        failure_persistence: None,
        ..Config::default()
    }
}

/// One level of nesting around an expression.
#[derive(Debug, Clone, Copy)]
enum Wrap {
    Array,
    Paren,
    Object,
    Not,
    Arrow,
    Ternary,
    Template,
    Call,
    Sum,
    If,
    Block,
    Function,
    Generic,
}

fn wrap(kind: Wrap, inner: &str) -> String {
    match kind {
        Wrap::Array => format!("[{inner}]"),
        Wrap::Paren => format!("({inner})"),
        Wrap::Object => format!("{{ a: {inner} }}"),
        Wrap::Not => format!("!{inner}"),
        Wrap::Arrow => format!("((x) => ({inner}))"),
        Wrap::Ternary => format!("(x ? 1 : {inner})"),
        Wrap::Template => format!("`${{{inner}}}`"),
        Wrap::Call => format!("f({inner})"),
        Wrap::Sum => format!("({inner} + 1)"),
        Wrap::If => format!("(() => {{ if (x) return {inner}; }})()"),
        Wrap::Block => format!("(() => {{ {{ return {inner}; }} }})()"),
        Wrap::Function => format!("(function () {{ return {inner}; }})()"),
        Wrap::Generic => format!("({inner} as Array<Array<number>>)"),
    }
}

fn wraps() -> impl Strategy<Value = Wrap> {
    prop_oneof![
        Just(Wrap::Array),
        Just(Wrap::Paren),
        Just(Wrap::Object),
        Just(Wrap::Not),
        Just(Wrap::Arrow),
        Just(Wrap::Ternary),
        Just(Wrap::Template),
        Just(Wrap::Call),
        Just(Wrap::Sum),
        Just(Wrap::If),
        Just(Wrap::Block),
        Just(Wrap::Function),
        Just(Wrap::Generic),
    ]
}

/// The front end on a thread with a small stack, like a runtime worker's or smaller.
fn transpile_on_small_stack(source: String) -> Result<(), String> {
    std::thread::Builder::new()
        .stack_size(512 * 1024)
        .spawn(move || transpile(&source).map(|_| ()).map_err(|e| e.message))
        .unwrap()
        .join()
        .expect("the front end never panics or overflows its caller's stack")
}

proptest! {
    #![proptest_config(config())]

    /// Any nesting of any shapes, shallow or thousands deep: compiled, or refused with the
    /// nesting error; never a crash.
    #[test]
    fn randomly_nested_programs_compile_or_are_refused(
        levels in prop::collection::vec(wraps(), 0..4000),
    ) {
        let mut expr = "1".to_string();
        for kind in &levels {
            expr = wrap(*kind, &expr);
        }
        let source = format!("const x = 1; const f = (v: unknown) => v;\nreturn {expr};");
        match transpile_on_small_stack(source) {
            Ok(()) => prop_assert!(levels.len() < 1000, "{} levels compiled", levels.len()),
            Err(message) => {
                prop_assert!(message.contains("nests"), "{message}");
                // Every wrapper adds at least one level.
                prop_assert!(levels.len() > 100, "{} levels refused: {message}", levels.len());
            }
        }
    }
}

fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap()
    })
}

fn sandbox() -> &'static Sandbox {
    static SANDBOX: OnceLock<Sandbox> = OnceLock::new();
    SANDBOX.get_or_init(|| {
        let _guard = runtime().enter();
        Sandbox::new(SandboxConfig::default()).unwrap()
    })
}

/// JSON values that survive a trip through JavaScript unchanged (integers within 2^31, so no
/// precision question; any characters).
fn values() -> impl Strategy<Value = Value> {
    let text = prop::collection::vec(any::<char>(), 0..6).prop_map(String::from_iter);
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i32>().prop_map(|n| json!(n)),
        text.clone().prop_map(Value::String),
    ];
    leaf.prop_recursive(6, 48, 5, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map(text.clone(), inner, 0..5)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

fn depth(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Value::Object(map) => 1 + map.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

proptest! {
    #![proptest_config(config())]

    /// A returned value comes back equal, or (nested past the limit) as an error that names
    /// the nesting; never a missing outcome.
    #[test]
    fn returned_values_come_back_equal_or_fail_cleanly(
        value in values(),
        extra in 0usize..130,
    ) {
        let mut wrapped = value;
        for _ in 0..extra {
            wrapped = json!([wrapped]);
        }
        let program = format!("return {};", serde_json::to_string(&wrapped).unwrap());
        let outcome = runtime().block_on(sandbox().run(&program));
        if depth(&wrapped) <= 100 {
            prop_assert!(outcome.is_ok(), "{}", outcome.to_json());
            prop_assert_eq!(outcome.value_json(), Some(wrapped));
        } else {
            prop_assert_eq!(outcome.status.as_str(), "error");
            let message = &outcome.error.as_ref().unwrap().message;
            prop_assert!(message.contains("deeper") || message.contains("nest"), "{}", message);
        }
    }
}

/// Schemas of any shape, valid or not: the SDK is generated (or the tool refused) without a
/// crash.
fn schemas() -> impl Strategy<Value = Value> {
    let name = prop::sample::select(vec!["a", "b", "if", "x-y", "", "0", "__proto__"]);
    let leaf = prop_oneof![
        Just(json!({"type": "string"})),
        Just(json!({"type": "integer", "minimum": 0})),
        Just(json!({"type": ["number", "null"]})),
        Just(json!({"enum": ["a", 1, null, {"x": 1}]})),
        Just(json!({"const": "k"})),
        Just(json!({"$ref": "#/$defs/missing"})),
        Just(json!({"type": "nonsense"})),
        Just(json!(true)),
        Just(json!({})),
        Just(json!(42)),
    ];
    leaf.prop_recursive(8, 64, 4, move |inner| {
        prop_oneof![
            prop::collection::vec((name.clone(), inner.clone()), 0..4).prop_map(|props| {
                let required: Vec<&str> = props.iter().map(|(k, _)| *k).collect();
                json!({
                    "type": "object",
                    "properties": props.into_iter().map(|(k, v)| (k.to_string(), v)).collect::<serde_json::Map<_, _>>(),
                    "required": required,
                })
            }),
            inner.clone().prop_map(|items| json!({"type": "array", "items": items})),
            prop::collection::vec(inner.clone(), 1..4).prop_map(|all| json!({"anyOf": all})),
            prop::collection::vec(inner.clone(), 1..3).prop_map(|all| json!({"allOf": all})),
            inner.prop_map(|extra| json!({"type": "object", "additionalProperties": extra})),
        ]
    })
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn random_schemas_never_crash_the_sdk(input in schemas(), output in schemas()) {
        let tool = SdkTool {
            namespace: Some("ns".into()),
            sandbox_name: "tool".into(),
            original_name: "tool".into(),
            description: "a tool".into(),
            input_schema: input.clone(),
            output_schema: Some(output),
        };
        let sdk = generate_sdk(&[tool]);
        prop_assert!(sdk.contains("tool("), "{sdk}");
        // Registering a tool with it either works or says why.
        let _ = codemode::ToolDefinition::builder("t")
            .description("d")
            .parameters(input)
            .execute(|_args: Value, _exec| async move {
                Ok::<_, codemode::ToolFailure>(json!(null))
            })
            .build();
    }
}

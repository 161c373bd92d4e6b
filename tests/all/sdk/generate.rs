//! What the generated text looks like: snapshots and the properties a harness relies on.

use codemode::Limits;
use codemode::sdk::{SdkTool, generate_sdk, run_code_description};
use serde_json::json;

use super::corpus::corpus;

fn tool(namespace: Option<&str>, name: &str, input: serde_json::Value) -> SdkTool {
    SdkTool {
        namespace: namespace.map(str::to_owned),
        sandbox_name: name.to_owned(),
        original_name: name.to_owned(),
        description: format!("The {name} tool."),
        input_schema: input,
        output_schema: None,
    }
}

/// Snapshots live in `tests/all/snapshots/`, shared by every module of the test binary.
macro_rules! assert_snapshot {
    ($name:expr, $value:expr) => {
        insta::with_settings!({snapshot_path => "../snapshots", prepend_module_to_snapshot => false}, {
            insta::assert_snapshot!($name, $value);
        })
    };
}

#[test]
fn corpus_sdk_matches_snapshot() {
    assert_snapshot!("sdk_corpus_tools_d_ts", generate_sdk(&corpus()));
}

#[test]
fn run_code_description_matches_snapshot() {
    let git: Vec<SdkTool> = corpus()
        .into_iter()
        .filter(|t| t.namespace.as_deref() == Some("git"))
        .collect();
    let sdk = generate_sdk(&git);
    assert_snapshot!(
        "sdk_run_code_description",
        run_code_description(&sdk, &Limits::default())
    );
}

#[test]
fn sdk_is_identical_whatever_the_tool_order() {
    let tools = corpus();
    let expected = generate_sdk(&tools);
    let mut reversed = tools.clone();
    reversed.reverse();
    assert_eq!(generate_sdk(&reversed), expected);
    // A fixed interleaving, so the test itself stays deterministic.
    let mut interleaved: Vec<SdkTool> = tools.iter().step_by(2).cloned().collect();
    interleaved.extend(tools.iter().skip(1).step_by(2).cloned());
    assert_eq!(generate_sdk(&interleaved), expected);
}

#[test]
fn tool_without_output_schema_returns_promise_unknown() {
    let sdk = generate_sdk(&[tool(
        None,
        "delete",
        json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
    )]);
    assert!(
        sdk.contains("  delete(args: DeleteInput): Promise<unknown>;\n"),
        "{sdk}"
    );
    assert!(!sdk.contains("DeleteOutput"), "{sdk}");
}

#[test]
fn tools_without_required_arguments_take_optional_args() {
    let sdk = generate_sdk(&[tool(None, "ping", json!({"type": "object"}))]);
    assert!(
        sdk.contains("  ping(args?: PingInput): Promise<unknown>;\n"),
        "{sdk}"
    );
}

#[test]
fn namespaced_tools_nest_under_their_namespace_after_top_level_tools() {
    let input = json!({"type": "object", "properties": {}});
    let sdk = generate_sdk(&[
        tool(Some("git"), "status", input.clone()),
        tool(None, "read", input.clone()),
        tool(Some("gh"), "status", input),
    ]);
    let tools_object = &sdk[sdk.find("declare const tools").expect("tools object")..];
    assert_eq!(
        tools_object,
        "declare const tools: {\n  /** The read tool. */\n  read(args?: ReadInput): Promise<unknown>;\n  gh: {\n    /** The status tool. */\n    status(args?: GhStatusInput): Promise<unknown>;\n  };\n  git: {\n    /** The status tool. */\n    status(args?: GitStatusInput): Promise<unknown>;\n  };\n};\n"
    );
}

#[test]
fn clashing_type_names_are_suffixed_in_sorted_order() {
    let input = json!({"type": "object", "properties": {}});
    let sdk = generate_sdk(&[
        tool(None, "getUser", input.clone()),
        tool(None, "get_user", input),
    ]);
    assert!(sdk.contains("getUser(args?: GetUserInput): "), "{sdk}");
    assert!(sdk.contains("get_user(args?: GetUser2Input): "), "{sdk}");
}

#[test]
fn tool_names_that_clash_with_other_tools_types_are_suffixed() {
    let defines_b_input =
        json!({"$ref": "#/$defs/BInput", "$defs": {"BInput": {"type": "string"}}});
    let no_args = json!({"type": "object", "properties": {}});
    let sdk = generate_sdk(&[tool(None, "a", defines_b_input), tool(None, "a_b", no_args)]);
    // Tool input/output names are chosen first, so the `$defs` name yields.
    assert!(sdk.contains("type AInput = ABInput2;"), "{sdk}");
    assert!(sdk.contains("a_b(args?: ABInput): "), "{sdk}");
}

#[test]
fn tool_types_never_shadow_runtime_types() {
    let sdk = generate_sdk(&[tool(
        None,
        "tool_error",
        json!({"$ref": "#/$defs/Code", "$defs": {"Code": {"type": "string"}}}),
    )]);
    assert!(
        sdk.contains("type ToolErrorInput = ToolErrorCode2;"),
        "{sdk}"
    );
}

#[test]
fn tool_types_never_redeclare_library_globals() {
    let schema = json!({"$ref": "#/$defs/Target", "$defs": {"Target": {"type": "string"}}});
    let sdk = generate_sdk(&[tool(None, "event", schema)]);
    assert!(sdk.contains("type EventInput = EventTarget2;"), "{sdk}");
}

#[test]
fn original_name_is_documented_when_it_differs() {
    let mut get_user = tool(None, "get_user", json!({"type": "object"}));
    get_user.original_name = "get-user".into();
    let sdk = generate_sdk(&[get_user]);
    assert!(sdk.contains("   * Original name: `get-user`.\n"), "{sdk}");
}

#[test]
fn sdk_declares_tool_error_and_runtime_types() {
    let sdk = generate_sdk(&[]);
    assert!(sdk.contains("type ToolErrorCode = (\"UNKNOWN_TOOL\" | \"INVALID_ARGS\" | \"DENIED\" | \"TIMEOUT\" | \"TOOL_ERROR\" | \"OUTPUT_INVALID\" | \"BLOCKED\" | \"CANCELLED\" | \"LIMIT_EXCEEDED\");"), "{sdk}");
    assert!(
        sdk.contains("type ToolError = Error & ToolErrorFields;"),
        "{sdk}"
    );
    assert!(sdk.contains("type ConsoleLevel = "), "{sdk}");
    assert!(sdk.ends_with("declare const tools: {\n};\n"), "{sdk}");
}

use codemode::pipeline::CallRequest;
use codemode::schema::{import_tools, sample_value};
use codemode::{Pipeline, ToolDefinition, ToolRegistry};
use serde_json::{Value, json};

fn mcp_tools() -> Value {
    json!([
        {
            "name": "read_graph",
            "description": "Read the graph",
            "inputSchema": {"type": "object", "properties": {}},
            "outputSchema": {"type": "object", "properties": {"nodes": {"type": "array", "items": {"type": "string"}}}, "required": ["nodes"]},
            "annotations": {"readOnlyHint": true}
        },
        {"name": "create-node", "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}}
    ])
}

#[test]
fn mcp_response_result_and_bare_array_import_the_same() {
    let tools = mcp_tools();
    let a = import_tools(&json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": tools.clone()}}))
        .unwrap();
    let b = import_tools(&json!({"tools": tools.clone()})).unwrap();
    let c = import_tools(&tools).unwrap();
    assert_eq!(a, b);
    assert_eq!(b, c);
    assert_eq!(a.len(), 2);
    assert!(a[0].read_only);
    assert!(a[0].output_schema.is_some());
    assert!(!a[1].read_only);
    assert_eq!(a[1].description, "");
}

#[test]
fn openai_chat_and_flat_forms_import() {
    let params =
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]});
    let chat = json!([{"type": "function", "function": {"name": "weather", "description": "Get weather", "parameters": params}}]);
    let flat = json!([{"name": "weather", "description": "Get weather", "parameters": params}]);
    let a = import_tools(&chat).unwrap();
    let b = import_tools(&flat).unwrap();
    assert_eq!(a, b);
    assert_eq!(a[0].parameters, params);
}

#[test]
fn bad_entries_are_named_in_errors() {
    let err = import_tools(&json!([{"name": "ok"}, {"description": "no name"}])).unwrap_err();
    assert!(
        err.message.contains("#1") && err.message.contains("missing `name`"),
        "{err}"
    );
    let err = import_tools(&json!([{"name": "grep", "inputSchema": "nope"}])).unwrap_err();
    assert!(
        err.message.contains("grep") && err.message.contains("inputSchema"),
        "{err}"
    );
    let err = import_tools(&json!({"jsonrpc": "2.0", "error": {"code": -1}})).unwrap_err();
    assert!(err.message.contains("error response"), "{err}");
    let err = import_tools(&json!("tools")).unwrap_err();
    assert!(err.message.contains("expected"), "{err}");
    let err = import_tools(&json!([{"type": "function", "function": 3}])).unwrap_err();
    assert!(
        err.message.contains("`function` must be an object"),
        "{err}"
    );
}

#[test]
fn samples_validate_against_their_schemas() {
    let schemas = [
        json!({"type": "string"}),
        json!({"type": "string", "minLength": 12, "format": "email"}),
        json!({"type": "integer", "minimum": 5, "maximum": 9}),
        json!({"type": "number", "exclusiveMinimum": 0, "multipleOf": 0.5}),
        json!({"type": "boolean"}),
        json!({"type": "null"}),
        json!({"enum": ["a", "b"]}),
        json!({"const": {"x": 1}}),
        json!({"type": "array", "items": {"type": "integer"}, "minItems": 2}),
        json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": ["null", "integer"]}}, "required": ["a"], "additionalProperties": false}),
        json!({"oneOf": [{"type": "string"}, {"type": "string", "maxLength": 3}, {"type": "integer"}]}),
        json!({"anyOf": [{"type": "object", "required": ["k"], "properties": {"k": {"type": "string"}}}, {"type": "null"}]}),
        json!({"allOf": [{"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}, {"properties": {"b": {"type": "string"}}, "required": ["b"]}]}),
        json!({"$defs": {"node": {"type": "object", "properties": {"id": {"type": "string", "format": "uuid"}, "next": {"anyOf": [{"$ref": "#/$defs/node"}, {"type": "null"}]}}, "required": ["id"]}}, "$ref": "#/$defs/node"}),
        json!({"definitions": {"n": {"type": "integer", "minimum": 3}}, "type": "object", "properties": {"n": {"$ref": "#/definitions/n"}}}),
    ];
    for schema in schemas {
        let sample = sample_value(&schema);
        let validator = jsonschema::validator_for(&schema).unwrap();
        assert!(
            validator.is_valid(&sample),
            "sample {sample} breaks {schema}"
        );
    }
}

/// Hostile or careless schemas end quickly: a `$ref` cycle inside `allOf`, `anyOf` branching
/// through a recursive `$ref` (2^16 paths without the budget), and a huge `minLength`.
#[test]
fn sampling_is_bounded_whatever_the_schema() {
    let started = std::time::Instant::now();
    let cycle = json!({
        "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
        "allOf": [{"$ref": "#/$defs/a"}]
    });
    let _ = sample_value(&cycle);
    let branching = json!({
        "$defs": {"t": {"anyOf": [
            {"type": "object", "properties": {"l": {"$ref": "#/$defs/t"}, "r": {"$ref": "#/$defs/t"}}},
            {"$ref": "#/$defs/t"}
        ]}},
        "$ref": "#/$defs/t"
    });
    let _ = sample_value(&branching);
    let long = sample_value(&json!({"type": "string", "minLength": 4_000_000_000u64}));
    assert!(long.as_str().is_some_and(|s| s.len() <= 4_096), "{long}");
    let fits = sample_value(&json!({"type": "string", "minLength": 100}));
    assert_eq!(fits.as_str().map(str::len), Some(100));
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "sampling took {:?}",
        started.elapsed()
    );
}

#[test]
fn unknown_schema_samples_to_null() {
    assert_eq!(sample_value(&json!({"not": {}})), Value::Null);
}

#[tokio::test]
async fn mock_tools_validate_args_and_answer_with_samples() {
    let specs = import_tools(&mcp_tools()).unwrap();
    let mut registry = ToolRegistry::new();
    for spec in &specs {
        registry
            .register_namespaced("memory", ToolDefinition::mock_from_spec(spec).unwrap())
            .unwrap();
    }
    let pipeline = Pipeline::builder(registry).build();
    let out = pipeline
        .call(CallRequest::new("memory.read_graph", json!({})))
        .await;
    assert_eq!(out.value.as_deref(), Some(&json!({"nodes": ["string"]})));
    let out = pipeline
        .call(CallRequest::new("memory.create_node", json!({})))
        .await;
    assert_eq!(out.error.unwrap().code().as_str(), "INVALID_ARGS");
    let out = pipeline
        .call(CallRequest::new("memory.create_node", json!({"name": "n"})))
        .await;
    assert_eq!(out.value.unwrap()["args"], json!({"name": "n"}));
}

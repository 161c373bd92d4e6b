use codemode::schema::{
    CompiledSchema, array, boolean, const_, enum_, integer, null, number, object, one_of, string,
};
use serde_json::json;

#[test]
fn dsl_builds_json_schema_with_required_optional_and_defaults() {
    let schema = object()
        .description("search files")
        .property("pattern", string().description("regex"))
        .property("limit", integer().minimum(1).default(50))
        .property("path", string().optional())
        .property("flags", array(enum_(["i", "m"])).optional())
        .into_json();
    assert_eq!(
        schema,
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "regex"},
                "limit": {"type": "integer", "minimum": 1, "default": 50},
                "path": {"type": "string"},
                "flags": {"type": "array", "items": {"enum": ["i", "m"]}}
            },
            "additionalProperties": false,
            "description": "search files",
            "required": ["pattern"]
        })
    );
}

#[test]
fn dsl_covers_every_primitive_and_combinator() {
    assert_eq!(number().into_json(), json!({"type": "number"}));
    assert_eq!(boolean().into_json(), json!({"type": "boolean"}));
    assert_eq!(null().into_json(), json!({"type": "null"}));
    assert_eq!(const_("x").into_json(), json!({"const": "x"}));
    assert_eq!(
        string().nullable().into_json(),
        json!({"type": ["string", "null"]})
    );
    assert_eq!(
        one_of([string(), integer()]).into_json(),
        json!({"oneOf": [{"type": "string"}, {"type": "integer"}]})
    );
}

#[test]
fn property_order_is_kept() {
    let schema = object()
        .property("zeta", string())
        .property("alpha", string())
        .into_json();
    let keys: Vec<&String> = schema["properties"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["zeta", "alpha"]);
}

#[test]
fn issues_carry_json_pointer_paths_for_every_problem() {
    let schema = CompiledSchema::compile(
        object()
            .property("name", string())
            .property("tags", array(string()))
            .property("n", integer().minimum(0))
            .into_json(),
    )
    .unwrap();
    let issues = schema.issues(&json!({"tags": ["a", 2], "n": -1, "extra": true}));
    let paths: Vec<&str> = issues.iter().map(|i| i.path.as_str()).collect();
    assert!(paths.contains(&"/tags/1"), "{issues:?}");
    assert!(paths.contains(&"/n"), "{issues:?}");
    assert!(
        paths.contains(&""),
        "missing `name` and the extra property are root issues: {issues:?}"
    );
    assert!(issues.len() >= 4, "{issues:?}");
    assert!(issues.iter().all(|i| !i.message.is_empty()));
}

#[test]
fn raw_schemas_with_refs_any_of_all_of_and_null_types_validate() {
    let schema = CompiledSchema::compile(json!({
        "type": "object",
        "$defs": {"id": {"type": "string", "pattern": "^u[0-9]+$"}},
        "properties": {
            "user": {"$ref": "#/$defs/id"},
            "when": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            "both": {"allOf": [{"type": "number"}, {"minimum": 3}]},
            "maybe": {"type": ["string", "null"]}
        },
        "required": ["user"]
    }))
    .unwrap();
    assert!(schema.is_valid(&json!({"user": "u1", "when": 3, "both": 4, "maybe": null})));
    let issues = schema.issues(&json!({"user": "x", "when": true, "both": 1}));
    let paths: Vec<&str> = issues.iter().map(|i| i.path.as_str()).collect();
    assert_eq!(paths.len(), 3, "{issues:?}");
    for p in ["/user", "/when", "/both"] {
        assert!(paths.contains(&p), "{p} in {issues:?}");
    }
}

#[test]
fn malformed_schema_is_a_compile_error() {
    let err = CompiledSchema::compile(json!({"type": 12})).unwrap_err();
    assert!(err.to_string().contains("invalid schema"), "{err}");
}

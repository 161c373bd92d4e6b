//! One test per schema feature, asserting the exact TypeScript.

use serde_json::{Value, json};

use super::convert_document;
use crate::sdk::declaration::write_declaration;
use crate::sdk::naming::NameAllocator;

/// Every declaration `schema` produces when it is the input of a tool named `T`.
fn declarations(schema: Value) -> String {
    let mut names = NameAllocator::default();
    let mut out = String::new();
    for declaration in convert_document(&schema, "TInput", "T", &mut names) {
        write_declaration(&mut out, &declaration);
    }
    out
}

/// The TypeScript of a property typed by `schema`.
fn property(schema: Value) -> String {
    let text =
        declarations(json!({"type": "object", "properties": {"p": schema}, "required": ["p"]}));
    let body = text
        .strip_prefix("interface TInput {\n")
        .and_then(|rest| rest.strip_suffix("}\n"))
        .unwrap_or_else(|| panic!("not a one-property interface:\n{text}"));
    body.lines()
        .filter(|line| !line.trim_start().starts_with("/*") && !line.trim_start().starts_with('*'))
        .map(|line| line.strip_prefix("  ").unwrap_or(line))
        .collect::<Vec<_>>()
        .join("\n")
        .strip_prefix("p: ")
        .and_then(|t| t.strip_suffix(';'))
        .unwrap_or_else(|| panic!("unexpected body:\n{body}"))
        .to_owned()
}

#[test]
fn primitives_map_to_typescript_keywords_and_integer_is_number() {
    assert_eq!(property(json!({"type": "string"})), "string");
    assert_eq!(property(json!({"type": "integer"})), "number");
    assert_eq!(property(json!({"type": "number"})), "number");
    assert_eq!(property(json!({"type": "boolean"})), "boolean");
    assert_eq!(property(json!({"type": "null"})), "null");
}

#[test]
fn empty_and_true_schemas_are_unknown_and_false_is_never() {
    assert_eq!(property(json!({})), "unknown");
    assert_eq!(property(json!(true)), "unknown");
    assert_eq!(property(json!({"description": "anything"})), "unknown");
    assert_eq!(property(json!(false)), "never");
}

#[test]
fn malformed_and_unknown_type_names_accept_anything() {
    assert_eq!(property(json!({"type": []})), "unknown");
    assert_eq!(property(json!({"type": "any"})), "unknown");
    assert_eq!(property(json!({"type": 7})), "unknown");
}

#[test]
fn object_properties_keep_schema_order_and_mark_optional_ones() {
    let schema = json!({
        "type": "object",
        "properties": {"zeta": {"type": "string"}, "alpha": {"type": "number"}},
        "required": ["zeta"]
    });
    assert_eq!(
        declarations(schema),
        "interface TInput {\n  zeta: string;\n  alpha?: number;\n}\n"
    );
}

#[test]
fn non_identifier_property_names_are_quoted() {
    let schema = json!({
        "type": "object",
        "properties": {"content-type": {"type": "string"}, "2fa": {"type": "string"}, "delete": {"type": "boolean"}}
    });
    assert_eq!(
        declarations(schema),
        "interface TInput {\n  \"content-type\"?: string;\n  \"2fa\"?: string;\n  delete?: boolean;\n}\n"
    );
}

#[test]
fn required_names_without_a_schema_are_required_unknowns() {
    let schema = json!({"type": "object", "properties": {}, "required": ["id"]});
    assert_eq!(
        declarations(schema),
        "interface TInput {\n  id: unknown;\n}\n"
    );
}

#[test]
fn object_without_properties_is_a_string_map() {
    assert_eq!(
        property(json!({"type": "object"})),
        "{\n  [key: string]: unknown;\n}"
    );
}

#[test]
fn object_with_empty_properties_is_an_empty_interface() {
    assert_eq!(
        declarations(json!({"type": "object", "properties": {}})),
        "interface TInput {}\n"
    );
}

#[test]
fn additional_properties_schema_becomes_an_index_signature() {
    let schema = json!({"type": "object", "additionalProperties": {"type": "integer"}});
    assert_eq!(
        declarations(schema),
        "interface TInput {\n  [key: string]: number;\n}\n"
    );
}

#[test]
fn index_signature_next_to_properties_admits_their_types() {
    let schema = json!({
        "type": "object",
        "properties": {"name": {"type": "string"}, "size": {"type": "integer"}},
        "required": ["name"],
        "additionalProperties": {"type": "boolean"}
    });
    assert_eq!(
        declarations(schema),
        "interface TInput {\n  name: string;\n  size?: number;\n  [key: string]: boolean | string | number | undefined;\n}\n"
    );
}

#[test]
fn additional_properties_false_closes_the_object() {
    let schema = json!({"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": false});
    assert_eq!(
        declarations(schema),
        "interface TInput {\n  a?: string;\n}\n"
    );
}

#[test]
fn additional_properties_true_is_an_unknown_index() {
    let schema = json!({"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": true});
    assert_eq!(
        declarations(schema),
        "interface TInput {\n  a?: string;\n  [key: string]: unknown;\n}\n"
    );
}

#[test]
fn pattern_properties_join_the_index_signature() {
    let schema = json!({
        "type": "object",
        "patternProperties": {"^x-": {"type": "string"}, "^n-": {"type": "number"}}
    });
    assert_eq!(
        declarations(schema),
        "interface TInput {\n  [key: string]: string | number;\n}\n"
    );
}

#[test]
fn arrays_map_items_and_parenthesise_unions() {
    assert_eq!(
        property(json!({"type": "array", "items": {"type": "string"}})),
        "string[]"
    );
    assert_eq!(property(json!({"type": "array"})), "unknown[]");
    assert_eq!(
        property(json!({"type": "array", "items": {"type": ["string", "number"]}})),
        "(string | number)[]"
    );
    assert_eq!(
        property(
            json!({"type": "array", "items": {"type": "array", "items": {"type": "integer"}}})
        ),
        "number[][]"
    );
}

#[test]
fn prefix_items_make_a_tuple_with_min_items_required() {
    let schema = json!({
        "type": "array",
        "prefixItems": [{"type": "number"}, {"type": "number"}, {"type": "string"}],
        "items": false,
        "minItems": 2
    });
    assert_eq!(property(schema), "[number, number, string?]");
}

#[test]
fn prefix_items_with_items_schema_get_a_typed_rest() {
    let schema = json!({
        "type": "array",
        "prefixItems": [{"type": "string"}],
        "items": {"type": "integer"},
        "minItems": 1
    });
    assert_eq!(property(schema), "[string, ...number[]]");
}

#[test]
fn open_tuple_has_an_unknown_rest() {
    let schema = json!({"prefixItems": [{"type": "string"}], "minItems": 1});
    assert_eq!(property(schema), "[string, ...unknown[]]");
}

#[test]
fn max_items_at_the_prefix_length_closes_the_tuple() {
    let schema = json!({"prefixItems": [{"type": "number"}, {"type": "number"}], "minItems": 2, "maxItems": 2});
    assert_eq!(property(schema), "[number, number]");
}

#[test]
fn draft7_items_array_is_a_tuple_closed_by_additional_items() {
    let schema = json!({
        "type": "array",
        "items": [{"type": "string"}, {"type": "boolean"}],
        "additionalItems": false,
        "minItems": 2,
        "maxItems": 2
    });
    assert_eq!(property(schema), "[string, boolean]");
}

#[test]
fn enums_become_literal_unions() {
    assert_eq!(
        property(json!({"type": "string", "enum": ["open", "closed", "it's \"x\""]})),
        r#""open" | "closed" | "it's \"x\"""#
    );
    assert_eq!(
        property(json!({"enum": [1, 2.5, true, null]})),
        "1 | 2.5 | true | null"
    );
}

#[test]
fn const_becomes_a_literal() {
    assert_eq!(property(json!({"const": "v1"})), "\"v1\"");
    assert_eq!(property(json!({"const": {"a": [1]}})), "{\"a\":[1]}");
}

#[test]
fn type_arrays_with_null_are_nullable_unions() {
    assert_eq!(
        property(json!({"type": ["string", "null"]})),
        "string | null"
    );
    assert_eq!(
        property(json!({"type": ["array", "null"], "items": {"type": "string"}})),
        "string[] | null"
    );
}

#[test]
fn openapi_nullable_adds_null() {
    assert_eq!(
        property(json!({"type": "integer", "nullable": true})),
        "number | null"
    );
    assert_eq!(
        property(json!({"type": "string", "enum": ["a", "b"], "nullable": true})),
        "\"a\" | \"b\" | null"
    );
}

#[test]
fn one_of_and_any_of_are_unions() {
    assert_eq!(
        property(json!({"oneOf": [{"type": "string"}, {"type": "integer"}]})),
        "string | number"
    );
    assert_eq!(
        property(json!({"anyOf": [{"type": "string"}, {"type": "null"}]})),
        "string | null"
    );
}

#[test]
fn discriminated_one_of_prints_one_object_per_member() {
    let schema = json!({
        "type": "object",
        "oneOf": [
            {"type": "object", "properties": {"kind": {"const": "a"}}, "required": ["kind"]},
            {"type": "object", "properties": {"kind": {"const": "b"}, "n": {"type": "number"}}, "required": ["kind", "n"]}
        ]
    });
    assert_eq!(
        declarations(schema),
        "type TInput = {\n  kind: \"a\";\n} | {\n  kind: \"b\";\n  n: number;\n};\n"
    );
}

#[test]
fn all_of_is_an_intersection_with_sibling_keywords() {
    let schema = json!({
        "type": "object",
        "properties": {"id": {"type": "string"}},
        "required": ["id"],
        "allOf": [{"$ref": "#/$defs/Audit"}],
        "$defs": {"Audit": {"type": "object", "properties": {"at": {"type": "string"}}}}
    });
    assert_eq!(
        declarations(schema),
        "type TInput = {\n  id: string;\n} & TAudit;\ninterface TAudit {\n  at?: string;\n}\n"
    );
}

#[test]
fn union_inside_intersection_is_parenthesised() {
    let schema = json!({
        "allOf": [{"type": "object", "properties": {"a": {"type": "string"}}}],
        "anyOf": [{"required": ["a"]}, {"required": ["b"]}]
    });
    assert_eq!(
        declarations(schema),
        "type TInput = {\n  a?: string;\n} & ({\n  a: unknown;\n} | {\n  b: unknown;\n});\n"
    );
}

#[test]
fn local_refs_become_named_types_prefixed_by_the_tool() {
    let schema = json!({
        "type": "object",
        "properties": {
            "owner": {"$ref": "#/$defs/User"},
            "reviewers": {"type": "array", "items": {"$ref": "#/$defs/User"}}
        },
        "$defs": {"User": {"type": "object", "description": "A person.", "properties": {"login": {"type": "string"}}, "required": ["login"]}}
    });
    assert_eq!(
        declarations(schema),
        "interface TInput {\n  owner?: TUser;\n  reviewers?: TUser[];\n}\n/** A person. */\ninterface TUser {\n  login: string;\n}\n"
    );
}

#[test]
fn draft7_definitions_and_percent_encoded_refs_resolve() {
    let schema = json!({
        "type": "object",
        "properties": {"a": {"$ref": "#/definitions/file_mode"}, "b": {"$ref": "#/%24defs/Tag"}},
        "definitions": {"file_mode": {"enum": ["r", "w"]}},
        "$defs": {"Tag": {"type": "string"}}
    });
    assert_eq!(
        declarations(schema),
        "interface TInput {\n  a?: TFileMode;\n  b?: TTag;\n}\ntype TFileMode = \"r\" | \"w\";\ntype TTag = string;\n"
    );
}

#[test]
fn recursive_refs_terminate_through_the_named_type() {
    let schema = json!({
        "$ref": "#/$defs/Node",
        "$defs": {"Node": {
            "type": "object",
            "properties": {"name": {"type": "string"}, "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}},
            "required": ["name"]
        }}
    });
    assert_eq!(
        declarations(schema),
        "type TInput = TNode;\ninterface TNode {\n  name: string;\n  children?: TNode[];\n}\n"
    );
}

#[test]
fn root_ref_points_at_the_declared_root() {
    let schema = json!({
        "type": "object",
        "properties": {"value": {"type": "string"}, "next": {"anyOf": [{"$ref": "#"}, {"type": "null"}]}}
    });
    assert_eq!(
        declarations(schema),
        "interface TInput {\n  value?: string;\n  next?: TInput | null;\n}\n"
    );
}

#[test]
fn remote_and_broken_refs_are_unknown_with_a_note() {
    assert_eq!(
        property(json!({"$ref": "https://example.com/schema.json"})),
        "/* unresolved $ref: https://example.com/schema.json */ unknown"
    );
    assert_eq!(
        property(json!({"$ref": "#/$defs/Missing"})),
        "/* unresolved $ref: #/$defs/Missing */ unknown"
    );
}

#[test]
fn def_names_that_clash_get_a_numeric_suffix() {
    let mut names = NameAllocator::default();
    names.allocate("TNode");
    let schema = json!({"$ref": "#/$defs/Node", "$defs": {"Node": {"type": "string"}}});
    let declarations = convert_document(&schema, "TInput", "T", &mut names);
    assert_eq!(declarations[1].name, "TNode2");
}

#[test]
fn property_docs_carry_description_format_and_default() {
    let schema = json!({
        "type": "object",
        "properties": {
            "since": {"type": "string", "format": "date-time", "description": "Lower bound."},
            "limit": {"type": "integer", "default": 30, "minimum": 1, "maximum": 100}
        }
    });
    assert_eq!(
        declarations(schema),
        "interface TInput {\n  /**\n   * Lower bound.\n   * format: date-time\n   */\n  since?: string;\n  /**\n   * minimum: 1, maximum: 100\n   * @default 30\n   */\n  limit?: number;\n}\n"
    );
}

#[test]
fn formats_without_a_doc_slot_are_inline_comments() {
    assert_eq!(
        property(json!({"type": "array", "items": {"type": "string", "format": "uri"}})),
        "(/* format: uri */ string)[]"
    );
}

#[test]
fn root_description_documents_the_declaration() {
    assert_eq!(
        declarations(json!({"type": "string", "description": "A path. Use */ carefully."})),
        "/** A path. Use *\\/ carefully. */\ntype TInput = string;\n"
    );
}

#[test]
fn nested_objects_are_inlined_and_indented() {
    let schema = json!({
        "type": "object",
        "properties": {"author": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}}
    });
    assert_eq!(
        declarations(schema),
        "interface TInput {\n  author?: {\n    name: string;\n  };\n}\n"
    );
}

//! A learned [`Shape`] as the JSON Schema the SDK generator renders (so learned and declared
//! output types go through one converter and print alike).

use serde_json::{Map, Value, json};

use super::shape::{RENDERED_NODES, Shape};

/// The JSON Schema of `shape`, with `description` on the root saying it was learned from
/// `results` results. Objects are closed (a misspelt field fails type checking); a position
/// that became a map is `additionalProperties`.
///
/// A shape of more than [`RENDERED_NODES`] positions is shown without its deepest levels.
pub fn learned_schema(shape: &Shape, results: u64) -> Value {
    let mut schema = if shape.nodes() > RENDERED_NODES {
        schema_of(&shape.within(RENDERED_NODES))
    } else {
        schema_of(shape)
    };
    let plural = if results == 1 { "" } else { "s" };
    let description = format!(
        "Inferred by codemode from {results} successful result{plural} of this tool (it declares no output schema): fields seen in every result are required. A result that does not fit widens it; no call fails for it."
    );
    match &mut schema {
        Value::Object(map) => {
            map.insert("description".into(), Value::String(description));
            schema
        }
        // `true` (any value) has nowhere to put a description.
        _ => json!({ "description": description }),
    }
}

fn schema_of(shape: &Shape) -> Value {
    if shape.unknown {
        return Value::Bool(true);
    }
    let mut simple: Vec<&str> = Vec::new();
    let mut members: Vec<Value> = Vec::new();
    if shape.string {
        simple.push("string");
    }
    if shape.number {
        simple.push("number");
    }
    if shape.boolean {
        simple.push("boolean");
    }
    if let Some(object) = &shape.object {
        let mut map = Map::new();
        map.insert("type".into(), json!("object"));
        if let Some(values) = &object.map {
            map.insert("additionalProperties".into(), schema_of(values));
        } else {
            let properties: Map<String, Value> = object
                .fields
                .iter()
                .map(|(name, field)| (name.clone(), schema_of(&field.shape)))
                .collect();
            let required: Vec<&str> = object
                .fields
                .iter()
                .filter(|(_, field)| object.is_required(field))
                .map(|(name, _)| name.as_str())
                .collect();
            map.insert("properties".into(), Value::Object(properties));
            if !required.is_empty() {
                map.insert("required".into(), json!(required));
            }
            map.insert("additionalProperties".into(), Value::Bool(false));
        }
        members.push(Value::Object(map));
    }
    if let Some(items) = &shape.array {
        let items = if items.is_empty() {
            // Only empty arrays were seen: their elements could be anything.
            Value::Bool(true)
        } else {
            schema_of(items)
        };
        members.push(json!({ "type": "array", "items": items }));
    }
    if shape.null {
        simple.push("null");
    }
    match (simple.len(), members.len()) {
        (0, 0) => Value::Bool(false),
        (0, 1) => members.pop().expect("one member"),
        (1, 0) => json!({ "type": simple[0] }),
        (_, 0) => json!({ "type": simple }),
        _ => {
            let mut any_of: Vec<Value> = members;
            any_of.extend(simple.into_iter().map(|kind| json!({ "type": kind })));
            json!({ "anyOf": any_of })
        }
    }
}

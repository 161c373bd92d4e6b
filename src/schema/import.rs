//! Tool descriptions from other ecosystems: an MCP `tools/list` response (whole JSON-RPC message,
//! its `result`, or the bare `tools` array) and OpenAI function definitions (Chat form
//! `{type:"function", function:{..}}` and flat form `{name, description, parameters}`).
//!
//! The result is a [`ToolSpec`] without a body; [`crate::tool::ToolDefinition::from_spec`] adds one.

use serde_json::{Map, Value};

/// A tool's declaration as imported: everything but the body.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolSpec {
    /// The name as the source gives it (never empty); the sandbox name is derived from it.
    pub name: String,
    /// Shown to the model; `""` when the source has none.
    pub description: String,
    /// JSON Schema of the arguments (`inputSchema`, `parameters` or `input_schema`), kept
    /// as-is; an empty object schema when the source has none.
    pub parameters: Value,
    /// JSON Schema of the value the tool returns (`outputSchema` or `output_schema`); `None`
    /// when the source declares none.
    pub output_schema: Option<Value>,
    /// MCP `annotations.readOnlyHint: true`: the tool is parallel-safe unless policy says otherwise.
    pub read_only: bool,
}

/// Bad input to [`import_tools`]; the message names the entry and what is wrong with it.
#[derive(Debug, Clone, thiserror::Error, PartialEq)]
#[error("{message}")]
pub struct ImportError {
    /// What is wrong, naming the entry (index and name when known).
    pub message: String,
}

fn err(message: String) -> ImportError {
    ImportError { message }
}

/// Parses any supported shape into tool specs, in source order.
///
/// # Errors
/// [`ImportError`] naming the entry (index and name when known) and the problem.
pub fn import_tools(doc: &Value) -> Result<Vec<ToolSpec>, ImportError> {
    let entries = locate_entries(doc)?;
    entries
        .iter()
        .enumerate()
        .map(|(i, entry)| import_entry(i, entry))
        .collect()
}

fn locate_entries(doc: &Value) -> Result<&Vec<Value>, ImportError> {
    match doc {
        Value::Array(list) => Ok(list),
        Value::Object(obj) => {
            if let Some(err_obj) = obj.get("error") {
                return Err(err(format!(
                    "the document is a JSON-RPC error response: {err_obj}"
                )));
            }
            let holder = obj.get("result").unwrap_or(doc);
            match holder.get("tools") {
                Some(Value::Array(list)) => Ok(list),
                Some(_) => Err(err("`tools` must be an array".into())),
                None if obj.contains_key("name") || obj.contains_key("function") => {
                    Err(err("expected a list of tools, found a single tool definition; wrap it in [...]".into()))
                }
                None => Err(err(
                    "expected a tools/list response, its `result`, a `tools` array, or OpenAI function definitions".into(),
                )),
            }
        }
        _ => Err(err(
            "expected a JSON object or array of tool definitions".into()
        )),
    }
}

fn import_entry(index: usize, entry: &Value) -> Result<ToolSpec, ImportError> {
    let Value::Object(obj) = entry else {
        return Err(err(format!(
            "tool #{index}: expected an object, found {}",
            kind_of(entry)
        )));
    };
    // Chat form nests the definition under `function`.
    let (def, form) = match obj.get("function") {
        Some(Value::Object(f)) => (f, "OpenAI function"),
        Some(other) => {
            return Err(err(format!(
                "tool #{index}: `function` must be an object, found {}",
                kind_of(other)
            )));
        }
        None => (obj, "tool"),
    };
    if let Some(t) = obj.get("type")
        && t != "function"
        && obj.contains_key("function")
    {
        return Err(err(format!(
            "tool #{index}: unsupported type {t}, expected \"function\""
        )));
    }
    let name = match def.get("name") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        Some(Value::String(_)) => return Err(err(format!("{form} #{index}: `name` is empty"))),
        Some(other) => {
            return Err(err(format!(
                "{form} #{index}: `name` must be a string, found {}",
                kind_of(other)
            )));
        }
        None => return Err(err(format!("{form} #{index}: missing `name`"))),
    };
    let at = |what: &str| format!("{form} #{index} ({name}): {what}");
    let description = match def.get("description") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => {
            return Err(err(at(&format!(
                "`description` must be a string, found {}",
                kind_of(other)
            ))));
        }
    };
    let parameters = schema_field(def, &["inputSchema", "parameters", "input_schema"], &at)?
        .unwrap_or_else(|| serde_json::json!({"type": "object", "properties": {}}));
    let output_schema = schema_field(def, &["outputSchema", "output_schema"], &at)?;
    let read_only = def
        .get("annotations")
        .and_then(|a| a.get("readOnlyHint"))
        .is_some_and(|v| v == &Value::Bool(true));
    Ok(ToolSpec {
        name,
        description,
        parameters,
        output_schema,
        read_only,
    })
}

fn schema_field(
    def: &Map<String, Value>,
    keys: &[&str],
    at: &dyn Fn(&str) -> String,
) -> Result<Option<Value>, ImportError> {
    for key in keys {
        match def.get(*key) {
            None | Some(Value::Null) => continue,
            Some(v @ Value::Object(_)) | Some(v @ Value::Bool(_)) => return Ok(Some(v.clone())),
            Some(other) => {
                return Err(err(at(&format!(
                    "`{key}` must be a JSON Schema object, found {}",
                    kind_of(other)
                ))));
            }
        }
    }
    Ok(None)
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

//! An upstream `tools/call` result as a canonical value (issue 5, DESIGN.md §2):
//!
//! - `structuredContent` when present;
//! - else one text block: its parsed JSON when it parses, else the text;
//! - else each block as a value (text as a string; images, audio and resources as
//!   `{type, mimeType, data | uri}` objects): one block alone, several as an array, none as `null`.
//!
//! `isError: true` is a tool failure carrying the server's text.
//!
//! A value nested deeper than [`MAX_ANSWER_DEPTH`] levels is an error too ([`AnswerError::TooDeep`]),
//! never silently something else: in particular a text block holding JSON too deep for the parser
//! (serde_json stops at 128 levels) is not handed over as a string.
//!
//! Works on the wire JSON of the result, so it does not depend on the SDK's content enums.

use serde_json::{Map, Value, json};

/// How deeply an upstream answer may nest objects and arrays (`{"a": 1}` is one level). Below
/// what a JSON message can carry through the MCP client (serde_json's limit of 128 levels, the
/// JSON-RPC envelope included), so one limit holds whichever way the value arrives.
pub(crate) const MAX_ANSWER_DEPTH: usize = 100;

/// Why a result has no canonical value.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum AnswerError {
    /// `isError: true`: the server's text.
    #[error("{0}")]
    Reported(String),
    /// The value nests objects and arrays deeper than [`MAX_ANSWER_DEPTH`].
    #[error("the answer is nested deeper than the limit of {MAX_ANSWER_DEPTH} levels")]
    TooDeep,
}

/// The canonical value of a successful result, or why there is none.
pub(crate) fn canonical_value(result: &Value) -> Result<Value, AnswerError> {
    let blocks = result
        .get("content")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        let text = error_text(blocks);
        return Err(AnswerError::Reported(if text.is_empty() {
            "the tool reported an error without a message".to_string()
        } else {
            text
        }));
    }
    let value = if let Some(structured) = result.get("structuredContent") {
        structured.clone()
    } else {
        match blocks {
            [] => Value::Null,
            [only] => match text_of(only) {
                Some(text) => parse_text(text)?,
                None => block_value(only),
            },
            several => Value::Array(several.iter().map(block_value).collect()),
        }
    };
    if nested_deeper_than(&value, MAX_ANSWER_DEPTH) {
        return Err(AnswerError::TooDeep);
    }
    Ok(value)
}

/// A text block's JSON, else the text itself. JSON nested too deep for serde_json is an error,
/// not text: the recursion limit fails the parse before the end of the text is seen, so the text
/// is checked as a whole by serde_json's skipping parser, which walks any depth without recursing.
fn parse_text(text: &str) -> Result<Value, AnswerError> {
    match serde_json::from_str(text) {
        Ok(value) => Ok(value),
        Err(e)
            if e.to_string().starts_with("recursion limit exceeded")
                && serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok() =>
        {
            Err(AnswerError::TooDeep)
        }
        Err(_) => Ok(Value::String(text.into())),
    }
}

/// Whether `value` nests objects and arrays more than `limit` levels deep (a scalar is 0 levels).
/// Walks with an explicit stack of at most `limit` entries: no recursion on the host's stack,
/// whatever built the value.
pub(crate) fn nested_deeper_than(value: &Value, limit: usize) -> bool {
    enum Children<'a> {
        Items(std::slice::Iter<'a, Value>),
        Members(serde_json::map::Values<'a>),
    }
    let mut open: Vec<Children<'_>> = Vec::new();
    let mut next = Some(value);
    loop {
        let children = match next.take() {
            Some(Value::Array(items)) => Some(Children::Items(items.iter())),
            Some(Value::Object(members)) => Some(Children::Members(members.values())),
            _ => None,
        };
        if let Some(children) = children {
            if open.len() == limit {
                return true;
            }
            open.push(children);
        }
        let Some(top) = open.last_mut() else {
            return false;
        };
        next = match top {
            Children::Items(items) => items.next(),
            Children::Members(members) => members.next(),
        };
        if next.is_none() {
            open.pop();
        }
    }
}

/// The text blocks joined, for error messages.
fn error_text(blocks: &[Value]) -> String {
    blocks
        .iter()
        .filter_map(text_of)
        .collect::<Vec<_>>()
        .join("\n")
}

fn text_of(block: &Value) -> Option<&str> {
    (block.get("type").and_then(Value::as_str) == Some("text"))
        .then(|| block.get("text").and_then(Value::as_str))
        .flatten()
}

/// One content block as a value.
fn block_value(block: &Value) -> Value {
    let kind = block
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("unknown");
    let field = |name: &str| block.get(name).cloned();
    match kind {
        "text" => field("text").unwrap_or(Value::Null),
        "image" | "audio" => json!({
            "type": kind,
            "mimeType": field("mimeType").unwrap_or(Value::Null),
            "data": field("data").unwrap_or(Value::Null),
        }),
        "resource" => {
            // An embedded resource: `{uri, mimeType?, text | blob}`.
            let resource = block.get("resource").cloned().unwrap_or(Value::Null);
            let mut out = Map::new();
            out.insert("type".into(), json!("resource"));
            out.insert(
                "mimeType".into(),
                resource.get("mimeType").cloned().unwrap_or(Value::Null),
            );
            out.insert(
                "uri".into(),
                resource.get("uri").cloned().unwrap_or(Value::Null),
            );
            if let Some(text) = resource.get("text") {
                out.insert("text".into(), text.clone());
            }
            if let Some(blob) = resource.get("blob") {
                out.insert("data".into(), blob.clone());
            }
            Value::Object(out)
        }
        "resource_link" => {
            let mut out = Map::new();
            out.insert("type".into(), json!("resource_link"));
            out.insert("mimeType".into(), field("mimeType").unwrap_or(Value::Null));
            out.insert("uri".into(), field("uri").unwrap_or(Value::Null));
            if let Some(name) = field("name") {
                out.insert("name".into(), name);
            }
            Value::Object(out)
        }
        // A block type this version does not know: keep it whole rather than lose it.
        _ => block.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn structured_content_wins_over_text() {
        let result = json!({"content": [{"type": "text", "text": "{\"a\": 2}"}], "structuredContent": {"a": 1}});
        assert_eq!(canonical_value(&result), Ok(json!({"a": 1})));
    }

    #[test]
    fn a_single_json_text_block_is_parsed() {
        let result = json!({"content": [{"type": "text", "text": "[1, 2, {\"x\": true}]"}]});
        assert_eq!(canonical_value(&result), Ok(json!([1, 2, {"x": true}])));
    }

    #[test]
    fn a_single_plain_text_block_stays_text() {
        let result = json!({"content": [{"type": "text", "text": "Echo: hi"}]});
        assert_eq!(canonical_value(&result), Ok(json!("Echo: hi")));
    }

    #[test]
    fn several_blocks_become_an_array_with_media_objects() {
        let result = json!({"content": [
            {"type": "text", "text": "a picture:"},
            {"type": "image", "mimeType": "image/png", "data": "iVBOR"},
            {"type": "resource", "resource": {"uri": "test://1", "mimeType": "text/plain", "text": "hello"}},
            {"type": "resource_link", "uri": "test://2", "name": "two", "mimeType": "text/plain"}
        ]});
        assert_eq!(
            canonical_value(&result),
            Ok(json!([
                "a picture:",
                {"type": "image", "mimeType": "image/png", "data": "iVBOR"},
                {"type": "resource", "mimeType": "text/plain", "uri": "test://1", "text": "hello"},
                {"type": "resource_link", "mimeType": "text/plain", "uri": "test://2", "name": "two"}
            ]))
        );
    }

    #[test]
    fn no_content_is_null() {
        assert_eq!(canonical_value(&json!({"content": []})), Ok(Value::Null));
    }

    #[test]
    fn is_error_carries_the_server_text() {
        let result = json!({"isError": true, "content": [{"type": "text", "text": "no such entity"}], "structuredContent": {"x": 1}});
        assert_eq!(
            canonical_value(&result),
            Err(AnswerError::Reported("no such entity".to_string()))
        );
        let bare = json!({"isError": true, "content": []});
        assert!(
            canonical_value(&bare)
                .unwrap_err()
                .to_string()
                .contains("without a message")
        );
    }

    /// JSON text of `levels` objects, each holding the next under `a`.
    fn nested_text(levels: usize) -> String {
        format!("{}1{}", r#"{"a":"#.repeat(levels), "}".repeat(levels))
    }

    /// The same as a value, built without recursion.
    fn nested_value(levels: usize) -> Value {
        let mut value = json!(1);
        for _ in 0..levels {
            value = json!({ "a": value });
        }
        value
    }

    #[test]
    fn depth_counts_object_and_array_levels() {
        assert!(!nested_deeper_than(&json!(1), 0));
        assert!(nested_deeper_than(&json!([]), 0));
        assert!(!nested_deeper_than(&json!([[1], {"a": [2]}]), 3));
        assert!(nested_deeper_than(&json!([[1], {"a": [[2]]}]), 3));
        assert!(!nested_deeper_than(&nested_value(100), 100));
        assert!(nested_deeper_than(&nested_value(101), 100));
    }

    #[test]
    fn structured_content_deeper_than_the_limit_is_an_error() {
        let ok = json!({"content": [], "structuredContent": nested_value(MAX_ANSWER_DEPTH)});
        assert_eq!(canonical_value(&ok), Ok(nested_value(MAX_ANSWER_DEPTH)));
        let deep = json!({"content": [], "structuredContent": nested_value(MAX_ANSWER_DEPTH + 1)});
        let err = canonical_value(&deep).unwrap_err();
        assert_eq!(err, AnswerError::TooDeep);
        assert_eq!(
            err.to_string(),
            "the answer is nested deeper than the limit of 100 levels"
        );
    }

    #[test]
    fn json_text_too_deep_to_parse_is_an_error_not_a_string() {
        // 110 levels parse but break the limit; 200 levels stop serde_json (128) midway.
        for levels in [110, 200, 5000] {
            let result = json!({"content": [{"type": "text", "text": nested_text(levels)}]});
            assert_eq!(
                canonical_value(&result),
                Err(AnswerError::TooDeep),
                "{levels}"
            );
        }
        let fine = json!({"content": [{"type": "text", "text": nested_text(MAX_ANSWER_DEPTH)}]});
        assert_eq!(canonical_value(&fine), Ok(nested_value(MAX_ANSWER_DEPTH)));
    }

    #[test]
    fn text_that_only_looks_deep_stays_text() {
        for text in [
            format!("{} is how deep it goes", "[".repeat(200)),
            "1e400".to_string(),
        ] {
            let result = json!({"content": [{"type": "text", "text": text.clone()}]});
            assert_eq!(canonical_value(&result), Ok(Value::String(text)));
        }
    }
}

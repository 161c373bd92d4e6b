//! An upstream `tools/call` result as a canonical value (issue 5, DESIGN.md §2):
//!
//! - `structuredContent` when present;
//! - else one text block: its parsed JSON when it parses, else the text;
//! - else each block as a value (text as a string; images, audio and resources as
//!   `{type, mimeType, data | uri}` objects): one block alone, several as an array, none as `null`.
//!
//! `isError: true` is a tool failure carrying the server's text.
//!
//! Works on the wire JSON of the result, so it does not depend on the SDK's content enums.

use serde_json::{Map, Value, json};

/// The canonical value of a successful result, or the server's error text.
pub fn canonical_value(result: &Value) -> Result<Value, String> {
    let blocks = result
        .get("content")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        let text = error_text(blocks);
        return Err(if text.is_empty() {
            "the tool reported an error without a message".to_string()
        } else {
            text
        });
    }
    if let Some(structured) = result.get("structuredContent") {
        return Ok(structured.clone());
    }
    Ok(match blocks {
        [] => Value::Null,
        [only] => match text_of(only) {
            Some(text) => serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.into())),
            None => block_value(only),
        },
        several => Value::Array(several.iter().map(block_value).collect()),
    })
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
        assert_eq!(canonical_value(&result), Err("no such entity".to_string()));
        let bare = json!({"isError": true, "content": []});
        assert!(
            canonical_value(&bare)
                .unwrap_err()
                .contains("without a message")
        );
    }
}

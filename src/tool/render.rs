//! Default rendering of a canonical value into model-visible content.

use serde_json::Value;

/// Strings are shown raw; anything else as compact JSON (cheapest in tokens for the model).
pub fn default_render(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        // `to_string` goes through `fmt`; the serializer writes straight into the buffer.
        other => serde_json::to_string(other).unwrap_or_default(),
    }
}

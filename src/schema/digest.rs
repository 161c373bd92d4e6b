//! A schema's identity: the SHA-256 of its canonical JSON text (object keys sorted), so the same
//! schema has one digest whatever order its keys came in.

use serde_json::Value;
use sha2::{Digest, Sha256};

/// The first 16 hex digits of the SHA-256 of `schema`'s canonical JSON text.
pub fn schema_digest(schema: &Value) -> String {
    let mut canonical = String::new();
    write_canonical(schema, &mut canonical);
    let digest = Sha256::digest(canonical.as_bytes());
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// `value` as JSON with every object's keys sorted.
fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (key, value)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(value, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::schema_digest;

    #[test]
    fn key_order_does_not_change_the_digest_and_content_does() {
        let a = json!({"type": "object", "properties": {"q": {"type": "string"}, "n": {"type": "integer"}}});
        let b: serde_json::Value = serde_json::from_str(
            r#"{"properties": {"n": {"type": "integer"}, "q": {"type": "string"}}, "type": "object"}"#,
        )
        .unwrap();
        assert_eq!(schema_digest(&a), schema_digest(&b));
        assert_ne!(schema_digest(&a), schema_digest(&json!({"type": "object"})));
        assert_eq!(schema_digest(&a).len(), 16);
    }
}

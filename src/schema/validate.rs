//! JSON Schema validation, compiled once per schema (jsonschema crate, no network resolving).

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

pub use crate::call::ArgIssue;

/// A schema that is not valid JSON Schema (or uses an external `$ref` we do not fetch).
#[derive(Debug, Clone, thiserror::Error)]
#[error("invalid schema: {message}")]
pub struct SchemaError {
    /// What the validator objected to.
    pub message: String,
}

/// A JSON Schema together with its compiled validator. Cheap to clone.
#[derive(Clone)]
pub struct CompiledSchema {
    json: Arc<Value>,
    validator: Arc<jsonschema::Validator>,
    /// [`schema_digest`](super::schema_digest) of `json`, computed at first use.
    digest: Arc<std::sync::OnceLock<String>>,
}

impl fmt::Debug for CompiledSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("CompiledSchema").field(&self.json).finish()
    }
}

impl CompiledSchema {
    /// Compiles `schema`.
    ///
    /// # Errors
    /// [`SchemaError`] when the schema is malformed or refers to a document we cannot resolve.
    pub fn compile(schema: Value) -> Result<Self, SchemaError> {
        let validator = jsonschema::validator_for(&schema).map_err(|e| SchemaError {
            message: e.to_string(),
        })?;
        Ok(CompiledSchema {
            json: Arc::new(schema),
            validator: Arc::new(validator),
            digest: Arc::default(),
        })
    }

    /// The schema's [`schema_digest`](super::schema_digest), computed once per schema (a caller
    /// that needs it on every call pays for the hash once).
    pub fn digest(&self) -> &str {
        self.digest.get_or_init(|| super::schema_digest(&self.json))
    }

    /// The schema as given.
    pub fn json(&self) -> &Value {
        &self.json
    }

    /// Cheap yes/no check; the fast path of every call.
    pub fn is_valid(&self, value: &Value) -> bool {
        self.validator.is_valid(value)
    }

    /// Every issue of `value`, empty when it is valid.
    pub fn issues(&self, value: &Value) -> Vec<ArgIssue> {
        // The yes/no check is several times cheaper than collecting errors, and valid is the common case.
        if self.validator.is_valid(value) {
            return Vec::new();
        }
        self.validator
            .iter_errors(value)
            .map(|e| ArgIssue::new(e.instance_path().as_str(), e.to_string()))
            .collect()
    }
}

//! Schemas: the typed DSL, compiled validation with JSON-pointer issue paths, import of MCP and
//! OpenAI tool declarations, and sample values for mock executors.

mod digest;
mod dsl;
mod import;
mod sample;
mod validate;

pub use digest::schema_digest;
pub use dsl::{
    Schema, any_of, array, boolean, const_, enum_, integer, null, number, object, one_of, string,
};
pub use import::{ImportError, ToolSpec, import_tools};
pub use sample::sample_value;
pub use validate::{ArgIssue, CompiledSchema, SchemaError};

//! Output types learned from real results, for the tools that declare no output schema
//! (most of them: of 802 tools of 32 public MCP servers, 70 declare one).
//!
//! Every successful nested call's canonical value is folded into its tool's [`Shape`] by a
//! post-execute hook at the end of the pipeline ([`TypeStore::hook`]); failed calls never are.
//! The SDK then declares the tool's result as a named type, with JSDoc saying it is inferred and
//! from how many results ([`learned_schema`]). A declared `outputSchema` always wins, and an
//! inferred type never fails a call: a result that does not fit widens it.
//!
//! Shapes persist in a cache file ([`TypeStore::open`]) keyed by source, tool name and a hash
//! of the input schema ([`ToolKey`]). The file keeps field names and counts of results, never a
//! value.
//!
//! ```
//! use codemode::learned::{Shape, learned_schema};
//! use serde_json::json;
//!
//! let mut shape = Shape::of(&json!({"id": 1, "name": "a", "tags": ["x"]}));
//! shape.fold(&json!({"id": 2, "name": null}));
//! let schema = learned_schema(&shape, 2);
//! assert_eq!(schema["required"], json!(["id", "name"]));
//! assert_eq!(schema["properties"]["name"]["type"], json!(["string", "null"]));
//! assert!(!schema.to_string().contains("\"a\""), "no value is kept");
//! ```

mod schema;
mod shape;
mod store;

pub use schema::learned_schema;
pub use shape::{
    FieldShape, MAX_ARRAY_SAMPLE, MAX_DEPTH, MAX_FIELDS, MAX_NAME_BYTES, MAX_NODES, ObjectShape,
    RENDERED_NODES, Shape,
};
pub use store::{LOCK_WAIT, Learned, ToolKey, TypeStore, TypeStoreError};

use crate::pipeline::{PostAction, PostExecuteHook, post_hook_fn};
use crate::tool::ToolInfo;

impl TypeStore {
    /// The post-execute hook that records the results of tools without an output schema. Put
    /// it last, so it sees the value other hooks leave; it never changes a result.
    pub fn hook(&self) -> impl PostExecuteHook {
        let store = self.clone();
        post_hook_fn("learn-types", move |result| {
            let call = result.call;
            if call.tool.output_schema().is_none() && !store.ignores(call.path) {
                store.record(ToolKey::of_tool(call.path, call.tool), result.value);
            }
            PostAction::keep()
        })
    }

    /// `tool` as the SDK shows it: its declared output schema, else the learned one.
    pub fn output_schema_of(&self, tool: &ToolInfo) -> Option<serde_json::Value> {
        if let Some(declared) = &tool.output_schema {
            return Some(declared.clone());
        }
        let learned = self.learned(&ToolKey::new(&tool.path, &tool.name, &tool.parameters))?;
        Some(learned_schema(&learned.shape, learned.results))
    }
}

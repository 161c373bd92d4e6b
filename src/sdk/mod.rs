//! TypeScript SDK generation: the `tools.d.ts` a Code Mode program is written against, and the
//! `run_code` description that embeds it.
//!
//! The input is a neutral [`SdkTool`] (no dependency on the registry), the output plain text
//! that is byte-for-byte deterministic: tools are sorted by (namespace, name), schema property
//! order is kept, and every generated name is chosen in that fixed order.
//!
//! ```
//! use codemode::sdk::{SdkTool, generate_sdk};
//! use serde_json::json;
//!
//! let sdk = generate_sdk(&[SdkTool {
//!     namespace: None,
//!     sandbox_name: "get_user".into(),
//!     original_name: "get-user".into(),
//!     description: "Fetch a user by id.".into(),
//!     input_schema: json!({
//!         "type": "object",
//!         "properties": { "id": { "type": "string" } },
//!         "required": ["id"]
//!     }),
//!     output_schema: None,
//! }]);
//! assert!(sdk.contains("interface GetUserInput {\n  id: string;\n}"));
//! assert!(sdk.contains("get_user(args: GetUserInput): Promise<unknown>;"));
//! ```

mod declaration;
mod description;
mod jsdoc;
mod naming;
mod runtime_types;
mod schema_to_ts;
mod template;
mod ts_type;

pub use naming::is_identifier;

/// One tool as the SDK shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct SdkTool {
    /// `Some(ns)` puts the tool at `tools.<ns>.<name>`; must be an identifier.
    pub namespace: Option<String>,
    /// The name inside the sandbox (already mapped to an identifier; may be a reserved word).
    pub sandbox_name: String,
    /// The name the tool's source uses, shown in the JSDoc when it differs.
    pub original_name: String,
    /// Shown to the model as the JSDoc of the call.
    pub description: String,
    /// JSON Schema of the arguments; becomes the call's parameter type.
    pub input_schema: serde_json::Value,
    /// `None` makes the call return `Promise<unknown>`.
    pub output_schema: Option<serde_json::Value>,
}

/// The `tools.d.ts` text for `tools`, in any input order.
pub fn generate_sdk(tools: &[SdkTool]) -> String {
    declaration::render_sdk(tools)
}

/// `schema` as TypeScript declarations: one for the schema itself, named `name` in PascalCase
/// as the SDK names types (`everything.get-sum output` → `EverythingGetSumOutput`), then one
/// per `$defs` entry it references (with that name as prefix), as `tools.d.ts` would.
pub fn declare_type(name: &str, schema: &serde_json::Value) -> String {
    let mut names = naming::NameAllocator::with_reserved(
        runtime_types::RESERVED_TYPE_NAMES
            .iter()
            .chain(naming::LIB_GLOBAL_TYPES)
            .copied(),
    );
    let name = names.allocate(&naming::pascal_case(name));
    let mut out = String::new();
    for (i, declaration) in schema_to_ts::convert_document(schema, &name, &name, &mut names)
        .iter()
        .enumerate()
    {
        if i > 0 {
            out.push('\n');
        }
        declaration::write_declaration(&mut out, declaration);
    }
    out
}

/// The description of the `run_code` tool: how a program runs, what comes back (console and
/// return value), the `limits`, how errors look (`ToolError` and its codes), and `sdk`.
pub fn run_code_description(sdk: &str, limits: &crate::call::Limits) -> String {
    description::render_description(sdk, limits)
}

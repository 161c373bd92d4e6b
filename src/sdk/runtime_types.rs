//! The runtime's own fixed TypeScript types (error codes, `ToolError`'s fields, console levels).
//!
//! They are written as Rust types and turned into TypeScript by `typescript-type-def`, so the
//! SDK can never drift from the values the runtime actually produces: renaming a variant here
//! changes both the JSON the host emits and the `.d.ts` the model reads.

use std::sync::OnceLock;

use serde::Serialize;
use typescript_type_def::type_expr::{
    Ident, NativeTypeInfo, TypeExpr, TypeInfo, TypeName, TypeString,
};
use typescript_type_def::{DefinitionFileOptions, TypeDef, write_definition_file};

// `///` docs on these types are copied into the SDK, so they are written for the model;
// notes for Rust readers stay in `//` comments like this one.

pub(crate) use crate::call::ErrorCode as ToolErrorCode;

/// Level of a console entry: the `console` method that wrote it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TypeDef)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)] // only its TypeScript declaration is used
pub(crate) enum ConsoleLevel {
    Log,
    Info,
    Warn,
    Error,
    Debug,
}

/// Fields of the `ToolError` a failed tool call rejects with, besides those of `Error`.
#[derive(Debug, Clone, Serialize, TypeDef)]
pub(crate) struct ToolErrorFields {
    /// Always `"ToolError"`, so `err.name === "ToolError"` identifies tool failures.
    pub name: ToolErrorName,
    /// Stable machine code: branch on this, not on `message`.
    pub code: ToolErrorCode,
    /// Human-readable explanation.
    pub message: String,
    /// Sandbox path of the tool that failed (`grep`, `ns.name`).
    pub tool: String,
    /// Structured data that depends on `code`.
    pub details: ToolErrorDetails,
}

/// Marker for the literal `"ToolError"`; a unit struct keeps the literal out of user hands.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ToolErrorName;

impl Serialize for ToolErrorName {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str("ToolError")
    }
}

// Native (inline) rather than a named alias: the literal reads best where it is used.
impl TypeDef for ToolErrorName {
    const INFO: TypeInfo = TypeInfo::Native(NativeTypeInfo {
        r#ref: TypeExpr::String(TypeString {
            docs: None,
            value: "ToolError",
        }),
    });
}

/// `details` of a [`ToolErrorFields`]: a JSON object whose keys depend on the code.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(transparent)]
pub(crate) struct ToolErrorDetails(pub serde_json::Map<String, serde_json::Value>);

// `{ [key: string]: unknown }` is written as a named built-in so no alias is emitted; the
// crate's own `serde_json::Value` impl would instead declare a recursive `JSONValue` type.
impl TypeDef for ToolErrorDetails {
    const INFO: TypeInfo = TypeInfo::Native(NativeTypeInfo {
        r#ref: TypeExpr::Name(TypeName {
            path: &[],
            name: Ident("Record"),
            generic_args: &[
                TypeExpr::Name(TypeName {
                    path: &[],
                    name: Ident("string"),
                    generic_args: &[],
                }),
                TypeExpr::Name(TypeName {
                    path: &[],
                    name: Ident("unknown"),
                    generic_args: &[],
                }),
            ],
        }),
    });
}

/// Names the runtime types take in the SDK's global scope; tool types must avoid them.
pub(crate) const RESERVED_TYPE_NAMES: &[&str] = &[
    "ToolError",
    "ToolErrorCode",
    "ToolErrorFields",
    "ConsoleLevel",
];

/// TypeScript declarations of the runtime types, ready to embed in `tools.d.ts`.
///
/// Generated once per process: the text only depends on the types above.
pub(crate) fn declarations() -> &'static str {
    static TEXT: OnceLock<String> = OnceLock::new();
    TEXT.get_or_init(|| {
        let mut buf = Vec::new();
        let options = DefinitionFileOptions {
            header: None,
            root_namespace: None,
        };
        write_definition_file::<_, (ToolErrorFields, ConsoleLevel)>(&mut buf, options)
            .expect("writing to a Vec cannot fail");
        let text = String::from_utf8(buf).expect("typescript-type-def writes UTF-8");
        to_global_script(&text)
    })
}

/// `tools.d.ts` is a global script (programs use `tools` without importing it), but the
/// crate emits module syntax; `export` would turn the file into a module and hide every name.
/// Also re-indents from the crate's 4 spaces to the SDK's 2.
fn to_global_script(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let line = line.trim_end();
        let trimmed = line.trim_start_matches(' ');
        let spaces = line.len() - trimmed.len();
        let trimmed = trimmed.strip_prefix("export ").unwrap_or(trimmed);
        if trimmed.is_empty() {
            continue;
        }
        // JSDoc continuation lines are indented by one extra space (` * `); keep it.
        out.push_str(&"  ".repeat(spaces / 4));
        out.push_str(&" ".repeat(spaces % 4));
        out.push_str(trimmed);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declarations_are_global_types_without_exports() {
        let text = declarations();
        assert!(!text.contains("export"), "{text}");
        assert!(text.contains("type ToolErrorCode = "), "{text}");
        assert!(text.contains("type ConsoleLevel = "), "{text}");
    }

    #[test]
    fn code_union_lists_every_stable_code_in_order() {
        let union: Vec<String> = ToolErrorCode::ALL
            .iter()
            .map(|code| format!("{:?}", code.as_str()))
            .collect();
        let expected = format!("type ToolErrorCode = ({});", union.join(" | "));
        assert!(declarations().contains(&expected), "{}", declarations());
    }

    #[test]
    fn as_str_matches_serde_form() {
        for code in ToolErrorCode::ALL {
            let json = serde_json::to_value(code).unwrap();
            assert_eq!(json, serde_json::Value::from(code.as_str()));
        }
    }
}

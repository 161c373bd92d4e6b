//! Assembling `tools.d.ts`: tool order, type names, declarations and the `tools` object.

use super::SdkTool;
use super::jsdoc::Doc;
use super::naming::{LIB_GLOBAL_TYPES, NameAllocator, pascal_case, property_key};
use super::runtime_types::{self, RESERVED_TYPE_NAMES};
use super::schema_to_ts::{Declaration, convert_document};
use super::template::fill;
use super::ts_type::TsType;

const TOOLS_TEMPLATE: &str = include_str!("../../sdk-templates/tools.d.ts");

/// One tool with the names chosen for it.
struct Planned<'a> {
    tool: &'a SdkTool,
    /// `Github` + `CreateIssue`: the prefix of every type name of this tool.
    prefix: String,
    input: String,
    output: Option<String>,
}

/// See [`crate::sdk::generate_sdk`].
pub(crate) fn render_sdk(tools: &[SdkTool]) -> String {
    let planned = plan(tools);
    let reserved = RESERVED_TYPE_NAMES.iter().chain(LIB_GLOBAL_TYPES).copied();
    let mut names = NameAllocator::with_reserved(reserved);
    // Input/output names are taken before any `$defs` name so that they stay predictable
    // (`GetUserInput`) whatever the schemas define; a def that clashes gets the suffix.
    let planned: Vec<Planned<'_>> = planned
        .into_iter()
        .map(|(tool, prefix)| Planned {
            input: names.allocate(&format!("{prefix}Input")),
            output: tool
                .output_schema
                .as_ref()
                .map(|_| names.allocate(&format!("{prefix}Output"))),
            tool,
            prefix,
        })
        .collect();

    let mut types = String::new();
    let mut input_optional = Vec::with_capacity(planned.len());
    for plan in &planned {
        let inputs = convert_document(
            &plan.tool.input_schema,
            &plan.input,
            &plan.prefix,
            &mut names,
        );
        input_optional.push(matches!(&inputs[0].ty, TsType::Object(o) if o.accepts_empty()));
        let outputs = match (&plan.tool.output_schema, &plan.output) {
            (Some(schema), Some(name)) => convert_document(schema, name, &plan.prefix, &mut names),
            _ => Vec::new(),
        };
        for declaration in inputs.iter().chain(&outputs) {
            types.push('\n');
            write_declaration(&mut types, declaration);
        }
    }

    let members = render_members(&planned, &input_optional);
    fill(
        TOOLS_TEMPLATE,
        &[
            ("runtime_types", runtime_types::declarations()),
            ("tool_types", &types),
            ("tool_members", &members),
        ],
    )
}

/// Tools in (namespace, name) order, each with its type-name prefix.
///
/// Prefixes are unique (`getUser` and `get_user` become `GetUser` and `GetUser2`), so all
/// the types of one tool share one prefix and are recognisably its own.
fn plan(tools: &[SdkTool]) -> Vec<(&SdkTool, String)> {
    let mut sorted: Vec<&SdkTool> = tools.iter().collect();
    // The original name breaks ties so even an (invalid) duplicate sorts the same every time.
    sorted.sort_by(|a, b| {
        (a.namespace.as_deref(), &a.sandbox_name, &a.original_name).cmp(&(
            b.namespace.as_deref(),
            &b.sandbox_name,
            &b.original_name,
        ))
    });
    let mut prefixes = NameAllocator::default();
    sorted
        .into_iter()
        .map(|tool| {
            let namespace = tool
                .namespace
                .as_deref()
                .map(pascal_case)
                .unwrap_or_default();
            let prefix =
                prefixes.allocate(&format!("{namespace}{}", pascal_case(&tool.sandbox_name)));
            (tool, prefix)
        })
        .collect()
}

/// `interface` for plain object types (they read best and show up by name in tsc errors),
/// `type` for everything else.
pub(crate) fn write_declaration(out: &mut String, declaration: &Declaration) {
    declaration.doc.write(out, "");
    match &declaration.ty {
        TsType::Object(object) => {
            out.push_str("interface ");
            out.push_str(&declaration.name);
            if object.properties.is_empty() && object.index.is_none() {
                out.push_str(" {}\n");
                return;
            }
            out.push_str(" {\n");
            object.write_members(out, 1);
            out.push_str("}\n");
        }
        other => {
            out.push_str("type ");
            out.push_str(&declaration.name);
            out.push_str(" = ");
            out.push_str(&other.render(0));
            out.push_str(";\n");
        }
    }
}

/// The body of `declare const tools: {...}`: top-level tools, then one block per namespace.
fn render_members(planned: &[Planned<'_>], input_optional: &[bool]) -> String {
    let mut out = String::new();
    let mut open_namespace: Option<&str> = None;
    for (plan, &optional) in planned.iter().zip(input_optional) {
        let namespace = plan.tool.namespace.as_deref();
        if namespace != open_namespace {
            if open_namespace.is_some() {
                out.push_str("  };\n");
            }
            if let Some(namespace) = namespace {
                out.push_str("  ");
                out.push_str(&property_key(namespace));
                out.push_str(": {\n");
            }
            open_namespace = namespace;
        }
        let indent = if namespace.is_some() { "    " } else { "  " };
        write_method(&mut out, indent, plan, optional);
    }
    if open_namespace.is_some() {
        out.push_str("  };\n");
    }
    out
}

fn write_method(out: &mut String, indent: &str, plan: &Planned<'_>, optional: bool) {
    let tool = plan.tool;
    let mut doc = Doc::text(&tool.description);
    if tool.original_name != tool.sandbox_name {
        doc.push_paragraph(&format!("Original name: `{}`.", tool.original_name));
    }
    doc.write(out, indent);
    out.push_str(indent);
    out.push_str(&property_key(&tool.sandbox_name));
    out.push_str(if optional { "(args?: " } else { "(args: " });
    out.push_str(&plan.input);
    out.push_str("): Promise<");
    out.push_str(plan.output.as_deref().unwrap_or("unknown"));
    out.push_str(">;\n");
}

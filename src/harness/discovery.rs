//! Progressive discovery, for catalogs too large to put in the `run_code` description: two tools
//! in the `catalog` namespace let a program find tools and read one tool's types, and the
//! description shows only their SDK plus a count of tools per namespace.
//!
//! - `catalog.search({query, limit?})` → `{tools: [{path, description}]}`, best matches first
//!   (every word of the query is looked for in the path and the description).
//! - `catalog.describe({path})` → `{path, description, typescript}`: the tool's own `tools.d.ts`.
//!
//! Both are ordinary tools: they go through the pipeline, are parallel-safe, and see only the
//! visible set they were built over.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Value, json};

use super::{sdk_for, sdk_tool, visible_tools};
use crate::learned::TypeStore;
use crate::pipeline::ToolFailure;
use crate::sdk::generate_sdk;
use crate::tool::{RegistryError, ToolDefinition, ToolInfo, ToolRegistry};

/// The namespace of the discovery tools.
pub const CATALOG_NAMESPACE: &str = "catalog";
/// Matches `catalog.search` returns when the program does not say.
const DEFAULT_SEARCH_LIMIT: u64 = 10;
const MAX_SEARCH_LIMIT: u64 = 100;

/// Register `catalog.search` and `catalog.describe`, answering over `visible`, into `registry`.
///
/// # Errors
/// A `catalog` namespace or tool already exists.
pub fn register_discovery(
    registry: &mut ToolRegistry,
    visible: &ToolRegistry,
) -> Result<(), RegistryError> {
    register(registry, visible, None)
}

/// [`register_discovery`]; `catalog.describe` declares the output types learned in `types` (as
/// known when it is called, so types learned in this session show).
pub(crate) fn register(
    registry: &mut ToolRegistry,
    visible: &ToolRegistry,
    types: Option<TypeStore>,
) -> Result<(), RegistryError> {
    let tools: Arc<Vec<ToolInfo>> = Arc::new(visible_tools(visible));
    registry.register_namespaced(CATALOG_NAMESPACE, search_tool(Arc::clone(&tools)))?;
    registry.register_namespaced(CATALOG_NAMESPACE, describe_tool(tools, types))?;
    Ok(())
}

fn search_tool(tools: Arc<Vec<ToolInfo>>) -> ToolDefinition {
    ToolDefinition::builder("search")
        .description("Find tools by what they do: every word of `query` is looked for in each tool's path and description. Returns the best matches first; call catalog.describe for a tool's types.")
        .parameters(json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Words to look for, e.g. \"create issue\""},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_SEARCH_LIMIT, "description": "At most this many results (default 10)"}
            },
            "required": ["query"],
            "additionalProperties": false
        }))
        .output_schema(json!({
            "type": "object",
            "properties": {"tools": {"type": "array", "items": {
                "type": "object",
                "properties": {"path": {"type": "string"}, "description": {"type": "string"}},
                "required": ["path", "description"]
            }}},
            "required": ["tools"]
        }))
        .parallel_safe()
        .execute(move |args: Value, _exec| {
            let query = args.get("query").and_then(Value::as_str).unwrap_or_default();
            let limit = args
                .get("limit")
                .and_then(Value::as_u64)
                .unwrap_or(DEFAULT_SEARCH_LIMIT);
            let found = search(&tools, query, limit as usize);
            futures::future::ready(Ok(json!({ "tools": found })))
        })
        .build()
        .expect("the search tool's fixed schemas compile")
}

fn describe_tool(tools: Arc<Vec<ToolInfo>>, types: Option<TypeStore>) -> ToolDefinition {
    ToolDefinition::builder("describe")
        .description("The TypeScript declaration of one tool (its input and output types), by path as catalog.search returns it, e.g. \"memory.create_entities\".")
        .parameters(json!({
            "type": "object",
            "properties": {"path": {"type": "string", "description": "The tool's path: `name` or `namespace.name`"}},
            "required": ["path"],
            "additionalProperties": false
        }))
        .output_schema(json!({
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "description": {"type": "string"},
                "typescript": {"type": "string"}
            },
            "required": ["path", "description", "typescript"]
        }))
        .parallel_safe()
        .execute(move |args: Value, _exec| {
            let path = args.get("path").and_then(Value::as_str).unwrap_or_default();
            let answer = match tools.iter().find(|t| t.path == path) {
                Some(tool) => Ok(json!({
                    "path": tool.path,
                    "description": tool.description,
                    "typescript": generate_sdk(&[sdk_tool(tool.clone(), types.as_ref())]),
                })),
                None => {
                    let close: Vec<String> = search(&tools, &path.replace(['.', '_'], " "), 3)
                        .into_iter()
                        .filter_map(|hit| hit.get("path").and_then(Value::as_str).map(str::to_string))
                        .collect();
                    Err(ToolFailure::new(format!(
                        "no visible tool has the path `{path}`{}",
                        if close.is_empty() { String::new() } else { format!("; close: {}", close.join(", ")) }
                    )))
                }
            };
            futures::future::ready(answer)
        })
        .build()
        .expect("the describe tool's fixed schemas compile")
}

/// The best `limit` matches of `query` (case-insensitive words; a path hit weighs more than a
/// description hit); an empty query lists tools in path order.
fn search(tools: &[ToolInfo], query: &str, limit: usize) -> Vec<Value> {
    let words: Vec<String> = query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    let mut scored: Vec<(usize, &ToolInfo)> = tools
        .iter()
        .map(|tool| {
            let path = tool.path.to_lowercase();
            let description = tool.description.to_lowercase();
            let score = words
                .iter()
                .map(|w| {
                    3 * usize::from(path.contains(w.as_str()))
                        + usize::from(description.contains(w.as_str()))
                })
                .sum();
            (score, tool)
        })
        .filter(|(score, _)| words.is_empty() || *score > 0)
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.path.cmp(&b.1.path)));
    scored
        .into_iter()
        .take(limit.min(MAX_SEARCH_LIMIT as usize))
        .map(|(_, tool)| json!({"path": tool.path, "description": first_line(&tool.description)}))
        .collect()
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}

/// The SDK text of the `run_code` description in discovery mode: the discovery tools' own SDK,
/// then how many other tools each namespace holds.
pub fn discovery_sdk(visible: &ToolRegistry) -> String {
    let mut with_catalog = ToolRegistry::new();
    let mut sdk = match register_discovery(&mut with_catalog, visible) {
        Ok(()) => sdk_for(&with_catalog),
        Err(e) => format!("// catalog tools unavailable: {e}\n"),
    };
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for tool in visible_tools(visible) {
        let key = tool.namespace.unwrap_or_else(|| "(top level)".into());
        *counts.entry(key).or_default() += 1;
    }
    sdk.push_str("\n// More tools are callable than this SDK declares (too many to list here):\n");
    for (namespace, count) in counts {
        let shown = if namespace == "(top level)" {
            "tools.<name>".to_string()
        } else {
            format!("tools.{namespace}.<name>")
        };
        sdk.push_str(&format!("//   {shown}: {count} tools\n"));
    }
    sdk.push_str("// Find them with `await tools.catalog.search({query})` and read one's types with\n// `await tools.catalog.describe({path})` before calling it.\n");
    sdk
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, description: &str) -> ToolDefinition {
        ToolDefinition::builder(name)
            .description(description)
            .execute(|_args, _exec| futures::future::ready(Ok(Value::Null)))
            .build()
            .unwrap()
    }

    fn catalog() -> ToolRegistry {
        let mut registry = ToolRegistry::new();
        registry
            .register(tool("grep", "Search file contents"))
            .unwrap();
        registry
            .register_namespaced("issues", tool("create_issue", "Open a new issue"))
            .unwrap();
        registry
            .register_namespaced("issues", tool("list_issues", "List open issues"))
            .unwrap();
        registry
    }

    #[test]
    fn search_ranks_path_hits_first_and_respects_the_limit() {
        let tools = visible_tools(&catalog());
        let hits = search(&tools, "create issue", 10);
        assert_eq!(hits[0]["path"], "issues.create_issue");
        assert_eq!(hits.len(), 2);
        assert_eq!(search(&tools, "", 2).len(), 2);
        assert!(search(&tools, "nothing-like-this", 10).is_empty());
    }

    #[test]
    fn the_discovery_sdk_declares_the_catalog_tools_and_counts_the_rest() {
        let sdk = discovery_sdk(&catalog());
        assert!(
            sdk.contains("search(") && sdk.contains("describe("),
            "{sdk}"
        );
        assert!(!sdk.contains("create_issue("), "{sdk}");
        assert!(sdk.contains("tools.issues.<name>: 2 tools"), "{sdk}");
        assert!(sdk.contains("tools.<name>: 1 tools"), "{sdk}");
    }
}

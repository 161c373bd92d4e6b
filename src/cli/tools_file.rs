//! `--tools FILE`: tool definitions from an MCP `tools/list` result (the JSON-RPC response, its
//! `result` object, or the bare `tools` array) or OpenAI function definitions (Chat or flat
//! form), answered by a mock executor (validated arguments, schema-conforming sample values).

use std::path::Path;

use codemode::ToolDefinition;
use codemode::schema::import_tools;
use codemode::tool::ToolRegistry;

/// Read and register the tools of `path`. Errors are input errors, ready to print.
pub fn load_mock_registry(path: &Path) -> Result<ToolRegistry, String> {
    let text = std::fs::read_to_string(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => format!("{}: no such file", path.display()),
        _ => format!("{}: cannot read: {e}", path.display()),
    })?;
    let doc: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        format!(
            "{}: not valid JSON (line {}, column {}): {e}",
            path.display(),
            e.line(),
            e.column()
        )
    })?;
    let specs = import_tools(&doc).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut registry = ToolRegistry::new();
    for spec in &specs {
        let tool = ToolDefinition::mock_from_spec(spec)
            .map_err(|e| format!("{}: tool `{}`: {e}", path.display(), spec.name))?;
        registry
            .register(tool)
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(registry)
}

//! Loads the fixture corpus: MCP `tools/list` files under `fixtures/sdk/`.
//!
//! `tools.json` holds top-level tools; `upstream-<ns>.json` the tools of namespace `<ns>`.
//! The files use the three shapes `--tools` accepts (a JSON-RPC response, its `result`, the
//! bare array) so the corpus doubles as an example of each.

use std::path::{Path, PathBuf};

use codemode::sdk::SdkTool;
use serde_json::Value;

pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/all/fixtures/sdk")
}

/// Every tool of the corpus, in file order (the generator must sort them itself).
pub fn corpus() -> Vec<SdkTool> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(fixtures_dir())
        .expect("fixtures/sdk exists")
        .map(|entry| entry.expect("readable dir entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    files.sort();
    files.iter().flat_map(|path| load(path)).collect()
}

fn load(path: &Path) -> Vec<SdkTool> {
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .expect("utf-8 file name");
    let namespace = stem.strip_prefix("upstream-").map(str::to_owned);
    let text = std::fs::read_to_string(path).expect("fixture is readable");
    let json: Value =
        serde_json::from_str(&text).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
    let tools = json
        .pointer("/result/tools")
        .or_else(|| json.get("tools"))
        .unwrap_or(&json)
        .as_array()
        .unwrap_or_else(|| panic!("{}: no tools array", path.display()));
    tools
        .iter()
        .map(|tool| sdk_tool(tool, namespace.clone()))
        .collect()
}

fn sdk_tool(tool: &Value, namespace: Option<String>) -> SdkTool {
    let name = tool["name"].as_str().expect("tool name");
    SdkTool {
        namespace,
        sandbox_name: sandbox_name(name),
        original_name: name.to_owned(),
        description: tool["description"].as_str().unwrap_or_default().to_owned(),
        input_schema: tool["inputSchema"].clone(),
        output_schema: tool.get("outputSchema").cloned(),
    }
}

pub use codemode::tool::sandbox_name;

#[test]
fn sandbox_names_follow_the_design_rule() {
    assert_eq!(sandbox_name("get-user"), "get_user");
    assert_eq!(sandbox_name("API-get-self"), "API_get_self");
    assert_eq!(sandbox_name("fs.read"), "fs_read");
    assert_eq!(sandbox_name("2fa_verify"), "_2fa_verify");
    assert_eq!(sandbox_name("delete"), "delete");
}

#[test]
fn corpus_has_at_least_thirty_tools_in_several_namespaces() {
    let tools = corpus();
    assert!(tools.len() >= 30, "only {} tools", tools.len());
    let namespaces: std::collections::BTreeSet<_> =
        tools.iter().filter_map(|t| t.namespace.clone()).collect();
    assert!(namespaces.len() >= 3, "{namespaces:?}");
}

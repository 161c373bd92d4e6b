//! The tool catalog the server serves: the static tools (built-ins), the upstreams' current tool
//! lists, `run_code` over the visible set, and the pipeline they all run through. Rebuilt when an
//! upstream says its tool list changed; a run in progress keeps the catalog it started with.

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{Tool, ToolAnnotations};
use serde_json::{Map, Value};

use super::approve::ElicitationApprover;
use super::live::{LiveRequests, ProgressObserver};
use super::upstream::{Upstream, UpstreamError};
use crate::codemode::{CodeMode, RUN_CODE};
use crate::pipeline::{Pipeline, PipelineBuilder};
use crate::sandbox::{Limits, Sandbox};
use crate::schema::ToolSpec;
use crate::tool::ToolRegistry;

/// Makes the pipeline builder for a registry: hooks, guards, policy, logs. The server adds its
/// approver (elicitation) and its progress observer, then builds.
pub type PipelineFactory = Arc<dyn Fn(ToolRegistry) -> PipelineBuilder + Send + Sync>;

/// Whether a sandbox path is visible (the policy's filter).
pub type VisibleFilter = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// An upstream and the tool list it last gave.
pub struct UpstreamSource {
    pub upstream: Upstream,
    pub specs: Vec<ToolSpec>,
}

/// What the server is made of.
pub struct CatalogParts {
    /// Tools that never change (the built-ins, mock tools).
    pub base: ToolRegistry,
    pub upstreams: Vec<UpstreamSource>,
    pub factory: PipelineFactory,
    pub visible: VisibleFilter,
    pub sandbox: Sandbox,
    pub limits: Limits,
    /// Also list the visible tools themselves beside `run_code` (hybrid mode).
    pub expose_direct: bool,
}

/// One built catalog.
pub(crate) struct Catalog {
    pub pipeline: Pipeline,
    /// What `tools/list` answers.
    pub tools: Vec<Tool>,
}

/// Build the registry of `parts`: base, then every upstream under its namespace, filtered to the
/// visible set. Errors name the clash.
pub fn visible_registry(parts: &CatalogParts) -> Result<ToolRegistry, UpstreamError> {
    let mut registry = parts.base.clone();
    for source in &parts.upstreams {
        source.upstream.register(&source.specs, &mut registry)?;
    }
    let visible = &parts.visible;
    Ok(registry.filtered(|tool| visible(&tool.path)))
}

pub(crate) fn build(
    parts: &CatalogParts,
    live: &Arc<LiveRequests>,
) -> Result<Catalog, UpstreamError> {
    let visible = visible_registry(parts)?;
    let code_mode = CodeMode::new(parts.sandbox.clone(), parts.limits.clone());
    let mut registry = visible.clone();
    let run_code = code_mode.tool(&visible).map_err(|e| UpstreamError {
        namespace: RUN_CODE.into(),
        message: e.to_string(),
    })?;
    registry.register(run_code).map_err(|e| UpstreamError {
        namespace: RUN_CODE.into(),
        message: e.to_string(),
    })?;
    let pipeline = (parts.factory)(registry)
        .approver(ElicitationApprover(Arc::clone(live)))
        .observer(ProgressObserver(Arc::clone(live)))
        .build();
    code_mode.attach(pipeline.clone());

    let mut tools = vec![run_code_tool(&code_mode, &visible)];
    if parts.expose_direct {
        tools.extend(visible.tools().into_iter().map(|info| {
            // Concurrency-safe tools are the reads and searches (and upstream `readOnlyHint` tools).
            let read_only = visible
                .get(&info.path)
                .is_some_and(|t| t.tool.has_classifier());
            let mut tool = Tool::default();
            tool.name = info.path.into();
            tool.description = Some(info.description.into());
            tool.input_schema = Arc::new(as_object(info.parameters));
            tool.output_schema = info.output_schema.map(|s| Arc::new(as_object(s)));
            if read_only {
                tool.annotations = Some(ToolAnnotations::new().read_only(true));
            }
            tool
        }));
    }
    Ok(Catalog { pipeline, tools })
}

fn run_code_tool(code_mode: &CodeMode, visible: &ToolRegistry) -> Tool {
    let mut tool = Tool::default();
    tool.name = RUN_CODE.into();
    tool.title = Some("Run a TypeScript program against the tools".into());
    tool.description = Some(code_mode.description(visible).into());
    tool.input_schema = Arc::new(as_object(serde_json::json!({
        "type": "object",
        "properties": {"code": {"type": "string", "description": "TypeScript or JavaScript: the body of an async function"}},
        "required": ["code"],
        "additionalProperties": false
    })));
    tool
}

fn as_object(schema: Value) -> Map<String, Value> {
    match schema {
        Value::Object(map) => map,
        // MCP requires an object schema; a boolean `true` schema accepts anything.
        _ => Map::new(),
    }
}

/// Re-list one upstream's tools after it said they changed.
pub(crate) async fn refresh_upstream(
    parts: &mut CatalogParts,
    namespace: &str,
    timeout: Duration,
) -> Result<(), UpstreamError> {
    if let Some(source) = parts
        .upstreams
        .iter_mut()
        .find(|s| s.upstream.namespace() == namespace)
    {
        source.specs = source.upstream.list_tools(timeout).await?;
    }
    Ok(())
}

//! The tool catalog the server serves: the static tools (built-ins), the upstreams' current tool
//! lists, and the [`Harness`] over the visible set. Rebuilt when an upstream says its tool list
//! changed; a run in progress keeps the catalog it started with.
//!
//! The harness's outer pipeline holds only `run_code` (its call is the durable one); the inner
//! one holds the visible tools with the policy, the guards and the elicitation approver, and
//! serves both the nested calls of runs and, with `--expose-direct`, direct calls. So the policy
//! judges tool calls, never the act of running a program.

use std::fmt;
use std::sync::Arc;

use rmcp::model::{Tool, ToolAnnotations};
use serde_json::{Map, Value};

use super::upstream::{Upstream, UpstreamError};
use crate::harness::{Harness, HarnessBuilder, HarnessError, RUN_CODE};
use crate::schema::ToolSpec;
use crate::tool::{ToolDefinition, ToolRegistry};

/// Whether a sandbox path is visible (the policy's filter).
pub type VisibleFilter = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// An upstream and the tool list it last gave.
#[derive(Debug)]
pub struct UpstreamSource {
    /// The connection.
    pub upstream: Upstream,
    /// Its tools, as it last listed them.
    pub specs: Vec<ToolSpec>,
}

/// What the server is made of.
pub struct CatalogParts {
    /// Tools that never change (the built-ins, mock tools).
    pub base: ToolRegistry,
    /// The upstream servers that started.
    pub upstreams: Vec<UpstreamSource>,
    /// How the harness over the visible tools is built (limits, discovery, the inner
    /// pipeline's policy and logs). The server adds its approver and progress observer.
    pub harness: HarnessBuilder,
    /// Which tools programs see.
    pub visible: VisibleFilter,
    /// Also list the visible tools themselves beside `run_code` (hybrid mode).
    pub expose_direct: bool,
}

impl fmt::Debug for CatalogParts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CatalogParts")
            .field("base", &self.base.len())
            .field("upstreams", &self.upstreams)
            .field("harness", &self.harness)
            .field("expose_direct", &self.expose_direct)
            .finish_non_exhaustive()
    }
}

/// Why a catalog could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CatalogError {
    /// Two sources clash, or an upstream failed to list its tools.
    #[error(transparent)]
    Upstream(#[from] UpstreamError),
    /// The harness over the visible tools could not be built.
    #[error(transparent)]
    Harness(#[from] HarnessError),
}

/// One built catalog.
pub(crate) struct Catalog {
    pub(crate) harness: Harness,
    /// What `tools/list` answers.
    pub(crate) tools: Vec<Tool>,
}

/// Builds the registry of `parts`: base, then every upstream under its namespace, filtered to
/// the visible set. Errors name the clash.
pub(crate) fn visible_registry(parts: &CatalogParts) -> Result<ToolRegistry, UpstreamError> {
    let mut registry = parts.base.clone();
    for source in &parts.upstreams {
        source.upstream.register(&source.specs, &mut registry)?;
    }
    let visible = &parts.visible;
    Ok(registry.filtered(|tool| visible(&tool.path)))
}

pub(crate) fn build(parts: &CatalogParts) -> Result<Catalog, CatalogError> {
    let harness = parts.harness.build(visible_registry(parts)?)?;
    // The listing shows exactly the definition the outer pipeline serves.
    let mut tools = vec![run_code_tool(harness.run_code())];
    if parts.expose_direct {
        let visible = harness.visible();
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
    Ok(Catalog { harness, tools })
}

fn run_code_tool(run_code: &ToolDefinition) -> Tool {
    let mut tool = Tool::default();
    tool.name = RUN_CODE.into();
    tool.title = Some("Run a TypeScript program against the tools".into());
    tool.description = Some(run_code.description().to_string().into());
    tool.input_schema = Arc::new(as_object(run_code.parameters().clone()));
    // The structured content is the outcome capped to the output budget (`capped_outcome`).
    tool.output_schema = Some(Arc::new(as_object(crate::sandbox::outcome_schema())));
    tool
}

fn as_object(schema: Value) -> Map<String, Value> {
    match schema {
        Value::Object(map) => map,
        // MCP requires an object schema; a boolean `true` schema accepts anything.
        _ => Map::new(),
    }
}

/// Re-lists one upstream's tools after it said they changed.
pub(crate) async fn refresh_upstream(
    parts: &mut CatalogParts,
    namespace: &str,
) -> Result<(), UpstreamError> {
    if let Some(source) = parts
        .upstreams
        .iter_mut()
        .find(|s| s.upstream.namespace() == namespace)
    {
        source.specs = source.upstream.list_tools().await?;
    }
    Ok(())
}

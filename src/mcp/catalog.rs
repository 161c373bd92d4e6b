//! The tool catalog the server serves: the static tools (built-ins), the upstreams' current tool
//! lists, `run_code` over the visible set, and the pipelines they run through. Rebuilt when an
//! upstream says its tool list changed; a run in progress keeps the catalog it started with.
//!
//! Two pipelines, as in `codemode run`: the *outer* one holds only `run_code` (its call is the
//! durable one); the *inner* one holds the visible tools with the policy, the guards and the
//! elicitation approver, and serves both the nested calls of runs and, with `--expose-direct`,
//! direct calls. So the policy judges tool calls, never the act of running a program.

use std::sync::Arc;

use rmcp::model::{Tool, ToolAnnotations};
use serde_json::{Map, Value};

use super::approve::ElicitationApprover;
use super::live::{LiveRequests, ProgressObserver};
use super::upstream::{Upstream, UpstreamError};
use crate::codemode::discovery::{CATALOG_NAMESPACE, discovery_sdk, register_discovery};
use crate::codemode::{CodeMode, RUN_CODE, sdk_for};
use crate::pipeline::{Approver, Pipeline, PipelineBuilder};
use crate::sandbox::{Limits, Sandbox};
use crate::schema::ToolSpec;
use crate::tool::{ToolDefinition, ToolRegistry};

/// Makes the inner pipeline's builder for a registry, with the given approver: policy, guards,
/// audit log, call limits. The server adds its progress observer, then builds.
pub type PipelineFactory =
    Arc<dyn Fn(ToolRegistry, Arc<dyn Approver>) -> PipelineBuilder + Send + Sync>;

/// Makes the outer pipeline's builder (the `run_code` call; the session log goes here).
pub type OuterFactory = Arc<dyn Fn(ToolRegistry) -> PipelineBuilder + Send + Sync>;

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
    pub outer: OuterFactory,
    pub visible: VisibleFilter,
    pub sandbox: Sandbox,
    pub limits: Limits,
    /// Also list the visible tools themselves beside `run_code` (hybrid mode).
    pub expose_direct: bool,
    pub discovery: Discovery,
}

/// Whether the `run_code` description embeds the whole SDK or only the discovery tools
/// (`catalog.search`, `catalog.describe`; see [`crate::codemode::discovery`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Discovery {
    /// Discovery when the whole SDK would be larger than [`AUTO_DISCOVERY_BYTES`].
    #[default]
    Auto,
    On,
    Off,
}

/// The SDK size above which `Discovery::Auto` switches to discovery.
pub const AUTO_DISCOVERY_BYTES: usize = 64 * 1024;

/// One built catalog.
pub(crate) struct Catalog {
    /// Holds `run_code`.
    pub outer: Pipeline,
    /// Holds the visible tools.
    pub inner: Pipeline,
    /// Runs the programs (to stop one by id when its request is cancelled).
    pub code_mode: CodeMode,
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
    let full_sdk = sdk_for(&visible);
    let discovery = match parts.discovery {
        Discovery::On => true,
        Discovery::Off => false,
        Discovery::Auto => full_sdk.len() > AUTO_DISCOVERY_BYTES,
    };
    // What programs can call: the visible tools, plus `catalog.*` in discovery mode.
    let mut callable = visible.clone();
    let description = if discovery {
        register_discovery(&mut callable, &visible).map_err(|e| UpstreamError {
            namespace: CATALOG_NAMESPACE.into(),
            message: format!(
                "progressive discovery needs the namespace `{CATALOG_NAMESPACE}`: {e}"
            ),
        })?;
        code_mode.description_with_sdk(&discovery_sdk(&visible))
    } else {
        code_mode.description_with_sdk(&full_sdk)
    };
    let approver: Arc<dyn Approver> = Arc::new(ElicitationApprover(Arc::clone(live)));
    let inner = (parts.factory)(callable.clone(), approver)
        .observer(ProgressObserver(Arc::clone(live)))
        .build();
    code_mode.attach(inner.clone());
    let run_code_error = |message: String| UpstreamError {
        namespace: RUN_CODE.into(),
        message,
    };
    let run_code = code_mode
        .tool_with_description(description)
        .map_err(|e| run_code_error(e.to_string()))?;
    // The listing shows exactly the definition the outer pipeline serves.
    let listed = run_code_tool(&run_code);
    let mut outer_registry = ToolRegistry::new();
    outer_registry
        .register(run_code)
        .map_err(|e| run_code_error(e.to_string()))?;
    let outer = (parts.outer)(outer_registry).build();

    let mut tools = vec![listed];
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
    Ok(Catalog {
        outer,
        inner,
        code_mode,
        tools,
    })
}

fn run_code_tool(run_code: &ToolDefinition) -> Tool {
    let mut tool = Tool::default();
    tool.name = RUN_CODE.into();
    tool.title = Some("Run a TypeScript program against the tools".into());
    tool.description = Some(run_code.description().to_string().into());
    tool.input_schema = Arc::new(as_object(run_code.parameters().clone()));
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

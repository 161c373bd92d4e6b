//! The Code Mode assembly (DESIGN.md §5): one builder puts the sandbox and the pipelines
//! together, in one order, with nothing to attach afterwards.
//!
//! ```text
//! visible registry ──► inner pipeline (policy, guards, approver, audit: every nested call)
//!                          ▲
//!                 CodeMode (sandbox runs; each tools.x(args) ─► inner pipeline)
//!                          ▲
//!                 run_code tool (SDK of the visible tools in its description)
//!                          ▲
//!                 outer pipeline (holds only run_code; its call is the durable one)
//! ```
//!
//! The policy judges tool calls, never the act of running a program: the *inner* pipeline holds
//! the visible tools and serves the nested calls of runs (and direct calls, for a hybrid
//! server); the *outer* one holds only `run_code`, so a session log records one `tool/result`
//! per run, never the nested calls.
//!
//! ```no_run
//! # async fn demo(registry: codemode::ToolRegistry) -> Result<(), Box<dyn std::error::Error>> {
//! use codemode::Harness;
//!
//! let harness = Harness::builder()
//!     .inner(|pipeline| pipeline) // add the policy, guards, approver, observers here
//!     .build(registry)?;
//! let outcome = harness.run("return 1 + 1").await?;
//! assert_eq!(outcome.value_json(), Some(serde_json::json!(2)));
//! # Ok(()) }
//! ```

mod admission;
mod code_mode;
mod discovery;
mod pipeline_host;
mod run_code;

use std::fmt;
use std::sync::{Arc, Mutex};

use serde::Deserialize;
use serde_json::json;

pub use code_mode::CodeMode;
pub use run_code::RUN_CODE;

use crate::call::{CallError, CallLimits, Extensions, Limits, RunId};
use crate::learned::TypeStore;
use crate::pipeline::{CallOutcome, CallRequest, Pipeline, PipelineBuilder, ProgramApproval};
use crate::sandbox::{RunOutcome, Sandbox, SandboxConfig, SandboxStartError};
use crate::sdk::{SdkTool, generate_sdk};
use crate::tool::{RegistryError, ToolBuildError, ToolDefinition, ToolInfo, ToolRegistry};
pub use discovery::{CATALOG_NAMESPACE, discovery_sdk, register_discovery};

/// Whether the `run_code` description embeds the whole SDK or only the discovery tools
/// (`catalog.search`, `catalog.describe`; see [`register_discovery`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Discovery {
    /// Discovery when the whole SDK would be larger than [`AUTO_DISCOVERY_BYTES`].
    #[default]
    Auto,
    /// Always discovery.
    On,
    /// Never discovery: the whole SDK.
    Off,
}

/// The SDK size above which [`Discovery::Auto`] switches to discovery.
pub const AUTO_DISCOVERY_BYTES: usize = 64 * 1024;

/// Adds to a pipeline's builder what the embedder wants in it (hooks, guards, approver,
/// observers, logs).
type Customize = Arc<dyn Fn(PipelineBuilder) -> PipelineBuilder + Send + Sync>;

/// Why a [`Harness`] could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HarnessError {
    /// The sandbox's worker threads did not start.
    #[error("the sandbox did not start: {0}")]
    Sandbox(#[from] SandboxStartError),
    /// Discovery needs the `catalog` namespace, and a visible tool already uses it.
    #[error("progressive discovery needs the namespace `{CATALOG_NAMESPACE}`: {0}")]
    Discovery(RegistryError),
    /// A visible tool is named `run_code`, or the `run_code` tool could not be built.
    #[error("cannot build the `{RUN_CODE}` tool: {0}")]
    RunCode(String),
}

/// Why [`Harness::run`] has no outcome to give.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunCallError {
    /// The `run_code` call itself failed (cancelled, or refused by an outer hook). A program
    /// that fails still has an outcome; this is the call around it.
    #[error("the run_code call failed: {0}")]
    Call(CallError),
    /// An outer post-execute hook replaced the outcome with something that is not one.
    #[error("the run_code value is not a run outcome: {0}")]
    NotAnOutcome(serde_json::Error),
}

/// Configures and builds a [`Harness`]. Cheap to clone; clones share one sandbox, started at
/// the first build, so a server that rebuilds its harness (an upstream's tool list changed)
/// keeps its warm isolates.
#[derive(Clone)]
pub struct HarnessBuilder {
    config: SandboxConfig,
    sandbox: Arc<Mutex<Option<Sandbox>>>,
    discovery: Discovery,
    program_approval: ProgramApproval,
    types: Option<TypeStore>,
    inner: Vec<Customize>,
    outer: Vec<Customize>,
}

impl fmt::Debug for HarnessBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HarnessBuilder")
            .field("config", &self.config)
            .field("discovery", &self.discovery)
            .field("program_approval", &self.program_approval)
            .field("types", &self.types)
            .finish_non_exhaustive()
    }
}

impl Default for HarnessBuilder {
    fn default() -> Self {
        HarnessBuilder {
            config: SandboxConfig::default(),
            sandbox: Arc::default(),
            discovery: Discovery::Off,
            program_approval: ProgramApproval::Off,
            types: None,
            inner: Vec::new(),
            outer: Vec::new(),
        }
    }
}

impl HarnessBuilder {
    /// The limits of every run, and of each nested call (`limits.call`, enforced by the inner
    /// pipeline). Default: [`Limits::default`].
    pub fn limits(mut self, limits: Limits) -> Self {
        self.config.limits = limits;
        self
    }

    /// Sandbox workers (threads or processes), i.e. programs running at once (default: the
    /// cores, at least 2).
    pub fn workers(mut self, workers: usize) -> Self {
        self.config.workers = workers;
        self
    }

    /// Where programs run: engine threads of this process (default) or worker processes.
    pub fn isolation(mut self, isolation: crate::sandbox::Isolation) -> Self {
        self.config.isolation = isolation;
        self
    }

    /// The whole sandbox configuration (its `limits` are the runs' limits).
    pub fn sandbox_config(mut self, config: SandboxConfig) -> Self {
        self.config = config;
        self
    }

    /// Runs programs in `sandbox` (e.g. one shared by several harnesses) instead of starting
    /// one at the first build. Its worker count and default limits no longer matter: runs get
    /// [`HarnessBuilder::limits`].
    pub fn sandbox(mut self, sandbox: Sandbox) -> Self {
        self.sandbox = Arc::new(Mutex::new(Some(sandbox)));
        self
    }

    /// Whether the `run_code` description carries the whole SDK or the discovery tools
    /// (default [`Discovery::Off`]; `codemode mcp` uses [`Discovery::Auto`]).
    pub fn discovery(mut self, discovery: Discovery) -> Self {
        self.discovery = discovery;
        self
    }

    /// Whether a program whose static plan names calls that would ask is put to the inner
    /// pipeline's approver once, before it runs, with its source and plan (default
    /// [`ProgramApproval::Off`]: every `ask` when its call is made). An approval answers the
    /// `ask`s of the planned tool paths; calls outside the plan still ask, and `deny` stays.
    pub fn program_approval(mut self, program_approval: ProgramApproval) -> Self {
        self.program_approval = program_approval;
        self
    }

    /// Learns output types from results: every successful nested call of a tool without an
    /// output schema is folded into `store` (by a post hook after the customizations'), and the
    /// SDK in the `run_code` description (and `catalog.describe`) declares what `store` knows.
    /// After each run, what it learned is saved to the store's file. Default: none.
    pub fn learn_types(mut self, store: TypeStore) -> Self {
        self.types = Some(store);
        self
    }

    /// What the inner pipeline gets beside the tools: the policy hook, guards, the approver,
    /// observers (audit, progress). Every nested call of a program goes through it. Calls
    /// compose: each one adds to what the earlier ones added (a server adds its approver and
    /// progress observer to the policy the CLI added).
    pub fn inner(
        mut self,
        customize: impl Fn(PipelineBuilder) -> PipelineBuilder + Send + Sync + 'static,
    ) -> Self {
        self.inner.push(Arc::new(customize));
        self
    }

    /// What the outer pipeline (the one holding `run_code`) gets, e.g. a session log. Calls
    /// compose, as for [`HarnessBuilder::inner`].
    pub fn outer(
        mut self,
        customize: impl Fn(PipelineBuilder) -> PipelineBuilder + Send + Sync + 'static,
    ) -> Self {
        self.outer.push(Arc::new(customize));
        self
    }

    /// Builds the assembly over `visible`, the tools programs may call: inner pipeline →
    /// Code Mode → `run_code` → outer pipeline.
    ///
    /// # Errors
    /// The sandbox did not start, a visible tool is named `run_code`, or discovery is on and
    /// a visible tool uses the `catalog` namespace.
    pub fn build(&self, visible: ToolRegistry) -> Result<Harness, HarnessError> {
        if visible.get(RUN_CODE).is_some() {
            return Err(HarnessError::RunCode(format!(
                "a visible tool is already named `{RUN_CODE}`; rename it in its source"
            )));
        }
        let limits = self.config.limits.clone();
        let types = self.types.as_ref();
        let full_sdk = sdk_with_types(&visible, types);
        let discovery = match self.discovery {
            Discovery::On => true,
            Discovery::Off => false,
            Discovery::Auto => full_sdk.len() > AUTO_DISCOVERY_BYTES,
        };
        // What programs can call: the visible tools, plus `catalog.*` in discovery mode.
        let mut callable = visible.clone();
        let sdk = if discovery {
            discovery::register(&mut callable, &visible, types.cloned())
                .map_err(HarnessError::Discovery)?;
            discovery_sdk(&visible)
        } else {
            full_sdk
        };

        let mut inner = customize(&self.inner, Pipeline::builder(callable).limits(limits.call));
        if let Some(types) = types {
            inner = inner.post_hook(types.hook());
        }
        let inner = inner.build();
        let code_mode = CodeMode::with_program_approval(
            self.started_sandbox()?,
            limits.clone(),
            inner.clone(),
            self.program_approval,
        );
        let description = run_code::description(&sdk, &limits);
        let run_code = run_code::run_code_tool(&code_mode, description, types.cloned())
            .map_err(|e: ToolBuildError| HarnessError::RunCode(e.to_string()))?;

        let mut registry = ToolRegistry::new();
        registry
            .register(run_code.clone())
            .map_err(|e| HarnessError::RunCode(e.to_string()))?;
        // The run has its own deadline (time awaiting approvals does not count against it) and
        // its own limits: the outer pipeline must not cut it short or cap its outcome.
        let outer = Pipeline::builder(registry)
            .limits(CallLimits::UNLIMITED)
            .no_default_timeout();
        let outer = customize(&self.outer, outer).build();
        Ok(Harness {
            outer,
            inner,
            code_mode,
            run_code,
            visible,
            discovery,
        })
    }

    /// The shared sandbox, started on first use.
    fn started_sandbox(&self) -> Result<Sandbox, SandboxStartError> {
        let mut slot = self.sandbox.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(sandbox) = slot.as_ref() {
            return Ok(sandbox.clone());
        }
        let sandbox = Sandbox::new(self.config.clone())?;
        *slot = Some(sandbox.clone());
        Ok(sandbox)
    }
}

fn customize(steps: &[Customize], builder: PipelineBuilder) -> PipelineBuilder {
    steps.iter().fold(builder, |builder, step| step(builder))
}

/// Code Mode, assembled: `run_code` in the outer pipeline over Code Mode over the inner
/// pipeline of the visible tools. Cheap to clone.
#[derive(Clone)]
pub struct Harness {
    outer: Pipeline,
    inner: Pipeline,
    code_mode: CodeMode,
    run_code: ToolDefinition,
    visible: ToolRegistry,
    discovery: bool,
}

impl fmt::Debug for Harness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Harness")
            .field("visible", &self.visible.len())
            .field("discovery", &self.discovery)
            .finish_non_exhaustive()
    }
}

impl Harness {
    /// A builder with the defaults: [`Limits::default`], [`SandboxConfig::default`], the whole
    /// SDK in the description.
    pub fn builder() -> HarnessBuilder {
        HarnessBuilder::default()
    }

    /// The pipeline holding `run_code` (call it to run a program as one durable call).
    pub fn outer(&self) -> &Pipeline {
        &self.outer
    }

    /// The pipeline of the visible tools: nested calls, and direct calls of a hybrid server.
    pub fn inner(&self) -> &Pipeline {
        &self.inner
    }

    /// The runs (to stop one by id, or all on shutdown).
    pub fn code_mode(&self) -> &CodeMode {
        &self.code_mode
    }

    /// The `run_code` definition the outer pipeline serves (its description carries the SDK).
    pub fn run_code(&self) -> &ToolDefinition {
        &self.run_code
    }

    /// The tools programs see (without the discovery tools).
    pub fn visible(&self) -> &ToolRegistry {
        &self.visible
    }

    /// Whether the `run_code` description shows the discovery tools instead of the whole SDK.
    pub fn uses_discovery(&self) -> bool {
        self.discovery
    }

    /// The `run_code` call for `code`, ready for [`Harness::call`] (add a cancel token,
    /// extensions, a caller). It has a scheduler scope of its own: `run_code` is exclusive, and
    /// runs of one harness must not wait on each other. It carries a fresh
    /// [`RunId`](crate::call::RunId) (put your own over it to choose the id): the run uses it,
    /// and the durable `tool/result` records it as `run_id`.
    pub fn request(&self, code: &str) -> CallRequest {
        CallRequest::new(RUN_CODE, json!({ "code": code }))
            .scope(self.outer.root_scope().sibling())
            .extension(RunId::fresh())
    }

    /// Calls `run_code` through the outer pipeline, with its events and logs.
    pub async fn call(&self, request: CallRequest) -> CallOutcome {
        self.outer.call(request).await
    }

    /// Runs `code` as one `run_code` call and returns its outcome.
    ///
    /// # Errors
    /// The `run_code` call itself failed (see [`RunCallError`]). A program that fails, times
    /// out or is cancelled still returns its outcome, with that status.
    pub async fn run(&self, code: &str) -> Result<RunOutcome, RunCallError> {
        self.run_with(code, &Extensions::new()).await
    }

    /// [`Harness::run`], with `extensions` on the `run_code` call and every nested call.
    ///
    /// # Errors
    /// As [`Harness::run`].
    pub async fn run_with(
        &self,
        code: &str,
        extensions: &Extensions,
    ) -> Result<RunOutcome, RunCallError> {
        let outcome = self.call(self.request(code).extensions(extensions)).await;
        run_outcome(outcome)
    }
}

/// The run's outcome out of a `run_code` call's: the typed one when the value is still the
/// body's own, else read from the JSON (an outer post hook replaced it).
///
/// # Errors
/// The call failed, or its value is not a run outcome.
pub fn run_outcome(mut outcome: CallOutcome) -> Result<RunOutcome, RunCallError> {
    let record_error = outcome.durable_error.take();
    let mut run = if let Some(typed) = outcome
        .typed
        .take()
        .and_then(|t| t.downcast_arc::<RunOutcome>())
    {
        Arc::try_unwrap(typed).unwrap_or_else(|shared| (*shared).clone())
    } else {
        match outcome.result() {
            Ok(value) => RunOutcome::deserialize(value).map_err(RunCallError::NotAnOutcome)?,
            Err(error) => return Err(RunCallError::Call(error.clone())),
        }
    };
    // The record was written after the outcome was made: a failure can only be added now.
    run.record_error = record_error;
    Ok(run)
}

/// The tools a program sees: the registry without `run_code` (it never sees itself).
pub fn visible_tools(registry: &ToolRegistry) -> Vec<ToolInfo> {
    registry
        .tools()
        .into_iter()
        .filter(|t| t.path != RUN_CODE)
        .collect()
}

/// The TypeScript SDK (`tools.d.ts`) of the visible tools.
pub fn sdk_for(registry: &ToolRegistry) -> String {
    sdk_with_types(registry, None)
}

/// [`sdk_for`], with the output types `types` learned for tools that declare none.
pub fn sdk_with_types(registry: &ToolRegistry, types: Option<&TypeStore>) -> String {
    let tools: Vec<SdkTool> = visible_tools(registry)
        .into_iter()
        .map(|t| sdk_tool(t, types))
        .collect();
    generate_sdk(&tools)
}

/// A visible tool as the SDK generator sees it: its declared output schema, else the one
/// learned in `types`.
pub(crate) fn sdk_tool(t: ToolInfo, types: Option<&TypeStore>) -> SdkTool {
    let output_schema = match types {
        Some(types) => types.output_schema_of(&t),
        None => t.output_schema,
    };
    SdkTool {
        namespace: t.namespace,
        sandbox_name: t.sandbox_name,
        original_name: t.name,
        description: t.description,
        input_schema: t.parameters,
        output_schema,
    }
}

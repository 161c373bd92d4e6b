//! The execution pipeline (DESIGN.md section 3).
//!
//! # Ordering
//! ```text
//! arguments snapshot -> validate args -> pre-execute hooks (+ Approver on ask) -> guards
//!   -> execute wrappers [metrics -> retry -> timeout (per attempt)] -> tool body
//!   -> output validation -> render -> post-execute hooks -> finalize_content
//!   -> live `tools/result` observation -> durable `tool/result` session event
//! ```
//! Lookup, snapshot, the argument limit, validation, classification and the scheduler place all
//! happen synchronously inside [`Pipeline::call`]; the returned future does the rest.
//!
//! # Example
//! ```
//! use codemode::pipeline::{pre_hook_fn, CallRequest, HookDecision};
//! use codemode::schema::{object, string};
//! use codemode::{Caller, Pipeline, ToolDefinition, ToolFailure, ToolRegistry};
//! use serde_json::json;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let grep = ToolDefinition::builder("grep")
//!     .description("search files")
//!     .parameters(object().property("pattern", string()))
//!     .parallel_safe()
//!     .execute(|args, _exec| async move { Ok::<_, ToolFailure>(json!({ "hits": [args["pattern"]] })) })
//!     .build()
//!     .unwrap();
//! let mut registry = ToolRegistry::new();
//! registry.register(grep).unwrap();
//! let pipeline = Pipeline::builder(registry)
//!     .pre_hook(pre_hook_fn("audit", |_| HookDecision::Allow))
//!     .build();
//!
//! // A code-mode run: its own scope, nested provenance, never durable.
//! let scope = pipeline.root_scope().sibling();
//! let request = CallRequest::new("grep", json!({ "pattern": "TODO" }))
//!     .caller(Caller::code_mode("r_1", 1))
//!     .scope(scope);
//! let outcome = pipeline.call(request).await;
//! assert_eq!(outcome.result().unwrap(), &json!({ "hits": ["TODO"] }));
//!
//! let bad = pipeline.call(CallRequest::new("grpe", json!({}))).await;
//! assert_eq!(bad.error.unwrap().code().as_str(), "UNKNOWN_TOOL");
//! # });
//! ```

mod approval;
mod audit_log;
mod call;
mod call_span;
mod events;
mod from_fn;
mod gates;
mod guards;
mod hooks;
mod post;
mod program;
mod scheduler;
mod session_log;
mod stages;
mod wrappers;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

pub use crate::call::{
    CANCEL_GRACE, CallError, CallLimits, CallStatus, Caller, ContextEntry, DeniedBy, ErrorCode,
    ErrorKind, HookError, LimitKind, ToolFailure,
};
pub use approval::{
    ApprovalDecision, ApprovalObserver, ApprovalRequest, Approver, PlannedAsk,
    ProgramApprovalRequest, approver_fn,
};
pub use audit_log::{AuditLog, args_digest};
pub use call::{CallOutcome, CallRequest, Timing};
pub use events::{
    Authorization, AuthorizationDecision, CallEvent, ChannelSink, Event, EventSink, PlanEvent,
    ProgressEvent, ResultEvent, StartedEvent,
};
pub use from_fn::{
    ApprovalSnapshot, CallSnapshot, PostSnapshot, approver_from_fn, guard_from_fn,
    post_hook_from_fn, pre_hook_from_fn,
};
pub use guards::{Guard, GuardDecision, guard_fn, policy_fn};
pub use hooks::{
    CallInfo, HookDecision, PostAction, PostExecuteHook, PostInfo, PreExecuteHook, post_hook_fn,
    pre_hook_fn,
};
pub use program::{Preview, ProgramApproval, ProgramVerdict};
pub use scheduler::{DEFAULT_POOL_SIZE, Scope, Ticket};
pub use session_log::{Replay, ReplayEntry, SessionLog, SessionLogOptions, replay};
pub use wrappers::{
    Around, DEFAULT_TIMEOUT, Dispatch, Metrics, MetricsWrapper, Next, RetryPolicy, RetryWrapper,
    TimeoutWrapper, ToolStats, around_fn,
};

use crate::tool::ToolRegistry;
use events::Sinks;

/// Default time an Approver has to answer.
pub const DEFAULT_APPROVAL_TIMEOUT: Duration = Duration::from_secs(300);

pub(crate) struct Inner {
    pub(crate) registry: Arc<ToolRegistry>,
    pub(crate) pre_hooks: Vec<Arc<dyn PreExecuteHook>>,
    pub(crate) guards: Vec<Arc<dyn Guard>>,
    pub(crate) wrappers: Arc<[Arc<dyn Around>]>,
    pub(crate) post_hooks: Vec<Arc<dyn PostExecuteHook>>,
    pub(crate) approver: Option<Arc<dyn Approver>>,
    pub(crate) approval_timeout: Duration,
    pub(crate) sinks: Arc<Sinks>,
    pub(crate) limits: CallLimits,
    pub(crate) root: Arc<Scope>,
    pub(crate) metrics: Arc<Metrics>,
}

/// The tool pipeline. Cheap to clone; share it across threads.
#[derive(Clone)]
pub struct Pipeline {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Pipeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pipeline")
            .field("tools", &self.inner.registry.len())
            .field("limits", &self.inner.limits)
            .finish_non_exhaustive()
    }
}

impl Pipeline {
    /// A builder over `registry` with the defaults (metrics, retry and timeout wrappers).
    pub fn builder(registry: ToolRegistry) -> PipelineBuilder {
        PipelineBuilder::new(registry)
    }

    /// Issues a call. Its scheduler place is taken now (issue order); the returned future is
    /// `Send + 'static`, so it can be spawned on any runtime thread.
    ///
    /// # Errors
    /// None at this level: every failure is a [`CallOutcome`] with an error and a stable code.
    ///
    /// # Cancellation
    /// Cancel the request's token to end the call as `CANCELLED` with its events; dropping the
    /// future frees the scheduler place but emits no result events.
    pub fn call(&self, request: CallRequest) -> impl Future<Output = CallOutcome> + Send + 'static {
        stages::call(self.inner.clone(), request)
    }

    /// The tools this pipeline serves.
    pub fn registry(&self) -> &ToolRegistry {
        &self.inner.registry
    }

    /// The session's scope; `root_scope().sibling()` makes a scope for a code-mode run.
    pub fn root_scope(&self) -> &Arc<Scope> {
        &self.inner.root
    }

    /// Per-tool statistics of the default metrics wrapper.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.inner.metrics
    }

    /// Hands a run's plan to the live observers (the audit log writes it) as `run/plan`.
    pub fn emit_plan(&self, plan: PlanEvent) {
        self.inner.sinks.live(&Event::Plan(plan));
    }
}

/// Configures a [`Pipeline`].
pub struct PipelineBuilder {
    registry: ToolRegistry,
    pre_hooks: Vec<Arc<dyn PreExecuteHook>>,
    guards: Vec<Arc<dyn Guard>>,
    default_wrappers: bool,
    wrappers: Vec<Arc<dyn Around>>,
    retry: RetryPolicy,
    default_timeout: Option<Duration>,
    post_hooks: Vec<Arc<dyn PostExecuteHook>>,
    approver: Option<Arc<dyn Approver>>,
    approval_timeout: Duration,
    sinks: Sinks,
    limits: CallLimits,
    pool_size: usize,
    metrics: Arc<Metrics>,
}

impl std::fmt::Debug for PipelineBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PipelineBuilder")
            .field("tools", &self.registry.len())
            .field("pre_hooks", &self.pre_hooks.len())
            .field("guards", &self.guards.len())
            .field("post_hooks", &self.post_hooks.len())
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl PipelineBuilder {
    /// A builder over `registry` with the defaults.
    pub fn new(registry: ToolRegistry) -> Self {
        PipelineBuilder {
            registry,
            pre_hooks: Vec::new(),
            guards: Vec::new(),
            default_wrappers: true,
            wrappers: Vec::new(),
            retry: RetryPolicy::default(),
            default_timeout: Some(wrappers::DEFAULT_TIMEOUT),
            post_hooks: Vec::new(),
            approver: None,
            approval_timeout: DEFAULT_APPROVAL_TIMEOUT,
            sinks: Sinks::default(),
            limits: CallLimits::default(),
            pool_size: DEFAULT_POOL_SIZE,
            metrics: Arc::default(),
        }
    }

    /// Adds a pre-execute hook (they run in the order added).
    pub fn pre_hook(mut self, hook: impl PreExecuteHook) -> Self {
        self.pre_hooks.push(Arc::new(hook));
        self
    }
    /// Adds a guard (they run in the order added, after the approver).
    pub fn guard(mut self, guard: impl Guard) -> Self {
        self.guards.push(Arc::new(guard));
        self
    }
    /// Adds a post-execute hook (they run in the order added).
    pub fn post_hook(mut self, hook: impl PostExecuteHook) -> Self {
        self.post_hooks.push(Arc::new(hook));
        self
    }
    /// The Approver that answers `ask`s (without one, an `ask` is a denial).
    pub fn approver(mut self, approver: impl Approver) -> Self {
        self.approver = Some(Arc::new(approver));
        self
    }
    /// An Approver shared with other owners (e.g. chosen at run time by the embedder's mode).
    pub fn shared_approver(mut self, approver: Arc<dyn Approver>) -> Self {
        self.approver = Some(approver);
        self
    }
    /// How long the Approver has to answer (default 5 minutes).
    pub fn approval_timeout(mut self, timeout: Duration) -> Self {
        self.approval_timeout = timeout;
        self
    }
    /// Adds a wrapper inside the ones added before (and inside the default stack, if kept).
    pub fn wrap(mut self, wrapper: impl Around) -> Self {
        self.wrappers.push(Arc::new(wrapper));
        self
    }
    /// Removes every wrapper, the default metrics/retry/timeout stack included.
    pub fn clear_wrappers(mut self) -> Self {
        self.default_wrappers = false;
        self.wrappers.clear();
        self
    }
    /// The default retry wrapper's policy.
    pub fn retry_policy(mut self, policy: RetryPolicy) -> Self {
        self.retry = policy;
        self
    }
    /// Timeout for tools that declare none (default 60 s).
    pub fn default_timeout(mut self, timeout: Duration) -> Self {
        self.default_timeout = Some(timeout);
        self
    }
    /// No timeout for tools that declare none (e.g. `run_code`, which has its own deadline).
    pub fn no_default_timeout(mut self) -> Self {
        self.default_timeout = None;
        self
    }
    /// A live observer of `tools/call`, `tools/progress` and `tools/result`.
    pub fn observer(mut self, sink: impl EventSink) -> Self {
        self.sinks.live.push(Arc::new(sink));
        self
    }
    /// A live observer shared with other owners (e.g. an [`AuditLog`] used by several pipelines).
    pub fn shared_observer(mut self, sink: Arc<dyn EventSink>) -> Self {
        self.sinks.live.push(sink);
        self
    }
    /// A durable sink of `tool/result` (direct calls only).
    pub fn durable_sink(mut self, sink: impl EventSink) -> Self {
        self.sinks.durable.push(Arc::new(sink));
        self
    }
    /// Shorthand for a [`SessionLog`] as durable sink.
    pub fn session_log(self, log: Arc<SessionLog>) -> Self {
        let mut this = self;
        this.sinks.durable.push(log);
        this
    }
    /// Per-call size limits (default 8 MiB each).
    pub fn limits(mut self, limits: CallLimits) -> Self {
        self.limits = limits;
        self
    }
    /// Parallel pool size of the root scope (children inherit it).
    pub fn pool_size(mut self, size: usize) -> Self {
        self.pool_size = size;
        self
    }
    /// The metrics store the default metrics wrapper records into.
    pub fn metrics(&self) -> Arc<Metrics> {
        self.metrics.clone()
    }

    /// The pipeline.
    pub fn build(self) -> Pipeline {
        let mut stack: Vec<Arc<dyn Around>> = Vec::new();
        if self.default_wrappers {
            stack.push(Arc::new(MetricsWrapper::new(self.metrics.clone())));
            stack.push(Arc::new(RetryWrapper::new(self.retry)));
            stack.push(Arc::new(match self.default_timeout {
                Some(default) => TimeoutWrapper::new(default),
                None => TimeoutWrapper::declared_only(),
            }));
        }
        stack.extend(self.wrappers);
        Pipeline {
            inner: Arc::new(Inner {
                registry: Arc::new(self.registry),
                pre_hooks: self.pre_hooks,
                guards: self.guards,
                wrappers: stack.into(),
                post_hooks: self.post_hooks,
                approver: self.approver,
                approval_timeout: self.approval_timeout,
                sinks: Arc::new(self.sinks),
                limits: self.limits,
                root: Scope::root(self.pool_size),
                metrics: self.metrics,
            }),
        }
    }
}

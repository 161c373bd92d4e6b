//! The sandbox: runs a model's program (TypeScript or JavaScript, as the body of an async
//! function) in a fresh deno_core isolate with real limits, and hands back only its console
//! output and its return value as a [`RunOutcome`].
//!
//! ```no_run
//! # async fn demo() {
//! use codemode::sandbox::{Sandbox, SandboxConfig};
//! let sandbox = Sandbox::new(SandboxConfig::default()).unwrap();
//! let outcome = sandbox.run("console.log('hi'); return 1 + 1;").await;
//! assert_eq!(outcome.value.unwrap().get(), "2");
//! # }
//! ```
//!
//! # Limits
//! See [`Limits`]: a watchdog thread terminates the isolate at the deadline (uncatchable), the
//! heap limit ends the run as `out_of_memory`, console output is capped, and oversized programs
//! and return values are rejected. Each run gets an isolate of its own.
//!
//! # Cancellation
//! Dropping the future returned by [`Sandbox::run_with`], or cancelling its token, stops the
//! isolate (status `cancelled`).

mod awake_reply;
mod capped;
mod console;
mod engine;
mod execute;
// The binary hand-over is the QuickJS facade's format; V8 takes JSON text.
#[cfg(not(feature = "v8"))]
mod handover;
mod heads_up;
mod host;
mod no_imports;
mod ops;
mod outcome;
mod plan;
mod pool;
mod process;
mod report;
mod reserve;
mod run_state;
mod stack;
mod step_aside;
mod tick;
mod tool_ops;
mod tool_run;
mod transpile;
mod watchdog;

use std::sync::Arc;

use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::call::{Extensions, RunId};
use awake_reply::Waited;

pub use crate::call::{DynamicAccess, DynamicKind, PlannedCall, ProgramPlan};
pub use crate::call::{Limits, MIB};
pub use capped::{capped_outcome, outcome_schema};
pub use engine::BootstrapReport;
pub(crate) use host::RunTools;
pub use host::{DeadlinePause, ToolHost, ToolReply, ToolRequest};
pub use outcome::{
    LogEntry, LogLevel, OUTCOME_VERSION, RunContext, RunError, RunOutcome, RunStats, RunStatus,
};
pub use plan::plan;
pub use process::{
    Isolation, ProcessConfig, WORKER_ARG, WorkerReport, probe_worker, serve_worker,
    serve_worker_if_requested,
};
pub use report::{render, status_line};
pub use transpile::{SyntaxError, Transpiled, transpile};
pub(crate) use watchdog::{Reply, RunControl, StopReason};

/// How the sandbox's worker pool is set up.
#[derive(Debug, Clone)]
pub struct SandboxConfig {
    /// Worker threads, each running one program at a time with a pre-built isolate waiting.
    pub workers: usize,
    /// Default limits of a run (a run may bring its own).
    pub limits: Limits,
    /// Stack of each worker thread. The engine's own stack limit (about 1 MiB) sits well inside
    /// it, so deep recursion is a catchable `RangeError`, never a native stack overflow.
    pub worker_stack_bytes: usize,
    /// Isolates a worker thread builds before a fresh thread takes its place (the engine keeps
    /// per-thread state that wears out after some thousands of isolates).
    pub isolates_per_thread: usize,
    /// Engine threads in this process (default), or worker processes.
    pub isolation: Isolation,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        let cores = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2);
        SandboxConfig {
            workers: cores.max(2),
            limits: Limits::default(),
            worker_stack_bytes: 16 * MIB,
            isolates_per_thread: pool::ISOLATES_PER_THREAD,
            isolation: Isolation::Thread,
        }
    }
}

/// Per-run options of [`Sandbox::run_with`]. Made with [`RunOptions::new`] and its builder
/// methods (non-exhaustive: options may be added).
#[derive(Clone)]
#[non_exhaustive]
pub struct RunOptions {
    /// The limits of this run (deadline, heap, calls, byte caps), in place of the sandbox's.
    pub limits: Limits,
    /// Cancelling it stops the run (status `cancelled`).
    pub cancel: CancellationToken,
    /// The tools the program may call (`None`: `tools` is empty).
    pub tools: Option<Arc<dyn ToolHost>>,
    /// Run id for caller provenance (`code_mode{run_id, seq}`); generated when absent.
    pub run_id: Option<String>,
    /// Handed on to every tool call of the run ([`ToolRequest::extensions`]).
    pub extensions: Extensions,
    /// The program is known to call no tool (its static plan names none and finds no access it
    /// cannot follow). Such a run is usually short, so its caller waits for the outcome awake
    /// while a core is spare (`awake_reply.rs`); a run that calls tools waits on them, for as
    /// long as they take. A run without `tools` calls none whatever this says.
    pub calls_no_tools: bool,
}

impl std::fmt::Debug for RunOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunOptions")
            .field("limits", &self.limits)
            .field("tools", &self.tools.as_ref().map(|t| t.paths()))
            .field("run_id", &self.run_id)
            .field("extensions", &self.extensions)
            .field("calls_no_tools", &self.calls_no_tools)
            .finish_non_exhaustive()
    }
}

impl RunOptions {
    /// Options with these limits, a fresh cancellation token, no tools, a generated run id and
    /// no extensions.
    pub fn new(limits: Limits) -> RunOptions {
        RunOptions {
            limits,
            cancel: CancellationToken::new(),
            tools: None,
            run_id: None,
            extensions: Extensions::new(),
            calls_no_tools: false,
        }
    }

    /// Stop the run (status `cancelled`) when `cancel` fires.
    pub fn with_cancel(mut self, cancel: CancellationToken) -> Self {
        self.cancel = cancel;
        self
    }

    /// Let the program call the tools of `tools`.
    pub fn with_tools(mut self, tools: Arc<dyn ToolHost>) -> Self {
        self.tools = Some(tools);
        self
    }

    /// Use this run id for caller provenance instead of a generated one.
    pub fn with_run_id(mut self, run_id: impl Into<String>) -> Self {
        self.run_id = Some(run_id.into());
        self
    }

    /// Data to hand on to every tool call of the run.
    pub fn with_extensions(mut self, extensions: Extensions) -> Self {
        self.extensions = extensions;
        self
    }

    /// Mark the program as calling no tool ([`RunOptions::calls_no_tools`]).
    pub fn calling_no_tools(mut self, calls_no_tools: bool) -> Self {
        self.calls_no_tools = calls_no_tools;
        self
    }
}

/// A fresh run id: `r_` and 32 hex digits.
pub fn new_run_id() -> String {
    RunId::fresh().as_str().to_string()
}

/// A pool of sandboxed isolates. Cheap to clone; `Send + Sync`; every run is independent.
#[derive(Clone)]
pub struct Sandbox {
    backend: Arc<Backend>,
    limits: Limits,
}

enum Backend {
    Threads(pool::Pool),
    Processes(process::ProcessPool),
}

impl std::fmt::Debug for Sandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sandbox")
            .field("limits", &self.limits)
            .field("warm_workers", &self.warm_workers())
            .finish_non_exhaustive()
    }
}

/// The error of building a sandbox (threads could not be started).
#[derive(Debug, thiserror::Error)]
#[error("cannot start the sandbox workers: {0}")]
pub struct SandboxStartError(#[from] std::io::Error);

impl Sandbox {
    /// Start the workers (`config.workers`, at least one), each pre-building an isolate: engine
    /// threads, or worker processes (which start in the background; a run waits for one).
    ///
    /// # Errors
    /// A thread could not be spawned.
    pub fn new(config: SandboxConfig) -> Result<Sandbox, SandboxStartError> {
        Sandbox::start(config, None)
    }

    /// [`Sandbox::new`], with a function called whenever an engine thread has its next isolate
    /// built (a worker process tells its host).
    pub(crate) fn start(
        config: SandboxConfig,
        on_warm: Option<pool::OnWarm>,
    ) -> Result<Sandbox, SandboxStartError> {
        let backend = match config.isolation {
            Isolation::Thread => Backend::Threads(pool::Pool::start(
                config.workers.max(1),
                config.worker_stack_bytes,
                config.limits.heap_bytes,
                config.isolates_per_thread,
                on_warm,
                awake_reply::load(),
                step_aside::STEP_ASIDE,
            )?),
            Isolation::Process(process) => {
                let setup = process::WorkerSetup {
                    heap_bytes: config.limits.heap_bytes,
                    worker_stack_bytes: config.worker_stack_bytes,
                    isolates_per_thread: config.isolates_per_thread,
                    address_space_bytes: process.address_space_bytes,
                    probe: false,
                    snapshot: None,
                    webassembly_left_out: false,
                };
                Backend::Processes(process::ProcessPool::start(
                    config.workers.max(1),
                    setup,
                    process,
                )?)
            }
        };
        Ok(Sandbox {
            backend: Arc::new(backend),
            limits: config.limits,
        })
    }

    /// The default limits of this sandbox.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Run a program with the sandbox's default limits and no tools.
    pub async fn run(&self, source: &str) -> RunOutcome {
        self.run_with(source, RunOptions::new(self.limits.clone()))
            .await
    }

    /// Run a program with explicit limits, cancellation and tools.
    pub async fn run_with(&self, source: &str, options: RunOptions) -> RunOutcome {
        let RunOptions {
            limits,
            cancel,
            tools,
            run_id,
            extensions,
            calls_no_tools,
        } = options;
        let short = calls_no_tools || tools.is_none();
        let tools = tools.map(|host| RunTools {
            host,
            run_id: run_id.unwrap_or_else(new_run_id),
            extensions,
        });
        match &*self.backend {
            Backend::Threads(pool) => {
                Self::run_on_thread(pool, source, limits, (cancel, short), tools).await
            }
            Backend::Processes(pool) => {
                Self::run_in_process(pool, source, limits, cancel, tools).await
            }
        }
    }

    async fn run_in_process(
        pool: &process::ProcessPool,
        source: &str,
        limits: Limits,
        cancel: CancellationToken,
        tools: Option<RunTools>,
    ) -> RunOutcome {
        // The worker transpiles; only the size check is worth doing before the trip.
        if let Err(outcome) = check_size(source, &limits) {
            return *outcome;
        }
        let stop = CancellationToken::new();
        // Dropping this future stops the run, even if it has not started yet.
        let _stop_on_drop = stop.clone().drop_guard();
        let (reply, mut answer) = oneshot::channel();
        let job = process::ProcessJob {
            source: source.to_string(),
            limits,
            tools,
            stop: stop.clone(),
            reply,
        };
        if !pool.submit(job) {
            return pool::internal_error("the sandbox is shut down");
        }
        let outcome = tokio::select! {
            outcome = &mut answer => outcome,
            () = cancel.cancelled() => {
                stop.cancel();
                (&mut answer).await
            }
        };
        outcome.unwrap_or_else(|_| {
            pool::internal_error("the sandbox worker stopped before the run ended")
        })
    }

    /// `short`: the run calls no tool, so its caller may wait for it awake.
    async fn run_on_thread(
        pool: &pool::Pool,
        source: &str,
        limits: Limits,
        (cancel, short): (CancellationToken, bool),
        tools: Option<RunTools>,
    ) -> RunOutcome {
        let (reply_tx, reply_rx) = oneshot::channel();
        let link = match Self::submit_to(pool, source, limits, tools, Reply::Channel(reply_tx)) {
            Ok(link) => link,
            Err(outcome) => return *outcome,
        };
        // Dropping this future (or cancelling) stops the run, even if it has not started yet.
        let mut abandon_on_drop = AbandonOnDrop(Some(Arc::clone(&link)));
        let mut reply_rx = reply_rx;
        // A run that calls no tool is waited for awake for a short run's length if a core is
        // spare (`awake_reply.rs`), then parked.
        let waited = if short {
            awake_reply::outcome_awake(pool.load, &mut reply_rx, &cancel).await
        } else {
            Waited::Park
        };
        let outcome = match waited {
            Waited::Received(outcome) => Some(outcome),
            Waited::SenderGone => None,
            Waited::Park => tokio::select! {
                outcome = &mut reply_rx => outcome.ok(),
                () = cancel.cancelled() => {
                    link.abandon();
                    (&mut reply_rx).await.ok()
                }
            },
        };
        abandon_on_drop.0 = None;
        outcome.unwrap_or_else(|| {
            pool::internal_error("the sandbox worker stopped before the run ended")
        })
    }

    /// Queue a run on an engine thread; its outcome goes to `reply` (a syntax error or an
    /// oversized program is an `Err`, without a trip to the thread). The link stops it.
    /// Thread isolation only.
    pub(crate) fn submit(
        &self,
        source: &str,
        options: RunOptions,
        reply: Reply,
    ) -> Result<Arc<RunLink>, Box<RunOutcome>> {
        let Backend::Threads(pool) = &*self.backend else {
            return Err(Box::new(pool::internal_error(
                "direct submission needs thread isolation",
            )));
        };
        let RunOptions {
            limits,
            tools,
            run_id,
            extensions,
            ..
        } = options;
        let tools = tools.map(|host| RunTools {
            host,
            run_id: run_id.unwrap_or_else(new_run_id),
            extensions,
        });
        Self::submit_to(pool, source, limits, tools, reply)
    }

    fn submit_to(
        pool: &pool::Pool,
        source: &str,
        limits: Limits,
        tools: Option<RunTools>,
        reply: Reply,
    ) -> Result<Arc<RunLink>, Box<RunOutcome>> {
        // Wakes an idle worker now, so its wake-up overlaps the transpilation.
        let _preparing = pool.heads_up();
        let program = prepare(source, &limits)?;
        let link = Arc::new(RunLink::default());
        let job = pool::Job {
            program,
            limits,
            tools,
            link: Arc::clone(&link),
            reply,
            queued: pool.load.run_queued(),
            queued_at: std::time::Instant::now(),
        };
        if !pool.submit(job) {
            return Err(Box::new(pool::internal_error("the sandbox is shut down")));
        }
        Ok(link)
    }

    /// Workers ready for a run right now (for benchmarks and health checks): engine threads
    /// holding a pre-built isolate, or idle worker processes that completed their handshake.
    pub fn warm_workers(&self) -> usize {
        let count = match &*self.backend {
            Backend::Threads(pool) => &pool.warm,
            Backend::Processes(pool) => &pool.ready,
        };
        count.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Whether a watchdog gave up one of this sandbox's engine threads (a program kept it busy
    /// past its stop). The thread may still burn a core: a worker process in that state must
    /// be replaced.
    pub(crate) fn gave_up_a_worker(&self) -> bool {
        match &*self.backend {
            Backend::Threads(pool) => pool.gave_up_a_worker(),
            Backend::Processes(_) => false,
        }
    }

    /// What the bootstrap of a fresh isolate reports (captured ops, leftover globals).
    #[doc(hidden)]
    ///
    /// # Errors
    /// The isolate could not be built.
    pub fn bootstrap_report() -> Result<BootstrapReport, BootstrapError> {
        engine::on_engine_thread(|| {
            engine::Engine::new(Limits::default().heap_bytes).map(|e| e.report.clone())
        })
        .map_err(BootstrapError)?
        .map_err(BootstrapError)
    }
}

/// Why a fresh isolate could not be built ([`Sandbox::bootstrap_report`]).
#[derive(Debug, thiserror::Error)]
#[error("the isolate could not be built: {0}")]
pub struct BootstrapError(String);

/// Make this process's startup snapshot now and wait for it. Without this call a process makes
/// it in the background once it has built a few isolates, which run the whole glue meanwhile
/// (about 13 ms more each, off the runs' path): a process that runs one program never pays the
/// 0.3 s it costs. A server that wants every isolate restored from the snapshot from its first
/// run, or a benchmark of the steady state, calls this before it starts its sandboxes.
///
/// # Errors
/// The engine could not make a snapshot: isolates run the whole glue, as they do without one.
pub fn make_startup_snapshot() -> Result<(), BootstrapError> {
    engine::on_engine_thread(engine::startup_snapshot)
        .map_err(BootstrapError)?
        .map(|_| ())
        .map_err(BootstrapError)
}

/// Start making this process's startup snapshot on a thread of its own, at the lowest CPU
/// priority, unless it is made or being made; returns at once. A server calls this as it starts,
/// so that its isolates are restored from the snapshot from its first runs on. Without it, a
/// process starts making the snapshot only once it has built a few isolates, and under steady
/// load a lowest-priority thread gets little CPU or none: every isolate meanwhile runs the whole
/// glue, about 13 ms more each (`codemode mcp --isolation thread`, runs back to back: 15-20 ms
/// per request instead of 2-5), until the process has built about 30 such isolates and makes
/// the snapshot at normal priority.
pub fn make_startup_snapshot_in_background() {
    engine::make_snapshot_in_background();
}

/// Run a program on a brand-new isolate on the calling thread, without the pool: the cold path
/// the pool exists to hide (benchmarks measure it). The thread needs a stack of a few MiB.
#[doc(hidden)]
pub fn run_cold_blocking(source: &str, limits: &Limits) -> RunOutcome {
    thread_local! {
        static WATCHDOG: watchdog::Watchdog =
            watchdog::Watchdog::spawn("codemode-watchdog-cold".into(), None).expect("watchdog thread");
    }
    let program = match prepare(source, limits) {
        Ok(program) => program,
        Err(outcome) => return *outcome,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let mut engine = match engine::Engine::new(limits.heap_bytes) {
        Ok(engine) => engine,
        Err(message) => return pool::internal_error(&message),
    };
    WATCHDOG.with(|watchdog| {
        runtime.block_on(execute::execute(
            &mut engine,
            &program,
            limits,
            None,
            watchdog,
            |_| {},
        ))
    })
}

/// Connects a caller to its run: whoever comes second (the run starting, or the caller
/// abandoning it) stops the run, so a run abandoned while queued is stopped as it starts.
#[derive(Default)]
pub(crate) struct RunLink {
    state: std::sync::Mutex<(bool, Option<Arc<RunControl>>)>,
}

impl RunLink {
    pub(crate) fn started(&self, control: Arc<RunControl>) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if state.0 {
            control.stop(StopReason::Cancelled);
        }
        state.1 = Some(control);
    }

    /// Stop the run, now or as soon as it starts.
    pub(crate) fn abandon(&self) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.0 = true;
        if let Some(control) = state.1.take() {
            control.stop(StopReason::Cancelled);
        }
    }
}

struct AbandonOnDrop(Option<Arc<RunLink>>);

impl Drop for AbandonOnDrop {
    fn drop(&mut self) {
        if let Some(link) = self.0.take() {
            link.abandon();
        }
    }
}

/// Check and transpile a program before it takes a worker; failures are final outcomes.
fn prepare(source: &str, limits: &Limits) -> Result<Transpiled, Box<RunOutcome>> {
    check_size(source, limits)?;
    transpile(source).map_err(|e| {
        let mut error = RunError::new("SyntaxError", e.message.clone());
        error.line = Some(e.line);
        error.column = Some(e.column);
        Box::new(RunOutcome::failed(RunStatus::Error, error))
    })
}

fn check_size(source: &str, limits: &Limits) -> Result<(), Box<RunOutcome>> {
    if source.len() > limits.program_bytes {
        return Err(Box::new(RunOutcome::failed(
            RunStatus::Error,
            RunError::new(
                "ProgramTooLarge",
                format!(
                    "the program is {} bytes; the limit is {} bytes",
                    source.len(),
                    limits.program_bytes
                ),
            ),
        )));
    }
    Ok(())
}

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

mod console;
mod engine;
mod execute;
mod host;
mod ops;
mod outcome;
mod pool;
mod report;
mod run_state;
mod stack;
mod tool_ops;
mod tool_run;
mod transpile;
mod watchdog;

use std::sync::Arc;

use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::call::{Extensions, RunId};

pub use crate::call::{Limits, MIB};
pub use engine::BootstrapReport;
pub(crate) use host::RunTools;
pub use host::{DeadlinePause, ToolHost, ToolReply, ToolRequest};
pub use outcome::{
    LogEntry, LogLevel, OUTCOME_VERSION, RunContext, RunError, RunOutcome, RunStats, RunStatus,
};
pub use report::{render, status_line};
pub use transpile::{SyntaxError, Transpiled, transpile};
pub(crate) use watchdog::{RunControl, StopReason};

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
        }
    }
}

/// Per-run options of [`Sandbox::run_with`].
#[derive(Clone)]
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
}

impl std::fmt::Debug for RunOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunOptions")
            .field("limits", &self.limits)
            .field("tools", &self.tools.as_ref().map(|t| t.paths()))
            .field("run_id", &self.run_id)
            .field("extensions", &self.extensions)
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
}

/// A fresh run id: `r_` and 32 hex digits.
pub fn new_run_id() -> String {
    RunId::fresh().as_str().to_string()
}

/// A pool of sandboxed isolates. Cheap to clone; `Send + Sync`; every run is independent.
#[derive(Clone)]
pub struct Sandbox {
    pool: Arc<pool::Pool>,
    limits: Limits,
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
    /// Start the worker threads (`config.workers`, at least one), each pre-building an isolate.
    ///
    /// # Errors
    /// A worker thread could not be spawned.
    pub fn new(config: SandboxConfig) -> Result<Sandbox, SandboxStartError> {
        let pool = pool::Pool::start(
            config.workers.max(1),
            config.worker_stack_bytes,
            config.limits.heap_bytes,
            config.isolates_per_thread,
        )?;
        Ok(Sandbox {
            pool: Arc::new(pool),
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
        } = options;
        let program = match prepare(source, &limits) {
            Ok(program) => program,
            Err(outcome) => return *outcome,
        };
        let tools = tools.map(|host| RunTools {
            host,
            run_id: run_id.unwrap_or_else(new_run_id),
            extensions,
        });
        let link = Arc::new(RunLink::default());
        let (reply_tx, reply_rx) = oneshot::channel();
        let job = pool::Job {
            program,
            limits,
            tools,
            link: Arc::clone(&link),
            reply: reply_tx,
        };
        if !self.pool.submit(job) {
            return pool::internal_error("the sandbox is shut down");
        }
        // Dropping this future (or cancelling) stops the run, even if it has not started yet.
        let mut abandon_on_drop = AbandonOnDrop(Some(Arc::clone(&link)));
        let mut reply_rx = reply_rx;
        let outcome = tokio::select! {
            outcome = &mut reply_rx => outcome,
            () = cancel.cancelled() => {
                link.abandon();
                (&mut reply_rx).await
            }
        };
        abandon_on_drop.0 = None;
        outcome.unwrap_or_else(|_| {
            pool::internal_error("the sandbox worker stopped before the run ended")
        })
    }

    /// Workers that hold a pre-built isolate right now (for benchmarks and health checks).
    pub fn warm_workers(&self) -> usize {
        self.pool.warm.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// What the bootstrap of a fresh isolate reports (captured ops, leftover globals).
    #[doc(hidden)]
    ///
    /// # Errors
    /// The isolate could not be built.
    pub fn bootstrap_report() -> Result<BootstrapReport, BootstrapError> {
        std::thread::Builder::new()
            .stack_size(16 * MIB)
            .spawn(|| engine::Engine::new(Limits::default().heap_bytes).map(|e| e.report.clone()))
            .map_err(|e| BootstrapError(e.to_string()))?
            .join()
            .map_err(|_| BootstrapError("bootstrap panicked".into()))?
            .map_err(BootstrapError)
    }
}

/// Why a fresh isolate could not be built ([`Sandbox::bootstrap_report`]).
#[derive(Debug, thiserror::Error)]
#[error("the isolate could not be built: {0}")]
pub struct BootstrapError(String);

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

    fn abandon(&self) {
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
    transpile(source).map_err(|e| {
        let mut error = RunError::new("SyntaxError", e.message.clone());
        error.line = Some(e.line);
        error.column = Some(e.column);
        Box::new(RunOutcome::failed(RunStatus::Error, error))
    })
}

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
mod limits;
mod ops;
mod outcome;
mod pool;
mod render;
mod stack;
mod transpile;
mod watchdog;

use std::sync::Arc;

use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

pub use engine::BootstrapReport;
pub use limits::{Limits, MIB};
pub use outcome::{
    ContextEntry, LogEntry, LogLevel, OUTCOME_VERSION, RunError, RunOutcome, RunStats, RunStatus,
};
pub use render::{render, status_line};
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
        }
    }
}

/// A pool of sandboxed isolates. Cheap to clone; `Send + Sync`; every run is independent.
#[derive(Clone)]
pub struct Sandbox {
    pool: Arc<pool::Pool>,
    limits: Limits,
}

/// The error of building a sandbox (threads could not be started).
#[derive(Debug, thiserror::Error)]
#[error("cannot start the sandbox workers: {0}")]
pub struct SandboxStartError(#[from] std::io::Error);

impl Sandbox {
    pub fn new(config: SandboxConfig) -> Result<Sandbox, SandboxStartError> {
        let pool = pool::Pool::start(
            config.workers.max(1),
            config.worker_stack_bytes,
            config.limits.heap_bytes,
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

    /// Run a program with the sandbox's default limits.
    pub async fn run(&self, source: &str) -> RunOutcome {
        self.run_with(source, self.limits.clone(), CancellationToken::new())
            .await
    }

    /// Run a program with explicit limits and a cancellation token.
    pub async fn run_with(
        &self,
        source: &str,
        limits: Limits,
        cancel: CancellationToken,
    ) -> RunOutcome {
        let program = match prepare(source, &limits) {
            Ok(program) => program,
            Err(outcome) => return *outcome,
        };
        let (started_tx, started_rx) = oneshot::channel();
        let (reply_tx, reply_rx) = oneshot::channel();
        let job = pool::Job {
            program,
            limits,
            started: started_tx,
            reply: reply_tx,
        };
        if !self.pool.submit(job) {
            return pool::internal_error("the sandbox is shut down");
        }
        // If this future is dropped mid-run, the guard stops the isolate.
        let mut stop_on_drop = StopOnDrop { control: None };
        let mut reply_rx = reply_rx;
        let lost = || pool::internal_error("the sandbox worker stopped before the run ended");
        // A run cancelled while queued is stopped the moment it starts.
        let Ok(control) = started_rx.await else {
            return reply_rx.await.unwrap_or_else(|_| lost());
        };
        stop_on_drop.control = Some(Arc::clone(&control));
        let outcome = tokio::select! {
            outcome = &mut reply_rx => outcome,
            () = cancel.cancelled() => {
                control.stop(StopReason::Cancelled);
                (&mut reply_rx).await
            }
        };
        stop_on_drop.control = None;
        outcome.unwrap_or_else(|_| lost())
    }

    /// Workers that hold a pre-built isolate right now (for benchmarks and health checks).
    pub fn warm_workers(&self) -> usize {
        self.pool.warm.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// What the bootstrap of a fresh isolate reports (captured ops, leftover globals).
    #[doc(hidden)]
    pub fn bootstrap_report() -> Result<BootstrapReport, String> {
        std::thread::Builder::new()
            .stack_size(16 * MIB)
            .spawn(|| engine::Engine::new(Limits::default().heap_bytes).map(|e| e.report.clone()))
            .map_err(|e| e.to_string())?
            .join()
            .map_err(|_| "bootstrap panicked".to_string())?
    }
}

/// Run a program on a brand-new isolate on the calling thread, without the pool: the cold path
/// the pool exists to hide (benchmarks measure it). The thread needs a stack of a few MiB.
#[doc(hidden)]
pub fn run_cold_blocking(source: &str, limits: &Limits) -> RunOutcome {
    thread_local! {
        static WATCHDOG: watchdog::Watchdog =
            watchdog::Watchdog::spawn("codemode-watchdog-cold".into()).expect("watchdog thread");
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
            watchdog,
            |_| {},
        ))
    })
}

struct StopOnDrop {
    control: Option<Arc<RunControl>>,
}

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        if let Some(control) = self.control.take() {
            control.stop(StopReason::Cancelled);
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

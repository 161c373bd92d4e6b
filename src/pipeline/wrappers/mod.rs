//! Around-style execute wrappers (axum `from_fn` style): a wrapper gets the call and a [`Next`]
//! and decides whether, when and how often to `next.run(call)`.
//!
//! # Ordering
//! The first wrapper added is outermost: it sees the call first and the result last. The default
//! stack is metrics -> retry -> timeout, so a timeout applies per attempt and metrics see the
//! whole retried call.

mod metrics;
mod retry;
mod timeout;

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub use metrics::{Metrics, MetricsWrapper, ToolStats};
pub use retry::{RetryPolicy, RetryWrapper};
pub use timeout::{DEFAULT_TIMEOUT, TimeoutWrapper};

use crate::call::{CallError, Caller, ErrorKind, Extensions, TypedSlot};
use crate::tool::{ExecContext, ProgressReporter, ToolDefinition};

/// The call as wrappers see it. Cheap to clone (retries run it again).
///
/// Read-only by construction: a wrapper decides whether, when and how often the body runs, never
/// what it runs. The body executes exactly the arguments snapshot that hooks, guards, the
/// approver and the logs saw (DESIGN.md §3), on the tool the call resolved to, with the
/// scheduling (`parallel`) and provenance (`caller`) the pipeline decided.
///
/// ```compile_fail
/// # use codemode::pipeline::around_fn;
/// // Fields are private: a wrapper cannot swap the arguments.
/// around_fn(|mut call, next| async move {
///     call.args = std::sync::Arc::new(serde_json::json!({"path": "secret"}));
///     next.run(call).await
/// });
/// ```
#[derive(Clone)]
pub struct Dispatch {
    call_id: Arc<str>,
    path: Arc<str>,
    tool: ToolDefinition,
    args: Arc<Value>,
    caller: Caller,
    parallel: bool,
    cancel: CancellationToken,
    /// Body attempts started so far, shared by every clone: the body counts itself, so a retry
    /// wrapper of any origin reports true attempt numbers.
    attempts: Arc<AtomicU32>,
    extensions: Extensions,
    progress: Arc<dyn ProgressReporter>,
    typed: TypedSlot,
}

impl Dispatch {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        call_id: Arc<str>,
        path: Arc<str>,
        tool: ToolDefinition,
        args: Arc<Value>,
        caller: Caller,
        parallel: bool,
        cancel: CancellationToken,
        extensions: Extensions,
        progress: Arc<dyn ProgressReporter>,
    ) -> Self {
        Dispatch {
            call_id,
            path,
            tool,
            args,
            caller,
            parallel,
            cancel,
            attempts: Arc::default(),
            extensions,
            progress,
            typed: TypedSlot::default(),
        }
    }

    /// The call's id.
    pub fn call_id(&self) -> &str {
        &self.call_id
    }

    /// Sandbox path of the tool.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The tool called.
    pub fn tool(&self) -> &ToolDefinition {
        &self.tool
    }

    /// The arguments snapshot, shared with hooks, guards and the body.
    pub fn args(&self) -> &Value {
        &self.args
    }

    /// Who issued the call.
    pub fn caller(&self) -> &Caller {
        &self.caller
    }

    /// Whether the scheduler runs it in the parallel pool.
    pub fn parallel(&self) -> bool {
        self.parallel
    }

    /// The call's own token (a child of the caller's): cancelling it asks the body to stop.
    pub fn cancel_token(&self) -> &CancellationToken {
        &self.cancel
    }

    /// Body attempts started so far: 0 before the body first runs, 3 after two retries.
    pub fn attempts(&self) -> u32 {
        self.attempts.load(Ordering::Acquire)
    }

    /// The call's typed data.
    pub fn extensions(&self) -> &Extensions {
        &self.extensions
    }

    pub(crate) fn typed_slot(&self) -> TypedSlot {
        self.typed.clone()
    }
}

impl std::fmt::Debug for Dispatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dispatch")
            .field("call_id", &self.call_id)
            .field("path", &self.path)
            .field("args", &self.args)
            .field("caller", &self.caller)
            .field("parallel", &self.parallel)
            .field("attempts", &self.attempts())
            .finish_non_exhaustive()
    }
}

/// An execute wrapper.
pub trait Around: Send + Sync + 'static {
    /// Runs the call, usually by calling `next.run(call)` once or more.
    fn around(&self, call: Dispatch, next: Next) -> BoxFuture<'static, Result<Value, CallError>>;
}

/// The rest of the stack, ending in the tool body.
#[derive(Clone)]
pub struct Next {
    chain: Arc<[Arc<dyn Around>]>,
    index: usize,
}

impl std::fmt::Debug for Next {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Next")
            .field("remaining", &(self.chain.len() - self.index))
            .finish()
    }
}

impl Next {
    pub(crate) fn new(chain: Arc<[Arc<dyn Around>]>) -> Self {
        Next { chain, index: 0 }
    }

    /// Runs the remaining wrappers and the body.
    pub fn run(self, call: Dispatch) -> BoxFuture<'static, Result<Value, CallError>> {
        match self.chain.get(self.index) {
            Some(layer) => {
                let layer = layer.clone();
                layer.around(
                    call,
                    Next {
                        chain: self.chain,
                        index: self.index + 1,
                    },
                )
            }
            None => run_body(call),
        }
    }
}

fn run_body(call: Dispatch) -> BoxFuture<'static, Result<Value, CallError>> {
    let attempts = call.attempts.fetch_add(1, Ordering::AcqRel) + 1;
    let exec = ExecContext {
        call_id: call.call_id,
        caller: call.caller,
        cancel: call.cancel,
        attempt: attempts,
        extensions: call.extensions,
        progress: Some(call.progress),
        typed: call.typed,
    };
    // The body gets an owned copy of the snapshot (its signature takes `Value`); the snapshot
    // itself stays untouched for hooks, events and presenters.
    let fut = (call.tool.inner.execute)(Value::clone(&call.args), exec);
    fut.map(move |r| {
        r.map_err(|f| match (f.limit, f.timed_out_after_ms) {
            (Some((limit, value)), _) => {
                CallError::new(ErrorKind::LimitExceeded { limit, value }, f.message)
            }
            (None, Some(after_ms)) => CallError::new(ErrorKind::Timeout { after_ms }, f.message),
            (None, None) => CallError::new(
                ErrorKind::ToolError {
                    retryable: f.retryable,
                    attempts,
                },
                f.message,
            ),
        })
    })
    .boxed()
}

struct AroundFn<F>(F);

impl<F, Fut> Around for AroundFn<F>
where
    F: Fn(Dispatch, Next) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Value, CallError>> + Send + 'static,
{
    fn around(&self, call: Dispatch, next: Next) -> BoxFuture<'static, Result<Value, CallError>> {
        (self.0)(call, next).boxed()
    }
}

/// A wrapper from an async closure: `around_fn(|call, next| async move { next.run(call).await })`.
pub fn around_fn<F, Fut>(f: F) -> impl Around
where
    F: Fn(Dispatch, Next) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Value, CallError>> + Send + 'static,
{
    AroundFn(f)
}

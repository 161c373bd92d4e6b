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
#[derive(Clone)]
pub struct Dispatch {
    /// The call's id.
    pub call_id: Arc<str>,
    /// Sandbox path of the tool.
    pub path: Arc<str>,
    /// The tool called.
    pub tool: ToolDefinition,
    /// The arguments snapshot, shared with hooks, guards and the body.
    pub args: Arc<Value>,
    /// Who issued the call.
    pub caller: Caller,
    /// Whether the scheduler runs it in the parallel pool.
    pub parallel: bool,
    /// The call's own token (a child of the caller's): cancelling it asks the body to stop.
    pub cancel: CancellationToken,
    /// 1-based attempt number; the retry wrapper increments it.
    pub attempt: u32,
    /// The call's typed data.
    pub extensions: Extensions,
    pub(crate) progress: Arc<dyn ProgressReporter>,
    pub(crate) typed: TypedSlot,
}

impl std::fmt::Debug for Dispatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dispatch")
            .field("call_id", &self.call_id)
            .field("path", &self.path)
            .field("args", &self.args)
            .field("caller", &self.caller)
            .field("parallel", &self.parallel)
            .field("attempt", &self.attempt)
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
    let attempts = call.attempt;
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
        r.map_err(|f| match f.limit {
            Some((limit, value)) => {
                CallError::new(ErrorKind::LimitExceeded { limit, value }, f.message)
            }
            None => CallError::new(
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

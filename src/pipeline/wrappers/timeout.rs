//! Enforces a tool's declared timeout per attempt. Without this wrapper `timeout_ms` is only
//! metadata. On expiry the body's future is dropped and the call's cancellation token fired.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::Value;
use tokio::time::Sleep;
use tokio_util::sync::CancellationToken;

use super::{Around, Dispatch, Next};
use crate::call::{CallError, ErrorKind};

/// Used when a tool declares no timeout.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// The per-attempt timeout: the tool's declared one, else the pipeline's default (if any).
#[derive(Debug)]
pub struct TimeoutWrapper {
    default: Option<Duration>,
}

impl TimeoutWrapper {
    /// Tools that declare no timeout get `default`.
    pub fn new(default: Duration) -> Self {
        TimeoutWrapper {
            default: Some(default),
        }
    }

    /// Only tools that declare a timeout get one.
    pub fn declared_only() -> Self {
        TimeoutWrapper { default: None }
    }
}

impl Default for TimeoutWrapper {
    fn default() -> Self {
        TimeoutWrapper::new(DEFAULT_TIMEOUT)
    }
}

impl Around for TimeoutWrapper {
    fn around(&self, call: Dispatch, next: Next) -> BoxFuture<'static, Result<Value, CallError>> {
        let Some(limit) = call.tool.timeout().or(self.default) else {
            return next.run(call);
        };
        // The call's own token (a child of the caller's): firing it tells a body that ignores the
        // drop (spawned work) to stop, and stops an outer retry, without touching the caller.
        let token = call.cancel.clone();
        Box::pin(Timeout {
            body: next.run(call),
            limit,
            timer: None,
            token,
        })
    }
}

/// Like `tokio::time::timeout`, but the timer is armed only when the body does not finish on its
/// first poll: most tool calls never pay for a clock read and a timer registration.
struct Timeout {
    body: BoxFuture<'static, Result<Value, CallError>>,
    limit: Duration,
    timer: Option<Pin<Box<Sleep>>>,
    token: CancellationToken,
}

impl Future for Timeout {
    type Output = Result<Value, CallError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if let Poll::Ready(result) = self.body.as_mut().poll(cx) {
            return Poll::Ready(result);
        }
        let limit = self.limit;
        let timer = self
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        if timer.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        // Drop the body now, before reporting, so its resources go with the timeout.
        self.body = Box::pin(futures::future::pending());
        self.token.cancel();
        let after_ms = limit.as_millis() as u64;
        let message = format!("timed out after {after_ms} ms");
        Poll::Ready(Err(CallError::new(
            ErrorKind::Timeout { after_ms },
            message,
        )))
    }
}

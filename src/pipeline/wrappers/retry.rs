//! Retries errors the body marked retryable, for parallel-safe calls only (retrying a write
//! could apply it twice), with capped exponential backoff.

use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::Value;

use super::{Around, Dispatch, Next};
use crate::call::{CallError, ErrorKind};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
/// When the retry wrapper tries a call again: retryable failures of parallel-safe calls only.
pub struct RetryPolicy {
    /// Retries after the first attempt (default 2).
    pub max_retries: u32,
    /// Wait before the first retry (default 100 ms); doubles each time.
    pub initial_backoff: Duration,
    /// Cap of the wait (default 2 s).
    pub max_backoff: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 2,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(2),
        }
    }
}

impl RetryPolicy {
    /// Wait before retry number `retry` (1-based).
    pub fn backoff(&self, retry: u32) -> Duration {
        let factor = 1u32
            .checked_shl(retry.saturating_sub(1))
            .unwrap_or(u32::MAX);
        self.initial_backoff
            .saturating_mul(factor)
            .min(self.max_backoff)
    }
}

#[derive(Default, Debug)]
/// Retries retryable failures of parallel-safe calls with capped exponential backoff.
pub struct RetryWrapper {
    policy: RetryPolicy,
}

impl RetryWrapper {
    /// A wrapper with `policy`.
    pub fn new(policy: RetryPolicy) -> Self {
        RetryWrapper { policy }
    }
}

fn retryable(err: &CallError) -> bool {
    matches!(
        err.kind,
        ErrorKind::ToolError {
            retryable: true,
            ..
        }
    )
}

impl Around for RetryWrapper {
    fn around(&self, call: Dispatch, next: Next) -> BoxFuture<'static, Result<Value, CallError>> {
        if !call.parallel() || self.policy.max_retries == 0 {
            return next.run(call);
        }
        let policy = self.policy;
        async move {
            let mut retry = 0;
            loop {
                let result = next.clone().run(call.clone()).await;
                match result {
                    Err(e)
                        if retryable(&e)
                            && retry < policy.max_retries
                            && !call.cancel_token().is_cancelled() =>
                    {
                        retry += 1;
                        tracing::debug!(attempts = call.attempts(), error = %e, "retrying tool call");
                        tokio::time::sleep(policy.backoff(retry)).await;
                    }
                    other => return other,
                }
            }
        }
        .boxed()
    }
}

//! Per-tool call counts and latencies, recorded around the whole (retried) dispatch.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::Value;

use super::{Around, Dispatch, Next};
use crate::call::{CallError, ErrorCode};
use rustc_hash::FxBuildHasher;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
/// Counters of one tool.
pub struct ToolStats {
    /// Calls that passed the gates and were dispatched, each counted once however often retried.
    pub calls: u64,
    /// Calls that ended in an error, timeouts included.
    pub errors: u64,
    /// Calls that ended in `TIMEOUT`.
    pub timeouts: u64,
    /// Body attempts, retries included (a call that succeeds on its third attempt counts 3; a
    /// call refused before its body ran counts 0).
    pub attempts: u64,
    /// Time spent in the wrapped dispatch, every attempt and backoff included.
    pub total: Duration,
    /// The longest single call (all its attempts).
    pub max: Duration,
}

/// Shared metrics store; read it with [`Metrics::snapshot`].
#[derive(Default, Debug)]
pub struct Metrics {
    by_tool: Mutex<HashMap<Arc<str>, ToolStats, FxBuildHasher>>,
}

impl Metrics {
    /// The counters by sandbox path.
    pub fn snapshot(&self) -> HashMap<String, ToolStats> {
        let map = self.by_tool.lock().unwrap_or_else(|p| p.into_inner());
        map.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    fn record(&self, path: &Arc<str>, elapsed: Duration, attempts: u32, error: Option<ErrorCode>) {
        let mut map = self.by_tool.lock().unwrap_or_else(|p| p.into_inner());
        let stats = match map.get_mut(path) {
            Some(s) => s,
            None => map.entry(path.clone()).or_default(),
        };
        stats.calls += 1;
        stats.attempts += u64::from(attempts);
        stats.total += elapsed;
        stats.max = stats.max.max(elapsed);
        match error {
            Some(ErrorCode::Timeout) => {
                stats.errors += 1;
                stats.timeouts += 1;
            }
            Some(_) => stats.errors += 1,
            None => {}
        }
    }
}

#[derive(Debug)]
/// Records every call into a [`Metrics`] store (outermost wrapper of the default stack).
pub struct MetricsWrapper {
    metrics: Arc<Metrics>,
}

impl MetricsWrapper {
    /// Records into `metrics`.
    pub fn new(metrics: Arc<Metrics>) -> Self {
        MetricsWrapper { metrics }
    }
}

impl Around for MetricsWrapper {
    fn around(&self, call: Dispatch, next: Next) -> BoxFuture<'static, Result<Value, CallError>> {
        let metrics = self.metrics.clone();
        let path = call.path.clone();
        let counter = call.attempts.clone();
        let start = Instant::now();
        next.run(call)
            .map(move |result| {
                let attempts = counter.load(std::sync::atomic::Ordering::Acquire);
                metrics.record(
                    &path,
                    start.elapsed(),
                    attempts,
                    result.as_ref().err().map(CallError::code),
                );
                result
            })
            .boxed()
    }
}

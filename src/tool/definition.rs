//! A tool: declaration, body and the optional tool-owned hooks of DESIGN.md section 2.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::path_args::PathArgs;
use super::present::{Card, ResultView};
use crate::call::{Caller, Extensions, ToolFailure, Typed, TypedSlot};
use crate::schema::CompiledSchema;

pub(crate) type ExecuteFn =
    Arc<dyn Fn(Value, ExecContext) -> BoxFuture<'static, Result<Value, ToolFailure>> + Send + Sync>;
pub(crate) type RenderFn = Arc<dyn Fn(&Value, Option<&Typed>) -> String + Send + Sync>;
/// Reads a successful value that reports a failure of its own (see [`ValueFailure`]).
pub(crate) type ValueFailureFn =
    Arc<dyn Fn(&Value, Option<&Typed>) -> Option<ValueFailure> + Send + Sync>;
pub(crate) type ClassifierFn = Arc<dyn Fn(&Value) -> bool + Send + Sync>;
pub(crate) type PresentCallFn = Arc<dyn Fn(&Value) -> Card + Send + Sync>;
pub(crate) type PresentResultFn = Arc<dyn Fn(&Value, &ResultView<'_>) -> Card + Send + Sync>;
pub(crate) type FinalizeFn = Arc<dyn Fn(String, &Value) -> String + Send + Sync>;

/// What a body gets besides its arguments.
#[derive(Clone)]
pub struct ExecContext {
    /// The call's id, as its events carry it.
    pub call_id: Arc<str>,
    /// Who issued the call.
    pub caller: Caller,
    /// Cancelled when the caller goes away or the attempt times out; long bodies should watch it.
    pub cancel: CancellationToken,
    /// 1 for the first attempt, 2 for the first retry, ...
    pub attempt: u32,
    /// The call's typed data ([`CallRequest::extension`](crate::CallRequest::extension)).
    pub extensions: Extensions,
    pub(crate) progress: Option<Arc<dyn ProgressReporter>>,
    pub(crate) typed: TypedSlot,
}

impl ExecContext {
    /// Emits a live `tools/progress` observation.
    pub fn progress(&self, message: impl Into<String>) {
        if let Some(progress) = &self.progress {
            progress.report(&self.call_id, message.into());
        }
    }
}

impl fmt::Debug for ExecContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExecContext")
            .field("call_id", &self.call_id)
            .field("caller", &self.caller)
            .field("attempt", &self.attempt)
            .finish_non_exhaustive()
    }
}

/// Where a body's `tools/progress` observations go (the pipeline's observers).
pub(crate) trait ProgressReporter: Send + Sync + 'static {
    fn report(&self, call_id: &Arc<str>, message: String);
}

pub(crate) struct ToolInner {
    pub(crate) name: String,
    pub(crate) sandbox_name: String,
    pub(crate) description: String,
    pub(crate) parameters: CompiledSchema,
    pub(crate) output: Option<CompiledSchema>,
    pub(crate) render: Option<RenderFn>,
    pub(crate) execute: ExecuteFn,
    pub(crate) timeout: Option<Duration>,
    pub(crate) classifier: Option<ClassifierFn>,
    pub(crate) present_call: Option<PresentCallFn>,
    pub(crate) present_result: Option<PresentResultFn>,
    pub(crate) finalize: Option<FinalizeFn>,
    pub(crate) value_failure: Option<ValueFailureFn>,
    /// Path arguments resolved against a root (built-in file tools only; see `path_args`).
    pub(crate) path_args: Option<PathArgs>,
}

/// A failure carried inside a successful value: `run_code` answers with its run's outcome, and
/// an outcome that did not end `ok` makes the call's result event say `error` (with this code
/// and message) while the value stays whole for logs and replay.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ValueFailure {
    pub(crate) code: String,
    pub(crate) message: String,
    pub(crate) details: Value,
}

/// A tool definition. Cheap to clone (shared).
#[derive(Clone)]
pub struct ToolDefinition {
    pub(crate) inner: Arc<ToolInner>,
}

impl fmt::Debug for ToolDefinition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolDefinition")
            .field("name", &self.inner.name)
            .field("sandbox_name", &self.inner.sandbox_name)
            .finish_non_exhaustive()
    }
}

impl ToolDefinition {
    /// The name as the source gives it (used when calling the source).
    pub fn name(&self) -> &str {
        &self.inner.name
    }
    /// The identifier used inside the sandbox.
    pub fn sandbox_name(&self) -> &str {
        &self.inner.sandbox_name
    }
    /// What the tool does, for the model.
    pub fn description(&self) -> &str {
        &self.inner.description
    }
    /// The input JSON Schema.
    pub fn parameters(&self) -> &Value {
        self.inner.parameters.json()
    }
    /// The digest of the input JSON Schema ([`crate::schema::schema_digest`]), computed once.
    pub fn parameters_digest(&self) -> &str {
        self.inner.parameters.digest()
    }
    /// The output JSON Schema, when it declares one.
    pub fn output_schema(&self) -> Option<&Value> {
        self.inner.output.as_ref().map(CompiledSchema::json)
    }
    /// Declared metadata; enforced only by the timeout wrapper.
    pub fn timeout(&self) -> Option<Duration> {
        self.inner.timeout
    }
    /// Whether it decides per call whether it is parallel-safe (a classifier).
    pub fn has_classifier(&self) -> bool {
        self.inner.classifier.is_some()
    }

    /// Its path capability, when its arguments name files under a root (the built-in file
    /// tools): policies match the normalised paths of these arguments.
    pub(crate) fn path_args(&self) -> Option<&PathArgs> {
        self.inner.path_args.as_ref()
    }

    /// Renders a canonical value into content (the tool's `render`, else the default).
    pub fn render(&self, value: &Value) -> String {
        self.render_typed(value, None)
    }

    /// Renders a value, with the typed value it was made from when the body kept one.
    pub(crate) fn render_typed(&self, value: &Value, typed: Option<&Typed>) -> String {
        match &self.inner.render {
            Some(render) => render(value, typed),
            None => super::present::default_render(value),
        }
    }

    /// The failure a successful value reports, for tools whose value can (see [`ValueFailure`]).
    pub(crate) fn value_failure(
        &self,
        value: &Value,
        typed: Option<&Typed>,
    ) -> Option<ValueFailure> {
        self.inner.value_failure.as_ref()?(value, typed)
    }

    /// The call card; `None` without a presenter. Panics in presenters yield a generic card.
    pub fn present_call(&self, args: &Value) -> Option<Card> {
        let present = self.inner.present_call.as_ref()?;
        Some(guarded(|| present(args), &self.inner.sandbox_name))
    }

    /// The result card; `None` without a presenter.
    pub fn present_result(&self, args: &Value, result: &ResultView<'_>) -> Option<Card> {
        let present = self.inner.present_result.as_ref()?;
        Some(guarded(|| present(args, result), &self.inner.sandbox_name))
    }
}

fn guarded(f: impl FnOnce() -> Card, title: &str) -> Card {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
        .unwrap_or_else(|_| Card::generic(title))
}

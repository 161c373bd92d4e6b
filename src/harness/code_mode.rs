//! [`CodeMode`]: runs programs in the sandbox against the inner pipeline, one run per call.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::admission::{self, Admission, Candidate};
use super::pipeline_host::{PipelineHost, RunSpan};
use super::visible_tools;
use crate::call::{Extensions, Limits, RunId};
use crate::pipeline::{Pipeline, ProgramApproval};
use crate::sandbox::{RunOptions, RunOutcome, Sandbox};

/// Runs programs against the visible tools of the pipeline it was built over. Cheap to clone.
///
/// Built by the [`Harness`](super::Harness) (or by hand with [`CodeMode::new`]): there is
/// nothing to attach afterwards.
#[derive(Clone)]
pub struct CodeMode {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for CodeMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodeMode")
            .field("limits", &self.inner.limits)
            .finish_non_exhaustive()
    }
}

struct Inner {
    sandbox: Sandbox,
    limits: Limits,
    /// The pipeline every `tools.x(args)` of a program goes through.
    pipeline: Pipeline,
    /// The sandbox paths programs see (the pipeline's tools but `run_code`).
    paths: Vec<String>,
    /// Parent of every run's cancellation: [`CodeMode::stop_all`].
    stop: CancellationToken,
    /// Runs whose id the caller chose (a [`RunId`] extension), for [`CodeMode::stop_run`].
    by_id: Mutex<HashMap<Arc<str>, CancellationToken>>,
    /// Whether a program is put to the approver once, before it runs.
    program_approval: ProgramApproval,
}

impl CodeMode {
    /// Programs run in `sandbox` under `limits`, and their calls go through `pipeline`; every
    /// `ask` is put to the pipeline's approver when its call is made.
    pub fn new(sandbox: Sandbox, limits: Limits, pipeline: Pipeline) -> CodeMode {
        CodeMode::with_program_approval(sandbox, limits, pipeline, ProgramApproval::Off)
    }

    /// As [`CodeMode::new`], with `program_approval` deciding whether a program whose plan
    /// names calls that would ask is put to the approver once, before it runs.
    pub fn with_program_approval(
        sandbox: Sandbox,
        limits: Limits,
        pipeline: Pipeline,
        program_approval: ProgramApproval,
    ) -> CodeMode {
        let paths = visible_tools(pipeline.registry())
            .into_iter()
            .map(|t| t.path)
            .collect();
        CodeMode {
            inner: Arc::new(Inner {
                sandbox,
                limits,
                pipeline,
                paths,
                stop: CancellationToken::new(),
                by_id: Mutex::new(HashMap::new()),
                program_approval,
            }),
        }
    }

    /// The limits of every run.
    pub fn limits(&self) -> &Limits {
        &self.inner.limits
    }

    /// The pipeline the programs' calls go through.
    pub fn pipeline(&self) -> &Pipeline {
        &self.inner.pipeline
    }

    /// Stops every run in progress and every later one: each ends `cancelled` and still returns
    /// its outcome (console output so far included). For a process shutting down, e.g. on
    /// Ctrl-C, where cancelling the enclosing `run_code` call would drop the outcome.
    pub fn stop_all(&self) {
        self.inner.stop.cancel();
    }

    /// Stops the run whose id was chosen with a [`RunId`] extension; it still returns its
    /// outcome (status `cancelled`, console kept), unlike cancelling the `run_code` call, which
    /// discards it. Returns whether such a run was going.
    pub fn stop_run(&self, run_id: &str) -> bool {
        let runs = self.inner.by_id.lock().unwrap_or_else(|e| e.into_inner());
        match runs.get(run_id) {
            Some(token) => {
                token.cancel();
                true
            }
            None => false,
        }
    }

    /// Runs a program. Its tool calls carry `extensions` (and, when they hold a [`RunId`], the
    /// run uses that id).
    ///
    /// Before it runs, the program's static plan is read from its source (`planned_calls` and
    /// `dynamic_access` in the outcome, `run/plan` to the inner pipeline's observers); with
    /// program approval on, the approver may be asked about the whole program first.
    ///
    /// # Cancellation
    /// Cancelling `cancel` stops the run; the outcome (status `cancelled`) is still returned.
    pub async fn run(
        &self,
        code: &str,
        cancel: CancellationToken,
        extensions: &Extensions,
    ) -> RunOutcome {
        let chosen = extensions.get::<RunId>();
        // Minted here rather than in the sandbox so the run's span knows it too.
        let run_id = chosen.cloned().unwrap_or_else(RunId::fresh);
        // Registered before admission, so a run awaiting its approval can be stopped too.
        let run_cancel = self.inner.stop.child_token();
        let _registered =
            chosen.map(|run_id| RegisteredRun::new(&self.inner, run_id, run_cancel.clone()));
        let (plan, unplanned) = admission::plan_of(code, &self.inner.limits).await;
        let calls_no_tools = admission::calls_no_tools(&plan, unplanned.as_deref());
        let candidate = Candidate {
            code,
            run_id: &run_id,
            plan: &plan,
            unplanned,
            extensions,
            paths: &self.inner.paths,
        };
        let admitted = admission::admit(
            candidate,
            self.inner.program_approval,
            &self.inner.pipeline,
            async {
                tokio::select! {
                    () = cancel.cancelled() => {}
                    () = run_cancel.cancelled() => {}
                }
            },
        )
        .await;
        let mut outcome = match admitted {
            Admission::Run(extensions) => {
                let options = RunOptions::new(self.inner.limits.clone())
                    .with_cancel(run_cancel.clone())
                    .with_extensions(extensions)
                    .with_run_id(run_id.as_str())
                    .calling_no_tools(calls_no_tools);
                self.run_admitted(code, cancel, options, run_id).await
            }
            Admission::Stop(outcome) => *outcome,
        };
        outcome.planned_calls = plan.calls.clone();
        outcome.dynamic_access = plan.dynamic.clone();
        outcome
    }

    /// The run itself. `cancel` is the caller's token; the run's own is `options.cancel`
    /// (stopped by [`CodeMode::stop_all`] and [`CodeMode::stop_run`], and when `cancel` is).
    async fn run_admitted(
        &self,
        code: &str,
        cancel: CancellationToken,
        options: RunOptions,
        run_id: RunId,
    ) -> RunOutcome {
        let run_cancel = options.cancel.clone();
        let span = run_span(&run_id);
        let host_span = RunSpan::new(span.clone());
        let pipeline = &self.inner.pipeline;
        let host = PipelineHost {
            pipeline: pipeline.clone(),
            scope: pipeline.root_scope().sibling(),
            paths: self.inner.paths.clone(),
            run_span: host_span.clone(),
        };
        let options = options.with_tools(Arc::new(host));
        let run = self
            .inner
            .sandbox
            .run_with(code, options)
            .instrument(span.clone());
        tokio::pin!(run);
        let outcome = tokio::select! {
            biased;
            outcome = &mut run => outcome,
            () = cancel.cancelled() => {
                run_cancel.cancel();
                run.await
            }
        };
        host_span.end();
        record_end(&span, &outcome);
        outcome
    }
}

/// The span of one run. Its parent is the span current when the run starts: for a `run_code`
/// call, that call's `execute_tool run_code` span. Every nested call's span hangs under it
/// explicitly (the calls are issued on the sandbox's thread, or arrive from a worker process,
/// where no span of the run is current).
fn run_span(run_id: &RunId) -> tracing::Span {
    tracing::info_span!(
        "code_mode_run",
        codemode.run_id = run_id.as_str(),
        codemode.run.status = tracing::field::Empty,
        codemode.run.tool_calls = tracing::field::Empty,
        otel.status_code = tracing::field::Empty,
        error.type = tracing::field::Empty,
    )
}

/// Puts how the run ended on its span; a run that did not end ok is an error span whose
/// `error.type` is its status upper-cased, the code of its durable `tool/result`.
fn record_end(span: &tracing::Span, outcome: &RunOutcome) {
    span.record("codemode.run.status", outcome.status.as_str());
    span.record("codemode.run.tool_calls", outcome.stats.tool_calls);
    if !outcome.is_ok() {
        span.record("otel.status_code", "ERROR");
        span.record(
            "error.type",
            outcome.status.as_str().to_ascii_uppercase().as_str(),
        );
    }
}

/// Keeps a run stoppable by id while it goes.
struct RegisteredRun<'a> {
    inner: &'a Inner,
    run_id: Arc<str>,
}

impl<'a> RegisteredRun<'a> {
    fn new(inner: &'a Inner, run_id: &RunId, token: CancellationToken) -> Self {
        let mut runs = inner.by_id.lock().unwrap_or_else(|e| e.into_inner());
        runs.insert(Arc::clone(&run_id.0), token);
        RegisteredRun {
            inner,
            run_id: Arc::clone(&run_id.0),
        }
    }
}

impl Drop for RegisteredRun<'_> {
    fn drop(&mut self) {
        let mut runs = self.inner.by_id.lock().unwrap_or_else(|e| e.into_inner());
        runs.remove(&self.run_id);
    }
}

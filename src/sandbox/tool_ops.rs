//! `op_codemode_tool_call`: every `tools.x(args)` of a program crosses into Rust here.
//!
//! Per-run rules of DESIGN.md §5 live here: the tool-call cap (run-ending), the in-flight cap
//! (back-pressure: a semaphore, so further calls queue), the per-call argument and result byte
//! caps (`LIMIT_EXCEEDED`, catchable), and "a call issued after the run ended never executes".

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Duration;

use deno_core::{OpState, ToV8, op2, v8};
use deno_error::JsErrorBox;
use serde_json::{Value, json};
use tokio::sync::{Notify, Semaphore};
use tokio::task::AbortHandle;
use tokio_util::sync::CancellationToken;

use super::host::{DeadlinePause, ToolFailure, ToolHost, ToolRequest, ToolResponse};
use super::limits::Limits;
use super::ops::{FinishReport, RunState};
use super::outcome::ContextEntry;
use super::watchdog::RunControl;

/// The tool side of one run.
pub(crate) struct ToolRun {
    pub host: Arc<dyn ToolHost>,
    /// The catalog the program's `tools` object was built from: the glue names a known tool by
    /// its index here.
    pub paths: Vec<String>,
    pub run_id: String,
    pub control: Arc<RunControl>,
    /// Cancelled when the run ends: in-flight calls see it and stop.
    pub cancel: CancellationToken,
    pub in_flight: Arc<Semaphore>,
    pub max_calls: u64,
    pub arg_bytes: usize,
    pub result_bytes: usize,
    pub issued: u64,
    pub active: u64,
    pub calls_by_tool: BTreeMap<String, u64>,
    pub bytes_kept: u64,
    pub contexts: Vec<ContextEntry>,
    /// The calls that did not finish on their first poll.
    pub ledger: Arc<Ledger>,
}

/// Calls that did not finish on their first poll run as tasks of their own on the worker's
/// runtime, not inside the isolate's op driver: when the run ends, the isolate is dropped, and
/// a call dropped with it would leave no audit record while its tool might still take effect
/// (a write on a blocking thread). So the run's end waits here until every such call has
/// reached its own end through the pipeline (which stops calls that have not started and lets
/// started ones finish within its grace), and counts how each ended.
#[derive(Default)]
pub(crate) struct Ledger {
    state: Mutex<LedgerState>,
    settled: Notify,
}

#[derive(Default)]
struct LedgerState {
    live: usize,
    ended: bool,
    /// Ended after the run without their tool's body starting: no effect.
    cancelled: u64,
    /// Ended after the run with their tool's body started: their outcome is the tool's own.
    finished_after_end: u64,
    tasks: Vec<AbortHandle>,
}

/// How the calls in flight at the end of a run ended.
pub(crate) struct Settled {
    pub cancelled: u64,
    pub finished_after_end: u64,
}

/// How long the end of a run waits for its calls in flight: the pipeline's own grace for
/// started bodies, plus room for its bookkeeping. A host that ignores cancellation altogether
/// has its calls aborted after this.
const SETTLE_LIMIT: Duration =
    Duration::from_millis(crate::pipeline::CANCEL_GRACE.as_millis() as u64 + 1000);

impl Ledger {
    fn lock(&self) -> std::sync::MutexGuard<'_, LedgerState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn starting(&self) {
        self.lock().live += 1;
    }

    fn started(&self, task: AbortHandle) {
        self.lock().tasks.push(task);
    }

    fn finished(&self, response: &ToolResponse) {
        let mut state = self.lock();
        state.live = state.live.saturating_sub(1);
        if state.ended {
            match response {
                ToolResponse::Err(failure) if !failure.executed => state.cancelled += 1,
                _ => state.finished_after_end += 1,
            }
        }
        if state.live == 0 {
            self.settled.notify_waiters();
        }
    }

    /// Marks the run's end (call it before cancelling the calls), then waits for the calls in
    /// flight to end.
    pub(crate) async fn settle(&self, cancel: &CancellationToken) -> Settled {
        self.lock().ended = true;
        cancel.cancel();
        let all_ended = async {
            loop {
                let notified = self.settled.notified();
                if self.lock().live == 0 {
                    return;
                }
                notified.await;
            }
        };
        if tokio::time::timeout(SETTLE_LIMIT, all_ended).await.is_err() {
            let mut state = self.lock();
            for task in state.tasks.drain(..) {
                task.abort();
            }
            // Aborted: whether they had an effect is unknown, so they are not "cancelled".
            state.finished_after_end += state.live as u64;
            state.live = 0;
        }
        let state = self.lock();
        Settled {
            cancelled: state.cancelled,
            finished_after_end: state.finished_after_end,
        }
    }
}

impl ToolRun {
    pub(crate) fn new(
        host: Arc<dyn ToolHost>,
        paths: Vec<String>,
        run_id: String,
        control: Arc<RunControl>,
        limits: &Limits,
    ) -> ToolRun {
        ToolRun {
            host,
            paths,
            run_id,
            control,
            cancel: CancellationToken::new(),
            in_flight: Arc::new(Semaphore::new(limits.in_flight_calls.max(1))),
            max_calls: limits.tool_calls,
            arg_bytes: limits.call_arg_bytes,
            result_bytes: limits.call_result_bytes,
            issued: 0,
            active: 0,
            calls_by_tool: BTreeMap::new(),
            bytes_kept: 0,
            contexts: Vec::new(),
            ledger: Arc::new(Ledger::default()),
        }
    }
}

/// The error class of a failed call (registered by `runtime-js/06_tools.js`, which builds the
/// program's `ToolError` from the failure record carried as the message).
const TOOL_ERROR_CLASS: &str = "CodemodeToolError";

/// A failed call, as the op rejects with it.
fn rejection(path: &str, failure: &ToolFailure) -> JsErrorBox {
    // `details` travels as JSON text, which the glue parses natively: it never stringifies a
    // value there (a `toJSON` on `Object.prototype` would run program code mid-conversion).
    let record = json!({"code": failure.code, "message": failure.message, "tool": path, "detailsJson": failure.details.to_string()});
    JsErrorBox::new(TOOL_ERROR_CLASS, record.to_string())
}

/// A successful call's value as JSON text; the op resolves with the value it parses to, so the
/// glue adds no step (no `then`, no parse) between the op and the program's `await`.
pub(crate) struct JsonValue(String);

impl<'a> ToV8<'a> for JsonValue {
    type Error = JsErrorBox;

    fn to_v8<'i>(
        self,
        scope: &mut v8::PinScope<'a, 'i>,
    ) -> Result<v8::Local<'a, v8::Value>, JsErrorBox> {
        let text = v8::String::new(scope, &self.0)
            .ok_or_else(|| JsErrorBox::range_error("the tool result is too long for a string"))?;
        v8::json::parse(scope, text)
            .ok_or_else(|| JsErrorBox::type_error("the tool result is not valid JSON"))
    }
}

/// What to do with a call, decided synchronously when it is issued.
enum Admission {
    Reject(JsErrorBox),
    Run {
        request: ToolRequest,
        host: Arc<dyn ToolHost>,
        permits: Arc<Semaphore>,
        result_bytes: usize,
    },
}

/// How the glue names the tool of a call: `index` into the run's catalog, or `UNKNOWN` with the
/// path the program used in `detail`. For a known tool, a non-empty `detail` says why its
/// arguments could not be converted.
const UNKNOWN: i32 = -1;

fn admit(state: &mut OpState, index: i32, args: &str, detail: String) -> Admission {
    let run = state.borrow_mut::<RunState>();
    let known = usize::try_from(index)
        .ok()
        .and_then(|i| run.tools.as_ref()?.paths.get(i).cloned());
    let (path, args_error) = match known {
        Some(path) => (path, detail),
        // Empty arguments text: they could not be converted. The call is refused as unknown
        // before its arguments are looked at, so the reason is not needed.
        None if index == UNKNOWN && args.is_empty() => (detail, "unconvertible".to_string()),
        None if index == UNKNOWN => (detail, String::new()),
        // The glue only sends indexes it was given; anything else is a glue bug, not a tool.
        None => (format!("#{index}"), String::new()),
    };
    if run.finish.is_some() {
        let failure = ToolFailure::new(
            "CANCELLED",
            "the run has ended; this call was not executed",
            json!({}),
        );
        return Admission::Reject(rejection(&path, &failure));
    }
    let Some(tools) = run.tools.as_mut() else {
        let failure = ToolFailure::new(
            "UNKNOWN_TOOL",
            format!("no tools are available in this run (called `{path}`)"),
            json!({"suggestions": []}),
        );
        return Admission::Reject(rejection(&path, &failure));
    };
    if tools.issued >= tools.max_calls {
        let message = format!(
            "the program made more than {} tool calls (the per-run limit)",
            tools.max_calls
        );
        let report = json!({"status": "limit_exceeded", "error": {"name": "LimitExceeded", "message": message, "stack": ""}});
        tools.cancel.cancel();
        run.finish = Some(FinishReport {
            report_json: report.to_string(),
            value_json: None,
        });
        let failure = ToolFailure::new(
            "CANCELLED",
            "the run ended: tool-call limit reached",
            json!({}),
        );
        return Admission::Reject(rejection(&path, &failure));
    }
    tools.issued += 1;
    match tools.calls_by_tool.get_mut(path.as_str()) {
        Some(count) => *count += 1,
        None => {
            tools.calls_by_tool.insert(path.clone(), 1);
        }
    }
    let reject = |failure: ToolFailure| Admission::Reject(rejection(&path, &failure));
    let unconvertible = (!args_error.is_empty()).then_some(args_error);
    if args.len() > tools.arg_bytes {
        return reject(ToolFailure::new(
            "LIMIT_EXCEEDED",
            format!(
                "the arguments are {} bytes; the per-call limit is {} bytes",
                args.len(),
                tools.arg_bytes
            ),
            json!({"limit": tools.arg_bytes, "value": args.len()}),
        ));
    }
    let args: Value = match (&unconvertible, serde_json::from_str(args)) {
        (Some(_), _) => Value::Null,
        (None, Ok(args)) => args,
        (None, Err(e)) => {
            let issue = json!({"path": "", "message": e.to_string()});
            return reject(ToolFailure::new(
                "INVALID_ARGS",
                format!("the arguments cannot be read: {e}"),
                json!({"issues": [issue]}),
            ));
        }
    };
    tools.active += 1;
    let request = ToolRequest {
        path,
        args,
        unconvertible,
        run_id: tools.run_id.clone(),
        seq: tools.issued,
        // The run's own token: cancelling the run cancels every call in flight, and nothing
        // cancels one call alone from here (the pipeline makes its per-call child).
        cancel: tools.cancel.clone(),
        deadline: DeadlinePause(Arc::clone(&tools.control)),
    };
    Admission::Run {
        request,
        host: Arc::clone(&tools.host),
        permits: Arc::clone(&tools.in_flight),
        result_bytes: tools.result_bytes,
    }
}

/// Runs a call as a task of its own, known to the run's ledger (see [`Ledger`]).
async fn in_own_task(
    ledger: &Arc<Ledger>,
    call: impl Future<Output = ToolResponse> + Send + 'static,
) -> ToolResponse {
    let record = Arc::clone(ledger);
    ledger.starting();
    let task = tokio::spawn(async move {
        let response = call.await;
        record.finished(&response);
        response
    });
    ledger.started(task.abort_handle());
    task.await.unwrap_or_else(|_| {
        ToolResponse::Err(ToolFailure::new(
            "CANCELLED",
            "the run ended while the call was in flight",
            json!({}),
        ))
    })
}

#[op2]
pub(crate) async fn op_codemode_tool_call(
    state: Rc<RefCell<OpState>>,
    #[smi] index: i32,
    #[string] args: String,
    #[string] detail: String,
) -> Result<JsonValue, JsErrorBox> {
    let admission = admit(&mut state.borrow_mut(), index, &args, detail);
    drop(args);
    let Admission::Run {
        request,
        host,
        permits,
        result_bytes,
    } = admission
    else {
        let Admission::Reject(error) = admission else {
            unreachable!()
        };
        return Err(error);
    };
    let path = request.path.clone();
    // Taken only for a call that does not finish on its first poll (the hot path skips it).
    let ledger = || {
        let state = state.borrow();
        let run = state.borrow::<RunState>();
        run.tools
            .as_ref()
            .map(|tools| Arc::clone(&tools.ledger))
            .unwrap_or_default()
    };
    let response = match Arc::clone(&permits).try_acquire_owned() {
        Ok(permit) => {
            // Most calls complete on their first poll: no task, no extra wake-up.
            let mut call = host.call(request);
            match futures::poll!(&mut call) {
                Poll::Ready(response) => response,
                Poll::Pending => {
                    in_own_task(&ledger(), async move {
                        let response = call.await;
                        drop(permit);
                        response
                    })
                    .await
                }
            }
        }
        // Back-pressure: at most `in_flight_calls` calls run at once; the rest wait, in order.
        Err(_) => {
            in_own_task(&ledger(), async move {
                match permits.acquire_owned().await {
                    Ok(_permit) => host.call(request).await,
                    Err(_) => ToolResponse::Err(
                        ToolFailure::new("CANCELLED", "the run has ended", json!({}))
                            .not_executed(),
                    ),
                }
            })
            .await
        }
    };
    let mut state = state.borrow_mut();
    let run = state.borrow_mut::<RunState>();
    let Some(tools) = run.tools.as_mut() else {
        return Err(rejection(
            &path,
            &ToolFailure::new("CANCELLED", "the run has ended", json!({})),
        ));
    };
    tools.active -= 1;
    match response {
        ToolResponse::Ok { value, contexts } => {
            let text = value.to_string();
            if text.len() > result_bytes {
                let reason = ToolFailure::new(
                    "LIMIT_EXCEEDED",
                    format!(
                        "the result is {} bytes; the per-call limit is {result_bytes} bytes",
                        text.len()
                    ),
                    json!({"limit": result_bytes, "value": text.len()}),
                );
                return Err(rejection(&path, &reason));
            }
            tools.bytes_kept += text.len() as u64;
            for (kind, text) in contexts {
                tools.contexts.push(ContextEntry {
                    tool: path.clone(),
                    kind,
                    text,
                });
            }
            Ok(JsonValue(text))
        }
        ToolResponse::Err(reason) => Err(rejection(&path, &reason)),
    }
}

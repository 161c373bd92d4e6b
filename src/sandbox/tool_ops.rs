//! `op_codemode_tool_call`: every `tools.x(args)` of a program crosses into Rust here.
//!
//! Per-run rules of DESIGN.md §5 live here: the tool-call cap (run-ending), the in-flight cap
//! (back-pressure: a semaphore, so further calls queue), the per-call argument and result byte
//! caps (`LIMIT_EXCEEDED`, catchable), and "a call issued after the run ended never executes".

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;

use deno_core::{OpState, ToV8, op2, v8};
use deno_error::JsErrorBox;
use serde_json::{Value, json};
use tokio::sync::Semaphore;
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
    let cancel = request.cancel.clone();
    // Back-pressure: at most `in_flight_calls` calls run at once; the rest wait here, in order.
    let response = match permits.acquire_owned().await {
        Ok(_permit) => {
            tokio::select! {
                // The call first: most complete on their first poll, before the token's waiter
                // would have to be registered.
                biased;
                response = host.call(request) => response,
                () = cancel.cancelled() => ToolResponse::Err(ToolFailure::new("CANCELLED", "the run ended while the call was in flight", json!({}))),
            }
        }
        Err(_) => ToolResponse::Err(ToolFailure::new(
            "CANCELLED",
            "the run has ended",
            json!({}),
        )),
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

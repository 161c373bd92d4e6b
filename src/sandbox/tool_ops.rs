//! `op_codemode_tool_call` (and `_full`): every `tools.x(args)` of a program crosses into Rust here.
//!
//! Per-run rules of DESIGN.md §5 live here: the tool-call cap (run-ending), the in-flight cap
//! (back-pressure: a semaphore, so further calls queue), and "a call issued after the run ended
//! never executes". Per-call byte limits are the pipeline's (`CallLimits`), not the sandbox's.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::task::Poll;

use deno_core::{FromV8, OpState, ToV8, op2, v8};
use deno_error::JsErrorBox;
use futures::FutureExt;
use serde_json::{Value, json};
use tokio::sync::Semaphore;

use super::host::{DeadlinePause, ToolHost, ToolReply, ToolRequest};
use super::outcome::{RunContext, RunError, RunStatus};
use super::run_state::{FinishReport, RunState};
use super::tool_run::{Ledger, Response};
use crate::call::{ArgIssue, CallError, ErrorKind, json_size};

/// The error class of a failed call (registered by `runtime-js/06_tools.js`, which builds the
/// program's `ToolError` from the failure record carried as the message).
const TOOL_ERROR_CLASS: &str = "CodemodeToolError";

/// A failed call, as the op rejects with it.
fn rejection(path: &str, error: &CallError) -> JsErrorBox {
    // `details` travels as JSON text, which the glue parses natively: it never stringifies a
    // value there (a `toJSON` on `Object.prototype` would run program code mid-conversion).
    let record = json!({"code": error.code().as_str(), "message": error.message, "tool": path, "detailsJson": error.details().to_string()});
    JsErrorBox::new(TOOL_ERROR_CLASS, record.to_string())
}

/// A successful call's value as the op hands it to the program. The op resolves with the value
/// itself, so the glue adds no step (no `then`, no parse) between the op and the program's
/// `await`.
pub(crate) enum ResultValue {
    /// A structured value as its JSON text, which the engine parses natively.
    Json(String),
    /// A scalar, made directly: parsing its text costs the engine more than the rest of a small
    /// call's hand-over (W2's echo answers numbers).
    Number(f64),
    Bool(bool),
    Null,
    Text(String),
}

impl ResultValue {
    /// `json` is the value's compact JSON text when the host already wrote it. Also returns the
    /// size of that text, which the run's `bytes_kept_in_sandbox` counts.
    fn new(value: Value, json: Option<String>) -> (ResultValue, u64) {
        if matches!(value, Value::Array(_) | Value::Object(_)) {
            let text = json.unwrap_or_else(|| value.to_string());
            let size = text.len() as u64;
            return (ResultValue::Json(text), size);
        }
        let size = json.map_or_else(|| json_size(&value), |text| text.len() as u64);
        let result = match value {
            // Every JSON number the host holds is an f64 on the engine's side too: the one
            // `JSON.parse` would make of its text (both round to nearest).
            Value::Number(n) => n
                .as_f64()
                .map_or_else(|| ResultValue::Json(n.to_string()), ResultValue::Number),
            Value::Bool(b) => ResultValue::Bool(b),
            Value::String(text) => ResultValue::Text(text),
            _ => ResultValue::Null,
        };
        (result, size)
    }
}

impl<'a> ToV8<'a> for ResultValue {
    type Error = JsErrorBox;

    fn to_v8<'i>(
        self,
        scope: &mut v8::PinScope<'a, 'i>,
    ) -> Result<v8::Local<'a, v8::Value>, JsErrorBox> {
        let too_long = || JsErrorBox::range_error("the tool result is too long for a string");
        Ok(match self {
            ResultValue::Json(text) => {
                let text = v8::String::new(scope, &text).ok_or_else(too_long)?;
                v8::json::parse(scope, text)
                    .ok_or_else(|| JsErrorBox::type_error("the tool result is not valid JSON"))?
            }
            ResultValue::Number(x) => v8::Number::new(scope, x).into(),
            ResultValue::Bool(b) => v8::Boolean::new(scope, b).into(),
            ResultValue::Null => v8::null(scope).into(),
            ResultValue::Text(text) => v8::String::new(scope, &text).ok_or_else(too_long)?.into(),
        })
    }
}

/// The arguments' JSON text, as the glue sends it. Converted by hand because deno_core's
/// `#[string]` path costs the engine facade three transcodings per call (a UTF-16 view, then UTF-8
/// into a shared buffer, then a copy); this is one pass into the final `String` for short texts.
pub(crate) struct ArgsText(String);

/// Texts up to this many bytes are written in one pass (longer ones ask for their size first).
const SHORT_ARGS: usize = 512;

impl<'a> FromV8<'a> for ArgsText {
    type Error = JsErrorBox;

    fn from_v8<'i>(
        scope: &mut v8::PinScope<'a, 'i>,
        value: v8::Local<'a, v8::Value>,
    ) -> Result<ArgsText, JsErrorBox> {
        // The glue always sends a string; anything else reads as "no text" (unconvertible).
        let Ok(text) = v8::Local::<v8::String>::try_from(value) else {
            return Ok(ArgsText(String::new()));
        };
        let flags = v8::WriteFlags::kReplaceInvalidUtf8;
        let mut short = [std::mem::MaybeUninit::<u8>::uninit(); SHORT_ARGS];
        let written = text.write_utf8_uninit_v2(scope, &mut short, flags, None);
        // The writer stops before a character that does not fit (at most 4 bytes), so a text
        // that leaves 4 bytes free was written whole.
        let bytes = if written + 4 <= SHORT_ARGS {
            // SAFETY: the first `written` bytes were initialised by the write.
            unsafe { std::slice::from_raw_parts(short.as_ptr().cast::<u8>(), written) }.to_vec()
        } else {
            let mut long = Vec::with_capacity(text.utf8_length(scope));
            let written = text.write_utf8_uninit_v2(scope, long.spare_capacity_mut(), flags, None);
            // SAFETY: as above, within the vector's capacity.
            unsafe { long.set_len(written) };
            long
        };
        Ok(ArgsText(engine_utf8(bytes)))
    }
}

/// Bytes the engine wrote with `kReplaceInvalidUtf8`, as a `String`. The replacement makes them
/// valid UTF-8; they are checked anyway, never trusted (a facade bug must not become UB).
pub(super) fn engine_utf8(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// The first unpaired surrogate escape (`\ud800`) in a JSON text, which `JSON.stringify` writes for
/// a JavaScript string holding one and no UTF-8 parser accepts. Only for the error message: it
/// runs once the text has failed to parse.
fn lone_surrogate(json: &str) -> Option<&str> {
    let unit = |at: usize| {
        let escape = json.get(at..at + 6)?;
        let hex = escape.strip_prefix("\\u")?;
        u16::from_str_radix(hex, 16).ok().map(|unit| (escape, unit))
    };
    let bytes = json.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] != b'\\' {
            at += 1;
            continue;
        }
        let Some((escape, first)) = unit(at) else {
            at += 2; // any other escape: `\\`, `\"`, `\n`...
            continue;
        };
        match first {
            0xD800..=0xDBFF => match unit(at + 6) {
                Some((_, 0xDC00..=0xDFFF)) => at += 12,
                _ => return Some(escape),
            },
            0xDC00..=0xDFFF => return Some(escape),
            _ => at += 6,
        }
    }
    None
}

/// What to do with a call, decided synchronously when it is issued.
enum Admission {
    Reject(JsErrorBox),
    Run {
        request: ToolRequest,
        host: Arc<dyn ToolHost>,
        permits: Arc<Semaphore>,
    },
}

/// How the glue names the tool of a call: `index` into the run's catalog, or `UNKNOWN` with the
/// path the program used in `detail`. For a known tool, a non-empty `detail` says why its
/// arguments could not be converted.
const UNKNOWN: i32 = -1;

fn admit(state: &mut OpState, index: i32, wave: u32, args: &str, detail: String) -> Admission {
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
        let failure = CallError::new(
            ErrorKind::Cancelled,
            "the run has ended; this call was not executed",
        );
        return Admission::Reject(rejection(&path, &failure));
    }
    let Some(tools) = run.tools.as_mut() else {
        let failure = CallError::new(
            ErrorKind::UnknownTool {
                suggestions: Vec::new(),
            },
            format!("no tools are available in this run (called `{path}`)"),
        );
        return Admission::Reject(rejection(&path, &failure));
    };
    if tools.issued >= tools.max_calls {
        let message = format!(
            "the program made more than {} tool calls (the per-run limit)",
            tools.max_calls
        );
        tools.cancel.cancel();
        run.finish = Some(FinishReport::Host {
            status: RunStatus::LimitExceeded,
            error: RunError::new("LimitExceeded", message),
        });
        let failure = CallError::new(
            ErrorKind::Cancelled,
            "the run ended: tool-call limit reached",
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
    let reject = |failure: CallError| Admission::Reject(rejection(&path, &failure));
    let unconvertible = (!args_error.is_empty()).then_some(args_error);
    let args: Value = match (&unconvertible, serde_json::from_str(args)) {
        (Some(_), _) => Value::Null,
        (None, Ok(args)) => args,
        (None, Err(e)) => {
            let reason = match lone_surrogate(args) {
                Some(escape) => format!(
                    "a string holds a lone UTF-16 surrogate (`{escape}`), which has no UTF-8 form \
                     and so cannot reach a tool; make the string well-formed first \
                     (`s.toWellFormed()` replaces it with U+FFFD), or send binary data as base64"
                ),
                None => e.to_string(),
            };
            return reject(CallError::new(
                ErrorKind::InvalidArgs {
                    issues: vec![ArgIssue::new("", reason.clone())],
                },
                format!("the arguments cannot be read: {reason}"),
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
        // 0: the run does not track waves.
        wave: (wave > 0).then_some(u64::from(wave)),
        // The run's own token: cancelling the run cancels every call in flight, and nothing
        // cancels one call alone from here (the pipeline makes its per-call child).
        cancel: tools.cancel.clone(),
        deadline: DeadlinePause(Arc::clone(&tools.control) as Arc<dyn super::host::DeadlineClock>),
        extensions: tools.extensions.clone(),
    };
    Admission::Run {
        request,
        host: Arc::clone(&tools.host),
        permits: Arc::clone(&tools.in_flight),
    }
}

/// The path of the tool at `index` in the run's catalog, while the run has one.
fn catalog_path(run: &RunState, index: i32) -> Option<String> {
    let i = usize::try_from(index).ok()?;
    run.tools.as_ref()?.paths.get(i).cloned()
}

/// Starts a call as a task of its own, known to the run's ledger (see [`Ledger`]), and returns
/// its response to come. A plain function, so the op's future holds only the task's handle, not
/// the call (a smaller op future is cheaper to move on every call, pending or not).
fn in_own_task(
    ledger: &Arc<Ledger>,
    call: impl Future<Output = Response> + Send + 'static,
) -> impl Future<Output = Response> {
    let record = Arc::clone(ledger);
    ledger.starting();
    let task = tokio::spawn(async move {
        let response = call.await;
        record.finished(&response);
        response
    });
    ledger.started(task.abort_handle());
    task.map(|joined| {
        joined.unwrap_or_else(|_| {
            Err(CallError::new(
                ErrorKind::Cancelled,
                "the run ended while the call was in flight",
            ))
        })
    })
}

/// The common call: a known tool, its arguments converted, in a run that does not track waves.
/// Two arguments fewer to convert than [`op_codemode_tool_call_full`] (each costs the engine
/// facade a handle).
#[op2]
pub(crate) async fn op_codemode_tool_call(
    state: Rc<RefCell<OpState>>,
    #[smi] index: i32,
    #[scoped] args: ArgsText,
) -> Result<ResultValue, JsErrorBox> {
    tool_call(state, index, 0, args.0, String::new()).await
}

/// Any call: `wave` when the run tracks waves (0 otherwise), and `detail` as [`admit`] reads it
/// (an unknown tool's path, or why a known tool's arguments could not be converted).
#[op2]
pub(crate) async fn op_codemode_tool_call_full(
    state: Rc<RefCell<OpState>>,
    #[smi] index: i32,
    #[smi] wave: u32,
    #[scoped] args: ArgsText,
    #[string] detail: String,
) -> Result<ResultValue, JsErrorBox> {
    tool_call(state, index, wave, args.0, detail).await
}

async fn tool_call(
    state: Rc<RefCell<OpState>>,
    index: i32,
    wave: u32,
    args: String,
    detail: String,
) -> Result<ResultValue, JsErrorBox> {
    let admission = admit(&mut state.borrow_mut(), index, wave, &args, detail);
    drop(args);
    let Admission::Run {
        request,
        host,
        permits,
    } = admission
    else {
        let Admission::Reject(error) = admission else {
            unreachable!()
        };
        return Err(error);
    };
    // The path is needed again only for an error or a context entry. A known tool's is in the
    // run's catalog, read again then; it is copied now only for an unknown tool, and for a call
    // that outlives its first poll (the run, and its catalog, may end before it does).
    let mut path = (index == UNKNOWN).then(|| request.path.clone());
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
                    if path.is_none() {
                        path = catalog_path(state.borrow().borrow::<RunState>(), index);
                    }
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
            path.get_or_insert_with(|| request.path.clone());
            in_own_task(&ledger(), async move {
                match permits.acquire_owned().await {
                    Ok(_permit) => host.call(request).await,
                    Err(_) => Err(CallError::new(ErrorKind::Cancelled, "the run has ended")),
                }
            })
            .await
        }
    };
    let mut state = state.borrow_mut();
    let run = state.borrow_mut::<RunState>();
    let needs_path = match &response {
        Ok(reply) => !reply.contexts.is_empty(),
        Err(_) => true,
    };
    let path = match path {
        Some(path) => path,
        None if needs_path || run.tools.is_none() => {
            catalog_path(run, index).unwrap_or_else(|| format!("#{index}"))
        }
        None => String::new(),
    };
    let Some(tools) = run.tools.as_mut() else {
        return Err(rejection(
            &path,
            &CallError::new(ErrorKind::Cancelled, "the run has ended"),
        ));
    };
    tools.active -= 1;
    match response {
        Ok(ToolReply {
            value,
            contexts,
            json,
        }) => {
            let (result, size) = ResultValue::new(value, json);
            tools.bytes_kept += size;
            for entry in contexts {
                tools.contexts.push(RunContext {
                    tool: path.clone(),
                    kind: entry.kind,
                    text: entry.text,
                });
            }
            Ok(result)
        }
        Err(error) => Err(rejection(&path, &error)),
    }
}

#[cfg(test)]
mod tests {
    use super::lone_surrogate;

    #[test]
    fn lone_surrogate_finds_unpaired_escapes_only() {
        assert_eq!(lone_surrogate(r#"{"v":"x\ud800y"}"#), Some(r"\ud800"));
        assert_eq!(lone_surrogate(r#"{"v":"\uDC00"}"#), Some(r"\uDC00"));
        assert_eq!(lone_surrogate(r#"{"v":"\ud83d\u0041"}"#), Some(r"\ud83d"));
        assert_eq!(lone_surrogate(r#"{"v":"end\ud83d"}"#), Some(r"\ud83d"));
        // A pair, an escaped backslash before `ud800` text, other escapes, multi-byte text.
        assert_eq!(lone_surrogate(r#"{"v":"\ud83d\ude00"}"#), None);
        assert_eq!(lone_surrogate(r#"{"v":"\\ud800"}"#), None);
        assert_eq!(lone_surrogate(r#"{"v":"a\"\n\u00e9é€\\"}"#), None);
        assert_eq!(
            lone_surrogate(r#"{"v":"\ud83d\ude00\udc00"}"#),
            Some(r"\udc00")
        );
    }
}

//! `op_codemode_tool_call` (and `_full`): every `tools.x(args)` of a program crosses into Rust here.
//!
//! Per-run rules of DESIGN.md §5 live here: the tool-call cap (run-ending), the in-flight cap
//! (back-pressure: a semaphore, so further calls queue), and "a call issued after the run ended
//! never executes". Per-call byte limits are the pipeline's (`CallLimits`), not the sandbox's.
//!
//! The ops are synchronous. A call that finishes on its first poll answers its value; one that
//! goes on continues as a task of the run's [`Ledger`], and its result reaches the program later,
//! in a batch with every other that arrived meanwhile ([`take_results`], called by the run's
//! event loop).

use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use deno_core::convert::OptionUndefined;
use deno_core::{FromV8, OpState, ToV8, op2, v8};
use deno_error::{JsErrorBox, JsErrorClass};
use futures::FutureExt;
use serde_json::{Value, json};
use tokio::sync::Semaphore;

#[cfg(not(feature = "v8"))]
use super::handover;
use super::host::{DeadlinePause, EncodedValue, Encoding, ToolHost, ToolReply, ToolRequest};
use super::outcome::{RunContext, RunError, RunStatus};
use super::run_state::{FinishReport, RunState};
use super::tool_run::{Finished, Ledger, Response, ToolRun};
use crate::call::{ArgIssue, CallError, ErrorKind, json_size};

/// The error class of a failed call (registered by `runtime-js/06_tools.js`, which builds the
/// program's `ToolError` from the failure record carried as the message).
const TOOL_ERROR_CLASS: &str = "CodemodeToolError";

/// A failed call as the glue builds its `ToolError` from: `{code, message, tool, detailsJson}` as
/// JSON text. `details` travels as JSON text too, which the glue parses natively: it never
/// stringifies a value there (a `toJSON` on `Object.prototype` would run program code
/// mid-conversion).
fn failure_record(path: &str, error: &CallError) -> String {
    json!({"code": error.code().as_str(), "message": error.message, "tool": path, "detailsJson": error.details().to_string()}).to_string()
}

/// A failed call, as the op throws it (deno_core builds the error with the glue's class).
fn rejection(path: &str, error: &CallError) -> JsErrorBox {
    JsErrorBox::new(TOOL_ERROR_CLASS, failure_record(path, error))
}

/// A successful call's value as the op hands it to the program. The op resolves with the value
/// itself, so the glue adds no step (no `then`, no parse) between the op and the program's
/// `await`.
pub(crate) enum ResultValue {
    /// An array or an object in the engine's binary object format ([`handover`]), which the
    /// engine reads natively, and the size of its JSON text.
    #[cfg(not(feature = "v8"))]
    Binary {
        bytes: Vec<u8>,
        size: u64,
    },
    /// A structured value the binary format does not carry (or a number the engine would not
    /// take as an `f64` as is) as its JSON text, which the engine parses natively.
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
            // The value and its text are freed before the engine builds its copy, which then
            // reuses that memory. Holding the value meanwhile grew the heap by its size at every
            // call, which the allocator gave back to the system and faulted in again at the
            // next: W4's call drifted from 8.5 ms to 13 ms over a process's first runs.
            return ResultValue::encoded(EncodedValue::of(value, json, usize::MAX));
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

impl ResultValue {
    /// A value its host encoded (a worker process's), and the size of its JSON text.
    fn encoded(encoded: EncodedValue) -> (ResultValue, u64) {
        let EncodedValue {
            format,
            bytes,
            size,
        } = encoded;
        let result = match format {
            #[cfg(not(feature = "v8"))]
            Encoding::Binary => ResultValue::Binary { bytes, size },
            // Never sent to a V8 worker, whose engine does not read the format: taken as text,
            // it fails to parse and the call rejects.
            #[cfg(feature = "v8")]
            Encoding::Binary => ResultValue::Json(engine_utf8(bytes)),
            Encoding::Json => ResultValue::Json(engine_utf8(bytes)),
        };
        (result, size)
    }
}

/// The engine refuses a string over its length limit, or a value the heap has no room for.
fn does_not_fit(bytes: u64) -> JsErrorBox {
    JsErrorBox::range_error(format!(
        "the tool result ({bytes} bytes as text) does not fit in the sandbox: it is over the \
         engine's string length or the run's heap limit; ask the tool for less (a page, a \
         filter, a summary)"
    ))
}

impl<'a> ToV8<'a> for ResultValue {
    type Error = JsErrorBox;

    fn to_v8<'i>(
        self,
        scope: &mut v8::PinScope<'a, 'i>,
    ) -> Result<v8::Local<'a, v8::Value>, JsErrorBox> {
        Ok(match self {
            // The encoder declines what the format or the reader's limits cannot carry, so the
            // reader refuses only what the heap cannot hold; a run the heap limit has stopped
            // builds nothing more (a batch's later results).
            #[cfg(not(feature = "v8"))]
            ResultValue::Binary { bytes, size } => {
                if scope.is_execution_terminating() {
                    return Err(does_not_fit(size));
                }
                handover::read(scope, &bytes).ok_or_else(|| does_not_fit(size))?
            }
            ResultValue::Json(text) => {
                let text =
                    v8::String::new(scope, &text).ok_or_else(|| does_not_fit(text.len() as u64))?;
                v8::json::parse(scope, text)
                    .ok_or_else(|| JsErrorBox::type_error("the tool result is not valid JSON"))?
            }
            ResultValue::Number(x) => v8::Number::new(scope, x).into(),
            ResultValue::Bool(b) => v8::Boolean::new(scope, b).into(),
            ResultValue::Null => v8::null(scope).into(),
            ResultValue::Text(text) => v8::String::new(scope, &text)
                .ok_or_else(|| does_not_fit(text.len() as u64))?
                .into(),
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

/// How deep arguments may nest, counting the outer object. serde_json reads 128 levels, and a
/// worker process's `Call` frame puts the arguments two levels down, so 125 is the most that
/// reaches the host in either isolation mode; deeper arguments are refused here, in both.
const ARGS_MAX_DEPTH: usize = 125;

/// The arguments' JSON text (as the glue wrote it) as a value, or why it cannot be one.
fn read_args(args: &str) -> Result<Value, String> {
    match serde_json::from_str::<Value>(args) {
        // Refused as serde refuses what is deeper still, with the same message.
        Ok(value) if deeper_than(&value, ARGS_MAX_DEPTH) => Err(too_deep()),
        Ok(value) => Ok(value),
        Err(e) => Err(unreadable_args(args, &e)),
    }
}

/// Why the arguments' JSON text could not be read into a value.
fn unreadable_args(args: &str, error: &serde_json::Error) -> String {
    if let Some(escape) = lone_surrogate(args) {
        return format!(
            "a string holds a lone UTF-16 surrogate (`{escape}`), which has no UTF-8 form and so \
             cannot reach a tool; make the string well-formed first (`s.toWellFormed()` replaces \
             it with U+FFFD), or send binary data as base64"
        );
    }
    // serde_json names this error only in its message.
    if error.to_string().starts_with("recursion limit exceeded") {
        return too_deep();
    }
    error.to_string()
}

fn too_deep() -> String {
    format!(
        "the arguments nest arrays and objects more than {ARGS_MAX_DEPTH} levels deep, which no \
         tool takes; flatten them"
    )
}

/// Whether `value` nests arrays and objects more than `levels` deep.
fn deeper_than(value: &Value, levels: usize) -> bool {
    match value {
        Value::Array(items) => levels == 0 || items.iter().any(|v| deeper_than(v, levels - 1)),
        Value::Object(map) => levels == 0 || map.values().any(|v| deeper_than(v, levels - 1)),
        _ => false,
    }
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
        ledger: Arc<Ledger>,
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
    let args: Value = match (&unconvertible, read_args(args)) {
        (Some(_), _) => Value::Null,
        (None, Ok(args)) => args,
        (None, Err(reason)) => {
            return reject(CallError::new(
                ErrorKind::InvalidArgs {
                    issues: vec![ArgIssue::new("", reason.clone())],
                },
                format!("the arguments cannot be read: {reason}"),
            ));
        }
    };
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
        ledger: Arc::clone(&tools.ledger),
    }
}

/// The path of the tool at `index` in the run's catalog, while the run has one.
fn catalog_path(run: &RunState, index: i32) -> Option<String> {
    let i = usize::try_from(index).ok()?;
    run.tools.as_ref()?.paths.get(i).cloned()
}

/// Continues a call as a task of its own, known to the run's ledger (see [`Ledger`]), which
/// keeps its result until the host hands it to the program ([`take_results`]).
fn in_own_task(
    ledger: &Arc<Ledger>,
    id: u32,
    path: String,
    call: impl Future<Output = Response> + Send + 'static,
) {
    ledger.starting();
    let mut report = Report {
        ledger: Arc::clone(ledger),
        call: Some((id, path)),
    };
    let task = tokio::spawn(async move {
        let response = call.await;
        report.finished(response);
    });
    ledger.started(task.abort_handle());
}

/// Reports a call's end to the ledger exactly once, even when the host's future panics (a
/// `ToolHost` is the embedder's code): the call then fails, instead of keeping the run waiting
/// on it until its deadline. A task aborted by [`Ledger::settle`] is counted there, not here.
struct Report {
    ledger: Arc<Ledger>,
    call: Option<(u32, String)>,
}

impl Report {
    fn finished(&mut self, response: Response) {
        if let Some((id, path)) = self.call.take() {
            self.ledger.finished(Finished { id, path, response });
        }
    }
}

impl Drop for Report {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let failure = CallError::new(
                ErrorKind::ToolError {
                    retryable: false,
                    attempts: 1,
                },
                "the tool host panicked while running this call",
            );
            self.finished(Err(failure));
        }
    }
}

/// What the program gets from issuing a call: the result, when the call finished on its first
/// poll (the glue wraps it in a resolved promise), or `undefined`: the call goes on, and its
/// result comes with a later batch ([`take_results`]).
type Issued = OptionUndefined<ResultValue>;

/// The common call: a known tool, its arguments converted, in a run that does not track waves.
/// Two arguments fewer to convert than [`op_codemode_tool_call_full`] (each costs the engine
/// facade a handle). `id` names the call in the glue's table of calls awaiting their results.
///
/// A synchronous op, unlike deno_core's async ops: a call that goes on costs no deno_core promise
/// (two promises and a reaction each), no op-driver slot and no per-call resolution; the glue
/// makes one promise of its own, and the host settles every result that arrived in one call.
#[op2]
pub(crate) fn op_codemode_tool_call(
    state: &mut OpState,
    #[smi] index: i32,
    #[smi] id: u32,
    #[scoped] args: ArgsText,
) -> Result<Issued, JsErrorBox> {
    tool_call(state, index, id, 0, args.0, String::new())
}

/// Any call: `wave` when the run tracks waves (0 otherwise), and `detail` as [`admit`] reads it
/// (an unknown tool's path, or why a known tool's arguments could not be converted).
#[op2]
pub(crate) fn op_codemode_tool_call_full(
    state: &mut OpState,
    #[smi] index: i32,
    #[smi] id: u32,
    #[smi] wave: u32,
    #[scoped] args: ArgsText,
    #[string] detail: String,
) -> Result<Issued, JsErrorBox> {
    tool_call(state, index, id, wave, args.0, detail)
}

fn tool_call(
    state: &mut OpState,
    index: i32,
    id: u32,
    wave: u32,
    args: String,
    detail: String,
) -> Result<Issued, JsErrorBox> {
    let admission = admit(state, index, wave, &args, detail);
    drop(args);
    let Admission::Run {
        request,
        host,
        permits,
        ledger,
    } = admission
    else {
        let Admission::Reject(error) = admission else {
            unreachable!()
        };
        return Err(error);
    };
    // The path is needed again only for an error, a context entry or a call that goes on. A
    // known tool's is in the run's catalog, read again then; it is copied now only for an
    // unknown tool.
    let unknown_path = (index == UNKNOWN).then(|| request.path.clone());
    let path_of = |run: &RunState, unknown_path: Option<String>| {
        unknown_path
            .unwrap_or_else(|| catalog_path(run, index).unwrap_or_else(|| format!("#{index}")))
    };
    let Ok(permit) = Arc::clone(&permits).try_acquire_owned() else {
        // Back-pressure: at most `in_flight_calls` calls run at once; the rest wait, in order.
        let path = request.path.clone();
        in_own_task(&ledger, id, path, async move {
            match permits.acquire_owned().await {
                Ok(_permit) => host.call(request).await,
                Err(_) => Err(CallError::new(ErrorKind::Cancelled, "the run has ended")),
            }
        });
        return Ok(OptionUndefined(None));
    };
    // Most calls complete on their first poll: no task, no promise of their own. This poll's
    // waker is never woken: a call that goes on is polled again by its task, which registers
    // the task's.
    let mut call = host.call(request);
    let mut cx = Context::from_waker(futures::task::noop_waker_ref());
    let run = state.borrow_mut::<RunState>();
    let Poll::Ready(response) = call.poll_unpin(&mut cx) else {
        in_own_task(&ledger, id, path_of(run, unknown_path), async move {
            let response = call.await;
            drop(permit);
            response
        });
        return Ok(OptionUndefined(None));
    };
    let path = if unknown_path.is_some() || needs_path(&response) {
        path_of(run, unknown_path)
    } else {
        String::new()
    };
    let Some(tools) = run.tools.as_mut() else {
        unreachable!("a call is admitted only while the run has its tools")
    };
    match deliver(tools, &path, response) {
        Ok(value) => Ok(OptionUndefined(Some(value))),
        Err(record) => Err(JsErrorBox::new(TOOL_ERROR_CLASS, record)),
    }
}

/// Whether handing `response` over needs the tool's path: for its error, or its context entries.
fn needs_path(response: &Response) -> bool {
    match response {
        Ok(reply) => !reply.contexts.is_empty(),
        Err(_) => true,
    }
}

/// A call's response as the program receives it (a failure as its [`failure_record`]), counted
/// in the run's figures.
fn deliver(tools: &mut ToolRun, path: &str, response: Response) -> Result<ResultValue, String> {
    match response {
        Ok(ToolReply {
            value,
            contexts,
            json,
            encoded,
        }) => {
            let (result, size) = match encoded {
                Some(encoded) => ResultValue::encoded(encoded),
                None => ResultValue::new(value, json),
            };
            tools.bytes_kept += size;
            for entry in contexts {
                tools.contexts.push(RunContext {
                    tool: path.to_string(),
                    kind: entry.kind,
                    text: entry.text,
                });
            }
            Ok(result)
        }
        Err(error) => Err(failure_record(path, &error)),
    }
}

/// The results of calls that went on, as the host hands them to the glue: `id, kind, value`
/// triples, passed as the arguments of `settleCalls` (see [`Results::into_arguments`]). Kind 1:
/// the value. Kind 0: a failure, its record as JSON text (the message [`rejection`] gives its
/// error). Kinds 2 and 3: the engine could not take the value (a string too long for it, or
/// for the heap left), with why; the glue rejects the call with a `RangeError` (2) or a
/// `TypeError` (3), as the op's own conversion does. One entry the engine cannot take never
/// keeps the others from settling.
pub(crate) struct Results(Vec<(u32, Result<ResultValue, String>)>);

/// What a failure's value says when the engine cannot make a string of it either.
const UNSAYABLE: &str = "the tool's answer does not fit in the sandbox";

/// The most results handed to one call of `settleCalls`: its arguments are on the engine's
/// stack (V8 pushes them), so a larger batch goes in several calls. A worker's batches are
/// bounded well below this by its scheduler (it polls the run between every 61 tasks), so this
/// only guards a host whose results arrive all at once.
pub(crate) const RESULTS_PER_SETTLE: usize = 1024;

impl Results {
    /// The triples, flat, in groups of at most [`RESULTS_PER_SETTLE`]. They go to the glue as
    /// arguments, which the engine gathers into the glue's rest parameter by defining each
    /// element: an array made here would be filled by assignment in the engine facade
    /// (`Array::new_with_elements`), which runs any index setter the program put on
    /// `Array.prototype` or `Object.prototype` and loses the element to it.
    pub(crate) fn into_arguments<'a>(
        self,
        scope: &mut v8::PinScope<'a, '_>,
    ) -> Vec<Vec<v8::Local<'a, v8::Value>>> {
        let mut groups: Vec<Vec<v8::Local<'a, v8::Value>>> = Vec::new();
        let group_size = self.0.len().min(RESULTS_PER_SETTLE) * 3;
        for (n, (id, result)) in self.0.into_iter().enumerate() {
            if n % RESULTS_PER_SETTLE == 0 {
                groups.push(Vec::with_capacity(group_size));
            }
            let (kind, value) = entry(scope, result);
            let id = v8::Integer::new_from_unsigned(scope, id).into();
            let kind = v8::Integer::new(scope, kind).into();
            let group = groups.last_mut().expect("a group was started above");
            group.extend([id, kind, value]);
        }
        groups
    }
}

/// One result's kind and value, as the glue takes them.
fn entry<'a>(
    scope: &mut v8::PinScope<'a, '_>,
    result: Result<ResultValue, String>,
) -> (i32, v8::Local<'a, v8::Value>) {
    let (kind, text) = match result {
        Ok(value) => match value.to_v8(scope) {
            Ok(value) => return (1, value),
            Err(refused) => {
                let kind = if refused.get_class() == "TypeError" {
                    3
                } else {
                    2
                };
                (kind, refused.get_message().into_owned())
            }
        },
        Err(record) => (0, record),
    };
    match v8::String::new(scope, &text) {
        Some(text) => (kind, text.into()),
        None => match v8::String::new(scope, UNSAYABLE) {
            Some(text) => (2, text.into()),
            None => (2, v8::undefined(scope).into()),
        },
    }
}

/// The results of the run's calls that went on which arrived since the last look, counted in the
/// run's figures, for the glue's `settleCalls`; `None` when there are none. `waker` is woken when
/// the next arrives.
pub(crate) fn take_results(state: &mut OpState, waker: &Waker) -> Option<Results> {
    let run = state.borrow_mut::<RunState>();
    let tools = run.tools.as_mut()?;
    let finished = tools.ledger.take_results(waker);
    if finished.is_empty() {
        return None;
    }
    let results = finished
        .into_iter()
        .map(|call| (call.id, deliver(tools, &call.path, call.response)))
        .collect();
    Some(Results(results))
}

/// Whether the program may still receive a result from the host: a call of the run is in flight,
/// or its result is waiting to be handed over.
pub(crate) fn awaits_results(state: &OpState) -> bool {
    let run = state.borrow::<RunState>();
    run.tools.as_ref().is_some_and(|tools| tools.ledger.busy())
}

#[cfg(test)]
mod tests {
    use deno_core::{JsRuntime, RuntimeOptions, v8};

    use super::{
        ARGS_MAX_DEPTH, RESULTS_PER_SETTLE, ResultValue, Results, lone_surrogate, read_args,
    };
    use crate::sandbox::engine::on_engine_thread;

    /// Arguments nested past the limit both modes share, and unreadable ones, say why in the
    /// program's terms.
    #[test]
    fn unreadable_arguments_say_why_in_the_programs_terms() {
        let nested = |depth: usize| format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
        let too_deep = format!(
            "the arguments nest arrays and objects more than {ARGS_MAX_DEPTH} levels deep, which \
             no tool takes; flatten them"
        );
        assert!(read_args(&nested(ARGS_MAX_DEPTH)).is_ok());
        // Past the limit, and past serde_json's own.
        assert_eq!(
            read_args(&nested(ARGS_MAX_DEPTH + 1)),
            Err(too_deep.clone())
        );
        assert_eq!(read_args(&nested(200)), Err(too_deep));
        let surrogate = read_args(r#"{"s":"\ud800"}"#).unwrap_err();
        assert!(
            surrogate.contains("lone UTF-16 surrogate (`\\ud800`)"),
            "{surrogate}"
        );
        let cut = read_args("{").unwrap_err();
        assert!(cut.contains("EOF"), "{cut}");
    }

    /// A batch larger than a group goes to `settleCalls` in several calls, of at most
    /// `RESULTS_PER_SETTLE` triples each, and a function gathering each group into a rest
    /// parameter receives every result, in order, with its id and kind.
    #[test]
    fn a_large_batch_of_results_is_handed_over_in_groups_and_arrives_whole() {
        let count = 2 * RESULTS_PER_SETTLE + 452;
        let received = on_engine_thread(move || {
            let mut runtime = JsRuntime::new(RuntimeOptions::default());
            let gather = runtime
                .execute_script(
                    "gather",
                    "let next = 0; (...results) => { \
                     for (let i = 0; i < results.length; i += 3) { \
                       if (results[i] !== next || results[i + 1] !== 1 || results[i + 2] !== next * 2) \
                         throw new Error('entry ' + next); \
                       next++; } \
                     return results.length; }",
                )
                .unwrap();
            deno_core::scope!(scope, &mut runtime);
            let gather: v8::Local<v8::Function> =
                v8::Local::new(scope, gather).try_into().unwrap();
            let results = Results(
                (0..count as u32)
                    .map(|id| (id, Ok(ResultValue::Number(f64::from(id) * 2.0))))
                    .collect(),
            );
            let undefined = v8::undefined(scope).into();
            let mut lengths = Vec::new();
            for arguments in results.into_arguments(scope) {
                let length = gather.call(scope, undefined, &arguments).expect("every entry in order");
                lengths.push(length.integer_value(scope).unwrap());
            }
            lengths
        })
        .unwrap();
        let group = 3 * RESULTS_PER_SETTLE as i64;
        assert_eq!(received, [group, group, 3 * 452]);
    }

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

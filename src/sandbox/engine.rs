//! A pre-initialised isolate: deno_core runtime + our ops + the glue of `runtime-js/`, with the
//! heap limit wired to the run's control. Building one is the cold-start cost the pool hides.

use std::sync::{Arc, OnceLock};

use deno_core::{JsRuntime, JsRuntimeForSnapshot, RuntimeOptions, v8};
use serde::Deserialize;

use super::ops;
use super::watchdog::RunControl;

/// The glue, loaded in order into every isolate before any model code (see runtime-js/).
const GLUE: &[(&str, &str)] = &[
    (
        "codemode:glue/00_primordials.js",
        include_str!("../../runtime-js/00_primordials.js"),
    ),
    (
        "codemode:glue/01_values.js",
        include_str!("../../runtime-js/01_values.js"),
    ),
    (
        "codemode:glue/02_inspect.js",
        include_str!("../../runtime-js/02_inspect.js"),
    ),
    (
        "codemode:glue/03_console.js",
        include_str!("../../runtime-js/03_console.js"),
    ),
    (
        "codemode:glue/04_timers.js",
        include_str!("../../runtime-js/04_timers.js"),
    ),
    (
        "codemode:glue/05_web.js",
        include_str!("../../runtime-js/05_web.js"),
    ),
    (
        "codemode:glue/06_tools.js",
        include_str!("../../runtime-js/06_tools.js"),
    ),
    (
        "codemode:glue/98_run.js",
        include_str!("../../runtime-js/98_run.js"),
    ),
    (
        "codemode:glue/99_bootstrap.js",
        include_str!("../../runtime-js/99_bootstrap.js"),
    ),
];

/// What the bootstrap reports about the isolate it prepared (checked by tests).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BootstrapReport {
    /// The ops the glue captured: the reviewed allow-list, and nothing else.
    pub captured_ops: Vec<String>,
    /// Globals the bootstrap wanted to remove but could not (should be empty).
    pub undeletable: Vec<String>,
}

pub(crate) struct Engine {
    pub runtime: JsRuntime,
    pub heap_bytes: usize,
    pub report: BootstrapReport,
    /// The glue's `settleCalls`: the host hands it the results of calls that went on.
    pub settle_calls: v8::Global<v8::Function>,
}

/// Extra heap granted after the limit is hit, so the isolate can unwind the termination.
const UNWIND_HEADROOM: usize = 32 * 1024 * 1024;

/// The glue a startup snapshot holds: all of it but the last script, which shapes the global
/// object (the facade's snapshot writer cannot serialize a global whose deno_core globals were
/// deleted), sets the unhandled-rejection handler (runtime state a snapshot does not carry) and
/// reports; it runs on every isolate after the restore.
const SNAPSHOT_GLUE: &[(&str, &str)] = GLUE.split_at(GLUE.len() - 1).0;
const SHAPE_GLUE: (&str, &str) = GLUE[GLUE.len() - 1];

static SNAPSHOT: OnceLock<Result<&'static [u8], String>> = OnceLock::new();

/// What a startup snapshot is valid for: this crate's version, its engine and its glue. A worker
/// process takes its host's snapshot only when their fingerprints agree.
pub(crate) fn snapshot_fingerprint() -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for (name, source) in GLUE {
        for byte in name.bytes().chain(source.bytes()) {
            hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    let engine = if cfg!(feature = "v8") {
        "v8"
    } else {
        "quickjs"
    };
    format!("{}-{engine}-{hash:016x}", env!("CARGO_PKG_VERSION"))
}

/// Use `bytes` (made by a process of the same fingerprint) as this process's startup snapshot,
/// unless it already has one.
pub(crate) fn adopt_startup_snapshot(bytes: Vec<u8>) {
    let _ = SNAPSHOT.set(Ok(&*Box::leak(bytes.into_boxed_slice())));
}

/// The process's startup snapshot: built once, on first use (or handed over by the host, for a
/// worker process), then shared by every isolate. `Err` when the engine cannot make one;
/// isolates then run the whole glue instead. Needs a thread with a stack of a few MiB.
pub(crate) fn startup_snapshot() -> Result<&'static [u8], String> {
    SNAPSHOT
        .get_or_init(|| {
            let built = std::panic::catch_unwind(|| {
                let mut runtime = JsRuntimeForSnapshot::new(RuntimeOptions {
                    extensions: vec![ops::codemode_sandbox::init()],
                    ..RuntimeOptions::default()
                });
                for (name, source) in SNAPSHOT_GLUE {
                    runtime
                        .execute_script(*name, *source)
                        .map_err(|e| format!("sandbox glue {name} failed: {e}"))?;
                }
                Ok::<_, String>(runtime.snapshot())
            })
            .unwrap_or_else(|_| Err("the engine panicked while making it".into()));
            match built {
                Ok(bytes) => Ok(&*Box::leak(bytes)),
                Err(e) => {
                    tracing::warn!("no startup snapshot, isolates run the whole glue: {e}");
                    Err(e)
                }
            }
        })
        .clone()
}

/// deno_core's stack formatter, except while the isolate is being terminated (a heap-limit stop,
/// a deadline): then the call-site methods it calls throw, and deno_core reports that by
/// printing "Failed to create JsStackFrame ... This is a bug in deno" on stderr, the user's
/// terminal. The run is ending with its own status and message, so the stack is not needed:
/// the error itself stands in for it.
fn prepare_stack_trace<'s, 'i>(
    scope: &mut v8::PinScope<'s, 'i>,
    error: v8::Local<'s, v8::Value>,
    callsites: v8::Local<'s, v8::Array>,
) -> v8::Local<'s, v8::Value> {
    if scope.is_execution_terminating() {
        return v8::String::empty(scope).into();
    }
    deno_core::error::prepare_stack_trace_callback(scope, error, callsites)
}

impl Engine {
    /// An isolate restored from the process's startup snapshot (built on first use), shaped
    /// by the last glue script; the whole glue runs instead where no snapshot can be made.
    pub(crate) fn new(heap_bytes: usize) -> Result<Engine, String> {
        let snapshot = startup_snapshot().ok();
        let params = v8::CreateParams::default().heap_limits(0, heap_bytes);
        let mut runtime = JsRuntime::new(RuntimeOptions {
            extensions: vec![ops::codemode_sandbox::init()],
            create_params: Some(params),
            startup_snapshot: snapshot,
            module_loader: Some(std::rc::Rc::new(super::no_imports::NoImports)),
            ..RuntimeOptions::default()
        });
        runtime
            .v8_isolate()
            .set_prepare_stack_trace_callback(prepare_stack_trace);
        let scripts = if snapshot.is_some() {
            std::slice::from_ref(&SHAPE_GLUE)
        } else {
            GLUE
        };
        let mut completion = None;
        for (name, source) in scripts {
            let value = runtime
                .execute_script(*name, *source)
                .map_err(|e| format!("sandbox glue {name} failed: {e}"))?;
            completion = Some(value);
        }
        // The bootstrap's completion: `[report as JSON text, settleCalls]`.
        let (report_json, settle_calls) = {
            let completion =
                completion.ok_or_else(|| "the sandbox glue did not run".to_string())?;
            deno_core::scope!(scope, &mut runtime);
            let local = v8::Local::new(scope, completion);
            let parts = v8::Local::<v8::Array>::try_from(local)
                .map_err(|_| "the sandbox bootstrap did not answer an array".to_string())?;
            let report = parts
                .get_index(scope, 0)
                .map(|report| report.to_rust_string_lossy(scope))
                .unwrap_or_default();
            let settle = parts
                .get_index(scope, 1)
                .and_then(|settle| v8::Local::<v8::Function>::try_from(settle).ok())
                .ok_or_else(|| "the sandbox bootstrap did not answer `settleCalls`".to_string())?;
            (report, v8::Global::new(scope, settle))
        };
        let report: BootstrapReport = serde_json::from_str(&report_json)
            .map_err(|e| format!("sandbox bootstrap report unreadable ({e}): {report_json}"))?;
        Ok(Engine {
            runtime,
            heap_bytes,
            report,
            settle_calls,
        })
    }

    /// Guard the heap for the run about to start: when it nears its limit, end the run, and
    /// grant headroom exactly once so the isolate can unwind. Granting more on every call would
    /// let an allocation loop grow the heap without bound (measured: 2.5 GB from a 64 MiB limit)
    /// before termination lands.
    ///
    /// Called once the program is compiled, before any of it runs. While such a callback is
    /// installed, the QuickJS facade measures the whole heap after every script evaluation
    /// (measured: ~0.4 ms per evaluation, most of a short run), which the bootstrap glue and the
    /// program's compile would pay for nothing: neither can near the limit (trusted code; a
    /// size-capped source).
    pub(crate) fn guard_heap(&mut self, control: Arc<RunControl>) {
        let mut granted = false;
        self.runtime
            .add_near_heap_limit_callback(move |current, _initial| {
                control.heap_exhausted();
                if granted {
                    return current;
                }
                granted = true;
                current + UNWIND_HEADROOM
            });
    }

    pub(crate) fn isolate_handle(&mut self) -> v8::IsolateHandle {
        self.runtime.v8_isolate().thread_safe_handle()
    }
}

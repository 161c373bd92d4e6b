//! A pre-initialised isolate: deno_core runtime + our ops + the glue of `runtime-js/`, with the
//! heap limit wired to the run's control. Building one is the cold-start cost the pool hides.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
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
    // The implementation of `Intl`'s formatters, kept as text until a run first formats
    // (05_intl.js); intl.js holds no backtick and no `${` (checked by a test).
    (
        "codemode:glue/05_intl_source.js",
        concat!(
            "globalThis.__codemodeInternal.intlSource = String.raw`",
            include_str!("../../runtime-js/intl.js"),
            "`;"
        ),
    ),
    (
        "codemode:glue/05_intl.js",
        include_str!("../../runtime-js/05_intl.js"),
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
    /// The glue's `prebuildTools`: builds a run's `tools` object before the run.
    prebuild_tools: v8::Global<v8::Function>,
    /// The catalog whose `tools` object this isolate holds, built before its run; the run of
    /// that catalog takes it instead of building its own (`execute`).
    pub tools_prebuilt_for: Option<Vec<String>>,
    /// The catalog of the run this isolate served, for the worker to prebuild the next
    /// isolate's `tools` for (runs of one worker nearly always share their catalog).
    pub ran_with_catalog: Option<Vec<String>>,
}

/// Extra heap granted after the limit is hit, so the isolate can unwind the termination.
const UNWIND_HEADROOM: usize = 32 * 1024 * 1024;

/// The process's startup snapshot once made (or adopted from the host), or why there is none.
/// Set once; a second snapshot made meanwhile (see [`startup_snapshot`]) is dropped.
static SNAPSHOT: OnceLock<Result<Box<[u8]>, String>> = OnceLock::new();

/// Isolates a process builds from the whole glue before it starts making its startup snapshot.
/// Making the snapshot costs the CPU of about 25 such builds (0.3 s on a 2-core VM, most of it
/// the facade's search for every native function in the global graph), while a restored
/// isolate is ready about 13 ms sooner than one that runs the glue. A process that runs one
/// program (`codemode run`: one warm worker and one refill) never pays for it; a server pays
/// once, in the background, after its first runs (at once if its pool has 4 workers or more).
const BUILDS_BEFORE_SNAPSHOT: usize = 4;

/// Isolates a process builds from the whole glue before it makes its startup snapshot at normal
/// priority, on a second thread, if the lowest-priority one has not made it by then: under
/// steady load that thread gets no CPU (each core has an engine at work), and every isolate
/// would run the whole glue for as long as the load lasts. By then the builds since the first
/// thread started have cost about what the snapshot costs.
const BUILDS_BEFORE_SNAPSHOT_AT_NORMAL_PRIORITY: usize = BUILDS_BEFORE_SNAPSHOT + 25;

/// Isolates this process built without a snapshot, while it had none.
static BUILDS_WITHOUT_SNAPSHOT: AtomicUsize = AtomicUsize::new(0);
/// Whether a thread was started to make the snapshot at the lowest priority (at most one ever is).
static SNAPSHOT_STARTED: AtomicBool = AtomicBool::new(false);

/// The priority of a thread that makes the startup snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SnapshotPriority {
    /// Only the CPU the runs leave idle.
    Lowest,
    /// The runs' own: the builds without a snapshot have cost as much as making it.
    Normal,
}

/// The engine facade's switch (read when it makes each isolate) that leaves `WebAssembly` out of
/// every context. Programs never see it either way (the bootstrap removes it), so leaving it
/// out saves its installation in every isolate (about 1M instructions, 3% of a build) and keeps
/// the facade's WebAssembly runtime out of any program's reach. The `codemode` binary sets it;
/// a worker process follows its host ([`WorkerSetup`](super::process)), because a snapshot made
/// with `WebAssembly` does not fit a context without it.
pub(crate) const NO_WEBASSEMBLY_ENV: &str = "QJS_NO_WASM";

/// Whether this process's isolates are made without `WebAssembly` (see [`NO_WEBASSEMBLY_ENV`]).
pub(crate) fn webassembly_left_out() -> bool {
    std::env::var_os(NO_WEBASSEMBLY_ENV).is_some()
}

/// What a startup snapshot is valid for: this crate's version, its engine, its glue, its ops, and
/// whether its contexts have `WebAssembly`. A worker process takes its host's snapshot only when
/// their fingerprints agree.
pub(crate) fn snapshot_fingerprint() -> String {
    // It hashes the whole glue (133 KB), and a worker process's host asks for it once per run.
    static FINGERPRINTS: [OnceLock<String>; 2] = [OnceLock::new(), OnceLock::new()];
    let left_out = webassembly_left_out();
    FINGERPRINTS[usize::from(left_out)]
        .get_or_init(|| {
            let extension = ops::codemode_sandbox::init();
            fingerprint_of(left_out, extension.ops.iter().map(|op| op.name))
        })
        .clone()
}

/// `op_names` in order: a snapshot's op functions are bound to this build's ops by their place
/// in that list (isolates restored from it skip binding them again).
fn fingerprint_of<'a>(
    webassembly_left_out: bool,
    op_names: impl Iterator<Item = &'a str>,
) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for (name, source) in GLUE.iter().copied().chain(op_names.map(|name| (name, ""))) {
        // Each part ends with a 0 byte, which no name or source holds: parts never run together.
        for byte in name.bytes().chain(source.bytes()).chain([0]) {
            hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    let engine = if cfg!(feature = "v8") {
        "v8"
    } else {
        "quickjs"
    };
    let webassembly = if webassembly_left_out { "-nowasm" } else { "" };
    format!(
        "{}-{engine}{webassembly}-{hash:016x}",
        env!("CARGO_PKG_VERSION")
    )
}

/// Use `bytes` (made by a process of the same fingerprint) as this process's startup snapshot,
/// unless it already has one.
pub(crate) fn adopt_startup_snapshot(bytes: Vec<u8>) {
    let _ = SNAPSHOT.set(Ok(bytes.into_boxed_slice()));
}

/// This process makes no startup snapshot: a worker process started before its host had one,
/// which the host replaces once it has (making one here would cost 0.3 s of CPU for nothing).
/// Its isolates run the whole glue.
pub(crate) fn forgo_startup_snapshot() {
    let _ = SNAPSHOT.set(Err("this worker process awaits its host's snapshot".into()));
}

/// The process's startup snapshot, if it has been made (or adopted); never waits for it.
pub(crate) fn ready_snapshot() -> Option<&'static [u8]> {
    SNAPSHOT.get()?.as_deref().ok()
}

/// Start making the startup snapshot on a thread of its own, unless it is made, being made or
/// forgone. Isolates built meanwhile run the whole glue.
pub(crate) fn make_snapshot_in_background() {
    if SNAPSHOT.get().is_some() || SNAPSHOT_STARTED.swap(true, Ordering::SeqCst) {
        return;
    }
    spawn_snapshot_thread(SnapshotPriority::Lowest);
}

/// Make the snapshot on a thread of its own at `priority`; the first snapshot set wins.
fn spawn_snapshot_thread(priority: SnapshotPriority) {
    let spawned = std::thread::Builder::new()
        .name("codemode-snapshot".into())
        // Making the snapshot runs the engine, which needs a few MiB of stack.
        .stack_size(16 * crate::call::MIB)
        .spawn(move || {
            // Another thread may have made it meanwhile.
            if SNAPSHOT.get().is_some() {
                return;
            }
            if priority == SnapshotPriority::Lowest {
                lower_this_threads_priority();
            }
            // Made outside the lock: a caller that wants it now makes its own at its priority
            // rather than wait on this thread.
            let made = make_snapshot();
            let _ = SNAPSHOT.set(made);
        });
    if let Err(e) = spawned {
        tracing::warn!("cannot start the thread that makes the startup snapshot: {e}");
    }
}

/// Run `f` on a fresh thread with the stack the engine needs (a few MiB), and wait for it. `Err`
/// says why there is no result: the thread could not start, or `f` panicked.
pub(crate) fn on_engine_thread<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, String> {
    std::thread::Builder::new()
        .stack_size(16 * crate::call::MIB)
        .spawn(f)
        .map_err(|e| format!("cannot start an engine thread: {e}"))?
        .join()
        .map_err(|_| "the engine panicked".to_string())
}

/// Lowest CPU priority for the calling thread: making the snapshot is an optimisation for later
/// isolates, so it takes only CPU the runs going on meanwhile leave idle.
fn lower_this_threads_priority() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: plain syscalls on this thread's own id; a failure leaves the priority as is.
        let tid = unsafe { libc::syscall(libc::SYS_gettid) };
        if let Ok(tid) = libc::id_t::try_from(tid) {
            let _ = unsafe { libc::setpriority(libc::PRIO_PROCESS, tid, 19) };
        }
    }
}

/// The snapshot an isolate built now should be restored from: the ready one, or none (the
/// isolate runs the whole glue). The build that makes [`BUILDS_BEFORE_SNAPSHOT`] without one
/// starts making it at the lowest priority, and the one that makes
/// [`BUILDS_BEFORE_SNAPSHOT_AT_NORMAL_PRIORITY`] at normal priority.
fn snapshot_for_build() -> Option<&'static [u8]> {
    if let Some(done) = SNAPSHOT.get() {
        return done.as_deref().ok();
    }
    let builds = BUILDS_WITHOUT_SNAPSHOT.fetch_add(1, Ordering::SeqCst) + 1;
    match snapshot_due(builds) {
        Some(SnapshotPriority::Lowest) => make_snapshot_in_background(),
        // Exactly one build makes that count: one thread at normal priority at most.
        Some(SnapshotPriority::Normal) => spawn_snapshot_thread(SnapshotPriority::Normal),
        None => {}
    }
    None
}

/// Whether the build that makes `builds` without a snapshot should start making it, and at
/// what priority (see [`snapshot_for_build`]).
fn snapshot_due(builds: usize) -> Option<SnapshotPriority> {
    if builds == BUILDS_BEFORE_SNAPSHOT_AT_NORMAL_PRIORITY {
        Some(SnapshotPriority::Normal)
    } else if builds >= BUILDS_BEFORE_SNAPSHOT {
        Some(SnapshotPriority::Lowest)
    } else {
        None
    }
}

/// The process's startup snapshot: the one made or adopted, else made now on the calling thread
/// (at its priority: a thread making one in the background is not waited for), then shared by
/// every isolate. `Err` when the engine cannot make one (isolates then run the whole glue) or
/// the process forwent it. Needs a thread with a stack of a few MiB.
pub(crate) fn startup_snapshot() -> Result<&'static [u8], String> {
    if SNAPSHOT.get().is_none() {
        let _ = SNAPSHOT.set(make_snapshot());
    }
    match SNAPSHOT.get() {
        Some(Ok(bytes)) => Ok(bytes),
        Some(Err(e)) => Err(e.clone()),
        None => unreachable!("set just above"),
    }
}

/// Make a startup snapshot: deno_core's scripts and all of the glue, whose last script defines
/// the bootstrap each isolate then runs (`bootstrap`).
fn make_snapshot() -> Result<Box<[u8]>, String> {
    let built = std::panic::catch_unwind(|| {
        let mut runtime = JsRuntimeForSnapshot::new(RuntimeOptions {
            extensions: vec![ops::codemode_sandbox::init()],
            ..RuntimeOptions::default()
        });
        for (name, source) in GLUE {
            runtime
                .execute_script(*name, *source)
                .map_err(|e| format!("sandbox glue {name} failed: {e}"))?;
        }
        Ok::<_, String>(runtime.snapshot())
    })
    .unwrap_or_else(|_| Err("the engine panicked while making it".into()));
    if let Err(e) = &built {
        tracing::warn!("no startup snapshot, isolates run the whole glue: {e}");
    }
    built
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

/// Runs the glue's bootstrap on an isolate that holds the whole glue (99_bootstrap.js: the global
/// object shaped, the unhandled-rejection handler set), and takes what it answers: the report as
/// JSON text, `settleCalls` and `prebuildTools`. A call of the function the snapshot holds
/// compiled, where running the bootstrap as a script parsed it twice per isolate.
fn bootstrap(
    runtime: &mut JsRuntime,
) -> Result<(String, v8::Global<v8::Function>, v8::Global<v8::Function>), String> {
    deno_core::scope!(scope, runtime);
    v8::tc_scope!(let scope, scope);
    let global = scope.get_current_context().global(scope);
    let name = v8::String::new(scope, "__codemodeInternal").ok_or("out of engine strings")?;
    let internal = global
        .get(scope, name.into())
        .and_then(|value| v8::Local::<v8::Object>::try_from(value).ok())
        .ok_or("the sandbox glue did not run")?;
    let name = v8::String::new(scope, "bootstrap").ok_or("out of engine strings")?;
    let function = internal
        .get(scope, name.into())
        .and_then(|value| v8::Local::<v8::Function>::try_from(value).ok())
        .ok_or("the sandbox glue has no bootstrap")?;
    let Some(answer) = function.call(scope, internal.into(), &[]) else {
        let message = match scope.exception() {
            Some(exception) => deno_core::error::JsError::from_v8_exception(scope, exception)
                .exception_message
                .clone(),
            None => "it was stopped".to_string(),
        };
        return Err(format!("the sandbox bootstrap failed: {message}"));
    };
    let parts = v8::Local::<v8::Array>::try_from(answer)
        .map_err(|_| "the sandbox bootstrap did not answer an array".to_string())?;
    let report = parts
        .get_index(scope, 0)
        .map(|report| report.to_rust_string_lossy(scope))
        .unwrap_or_default();
    let function = |index: u32, name: &str| {
        parts
            .get_index(scope, index)
            .and_then(|value| v8::Local::<v8::Function>::try_from(value).ok())
            .map(|function| v8::Global::new(scope, function))
            .ok_or_else(|| format!("the sandbox bootstrap did not answer `{name}`"))
    };
    let settle = function(1, "settleCalls")?;
    let prebuild = function(2, "prebuildTools")?;
    Ok((report, settle, prebuild))
}

impl Engine {
    /// An isolate restored from the process's startup snapshot when it has one, shaped by the
    /// glue's bootstrap; the whole glue runs first instead until the snapshot is made (see
    /// [`BUILDS_BEFORE_SNAPSHOT`]), or where none can be.
    pub(crate) fn new(heap_bytes: usize) -> Result<Engine, String> {
        Engine::with_snapshot(heap_bytes, snapshot_for_build())
    }

    /// An isolate restored from `snapshot`, or built by the whole glue without one: the two
    /// must be the same to the program (tests build both).
    pub(crate) fn with_snapshot(
        heap_bytes: usize,
        snapshot: Option<&'static [u8]>,
    ) -> Result<Engine, String> {
        let params = v8::CreateParams::default().heap_limits(0, heap_bytes);
        let mut runtime = JsRuntime::new(RuntimeOptions {
            extensions: vec![ops::codemode_sandbox::init()],
            create_params: Some(params),
            startup_snapshot: snapshot,
            // The snapshot holds every op's function, made by this very build (its fingerprint),
            // and the glue captured those: binding them all again would cost 1.8M instructions
            // per isolate for functions no program can reach (`Deno` goes in the bootstrap).
            skip_op_registration: true,
            module_loader: Some(std::rc::Rc::new(super::no_imports::NoImports)),
            ..RuntimeOptions::default()
        });
        runtime
            .v8_isolate()
            .set_prepare_stack_trace_callback(prepare_stack_trace);
        if snapshot.is_none() {
            for (name, source) in GLUE {
                runtime
                    .execute_script(*name, *source)
                    .map_err(|e| format!("sandbox glue {name} failed: {e}"))?;
            }
        }
        let (report_json, settle_calls, prebuild_tools) = bootstrap(&mut runtime)?;
        let report: BootstrapReport = serde_json::from_str(&report_json)
            .map_err(|e| format!("sandbox bootstrap report unreadable ({e}): {report_json}"))?;
        Ok(Engine {
            runtime,
            heap_bytes,
            report,
            settle_calls,
            prebuild_tools,
            tools_prebuilt_for: None,
            ran_with_catalog: None,
        })
    }

    /// Builds now, while the isolate waits for its run, the `tools` object of a run whose
    /// catalog is `paths` (see `prebuildTools` in 06_tools.js). If the engine refuses, the run
    /// builds its own, as without this.
    pub(crate) fn prebuild_tools(&mut self, paths: Vec<String>) {
        let built = {
            deno_core::scope!(scope, &mut self.runtime);
            let names: Option<Vec<v8::Local<v8::Value>>> = paths
                .iter()
                .map(|path| v8::String::new(scope, path).map(Into::into))
                .collect();
            let prebuild = v8::Local::new(scope, &self.prebuild_tools);
            v8::tc_scope!(let scope, scope);
            let built = names.and_then(|names| {
                let catalog = v8::Array::new_with_elements(scope, &names).into();
                let undefined = v8::undefined(scope).into();
                prebuild.call(scope, undefined, &[catalog])
            });
            built.is_some() && !scope.has_caught()
        };
        self.tools_prebuilt_for = built.then_some(paths);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::call::Limits;
    use crate::sandbox::execute::execute;
    use crate::sandbox::watchdog::Watchdog;

    #[test]
    fn the_intl_implementation_fits_in_a_raw_template() {
        // It travels as `String.raw` text: a backtick would end it, a `${` would splice.
        let source = include_str!("../../runtime-js/intl.js");
        assert!(!source.contains('`'), "runtime-js/intl.js holds a backtick");
        assert!(
            !source.contains("${"),
            "runtime-js/intl.js holds a dollar-brace"
        );
    }

    #[test]
    fn a_snapshot_with_webassembly_and_one_without_have_different_fingerprints() {
        // A worker adopts its host's snapshot only on equal fingerprints: one made with
        // `WebAssembly` in its contexts must never reach an engine that leaves it out.
        let ops = || ["op_a", "op_b"].into_iter();
        let with = fingerprint_of(false, ops());
        let without = fingerprint_of(true, ops());
        assert_ne!(with, without);
        assert!(
            without.contains("-quickjs-nowasm-") || cfg!(feature = "v8"),
            "{without}"
        );
        assert_eq!(
            with,
            fingerprint_of(false, ops()),
            "the same engine, the same fingerprint"
        );
    }

    #[test]
    fn builds_whose_ops_differ_have_different_fingerprints() {
        // A restored isolate keeps the snapshot's op functions, bound by their place in the op
        // list: a worker of another op list must make its own snapshot.
        let base = fingerprint_of(false, ["op_a", "op_b"].into_iter());
        for other in [&["op_b", "op_a"][..], &["op_a"], &["op_a", "op_b", "op_c"]] {
            assert_ne!(
                base,
                fingerprint_of(false, other.iter().copied()),
                "{other:?}"
            );
        }
        assert_eq!(
            snapshot_fingerprint(),
            snapshot_fingerprint(),
            "kept once made"
        );
    }

    #[test]
    fn the_snapshot_is_due_at_the_lowest_priority_then_once_at_normal_priority() {
        let due: Vec<_> = (1..=BUILDS_BEFORE_SNAPSHOT_AT_NORMAL_PRIORITY + 2)
            .map(snapshot_due)
            .collect();
        let lowest = Some(SnapshotPriority::Lowest);
        let normal = Some(SnapshotPriority::Normal);
        assert!(
            due[..BUILDS_BEFORE_SNAPSHOT - 1]
                .iter()
                .all(Option::is_none)
        );
        assert_eq!(due[BUILDS_BEFORE_SNAPSHOT - 1], lowest);
        assert_eq!(
            due.iter().filter(|&&d| d == normal).count(),
            1,
            "one thread at normal priority at most"
        );
        assert_eq!(due[BUILDS_BEFORE_SNAPSHOT_AT_NORMAL_PRIORITY - 1], normal);
        assert_eq!(due[BUILDS_BEFORE_SNAPSHOT_AT_NORMAL_PRIORITY], lowest);
    }

    /// What a program can see of its isolate: the globals, their prototype chain's names, the
    /// glue's console, timers, errors and serialisation.
    const PROBE: &str = r#"
        // Each own property: its kind and attributes, sorted by name.
        const shape = (o) => Object.getOwnPropertyNames(o).sort().map((k) => {
            const d = Object.getOwnPropertyDescriptor(o, k);
            return [k, "value" in d ? typeof d.value : "accessor", d.writable, d.enumerable, d.configurable];
        });
        const intrinsic = (name) => {
            const value = globalThis[name];
            const proto = value.prototype;
            return [name, Object.isFrozen(value), shape(value), proto ? [Object.isFrozen(proto), shape(proto)] : null];
        };
        console.log("a log", { nested: [1, "two"] }, new Map([[1, 2]]));
        const timer = await new Promise((r) => setTimeout(() => r("fired"), 1));
        let error;
        try { null.x } catch (e) { error = String(e) }
        return {
            globals: shape(globalThis),
            proto: shape(Object.getPrototypeOf(globalThis)),
            intrinsics: ["Object", "Array", "Promise", "JSON", "Math", "console", "ToolError", "Error",
                         "Function", "String", "Map", "URL", "TextEncoder", "Date", "Intl", "Number",
                         "BigInt"].map(intrinsic),
            dates: [
                new Date(Date.UTC(2024, 2, 5, 14, 7)).toLocaleString("en-US", { timeZone: "UTC", month: "long", day: "numeric" }),
                new Intl.DateTimeFormat("en-US", { timeZone: "Asia/Kolkata", timeStyle: "short" }).format(0),
                (1234.5).toLocaleString(),
                (12345n).toLocaleString(),
            ],
            tools: [typeof tools, Object.isFrozen(tools)],
            timer,
            error,
            json: JSON.stringify({ a: [1, 2], b: "c" }),
        };
    "#;

    /// A rejection nobody handles, after a line the error must point past.
    const UNHANDLED: &str = "const x = 1;\nPromise.reject(new RangeError('nobody handles this'));\nawait new Promise((r) => setTimeout(r, 5));\nreturn x;";

    /// The outcome of `program` run on `engine` with the default limits.
    fn run_on(
        engine: &mut Engine,
        program: &str,
        tools: Option<crate::sandbox::host::RunTools>,
    ) -> crate::sandbox::RunOutcome {
        let limits = Limits::default();
        let program = crate::sandbox::prepare(program, &limits).unwrap();
        let watchdog = Watchdog::spawn("test-watchdog".into(), None).unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(execute(engine, &program, &limits, tools, &watchdog, |_| {}))
    }

    /// The bootstrap's report, and the outcome of `program` minus its timing, on an isolate built
    /// with `snapshot` (or by the whole glue).
    fn observed(snapshot: Option<&'static [u8]>, program: &'static str) -> (String, String) {
        on_engine_thread(move || {
            let limits = Limits::default();
            let mut engine = Engine::with_snapshot(limits.heap_bytes, snapshot).unwrap();
            let report = format!("{:?}", engine.report);
            let mut outcome = run_on(&mut engine, program, None);
            outcome.stats.wall_ms = 0.0;
            (report, outcome.to_json().to_string())
        })
        .unwrap()
    }

    /// A host whose every tool answers with the path it was called by.
    struct PathEcho(Vec<String>);

    impl crate::sandbox::ToolHost for PathEcho {
        fn paths(&self) -> Vec<String> {
            self.0.clone()
        }

        fn call(
            &self,
            request: crate::sandbox::ToolRequest,
        ) -> futures::future::BoxFuture<
            'static,
            Result<crate::sandbox::ToolReply, crate::call::CallError>,
        > {
            let answer = match request.wave {
                Some(wave) => serde_json::json!([request.path, wave]),
                None => serde_json::json!(request.path),
            };
            let reply = crate::sandbox::ToolReply::new(answer);
            Box::pin(async move { Ok(reply) })
        }
    }

    /// What a program sees of `tools`: its names and their shape, and which path each call
    /// reaches, a name outside the catalog included.
    const TOOLS_PROBE: &str = r#"
        const names = (o) => Object.getOwnPropertyNames(o).sort();
        const seen = {
            names: names(tools),
            frozen: Object.isFrozen(tools) && Object.isFrozen(tools.ns),
            ns: names(tools.ns),
            fn: [typeof tools.alpha, tools.ns.two.name, Object.isFrozen(tools.ns.two)],
            absent: typeof tools.gamma,
        };
        const calls = [];
        for (const call of [() => tools.alpha({}), () => tools.ns.two({}), () => tools.beta({}), () => tools.gamma({})]) {
            try { calls.push(await call()) } catch (e) { calls.push(String(e)) }
        }
        return { seen, calls };
    "#;

    /// The outcome of [`TOOLS_PROBE`] for a run whose host has `catalog`, on an isolate whose
    /// `tools` were prebuilt for `prebuilt` (and which the host then takes to be for `claimed`).
    fn tools_seen(
        prebuilt: Option<&[&str]>,
        claimed: Option<&[&str]>,
        catalog: &[&str],
    ) -> serde_json::Value {
        seen_by(TOOLS_PROBE, Default::default(), prebuilt, claimed, catalog)
    }

    /// The value `program` returns, run with `extensions` (see [`tools_seen`]).
    fn seen_by(
        program: &'static str,
        extensions: crate::call::Extensions,
        prebuilt: Option<&[&str]>,
        claimed: Option<&[&str]>,
        catalog: &[&str],
    ) -> serde_json::Value {
        let owned = |paths: &[&str]| paths.iter().map(|p| p.to_string()).collect::<Vec<_>>();
        let (prebuilt, claimed, catalog) =
            (prebuilt.map(owned), claimed.map(owned), owned(catalog));
        on_engine_thread(move || {
            let limits = Limits::default();
            let mut engine = Engine::new(limits.heap_bytes).unwrap();
            if let Some(prebuilt) = prebuilt {
                engine.prebuild_tools(prebuilt.clone());
                assert_eq!(engine.tools_prebuilt_for, Some(prebuilt));
            }
            if let Some(claimed) = claimed {
                engine.tools_prebuilt_for = Some(claimed);
            }
            let tools = crate::sandbox::host::RunTools {
                host: std::sync::Arc::new(PathEcho(catalog.clone())),
                run_id: "r_prebuilt".into(),
                extensions,
            };
            let outcome = run_on(&mut engine, program, Some(tools));
            assert_eq!(
                engine.tools_prebuilt_for, None,
                "a run takes what was prebuilt"
            );
            assert_eq!(engine.ran_with_catalog, Some(catalog));
            outcome
                .value_json()
                .unwrap_or_else(|| serde_json::Value::String(outcome.to_json()))
        })
        .unwrap()
    }

    const CATALOG: &[&str] = &["alpha", "ns.one", "ns.two", "beta"];

    #[test]
    fn a_run_on_an_isolate_with_prebuilt_tools_sees_what_it_would_have_built() {
        let built_at_run = tools_seen(None, None, CATALOG);
        assert_eq!(
            built_at_run["seen"],
            serde_json::json!({"names": ["alpha", "beta", "ns"], "frozen": true, "ns": ["one", "two"], "fn": ["function", "ns.two", true], "absent": "function"}),
            "{built_at_run}"
        );
        assert_eq!(
            built_at_run["calls"],
            serde_json::json!(["alpha", "ns.two", "beta", "gamma"])
        );
        assert_eq!(tools_seen(Some(CATALOG), None, CATALOG), built_at_run);
    }

    #[test]
    fn a_run_of_another_catalog_builds_its_own_tools() {
        // Prebuilt for `CATALOG`; the run's host has another, where index 0 is `beta`: its
        // `alpha` must be an unknown name (reaching the host as `alpha`), never index 0.
        let other = tools_seen(Some(CATALOG), None, &["beta", "ns.two"]);
        assert_eq!(
            other["seen"]["names"],
            serde_json::json!(["beta", "ns"]),
            "{other}"
        );
        assert_eq!(other["seen"]["ns"], serde_json::json!(["two"]));
        assert_eq!(
            other["calls"],
            serde_json::json!(["alpha", "ns.two", "beta", "gamma"])
        );
    }

    #[test]
    fn the_run_takes_the_prebuilt_object_when_the_engine_records_it_for_its_catalog() {
        // White box: the isolate holds `tools` for `alpha` alone while the engine records them
        // as the run's catalog's. The run sees `alpha` alone: it took the prebuilt object.
        let taken = tools_seen(Some(&["alpha"]), Some(CATALOG), CATALOG);
        assert_eq!(
            taken["seen"]["names"],
            serde_json::json!(["alpha"]),
            "{taken}"
        );
    }

    #[test]
    fn waves_are_tracked_by_prebuilt_tools_of_a_run_that_asks_for_them() {
        // Whether a run tracks waves is set by the run, not baked into its prebuilt `tools`.
        const WAVES: &str = r#"
            const a = await tools.alpha({});
            const [b, c] = await Promise.all([tools.beta({}), tools.ns.one({})]);
            return [a, b, c, await tools.alpha({})];
        "#;
        let mut extensions = crate::call::Extensions::default();
        extensions.insert(crate::call::TrackWaves);
        let waves = seen_by(WAVES, extensions, Some(CATALOG), None, CATALOG);
        assert_eq!(
            waves,
            serde_json::json!([["alpha", 1], ["beta", 2], ["ns.one", 2], ["alpha", 3]])
        );
        let untracked = seen_by(WAVES, Default::default(), Some(CATALOG), None, CATALOG);
        assert_eq!(
            untracked,
            serde_json::json!(["alpha", "beta", "ns.one", "alpha"])
        );
    }

    #[test]
    fn an_isolate_restored_from_the_snapshot_is_the_one_the_whole_glue_builds() {
        let snapshot = on_engine_thread(startup_snapshot)
            .unwrap()
            .expect("the engine makes a startup snapshot");
        let (glue_report, glue_outcome) = observed(None, PROBE);
        let (restored_report, restored_outcome) = observed(Some(snapshot), PROBE);
        assert!(glue_outcome.contains(r#""status":"ok""#), "{glue_outcome}");
        assert!(glue_outcome.contains("fired"), "{glue_outcome}");
        // Date's, Number's and BigInt's toLocale*String are set on every isolate (a restored one
        // gets the engine's back).
        assert!(
            glue_outcome.contains(r#""dates":["March 5","5:30 AM","1,234.5","12,345"]"#),
            "{glue_outcome}"
        );
        assert_eq!(glue_report, restored_report);
        assert_eq!(glue_outcome, restored_outcome);
        let (_, glue_failure) = observed(None, UNHANDLED);
        let (_, restored_failure) = observed(Some(snapshot), UNHANDLED);
        assert!(
            glue_failure.contains("nobody handles this"),
            "{glue_failure}"
        );
        assert_eq!(glue_failure, restored_failure);
    }
}

//! Process isolation: programs run in worker processes of the `codemode` binary, every tool
//! call crosses back to the host's pipeline, and a worker that dies ends only its run
//! (`crashed`) while a fresh one takes its place.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use codemode::pipeline::{
    ApprovalDecision, ApprovalRequest, Approver, ContextEntry, HookDecision, HookError, PostAction,
    post_hook_fn, pre_hook_fn,
};
use codemode::sandbox::{
    Isolation, Limits, ProcessConfig, RunOptions, RunStatus, Sandbox, SandboxConfig, WORKER_ARG,
};
use codemode::{Harness, ToolDefinition};
use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::common::{process_sandbox, short, worker_program};
use crate::support::{echo_tool, registry};

/// A sandbox whose workers are started through a link with a name of its own, so the test can
/// find (and kill) exactly its workers.
struct Watched {
    sandbox: Sandbox,
    program: PathBuf,
    _dir: tempfile::TempDir,
}

fn watched(workers: usize, configure: impl FnOnce(&mut ProcessConfig)) -> Watched {
    let dir = tempfile::tempdir().unwrap();
    let program = dir.path().join("codemode-worker-under-test");
    std::os::unix::fs::symlink(worker_program(), &program).unwrap();
    let mut process = ProcessConfig::with_program(&program);
    configure(&mut process);
    let sandbox = Sandbox::new(SandboxConfig {
        workers,
        isolation: Isolation::Process(process),
        ..SandboxConfig::default()
    })
    .unwrap();
    Watched {
        sandbox,
        program,
        _dir: dir,
    }
}

/// Pids of live worker processes started as `program`.
fn workers_of(program: &Path) -> Vec<u32> {
    let wanted = format!("{}\0{WORKER_ARG}", program.display());
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            let state = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            // Zombies (state Z) are dead workers not reaped yet.
            let zombie = state.rsplit(')').next()?.split_whitespace().next()? == "Z";
            (String::from_utf8_lossy(&cmdline).starts_with(&wanted) && !zombie).then_some(pid)
        })
        .collect()
}

async fn wait_for_workers(program: &Path, count: usize) -> Vec<u32> {
    let started = Instant::now();
    loop {
        let pids = workers_of(program);
        if pids.len() >= count || started.elapsed() > Duration::from_secs(20) {
            return pids;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A tool call of a process-isolated run runs on the host's runtime of worker processes, whose
/// timers a tick aligner keeps precise and on their ticks (`tick.rs`): Linux then wakes its
/// timed waits when due, not up to 50 µs later (the default timer slack), and W3 in worker
/// processes ends 1.3 ms sooner. The slack says which runtime the call ran on.
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_of_a_process_isolated_run_runs_on_the_hosts_precise_runtime() {
    let tool = ToolDefinition::builder("slack")
        .description("the timer slack of the thread the call runs on, in nanoseconds")
        .execute(|_args: Value, _exec| async move {
            // SAFETY: PR_GET_TIMERSLACK takes no argument and reads this thread's own slack.
            let slack = unsafe { libc::prctl(libc::PR_GET_TIMERSLACK) };
            Ok(json!({ "slack": slack, "thread": std::thread::current().name() }))
        })
        .build()
        .unwrap();
    let harness = Harness::builder()
        .sandbox(process_sandbox().clone())
        .build(registry([tool]))
        .unwrap();
    let outcome = harness
        .run("const a = await tools.slack({}); await new Promise((r) => setTimeout(r, 5)); return [a, await tools.slack({})];")
        .await
        .unwrap();
    let value = outcome
        .value_json()
        .unwrap_or_else(|| panic!("{}", outcome.to_json()));
    let on_the_hosts_runtime = json!({ "slack": 1, "thread": "codemode-worker-processes" });
    assert_eq!(value, json!([on_the_hosts_runtime, on_the_hosts_runtime]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_program_runs_in_a_worker_process_and_its_calls_reach_the_host_pipeline() {
    let seen: Arc<Mutex<Vec<Value>>> = Arc::default();
    let recorded = Arc::clone(&seen);
    let tool = ToolDefinition::builder("remember")
        .description("records its arguments in the host process")
        .execute(move |args: Value, _exec| {
            let recorded = Arc::clone(&recorded);
            async move {
                recorded.lock().unwrap().push(args.clone());
                Ok(json!({ "pid": std::process::id(), "got": args }))
            }
        })
        .build()
        .unwrap();
    let harness = Harness::builder()
        .sandbox(process_sandbox().clone())
        .inner(|pipeline| {
            pipeline.pre_hook(pre_hook_fn("count", |call| {
                if call.args.get("x") == Some(&json!(13)) {
                    HookDecision::Deny {
                        reason: "unlucky".into(),
                    }
                } else {
                    HookDecision::Allow
                }
            }))
        })
        .build(registry([tool, echo_tool("echo")]))
        .unwrap();
    let outcome = harness
        .run(
            r#"
            const a = await tools.remember({ x: 1 });
            let denied;
            try { await tools.remember({ x: 13 }); } catch (e) { denied = [e.code, e.details.by]; }
            const [b, c] = await Promise.all([tools.remember({ x: 2 }), tools.echo({ text: "z" })]);
            console.log("from the worker");
            return { hostPid: a.pid, got: [a.got.x, b.got.x], denied, echoed: c };
            "#,
        )
        .await
        .unwrap();
    let value = outcome
        .value_json()
        .unwrap_or_else(|| panic!("{}", outcome.to_json()));
    // The tool body ran in the host process, not in the worker.
    assert_eq!(value["hostPid"], json!(std::process::id()));
    assert_eq!(value["got"], json!([1, 2]));
    assert_eq!(value["denied"], json!(["DENIED", "hook"]));
    assert_eq!(value["echoed"], json!({ "echo": "z" }));
    assert_eq!(outcome.logs[0].text, "from the worker");
    assert_eq!(outcome.stats.tool_calls, 4);
    assert_eq!(seen.lock().unwrap().len(), 2, "the denied call never ran");
}

/// Approves after a delay longer than the run's deadline.
struct SlowApprover;

impl Approver for SlowApprover {
    fn approve<'a>(
        &'a self,
        _request: &'a ApprovalRequest<'a>,
    ) -> BoxFuture<'a, Result<ApprovalDecision, HookError>> {
        async {
            tokio::time::sleep(Duration::from_millis(600)).await;
            Ok(ApprovalDecision::Approve)
        }
        .boxed()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_wait_pauses_the_deadline_of_the_worker_process() {
    let harness = Harness::builder()
        .sandbox(process_sandbox().clone())
        .limits(Limits::default().with_deadline(Duration::from_millis(300)))
        .inner(|pipeline| {
            pipeline
                .pre_hook(pre_hook_fn("ask", |_call| HookDecision::Ask {
                    reason: "every call".into(),
                }))
                .approver(SlowApprover)
        })
        .build(registry([echo_tool("echo")]))
        .unwrap();
    let outcome = harness
        .run("return await tools.echo({ text: 'ok' })")
        .await
        .unwrap();
    assert_eq!(
        outcome.value_json(),
        Some(json!({"echo": "ok"})),
        "{}",
        outcome.to_json()
    );
    // Without the pause, the 300 ms deadline would have ended the run during the 600 ms wait.
    let stalled = harness.run("while (true) {}").await.unwrap();
    assert_eq!(stalled.status, RunStatus::Timeout, "{}", stalled.to_json());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limits_and_cancellation_hold_in_a_worker_process() {
    let sandbox = process_sandbox();
    let looped = sandbox
        .run_with("while (true) {}", RunOptions::new(short(300)))
        .await;
    assert_eq!(looped.status, RunStatus::Timeout, "{}", looped.to_json());
    let heap = Limits {
        heap_bytes: 32 * codemode::sandbox::MIB,
        ..Limits::default()
    };
    let bomb = sandbox
        .run_with(
            "const a = []; while (true) a.push(new Array(1e5).fill(1));",
            RunOptions::new(heap),
        )
        .await;
    assert_eq!(bomb.status, RunStatus::OutOfMemory, "{}", bomb.to_json());
    let cancel = CancellationToken::new();
    let stopper = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        stopper.cancel();
    });
    let cancelled = sandbox
        .run_with(
            "await new Promise(r => setTimeout(r, 20000)); return 1",
            RunOptions::new(Limits::default()).with_cancel(cancel),
        )
        .await;
    assert_eq!(
        cancelled.status,
        RunStatus::Cancelled,
        "{}",
        cancelled.to_json()
    );
    let syntax = sandbox.run("return (").await;
    assert_eq!(syntax.status, RunStatus::Error);
    assert_eq!(syntax.error.unwrap().name, "SyntaxError");
    assert_eq!(
        sandbox.run("return 6 * 7").await.value_json(),
        Some(json!(42))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_worker_ends_its_run_as_crashed_and_the_next_run_succeeds() {
    let under_test = watched(1, |_| {});
    let sandbox = under_test.sandbox.clone();
    let run = tokio::spawn(async move {
        sandbox
            .run("console.log('about to wait'); await new Promise(r => setTimeout(r, 20000)); return 1")
            .await
    });
    let pids = wait_for_workers(&under_test.program, 1).await;
    assert_eq!(pids.len(), 1, "one worker process: {pids:?}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    // SAFETY: a signal to a child process this test started.
    unsafe { libc::kill(pids[0] as i32, libc::SIGKILL) };
    let outcome = run.await.unwrap();
    assert_eq!(outcome.status, RunStatus::Crashed, "{}", outcome.to_json());
    let error = outcome.error.unwrap();
    assert_eq!(error.name, "WorkerCrashed");
    assert!(
        error.message.contains("killed by signal 9 (SIGKILL)"),
        "{}",
        error.message
    );
    let next = under_test.sandbox.run("return 'still serving'").await;
    assert_eq!(
        next.value_json(),
        Some(json!("still serving")),
        "{}",
        next.to_json()
    );
    let replacement = workers_of(&under_test.program);
    assert!(
        !replacement.contains(&pids[0]),
        "the dead worker was replaced: {replacement:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_that_faults_says_how_it_died() {
    let under_test = watched(1, |_| {});
    let sandbox = under_test.sandbox.clone();
    let run = tokio::spawn(async move {
        sandbox
            .run("await new Promise(r => setTimeout(r, 20000))")
            .await
    });
    let pids = wait_for_workers(&under_test.program, 1).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    // SAFETY: a signal to a child process this test started.
    // (A SIGSEGV sent with kill is survived: Rust's stack-overflow handler ignores faults
    // that are not in a guard page. An abort is what a failed engine assertion does.)
    unsafe { libc::kill(pids[0] as i32, libc::SIGABRT) };
    let outcome = run.await.unwrap();
    assert_eq!(outcome.status, RunStatus::Crashed, "{}", outcome.to_json());
    assert!(
        outcome
            .error
            .unwrap()
            .message
            .contains("signal 6 (SIGABRT)"),
        "the signal is named"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_are_recycled_after_their_runs() {
    let under_test = watched(1, |process| process.runs_per_worker = 2);
    let mut seen = std::collections::BTreeSet::new();
    for i in 0..6 {
        seen.extend(wait_for_workers(&under_test.program, 1).await);
        let outcome = under_test.sandbox.run(&format!("return {i}")).await;
        assert_eq!(
            outcome.value_json(),
            Some(json!(i)),
            "{}",
            outcome.to_json()
        );
    }
    assert!(
        seen.len() >= 3,
        "6 runs at 2 runs per worker take at least 3 workers: {seen:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_program_that_is_not_a_worker_is_reported_clearly() {
    let missing = Sandbox::new(SandboxConfig {
        workers: 1,
        isolation: Isolation::Process(ProcessConfig::with_program("/nonexistent/codemode")),
        ..SandboxConfig::default()
    })
    .unwrap();
    let outcome = missing.run("return 1").await;
    assert_eq!(outcome.status, RunStatus::Error);
    let message = outcome.error.unwrap().message;
    assert!(
        message.contains("cannot start the sandbox worker process `/nonexistent/codemode`"),
        "{message}"
    );
    let not_a_worker = Sandbox::new(SandboxConfig {
        workers: 1,
        isolation: Isolation::Process(ProcessConfig::with_program("/bin/true")),
        ..SandboxConfig::default()
    })
    .unwrap();
    let outcome = not_a_worker.run("return 1").await;
    assert_eq!(outcome.status, RunStatus::Error);
    let message = outcome.error.unwrap().message;
    assert!(
        message.contains("did not complete its handshake")
            && message.contains("serve_worker_if_requested"),
        "{message}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_cannot_open_files_make_sockets_or_start_programs_and_takes_the_hosts_snapshot() {
    let config = ProcessConfig::with_program(worker_program());
    let confinement = codemode::sandbox::probe_worker(&config, Limits::default().heap_bytes)
        .await
        .unwrap();
    eprintln!("{confinement:?}");
    assert!(confinement.no_new_privs, "{confinement:?}");
    assert!(confinement.seccomp, "{confinement:?}");
    assert!(confinement.open.starts_with("refused"), "{confinement:?}");
    assert!(confinement.socket.starts_with("refused"), "{confinement:?}");
    assert!(confinement.exec.starts_with("refused"), "{confinement:?}");
    assert_eq!(confinement.address_space_bytes, config.address_space_bytes);
    // The host handed its startup snapshot over: the worker did not make its own.
    assert!(confinement.snapshot_from_host, "{confinement:?}");
    // Its engine is the host's (the snapshot's fingerprint): the host hands it structured
    // results in the engine's binary format.
    assert!(
        confinement
            .engine
            .starts_with(&format!("{}-quickjs-", env!("CARGO_PKG_VERSION"))),
        "{confinement:?}"
    );
    // And a worker so confined still runs programs, timers and tool calls.
    let outcome = process_sandbox()
        .run("await new Promise(r => setTimeout(r, 5)); return [new Date(0).getTime(), Math.max(1, 2)]")
        .await;
    assert_eq!(
        outcome.value_json(),
        Some(json!([0, 2])),
        "{}",
        outcome.to_json()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_end_of_one_run_never_cancels_the_calls_of_the_next() {
    let under_test = watched(1, |_| {});
    let slow = ToolDefinition::builder("slow")
        .description("takes its time")
        .execute(|_args: Value, _exec| async {
            tokio::time::sleep(Duration::from_millis(200)).await;
            Ok(json!("slow"))
        })
        .build()
        .unwrap();
    let harness = Harness::builder()
        .sandbox(under_test.sandbox.clone())
        .build(registry([slow, echo_tool("echo")]))
        .unwrap();
    for round in 0..5 {
        // Ends with a call in flight (the host cancels it as the run ends), or with all its
        // calls answered: either way, its end is told to the host, and that notice must not
        // reach the next run, even when the worker sends it late.
        let code = if round % 2 == 0 {
            "tools.slow({}).catch(() => {}); return 1"
        } else {
            "await tools.echo({ text: 'x' }); return 1"
        };
        let first = harness.run(code).await.unwrap();
        assert_eq!(first.value_json(), Some(json!(1)), "{}", first.to_json());
        let second = harness
            .run("return await tools.echo({ text: 'next' })")
            .await
            .unwrap();
        assert_eq!(
            second.value_json(),
            Some(json!({"echo": "next"})),
            "round {round}: {}",
            second.to_json()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_whose_engine_cannot_be_stopped_is_killed_and_replaced() {
    let under_test = watched(1, |_| {});
    let pids = wait_for_workers(&under_test.program, 1).await;
    let outcome = under_test
        .sandbox
        .run_with(
            // A forking microtask flood: the engine's termination is not sticky, so the flood
            // outgrows it, and the worker's watchdog gives the engine thread up.
            "const f = () => { Promise.resolve().then(f); Promise.resolve().then(f); }; f(); await new Promise(() => {});",
            RunOptions::new(short(300)),
        )
        .await;
    assert!(
        matches!(outcome.status, RunStatus::Timeout | RunStatus::OutOfMemory),
        "{}",
        outcome.to_json()
    );
    assert!(
        outcome
            .error
            .as_ref()
            .unwrap()
            .message
            .contains("abandoned"),
        "{}",
        outcome.to_json()
    );
    // The worker whose engine thread is stuck must not live on, burning a core.
    let started = Instant::now();
    while workers_of(&under_test.program).contains(&pids[0]) {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the stuck worker {} still runs",
            pids[0]
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let next = under_test.sandbox.run("return 'fresh'").await;
    assert_eq!(
        next.value_json(),
        Some(json!("fresh")),
        "{}",
        next.to_json()
    );
}

/// Approves after `delay`.
struct DelayedApprover(Duration);

impl Approver for DelayedApprover {
    fn approve<'a>(
        &'a self,
        _request: &'a ApprovalRequest<'a>,
    ) -> BoxFuture<'a, Result<ApprovalDecision, HookError>> {
        let delay = self.0;
        async move {
            tokio::time::sleep(delay).await;
            Ok(ApprovalDecision::Approve)
        }
        .boxed()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_waiting_on_approvals_or_tools_do_not_keep_other_runs_from_starting() {
    // Two workers; two runs wait 4 s on an approver, six wait 1 s on a tool.
    let under_test = watched(2, |_| {});
    let slow = ToolDefinition::builder("slow")
        .description("takes a second")
        .execute(|_args: Value, _exec| async {
            tokio::time::sleep(Duration::from_secs(1)).await;
            Ok(json!("done"))
        })
        .parallel_safe()
        .build()
        .unwrap();
    let harness = Harness::builder()
        .sandbox(under_test.sandbox.clone())
        .inner(|pipeline| {
            pipeline
                .pre_hook(pre_hook_fn("ask-echo", |call| {
                    if call.path == "echo" {
                        HookDecision::Ask {
                            reason: "needs a yes".into(),
                        }
                    } else {
                        HookDecision::Allow
                    }
                }))
                .approver(DelayedApprover(Duration::from_secs(4)))
        })
        .build(registry([slow, echo_tool("echo")]))
        .unwrap();
    wait_for_workers(&under_test.program, 2).await;
    let started = Instant::now();
    let approvals: Vec<_> = (0..2)
        .map(|_| {
            let harness = harness.clone();
            tokio::spawn(async move { harness.run("return await tools.echo({ text: 'a' })").await })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let quick: Vec<_> = (0..6)
        .map(|_| {
            let harness = harness.clone();
            tokio::spawn(async move {
                let outcome = harness.run("return await tools.slow({})").await.unwrap();
                (outcome, Instant::now())
            })
        })
        .collect();
    for run in quick {
        let (outcome, finished) = run.await.unwrap();
        assert_eq!(
            outcome.value_json(),
            Some(json!("done")),
            "{}",
            outcome.to_json()
        );
        let took = finished - started;
        eprintln!("quick run took {took:?}");
        assert!(
            took < Duration::from_millis(3000),
            "a run that only needs a 1 s tool finished after {took:?}: it waited behind the approvals"
        );
    }
    for run in approvals {
        let outcome = run.await.unwrap().unwrap();
        assert_eq!(
            outcome.value_json(),
            Some(json!({"echo": "a"})),
            "{}",
            outcome.to_json()
        );
    }
}

/// CPU time (user + system) of a process so far, from `/proc/PID/stat`.
fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // The fields after the command name: state is the first, utime the 12th, stime the 13th.
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap()
        .split_whitespace()
        .collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    // SAFETY: sysconf only reads a system constant.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as u64;
    Duration::from_millis(ticks * 1000 / per_second)
}

/// A worker's engine thread waits for the host's answer awake for a moment before it parks
/// (`answer_wait.rs`): a moment, not the whole call. Two slow calls, 800 ms of waiting, cost the
/// worker a few milliseconds of CPU between the first's start and the second's end (read by the
/// tool while the run is on), not the 800 ms a wait spent spinning would.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_waiting_on_a_slow_call_does_not_spin_through_it() {
    let under_test = watched(1, |_| {});
    let worker: Arc<std::sync::OnceLock<u32>> = Arc::default();
    let readings: Arc<Mutex<Vec<Duration>>> = Arc::default();
    let (pid, read) = (Arc::clone(&worker), Arc::clone(&readings));
    let slow = ToolDefinition::builder("slow")
        .description("answers after 400 ms")
        .execute(move |_args: Value, _exec| {
            let (pid, read) = (Arc::clone(&pid), Arc::clone(&read));
            async move {
                let pid = *pid.get().expect("the worker is known before the run");
                read.lock().unwrap().push(cpu_time(pid));
                tokio::time::sleep(Duration::from_millis(400)).await;
                read.lock().unwrap().push(cpu_time(pid));
                Ok(json!(1))
            }
        })
        .build()
        .unwrap();
    let harness = Harness::builder()
        .sandbox(under_test.sandbox.clone())
        .build(registry([slow]))
        .unwrap();
    let pids = wait_for_workers(&under_test.program, 1).await;
    assert_eq!(pids.len(), 1, "one worker process: {pids:?}");
    worker.set(pids[0]).unwrap();
    let outcome = harness
        .run("return (await tools.slow({})) + (await tools.slow({}))")
        .await
        .unwrap();
    assert_eq!(
        outcome.value_json(),
        Some(json!(2)),
        "{}",
        outcome.to_json()
    );
    let readings = readings.lock().unwrap().clone();
    assert_eq!(readings.len(), 4, "{readings:?}");
    let spent = readings[3] - readings[0];
    assert!(
        spent < Duration::from_millis(250),
        "the worker spent {spent:?} of CPU in a run that waited 800 ms"
    );
}

/// A tool whose result nests `depth` arrays deep beside records, a float, an integer past `i32`
/// and text outside ASCII; a post hook attaches a note to each of its calls.
fn structured_harness(sandbox: &Sandbox, depth: usize) -> Harness {
    let tool = ToolDefinition::builder("structured")
        .description("a structured result")
        .execute(move |_args: Value, _exec| async move {
            let mut deep = json!("leaf");
            for _ in 0..depth {
                deep = json!([deep]);
            }
            let rows: Vec<Value> = (0..50)
                .map(|id| json!({ "id": id, "name": format!("n{id}"), "score": (id * 7919) % 10007 }))
                .collect();
            Ok(json!({ "rows": rows, "deep": deep, "float": 0.1, "big": 1u64 << 40, "text": "één 😀" }))
        })
        .build()
        .unwrap();
    Harness::builder()
        .sandbox(sandbox.clone())
        .inner(|pipeline| {
            pipeline.post_hook(post_hook_fn("note", |_info| {
                let mut action = PostAction::keep();
                action
                    .contexts
                    .push(ContextEntry::new("note", "structured ran"));
                action
            }))
        })
        .build(registry([tool]))
        .unwrap()
}

/// A structured result crosses to a worker process in the engine's binary format (`frame.rs`):
/// the program sees what it sees on an engine thread of the host, the run counts the same bytes
/// kept in the sandbox, and the call's context notes arrive.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_structured_result_reaches_a_worker_process_as_it_reaches_an_engine_thread() {
    const PROGRAM: &str = r#"
        const r = await tools.structured({});
        let d = r.deep, depth = 0;
        while (Array.isArray(d)) { d = d[0]; depth++; }
        const top = r.rows.sort((a, b) => b.score - a.score).slice(0, 3);
        return { top, depth, leaf: d, float: r.float, big: r.big, text: r.text, int: Number.isInteger(r.big) };
    "#;
    // 300 deep goes in the engine's format, 600 (deeper than it nests) as JSON text; serde
    // reads neither (it stops at 128), and the worker once ended on both.
    for depth in [300, 600] {
        let mut seen = Vec::new();
        for sandbox in [crate::common::sandbox(), process_sandbox()] {
            let outcome = structured_harness(sandbox, depth)
                .run(PROGRAM)
                .await
                .unwrap();
            let value = outcome
                .value_json()
                .unwrap_or_else(|| panic!("{}", outcome.to_json()));
            let notes: Vec<_> = outcome.contexts.iter().map(|c| c.text.clone()).collect();
            seen.push((value, outcome.stats.bytes_kept_in_sandbox, notes));
        }
        assert_the_structured_result(&seen[0], depth);
        assert_eq!(
            seen[1], seen[0],
            "a worker process sees what an engine thread sees"
        );
    }
}

fn assert_the_structured_result((value, kept, notes): &(Value, u64, Vec<String>), depth: usize) {
    assert_eq!(value["depth"], json!(depth));
    assert_eq!(value["leaf"], json!("leaf"));
    assert_eq!(value["top"][0]["score"], json!(9930));
    assert_eq!(
        [
            &value["float"],
            &value["big"],
            &value["text"],
            &value["int"]
        ],
        [
            &json!(0.1),
            &json!(1u64 << 40),
            &json!("één 😀"),
            &json!(true)
        ]
    );
    assert!(*kept > 2000, "the result's JSON text is counted: {kept}");
    assert_eq!(notes, &["structured ran"]);
}

/// Arguments up to the depth both modes share reach the tool; one level deeper is an
/// `INVALID_ARGS` in both, where a worker process once ended (its `Call` frame nests the
/// arguments two levels down, past serde_json's 128).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arguments_nested_past_the_limit_are_invalid_in_both_isolation_modes() {
    let take = ToolDefinition::builder("take")
        .description("takes anything")
        .execute(|_args: Value, _exec| async { Ok(json!("taken")) })
        .build()
        .unwrap();
    let program = |depth: usize| {
        format!(
            "let v = 1; for (let i = 1; i < {depth}; i++) v = [v]; \
             try {{ return await tools.take({{ v }}); }} catch (e) {{ return [e.code, e.message]; }}"
        )
    };
    for sandbox in [crate::common::sandbox(), process_sandbox()] {
        let harness = Harness::builder()
            .sandbox(sandbox.clone())
            .build(registry([take.clone()]))
            .unwrap();
        // `{ v }` is one level, `v` the rest.
        let at_the_limit = harness.run(&program(125)).await.unwrap();
        assert_eq!(
            at_the_limit.value_json(),
            Some(json!("taken")),
            "{}",
            at_the_limit.to_json()
        );
        let past = harness.run(&program(126)).await.unwrap();
        let value = past
            .value_json()
            .unwrap_or_else(|| panic!("{}", past.to_json()));
        assert_eq!(value[0], "INVALID_ARGS", "{value}");
        assert!(
            value[1]
                .as_str()
                .unwrap()
                .contains("more than 125 levels deep"),
            "{value}"
        );
    }
}

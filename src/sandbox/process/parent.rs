//! The host side of process isolation: a pool of worker processes, one run at a time each.
//! The host keeps everything that matters: the tools, the pipeline, the extensions of the run.
//! A worker sends each tool call as a frame; the host runs it through the [`ToolHost`] exactly
//! as an in-process run would and sends the answer back.

use std::collections::VecDeque;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::process::ExitStatusExt;
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, BufReader};
use tokio::process::{Child, ChildStdout};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::ProcessConfig;
use super::call_watch::{self, CallWatch};
use super::child::WORKER_ARG;
use super::clock::{RemoteClock, RunClock};
use super::frame::{self, FrameError, FromWorker, ToWorker, WorkerSetup};
use super::harden::WorkerReport;
use crate::call::{CallError, ErrorKind, Limits, TrackWaves};
use crate::sandbox::engine;
use crate::sandbox::host::{DeadlinePause, RunTools, ToolRequest};
use crate::sandbox::tick::TickAligner;
use crate::sandbox::watchdog::STUCK_GRACE;
use crate::sandbox::{RunError, RunOutcome, RunStatus, new_run_id};

/// One run for a worker process.
pub(crate) struct ProcessJob {
    pub source: String,
    pub limits: Limits,
    pub tools: Option<RunTools>,
    /// Cancelled when the caller stops the run or goes away.
    pub stop: CancellationToken,
    pub reply: oneshot::Sender<RunOutcome>,
}

/// How long a fresh worker has to answer the handshake.
const HANDSHAKE_LIMIT: Duration = Duration::from_secs(10);
/// Past the run's deadline (or its cancellation), how long the host waits for the worker's own
/// watchdog to answer before it kills the worker. The worker's watchdog gives a stuck engine
/// [`STUCK_GRACE`] before it answers itself.
const BACKSTOP: Duration = Duration::from_secs(STUCK_GRACE.as_secs() + 3);
/// How long a slot started for waiting runs stays idle before it ends.
const SPARE_IDLE_LIMIT: Duration = Duration::from_secs(5);
/// How much of a worker's stderr is kept to explain its crash.
const STDERR_TAIL_BYTES: usize = 4096;

pub(crate) struct ProcessPool {
    jobs: Option<mpsc::UnboundedSender<ProcessJob>>,
    manager: Option<std::thread::JoinHandle<()>>,
    shared: Arc<Shared>,
    /// Worker processes started, set up and idle right now.
    pub(crate) ready: Arc<AtomicUsize>,
}

struct Shared {
    jobs: tokio::sync::Mutex<mpsc::UnboundedReceiver<ProcessJob>>,
    setup: WorkerSetup,
    config: ProcessConfig,
    ready: Arc<AtomicUsize>,
    /// The manager's event loop, where slots run.
    handle: OnceLock<tokio::runtime::Handle>,
    /// Slots that keep a worker whatever the load.
    base: usize,
    /// Jobs submitted and not yet taken by a slot.
    queued: AtomicUsize,
    /// Slots alive: starting, idle or running.
    slots: AtomicUsize,
    /// Slots waiting for a job.
    idle: AtomicUsize,
    /// Slots starting their worker.
    starting: AtomicUsize,
    /// Slots whose run only waits, on tool calls or an approver.
    waiting: AtomicUsize,
    /// The pipes of running workers, watched awake for a moment after an answer.
    call_watch: Arc<CallWatch>,
}

impl Shared {
    /// Start more workers when jobs queue while every worker's run only waits on tools or an
    /// approver: a waiting run must not keep other runs from starting. One worker per queued
    /// job not yet covered by an idle or starting worker, at most `waiting_workers` beyond the
    /// base.
    fn grow_if_all_wait(self: &Arc<Self>) {
        let Some(handle) = self.handle.get() else {
            return;
        };
        loop {
            let slots = self.slots.load(Ordering::SeqCst);
            let idle = self.idle.load(Ordering::SeqCst);
            let starting = self.starting.load(Ordering::SeqCst);
            let busy = slots.saturating_sub(idle + starting);
            if self.queued.load(Ordering::SeqCst) <= idle + starting
                || self.waiting.load(Ordering::SeqCst) < busy
                || slots >= self.base + self.config.waiting_workers
            {
                return;
            }
            if self
                .slots
                .compare_exchange(slots, slots + 1, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
            {
                self.starting.fetch_add(1, Ordering::SeqCst);
                handle.spawn(slot(Arc::clone(self), false));
            }
        }
    }
}

impl ProcessPool {
    pub(crate) fn start(
        workers: usize,
        setup: WorkerSetup,
        config: ProcessConfig,
    ) -> std::io::Result<ProcessPool> {
        // The tool calls of the workers' runs run on this runtime, their timers too (a tool's
        // sleep, the pipeline's timeouts): kept on their ticks as an engine thread's are, a
        // batch of them ends up to a millisecond sooner (`tick.rs`).
        let aligner = TickAligner::start()?;
        let (built, runtime_built) = std::sync::mpsc::channel::<std::io::Result<()>>();
        let (jobs, receiver) = mpsc::unbounded_channel();
        let ready = Arc::new(AtomicUsize::new(0));
        let base = workers.max(1);
        let shared = Arc::new(Shared {
            jobs: tokio::sync::Mutex::new(receiver),
            setup,
            config,
            ready: Arc::clone(&ready),
            handle: OnceLock::new(),
            base,
            queued: AtomicUsize::new(0),
            slots: AtomicUsize::new(base),
            idle: AtomicUsize::new(0),
            starting: AtomicUsize::new(base),
            waiting: AtomicUsize::new(0),
            call_watch: Arc::default(),
        });
        let managed = Arc::clone(&shared);
        let manager = std::thread::Builder::new()
            .name("codemode-worker-processes".into())
            .spawn(move || {
                // After an answer, the next call is watched for awake (`call_watch.rs`), unless
                // a task is woken for this thread meanwhile.
                let own = Arc::clone(&managed);
                let before_park = move || {
                    let other_work = || {
                        own.handle
                            .get()
                            .is_some_and(|h| h.metrics().global_queue_depth() > 0)
                    };
                    let _ = own.call_watch.before_park(call_watch::SPIN_CAP, other_work);
                };
                // Built on this thread: the aligner makes the timed waits of the thread that
                // builds the runtime precise.
                let runtime = match aligner.runtime(before_park) {
                    Ok(runtime) => {
                        let _ = built.send(Ok(()));
                        runtime
                    }
                    Err(e) => {
                        let _ = built.send(Err(e));
                        return;
                    }
                };
                // Workers started before it is made build their isolates from the glue (they
                // make none of their own) and are replaced after a run once it is (see `slot`).
                engine::make_snapshot_in_background();
                let _ = managed.handle.set(runtime.handle().clone());
                runtime.block_on(async move {
                    for _ in 0..base {
                        tokio::spawn(slot(Arc::clone(&managed), true));
                    }
                    // Slots end once the queue is closed and their runs are over.
                    while managed.slots.load(Ordering::SeqCst) > 0 {
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                });
            })?;
        runtime_built.recv().unwrap_or_else(|_| {
            Err(std::io::Error::other(
                "the worker-process manager thread ended before its runtime was built",
            ))
        })?;
        Ok(ProcessPool {
            jobs: Some(jobs),
            manager: Some(manager),
            shared,
            ready,
        })
    }

    /// Queue a job; `false` when the pool is shut down.
    pub(crate) fn submit(&self, job: ProcessJob) -> bool {
        let Some(jobs) = &self.jobs else {
            return false;
        };
        self.shared.queued.fetch_add(1, Ordering::SeqCst);
        if jobs.send(job).is_err() {
            self.shared.queued.fetch_sub(1, Ordering::SeqCst);
            return false;
        }
        self.shared.grow_if_all_wait();
        true
    }
}

impl Drop for ProcessPool {
    fn drop(&mut self) {
        // Closing the queue ends every slot once its current run is over; its worker process
        // is killed as it goes.
        self.jobs.take();
        if let Some(manager) = self.manager.take() {
            let _ = manager.join();
        }
    }
}

/// One place in the pool: keeps a worker process up (starting it before any job arrives, so
/// its isolate is warm) and runs jobs on it, replacing it when it crashes or wears out. While
/// idle it listens to its worker too: a worker that dies idle is replaced at once, and one
/// counts as ready when it says its next isolate is built. A slot started for waiting runs
/// (not `permanent`) ends once no job is queued.
async fn slot(shared: Arc<Shared>, permanent: bool) {
    let mut worker: Option<WorkerProcess> = None;
    // Whoever started this slot counted it as starting.
    let mut starting = true;
    let mut failures: u32 = 0;
    // Whether this slot's worker is counted in `ready`.
    let mut counted = false;
    let uncount = |counted: &mut bool| {
        if std::mem::take(counted) {
            shared.ready.fetch_sub(1, Ordering::SeqCst);
        }
    };
    loop {
        let mut start_error = None;
        if worker.is_none() {
            if !std::mem::replace(&mut starting, true) {
                shared.starting.fetch_add(1, Ordering::SeqCst);
            }
            // The host's startup snapshot once it is made: the worker need not make one.
            let snapshot = engine::ready_snapshot();
            match WorkerProcess::start(&shared.setup, snapshot, &shared.config).await {
                Ok(started) => {
                    failures = 0;
                    worker = Some(started);
                }
                Err(e) => start_error = Some(e),
            }
        }
        if std::mem::take(&mut starting) {
            shared.starting.fetch_sub(1, Ordering::SeqCst);
        }
        if !permanent && shared.queued.load(Ordering::SeqCst) == 0 {
            break;
        }
        shared.idle.fetch_add(1, Ordering::SeqCst);
        let job = tokio::select! {
            job = async { shared.jobs.lock().await.recv().await } => Some(job),
            // A slot started for waiting runs does not outlive the need for it.
            () = tokio::time::sleep(SPARE_IDLE_LIMIT), if !permanent => Some(None),
            message = idle_frame(&mut worker) => {
                match message {
                    Some(Ok(FromWorker::Warm)) => {
                        if !counted {
                            counted = true;
                            shared.ready.fetch_add(1, Ordering::SeqCst);
                        }
                    }
                    // Died (or spoke out of turn) while idle: replace it before a job comes.
                    _ => {
                        uncount(&mut counted);
                        if let Some(done) = worker.take() {
                            done.retire();
                        }
                    }
                }
                None
            }
        };
        shared.idle.fetch_sub(1, Ordering::SeqCst);
        let Some(job) = job else { continue };
        let Some(job) = job else { break };
        shared.queued.fetch_sub(1, Ordering::SeqCst);
        let Some(running) = worker.as_mut() else {
            let message = start_error.unwrap_or_else(|| "no worker process".into());
            let _ = job.reply.send(RunOutcome::failed(
                RunStatus::Error,
                RunError::new("InternalError", message),
            ));
            // A persistent failure (a missing program) must not become a hot loop of spawns.
            failures += 1;
            tokio::time::sleep(Duration::from_millis(100 * u64::from(failures.min(20)))).await;
            continue;
        };
        uncount(&mut counted);
        let healthy = running.run(job, &shared).await;
        // A worker started before the host had its startup snapshot builds every isolate from
        // the glue; one that gets the snapshot takes its place as soon as there is one.
        let worn = running.runs >= shared.config.runs_per_worker.max(1)
            || running.rss_bytes() > shared.config.rss_ceiling_bytes
            || (!running.host_snapshot && engine::ready_snapshot().is_some());
        if (!healthy || worn)
            && let Some(done) = worker.take()
        {
            done.retire();
        }
    }
    uncount(&mut counted);
    if let Some(done) = worker.take() {
        done.retire();
    }
    shared.slots.fetch_sub(1, Ordering::SeqCst);
}

/// The next frame of an idle worker; never, when there is none.
async fn idle_frame(worker: &mut Option<WorkerProcess>) -> Option<Result<FromWorker, FrameError>> {
    match worker {
        Some(worker) => worker.from.recv().await,
        None => std::future::pending().await,
    }
}

struct WorkerProcess {
    child: Child,
    /// Frames to the worker's stdin (a writer task owns the pipe).
    to: mpsc::UnboundedSender<Vec<u8>>,
    /// Frames from its stdout, read by a task: a receive is cancel-safe, a half-read frame is not.
    from: mpsc::UnboundedReceiver<Result<FromWorker, FrameError>>,
    stderr: Arc<Mutex<VecDeque<u8>>>,
    stderr_done: Option<oneshot::Receiver<()>>,
    /// Its stdout, where its calls come from (read by the task; watched during runs).
    stdout_fd: RawFd,
    runs: usize,
    /// Whether it was given the host's startup snapshot.
    host_snapshot: bool,
    confinement: WorkerReport,
}

impl WorkerProcess {
    async fn start(
        setup: &WorkerSetup,
        snapshot: Option<&[u8]>,
        config: &ProcessConfig,
    ) -> Result<WorkerProcess, String> {
        let program = &config.program;
        let mut child = tokio::process::Command::new(program)
            .arg(WORKER_ARG)
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| {
                format!(
                    "cannot start the sandbox worker process `{}`: {e}",
                    program.display()
                )
            })?;
        let (Some(mut stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err("the sandbox worker process has no pipes".into());
        };
        let (to, mut outgoing) = mpsc::unbounded_channel::<Vec<u8>>();
        tokio::spawn(async move {
            while let Some(bytes) = outgoing.recv().await {
                if frame::write(&mut stdin, &bytes).await.is_err() {
                    return;
                }
            }
        });
        let stdout_fd = stdout.as_raw_fd();
        let from = read_frames(stdout);
        let tail = Arc::new(Mutex::new(VecDeque::new()));
        let stderr_done = keep_tail(stderr, Arc::clone(&tail));
        let mut worker = WorkerProcess {
            child,
            to,
            from,
            stderr: tail,
            stderr_done: Some(stderr_done),
            stdout_fd,
            runs: 0,
            host_snapshot: snapshot.is_some(),
            confinement: WorkerReport::default(),
        };
        // The host's startup snapshot follows the hello, so the worker need not make one.
        let hello = WorkerSetup {
            snapshot: snapshot.map(|_| engine::snapshot_fingerprint()),
            webassembly_left_out: engine::webassembly_left_out(),
            ..setup.clone()
        };
        worker.send(&ToWorker::Hello(hello));
        if let Some(bytes) = snapshot {
            let _ = worker.to.send(frame::raw(bytes));
        }
        match tokio::time::timeout(HANDSHAKE_LIMIT, worker.from.recv()).await {
            Ok(Some(Ok(FromWorker::Ready(confinement)))) => {
                worker.confinement = confinement;
                Ok(worker)
            }
            Ok(other) => {
                let why = match other {
                    Some(Err(e)) => e.to_string(),
                    _ => "it sent something else".into(),
                };
                let status = worker.exit_status().await;
                Err(format!(
                    "the sandbox worker process `{}` did not complete its handshake ({why}; it {}){}; the program must call codemode::sandbox::serve_worker_if_requested() first thing in main",
                    program.display(),
                    describe_exit(status),
                    worker.last_words(),
                ))
            }
            Err(_) => Err(format!(
                "the sandbox worker process `{}` did not answer within {} s",
                program.display(),
                HANDSHAKE_LIMIT.as_secs()
            )),
        }
    }

    fn send(&self, message: &ToWorker) {
        let _ = self.to.send(frame::encode(message));
    }

    /// Run one job; `false` when the worker must not take another (it crashed, was killed, or
    /// gave up an engine thread).
    async fn run(&mut self, job: ProcessJob, shared: &Arc<Shared>) -> bool {
        let ProcessJob {
            source,
            limits,
            tools,
            stop,
            reply,
        } = job;
        let (paths, run_id, track_waves) = match &tools {
            Some(tools) => (
                tools.host.paths(),
                tools.run_id.clone(),
                tools.extensions.get::<TrackWaves>().is_some(),
            ),
            None => (Vec::new(), new_run_id(), false),
        };
        self.runs += 1;
        let run = self.runs as u64;
        // Until the run ends, or its worker is found gone (its pipe is then closed).
        let watching = shared.call_watch.watch(self.stdout_fd);
        let deadline = limits.deadline;
        self.send(&ToWorker::Run {
            run,
            source,
            limits,
            paths,
            run_id: run_id.clone(),
            track_waves,
        });
        let clock = Arc::new(RunClock::new(self.to.clone()));
        // Calls of this run in flight: while there is one, the run only waits (on a tool or an
        // approver), and the pool may start another worker for queued runs.
        let in_flight = Arc::new(WaitingCalls {
            calls: AtomicUsize::new(0),
            shared: Arc::clone(shared),
        });
        // The run's token for its calls: cancelled when the run ends with calls in flight.
        let calls_end = CancellationToken::new();
        let _end_calls = calls_end.clone().drop_guard();
        let mut stopped_at: Option<Instant> = None;
        let mut tick = tokio::time::interval(Duration::from_millis(100));
        // Whether the worker reads the engine's binary object format as this build writes it.
        let same_engine = self.confinement.engine == engine::snapshot_fingerprint();
        loop {
            tokio::select! {
                message = self.from.recv() => match message {
                    Some(Ok(FromWorker::Call { id, path, args, unconvertible, seq, wave })) => {
                        let answer = self.to.clone();
                        let Some(tools) = &tools else {
                            // A run without tools has no `tools` to call; only a worker gone
                            // wrong asks. It gets the answer any unknown name gets.
                            let error = CallError::new(
                                ErrorKind::UnknownTool { suggestions: Vec::new() },
                                format!("no tool named `{path}`"),
                            );
                            let _ = answer.send(frame::encode(&ToWorker::Reply { id, result: Err(error) }));
                            continue;
                        };
                        let request = ToolRequest {
                            path,
                            args,
                            unconvertible,
                            run_id: run_id.clone(),
                            seq,
                            wave,
                            cancel: calls_end.clone(),
                            deadline: DeadlinePause(Arc::new(RemoteClock::new(id, Arc::clone(&clock)))),
                            extensions: tools.extensions.clone(),
                        };
                        let call = tools.host.call(request);
                        let waiting = in_flight.started();
                        let watch = Arc::clone(&shared.call_watch);
                        tokio::spawn(async move {
                            let result = call.await;
                            let _ = answer.send(frame::reply(id, result, same_engine));
                            watch.answered();
                            drop(waiting);
                        });
                    }
                    Some(Ok(FromWorker::CallsCancelled { run: ended })) => {
                        if ended == run {
                            calls_end.cancel();
                        }
                    }
                    Some(Ok(FromWorker::Outcome { outcome, retire })) => {
                        let _ = reply.send(*outcome);
                        return !retire;
                    }
                    // A late notice of the previous run's warm isolate: nothing to do mid-run.
                    Some(Ok(FromWorker::Ready(_) | FromWorker::Warm)) => {}
                    Some(Err(e)) if !matches!(e, FrameError::Closed) => {
                        drop(watching);
                        let outcome = self.crashed(Some(e)).await;
                        let _ = reply.send(outcome);
                        return false;
                    }
                    Some(Err(_)) | None => {
                        drop(watching);
                        let outcome = self.crashed(None).await;
                        let _ = reply.send(outcome);
                        return false;
                    }
                },
                () = stop.cancelled(), if stopped_at.is_none() => {
                    self.send(&ToWorker::Cancel { run });
                    stopped_at = Some(Instant::now());
                }
                _ = tick.tick() => {
                    let overdue = match stopped_at {
                        Some(at) => at.elapsed() > BACKSTOP,
                        None => clock.running_time() > deadline + BACKSTOP,
                    };
                    if overdue {
                        let _ = self.child.start_kill();
                        let (status, name, what) = match stopped_at {
                            Some(_) => (RunStatus::Cancelled, "Cancelled", "the run was cancelled".to_string()),
                            None => (RunStatus::Timeout, "Timeout", format!("timeout after {} ms", deadline.as_millis())),
                        };
                        let message = format!(
                            "{what}; the sandbox worker process did not answer {} ms after that, so it was killed and replaced; console output is lost",
                            BACKSTOP.as_millis()
                        );
                        let _ = reply.send(RunOutcome::failed(status, RunError::new(name, message)));
                        return false;
                    }
                }
            }
        }
    }

    /// The outcome of a run whose worker died (or broke the protocol, and is killed for it).
    async fn crashed(&mut self, broken: Option<FrameError>) -> RunOutcome {
        if broken.is_some() {
            let _ = self.child.start_kill();
        }
        let status = self.exit_status().await;
        let how = match &broken {
            Some(e) => format!("broke the protocol ({e}) and was killed"),
            None => describe_exit(status),
        };
        let message = format!(
            "the sandbox worker process {how} during the run{}; its console output is lost, and a fresh worker takes its place",
            self.last_words()
        );
        RunOutcome::failed(RunStatus::Crashed, RunError::new("WorkerCrashed", message))
    }

    /// Wait (briefly) for the worker to exit, killing it if it does not, and for its stderr.
    async fn exit_status(&mut self) -> Option<ExitStatus> {
        let status = match tokio::time::timeout(Duration::from_secs(1), self.child.wait()).await {
            Ok(status) => status.ok(),
            Err(_) => {
                let _ = self.child.start_kill();
                self.child.wait().await.ok()
            }
        };
        if let Some(done) = self.stderr_done.take() {
            let _ = tokio::time::timeout(Duration::from_millis(500), done).await;
        }
        status
    }

    /// The last line the worker wrote to stderr (a panic message, an allocator's complaint).
    fn last_words(&self) -> String {
        let tail = self.stderr.lock().unwrap_or_else(|e| e.into_inner());
        let bytes: Vec<u8> = tail.iter().copied().collect();
        let text = String::from_utf8_lossy(&bytes);
        text.lines()
            .map(str::trim)
            .rfind(|line| !line.is_empty() && !line.starts_with("note:"))
            .map(|line| format!("; its last words: {line}"))
            .unwrap_or_default()
    }

    fn rss_bytes(&self) -> u64 {
        self.child.id().map_or(0, rss_of)
    }

    /// Stop the worker (it holds nothing worth a graceful exit) and reap it in the background.
    fn retire(mut self) {
        let _ = self.child.start_kill();
        tokio::spawn(async move {
            let _ = self.child.wait().await;
        });
    }
}

/// The calls of one run in flight, counted into the pool's `waiting` slots.
struct WaitingCalls {
    calls: AtomicUsize,
    shared: Arc<Shared>,
}

impl WaitingCalls {
    /// One more call in flight; the guard ends it.
    fn started(self: &Arc<Self>) -> CallInFlight {
        if self.calls.fetch_add(1, Ordering::SeqCst) == 0 {
            self.shared.waiting.fetch_add(1, Ordering::SeqCst);
            self.shared.grow_if_all_wait();
        }
        CallInFlight(Arc::clone(self))
    }
}

struct CallInFlight(Arc<WaitingCalls>);

impl Drop for CallInFlight {
    fn drop(&mut self) {
        if self.0.calls.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.shared.waiting.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

fn read_frames(stdout: ChildStdout) -> mpsc::UnboundedReceiver<Result<FromWorker, FrameError>> {
    let (frames, from) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut stdout = BufReader::new(stdout);
        loop {
            let message = frame::read::<FromWorker>(&mut stdout).await;
            let last = message.is_err();
            if frames.send(message).is_err() || last {
                return;
            }
        }
    });
    from
}

fn keep_tail(
    mut stderr: tokio::process::ChildStderr,
    tail: Arc<Mutex<VecDeque<u8>>>,
) -> oneshot::Receiver<()> {
    let (done, finished) = oneshot::channel();
    tokio::spawn(async move {
        let mut buffer = [0u8; 1024];
        while let Ok(n) = stderr.read(&mut buffer).await {
            if n == 0 {
                break;
            }
            let mut tail = tail.lock().unwrap_or_else(|e| e.into_inner());
            tail.extend(&buffer[..n]);
            let excess = tail.len().saturating_sub(STDERR_TAIL_BYTES);
            tail.drain(..excess);
        }
        let _ = done.send(());
    });
    finished
}

/// Start one worker of `program` that tries what its confinement must refuse, and report what
/// it met. The worker is then stopped.
///
/// # Errors
/// The worker could not be started or did not complete its handshake.
pub async fn probe_worker(
    config: &ProcessConfig,
    heap_bytes: usize,
) -> Result<WorkerReport, String> {
    let setup = WorkerSetup {
        heap_bytes,
        worker_stack_bytes: 16 * crate::call::MIB,
        isolates_per_thread: 1,
        address_space_bytes: config.address_space_bytes,
        probe: true,
        snapshot: None,
        webassembly_left_out: false,
    };
    // Making the snapshot runs the engine, which needs a thread with a few MiB of stack.
    let snapshot = tokio::task::spawn_blocking(|| {
        engine::on_engine_thread(|| engine::startup_snapshot().ok())
            .ok()
            .flatten()
    })
    .await
    .ok()
    .flatten();
    let worker = WorkerProcess::start(&setup, snapshot, config).await?;
    let confinement = worker.confinement.clone();
    worker.retire();
    Ok(confinement)
}

/// Resident memory of process `pid`, from `/proc` (0 where unknown).
pub(crate) fn rss_of(pid: u32) -> u64 {
    let Ok(statm) = std::fs::read_to_string(format!("/proc/{pid}/statm")) else {
        return 0;
    };
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    // SAFETY: sysconf with a constant name has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as u64;
    pages * page
}

fn describe_exit(status: Option<ExitStatus>) -> String {
    let Some(status) = status else {
        return "ended in an unknown way".into();
    };
    if let Some(signal) = status.signal() {
        return format!("was killed by signal {signal} ({})", signal_name(signal));
    }
    match status.code() {
        Some(code) => format!("exited with code {code}"),
        None => "ended in an unknown way".into(),
    }
}

fn signal_name(signal: i32) -> &'static str {
    match signal {
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGILL => "SIGILL",
        libc::SIGFPE => "SIGFPE",
        libc::SIGTERM => "SIGTERM",
        libc::SIGSYS => "SIGSYS",
        libc::SIGXCPU => "SIGXCPU",
        _ => "signal",
    }
}

//! Worker threads and the warm pool. Runtimes are `!Send`, so each worker thread owns its
//! isolate, a current-thread tokio runtime and a watchdog. After each run the worker builds the
//! next isolate *before* it waits for work, so a fresh run skips the bootstrap cost.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};

use super::RunLink;
use super::awake_reply::{CoreLoad, Counted};
use super::engine::Engine;
use super::execute::execute;
use super::heads_up::{Message, Preparing, next_job};
use super::host::RunTools;
use super::outcome::{RunError, RunOutcome, RunStatus};
use super::reserve::RunReserve;
use super::step_aside::{Pace, step_aside};
use super::tick::TickAligner;
use super::transpile::Transpiled;
use super::watchdog::{Reply, ReplySlot, Watchdog};
use crate::call::Limits;

pub(crate) struct Job {
    pub program: Transpiled,
    pub limits: Limits,
    pub tools: Option<RunTools>,
    /// Receives the run's control as soon as the run starts (for cancellation from the caller).
    pub link: Arc<RunLink>,
    pub reply: Reply,
    /// Counts the run as queued in the pool's [`CoreLoad`] until a worker takes it.
    pub queued: Counted<'static>,
    /// When it was queued: how soon runs come after outcomes decides the step aside.
    pub queued_at: Instant,
}

/// Called whenever a worker has a pre-built isolate ready.
pub(crate) type OnWarm = Arc<dyn Fn() + Send + Sync>;

pub(crate) struct Pool {
    sender: Option<Sender<Message<Box<Job>>>>,
    workers: Vec<JoinHandle<()>>,
    /// Workers holding a pre-built isolate right now.
    pub(crate) warm: Arc<AtomicUsize>,
    /// Callers between their heads-up and their run (`heads_up.rs`).
    preparing: Arc<AtomicUsize>,
    /// Worker threads given up by their watchdog (never joined: they may never return).
    abandoned: Abandoned,
    /// What the cores are busy with (`awake_reply.rs`): the process's, or a test's own.
    pub(crate) load: &'static CoreLoad,
}

type Abandoned = Arc<std::sync::Mutex<Vec<std::thread::ThreadId>>>;

impl Pool {
    pub(crate) fn start(
        workers: usize,
        stack_bytes: usize,
        warm_heap_bytes: usize,
        isolates_per_thread: usize,
        on_warm: Option<OnWarm>,
        load: &'static CoreLoad,
        step_aside: Duration,
    ) -> std::io::Result<Pool> {
        let (sender, receiver) = crossbeam_channel::unbounded::<Message<Box<Job>>>();
        let mut handles = Vec::with_capacity(workers);
        let warm = Arc::new(AtomicUsize::new(0));
        let preparing = Arc::new(AtomicUsize::new(0));
        let abandoned = Abandoned::default();
        let aligner = TickAligner::start()?;
        for id in 0..workers {
            let receiver = receiver.clone();
            let warm = Arc::clone(&warm);
            let worker = Worker {
                id,
                jobs: receiver,
                warm_heap_bytes,
                warm_count: warm,
                preparing: Arc::clone(&preparing),
                stack_bytes,
                isolates_per_thread: isolates_per_thread.max(1),
                abandoned: Arc::clone(&abandoned),
                on_warm: on_warm.clone(),
                aligner: aligner.clone(),
                load,
                step_aside,
            };
            handles.push(worker.spawn()?);
        }
        Ok(Pool {
            sender: Some(sender),
            workers: handles,
            warm,
            preparing,
            abandoned,
            load,
        })
    }

    /// Whether a watchdog gave up one of the worker threads.
    pub(crate) fn gave_up_a_worker(&self) -> bool {
        !self
            .abandoned
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_empty()
    }

    /// Wake an idle worker for a run the caller is about to queue; hold the guard until
    /// [`Pool::submit`] (`heads_up.rs`). With no idle worker, nothing is sent.
    pub(crate) fn heads_up(&self) -> Preparing<'_> {
        let preparing = Preparing::new(&self.preparing);
        if self.warm.load(Ordering::SeqCst) > 0
            && let Some(sender) = &self.sender
        {
            let _ = sender.send(Message::HeadsUp);
        }
        preparing
    }

    /// Queue a job; `false` when the pool is shut down.
    pub(crate) fn submit(&self, job: Job) -> bool {
        self.sender
            .as_ref()
            .is_some_and(|sender| sender.send(Message::Run(Box::new(job))).is_ok())
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        // Closing the channel ends every worker once its current run is over.
        self.sender.take();
        let abandoned = self
            .abandoned
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        for worker in self.workers.drain(..) {
            if !abandoned.contains(&worker.thread().id()) {
                let _ = worker.join();
            }
        }
    }
}

/// Isolates a worker thread builds, by default, before it hands its place to a fresh thread.
/// The engine facade keeps per-thread state: after some thousands of isolates on one thread,
/// creating another fails (seen in benchmarks after roughly 100-200 isolates on one thread).
/// Recycling well before that keeps the pool healthy; a thread spawn costs far less than an isolate.
pub(crate) const ISOLATES_PER_THREAD: usize = 64;

/// What a worker thread needs; a replacement thread gets the same.
#[derive(Clone)]
struct Worker {
    id: usize,
    jobs: Receiver<Message<Box<Job>>>,
    warm_heap_bytes: usize,
    warm_count: Arc<AtomicUsize>,
    preparing: Arc<AtomicUsize>,
    stack_bytes: usize,
    isolates_per_thread: usize,
    abandoned: Abandoned,
    on_warm: Option<OnWarm>,
    aligner: TickAligner,
    load: &'static CoreLoad,
    /// How long the worker leaves the core to the threads an outcome wakes before it builds
    /// the next isolate (`step_aside.rs`).
    step_aside: Duration,
}

impl Worker {
    fn spawn(self) -> std::io::Result<JoinHandle<()>> {
        std::thread::Builder::new()
            .name(format!("codemode-sandbox-{}", self.id))
            .stack_size(self.stack_bytes)
            .spawn(move || self.run())
    }

    /// Build an isolate; a panic in the engine becomes an error.
    fn build(&self, heap_bytes: usize) -> Result<Engine, String> {
        std::panic::catch_unwind(|| Engine::new(heap_bytes)).unwrap_or_else(|panic| {
            Err(format!(
                "the engine failed to start: {}",
                panic_message(&panic)
            ))
        })
    }

    fn run(self) {
        // In a worker process, calls awaiting the host's answer are waited on awake for a moment
        // before a park (a no-op elsewhere).
        let runtime = match self
            .aligner
            .runtime(super::process::answer_wait::before_park)
        {
            Ok(runtime) => runtime,
            Err(e) => {
                return fail_all(
                    &self.jobs,
                    &format!("cannot start the worker's event loop: {e}"),
                );
            }
        };
        // If a run keeps this thread past its stop, the watchdog answers its caller and starts
        // a replacement; this thread then never takes another job.
        let replacement = self.clone();
        let this_thread = std::thread::current().id();
        let on_stuck = Box::new(move || {
            replacement
                .abandoned
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(this_thread);
            if replacement.clone().spawn().is_err() {
                tracing::error!("cannot start a replacement for an abandoned sandbox worker");
            }
        });
        let watchdog =
            match Watchdog::spawn(format!("codemode-watchdog-{}", self.id), Some(on_stuck)) {
                Ok(watchdog) => watchdog,
                Err(e) => {
                    return fail_all(
                        &self.jobs,
                        &format!("cannot start the watchdog thread: {e}"),
                    );
                }
            };
        let mut built = 0usize;
        // An isolate for the next run, its `tools` built for `catalog` (the last run's) if any.
        let prepare = |built: &mut usize, catalog: Option<Vec<String>>| {
            *built += 1;
            let mut engine = self.build(self.warm_heap_bytes).ok();
            if let (Some(fresh), Some(catalog)) = (engine.as_mut(), catalog) {
                // Engine code, like a run: a panic in it loses this isolate, not the thread.
                let prebuilt = std::panic::catch_unwind(AssertUnwindSafe(|| {
                    fresh.prebuild_tools(catalog);
                }));
                if prebuilt.is_err() {
                    engine = None;
                }
            }
            if engine.is_some() {
                self.warm_count.fetch_add(1, Ordering::SeqCst);
                if let Some(on_warm) = &self.on_warm {
                    on_warm();
                }
            }
            engine
        };
        let mut warm = prepare(&mut built, None);
        let mut pace = Pace::default();
        if warm.is_none() {
            // The engine failed on a fresh thread: back off before the next thread tries, so a
            // persistent failure cannot become a hot loop of thread spawns.
            std::thread::sleep(Duration::from_millis(200));
        }
        // A thread that cannot build isolates any more hands over to a fresh one, and so does
        // one that built its share (after serving a run on the last of them).
        while warm.is_some() {
            let Some(job) = next_job(&self.jobs, &self.preparing) else {
                return;
            };
            let Job {
                program,
                limits,
                tools,
                link,
                reply,
                queued,
                queued_at,
            } = *job;
            // At work through the run, counted before the run stops counting as queued: a
            // caller waits awake only while a core is spare (`awake_reply.rs`).
            let at_work = self.load.engine_at_work();
            drop(queued);
            pace.took_a_run(queued_at);
            self.warm_count.fetch_sub(1, Ordering::SeqCst);
            let engine = match warm.take() {
                Some(engine) if engine.heap_bytes == limits.heap_bytes => Ok(engine),
                _ => {
                    built += 1;
                    self.build(limits.heap_bytes)
                }
            };
            let reply: ReplySlot = Arc::new(std::sync::Mutex::new(Some(reply)));
            let control = std::cell::OnceCell::new();
            let (outcome, mut used) = match engine {
                Ok(mut engine) => {
                    let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| {
                        runtime.block_on(execute(
                            &mut engine,
                            &program,
                            &limits,
                            tools,
                            &watchdog,
                            |started: Arc<super::watchdog::RunControl>| {
                                started.set_reply(Arc::clone(&reply));
                                link.started(Arc::clone(&started));
                                let _ = control.set(started);
                            },
                        ))
                    }))
                    .unwrap_or_else(|panic| {
                        internal_error(&format!(
                            "the sandbox worker panicked: {}",
                            panic_message(&panic)
                        ))
                    });
                    (outcome, Some(engine))
                }
                Err(message) => (internal_error(&message), None),
            };
            let sender = reply.lock().unwrap_or_else(|e| e.into_inner()).take();
            let mut aside = Duration::ZERO;
            if let Some(sender) = sender {
                aside = pace.sent_an_outcome(Instant::now(), self.step_aside);
                sender.send(outcome);
                // Let the caller just woken run before the build, at least (it is often queued
                // on this core, behind the build, until the next tick: `step_aside.rs`).
                std::thread::yield_now();
            }
            let given_up = control
                .get()
                .is_some_and(|c| c.abandoned.load(Ordering::SeqCst));
            if given_up {
                // A replacement already serves the queue.
                return;
            }
            // Leave the core to the threads the outcome woke (they carry it to the user) before
            // the teardown and the build, unless a run comes meanwhile or runs come back to
            // back (`step_aside.rs`).
            drop(at_work);
            step_aside(&self.jobs, aside);
            let _building = self.load.engine_at_work();
            // Tear down the used isolate and prepare the next one while no caller is waiting,
            // keeping some of the used isolate's memory for the next run (`reserve.rs`). The
            // next run's `tools` are built now, for the catalog of the run just served.
            let catalog = used
                .as_mut()
                .and_then(|engine| engine.ran_with_catalog.take());
            drop(used);
            if built >= self.isolates_per_thread {
                break;
            }
            let reserve = RunReserve::take();
            warm = prepare(&mut built, catalog);
            drop(reserve);
        }
        if let Some(engine) = warm.take() {
            self.warm_count.fetch_sub(1, Ordering::SeqCst);
            drop(engine);
        }
        drop(watchdog);
        drop(runtime);
        // Hand the place to a fresh thread (its own thread-local engine state).
        let jobs = self.jobs.clone();
        if self.spawn().is_err() {
            fail_all(&jobs, "cannot start a replacement sandbox worker thread");
        }
    }
}

fn fail_all(jobs: &Receiver<Message<Box<Job>>>, message: &str) {
    while let Ok(message_in) = jobs.recv() {
        if let Message::Run(job) = message_in {
            job.reply.send(internal_error(message));
        }
    }
}

pub(crate) fn internal_error(message: &str) -> RunOutcome {
    RunOutcome::failed(RunStatus::Error, RunError::new("InternalError", message))
}

fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "unknown panic".to_string())
}

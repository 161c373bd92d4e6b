//! The wall-clock deadline. A tokio timer cannot stop `while (true) {}`: the thread running the
//! isolate never yields. So each worker owns a watchdog thread that calls
//! `terminate_execution` on the isolate when the deadline passes, and wakes the worker's event
//! loop (which may be idle, awaiting a tool) through a `Notify`.
//!
//! The deadline can be paused (time awaiting an approver does not count, DESIGN.md §5).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use deno_core::v8;
use tokio::sync::{Notify, oneshot};

use super::outcome::{RunError, RunOutcome, RunStatus};

/// How long a run may keep its worker busy after it was told to stop before the worker is
/// given up. The engine's termination is not sticky on the QuickJS facade: it fails the job
/// running when the interrupt check comes (every 10,000 calls or loop turns), and the facade's
/// microtask drain then runs the next job. A microtask flood that forks (`const f = () =>
/// Promise.resolve().then(f)`) outgrows that and never ends: measured, a `--timeout-ms 2000`
/// run still burning a core 38 minutes later. Past this grace the caller gets its outcome, a
/// fresh worker takes the stuck one's place, and the stuck thread is left to the process's
/// end (worker processes, which can be killed, are the lasting fix).
pub(crate) const STUCK_GRACE: Duration = Duration::from_secs(2);

/// Where a run's outcome goes: taken once, by the worker when the run ends, or by the
/// watchdog when it gives the worker up.
pub(crate) type ReplySlot = Arc<Mutex<Option<Reply>>>;

/// Where a run's outcome goes: a channel its caller awaits, or a function called with it on
/// whichever thread finishes the run (a worker process writes it to its host from there: no
/// thread hop).
pub(crate) enum Reply {
    Channel(oneshot::Sender<RunOutcome>),
    Callback(Box<dyn FnOnce(RunOutcome) + Send>),
}

impl Reply {
    pub(crate) fn send(self, outcome: RunOutcome) {
        match self {
            Reply::Channel(sender) => {
                let _ = sender.send(outcome);
            }
            Reply::Callback(deliver) => deliver(outcome),
        }
    }
}

/// Why the watchdog ended a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StopReason {
    Deadline,
    Cancelled,
}

/// Shared between the worker, its watchdog thread and anyone who may cancel or pause the run.
pub(crate) struct RunControl {
    handle: v8::IsolateHandle,
    stopped: Mutex<Option<StopReason>>,
    pub(crate) out_of_memory: AtomicBool,
    pub(crate) wake: Notify,
    timing: Mutex<Timing>,
    /// When the run was told to stop (deadline, cancellation, heap).
    stopped_at: Mutex<Option<Instant>>,
    /// Set when the watchdog gave the run's worker up ([`STUCK_GRACE`]).
    pub(crate) abandoned: AtomicBool,
    reply: Mutex<Option<ReplySlot>>,
    deadline_ms: u128,
}

struct Timing {
    deadline: Instant,
    paused_since: Option<Instant>,
    pauses: u32,
}

impl RunControl {
    pub(crate) fn new(handle: v8::IsolateHandle, deadline: Duration) -> Arc<RunControl> {
        Arc::new(RunControl {
            handle,
            stopped: Mutex::new(None),
            out_of_memory: AtomicBool::new(false),
            wake: Notify::new(),
            timing: Mutex::new(Timing {
                deadline: Instant::now() + deadline,
                paused_since: None,
                pauses: 0,
            }),
            stopped_at: Mutex::new(None),
            abandoned: AtomicBool::new(false),
            reply: Mutex::new(None),
            deadline_ms: deadline.as_millis(),
        })
    }

    /// Lets the watchdog answer the caller if the worker cannot.
    pub(crate) fn set_reply(&self, reply: ReplySlot) {
        *self.reply.lock().unwrap_or_else(|e| e.into_inner()) = Some(reply);
    }

    fn mark_stopped(&self) {
        let mut at = self.stopped_at.lock().unwrap_or_else(|e| e.into_inner());
        at.get_or_insert_with(Instant::now);
    }

    fn stopped_since(&self) -> Option<Instant> {
        *self.stopped_at.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Gives the run's worker up: the caller gets an outcome now.
    fn abandon(&self) {
        self.abandoned.store(true, Ordering::SeqCst);
        let slot = self.reply.lock().unwrap_or_else(|e| e.into_inner()).take();
        let Some(sender) =
            slot.and_then(|slot| slot.lock().unwrap_or_else(|e| e.into_inner()).take())
        else {
            return;
        };
        let (status, name, what) = if self.out_of_memory.load(Ordering::SeqCst) {
            (
                RunStatus::OutOfMemory,
                "OutOfMemory",
                "the program exceeded the heap limit".to_string(),
            )
        } else {
            match self.stop_reason() {
                Some(StopReason::Cancelled) => (
                    RunStatus::Cancelled,
                    "Cancelled",
                    "the run was cancelled".to_string(),
                ),
                _ => (
                    RunStatus::Timeout,
                    "Timeout",
                    format!("timeout after {} ms", self.deadline_ms),
                ),
            }
        };
        let message = format!(
            "{what}; the program kept the engine busy for {} ms after it was stopped (e.g. a forking microtask flood), so its sandbox worker was abandoned and replaced; console output is lost",
            STUCK_GRACE.as_millis()
        );
        sender.send(RunOutcome::failed(status, RunError::new(name, message)));
    }

    /// Stop the run: terminate the isolate and wake the event loop. The first reason wins.
    pub(crate) fn stop(&self, reason: StopReason) {
        {
            let mut stopped = self.stopped.lock().unwrap_or_else(|e| e.into_inner());
            if stopped.is_some() {
                return;
            }
            *stopped = Some(reason);
        }
        self.mark_stopped();
        self.handle.terminate_execution();
        self.wake.notify_one();
    }

    pub(crate) fn stop_reason(&self) -> Option<StopReason> {
        *self.stopped.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Heap limit reached: terminate the isolate (the outcome says `out_of_memory`).
    pub(crate) fn heap_exhausted(&self) {
        self.out_of_memory.store(true, Ordering::SeqCst);
        self.mark_stopped();
        self.handle.terminate_execution();
        self.wake.notify_one();
    }

    /// Stop counting time (nested: every `pause` needs a `resume`). Approvals of nested tool
    /// calls use this: time awaiting an approver does not count against the deadline.
    #[allow(dead_code)] // wired up by the tool bindings
    pub(crate) fn pause(&self) {
        let mut timing = self.timing.lock().unwrap_or_else(|e| e.into_inner());
        if timing.pauses == 0 {
            timing.paused_since = Some(Instant::now());
        }
        timing.pauses += 1;
    }

    #[allow(dead_code)] // wired up by the tool bindings
    pub(crate) fn resume(&self) {
        let mut timing = self.timing.lock().unwrap_or_else(|e| e.into_inner());
        timing.pauses = timing.pauses.saturating_sub(1);
        if timing.pauses == 0
            && let Some(since) = timing.paused_since.take()
        {
            timing.deadline += since.elapsed();
        }
    }

    /// The deadline as it stands; `None` while paused.
    fn deadline(&self) -> Option<Instant> {
        let timing = self.timing.lock().unwrap_or_else(|e| e.into_inner());
        (timing.pauses == 0).then_some(timing.deadline)
    }

    /// How long until the deadline; `None` while paused.
    fn remaining(&self) -> Option<Duration> {
        let timing = self.timing.lock().unwrap_or_else(|e| e.into_inner());
        if timing.pauses > 0 {
            return None;
        }
        Some(timing.deadline.saturating_duration_since(Instant::now()))
    }
}

/// One watchdog thread per worker; it watches at most one run at a time.
/// Called once when the watchdog gives its worker up: starts a replacement.
pub(crate) type OnStuck = Box<dyn FnOnce() + Send>;

pub(crate) struct Watchdog {
    shared: Arc<(Mutex<Watched>, Condvar)>,
    thread: Option<JoinHandle<()>>,
}

#[derive(Default)]
struct Watched {
    run: Option<Arc<RunControl>>,
    shutdown: bool,
    /// When the watchdog's wait ends by itself: `None` while it waits untimed (or is not
    /// waiting yet). A run whose deadline is no earlier needs no wake-up to be watched.
    wakes_at: Option<Instant>,
    /// Times the watchdog has looked at its state (the tests read it).
    looks: u64,
}

/// How often a paused deadline is looked at again (pauses are rare and short-lived).
const PAUSE_POLL: Duration = Duration::from_millis(50);

impl Watchdog {
    pub(crate) fn spawn(name: String, on_stuck: Option<OnStuck>) -> std::io::Result<Watchdog> {
        let shared = Arc::new((Mutex::new(Watched::default()), Condvar::new()));
        let for_thread = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name(name)
            .stack_size(256 * 1024)
            .spawn(move || watch(&for_thread, on_stuck))?;
        Ok(Watchdog {
            shared,
            thread: Some(thread),
        })
    }

    /// Watch `run` until `disarm` (or until its deadline fires).
    ///
    /// The watchdog is woken only if its wait would end after the run's deadline. After a run,
    /// it sleeps on until that run's deadline; the next run (with the same limits) has a later
    /// one, so the watchdog finds it when that wait ends and waits on for it. Waking it cost
    /// every run's start a system call, and put a third thread on the two cores while the run
    /// began.
    pub(crate) fn arm(&self, run: Arc<RunControl>) {
        let (lock, cv) = &*self.shared;
        let looks_in_time = {
            let mut watched = lock.lock().unwrap_or_else(|e| e.into_inner());
            let in_time = matches!(
                (watched.wakes_at, run.deadline()),
                (Some(wakes), Some(deadline)) if wakes <= deadline
            );
            watched.run = Some(run);
            in_time
        };
        if !looks_in_time {
            // After the unlock, so the woken watchdog does not wait for the lock on its way in.
            cv.notify_one();
        }
    }

    /// Stop watching the run. The watchdog is not woken: it finds the run gone when its timed
    /// wait ends and waits untimed from then on (it holds nothing of the run while it waits).
    /// Waking it cost the worker a system call, and another core a wake-up, between the
    /// program's end and its outcome.
    pub(crate) fn disarm(&self) {
        let (lock, _) = &*self.shared;
        lock.lock().unwrap_or_else(|e| e.into_inner()).run = None;
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        {
            let (lock, cv) = &*self.shared;
            let mut watched = lock.lock().unwrap_or_else(|e| e.into_inner());
            watched.shutdown = true;
            cv.notify_one();
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn watch(shared: &(Mutex<Watched>, Condvar), mut on_stuck: Option<OnStuck>) {
    let (lock, cv) = shared;
    let mut watched = lock.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        watched.looks += 1;
        if watched.shutdown {
            return;
        }
        let Some(run) = watched.run.clone() else {
            watched.wakes_at = None;
            watched = cv.wait(watched).unwrap_or_else(|e| e.into_inner());
            continue;
        };
        // Dropped before the wait: a disarmed run is not kept alive until the wait ends.
        let wait = match next_look(&run) {
            Look::In(wait) => wait,
            Look::Now(action) => {
                if action == Action::GiveUp {
                    watched.run = None;
                    // The pool learns first, so whoever gets the outcome already sees the
                    // worker given up (a worker process then asks to be replaced).
                    if let Some(replace) = on_stuck.take() {
                        replace();
                    }
                    run.abandon();
                } else {
                    run.stop(StopReason::Deadline);
                }
                continue;
            }
        };
        drop(run);
        watched.wakes_at = Some(Instant::now() + wait);
        watched = cv
            .wait_timeout(watched, wait)
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
}

#[derive(Debug, PartialEq)]
enum Action {
    StopAtDeadline,
    GiveUp,
}

enum Look {
    Now(Action),
    In(Duration),
}

/// What the watchdog does about an armed run now, or when it looks again.
fn next_look(run: &RunControl) -> Look {
    // Told to stop and still armed: the worker gets STUCK_GRACE to come back.
    if let Some(since) = run.stopped_since() {
        let waited = since.elapsed();
        return if waited >= STUCK_GRACE {
            Look::Now(Action::GiveUp)
        } else {
            Look::In(STUCK_GRACE - waited)
        };
    }
    match run.remaining() {
        Some(left) if left.is_zero() => Look::Now(Action::StopAtDeadline),
        Some(left) => Look::In(left),
        None => Look::In(PAUSE_POLL),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use deno_core::{JsRuntime, RuntimeOptions};

    #[test]
    fn a_disarmed_run_is_let_go_at_once_though_the_watchdog_sleeps_on() {
        let mut runtime = JsRuntime::new(RuntimeOptions::default());
        let run = RunControl::new(
            runtime.v8_isolate().thread_safe_handle(),
            Duration::from_secs(30),
        );
        let watchdog = Watchdog::spawn("watchdog-test".into(), None).unwrap();
        watchdog.arm(Arc::clone(&run));
        // Let the watchdog take its look and start waiting on the 30 s deadline.
        std::thread::sleep(Duration::from_millis(50));
        watchdog.disarm();
        assert_eq!(
            Arc::strong_count(&run),
            1,
            "the watchdog still holds the run it was told to stop watching"
        );
        assert_eq!(run.stop_reason(), None);
        // A run armed next is watched: its deadline fires.
        let next = RunControl::new(
            runtime.v8_isolate().thread_safe_handle(),
            Duration::from_millis(20),
        );
        watchdog.arm(Arc::clone(&next));
        let started = Instant::now();
        while next.stop_reason().is_none() && started.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(next.stop_reason(), Some(StopReason::Deadline));
    }

    /// Arms a run with `deadline` and returns it with the watchdog's looks until then.
    fn arm_and_count(
        watchdog: &Watchdog,
        runtime: &mut JsRuntime,
        deadline: Duration,
    ) -> (Arc<RunControl>, u64) {
        let run = RunControl::new(runtime.v8_isolate().thread_safe_handle(), deadline);
        let looks = watchdog.shared.0.lock().unwrap().looks;
        watchdog.arm(Arc::clone(&run));
        (run, looks)
    }

    fn looks(watchdog: &Watchdog) -> u64 {
        watchdog.shared.0.lock().unwrap().looks
    }

    fn stopped_within(run: &RunControl, limit: Duration) -> bool {
        let started = Instant::now();
        while run.stop_reason().is_none() && started.elapsed() < limit {
            std::thread::sleep(Duration::from_millis(2));
        }
        run.stop_reason() == Some(StopReason::Deadline)
    }

    #[test]
    fn a_run_due_after_the_watchdogs_wait_ends_is_armed_without_waking_it_and_still_stopped() {
        let mut runtime = JsRuntime::new(RuntimeOptions::default());
        let watchdog = Watchdog::spawn("watchdog-test".into(), None).unwrap();
        let (first, _) = arm_and_count(&watchdog, &mut runtime, Duration::from_millis(300));
        // The watchdog waits on the first run's deadline.
        std::thread::sleep(Duration::from_millis(30));
        watchdog.disarm();
        drop(first);
        let armed = Instant::now();
        let (second, before) = arm_and_count(&watchdog, &mut runtime, Duration::from_millis(400));
        std::thread::sleep(Duration::from_millis(30));
        assert_eq!(
            looks(&watchdog),
            before,
            "arming a later deadline woke the watchdog"
        );
        // Its wait for the first deadline ends, it finds the second run and stops it on time.
        assert!(stopped_within(&second, Duration::from_secs(5)));
        assert!(
            armed.elapsed() >= Duration::from_millis(400),
            "stopped before its deadline"
        );
    }

    #[test]
    fn a_run_due_before_the_watchdogs_wait_ends_wakes_it() {
        let mut runtime = JsRuntime::new(RuntimeOptions::default());
        let watchdog = Watchdog::spawn("watchdog-test".into(), None).unwrap();
        let (first, _) = arm_and_count(&watchdog, &mut runtime, Duration::from_secs(30));
        std::thread::sleep(Duration::from_millis(30));
        watchdog.disarm();
        drop(first);
        let (second, before) = arm_and_count(&watchdog, &mut runtime, Duration::from_millis(40));
        let armed = Instant::now();
        assert!(stopped_within(&second, Duration::from_secs(5)));
        assert!(looks(&watchdog) > before);
        assert!(armed.elapsed() < Duration::from_secs(5));
    }
}

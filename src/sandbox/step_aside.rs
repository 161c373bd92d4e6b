//! After a run's outcome is sent, its worker steps aside for a moment before it tears down the
//! used isolate and builds the next one.
//!
//! That teardown and build are 2-5 ms of CPU, and they start the instant the outcome is sent,
//! which is exactly when the outcome wakes the threads that carry it to the user: the caller,
//! then (over MCP) the server's writer and the client; with worker processes, first the host's
//! worker-process thread. On the kernels measured (Linux 6.18: EEVDF with lazy preemption, a
//! 4 ms tick), a woken thread does not preempt a thread running in user space before the next
//! tick, and it was often queued on the builder's core while the other core idled (`perf sched
//! timehist`: the MCP client woken, then waiting 3.9 ms behind a worker's build). So a quarter
//! of the `run_code` requests over MCP took 2.5-6 ms instead of 1-1.5 ms. The worker now waits
//! for [`STEP_ASIDE`] first (asleep: the core is the woken threads'), or until a message is
//! queued for the workers (a run that may need this worker's next isolate), whichever comes
//! first. Any message ends it, a heads-up too, though a heads-up is only sent while another
//! worker is warm: the worker then builds while the other runs, as it did before.
//!
//! A run that comes while the worker steps aside ends it at once, but its isolate's build then
//! starts when it comes rather than when the previous outcome was sent: runs back to back on one
//! worker took 0.3-2 ms longer each (`engine_churn`). So a worker steps aside only while runs
//! come to it seldom: when its last run came more than [`STREAMING_GAP`] after the outcome
//! before it (see [`Pace`]). Runs back to back are bound by the builds' CPU anyway, and there the
//! worker builds at once, as before.

use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Select};

/// How long a worker leaves the core to the threads its outcome wakes: the chain to an MCP
/// client takes 0.2-0.6 ms on the machines measured.
pub(crate) const STEP_ASIDE: Duration = Duration::from_millis(1);

/// A worker whose runs come within this of its previous outcome builds at once: the teardown
/// and the build take 2-5 ms of CPU (up to 8 in the VM's slow phases), so such a run waits on
/// them all but always, and stepping aside would only add to its wait. 10 ms is that, with a
/// margin.
pub(crate) const STREAMING_GAP: Duration = Duration::from_millis(10);

/// How soon runs come to one worker after its outcomes, which decides its step aside.
#[derive(Debug, Default)]
pub(crate) struct Pace {
    last_outcome: Option<Instant>,
    streaming: bool,
}

impl Pace {
    /// The worker took a run queued at `queued_at` (a run queued before the last outcome, while
    /// the worker was busy, counts as back to back).
    pub(crate) fn took_a_run(&mut self, queued_at: Instant) {
        self.streaming = self
            .last_outcome
            .is_some_and(|sent| queued_at.saturating_duration_since(sent) < STREAMING_GAP);
    }

    /// The worker sends an outcome at `at`: how long to step aside before the next build,
    /// `full` unless runs come back to back.
    pub(crate) fn sent_an_outcome(&mut self, at: Instant, full: Duration) -> Duration {
        self.last_outcome = Some(at);
        if self.streaming { Duration::ZERO } else { full }
    }
}

/// How a step aside ended.
#[derive(Debug, PartialEq)]
pub(crate) enum Aside {
    /// The time was up.
    Elapsed,
    /// Something was queued for the workers (left in the queue), or the queue was closed; or
    /// the wait ended spuriously, which `Select` allows. The worker builds at once either way.
    Queued,
}

/// Wait asleep until `cap` has passed or `jobs` has something to take, without taking it.
pub(crate) fn step_aside<T>(jobs: &Receiver<T>, cap: Duration) -> Aside {
    if cap.is_zero() {
        return Aside::Elapsed;
    }
    let mut select = Select::new();
    select.recv(jobs);
    match select.ready_timeout(cap) {
        Ok(_) => Aside::Queued,
        Err(_) => Aside::Elapsed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn with_nothing_queued_the_worker_steps_aside_for_the_whole_time() {
        let (_sender, jobs) = crossbeam_channel::unbounded::<u32>();
        let started = Instant::now();
        assert_eq!(step_aside(&jobs, Duration::from_millis(30)), Aside::Elapsed);
        assert!(started.elapsed() >= Duration::from_millis(30));
    }

    #[test]
    fn a_run_queued_meanwhile_ends_the_step_aside_and_stays_in_the_queue() {
        let (sender, jobs) = crossbeam_channel::unbounded();
        let started = Instant::now();
        std::thread::scope(|scope| {
            scope.spawn(|| {
                std::thread::sleep(Duration::from_millis(20));
                sender.send(7).unwrap();
            });
            assert_eq!(step_aside(&jobs, Duration::from_secs(30)), Aside::Queued);
        });
        assert!(started.elapsed() < Duration::from_secs(10));
        assert_eq!(
            jobs.try_recv(),
            Ok(7),
            "the run is left for whoever takes it"
        );
    }

    #[test]
    fn a_run_already_queued_or_a_closed_queue_ends_it_at_once() {
        let (sender, jobs) = crossbeam_channel::unbounded();
        sender.send(1).unwrap();
        let started = Instant::now();
        assert_eq!(step_aside(&jobs, Duration::from_secs(30)), Aside::Queued);
        assert_eq!(jobs.try_recv(), Ok(1));
        drop(sender);
        assert_eq!(step_aside(&jobs, Duration::from_secs(30)), Aside::Queued);
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn a_worker_steps_aside_unless_its_last_run_came_soon_after_the_outcome_before_it() {
        let full = Duration::from_millis(1);
        let start = Instant::now();
        let at = |ms: u64| start + Duration::from_millis(ms);
        let mut pace = Pace::default();
        pace.took_a_run(at(0));
        assert_eq!(pace.sent_an_outcome(at(1), full), full, "a first run");
        pace.took_a_run(at(3));
        assert_eq!(
            pace.sent_an_outcome(at(40), full),
            Duration::ZERO,
            "a run queued 2 ms after the outcome: back to back (however long the build took)"
        );
        pace.took_a_run(at(39));
        assert_eq!(
            pace.sent_an_outcome(at(60), full),
            Duration::ZERO,
            "a run queued before the outcome: the worker was busy"
        );
        pace.took_a_run(at(60) + STREAMING_GAP);
        assert_eq!(
            pace.sent_an_outcome(at(200), full),
            full,
            "a run queued a gap after"
        );
    }

    #[test]
    fn no_time_is_no_step_aside() {
        let (_sender, jobs) = crossbeam_channel::unbounded::<u32>();
        assert_eq!(step_aside(&jobs, Duration::ZERO), Aside::Elapsed);
    }

    #[test]
    fn a_worker_builds_its_next_isolate_after_stepping_aside_when_a_run_comes_or_at_once_when_runs_come_back_to_back()
     {
        use crate::sandbox::awake_reply::tests::{eventually, one_warm_worker};
        use crate::sandbox::watchdog::Reply;
        use crate::sandbox::{Limits, Sandbox};
        use std::sync::atomic::Ordering;
        // A step aside far longer than the test: only a queued run can end it.
        let (pool, load) = one_warm_worker(Duration::from_secs(600));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let submit = |source: &str| {
            let (reply, outcome) = tokio::sync::oneshot::channel();
            let link = Sandbox::submit_to(
                &pool,
                source,
                Limits::default(),
                None,
                Reply::Channel(reply),
            )
            .unwrap();
            (link, outcome)
        };
        let run = |source: &str| {
            let (_link, outcome) = submit(source);
            runtime.block_on(outcome).unwrap()
        };
        assert_eq!(run("return 1").status.as_str(), "ok");
        // Stepping aside: not at work, and no isolate built (a build takes milliseconds).
        eventually("the engine leaves its core", || load.busy() == 0);
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(
            load.busy(),
            0,
            "the worker builds nothing while it steps aside"
        );
        assert_eq!(pool.warm.load(Ordering::SeqCst), 0);
        // A run queued ends the step aside: the worker builds and runs it. A third, queued while
        // the second runs, comes back to back: after it the worker builds at once.
        let started = Instant::now();
        let (_second_link, second) =
            submit("const until = Date.now() + 200; while (Date.now() < until) {} return 2");
        let (_third_link, third) = submit("return 3");
        let second = runtime.block_on(second).unwrap();
        assert_eq!(second.status.as_str(), "ok");
        assert_eq!(second.value.as_deref().map(|v| v.get()), Some("2"));
        assert!(started.elapsed() < Duration::from_secs(60));
        assert_eq!(runtime.block_on(third).unwrap().status.as_str(), "ok");
        eventually("the worker builds its next isolate at once", || {
            pool.warm.load(Ordering::SeqCst) == 1
        });
    }
}

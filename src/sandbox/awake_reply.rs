//! A caller waits for a short run's outcome awake, when a core is spare for it.
//!
//! The worker sends the outcome through a channel; a caller parked on it is woken by the send.
//! On the 2-core VMs we measure on, that wake-up was 36-60 µs of a warm `return 1 + 1` (W1,
//! 220-430 µs by the machine's phase): the caller's core is halted while it waits, and waking it
//! waits for the hypervisor to run it again (the same cost the heads-up takes off the worker's
//! side, `heads_up.rs`). A caller that also came back to a halted core ran its own part after
//! the run (the outer pipeline's post stages, the render) slower, from cold caches.
//!
//! So after queuing its run, a caller first waits for the outcome awake: it yields to its
//! runtime's other tasks and looks again, for up to [`AWAKE_CAP`], then parks as before. A run
//! that ends within the cap is received at once. Only while a core is spare does a caller wait
//! awake: the runs queued for an engine thread, the engine threads at work and the callers
//! already awake ([`CoreLoad`]) must leave it a core, when it starts and at every look after. So
//! under load, when every core has a run or a build to do, no caller spins and none takes a core
//! from an engine. One core: never.
//!
//! Only a run that calls no tool is waited for awake ([`RunOptions::calls_no_tools`], which
//! `CodeMode` sets from the program's static plan; a run given no tools counts too). A run that
//! calls tools waits on them, most often for longer than the cap. And waiting awake through the
//! first 300 µs of W3 (100 parallel calls of a 10 ms tool) made W3 0.2-0.3 ms slower in every
//! pair measured on these VMs, with the cap at 150 µs as at 300: the caller's spin cost the engine
//! thread issuing the calls more than the caller could gain (docs/PERFORMANCE-LOG.md, "The caller
//! waits awake").
//!
//! [`RunOptions::calls_no_tools`]: crate::sandbox::RunOptions::calls_no_tools

use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

/// The longest a caller waits awake: a short run's whole length on the machines we measure on
/// (W1's engine part is 80-150 µs, 200 µs at its 90th percentile in a slow phase). A run still
/// going after it costs its caller a wake-up, as without the wait.
pub(crate) const AWAKE_CAP: Duration = Duration::from_micros(300);

/// What the process's cores are busy with, as far as the engine threads' pools know.
///
/// An engine thread counts as at work from taking a job to the end of the build of its next
/// isolate, except while it steps aside between the two (asleep: `step_aside.rs`), and
/// including while its run waits on a tool (which needs no core: the count errs towards
/// no wait). One that its watchdog gave up stays counted for as long as it is stuck, which is
/// right while it spins.
pub(crate) struct CoreLoad {
    /// Runs queued for an engine thread and not yet taken: each will need a core.
    queued: AtomicUsize,
    engines: AtomicUsize,
    awake: AtomicUsize,
    cores: usize,
}

impl CoreLoad {
    pub(crate) const fn new(cores: usize) -> CoreLoad {
        CoreLoad {
            queued: AtomicUsize::new(0),
            engines: AtomicUsize::new(0),
            awake: AtomicUsize::new(0),
            cores,
        }
    }

    /// Counts a run from its submission until an engine thread takes it.
    pub(crate) fn run_queued(&self) -> Counted<'_> {
        Counted::on(&self.queued)
    }

    /// Counts an engine thread at work. Take it before dropping the run's [`CoreLoad::run_queued`],
    /// so the run is never counted on neither side.
    pub(crate) fn engine_at_work(&self) -> Counted<'_> {
        Counted::on(&self.engines)
    }

    /// Cores taken by queued runs and engines at work.
    pub(super) fn busy(&self) -> usize {
        self.queued.load(Ordering::SeqCst) + self.engines.load(Ordering::SeqCst)
    }

    /// Cores taken, the run waited on among them (counted as queued or at work when it comes
    /// from a pool; a core in any case).
    fn taken(&self) -> usize {
        self.busy().max(1)
    }

    /// Counts one more caller awake, if a core is spare for it.
    fn try_wake(&self) -> Option<Counted<'_>> {
        let busy = self.taken();
        self.awake
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |awake| {
                (busy + awake < self.cores).then_some(awake + 1)
            })
            .ok()
            .map(|_| Counted(&self.awake))
    }

    /// Whether the callers awake (one of them the one asking) still have their cores.
    fn still_spare(&self) -> bool {
        self.taken() + self.awake.load(Ordering::SeqCst) <= self.cores
    }
}

/// The process's load: the cores are the process's to share, whatever pool runs on them.
pub(crate) fn load() -> &'static CoreLoad {
    static LOAD: OnceLock<CoreLoad> = OnceLock::new();
    LOAD.get_or_init(|| CoreLoad::new(std::thread::available_parallelism().map_or(1, |n| n.get())))
}

/// One unit of a [`CoreLoad`] count, given back when dropped.
pub(crate) struct Counted<'a>(&'a AtomicUsize);

impl Counted<'_> {
    fn on(count: &AtomicUsize) -> Counted<'_> {
        count.fetch_add(1, Ordering::SeqCst);
        Counted(count)
    }
}

impl Drop for Counted<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// How a wait awake ended.
#[derive(Debug, PartialEq)]
pub(crate) enum Waited<T> {
    /// The outcome came.
    Received(T),
    /// The sender is gone without sending (the worker stopped).
    SenderGone,
    /// Park on the channel as usual: no spare core (at the start or since), the cap reached, or
    /// the caller cancelled (its own path handles that). The channel still holds whatever comes.
    Park,
}

/// Waits for the outcome on `reply` awake, for up to [`AWAKE_CAP`], while `load` leaves a core
/// spare for it.
pub(crate) async fn outcome_awake<T>(
    load: &CoreLoad,
    reply: &mut oneshot::Receiver<T>,
    cancel: &CancellationToken,
) -> Waited<T> {
    wait_awake(load, reply, cancel, AWAKE_CAP).await
}

async fn wait_awake<T>(
    load: &CoreLoad,
    reply: &mut oneshot::Receiver<T>,
    cancel: &CancellationToken,
    cap: Duration,
) -> Waited<T> {
    let Some(_awake) = load.try_wake() else {
        return Waited::Park;
    };
    let until = Instant::now() + cap;
    loop {
        match reply.try_recv() {
            Ok(outcome) => return Waited::Received(outcome),
            Err(oneshot::error::TryRecvError::Closed) => return Waited::SenderGone,
            Err(oneshot::error::TryRecvError::Empty) => {}
        }
        if cancel.is_cancelled() || Instant::now() >= until || !load.still_spare() {
            return Waited::Park;
        }
        // Lets the runtime run its other tasks (and poll its drivers without sleeping) before
        // this one looks again.
        tokio::task::yield_now().await;
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    fn current_thread() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn an_outcome_sent_during_the_wait_is_received_by_it() {
        let load = CoreLoad::new(2);
        let (sender, mut reply) = oneshot::channel();
        let got = std::thread::scope(|scope| {
            scope.spawn(|| {
                std::thread::sleep(Duration::from_millis(5));
                sender.send(7).unwrap();
            });
            current_thread().block_on(wait_awake(
                &load,
                &mut reply,
                &CancellationToken::new(),
                Duration::from_secs(5),
            ))
        });
        assert_eq!(got, Waited::Received(7));
        assert_eq!(
            load.awake.load(Ordering::SeqCst),
            0,
            "no longer counted awake"
        );
    }

    #[test]
    fn the_wait_yields_to_the_callers_other_tasks() {
        // The outcome comes from a task on the caller's own (single-threaded) runtime: a wait
        // that did not yield would keep it from running and reach its cap.
        let load = CoreLoad::new(2);
        let runtime = current_thread();
        let got = runtime.block_on(async {
            let (sender, mut reply) = oneshot::channel();
            tokio::spawn(async move {
                for _ in 0..3 {
                    tokio::task::yield_now().await;
                }
                sender.send(5).unwrap();
            });
            wait_awake(
                &load,
                &mut reply,
                &CancellationToken::new(),
                Duration::from_secs(5),
            )
            .await
        });
        assert_eq!(got, Waited::Received(5));
    }

    #[test]
    fn the_wait_ends_at_its_cap_and_leaves_the_outcome_to_the_channel() {
        let load = CoreLoad::new(2);
        let (sender, mut reply) = oneshot::channel();
        let started = Instant::now();
        let got = current_thread().block_on(wait_awake(
            &load,
            &mut reply,
            &CancellationToken::new(),
            Duration::from_millis(20),
        ));
        assert_eq!(got, Waited::Park);
        assert!(started.elapsed() >= Duration::from_millis(20));
        sender.send(1).unwrap();
        assert_eq!(reply.try_recv(), Ok(1), "the receiver still takes it");
        assert_eq!(load.awake.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn a_cancelled_caller_stops_waiting_at_once() {
        let load = CoreLoad::new(2);
        let (_sender, mut reply) = oneshot::channel::<u32>();
        let cancel = CancellationToken::new();
        cancel.cancel();
        let started = Instant::now();
        let got = current_thread().block_on(wait_awake(
            &load,
            &mut reply,
            &cancel,
            Duration::from_secs(5),
        ));
        assert_eq!(got, Waited::Park);
        assert!(started.elapsed() < Duration::from_secs(1));
    }

    #[test]
    fn a_worker_gone_ends_the_wait_with_its_error() {
        let load = CoreLoad::new(2);
        let (sender, mut reply) = oneshot::channel::<u32>();
        drop(sender);
        let got = current_thread().block_on(wait_awake(
            &load,
            &mut reply,
            &CancellationToken::new(),
            Duration::from_secs(5),
        ));
        assert_eq!(got, Waited::SenderGone);
    }

    #[test]
    fn no_caller_waits_awake_without_a_spare_core() {
        let (_sender, mut reply) = oneshot::channel::<u32>();
        let wait = |load: &CoreLoad, reply: &mut oneshot::Receiver<u32>| {
            let started = Instant::now();
            let got = current_thread().block_on(wait_awake(
                load,
                reply,
                &CancellationToken::new(),
                Duration::from_secs(5),
            ));
            (got, started.elapsed())
        };
        // One core: the engine needs it.
        let (got, took) = wait(&CoreLoad::new(1), &mut reply);
        assert!(got == Waited::Park && took < Duration::from_secs(1));
        // Two cores: an engine at work, a run queued.
        let busy = CoreLoad::new(2);
        let _first = busy.engine_at_work();
        let _second = busy.run_queued();
        let (got, took) = wait(&busy, &mut reply);
        assert!(got == Waited::Park && took < Duration::from_secs(1));
        assert_eq!(busy.awake.load(Ordering::SeqCst), 0);
    }

    /// Polls `done` every millisecond for up to 10 s.
    pub(in crate::sandbox) fn eventually(what: &str, done: impl Fn() -> bool) {
        let until = Instant::now() + Duration::from_secs(10);
        while !done() {
            assert!(Instant::now() < until, "never: {what}");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// A pool of one worker, warm, with a load of its own (so other tests' engines cannot count
    /// in it) and the given step aside after each run.
    pub(in crate::sandbox) fn one_warm_worker(
        step_aside: Duration,
    ) -> (crate::sandbox::pool::Pool, &'static CoreLoad) {
        let load: &'static CoreLoad = Box::leak(Box::new(CoreLoad::new(2)));
        let pool = crate::sandbox::pool::Pool::start(
            1,
            8 * crate::call::MIB,
            64 * crate::call::MIB,
            64,
            None,
            load,
            step_aside,
        )
        .unwrap();
        eventually("the worker is warm", || {
            pool.warm.load(Ordering::SeqCst) == 1
        });
        (pool, load)
    }

    #[test]
    fn a_run_counts_as_queued_then_its_engine_at_work_until_the_next_build() {
        use crate::sandbox::watchdog::Reply;
        use crate::sandbox::{Limits, Sandbox};
        let (pool, load) = one_warm_worker(crate::sandbox::step_aside::STEP_ASIDE);
        assert_eq!(load.busy(), 0, "an idle warm worker takes no core");
        let limits = Limits {
            deadline: Duration::from_millis(300),
            ..Limits::default()
        };
        let (reply, outcome) = oneshot::channel();
        let _link = Sandbox::submit_to(
            &pool,
            "while (true) {}",
            limits,
            None,
            Reply::Channel(reply),
        )
        .unwrap();
        // Queued, taken, or for an instant both: the worker counts its engine at work before the
        // run stops counting as queued, so the run is never counted on neither side.
        let busy = load.busy();
        assert!(
            busy == 1 || busy == 2,
            "queued or taken, the run counts (busy {busy})"
        );
        eventually(
            "the worker takes the run, at work and no longer queued",
            || load.engines.load(Ordering::SeqCst) == 1 && load.queued.load(Ordering::SeqCst) == 0,
        );
        let outcome = current_thread().block_on(outcome).unwrap();
        assert_eq!(outcome.status.as_str(), "timeout");
        eventually(
            "the worker is done with the run and the build after it",
            || load.busy() == 0 && pool.warm.load(Ordering::SeqCst) == 1,
        );
        drop(pool);
        assert_eq!(load.busy(), 0);
    }

    #[test]
    fn a_run_queued_meanwhile_ends_the_wait() {
        let load = CoreLoad::new(2);
        // The run waited on has its engine.
        let _engine = load.engine_at_work();
        let (_sender, mut reply) = oneshot::channel::<u32>();
        let cancel = CancellationToken::new();
        let runtime = current_thread();
        let started = Instant::now();
        let got = runtime.block_on(async {
            let waiting = wait_awake(&load, &mut reply, &cancel, Duration::from_secs(5));
            let another = async {
                tokio::task::yield_now().await;
                // Another caller queues a run: with the first run's engine, both cores are taken.
                load.run_queued()
            };
            let (got, queued) = tokio::join!(waiting, another);
            drop(queued);
            got
        });
        assert_eq!(got, Waited::Park);
        assert!(started.elapsed() < Duration::from_secs(1));
    }

    #[test]
    fn callers_awake_take_only_the_cores_engines_leave() {
        let load = CoreLoad::new(4);
        let _engine = load.engine_at_work();
        let first = load.try_wake().expect("three cores spare");
        let second = load.try_wake().expect("two spare");
        let third = load.try_wake().expect("one spare");
        assert!(load.try_wake().is_none(), "none spare");
        drop(second);
        assert!(
            load.try_wake().is_some(),
            "a caller that stopped frees its core"
        );
        drop((first, third));
    }
}

//! Timer wakes on the tick, not a phase after it.
//!
//! Tokio's timer counts whole milliseconds from the runtime's start. When a worker parks, tokio
//! sleeps for `next deadline's tick - floor(now)` milliseconds *counted from the real now*, so the
//! wake lands as far past the deadline's tick as the park was past its own tick: up to 1 ms late,
//! half a millisecond on average, and every later timer wake keeps that phase. A tool that waits
//! on a timer (a sleep, a backoff, a poll interval), or a program's `setTimeout`, ends that much
//! after its tick; a run waiting on 100 of them pays it once per batch (docs/PERFORMANCE.md, W3).
//!
//! So when a worker parks off its tick, a thread shared by the pool wakes it at the next tick.
//! Tokio fires what is due at that tick and parks again in phase with its ticks, so the next timer
//! wake lands on its tick. A park already in phase is left alone, and a worker gets at most
//! `1 + MAX_CHAINED` of these wakes in a row, so a machine too loaded to wake a thread in time does
//! not turn a long wait into a wake-up every millisecond.
//!
//! "At the tick" is meant to the microsecond, because the phase of that park is the lateness of
//! every timer wake after it:
//! - the ticks are counted from tokio's own tick 0, which [`tick_zero`] finds when the runtime is
//!   built (an instant taken after the build was up to 50 µs late, and 3% of the calls in W3 were
//!   then judged a tick off);
//! - the wake is sent early, by how late this worker's wakes have come (a running average, at
//!   most [`MAX_LEAD`]), and the worker spins until just past the tick. Waking a thread whose core
//!   is halted takes tens of microseconds (35-55 µs on the VMs we measure on, one hop for the tick
//!   thread and one for the worker), so a wake sent at the tick reached the worker 60-100 µs
//!   after it, and W3's last timer batch started 85-125 µs after its tick (15-19 µs now).

use std::sync::atomic::{AtomicU8, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
use tokio::sync::Notify;

/// A park closer than this to the tick before it is left alone: the wake tokio gives it is at
/// most this late.
const IN_PHASE: Duration = Duration::from_micros(100);

/// How far past a tick an aligned wake lets the worker go, so that its floored "now" is in that
/// tick.
const PAST_THE_TICK: Duration = Duration::from_micros(2);

/// The lead of the first aligned wakes, before the worker has measured how late its wakes come.
const FIRST_LEAD: Duration = Duration::from_micros(50);

/// The most an aligned wake is sent before its tick, so the most a worker spins for one.
const MAX_LEAD: Duration = Duration::from_micros(150);

/// Aligned wakes that may follow an aligned wake with no other wake-up in between: a worker gets
/// at most `1 + MAX_CHAINED` in a row.
const MAX_CHAINED: u8 = 2;

/// What the worker's last wake-up was, as its next park sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(u8)]
enum Last {
    /// Its own: a timer, a call's result, a cancellation.
    Other = 0,
    /// An aligned wake is on its way.
    Armed = 1,
    /// Ours.
    Aligned = 2,
}

/// What a park does: nothing, or ask for a wake at the next tick, being the `n`th in a row.
#[derive(Debug, PartialEq)]
enum OnPark {
    Nothing,
    WakeAtNextTick { chained: u8 },
}

fn on_park(last: Last, chained: u8, phase: Duration) -> OnPark {
    let chained = match last {
        Last::Armed => return OnPark::Nothing,
        Last::Aligned => chained + 1,
        Last::Other => 0,
    };
    if phase < IN_PHASE || chained > MAX_CHAINED {
        return OnPark::Nothing;
    }
    OnPark::WakeAtNextTick { chained }
}

/// One worker runtime's side: its tick origin and the way to wake it. Only its worker thread
/// reads and writes `last` and `chained` (the park hook and the wake task both run there).
pub(crate) struct WorkerTick {
    /// An instant at or just after the runtime's timer started (its tick 0).
    origin: OnceLock<Instant>,
    last: AtomicU8,
    chained: AtomicU8,
    /// Aligned wakes so far (the tests read it).
    aligned_wakes: AtomicU32,
    wake: Notify,
    /// When the aligned wake on its way was sent and when it lets the worker go (the tick plus
    /// [`PAST_THE_TICK`]), in nanoseconds after `origin`.
    sent_at: AtomicU64,
    let_go_at: AtomicU64,
    /// How long before its tick an aligned wake is sent, in nanoseconds: how late the worker's
    /// aligned wakes have come (a running average), so that it is awake just before the tick.
    lead: AtomicU64,
    aligner: Sender<Wake>,
}

/// A request to wake a worker at an instant.
struct Wake {
    at: Instant,
    worker: Arc<WorkerTick>,
}

/// The thread that wakes parked workers on their ticks, shared by a pool's workers. It ends once
/// no worker runtime and no pending wake holds its sender.
#[derive(Clone)]
pub(crate) struct TickAligner {
    requests: Sender<Wake>,
}

impl TickAligner {
    pub(crate) fn start() -> std::io::Result<TickAligner> {
        let (requests, received) = crossbeam_channel::unbounded::<Wake>();
        std::thread::Builder::new()
            .name("codemode-tick".into())
            // A few frames deep; small, as a worker process's address space is capped.
            .stack_size(64 * 1024)
            .spawn(move || wake_on_ticks(received))?;
        Ok(TickAligner { requests })
    }

    /// A current-thread runtime (all drivers) whose parks this aligner keeps in phase, for the
    /// calling thread, whose timed waits are made precise too. `before_park` runs first at every
    /// park (see `process::answer_wait` and `process::call_watch`).
    pub(crate) fn runtime(
        &self,
        before_park: impl Fn() + Send + Sync + 'static,
    ) -> std::io::Result<tokio::runtime::Runtime> {
        self.runtime_and_tick(before_park)
            .map(|(runtime, _)| runtime)
    }

    fn runtime_and_tick(
        &self,
        before_park: impl Fn() + Send + Sync + 'static,
    ) -> std::io::Result<(tokio::runtime::Runtime, Arc<WorkerTick>)> {
        precise_timers();
        let tick = Arc::new(WorkerTick {
            origin: OnceLock::new(),
            last: AtomicU8::new(Last::Other as u8),
            chained: AtomicU8::new(0),
            aligned_wakes: AtomicU32::new(0),
            wake: Notify::new(),
            sent_at: AtomicU64::new(0),
            let_go_at: AtomicU64::new(0),
            lead: AtomicU64::new(FIRST_LEAD.as_nanos() as u64),
            aligner: self.requests.clone(),
        });
        let on_thread_park = Arc::clone(&tick);
        let building = Instant::now();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .on_thread_park(move || {
                before_park();
                on_thread_park.parking();
            })
            .build()?;
        let _ = tick.origin.set(tick_zero(&runtime, building));
        // Polled only while the worker drives a run (`block_on`), which is when it parks.
        let woken = Arc::clone(&tick);
        runtime.spawn(async move {
            loop {
                woken.wake.notified().await;
                woken.woken();
            }
        });
        Ok((runtime, tick))
    }
}

/// The instant of the runtime's tick 0, which tokio took at some point while it was built (after
/// `building`). It is found by watching a timer due at tick 1 fire: at tick 1, give or take one
/// poll of the runtime (a few microseconds, late, never early), which the worker sleeps through
/// most of. Only an origin late by this much is safe: one early would let a worker go before
/// tokio's tick, and tokio would then wait a whole millisecond more.
fn tick_zero(runtime: &tokio::runtime::Runtime, building: Instant) -> Instant {
    const TICK: Duration = Duration::from_millis(1);
    // Past this, the timer is taken not to fire on a zero-length park (a tokio that no longer
    // turns its driver there): the instant after the build serves, late by the build.
    const GIVE_UP: Duration = Duration::from_millis(5);
    let built = Instant::now();
    runtime.block_on(async {
        // Any instant in tick 0 is due at tick 1 (tokio rounds a deadline up).
        let mut due_at_tick_1 = std::pin::pin!(tokio::time::sleep_until(Instant::now().into()));
        // Tick 1 comes after `building` + 1 ms; sleep to just before that.
        std::thread::sleep(
            (building + TICK - Duration::from_micros(20)).saturating_duration_since(Instant::now()),
        );
        while built.elapsed() < GIVE_UP {
            if futures::poll!(due_at_tick_1.as_mut()).is_ready() {
                return Instant::now() - TICK;
            }
            // A zero-length park, after which tokio fires what is due.
            tokio::task::yield_now().await;
        }
        built
    })
}

impl WorkerTick {
    /// Runs on the worker thread when an aligned wake reaches it: it notes how late the wake
    /// came and, if it came before the tick, waits for the tick.
    fn woken(&self) {
        let origin = *self.origin.get().expect("set before the runtime runs");
        let now = Instant::now();
        let at = |nanos: &AtomicU64| origin + Duration::from_nanos(nanos.load(Ordering::Relaxed));
        // A wake delayed by the worker's own work says nothing about the wake-up's latency, so
        // one sample moves the average by at most MAX_LEAD / 8.
        let late = now
            .saturating_duration_since(at(&self.sent_at))
            .min(MAX_LEAD);
        let lead = self.lead.load(Ordering::Relaxed);
        let lead = lead - lead / 8 + late.as_nanos() as u64 / 8;
        self.lead.store(lead, Ordering::Relaxed);
        // Never more than a lead, whatever a stale wake may hold.
        let let_go = at(&self.let_go_at).min(now + MAX_LEAD);
        while Instant::now() < let_go {
            std::hint::spin_loop();
        }
        self.last.store(Last::Aligned as u8, Ordering::Relaxed);
        self.aligned_wakes.fetch_add(1, Ordering::Relaxed);
    }

    /// Runs on the worker thread just before it parks.
    fn parking(self: &Arc<Self>) {
        let Some(origin) = self.origin.get() else {
            return;
        };
        let last = match self.last.load(Ordering::Relaxed) {
            1 => Last::Armed,
            2 => Last::Aligned,
            _ => Last::Other,
        };
        let since = origin.elapsed();
        let phase = Duration::from_nanos((since.as_nanos() % 1_000_000) as u64);
        match on_park(last, self.chained.load(Ordering::Relaxed), phase) {
            OnPark::Nothing if last == Last::Armed => {}
            OnPark::Nothing => self.last.store(Last::Other as u8, Ordering::Relaxed),
            OnPark::WakeAtNextTick { chained } => {
                let next_tick = *origin + Duration::from_millis(since.as_millis() as u64 + 1);
                self.chained.store(chained, Ordering::Relaxed);
                self.last.store(Last::Armed as u8, Ordering::Relaxed);
                let let_go = next_tick + PAST_THE_TICK;
                let lead = Duration::from_nanos(self.lead.load(Ordering::Relaxed)).min(MAX_LEAD);
                let at = (let_go - lead).max(Instant::now());
                let since_origin = |at: Instant| (at - *origin).as_nanos() as u64;
                self.sent_at.store(since_origin(at), Ordering::Relaxed);
                self.let_go_at
                    .store(since_origin(let_go), Ordering::Relaxed);
                let _ = self.aligner.send(Wake {
                    at,
                    worker: Arc::clone(self),
                });
            }
        }
    }
}

fn wake_on_ticks(requests: Receiver<Wake>) {
    precise_timers();
    let mut due: Vec<Wake> = Vec::new();
    loop {
        let now = Instant::now();
        due.retain(|wake| {
            if wake.at > now {
                return true;
            }
            wake.worker.wake.notify_one();
            false
        });
        let received = match due.iter().map(|wake| wake.at).min() {
            Some(at) => match requests.recv_deadline(at) {
                Ok(wake) => Some(wake),
                Err(crossbeam_channel::RecvTimeoutError::Timeout) => None,
                // Not while a wake is pending (its worker holds a sender); ends the thread anyway.
                Err(crossbeam_channel::RecvTimeoutError::Disconnected) => return,
            },
            None => match requests.recv() {
                Ok(wake) => Some(wake),
                Err(_) => return,
            },
        };
        due.extend(received);
    }
}

/// Makes the timers a run registers before the worker next parks cost no system call.
///
/// Tokio's timer remembers, from the worker's last park, when it is next due, and a timer
/// registered earlier than that, or while nothing is remembered, wakes the driver: a write to
/// its eventfd, even from the worker's own thread, which is not parked. A run starts after a
/// park with no timers, so nothing is remembered, and every call that goes on registers one or
/// two (its tool's own sleep, the pipeline's timeout): W3's 100 calls made 200 writes, all in
/// the program's first turn. So before the program starts, a timer is registered for the next
/// tick and the worker yields once: the zero-length park that follows remembers that tick,
/// earlier than any timer the run's calls register, and the timer itself is dropped. It costs
/// one write and one zero-length park per run. Any remembered value is correct for tokio (it is
/// recomputed at every park); this one only spares the writes.
pub(crate) async fn quiet_timer_registrations() {
    let mut sentinel = std::pin::pin!(tokio::time::sleep(Duration::from_millis(1)));
    // The first poll registers it.
    let _ = futures::poll!(sentinel.as_mut());
    tokio::task::yield_now().await;
}

/// Let this thread's timed waits end when they are due, not up to 50 µs later: Linux batches a
/// thread's timer wake-ups by its timer slack, 50 µs unless the thread asks for less.
fn precise_timers() {
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_TIMERSLACK takes one integer (nanoseconds) and changes only this thread.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OFF_THE_TICK: Duration = Duration::from_micros(400);
    const ON_THE_TICK: Duration = Duration::from_micros(30);

    #[test]
    fn a_park_off_the_tick_asks_for_a_wake_at_the_next_one() {
        assert_eq!(
            on_park(Last::Other, 0, OFF_THE_TICK),
            OnPark::WakeAtNextTick { chained: 0 }
        );
        // The count of a chain ends with a wake-up of the worker's own.
        assert_eq!(
            on_park(Last::Other, MAX_CHAINED, OFF_THE_TICK),
            OnPark::WakeAtNextTick { chained: 0 }
        );
    }

    #[test]
    fn a_park_in_phase_is_left_alone() {
        assert_eq!(on_park(Last::Other, 0, ON_THE_TICK), OnPark::Nothing);
        assert_eq!(on_park(Last::Aligned, 0, ON_THE_TICK), OnPark::Nothing);
    }

    #[test]
    fn a_wake_on_its_way_is_not_asked_for_twice() {
        assert_eq!(on_park(Last::Armed, 0, OFF_THE_TICK), OnPark::Nothing);
    }

    #[test]
    fn aligned_wakes_in_a_row_stop_at_the_cap() {
        let mut chained = 0;
        let mut wakes = 0;
        // A worker that always parks off the tick after an aligned wake (too slow to wake in
        // phase): it gets the cap's worth of wakes, then waits for a wake of its own.
        let mut last = Last::Other;
        for _ in 0..10 {
            match on_park(last, chained, OFF_THE_TICK) {
                OnPark::WakeAtNextTick { chained: n } => {
                    wakes += 1;
                    chained = n;
                    last = Last::Aligned;
                }
                OnPark::Nothing => break,
            }
        }
        assert_eq!(wakes, 1 + MAX_CHAINED);
    }

    #[test]
    fn a_runtime_parked_off_its_tick_is_woken_at_the_next_one_a_bounded_number_of_times() {
        let aligner = TickAligner::start().unwrap();
        let (runtime, tick) = aligner.runtime_and_tick(|| {}).unwrap();
        let origin = *tick.origin.get().unwrap();
        // Start the wait well off the tick, so its park asks for an aligned wake.
        while !(300..600).contains(&(origin.elapsed().as_micros() % 1000)) {
            std::hint::spin_loop();
        }
        runtime.block_on(async { tokio::time::sleep(Duration::from_millis(30)).await });
        let wakes = tick.aligned_wakes.load(Ordering::Relaxed);
        assert!(
            (1..=1 + MAX_CHAINED as u32).contains(&wakes),
            "aligned wakes during one 30 ms sleep: {wakes}"
        );
    }

    /// One runtime's look at its origin against tokio's tick 5: whether a timer due 100 µs
    /// before our tick 5 had fired at it, and whether one due 5 µs after it had (`None` when the
    /// thread was preempted past tick 6, which proves nothing).
    fn timers_at_tick_5(aligner: &TickAligner) -> (bool, Option<bool>) {
        let (runtime, tick) = aligner.runtime_and_tick(|| {}).unwrap();
        let origin = *tick.origin.get().unwrap();
        let at = |micros: u64| origin + Duration::from_micros(micros);
        runtime.block_on(async {
            let mut before = std::pin::pin!(tokio::time::sleep_until(at(4_900).into()));
            let mut after = std::pin::pin!(tokio::time::sleep_until(at(5_005).into()));
            assert!(futures::poll!(before.as_mut()).is_pending());
            assert!(futures::poll!(after.as_mut()).is_pending());
            while Instant::now() < at(5_300) {
                std::hint::spin_loop();
            }
            // A zero-length park: tokio fires what is due at its "now" (tick 5).
            tokio::task::yield_now().await;
            let looked = Instant::now();
            let before_fired = futures::poll!(before.as_mut()).is_ready();
            let after_fired = futures::poll!(after.as_mut()).is_ready();
            (before_fired, (looked < at(5_900)).then_some(after_fired))
        })
    }

    #[test]
    fn the_origin_is_tokios_tick_zero_never_before_it() {
        let aligner = TickAligner::start().unwrap();
        // An origin found late (a thread preempted while it looked for tick 0) puts the first
        // timer in tick 6, which is allowed, so three runtimes are tried; an origin before
        // tokio's tick 0 (the fault this guards against) fires the second timer early in any.
        let looks: Vec<_> = (0..3).map(|_| timers_at_tick_5(&aligner)).collect();
        assert!(
            looks.iter().all(|(_, after)| *after != Some(true)),
            "a timer due 5 µs after our tick 5 fired before tick 6: {looks:?}"
        );
        assert!(
            looks.iter().any(|(before, _)| *before),
            "a timer due 100 µs before our tick 5 had not fired at tick 5: {looks:?}"
        );
    }

    #[test]
    fn tick_zero_is_found_from_the_timer_however_long_after_the_build_it_is_looked_for() {
        // Tokio takes its tick 0 between `building` and `built`; an instant taken after the
        // build (as the origin once was) is late by up to the build's length, and here by the
        // 300 µs more the thread spends elsewhere. A thread preempted at the wrong moment makes
        // one attempt late too, so three are made.
        let late_by = (0..3)
            .map(|_| {
                let building = Instant::now();
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                let built = Instant::now();
                while built.elapsed() < Duration::from_micros(300) {
                    std::hint::spin_loop();
                }
                let origin = tick_zero(&runtime, building);
                assert!(
                    origin >= building,
                    "tick 0 found before the runtime was built"
                );
                origin.saturating_duration_since(built)
            })
            .min()
            .unwrap();
        // Late by one turn of the runtime at most: a few microseconds in a release build, tens
        // in a test build.
        assert!(
            late_by <= Duration::from_micros(100),
            "tick 0 found {late_by:?} after the build"
        );
    }

    /// A worker tick whose aligned wake was sent `sent` ago and lets the worker go `let_go`
    /// from now.
    fn armed(tick: &WorkerTick, sent: Duration, let_go: Duration) -> Instant {
        let origin = *tick.origin.get().unwrap();
        let now = Instant::now();
        let since_origin = |at: Instant| (at - origin).as_nanos() as u64;
        tick.sent_at
            .store(since_origin(now - sent), Ordering::Relaxed);
        tick.let_go_at
            .store(since_origin(now + let_go), Ordering::Relaxed);
        now + let_go
    }

    #[test]
    fn an_aligned_wake_that_comes_before_its_tick_waits_for_it() {
        let aligner = TickAligner::start().unwrap();
        let (_runtime, tick) = aligner.runtime_and_tick(|| {}).unwrap();
        let let_go = armed(&tick, Duration::ZERO, Duration::from_micros(120));
        tick.woken();
        assert!(Instant::now() >= let_go);
        assert_eq!(tick.last.load(Ordering::Relaxed), Last::Aligned as u8);
        assert_eq!(tick.aligned_wakes.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn an_aligned_wake_never_spins_longer_than_a_lead() {
        let aligner = TickAligner::start().unwrap();
        let (_runtime, tick) = aligner.runtime_and_tick(|| {}).unwrap();
        // A tick 10 ms away (no arming asks for that; a stale wake could hold it).
        armed(&tick, Duration::ZERO, Duration::from_millis(10));
        let woken = Instant::now();
        tick.woken();
        assert!(
            woken.elapsed() < Duration::from_millis(5),
            "{:?}",
            woken.elapsed()
        );
    }

    #[test]
    fn the_lead_follows_how_late_wakes_come_within_its_cap() {
        let aligner = TickAligner::start().unwrap();
        let (_runtime, tick) = aligner.runtime_and_tick(|| {}).unwrap();
        let lead = || Duration::from_nanos(tick.lead.load(Ordering::Relaxed));
        assert_eq!(lead(), FIRST_LEAD);
        // Wakes that come 120 µs late draw the lead towards 120 µs.
        for _ in 0..40 {
            armed(&tick, Duration::from_micros(120), Duration::ZERO);
            tick.woken();
        }
        assert!(
            (Duration::from_micros(110)..=MAX_LEAD).contains(&lead()),
            "{:?}",
            lead()
        );
        // A wake held up by the worker's own work (10 ms) counts as MAX_LEAD at most.
        armed(&tick, Duration::from_millis(10), Duration::ZERO);
        tick.woken();
        assert!(lead() <= MAX_LEAD, "{:?}", lead());
    }
}

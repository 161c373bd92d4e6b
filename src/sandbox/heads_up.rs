//! A heads-up to an idle worker: wake now, the run follows.
//!
//! A caller transpiles its program before it queues the run, and an idle worker sleeps in the
//! queue. Waking a sleeping thread took 40-55 µs on the 2-core VMs measured (`perf sched
//! timehist`: the worker's core is halted, and the wake-up waits for the hypervisor to run it
//! again), a fifth of a warm run (W1) and all of it on the run's path. So the caller first
//! sends a heads-up, which wakes a worker while the transpiler runs (60 µs for `return 1 + 1`
//! on a cold cache), and the worker then waits for the run awake, spinning, while the caller
//! still prepares it: the run finds it running. The spin ends when the caller has queued the
//! run or given up (a syntax error queues nothing), or after [`SPIN_CAP`] in any case.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, TryRecvError};

/// What the workers' queue carries: runs (`T`, the pool's job) and heads-ups.
pub(crate) enum Message<T> {
    Run(T),
    /// A caller is preparing a run (see the module docs).
    HeadsUp,
}

/// The longest a worker spins after a heads-up: a program that takes longer to transpile
/// finds the worker asleep again, as it would have without the heads-up.
pub(crate) const SPIN_CAP: Duration = Duration::from_micros(300);

/// Held by a caller from its heads-up until its run is queued (or it gives up); workers spin
/// only while some caller holds one.
pub(crate) struct Preparing<'a>(&'a AtomicUsize);

impl<'a> Preparing<'a> {
    pub(crate) fn new(preparing: &'a AtomicUsize) -> Preparing<'a> {
        preparing.fetch_add(1, Ordering::SeqCst);
        Preparing(preparing)
    }
}

impl Drop for Preparing<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The next run for a worker, or `None` once the queue is closed. After a heads-up it waits
/// awake while a caller prepares one (up to [`SPIN_CAP`]), then asleep.
pub(crate) fn next_job<T>(jobs: &Receiver<Message<T>>, preparing: &AtomicUsize) -> Option<T> {
    loop {
        match jobs.recv().ok()? {
            Message::Run(job) => return Some(job),
            Message::HeadsUp => match wait_awake(jobs, preparing, SPIN_CAP) {
                Awake::Run(job) => return Some(job),
                Awake::NothingYet => {}
                Awake::Closed => return None,
            },
        }
    }
}

#[derive(Debug, PartialEq)]
enum Awake<T> {
    Run(T),
    NothingYet,
    Closed,
}

fn wait_awake<T>(jobs: &Receiver<Message<T>>, preparing: &AtomicUsize, cap: Duration) -> Awake<T> {
    let until = Instant::now() + cap;
    loop {
        // Read before looking at the queue: a caller queues its run before it stops preparing,
        // so once this reads 0 a run that was announced is already in the queue.
        let still_preparing = preparing.load(Ordering::SeqCst) > 0;
        match jobs.try_recv() {
            Ok(Message::Run(job)) => return Awake::Run(job),
            // Another caller's: keep waiting, on the same cap.
            Ok(Message::HeadsUp) => {}
            Err(TryRecvError::Disconnected) => return Awake::Closed,
            Err(TryRecvError::Empty) => {
                if !still_preparing || Instant::now() >= until {
                    return Awake::NothingYet;
                }
                std::hint::spin_loop();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_queued_while_the_worker_waits_awake_is_taken() {
        let (sender, jobs) = crossbeam_channel::unbounded();
        let preparing = AtomicUsize::new(0);
        let caller = Preparing::new(&preparing);
        std::thread::scope(|scope| {
            scope.spawn(|| {
                std::thread::sleep(Duration::from_micros(50));
                sender.send(Message::Run(7)).unwrap();
                drop(caller);
            });
            assert_eq!(
                wait_awake(&jobs, &preparing, Duration::from_secs(5)),
                Awake::Run(7)
            );
        });
    }

    #[test]
    fn a_caller_that_gives_up_ends_the_wait_at_once() {
        let (_sender, jobs) = crossbeam_channel::unbounded::<Message<u32>>();
        let preparing = AtomicUsize::new(0);
        drop(Preparing::new(&preparing));
        let started = Instant::now();
        assert_eq!(
            wait_awake(&jobs, &preparing, Duration::from_secs(5)),
            Awake::NothingYet
        );
        assert!(started.elapsed() < Duration::from_secs(1));
    }

    #[test]
    fn the_wait_ends_at_its_cap_while_a_caller_still_prepares() {
        let (_sender, jobs) = crossbeam_channel::unbounded::<Message<u32>>();
        let preparing = AtomicUsize::new(0);
        let _caller = Preparing::new(&preparing);
        let started = Instant::now();
        assert_eq!(
            wait_awake(&jobs, &preparing, Duration::from_millis(20)),
            Awake::NothingYet
        );
        assert!(started.elapsed() >= Duration::from_millis(20));
    }

    #[test]
    fn another_callers_heads_up_does_not_end_the_wait() {
        let (sender, jobs) = crossbeam_channel::unbounded();
        let preparing = AtomicUsize::new(0);
        let _caller = Preparing::new(&preparing);
        sender.send(Message::HeadsUp).unwrap();
        sender.send(Message::Run(3)).unwrap();
        assert_eq!(
            wait_awake(&jobs, &preparing, Duration::from_secs(5)),
            Awake::Run(3)
        );
    }

    #[test]
    fn a_worker_after_a_heads_up_with_no_run_sleeps_until_the_next_run() {
        let (sender, jobs) = crossbeam_channel::unbounded();
        let preparing = AtomicUsize::new(0);
        sender.send(Message::HeadsUp).unwrap();
        std::thread::scope(|scope| {
            scope.spawn(|| {
                std::thread::sleep(Duration::from_millis(20));
                sender.send(Message::Run(5)).unwrap();
            });
            assert_eq!(next_job(&jobs, &preparing), Some(5));
        });
        drop(sender);
        assert_eq!(next_job(&jobs, &preparing), None, "a closed queue ends it");
    }
}

//! A worker process's engine thread, about to park while its program's calls wait on the host,
//! first waits for an answer awake for a moment.
//!
//! Every call of a process-isolated run is a round trip: the engine thread writes the call, the
//! host answers, this process's reader thread takes the answer and wakes the engine thread. On
//! a VM whose idle cores halt, each of those wake-ups waits for the hypervisor to run the core
//! again (35-55 µs): 1,000 sequential calls took 65-70 ms in worker processes on two cores, and
//! 29 ms with every thread on one core (no halted core to wake). So the engine thread, when only
//! an answer can give it work, spins for up to [`SPIN_CAP`] before it parks: an answer that
//! comes meanwhile needs no wake-up of it, and its core is not halted when the reader is woken.
//! The spin yields at every turn, as on two cores the reader thread may need this one.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The longest the engine thread waits awake: about two wake-ups' worth. A call that takes
/// longer (a tool doing real I/O) finds it parked, as it would have without the spin.
pub(crate) const SPIN_CAP: Duration = Duration::from_micros(100);

/// This process's calls to the host. Only a worker process sends calls, so in any other process
/// nothing is ever awaited and [`before_park`] returns at once.
pub(crate) static CALLS: AnswerWait = AnswerWait::new();

/// Runs on an engine thread just before its runtime parks, having nothing to do (see the module
/// docs).
pub(crate) fn before_park() {
    let _ = CALLS.before_park(SPIN_CAP);
}

/// Calls awaiting their answers, and answers handed over that their calls have not taken yet.
pub(crate) struct AnswerWait {
    awaited: AtomicUsize,
    untaken: AtomicUsize,
}

/// How a look before a park ended.
#[derive(Debug, PartialEq)]
pub(crate) enum Spin {
    /// No call awaits an answer: the thread parks at once.
    NothingAwaited,
    /// An answer is there for a call to take: its wake-up is on its way, so no spin.
    AlreadyAnswered,
    /// An answer came during the spin.
    Answered,
    /// None came within the cap: the thread parks.
    GaveUp,
}

impl AnswerWait {
    pub(crate) const fn new() -> AnswerWait {
        AnswerWait {
            awaited: AtomicUsize::new(0),
            untaken: AtomicUsize::new(0),
        }
    }

    /// A call was sent; it awaits its answer until [`AnswerWait::call_done`].
    pub(crate) fn call_sent(&self) {
        self.awaited.fetch_add(1, Ordering::SeqCst);
    }

    /// The call has its answer, or no longer wants it.
    pub(crate) fn call_done(&self) {
        decrement(&self.awaited);
    }

    /// An answer is being handed to its call: counted before it is, so that the call cannot
    /// take it first.
    pub(crate) fn handing_over(&self) {
        self.untaken.fetch_add(1, Ordering::SeqCst);
    }

    /// The answer handed over was taken by its call, or could not be handed over (the call had
    /// gone).
    pub(crate) fn taken(&self) {
        decrement(&self.untaken);
    }

    /// Wait awake for an answer, at most `cap`, if a call awaits one. A wake-up of the runtime
    /// meanwhile (a timer, a cancellation) is not lost: the park that follows returns at once.
    pub(crate) fn before_park(&self, cap: Duration) -> Spin {
        if self.awaited.load(Ordering::SeqCst) == 0 {
            return Spin::NothingAwaited;
        }
        let answered = || self.untaken.load(Ordering::SeqCst) > 0;
        if answered() {
            return Spin::AlreadyAnswered;
        }
        let started = Instant::now();
        loop {
            if answered() {
                return Spin::Answered;
            }
            if started.elapsed() >= cap {
                return Spin::GaveUp;
            }
            std::thread::yield_now();
        }
    }
}

/// Never below 0, whatever the order of the counts.
fn decrement(count: &AtomicUsize) {
    let _ = count.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    const LONG: Duration = Duration::from_secs(5);

    #[test]
    fn with_no_call_awaited_the_thread_parks_at_once() {
        let calls = AnswerWait::new();
        assert_eq!(calls.before_park(LONG), Spin::NothingAwaited);
        calls.call_sent();
        calls.handing_over();
        calls.taken();
        calls.call_done();
        assert_eq!(calls.before_park(LONG), Spin::NothingAwaited);
        // Counts never go below 0.
        calls.call_done();
        calls.taken();
        calls.call_sent();
        let started = Instant::now();
        assert_eq!(calls.before_park(Duration::from_millis(2)), Spin::GaveUp);
        assert!(started.elapsed() >= Duration::from_millis(2));
    }

    #[test]
    fn an_answer_not_taken_yet_skips_the_spin_and_a_taken_one_does_not() {
        let calls = AnswerWait::new();
        calls.call_sent();
        calls.call_sent();
        calls.handing_over();
        assert_eq!(calls.before_park(LONG), Spin::AlreadyAnswered);
        // The first call took its answer; the second still awaits its own.
        calls.taken();
        calls.call_done();
        assert_eq!(calls.before_park(Duration::from_millis(2)), Spin::GaveUp);
    }

    #[test]
    fn an_answer_during_the_spin_ends_it() {
        let calls = Arc::new(AnswerWait::new());
        calls.call_sent();
        let answerer = Arc::clone(&calls);
        let answering = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            answerer.handing_over();
        });
        // Answered during the spin, or (this thread preempted for 20 ms) before it began; a
        // spin that does not see answers ends at its cap instead.
        let spin = calls.before_park(LONG);
        assert!(
            matches!(spin, Spin::Answered | Spin::AlreadyAnswered),
            "{spin:?}"
        );
        answering.join().unwrap();
    }
}

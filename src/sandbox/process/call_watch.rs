//! The host's thread of worker processes, about to park after it answered a call, first watches
//! for the next call awake for a moment.
//!
//! A program that awaits its calls one after another sends the next as soon as the answer
//! reaches it, tens of microseconds later. Parked meanwhile, the host thread's core halts on
//! the VMs measured, and the next call then waits 35-55 µs for the hypervisor to run it again.
//! So after an answer went out, the thread polls the pipes of the workers that run programs for
//! up to [`SPIN_CAP`] before it parks (the worker's side does the same for the answer:
//! `answer_wait.rs`). Either way the park that follows finds whatever came.

use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::lock;

/// The longest the thread watches awake after an answer: about two wake-ups' worth.
pub(crate) const SPIN_CAP: Duration = Duration::from_micros(100);

/// One pool's watch: the pipes its running workers write their calls to, and whether an answer
/// went out since the thread last parked.
#[derive(Default)]
pub(crate) struct CallWatch {
    pipes: Mutex<Vec<RawFd>>,
    answered: AtomicBool,
}

/// How a look before a park ended.
#[derive(Debug, PartialEq)]
pub(crate) enum Look {
    /// No answer went out since the last park: nothing is expected soon.
    NothingAnswered,
    /// A worker's pipe has something to read.
    Readable,
    /// Other work came for the thread (a task woken from another thread): it goes to it.
    OtherWork,
    /// Nothing came within the cap.
    GaveUp,
}

impl CallWatch {
    /// Watch `pipe` (a running worker's stdout) until the returned guard is dropped.
    pub(crate) fn watch(self: &Arc<Self>, pipe: RawFd) -> Watching {
        lock(&self.pipes).push(pipe);
        Watching {
            watch: Arc::clone(self),
            pipe,
        }
    }

    /// An answer to a call was queued for its worker.
    pub(crate) fn answered(&self) {
        self.answered.store(true, Ordering::SeqCst);
    }

    /// Runs just before the thread parks (see the module docs). `other_work` says whether a task
    /// was woken for the thread meanwhile, which ends the watch: the thread serves every worker
    /// and the calls of all their runs, not just the one it answered.
    pub(crate) fn before_park(&self, cap: Duration, other_work: impl Fn() -> bool) -> Look {
        if !self.answered.swap(false, Ordering::SeqCst) {
            return Look::NothingAnswered;
        }
        let mut polled: Vec<libc::pollfd> = lock(&self.pipes)
            .iter()
            .map(|&fd| libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        if polled.is_empty() {
            return Look::NothingAnswered;
        }
        let started = Instant::now();
        loop {
            // SAFETY: `polled` is a live array of `polled.len()` pollfd; a zero timeout only
            // reports. A pipe closed meanwhile reports POLLNVAL, which ends the watch too.
            let ready = unsafe { libc::poll(polled.as_mut_ptr(), polled.len() as libc::nfds_t, 0) };
            if ready != 0 {
                // Something to read, or an error the park will report through the pipe's reader.
                return Look::Readable;
            }
            if other_work() {
                return Look::OtherWork;
            }
            if started.elapsed() >= cap {
                return Look::GaveUp;
            }
            std::thread::yield_now();
        }
    }
}

/// A worker's pipe under watch; dropping it ends the watch.
pub(crate) struct Watching {
    watch: Arc<CallWatch>,
    pipe: RawFd,
}

impl Drop for Watching {
    fn drop(&mut self) {
        let mut pipes = lock(&self.watch.pipes);
        if let Some(at) = pipes.iter().position(|&fd| fd == self.pipe) {
            pipes.swap_remove(at);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::AsRawFd;

    const LONG: Duration = Duration::from_secs(5);

    fn pipe() -> (std::fs::File, std::fs::File) {
        let mut fds = [0; 2];
        // SAFETY: `fds` has room for the two descriptors pipe() writes.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        use std::os::fd::FromRawFd;
        // SAFETY: both descriptors were just made and are owned here from now on.
        unsafe {
            (
                std::fs::File::from_raw_fd(fds[0]),
                std::fs::File::from_raw_fd(fds[1]),
            )
        }
    }

    #[test]
    fn without_an_answer_out_the_thread_parks_at_once() {
        let watch = Arc::new(CallWatch::default());
        let (read, _write) = pipe();
        let _watching = watch.watch(read.as_raw_fd());
        assert_eq!(watch.before_park(LONG, || false), Look::NothingAnswered);
        // An answer with no pipe under watch: nothing to wait for either.
        let idle = CallWatch::default();
        idle.answered();
        assert_eq!(idle.before_park(LONG, || false), Look::NothingAnswered);
    }

    #[test]
    fn after_an_answer_a_call_on_a_watched_pipe_ends_the_watch() {
        let watch = Arc::new(CallWatch::default());
        let (read, mut write) = pipe();
        let _watching = watch.watch(read.as_raw_fd());
        watch.answered();
        let writer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            write.write_all(b"call").unwrap();
            write
        });
        assert_eq!(watch.before_park(LONG, || false), Look::Readable);
        drop(writer.join().unwrap());
        // One look per answer.
        assert_eq!(watch.before_park(LONG, || false), Look::NothingAnswered);
    }

    #[test]
    fn after_an_answer_the_watch_ends_at_its_cap_and_dropped_pipes_are_not_watched() {
        let watch = Arc::new(CallWatch::default());
        let (read, _write) = pipe();
        let (other, mut other_write) = pipe();
        let _watching = watch.watch(read.as_raw_fd());
        let dropped = watch.watch(other.as_raw_fd());
        drop(dropped);
        // Readable, but no longer watched.
        other_write.write_all(b"late").unwrap();
        watch.answered();
        let started = Instant::now();
        assert_eq!(
            watch.before_park(Duration::from_millis(2), || false),
            Look::GaveUp
        );
        assert!(started.elapsed() >= Duration::from_millis(2));
    }

    #[test]
    fn other_work_for_the_thread_ends_the_watch() {
        let watch = Arc::new(CallWatch::default());
        let (read, _write) = pipe();
        let _watching = watch.watch(read.as_raw_fd());
        watch.answered();
        let looks = std::cell::Cell::new(0);
        let other_work = || {
            looks.set(looks.get() + 1);
            looks.get() == 3
        };
        assert_eq!(watch.before_park(LONG, other_work), Look::OtherWork);
        assert_eq!(looks.get(), 3);
    }
}

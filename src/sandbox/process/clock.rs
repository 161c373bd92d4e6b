//! The run's deadline clock as the host sees it: an approver waiting on a call pauses the
//! worker's clock with a frame, and the host keeps its own count to time its backstop.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use super::frame::{self, ToWorker};
use crate::sandbox::host::DeadlineClock;

/// The pauses of one run, shared by its calls.
pub(crate) struct RunClock {
    to: mpsc::UnboundedSender<Vec<u8>>,
    state: Mutex<PauseState>,
}

struct PauseState {
    started: Instant,
    pauses: u32,
    paused_since: Option<Instant>,
    paused_total: Duration,
}

impl RunClock {
    pub(crate) fn new(to: mpsc::UnboundedSender<Vec<u8>>) -> RunClock {
        RunClock {
            to,
            state: Mutex::new(PauseState {
                started: Instant::now(),
                pauses: 0,
                paused_since: None,
                paused_total: Duration::ZERO,
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, PauseState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Time the run has spent with its clock running.
    pub(crate) fn running_time(&self) -> Duration {
        let state = self.lock();
        let paused_now = state.paused_since.map_or(Duration::ZERO, |at| at.elapsed());
        state
            .started
            .elapsed()
            .saturating_sub(state.paused_total + paused_now)
    }
}

/// One call's handle on the run's clock.
pub(crate) struct RemoteClock {
    id: u64,
    run: std::sync::Arc<RunClock>,
}

impl RemoteClock {
    pub(crate) fn new(id: u64, run: std::sync::Arc<RunClock>) -> RemoteClock {
        RemoteClock { id, run }
    }
}

impl DeadlineClock for RemoteClock {
    fn pause(&self) {
        let mut state = self.run.lock();
        state.pauses += 1;
        if state.pauses == 1 {
            state.paused_since = Some(Instant::now());
        }
        let _ = self
            .run
            .to
            .send(frame::encode(&ToWorker::Pause { id: self.id }));
    }

    fn resume(&self) {
        let mut state = self.run.lock();
        if state.pauses == 0 {
            return;
        }
        state.pauses -= 1;
        if state.pauses == 0
            && let Some(at) = state.paused_since.take()
        {
            state.paused_total += at.elapsed();
        }
        let _ = self
            .run
            .to
            .send(frame::encode(&ToWorker::Resume { id: self.id }));
    }
}

//! The tool side of one run: the catalog the program sees, the per-run call counters, and the
//! ledger of the calls that did not finish on their first poll (their results on the way to the
//! program, and those still in flight when the run ends).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::task::Waker;
use std::time::Duration;

use futures::task::AtomicWaker;
use tokio::sync::{Notify, Semaphore};
use tokio::task::AbortHandle;
use tokio_util::sync::CancellationToken;

use super::host::{ToolHost, ToolReply};
use super::outcome::RunContext;
use super::watchdog::RunControl;
use crate::call::{CANCEL_GRACE, CallError, ErrorKind, Extensions, Limits};

/// How a call ended, as the host answered it.
pub(crate) type Response = Result<ToolReply, CallError>;

/// The tool side of one run.
pub(crate) struct ToolRun {
    pub host: Arc<dyn ToolHost>,
    /// The catalog the program's `tools` object was built from: the glue names a known tool by
    /// its index here.
    pub paths: Vec<String>,
    pub run_id: String,
    pub control: Arc<RunControl>,
    /// Cancelled when the run ends: in-flight calls see it and stop.
    pub cancel: CancellationToken,
    pub in_flight: Arc<Semaphore>,
    pub max_calls: u64,
    pub issued: u64,
    pub calls_by_tool: BTreeMap<String, u64>,
    pub bytes_kept: u64,
    pub contexts: Vec<RunContext>,
    /// Handed on to every call ([`ToolRequest::extensions`]).
    pub extensions: Extensions,
    /// The calls that did not finish on their first poll.
    pub ledger: Arc<Ledger>,
}

/// Calls that did not finish on their first poll run as tasks of their own on the worker's
/// runtime, not inside the isolate's op driver: when the run ends, the isolate is dropped, and
/// a call dropped with it would leave no audit record while its tool might still take effect
/// (a write on a blocking thread). So the run's end waits here until every such call has
/// reached its own end through the pipeline (which stops calls that have not started and lets
/// started ones finish within its grace), and counts how each ended.
///
/// While the run goes, a finished call's result waits here until the host hands it to the
/// program, with every other result that arrived meanwhile (`hand_over_results` in execute.rs).
#[derive(Default)]
pub(crate) struct Ledger {
    state: Mutex<LedgerState>,
    settled: Notify,
    /// The run's event loop, woken when a result arrives.
    results_ready: AtomicWaker,
}

/// A result on its way to the program: the glue's id of the call, and the tool's path (for its
/// error or context entries).
pub(crate) struct Finished {
    pub id: u32,
    pub path: String,
    pub response: Response,
}

#[derive(Default)]
struct LedgerState {
    live: usize,
    ended: bool,
    /// Finished calls whose results the program has not taken yet.
    results: Vec<Finished>,
    /// Ended after the run without their tool's body starting: no effect.
    cancelled: u64,
    /// Ended after the run with their tool's body started: their outcome is the tool's own.
    finished_after_end: u64,
    tasks: Vec<AbortHandle>,
}

/// How the calls in flight at the end of a run ended.
pub(crate) struct Settled {
    pub cancelled: u64,
    pub finished_after_end: u64,
}

/// How long the end of a run waits for its calls in flight: the pipeline's own grace for
/// started bodies, plus room for its bookkeeping. A host that ignores cancellation altogether
/// has its calls aborted after this.
const SETTLE_LIMIT: Duration = Duration::from_millis(CANCEL_GRACE.as_millis() as u64 + 1000);

impl Ledger {
    fn lock(&self) -> std::sync::MutexGuard<'_, LedgerState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn starting(&self) {
        self.lock().live += 1;
    }

    pub(crate) fn started(&self, task: AbortHandle) {
        self.lock().tasks.push(task);
    }

    /// A call ended: its result goes to the program, or, once the run has ended, is counted.
    pub(crate) fn finished(&self, call: Finished) {
        let mut state = self.lock();
        state.live = state.live.saturating_sub(1);
        if state.ended {
            match call.response {
                // Stopped before the tool's body started (the pipeline's rule): no effect.
                Err(error) if error.kind == ErrorKind::Cancelled => state.cancelled += 1,
                _ => state.finished_after_end += 1,
            }
        } else {
            state.results.push(call);
        }
        let settled = state.live == 0;
        drop(state);
        self.results_ready.wake();
        if settled {
            self.settled.notify_waiters();
        }
    }

    /// The results that arrived since the last look; `waker` is woken when the next arrives.
    pub(crate) fn take_results(&self, waker: &Waker) -> Vec<Finished> {
        // Registered before the look, so a result pushed in between still wakes it.
        self.results_ready.register(waker);
        std::mem::take(&mut self.lock().results)
    }

    /// A call is in flight, or its result waits to be taken.
    pub(crate) fn busy(&self) -> bool {
        let state = self.lock();
        state.live > 0 || !state.results.is_empty()
    }

    /// Marks the run's end (call it before cancelling the calls), then waits for the calls in
    /// flight to end.
    pub(crate) async fn settle(&self, cancel: &CancellationToken) -> Settled {
        self.lock().ended = true;
        cancel.cancel();
        let all_ended = async {
            loop {
                let notified = self.settled.notified();
                if self.lock().live == 0 {
                    return;
                }
                notified.await;
            }
        };
        if tokio::time::timeout(SETTLE_LIMIT, all_ended).await.is_err() {
            let mut state = self.lock();
            for task in state.tasks.drain(..) {
                task.abort();
            }
            // Aborted: whether they had an effect is unknown, so they are not "cancelled".
            state.finished_after_end += state.live as u64;
            state.live = 0;
        }
        let state = self.lock();
        Settled {
            cancelled: state.cancelled,
            finished_after_end: state.finished_after_end,
        }
    }
}

impl ToolRun {
    pub(crate) fn new(
        host: Arc<dyn ToolHost>,
        paths: Vec<String>,
        run_id: String,
        control: Arc<RunControl>,
        limits: &Limits,
        extensions: Extensions,
    ) -> ToolRun {
        ToolRun {
            host,
            paths,
            run_id,
            control,
            cancel: CancellationToken::new(),
            in_flight: Arc::new(Semaphore::new(limits.in_flight_calls.max(1))),
            max_calls: limits.tool_calls,
            issued: 0,
            calls_by_tool: BTreeMap::new(),
            bytes_kept: 0,
            contexts: Vec::new(),
            extensions,
            ledger: Arc::new(Ledger::default()),
        }
    }
}

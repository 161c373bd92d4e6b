//! Scheduler scopes (DESIGN.md section 4).
//!
//! # Ordering
//! Calls take their place in a scope when they are issued ([`crate::Pipeline::call`] is invoked),
//! not when their future is first polled. Places start strictly in issue order. A parallel call
//! starts when no exclusive call runs and the pool has room; an exclusive call starts when
//! nothing runs, and everything behind it waits until it finishes. Dropping a waiting or running
//! call gives its place back at once.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

/// Default size of a scope's parallel pool.
pub const DEFAULT_POOL_SIZE: usize = 64;

/// An ordering domain: one per harness session (root), one child per code-mode run.
pub struct Scope {
    pool: usize,
    state: Mutex<State>,
}

impl std::fmt::Debug for Scope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scope")
            .field("pool", &self.pool)
            .field("running", &self.running())
            .finish_non_exhaustive()
    }
}

#[derive(Default)]
struct State {
    queue: VecDeque<Waiter>,
    running_parallel: usize,
    running_exclusive: bool,
    next_id: u64,
}

struct Waiter {
    id: u64,
    parallel: bool,
    slot: Arc<Slot>,
}

#[derive(Default)]
struct Slot {
    granted: AtomicBool,
    notify: Notify,
}

impl Scope {
    /// A root scope with a parallel pool of `pool` calls (at least 1).
    pub fn root(pool: usize) -> Arc<Scope> {
        Arc::new(Scope {
            pool: pool.max(1),
            state: Mutex::new(State::default()),
        })
    }

    /// A new scope with the same pool size and an order of its own, independent of this one
    /// (a code-mode run's: its exclusive calls never wait on the `run_code` call that started
    /// it, nor on other runs).
    pub fn sibling(&self) -> Arc<Scope> {
        Scope::root(self.pool)
    }

    /// Parallel-safe calls that may run at once.
    pub fn pool_size(&self) -> usize {
        self.pool
    }

    /// Number of calls running now (parallel, or 1 for an exclusive call).
    pub fn running(&self) -> usize {
        let st = self.lock();
        st.running_parallel + usize::from(st.running_exclusive)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes a place in issue order. Synchronous, so the order is the order of the calls.
    pub fn enqueue(self: &Arc<Self>, parallel: bool) -> Ticket {
        let mut st = self.lock();
        if st.queue.is_empty() && can_start(&st, parallel, self.pool) {
            start(&mut st, parallel);
            return Ticket {
                scope: self.clone(),
                parallel,
                wait: None,
            };
        }
        st.next_id += 1;
        let id = st.next_id;
        let slot = Arc::new(Slot::default());
        st.queue.push_back(Waiter {
            id,
            parallel,
            slot: slot.clone(),
        });
        Ticket {
            scope: self.clone(),
            parallel,
            wait: Some((id, slot)),
        }
    }

    fn dispatch(&self, st: &mut State) {
        while let Some(front) = st.queue.front() {
            if !can_start(st, front.parallel, self.pool) {
                break;
            }
            let w = st.queue.pop_front().expect("front exists");
            start(st, w.parallel);
            w.slot.granted.store(true, Ordering::Release);
            w.slot.notify.notify_one();
        }
    }
}

fn can_start(st: &State, parallel: bool, pool: usize) -> bool {
    if st.running_exclusive {
        return false;
    }
    if parallel {
        st.running_parallel < pool
    } else {
        st.running_parallel == 0
    }
}

fn start(st: &mut State, parallel: bool) {
    if parallel {
        st.running_parallel += 1;
    } else {
        st.running_exclusive = true;
    }
}

/// A place in a scope. Await [`Ticket::ready`] before running; drop it to give the place back.
pub struct Ticket {
    scope: Arc<Scope>,
    parallel: bool,
    wait: Option<(u64, Arc<Slot>)>,
}

impl std::fmt::Debug for Ticket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ticket")
            .field("parallel", &self.parallel)
            .field("waiting", &self.wait.is_some())
            .finish_non_exhaustive()
    }
}

impl Ticket {
    /// Whether the call runs in the parallel pool.
    pub fn is_parallel(&self) -> bool {
        self.parallel
    }

    /// Whether [`Ticket::ready`] may have to wait (the place was not granted at issue).
    pub fn must_wait(&self) -> bool {
        self.wait.is_some()
    }

    /// Resolves when this call may run.
    pub async fn ready(&mut self) {
        let Some((_, slot)) = &self.wait else { return };
        loop {
            // Register interest before checking, so a grant between the two is not missed.
            let notified = slot.notify.notified();
            if slot.granted.load(Ordering::Acquire) {
                break;
            }
            notified.await;
        }
        self.wait = None;
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let scope = &self.scope;
        let mut st = scope.lock();
        let running = match &self.wait {
            None => true,
            Some((id, slot)) => {
                if slot.granted.load(Ordering::Acquire) {
                    true
                } else {
                    st.queue.retain(|w| w.id != *id);
                    false
                }
            }
        };
        if running {
            if self.parallel {
                st.running_parallel -= 1;
            } else {
                st.running_exclusive = false;
            }
        }
        scope.dispatch(&mut st);
    }
}

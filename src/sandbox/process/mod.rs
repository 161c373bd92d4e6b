//! Process isolation: each sandbox worker is a child process of the same binary, speaking
//! length-prefixed JSON frames over its stdin and stdout. A crash, an abort or a kill of a
//! worker ends only its run (status `crashed`); the host keeps serving and starts a
//! replacement. Workers are recycled after [`ProcessConfig::runs_per_worker`] runs or above
//! [`ProcessConfig::rss_ceiling_bytes`], which also bounds what the engine leaks per isolate
//! (see docs/LIFECYCLE.md).

pub(crate) mod answer_wait;
mod call_watch;
mod child;
mod clock;
mod frame;
mod harden;
mod parent;

use std::path::PathBuf;

pub use child::{WORKER_ARG, serve_worker, serve_worker_if_requested};
pub(crate) use frame::WorkerSetup;
pub use harden::WorkerReport;
pub use parent::probe_worker;
pub(crate) use parent::{ProcessJob, ProcessPool};

use crate::call::MIB;

/// A mutex's guard, also after a thread panicked holding it: the worker's tables of calls and
/// the host's watched pipes stay usable.
fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// Where programs run: on engine threads of this process, or in worker processes.
#[derive(Debug, Clone, Default)]
pub enum Isolation {
    /// Engine threads inside this process: the fastest, but an engine fault takes the process
    /// down, and what the engine leaks stays.
    #[default]
    Thread,
    /// Worker processes, each running one program at a time; see [`ProcessConfig`].
    Process(ProcessConfig),
}

/// How worker processes are started and recycled.
#[derive(Debug, Clone)]
pub struct ProcessConfig {
    /// The program started as a worker, with [`WORKER_ARG`] as its first argument. It must call
    /// [`serve_worker_if_requested`] first thing in `main` (the `codemode` binary does).
    /// Default: this process's own executable.
    pub program: PathBuf,
    /// Runs a worker serves before a fresh one takes its place (default 64).
    pub runs_per_worker: usize,
    /// A worker whose resident memory is above this after a run is replaced (default 256 MiB).
    pub rss_ceiling_bytes: u64,
    /// Address-space ceiling (`RLIMIT_AS`) of each worker: past it allocations fail and the
    /// worker dies, ending its run as `crashed` (default 4 GiB; `None`: no ceiling).
    pub address_space_bytes: Option<u64>,
    /// Workers started beyond [`SandboxConfig::workers`](crate::sandbox::SandboxConfig) while
    /// runs queue and every worker's run only waits on tool calls or an approver (default 16).
    /// They stop once the queue is empty. A run awaiting a 5-minute approval thus never keeps a
    /// `return 1` waiting.
    pub waiting_workers: usize,
}

impl Default for ProcessConfig {
    fn default() -> Self {
        ProcessConfig {
            program: std::env::current_exe().unwrap_or_else(|_| PathBuf::from("/proc/self/exe")),
            runs_per_worker: 64,
            rss_ceiling_bytes: 256 * MIB as u64,
            address_space_bytes: Some(4096 * MIB as u64),
            waiting_workers: 16,
        }
    }
}

impl ProcessConfig {
    /// The defaults, with `program` as the worker program.
    pub fn with_program(program: impl Into<PathBuf>) -> ProcessConfig {
        ProcessConfig {
            program: program.into(),
            ..ProcessConfig::default()
        }
    }
}

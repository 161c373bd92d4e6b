//! The worker process: the same binary, started with [`WORKER_ARG`]. It runs programs on an
//! in-process sandbox of one engine thread, and every tool call crosses back to the host as a
//! frame. It holds no tools, no credentials and no environment: the host's pipeline answers
//! each call, and the worker only relays the answer to the program.

use std::collections::HashMap;
use std::io::{BufReader, BufWriter, Write};
use std::os::fd::FromRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::frame::{self, FrameError, FromWorker, ToWorker, WorkerSetup};
use crate::call::{CallError, ErrorKind, Limits};
use crate::sandbox::{
    DeadlinePause, Isolation, RunOptions, Sandbox, SandboxConfig, ToolHost, ToolReply, ToolRequest,
};

/// The first argument that makes a binary serve as a sandbox worker process
/// ([`serve_worker_if_requested`]).
pub const WORKER_ARG: &str = "__codemode-sandbox-worker";

/// Exit code of a worker whose host sent something other than the expected handshake.
const EXIT_PROTOCOL: i32 = 70;

/// If this process was started as a sandbox worker (first argument [`WORKER_ARG`]), serve as
/// one and exit; otherwise return at once. A binary that uses
/// [`Isolation::Process`] with itself as the worker program calls this first thing in `main`.
pub fn serve_worker_if_requested() {
    if std::env::args_os()
        .nth(1)
        .is_some_and(|arg| arg == WORKER_ARG)
    {
        std::process::exit(serve_worker());
    }
}

/// Serve as a sandbox worker on stdin/stdout until the host closes the pipe; returns the exit
/// code.
pub fn serve_worker() -> i32 {
    // The engine facade would cache the bytecode of every program on disk (see the binary's
    // `keep_programs_off_disk`); a worker's environment is empty, so it says no itself.
    // SAFETY: called before the worker starts any thread.
    unsafe { std::env::set_var("V82JSC_NO_BC_CACHE", "1") };
    // The protocol keeps the original stdout for itself; anything else writing to fd 1 (engine
    // diagnostics, a stray print) lands on stderr instead of corrupting the frames.
    // SAFETY: plain fd syscalls on this process's own standard descriptors.
    let protocol_fd = unsafe { libc::dup(1) };
    if protocol_fd < 0 || unsafe { libc::dup2(2, 1) } < 0 {
        return EXIT_PROTOCOL;
    }
    close_inherited_fds(protocol_fd);
    // SAFETY: `protocol_fd` is a fresh descriptor this function owns from here on.
    let output = BufWriter::new(unsafe { std::fs::File::from_raw_fd(protocol_fd) });
    let mut input = BufReader::new(std::io::stdin());
    let setup = match frame::read_blocking::<ToWorker>(&mut input) {
        Ok(ToWorker::Hello(setup)) => setup,
        _ => return EXIT_PROTOCOL,
    };
    if let Some(fingerprint) = &setup.snapshot {
        let Ok(bytes) = frame::read_raw_blocking(&mut input) else {
            return EXIT_PROTOCOL;
        };
        // The host's snapshot saves this worker making its own (most of a fresh worker's
        // start); one from another build would not fit this binary's ops.
        if *fingerprint == crate::sandbox::engine::snapshot_fingerprint() {
            crate::sandbox::engine::adopt_startup_snapshot(bytes);
        }
    }
    let mut confinement = super::harden::apply(setup.address_space_bytes);
    let sandbox = match Sandbox::new(sandbox_config(&setup)) {
        Ok(sandbox) => sandbox,
        Err(e) => {
            eprintln!("codemode sandbox worker: {e}");
            return 1;
        }
    };
    let out = Out(Arc::new(Mutex::new(output)));
    if setup.probe {
        super::harden::probe(&mut confinement);
    }
    out.send(&FromWorker::Ready(confinement));
    // The reader answers waiting calls itself (one thread hop less per call than going through
    // the event loop); runs and cancellations go to the event loop.
    let waiting = Waiting::default();
    let (in_tx, in_rx) = mpsc::unbounded_channel::<ToWorker>();
    let answers = Arc::clone(&waiting);
    std::thread::spawn(move || {
        loop {
            match frame::read_blocking::<ToWorker>(&mut input) {
                Ok(ToWorker::Reply { id, result }) => {
                    let entry = lock(&answers).remove(&id);
                    if let Some((reply, _)) = entry {
                        let _ = reply.send(result);
                    }
                }
                Ok(ToWorker::Pause { id }) => {
                    if let Some((_, deadline)) = lock(&answers).get(&id) {
                        deadline.pause();
                    }
                }
                Ok(ToWorker::Resume { id }) => {
                    if let Some((_, deadline)) = lock(&answers).get(&id) {
                        deadline.resume();
                    }
                }
                Ok(message) => {
                    if in_tx.send(message).is_err() {
                        return;
                    }
                }
                Err(FrameError::Closed) => return,
                Err(e) => {
                    eprintln!("codemode sandbox worker: {e}");
                    return;
                }
            }
        }
    });
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("codemode sandbox worker: cannot start its event loop: {e}");
            return 1;
        }
    };
    runtime.block_on(async move {
        tell_when_warm(sandbox.clone(), out.clone());
        serve(sandbox, in_rx, out, waiting).await;
    });
    0
}

/// The protocol pipe to the host, written by whichever thread has a frame (the engine thread
/// sends its calls itself: no thread hop). A failed write means the host is gone.
#[derive(Clone)]
struct Out(Arc<Mutex<BufWriter<std::fs::File>>>);

impl Out {
    fn send(&self, message: &FromWorker) {
        let frame = frame::encode(message);
        let mut pipe = lock(&self.0);
        if pipe.write_all(&frame).and_then(|()| pipe.flush()).is_err() {
            std::process::exit(0);
        }
    }
}

fn sandbox_config(setup: &WorkerSetup) -> SandboxConfig {
    SandboxConfig {
        workers: 1,
        limits: Limits {
            heap_bytes: setup.heap_bytes,
            ..Limits::default()
        },
        worker_stack_bytes: setup.worker_stack_bytes,
        isolates_per_thread: setup.isolates_per_thread,
        isolation: Isolation::Thread,
    }
}

/// Calls of this worker waiting for the host's answer, by id.
type Waiting = Arc<Mutex<HashMap<u64, (oneshot::Sender<Reply>, DeadlinePause)>>>;
type Reply = Result<ToolReply, CallError>;

async fn serve(
    sandbox: Sandbox,
    mut incoming: mpsc::UnboundedReceiver<ToWorker>,
    out: Out,
    waiting: Waiting,
) {
    let next_id = Arc::new(AtomicU64::new(1));
    let mut current = (0, CancellationToken::new());
    while let Some(message) = incoming.recv().await {
        match message {
            ToWorker::Run {
                run,
                source,
                limits,
                paths,
                run_id,
            } => {
                current = (run, CancellationToken::new());
                let host = Arc::new(RelayHost {
                    run,
                    paths,
                    waiting: Arc::clone(&waiting),
                    next_id: Arc::clone(&next_id),
                    out: out.clone(),
                    watching_end: AtomicBool::new(false),
                });
                let options = RunOptions::new(limits)
                    .with_cancel(current.1.clone())
                    .with_tools(host)
                    .with_run_id(run_id);
                let sandbox = sandbox.clone();
                let out = out.clone();
                tokio::spawn(async move {
                    let outcome = sandbox.run_with(&source, options).await;
                    let retire = sandbox.gave_up_a_worker();
                    out.send(&FromWorker::Outcome {
                        outcome: Box::new(outcome),
                        retire,
                    });
                    tell_when_warm(sandbox, out);
                });
            }
            ToWorker::Cancel { run } => {
                if run == current.0 {
                    current.1.cancel();
                }
            }
            // The reader answers these itself; a second hello means nothing.
            ToWorker::Reply { .. }
            | ToWorker::Pause { .. }
            | ToWorker::Resume { .. }
            | ToWorker::Hello(_) => {}
        }
    }
    // The host closed the pipe: stop whatever runs and leave.
    current.1.cancel();
}

/// Send [`FromWorker::Warm`] once the sandbox holds a built isolate (it builds the next one
/// after every run, in a few milliseconds).
fn tell_when_warm(sandbox: Sandbox, out: Out) {
    tokio::spawn(async move {
        while sandbox.warm_workers() == 0 {
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
        out.send(&FromWorker::Warm);
    });
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// The run's tools as the worker sees them: each call is a frame to the host.
struct RelayHost {
    run: u64,
    paths: Vec<String>,
    waiting: Waiting,
    next_id: Arc<AtomicU64>,
    out: Out,
    /// Whether a task already waits for the run's end to tell the host.
    watching_end: AtomicBool,
}

impl ToolHost for RelayHost {
    fn paths(&self) -> Vec<String> {
        self.paths.clone()
    }

    fn call(&self, request: ToolRequest) -> BoxFuture<'static, Reply> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (reply, answer) = oneshot::channel();
        lock(&self.waiting).insert(id, (reply, request.deadline.clone()));
        self.out.send(&FromWorker::Call {
            id,
            path: request.path,
            args: request.args,
            unconvertible: request.unconvertible,
            seq: request.seq,
        });
        if !self.watching_end.swap(true, Ordering::SeqCst) {
            // The run's token fires when the run ends: calls still waiting are the host's to
            // cancel (the run's end waits for them, as it does in the host's own process).
            let (end, out, run) = (request.cancel.clone(), self.out.clone(), self.run);
            tokio::spawn(async move {
                end.cancelled().await;
                out.send(&FromWorker::CallsCancelled { run });
            });
        }
        Box::pin(async move {
            answer.await.unwrap_or_else(|_| {
                Err(CallError::new(
                    ErrorKind::Cancelled,
                    "the host stopped answering",
                ))
            })
        })
    }
}

/// Close every descriptor the worker inherited except the standard ones and the protocol's.
fn close_inherited_fds(keep: i32) {
    let Ok(entries) = std::fs::read_dir("/proc/self/fd") else {
        return;
    };
    let fds: Vec<i32> = entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok())
        .filter(|&fd| fd > 2 && fd != keep)
        .collect();
    for fd in fds {
        // SAFETY: closing descriptors this process inherited and does not use; the one the
        // directory listing itself used is already closed (EBADF is harmless).
        unsafe { libc::close(fd) };
    }
}

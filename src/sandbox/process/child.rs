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
use tokio::sync::oneshot;

use super::frame::{self, FrameError, FromWorker, ToWorker, WorkerSetup};
use super::{answer_wait, lock};
use crate::call::{CallError, ErrorKind, Extensions, Limits, TrackWaves};
use crate::sandbox::host::EncodedValue;
use crate::sandbox::{
    DeadlinePause, Isolation, Reply, RunLink, RunOptions, Sandbox, SandboxConfig, ToolHost,
    ToolReply, ToolRequest,
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
    if setup.webassembly_left_out {
        // SAFETY: still before the worker starts any thread (the engine reads it per isolate).
        unsafe { std::env::set_var(crate::sandbox::engine::NO_WEBASSEMBLY_ENV, "1") };
    }
    let mut snapshot_from_host = false;
    if let Some(fingerprint) = &setup.snapshot {
        let Ok(bytes) = frame::read_raw_blocking(&mut input) else {
            return EXIT_PROTOCOL;
        };
        // The host's snapshot saves this worker making its own (most of a fresh worker's
        // start); one from another build would not fit this binary's ops.
        if *fingerprint == crate::sandbox::engine::snapshot_fingerprint() {
            crate::sandbox::engine::adopt_startup_snapshot(bytes);
            snapshot_from_host = true;
        }
    }
    if setup.snapshot.is_none() {
        // The host had none yet: it replaces this worker once it has one (`slot` in parent.rs).
        crate::sandbox::engine::forgo_startup_snapshot();
    }
    let mut confinement = super::harden::apply(setup.address_space_bytes);
    confinement.snapshot_from_host = snapshot_from_host;
    confinement.engine = crate::sandbox::engine::snapshot_fingerprint();
    if setup.probe {
        super::harden::probe(&mut confinement);
    }
    let out = Out(Arc::new(Mutex::new(output)));
    // Ready before the sandbox exists: its engine thread says `Warm` as soon as its first
    // isolate is built, and the host expects `Ready` first.
    out.send(&FromWorker::Ready(confinement));
    let warm = out.clone();
    let sandbox = match Sandbox::start(
        sandbox_config(&setup),
        Some(Arc::new(move || warm.send(&FromWorker::Warm))),
    ) {
        Ok(sandbox) => sandbox,
        Err(e) => {
            eprintln!("codemode sandbox worker: {e}");
            return 1;
        }
    };
    serve(&sandbox, &mut input, &out);
    0
}

/// Read the host's frames until it closes the pipe. Runs go straight to the engine thread, whose
/// outcome is written to the host from there; answers to calls go straight to the call waiting
/// for them. No frame waits for another thread to pass it on.
fn serve(sandbox: &Sandbox, input: &mut impl std::io::Read, out: &Out) {
    let waiting = Waiting::default();
    let next_id = Arc::new(AtomicU64::new(1));
    let mut current: (u64, Option<Arc<RunLink>>) = (0, None);
    loop {
        let message = match frame::read_blocking::<ToWorker>(input) {
            Ok(message) => message,
            Err(FrameError::Closed) => break,
            Err(e) => {
                eprintln!("codemode sandbox worker: {e}");
                break;
            }
        };
        match message {
            ToWorker::Run {
                run,
                source,
                limits,
                paths,
                run_id,
                track_waves,
            } => {
                let host = Arc::new(RelayHost {
                    run,
                    paths,
                    waiting: Arc::clone(&waiting),
                    next_id: Arc::clone(&next_id),
                    out: out.clone(),
                    watching_end: AtomicBool::new(false),
                });
                let mut extensions = Extensions::new();
                if track_waves {
                    extensions.insert(TrackWaves);
                }
                let options = RunOptions::new(limits)
                    .with_tools(host)
                    .with_run_id(run_id)
                    .with_extensions(extensions);
                let (to_host, finished) = (out.clone(), sandbox.clone());
                let reply = Reply::Callback(Box::new(move |outcome| {
                    to_host.send(&FromWorker::Outcome {
                        outcome: Box::new(outcome),
                        retire: finished.gave_up_a_worker(),
                    });
                }));
                match sandbox.submit(&source, options, reply) {
                    Ok(link) => current = (run, Some(link)),
                    Err(outcome) => {
                        // Refused before it took the engine (a syntax error): the isolate is
                        // still warm.
                        out.send(&FromWorker::Outcome {
                            outcome,
                            retire: false,
                        });
                        if sandbox.warm_workers() > 0 {
                            out.send(&FromWorker::Warm);
                        }
                    }
                }
            }
            ToWorker::Cancel { run } => {
                if let (true, Some(link)) = (run == current.0, &current.1) {
                    link.abandon();
                }
            }
            ToWorker::Reply { id, result } => answer(&waiting, id, result),
            ToWorker::ReplyEncoded {
                id,
                contexts,
                format,
                size,
            } => {
                // The value follows as a raw frame.
                let bytes = match frame::read_raw_blocking(input) {
                    Ok(bytes) => bytes,
                    Err(e) => {
                        eprintln!(
                            "codemode sandbox worker: an encoded answer lacks its value: {e}"
                        );
                        break;
                    }
                };
                let encoded = EncodedValue {
                    format,
                    bytes,
                    size,
                };
                answer(&waiting, id, Ok(ToolReply::encoded(encoded, contexts)));
            }
            ToWorker::Pause { id } => {
                if let Some((_, deadline)) = lock(&waiting).get(&id) {
                    deadline.pause();
                }
            }
            ToWorker::Resume { id } => {
                if let Some((_, deadline)) = lock(&waiting).get(&id) {
                    deadline.resume();
                }
            }
            ToWorker::Hello(_) => {}
        }
    }
    // The host closed the pipe: stop whatever runs; the process exits.
    if let Some(link) = current.1 {
        link.abandon();
    }
}

/// Hand the host's answer to call `id` to the call waiting for it, if it still waits.
fn answer(waiting: &Waiting, id: u64, result: Answer) {
    let entry = lock(waiting).remove(&id);
    if let Some((reply, _)) = entry {
        answer_wait::CALLS.handing_over();
        if reply.send(result).is_err() {
            // The call had gone (its run ended): nothing for it to take.
            answer_wait::CALLS.taken();
        }
    }
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
type Waiting = Arc<Mutex<HashMap<u64, (oneshot::Sender<Answer>, DeadlinePause)>>>;
type Answer = Result<ToolReply, CallError>;

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

    fn call(&self, request: ToolRequest) -> BoxFuture<'static, Answer> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (reply, answer) = oneshot::channel();
        // Counted before the call is sent, whose answer may come back at once.
        let mut awaited = AwaitedAnswer::new(answer);
        lock(&self.waiting).insert(id, (reply, request.deadline.clone()));
        self.out.send(&FromWorker::Call {
            id,
            path: request.path,
            args: request.args,
            unconvertible: request.unconvertible,
            seq: request.seq,
            wave: request.wave,
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
            let answer = (&mut awaited.answer).await;
            if answer.is_ok() {
                answer_wait::CALLS.taken();
            }
            answer.unwrap_or_else(|_| {
                Err(CallError::new(
                    ErrorKind::Cancelled,
                    "the host stopped answering",
                ))
            })
        })
    }
}

/// A call's wait for its answer, counted in [`answer_wait::CALLS`] from the call's send until
/// its future ends, however it ends.
struct AwaitedAnswer {
    answer: oneshot::Receiver<Answer>,
}

impl AwaitedAnswer {
    fn new(answer: oneshot::Receiver<Answer>) -> AwaitedAnswer {
        answer_wait::CALLS.call_sent();
        AwaitedAnswer { answer }
    }
}

impl Drop for AwaitedAnswer {
    fn drop(&mut self) {
        // Closed first: an answer sent before is still there to take (and counted here), one
        // sent after fails, and the sender counts it as taken itself.
        self.answer.close();
        // An answer handed over to a call that went before taking it.
        if self.answer.try_recv().is_ok() {
            answer_wait::CALLS.taken();
        }
        answer_wait::CALLS.call_done();
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

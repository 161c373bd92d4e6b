//! Upstream MCP servers as tool sources (`--upstream NS=CMD`): each is a child process spoken to
//! over stdio with the official SDK's client. Its `tools/list` becomes `tools.NS.*` (names mapped
//! per DESIGN.md §2, output schemas kept, `readOnlyHint: true` tools parallel-safe), and each tool's
//! body forwards the call to the server. The pipeline in front of the body is the host's: every
//! upstream call is validated, policed, approved, timed and observed like any other tool call.
//!
//! The child gets a minimal environment: `PATH`, `HOME`, and the `--upstream-env` allow-list, never
//! codemode's whole environment (which may hold API keys meant for other servers). Its process group
//! is killed when the connection is dropped. Its stderr is kept (the last lines) for error messages.
//!
//! Its stdout goes through a [`StdoutGate`] before the SDK reads it. The SDK's stdio transport
//! (rmcp 3.11, `transport/async_rw.rs`) drops a line over 16 MiB with only a log record and reads
//! on, and a line nested deeper than serde_json's recursion limit fails to parse and is dropped the
//! same way (as "unparsable"); either way the request it answered waits for the run's deadline.
//! The gate checks each line first: a bad answer is replaced by a JSON-RPC error for the same
//! request id, so that call fails at once and the connection stays usable for the next ones.

use std::collections::VecDeque;
use std::hash::BuildHasher;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use process_wrap::tokio::{ChildWrapper, CommandWrap, KillOnDrop, ProcessGroup};
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ErrorData, Implementation,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::async_rw::{AsyncRwTransport, DEFAULT_MAX_LINE_LENGTH};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, ReadBuf};
use tokio::sync::watch;

use super::content::{AnswerError, MAX_ANSWER_DEPTH, canonical_value};
use crate::pipeline::{LimitKind, ToolFailure};
use crate::schema::{ToolSpec, import_tools};
use crate::tool::{ToolDefinition, ToolRegistry};

/// How long an upstream may take to start and answer `initialize` and `tools/list`.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(60);
/// The largest message an upstream may send: one JSON-RPC line, its newline not counted. The
/// official SDK's own cap on a stdio line (16 MiB), enforced here where the request a too-large
/// answer belongs to can still be told.
pub(crate) const MAX_MESSAGE_BYTES: usize = DEFAULT_MAX_LINE_LENGTH;
/// Nesting at which serde_json, the SDK's parser, gives up on a message (its recursion limit:
/// 127 levels parse, the 128th fails).
const PARSER_DEPTH_LIMIT: usize = 128;
/// Bytes read from an upstream's stdout at a time.
const READ_CHUNK: usize = 64 * 1024;
/// Capacity a line buffer keeps between lines (one huge line should not pin 16 MiB for good).
const KEPT_CAPACITY: usize = 1 << 20;
/// The longest `id` the gate keeps (ids codemode sends are small numbers).
const MAX_ID_BYTES: usize = 128;
/// Lines of an upstream's stderr kept for error messages.
const STDERR_TAIL_LINES: usize = 20;
/// Bytes of one stderr line kept (the rest of a longer line is dropped).
const STDERR_LINE_BYTES: usize = 2000;
/// How long a failed handshake waits for the child's last stderr words.
const STDERR_GRACE: Duration = Duration::from_secs(2);
/// Variables every upstream inherits (when codemode has them).
const BASE_ENV: [&str; 2] = ["PATH", "HOME"];

/// One `--upstream NS=CMD`, with its `--upstream-env` entries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UpstreamSpec {
    /// The `NS` of the flag, an identifier: the server's tools appear as `tools.NS.<name>`.
    pub namespace: String,
    /// The program and its arguments (split like a POSIX shell would, without running one).
    pub command: Vec<String>,
    /// `KEY` (copied from codemode's environment) or `KEY=VALUE`.
    pub env: Vec<(String, Option<String>)>,
}

impl UpstreamSpec {
    /// Parse `NS=CMD`. The namespace must be an identifier (it becomes `tools.NS`).
    ///
    /// # Errors
    /// The flag is not `NS=CMD`, the namespace is not an identifier, or the command is empty.
    pub fn parse(flag: &str) -> Result<UpstreamSpec, FlagError> {
        let bad = |problem: String| FlagError::new("--upstream", flag, problem);
        let Some((namespace, command)) = flag.split_once('=') else {
            return Err(bad(
                "expected NS=CMD, e.g. --upstream 'memory=npx -y @modelcontextprotocol/server-memory'".into(),
            ));
        };
        let namespace = namespace.trim();
        if !crate::tool::is_identifier(namespace) {
            return Err(bad(format!(
                "the namespace `{namespace}` is not a JavaScript identifier (it becomes tools.{namespace}); use letters, digits, _ or $"
            )));
        }
        let command = shlex::split(command)
            .filter(|words| !words.is_empty())
            .ok_or_else(|| bad("the command is empty or its quoting is unbalanced".into()))?;
        Ok(UpstreamSpec {
            namespace: namespace.to_string(),
            command,
            env: Vec::new(),
        })
    }

    /// Apply the `--upstream-env NS:KEY[=VALUE]` flags to the specs they name.
    ///
    /// # Errors
    /// A flag is malformed, or names no `--upstream` namespace.
    pub fn apply_env_flags(specs: &mut [UpstreamSpec], flags: &[String]) -> Result<(), FlagError> {
        for flag in flags {
            let bad = |problem: String| FlagError::new("--upstream-env", flag, problem);
            let (namespace, entry) = flag
                .split_once(':')
                .ok_or_else(|| bad("expected NS:KEY or NS:KEY=VALUE".into()))?;
            let (key, value) = match entry.split_once('=') {
                Some((key, value)) => (key, Some(value.to_string())),
                None => (entry, None),
            };
            if key.is_empty() || key.contains(['\0', '=']) {
                return Err(bad(format!("`{key}` is not a variable name")));
            }
            let spec = specs
                .iter_mut()
                .find(|s| s.namespace == namespace)
                .ok_or_else(|| bad(format!("no --upstream has the namespace `{namespace}`")))?;
            spec.env.push((key.to_string(), value));
        }
        Ok(())
    }

    /// The environment the child starts with.
    pub fn environment(&self) -> Vec<(String, String)> {
        let mut env: Vec<(String, String)> = BASE_ENV
            .iter()
            .filter_map(|key| std::env::var(key).ok().map(|v| (key.to_string(), v)))
            .collect();
        for (key, value) in &self.env {
            let value = match value {
                Some(value) => Some(value.clone()),
                None => std::env::var(key).ok(),
            };
            if let Some(value) = value {
                env.retain(|(k, _)| k != key);
                env.push((key.clone(), value));
            }
        }
        env
    }
}

/// A malformed `--upstream` or `--upstream-env` flag: which flag, its value, and what is wrong
/// with it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{flag} `{value}`: {problem}")]
pub struct FlagError {
    /// The flag's name, e.g. `--upstream`.
    pub flag: &'static str,
    /// The value given.
    pub value: String,
    /// What is wrong with it, and what to do.
    pub problem: String,
}

impl FlagError {
    fn new(flag: &'static str, value: &str, problem: String) -> FlagError {
        FlagError {
            flag,
            value: value.to_string(),
            problem,
        }
    }
}

/// Why an upstream is not available.
#[derive(Clone, Debug, thiserror::Error)]
#[error("upstream `{namespace}`: {message}")]
pub struct UpstreamError {
    /// The namespace of the upstream that failed.
    pub namespace: String,
    /// What went wrong (spawn, handshake, `tools/list`, a timeout, a name clash on
    /// registration), with the tail of the server's stderr when that helps.
    pub message: String,
}

/// The last lines an upstream wrote to stderr.
#[derive(Clone, Default)]
struct StderrTail(Arc<Mutex<VecDeque<String>>>);

impl StderrTail {
    fn push(&self, line: String) {
        let mut lines = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if lines.len() == STDERR_TAIL_LINES {
            lines.pop_front();
        }
        lines.push_back(line);
    }

    /// `; its stderr ended with: ...`, or nothing.
    fn suffix(&self) -> String {
        let lines = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if lines.is_empty() {
            String::new()
        } else {
            let text: Vec<&str> = lines.iter().map(String::as_str).collect();
            format!("; its stderr ended with:\n{}", text.join("\n"))
        }
    }
}

/// Called when an upstream says its tool list changed.
pub(crate) type ListChanged = Arc<dyn Fn(&str) + Send + Sync>;

/// The client side of one upstream connection.
struct UpstreamClient {
    namespace: String,
    on_list_changed: Option<ListChanged>,
}

impl ClientHandler for UpstreamClient {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        if let Some(callback) = &self.on_list_changed {
            callback(&self.namespace);
        }
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("codemode", env!("CARGO_PKG_VERSION")),
        )
    }
}

/// A running upstream server. Dropping it (or [`Upstream::kill`]) kills its process group.
pub struct Upstream {
    namespace: String,
    service: Arc<RunningService<RoleClient, UpstreamClient>>,
    stderr: StderrTail,
    faults: Arc<Faults>,
    /// The child leads its own process group, whose id is its pid.
    process_group: Option<u32>,
    /// Killed when dropped (and reaped by the runtime).
    _child: Box<dyn ChildWrapper>,
    timeout: Duration,
}

impl std::fmt::Debug for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upstream")
            .field("namespace", &self.namespace)
            .field("process_group", &self.process_group)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Drain a child's stderr into `tail`, line by line (lossy UTF-8, long lines cut), until EOF.
async fn drain_stderr(stderr: tokio::process::ChildStderr, tail: StderrTail) {
    let mut reader = tokio::io::BufReader::new(stderr);
    let mut line = Vec::new();
    loop {
        line.clear();
        match (&mut reader)
            .take(STDERR_LINE_BYTES as u64)
            .read_until(b'\n', &mut line)
            .await
        {
            Ok(0) | Err(_) => break,
            Ok(_) => {
                let complete = line.last() == Some(&b'\n');
                let text = String::from_utf8_lossy(&line).trim_end().to_string();
                tail.push(text);
                if !complete {
                    // Skip the rest of an over-long line.
                    let mut rest = Vec::new();
                    if reader.read_until(b'\n', &mut rest).await.unwrap_or(0) == 0 {
                        break;
                    }
                }
            }
        }
    }
}

impl Upstream {
    /// Start the server, initialize the session, and return the connection.
    pub async fn connect(
        spec: &UpstreamSpec,
        timeout: Duration,
        on_list_changed: Option<ListChanged>,
    ) -> Result<Upstream, UpstreamError> {
        let fail = |message: String| UpstreamError {
            namespace: spec.namespace.clone(),
            message,
        };
        let mut command = tokio::process::Command::new(&spec.command[0]);
        command
            .args(&spec.command[1..])
            .env_clear()
            .envs(spec.environment())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut wrapped = CommandWrap::from(command);
        wrapped.wrap(ProcessGroup::leader()).wrap(KillOnDrop);
        let shown = shlex::try_join(spec.command.iter().map(String::as_str))
            .unwrap_or_else(|_| spec.command.join(" "));
        // Spawned here rather than by the SDK's `TokioChildProcess`, which reads the child's
        // stdout itself: the gate has to sit between the two.
        let mut child = wrapped
            .spawn()
            .map_err(|e| fail(format!("cannot start `{shown}`: {e}")))?;
        let (Some(stdin), Some(stdout)) = (child.stdin().take(), child.stdout().take()) else {
            return Err(fail(format!("cannot start `{shown}`: no stdio pipes")));
        };
        let stderr = child.stderr().take();
        let process_group = child.id();
        let tail = StderrTail::default();
        let mut drained = stderr.map(|stderr| tokio::spawn(drain_stderr(stderr, tail.clone())));
        let faults = Arc::new(Faults::new());
        // Every line the gate passes is at most MAX_MESSAGE_BYTES plus its newline.
        let transport = AsyncRwTransport::new_client(
            StdoutGate::new(stdout, MAX_MESSAGE_BYTES, Arc::clone(&faults)),
            stdin,
        )
        .with_max_line_length(MAX_MESSAGE_BYTES + 1);
        let client = UpstreamClient {
            namespace: spec.namespace.clone(),
            on_list_changed,
        };
        let service = match tokio::time::timeout(timeout, client.serve(transport)).await {
            Ok(Ok(service)) => service,
            Ok(Err(e)) => {
                // Let the stderr reader collect the reason the process died.
                if let Some(drained) = drained.take() {
                    let _ = tokio::time::timeout(STDERR_GRACE, drained).await;
                }
                return Err(fail(format!(
                    "`{shown}` did not complete the MCP handshake: {e}{}",
                    tail.suffix()
                )));
            }
            Err(_) => {
                return Err(fail(format!(
                    "`{shown}` did not complete the MCP handshake within {} s{}",
                    timeout.as_secs(),
                    tail.suffix()
                )));
            }
        };
        Ok(Upstream {
            namespace: spec.namespace.clone(),
            service: Arc::new(service),
            stderr: tail,
            faults,
            process_group,
            _child: child,
            timeout,
        })
    }

    /// Kill the server's whole process group (it may have started helpers of its own).
    pub fn kill(&self) {
        if let Some(group) = self.process_group.and_then(|pid| i32::try_from(pid).ok()) {
            // SAFETY: killpg only sends a signal; the group is the child's own (it was made
            // the leader of a new group at spawn), never codemode's.
            unsafe {
                libc::killpg(group, libc::SIGKILL);
            }
        }
    }

    /// The namespace the server's tools live under (`tools.NS`).
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The server's tools (all pages of `tools/list`), as imported specs.
    pub async fn list_tools(&self) -> Result<Vec<ToolSpec>, UpstreamError> {
        let timeout = self.timeout;
        let fail = |message: String| UpstreamError {
            namespace: self.namespace.clone(),
            message,
        };
        let tools = tokio::time::timeout(timeout, self.service.list_all_tools())
            .await
            .map_err(|_| {
                fail(format!(
                    "tools/list did not answer within {} s",
                    timeout.as_secs()
                ))
            })?
            .map_err(|e| match self.faults.recognize(&e) {
                Some(fault) => fail(format!(
                    "tools/list failed: its answer {} and was discarded",
                    fault.describe()
                )),
                None => fail(format!("tools/list failed: {e}{}", self.stderr.suffix())),
            })?;
        let doc = json!({ "tools": tools });
        import_tools(&doc).map_err(|e| fail(format!("its tools/list is not usable: {e}")))
    }

    /// Tool definitions whose bodies forward to this server.
    pub fn definitions(&self, specs: &[ToolSpec]) -> Result<Vec<ToolDefinition>, UpstreamError> {
        specs
            .iter()
            .map(|spec| {
                let forward = Forward {
                    namespace: self.namespace.clone().into(),
                    name: spec.name.clone().into(),
                    service: Arc::clone(&self.service),
                    stderr: self.stderr.clone(),
                    faults: Arc::clone(&self.faults),
                };
                ToolDefinition::from_spec(spec, move |args, exec| {
                    let forward = forward.clone();
                    async move {
                        tokio::select! {
                            result = forward.call(args) => result,
                            // Dropping the request future sends `notifications/cancelled`.
                            () = exec.cancel.cancelled() => Err(ToolFailure::new("cancelled")),
                        }
                    }
                })
                .map_err(|e| UpstreamError {
                    namespace: self.namespace.clone(),
                    message: format!("tool `{}`: {e}", spec.name),
                })
            })
            .collect()
    }

    /// Register `specs` as `tools.NS.*`. Errors name the clash (two names mapping to one sandbox
    /// name, or a namespace equal to a top-level tool).
    pub fn register(
        &self,
        specs: &[ToolSpec],
        registry: &mut ToolRegistry,
    ) -> Result<(), UpstreamError> {
        for tool in self.definitions(specs)? {
            registry
                .register_namespaced(&self.namespace, tool)
                .map_err(|e| UpstreamError {
                    namespace: self.namespace.clone(),
                    message: e.to_string(),
                })?;
        }
        Ok(())
    }
}

/// The body of one upstream tool.
#[derive(Clone)]
struct Forward {
    namespace: Arc<str>,
    name: Arc<str>,
    service: Arc<RunningService<RoleClient, UpstreamClient>>,
    stderr: StderrTail,
    faults: Arc<Faults>,
}

impl Forward {
    async fn call(&self, args: Value) -> Result<Value, ToolFailure> {
        let mut params = CallToolRequestParams::new(self.name.to_string());
        if let Value::Object(args) = args {
            params = params.with_arguments(args);
        }
        // Subscribed before the request goes out, so a bad message that arrives while it is in
        // flight and answers no request (see `StdoutGate`) fails this call too.
        let mut unanswered = self.faults.unanswered.subscribe();
        let result = tokio::select! {
            result = self.service.call_tool(params) => result,
            fault = next_fault(&mut unanswered) => return Err(self.unanswered(fault)),
        };
        let result = result.map_err(|e| {
            if let Some(fault) = self.faults.recognize(&e) {
                return self.bad_answer(fault);
            }
            let why = match e {
                rmcp::ServiceError::TransportClosed | rmcp::ServiceError::TransportSend(_) => {
                    "its connection is closed (the server process exited?)".to_string()
                }
                other => other.to_string(),
            };
            ToolFailure::new(format!(
                "upstream `{}` failed to answer `{}`: {why}{}",
                self.namespace,
                self.name,
                self.stderr.suffix()
            ))
        })?;
        let wire = serde_json::to_value(&result)
            .map_err(|e| ToolFailure::new(format!("the upstream result is not JSON: {e}")))?;
        canonical_value(&wire).map_err(|e| match e {
            AnswerError::Reported(text) => ToolFailure::new(text),
            AnswerError::TooDeep => self.bad_answer(Fault::TooDeep),
        })
    }

    /// The failure of a call whose answer the gate (or the content mapping) refused.
    fn bad_answer(&self, fault: Fault) -> ToolFailure {
        let message = format!(
            "upstream `{}`: the answer to `{}` {}; it was discarded (the connection stays open)",
            self.namespace,
            self.name,
            fault.describe()
        );
        fault_failure(fault, message)
    }

    /// The failure of a call in flight when the upstream sent a bad message that answered no
    /// request (it may have been this call's answer, or a request the server now waits on).
    fn unanswered(&self, fault: Fault) -> ToolFailure {
        let message = format!(
            "upstream `{}` sent a message that answers no call and {}; it was discarded, and every call in flight to it fails (`{}` among them)",
            self.namespace,
            fault.describe(),
            self.name,
        );
        fault_failure(fault, message)
    }
}

/// A failure for `fault`, not retryable (the same answer would come back): a too-large answer
/// is `LIMIT_EXCEEDED` (`details.limit = "result_bytes"`, like a result over the per-call limit),
/// a too-deep one `TOOL_ERROR` (the tool misbehaved; `OUTPUT_INVALID` is for values that break
/// the tool's declared output schema).
fn fault_failure(fault: Fault, message: String) -> ToolFailure {
    match fault {
        Fault::TooLarge { bytes } => {
            ToolFailure::limit_exceeded(LimitKind::ResultBytes, bytes, message)
        }
        Fault::TooDeep => ToolFailure::new(message),
    }
}

/// The next fault reported to `rx`; never, once the gate is gone.
async fn next_fault(rx: &mut watch::Receiver<Option<Fault>>) -> Fault {
    loop {
        if rx.changed().await.is_err() {
            return std::future::pending().await;
        }
        if let Some(fault) = *rx.borrow_and_update() {
            return fault;
        }
    }
}

/// A message from an upstream that never reaches the SDK.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    /// Over the size limit; `bytes` is its size (newline not counted).
    TooLarge { bytes: u64 },
    /// Nested too deep for the parser (at least [`PARSER_DEPTH_LIMIT`] levels), or, found after
    /// parsing, deeper than [`MAX_ANSWER_DEPTH`].
    TooDeep,
}

impl Fault {
    /// What is wrong with the message: "is over 16777216 bytes (...)".
    fn describe(self) -> String {
        match self {
            Fault::TooLarge { bytes } => {
                format!("is over {MAX_MESSAGE_BYTES} bytes ({bytes} bytes)")
            }
            Fault::TooDeep => {
                format!("is nested deeper than the limit of {MAX_ANSWER_DEPTH} levels")
            }
        }
    }
}

/// What the gate of one connection reports.
struct Faults {
    /// Marks the errors the gate writes in place of a discarded answer (`data.codemodeFault`),
    /// so the server cannot pass its own errors off as one.
    token: u64,
    /// A bad message that answered no request (no `id`, or a request from the server): every
    /// call in flight fails, since nothing else would end it.
    unanswered: watch::Sender<Option<Fault>>,
}

impl Faults {
    fn new() -> Faults {
        let token = std::collections::hash_map::RandomState::new().hash_one(std::process::id());
        Faults {
            token,
            unanswered: watch::Sender::new(None),
        }
    }

    /// The JSON-RPC error that stands in for a discarded answer to request `id`.
    fn stand_in(&self, id: &Value, fault: Fault) -> Vec<u8> {
        let mut data = json!({ "codemodeFault": self.token });
        if let Fault::TooLarge { bytes } = fault {
            data["bytes"] = json!(bytes);
        }
        let error = json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {
                "code": -32603,
                "message": format!("the upstream answer {}", fault.describe()),
                "data": data,
            },
        });
        let mut line = error.to_string().into_bytes();
        line.push(b'\n');
        line
    }

    /// The fault behind an error the gate wrote, if `error` is one.
    fn recognize(&self, error: &rmcp::ServiceError) -> Option<Fault> {
        let rmcp::ServiceError::McpError(ErrorData {
            data: Some(data), ..
        }) = error
        else {
            return None;
        };
        if data.get("codemodeFault").and_then(Value::as_u64) != Some(self.token) {
            return None;
        }
        Some(match data.get("bytes").and_then(Value::as_u64) {
            Some(bytes) => Fault::TooLarge { bytes },
            None => Fault::TooDeep,
        })
    }
}

/// An upstream's stdout as the SDK reads it: whole lines, each checked before it is passed on.
///
/// A line over `max_bytes` (only its size is kept past that point) or nested
/// [`PARSER_DEPTH_LIMIT`] levels deep, which the SDK would drop without a word, is discarded, and
///
/// - if it is a response (a top-level `id`, no `method`), a JSON-RPC error for that `id` takes its
///   place, so the request fails at once with the reason;
/// - if it is a notification, nothing else happens (nobody waits for it);
/// - otherwise (a request from the server, or no readable `id`) every call in flight fails,
///   through [`Faults::unanswered`].
///
/// The framing stays intact either way, so the connection stays usable.
struct StdoutGate<R> {
    inner: R,
    max_bytes: usize,
    faults: Arc<Faults>,
    chunk: Box<[u8]>,
    /// The unexamined bytes of `chunk`.
    start: usize,
    end: usize,
    eof: bool,
    /// The line being read; dropped once it is over `max_bytes`.
    line: Vec<u8>,
    /// Its size so far, counted on past `max_bytes`.
    line_bytes: u64,
    scan: LineScan,
    /// A checked line (with its newline) or a stand-in error, being handed over.
    out: Vec<u8>,
    out_at: usize,
}

impl<R> StdoutGate<R> {
    fn new(inner: R, max_bytes: usize, faults: Arc<Faults>) -> Self {
        StdoutGate {
            inner,
            max_bytes,
            faults,
            chunk: vec![0; READ_CHUNK].into_boxed_slice(),
            start: 0,
            end: 0,
            eof: false,
            line: Vec::new(),
            line_bytes: 0,
            scan: LineScan::default(),
            out: Vec::new(),
            out_at: 0,
        }
    }

    /// Take the unexamined bytes up to the end of the current line (or all of them).
    fn examine(&mut self) {
        let bytes = &self.chunk[self.start..self.end];
        let newline = bytes.iter().position(|&b| b == b'\n');
        let content = &bytes[..newline.unwrap_or(bytes.len())];
        self.scan.feed(content);
        let was_over = self.line_bytes > self.max_bytes as u64;
        self.line_bytes += content.len() as u64;
        if self.line_bytes <= self.max_bytes as u64 {
            self.line.extend_from_slice(content);
        } else if !was_over {
            self.line = Vec::new();
        }
        self.start += content.len();
        if newline.is_some() {
            self.start += 1;
            self.finish_line();
        }
    }

    /// A whole line has been read: pass it on, or discard it and say why.
    fn finish_line(&mut self) {
        let scan = std::mem::take(&mut self.scan);
        let bytes = std::mem::take(&mut self.line_bytes);
        let fault = if bytes > self.max_bytes as u64 {
            Fault::TooLarge { bytes }
        } else if scan.max_depth >= PARSER_DEPTH_LIMIT {
            Fault::TooDeep
        } else {
            // `out` is empty: lines are examined only once the previous one is handed over.
            std::mem::swap(&mut self.out, &mut self.line);
            self.out.push(b'\n');
            self.out_at = 0;
            return;
        };
        self.line.clear();
        self.line.shrink_to(KEPT_CAPACITY);
        match scan.kind() {
            LineKind::Response(id) => {
                self.out = self.faults.stand_in(&id, fault);
                self.out_at = 0;
            }
            LineKind::Notification => {}
            LineKind::Other => {
                self.faults.unanswered.send_replace(Some(fault));
            }
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for StdoutGate<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        loop {
            if this.out_at < this.out.len() {
                let n = buf.remaining().min(this.out.len() - this.out_at);
                buf.put_slice(&this.out[this.out_at..this.out_at + n]);
                this.out_at += n;
                if this.out_at == this.out.len() {
                    this.out.clear();
                    this.out.shrink_to(KEPT_CAPACITY);
                    this.out_at = 0;
                }
                return Poll::Ready(Ok(()));
            }
            if this.start < this.end {
                this.examine();
                continue;
            }
            if this.eof {
                // A last line without a newline is incomplete; the SDK would drop it too.
                return Poll::Ready(Ok(()));
            }
            let mut read = ReadBuf::new(&mut this.chunk);
            match Pin::new(&mut this.inner).poll_read(cx, &mut read) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Ready(Ok(())) => {
                    let n = read.filled().len();
                    this.start = 0;
                    this.end = n;
                    this.eof = n == 0;
                }
            }
        }
    }
}

/// What a discarded line was, as far as its top-level members tell.
#[derive(Debug, PartialEq)]
enum LineKind {
    /// An answer to the request with this `id`.
    Response(Value),
    Notification,
    /// A request from the server, or a line whose `id` cannot be read.
    Other,
}

/// What the gate learns of a line as it streams past, without keeping it: how deep it nests,
/// and the `id` and `method` members of its top-level object.
#[derive(Default)]
struct LineScan {
    /// Seen the first non-blank byte, and whether it opened an object.
    started: bool,
    object: bool,
    depth: usize,
    max_depth: usize,
    in_string: bool,
    escaped: bool,
    /// In the top-level object, where the next string is a member name.
    expect_key: bool,
    /// Reading a member name of the top-level object (its first bytes).
    in_key: bool,
    key: Vec<u8>,
    /// Reading the value of the top-level `id`, as raw JSON text.
    in_id: bool,
    id: Vec<u8>,
    id_too_long: bool,
    /// The raw `id` once its value ended.
    id_done: Option<Vec<u8>>,
    method: bool,
}

impl LineScan {
    fn feed(&mut self, bytes: &[u8]) {
        let mut i = 0;
        while i < bytes.len() {
            if self.in_string {
                if self.escaped {
                    self.escaped = false;
                    self.keep(&bytes[i..=i]);
                    i += 1;
                    continue;
                }
                // The body of a string: nothing to do up to the next quote or backslash.
                let rest = &bytes[i..];
                let run = rest
                    .iter()
                    .position(|&b| b == b'"' || b == b'\\')
                    .unwrap_or(rest.len());
                self.keep(&rest[..run]);
                i += run;
                let Some(&b) = bytes.get(i) else { break };
                i += 1;
                if b == b'\\' {
                    self.escaped = true;
                    self.keep(b"\\");
                } else if self.in_key {
                    self.in_string = false;
                    self.in_key = false;
                } else {
                    self.in_string = false;
                    self.keep(b"\"");
                }
                continue;
            }
            let b = bytes[i];
            i += 1;
            if !self.started {
                if b.is_ascii_whitespace() {
                    continue;
                }
                self.started = true;
                self.object = b == b'{';
            }
            match b {
                b'"' if self.object && self.depth == 1 && self.expect_key => {
                    self.in_string = true;
                    self.in_key = true;
                    self.expect_key = false;
                    self.key.clear();
                }
                b'"' => {
                    self.in_string = true;
                    self.keep(b"\"");
                }
                b'{' | b'[' => {
                    self.keep(&[b]);
                    self.depth += 1;
                    self.max_depth = self.max_depth.max(self.depth);
                    if self.depth == 1 {
                        self.expect_key = true;
                    }
                }
                b'}' | b']' if self.depth == 1 => {
                    self.end_member();
                    self.depth = 0;
                }
                b'}' | b']' => {
                    self.keep(&[b]);
                    self.depth = self.depth.saturating_sub(1);
                }
                b',' if self.depth == 1 => {
                    self.end_member();
                    self.expect_key = true;
                }
                b':' if self.depth == 1 => match self.key.as_slice() {
                    b"id" => {
                        self.in_id = true;
                        self.id.clear();
                    }
                    b"method" => self.method = true,
                    _ => {}
                },
                _ => self.keep(&[b]),
            }
        }
    }

    /// Bytes that belong to the member name or `id` value being read, if any.
    fn keep(&mut self, bytes: &[u8]) {
        if self.in_key {
            let room = 8usize.saturating_sub(self.key.len());
            self.key.extend_from_slice(&bytes[..bytes.len().min(room)]);
        } else if self.in_id {
            if self.id.len() + bytes.len() > MAX_ID_BYTES {
                self.id_too_long = true;
            } else {
                self.id.extend_from_slice(bytes);
            }
        }
    }

    fn end_member(&mut self) {
        if self.in_id {
            self.in_id = false;
            if !self.id_too_long {
                self.id_done = Some(std::mem::take(&mut self.id));
            }
        }
    }

    fn kind(&self) -> LineKind {
        let id = self
            .id_done
            .as_deref()
            .and_then(|raw| serde_json::from_slice::<Value>(raw).ok())
            .filter(|id| id.is_number() || id.is_string());
        match (id, self.method) {
            (Some(id), false) => LineKind::Response(id),
            (None, true) if self.id_done.is_none() && !self.id_too_long => LineKind::Notification,
            _ => LineKind::Other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_namespace_and_command_with_quotes() {
        let spec = UpstreamSpec::parse("mem=npx -y '@scope/server memory' --flag=a=b").unwrap();
        assert_eq!(spec.namespace, "mem");
        assert_eq!(
            spec.command,
            ["npx", "-y", "@scope/server memory", "--flag=a=b"]
        );
    }

    #[test]
    fn rejects_bad_flags_with_the_reason() {
        assert!(
            UpstreamSpec::parse("no-equals")
                .unwrap_err()
                .to_string()
                .contains("expected NS=CMD")
        );
        assert!(
            UpstreamSpec::parse("my-ns=cmd")
                .unwrap_err()
                .to_string()
                .contains("not a JavaScript identifier")
        );
        assert!(
            UpstreamSpec::parse("ns=")
                .unwrap_err()
                .to_string()
                .contains("empty")
        );
        assert!(
            UpstreamSpec::parse("ns=echo 'unbalanced")
                .unwrap_err()
                .to_string()
                .contains("unbalanced")
        );
    }

    #[test]
    fn env_flags_attach_to_their_namespace_and_build_a_minimal_environment() {
        let mut specs = vec![
            UpstreamSpec::parse("a=cmd").unwrap(),
            UpstreamSpec::parse("b=cmd").unwrap(),
        ];
        UpstreamSpec::apply_env_flags(&mut specs, &["b:TOKEN=xyz".into(), "b:PATH".into()])
            .unwrap();
        assert!(specs[0].env.is_empty());
        let env = specs[1].environment();
        assert!(env.contains(&("TOKEN".into(), "xyz".into())));
        let keys: Vec<&str> = env.iter().map(|(k, _)| k.as_str()).collect();
        assert!(
            keys.iter().all(|k| ["PATH", "HOME", "TOKEN"].contains(k)),
            "{keys:?}"
        );
        let err = UpstreamSpec::apply_env_flags(&mut specs, &["c:X".into()])
            .unwrap_err()
            .to_string();
        assert!(err.contains("no --upstream has the namespace `c`"), "{err}");
        let err = UpstreamSpec::apply_env_flags(&mut specs, &["bX".into()])
            .unwrap_err()
            .to_string();
        assert!(err.contains("expected NS:KEY"), "{err}");
    }

    fn scanned(line: &str, chunk: usize) -> LineScan {
        let mut scan = LineScan::default();
        for part in line.as_bytes().chunks(chunk) {
            scan.feed(part);
        }
        scan
    }

    #[test]
    fn the_scan_finds_the_top_level_id_and_method_in_any_chunking() {
        let cases = [
            (
                r#"{"jsonrpc":"2.0","id":7,"result":{"id":99,"method":"x"}}"#,
                LineKind::Response(json!(7)),
            ),
            (
                r#"{"jsonrpc":"2.0","result":{"text":"\"id\":5, \\"},"id" : "a\"b" }"#,
                LineKind::Response(json!("a\"b")),
            ),
            (
                r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"id":1}}"#,
                LineKind::Notification,
            ),
            (
                r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#,
                LineKind::Other,
            ),
            (
                r#"{"jsonrpc":"2.0","id":{"x":1},"result":{}}"#,
                LineKind::Other,
            ),
            (r#"{"jsonrpc":"2.0","id":null,"error":{}}"#, LineKind::Other),
            (r#"[{"id":1,"result":{}}]"#, LineKind::Other),
            ("not json at all", LineKind::Other),
        ];
        for (line, kind) in cases {
            for chunk in [1, 3, line.len()] {
                assert_eq!(
                    scanned(line, chunk).kind(),
                    kind,
                    "{line} in chunks of {chunk}"
                );
            }
        }
    }

    #[test]
    fn the_scan_flags_exactly_what_serde_json_cannot_parse_for_depth() {
        for levels in [1, 126, 127, 128, 129, 300] {
            // Brackets inside strings do not count.
            let line = format!(
                r#"{{"s":"[[[{{","v":{}1{}}}"#,
                "[".repeat(levels - 1),
                "]".repeat(levels - 1)
            );
            let parses = serde_json::from_str::<Value>(&line).is_ok();
            let flagged = scanned(&line, 7).max_depth >= PARSER_DEPTH_LIMIT;
            assert_eq!(parses, !flagged, "{levels} levels");
            assert_eq!(parses, levels < PARSER_DEPTH_LIMIT, "{levels} levels");
        }
    }

    /// Everything the gate passes for `input`, as lines, with its fault channel.
    async fn gated(input: &str, max_bytes: usize) -> (Vec<Value>, Arc<Faults>) {
        let faults = Arc::new(Faults::new());
        let mut gate = StdoutGate::new(input.as_bytes(), max_bytes, Arc::clone(&faults));
        let mut out = String::new();
        gate.read_to_string(&mut out).await.unwrap();
        let lines = out
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        (lines, faults)
    }

    #[tokio::test]
    async fn the_gate_passes_good_lines_and_stands_in_for_bad_answers() {
        let big = "x".repeat(2000);
        let deep = format!("{}1{}", "[".repeat(130), "]".repeat(130));
        let input = [
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#.to_string(),
            format!(r#"{{"jsonrpc":"2.0","id":2,"result":{{"t":"{big}"}}}}"#),
            format!(r#"{{"jsonrpc":"2.0","result":{{"t":"{big}"}},"id":3}}"#),
            format!(r#"{{"jsonrpc":"2.0","method":"notifications/message","params":"{big}"}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":4,"result":{deep}}}"#),
            r#"{"jsonrpc":"2.0","id":5,"result":{"ok":true}}"#.to_string(),
        ]
        .join("\n")
            + "\n";
        let (lines, faults) = gated(&input, 1000).await;
        assert_eq!(lines.len(), 5, "{lines:?}");
        assert_eq!(lines[0], json!({"jsonrpc": "2.0", "id": 1, "result": {}}));
        for (line, id) in lines[1..3].iter().zip([2, 3]) {
            assert_eq!(line["id"], id);
            let data = &line["error"]["data"];
            assert_eq!(data["codemodeFault"], faults.token);
            let bytes = data["bytes"].as_u64().unwrap();
            assert!(bytes > 2000, "{line}");
            let message = line["error"]["message"].as_str().unwrap();
            assert!(
                message.contains(&format!(
                    "is over {MAX_MESSAGE_BYTES} bytes ({bytes} bytes)"
                )),
                "{message}"
            );
        }
        // The notification is gone; the deep answer is an error for its id.
        assert_eq!(lines[3]["id"], 4);
        assert!(
            lines[3]["error"]["message"]
                .as_str()
                .unwrap()
                .contains("nested deeper than the limit of 100 levels")
        );
        assert_eq!(lines[4]["result"], json!({"ok": true}));
        assert_eq!(*faults.unanswered.borrow(), None);
    }

    #[tokio::test]
    async fn a_bad_message_that_answers_no_request_fails_the_calls_in_flight() {
        let big = "x".repeat(200);
        let input = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":\"s1\",\"method\":\"ping\",\"params\":\"{big}\"}}\n"
        );
        let (lines, faults) = gated(&input, 100).await;
        assert!(lines.is_empty(), "{lines:?}");
        assert!(matches!(
            *faults.unanswered.borrow(),
            Some(Fault::TooLarge { .. })
        ));
    }

    #[test]
    fn only_errors_with_the_connections_token_are_recognized_as_faults() {
        let faults = Faults::new();
        let line = faults.stand_in(&json!(9), Fault::TooLarge { bytes: 12345 });
        let error = |line: &[u8]| {
            let message: Value = serde_json::from_slice(line).unwrap();
            rmcp::ServiceError::McpError(serde_json::from_value(message["error"].clone()).unwrap())
        };
        assert_eq!(
            faults.recognize(&error(&line)),
            Some(Fault::TooLarge { bytes: 12345 })
        );
        let deep = faults.stand_in(&json!(9), Fault::TooDeep);
        assert_eq!(faults.recognize(&error(&deep)), Some(Fault::TooDeep));
        let other = Faults {
            token: faults.token.wrapping_add(1),
            unanswered: watch::Sender::new(None),
        };
        assert_eq!(other.recognize(&error(&line)), None);
    }
}

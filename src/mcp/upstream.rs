//! Upstream MCP servers as tool sources (`--upstream NS=CMD`): each is a child process spoken to
//! over stdio with the official SDK's client. Its `tools/list` becomes `tools.NS.*` (names mapped
//! per DESIGN.md §2, output schemas kept, `readOnlyHint: true` tools parallel-safe), and each tool's
//! body forwards the call to the server. The pipeline in front of the body is the host's: every
//! upstream call is validated, policed, approved, timed and observed like any other tool call.
//!
//! The child gets a minimal environment: `PATH`, `HOME`, and the `--upstream-env` allow-list, never
//! codemode's whole environment (which may hold API keys meant for other servers). Its process group
//! is killed when the connection is dropped. Its stderr is kept (the last lines) for error messages.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use process_wrap::tokio::{CommandWrap, KillOnDrop, ProcessGroup};
use rmcp::model::{CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt};

use super::content::canonical_value;
use crate::pipeline::ToolFailure;
use crate::schema::{ToolSpec, import_tools};
use crate::tool::{ToolDefinition, ToolRegistry};

/// How long an upstream may take to start and answer `initialize` and `tools/list`.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(60);
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
    pub namespace: String,
    /// The program and its arguments (split like a POSIX shell would, without running one).
    pub command: Vec<String>,
    /// `KEY` (copied from codemode's environment) or `KEY=VALUE`.
    pub env: Vec<(String, Option<String>)>,
}

impl UpstreamSpec {
    /// Parse `NS=CMD`. The namespace must be an identifier (it becomes `tools.NS`).
    pub fn parse(flag: &str) -> Result<UpstreamSpec, String> {
        let Some((namespace, command)) = flag.split_once('=') else {
            return Err(format!(
                "--upstream `{flag}`: expected NS=CMD, e.g. --upstream 'memory=npx -y @modelcontextprotocol/server-memory'"
            ));
        };
        let namespace = namespace.trim();
        if !crate::tool::is_identifier(namespace) {
            return Err(format!(
                "--upstream `{flag}`: the namespace `{namespace}` is not a JavaScript identifier (it becomes tools.{namespace}); use letters, digits, _ or $"
            ));
        }
        let command = shlex::split(command)
            .filter(|words| !words.is_empty())
            .ok_or_else(|| {
                format!("--upstream `{flag}`: the command is empty or its quoting is unbalanced")
            })?;
        Ok(UpstreamSpec {
            namespace: namespace.to_string(),
            command,
            env: Vec::new(),
        })
    }

    /// Apply the `--upstream-env NS:KEY[=VALUE]` flags to the specs they name.
    pub fn apply_env_flags(specs: &mut [UpstreamSpec], flags: &[String]) -> Result<(), String> {
        for flag in flags {
            let (namespace, entry) = flag.split_once(':').ok_or_else(|| {
                format!("--upstream-env `{flag}`: expected NS:KEY or NS:KEY=VALUE")
            })?;
            let (key, value) = match entry.split_once('=') {
                Some((key, value)) => (key, Some(value.to_string())),
                None => (entry, None),
            };
            if key.is_empty() || key.contains(['\0', '=']) {
                return Err(format!(
                    "--upstream-env `{flag}`: `{key}` is not a variable name"
                ));
            }
            let spec = specs
                .iter_mut()
                .find(|s| s.namespace == namespace)
                .ok_or_else(|| {
                    format!(
                        "--upstream-env `{flag}`: no --upstream has the namespace `{namespace}`"
                    )
                })?;
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

/// Why an upstream is not available.
#[derive(Clone, Debug, thiserror::Error)]
#[error("upstream `{namespace}`: {message}")]
pub struct UpstreamError {
    pub namespace: String,
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
pub type ListChanged = Arc<dyn Fn(&str) + Send + Sync>;

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
    /// The child leads its own process group, whose id is its pid.
    process_group: Option<u32>,
    timeout: Duration,
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
        command.args(&spec.command[1..]).env_clear();
        command.envs(spec.environment());
        let mut wrapped = CommandWrap::from(command);
        wrapped.wrap(ProcessGroup::leader()).wrap(KillOnDrop);
        let shown = shlex::try_join(spec.command.iter().map(String::as_str))
            .unwrap_or_else(|_| spec.command.join(" "));
        let (transport, stderr) = TokioChildProcess::builder(wrapped)
            .stderr(std::process::Stdio::piped())
            .spawn()
            .map_err(|e| fail(format!("cannot start `{shown}`: {e}")))?;
        let process_group = transport.id();
        let tail = StderrTail::default();
        let mut drained = stderr.map(|stderr| tokio::spawn(drain_stderr(stderr, tail.clone())));
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
            process_group,
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
            .map_err(|e| fail(format!("tools/list failed: {e}{}", self.stderr.suffix())))?;
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
}

impl Forward {
    async fn call(&self, args: Value) -> Result<Value, ToolFailure> {
        let mut params = CallToolRequestParams::new(self.name.to_string());
        if let Value::Object(args) = args {
            params = params.with_arguments(args);
        }
        let result = self.service.call_tool(params).await.map_err(|e| {
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
        canonical_value(&wire).map_err(ToolFailure::new)
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
                .contains("expected NS=CMD")
        );
        assert!(
            UpstreamSpec::parse("my-ns=cmd")
                .unwrap_err()
                .contains("not a JavaScript identifier")
        );
        assert!(UpstreamSpec::parse("ns=").unwrap_err().contains("empty"));
        assert!(
            UpstreamSpec::parse("ns=echo 'unbalanced")
                .unwrap_err()
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
        let err = UpstreamSpec::apply_env_flags(&mut specs, &["c:X".into()]).unwrap_err();
        assert!(err.contains("no --upstream has the namespace `c`"), "{err}");
        let err = UpstreamSpec::apply_env_flags(&mut specs, &["bX".into()]).unwrap_err();
        assert!(err.contains("expected NS:KEY"), "{err}");
    }
}

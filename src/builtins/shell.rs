//! `shell`: `sh -c COMMAND` in the root, in a process group of its own.

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::time::Instant;

use super::{Root, args_schema, card_args, parse_args, short};
use crate::pipeline::{CallStatus, ToolFailure};
use crate::tool::{Card, ToolDefinition};

/// `timeout_ms` when the call gives none.
pub const DEFAULT_SHELL_TIMEOUT_MS: u64 = 120_000;
/// Largest `timeout_ms` accepted.
pub const MAX_SHELL_TIMEOUT_MS: u64 = 600_000;
/// Bytes kept of each of stdout and stderr (the rest is read and dropped).
pub const MAX_SHELL_OUTPUT_BYTES: usize = 100 * 1024;
/// How long output is still drained once the command has ended or been killed (a process that
/// left the group with `setsid` may hold the pipes open).
const DRAIN_GRACE: Duration = Duration::from_millis(500);
/// Bytes of partial output quoted in a timeout error.
const TIMEOUT_OUTPUT_TAIL: usize = 4096;

/// The arguments of `shell`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ShellArgs<'a> {
    /// The command line, run by `sh -c` in the workspace root.
    #[schemars(length(min = 1))]
    command: &'a str,
    #[schemars(
        range(min = 1, max = MAX_SHELL_TIMEOUT_MS),
        description = format!(
            "Kill the command after this many milliseconds. Default {DEFAULT_SHELL_TIMEOUT_MS}."
        )
    )]
    timeout_ms: Option<u64>,
}

/// The `shell` tool.
///
/// **Not confined by the path guard**: the command runs as `sh -c` with the root as its working
/// directory but can read and write anything the process can. Gate it with a pre-execute hook,
/// an Approver or a policy.
///
/// The shell runs in a new process group (`process_group(0)`). The whole group is killed with
/// `SIGKILL` when the timeout fires, when the call is cancelled (`exec.cancel`), when the body's
/// future is dropped (the pipeline's own timeout, a cancelled caller), and when the shell exits
/// (so background jobs it left behind do not outlive the call). A process that moved to another
/// session or group (`setsid`) escapes this.
pub(crate) fn shell(root: Arc<Root>) -> ToolDefinition {
    ToolDefinition::builder("shell")
        .description(format!(
            "Run a shell command (`sh -c`) in the workspace root and return its exit code, stdout \
             and stderr (each cut at {} KiB, `truncated: true` when cut). The command is killed, \
             with everything it started, after `timeout_ms` (default {DEFAULT_SHELL_TIMEOUT_MS}, \
             at most {MAX_SHELL_TIMEOUT_MS}); background jobs do not outlive the call. Stdin is \
             empty: do not run interactive commands.",
            MAX_SHELL_OUTPUT_BYTES / 1024
        ))
        .parameters(args_schema::<ShellArgs>())
        .output_schema(json!({
            "type": "object",
            "properties": {
                "exit_code": {"type": "integer", "description": "The shell's exit status; 128 + N when killed by signal N."},
                "stdout": {"type": "string"},
                "stderr": {"type": "string"},
                "truncated": {"type": "boolean", "description": "stdout or stderr was cut."}
            },
            "required": ["exit_code", "stdout", "stderr", "truncated"],
            "additionalProperties": false
        }))
        // The pipeline's timeout wrapper must not fire before the tool's own `timeout_ms`.
        .timeout_ms(MAX_SHELL_TIMEOUT_MS + 10_000)
        .render(render_shell)
        .present_call(|args| terminal_card(args, String::new(), None))
        .present_result(|args, view| match (view.status, view.value) {
            (CallStatus::Ok, Some(v)) => {
                let mut output = v["stdout"].as_str().unwrap_or("").to_owned();
                output.push_str(v["stderr"].as_str().unwrap_or(""));
                terminal_card(args, output, v["exit_code"].as_i64())
            }
            _ => terminal_card(args, view.content.to_owned(), None),
        })
        .execute(move |args, exec| {
            let root = root.clone();
            async move { run(&root.path, &args, exec.cancel).await }
        })
        .build()
        .expect("shell builds")
}

fn terminal_card(args: &Value, output: String, exit_code: Option<i64>) -> Card {
    let command = card_args::<ShellArgs>(args).command.to_owned();
    Card::Terminal {
        title: format!("$ {}", short(&command, 80)),
        command,
        output,
        exit_code,
    }
}

fn render_shell(v: &Value) -> String {
    let mut parts: Vec<String> = Vec::new();
    let stdout = v["stdout"].as_str().unwrap_or("");
    let stderr = v["stderr"].as_str().unwrap_or("");
    if !stdout.is_empty() {
        parts.push(stdout.trim_end_matches('\n').to_owned());
    }
    if !stderr.is_empty() {
        parts.push(format!("[stderr]\n{}", stderr.trim_end_matches('\n')));
    }
    parts.push(format!(
        "[exit code {}]",
        v["exit_code"].as_i64().unwrap_or(-1)
    ));
    if v["truncated"].as_bool() == Some(true) {
        parts.push(format!(
            "[output truncated: only the first {} KiB of each stream are kept]",
            MAX_SHELL_OUTPUT_BYTES / 1024
        ));
    }
    parts.join("\n")
}

/// Kills the process group on demand and, at the latest, when dropped.
struct Group {
    pgid: Option<libc::pid_t>,
}

impl Group {
    fn kill(&mut self) {
        if let Some(pgid) = self.pgid.take() {
            // SAFETY: killpg has no memory-safety preconditions; a group that is already gone
            // yields ESRCH, which is fine.
            unsafe {
                libc::killpg(pgid, libc::SIGKILL);
            }
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.kill();
    }
}

/// What a reader task has read so far (shared, so a timeout can report partial output).
#[derive(Default)]
struct Captured {
    bytes: Vec<u8>,
    truncated: bool,
}

fn spawn_reader<R>(mut reader: R, into: Arc<Mutex<Captured>>) -> tokio::task::JoinHandle<()>
where
    R: AsyncRead + Unpin + Send + 'static,
{
    tokio::spawn(async move {
        let mut chunk = vec![0u8; 16 * 1024];
        loop {
            match reader.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let mut cap = into.lock().expect("capture lock");
                    let room = MAX_SHELL_OUTPUT_BYTES.saturating_sub(cap.bytes.len());
                    if n > room {
                        cap.bytes.extend_from_slice(&chunk[..room]);
                        cap.truncated = true;
                    } else {
                        cap.bytes.extend_from_slice(&chunk[..n]);
                    }
                }
            }
        }
    })
}

/// Waits (a little) for both readers to reach end of file, then takes what they read.
async fn drain(
    readers: Vec<tokio::task::JoinHandle<()>>,
    captures: [&Arc<Mutex<Captured>>; 2],
    grace: Duration,
) -> (String, String, bool) {
    let deadline = Instant::now() + grace;
    for mut reader in readers {
        if tokio::time::timeout_at(deadline, &mut reader)
            .await
            .is_err()
        {
            reader.abort();
        }
    }
    let take = |c: &Arc<Mutex<Captured>>| {
        let c = c.lock().expect("capture lock");
        (String::from_utf8_lossy(&c.bytes).into_owned(), c.truncated)
    };
    let (stdout, t1) = take(captures[0]);
    let (stderr, t2) = take(captures[1]);
    (stdout, stderr, t1 || t2)
}

async fn run(
    root: &Path,
    args: &Value,
    cancel: tokio_util::sync::CancellationToken,
) -> Result<Value, ToolFailure> {
    let ShellArgs {
        command,
        timeout_ms,
    } = parse_args("shell", args)?;
    // The schema bounds it too; the clamp keeps a pipeline without validation within them.
    let timeout_ms = timeout_ms
        .unwrap_or(DEFAULT_SHELL_TIMEOUT_MS)
        .clamp(1, MAX_SHELL_TIMEOUT_MS);
    let deadline = Instant::now() + Duration::from_millis(timeout_ms);

    let mut child = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .current_dir(root)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| ToolFailure::new(format!("cannot start `sh`: {e}")))?;
    let mut group = Group {
        pgid: child.id().and_then(|id| libc::pid_t::try_from(id).ok()),
    };
    let out = Arc::new(Mutex::new(Captured::default()));
    let err = Arc::new(Mutex::new(Captured::default()));
    let mut readers = Vec::new();
    if let Some(stdout) = child.stdout.take() {
        readers.push(spawn_reader(stdout, out.clone()));
    }
    if let Some(stderr) = child.stderr.take() {
        readers.push(spawn_reader(stderr, err.clone()));
    }

    let status = tokio::select! {
        status = child.wait() => status,
        _ = tokio::time::sleep_until(deadline) => {
            group.kill();
            let _ = child.wait().await;
            let (stdout, stderr, _) = drain(readers, [&out, &err], DRAIN_GRACE).await;
            let mut message = format!(
                "`{}` timed out after {timeout_ms} ms; its process group was killed",
                short(command, 80)
            );
            let partial = format!("{stdout}{stderr}");
            if !partial.is_empty() {
                let start = partial.len().saturating_sub(TIMEOUT_OUTPUT_TAIL);
                let mut start = start;
                while !partial.is_char_boundary(start) {
                    start += 1;
                }
                message.push_str("\noutput before the timeout (last part):\n");
                message.push_str(&partial[start..]);
            }
            return Err(ToolFailure::timed_out(timeout_ms, message));
        }
        _ = cancel.cancelled() => {
            group.kill();
            let _ = child.wait().await;
            return Err(ToolFailure::new("the command was cancelled; its process group was killed"));
        }
    };
    let status = status.map_err(|e| ToolFailure::new(format!("waiting for `sh` failed: {e}")))?;
    // The shell is done: whatever it left running in its group goes too.
    group.kill();
    let (stdout, stderr, truncated) = drain(readers, [&out, &err], DRAIN_GRACE).await;
    let exit_code = status
        .code()
        .map(i64::from)
        .unwrap_or_else(|| 128 + i64::from(status.signal().unwrap_or(0)));
    Ok(json!({
        "exit_code": exit_code,
        "stdout": stdout,
        "stderr": stderr,
        "truncated": truncated,
    }))
}

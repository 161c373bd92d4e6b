//! The approver of `codemode run`: a prompt on the controlling terminal (`/dev/tty`), so stdout
//! (`--json`) and stdin (`codemode run -`) are never touched. Without a terminal every ask is
//! refused with a reason that says how to allow the tool instead.

use std::fs::OpenOptions;
use std::io::{self, BufRead, BufReader, Write};
use std::sync::{Arc, Mutex};

use futures::FutureExt;
use futures::future::BoxFuture;

use crate::pipeline::HookError;
use crate::pipeline::{ApprovalDecision, ApprovalRequest, Approver, ProgramApprovalRequest};

/// Start of the refusal reason when no terminal can be opened.
pub const NO_TERMINAL: &str = "no terminal to ask on";

/// Characters of the arguments shown in a prompt.
const ARGS_SHOWN: usize = 200;

/// Where a prompt is written and its answer read.
pub struct Terminal {
    /// Where the answer is read: one line, `y`/`yes` approves.
    pub input: Box<dyn BufRead + Send>,
    /// Where the prompt is written.
    pub output: Box<dyn Write + Send>,
    /// Clear the current line first (a live progress line may be on it).
    pub ansi: bool,
}

impl std::fmt::Debug for Terminal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Terminal")
            .field("ansi", &self.ansi)
            .finish_non_exhaustive()
    }
}

type Opener = dyn Fn() -> io::Result<Terminal> + Send + Sync;

/// Asks on a terminal, one prompt at a time. `y` or `yes` (any case) approves; anything else,
/// end of input included, refuses.
///
/// # Cancellation
/// The blocking read runs on tokio's blocking pool. If the call is cancelled or the approval
/// times out meanwhile, the prompt stays open until it is answered (the answer is then ignored);
/// the next prompt waits for it.
#[derive(Clone)]
pub struct TerminalApprover {
    open: Arc<Opener>,
    screen: Arc<Mutex<()>>,
}

impl std::fmt::Debug for TerminalApprover {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TerminalApprover").finish_non_exhaustive()
    }
}

impl Default for TerminalApprover {
    fn default() -> Self {
        Self::new()
    }
}

impl TerminalApprover {
    /// Prompts on `/dev/tty` (opened for each prompt).
    pub fn new() -> Self {
        Self::with_terminal(open_dev_tty)
    }

    /// Prompts on whatever `open` returns (tests use pipes); an `open` error refuses the call.
    pub fn with_terminal(open: impl Fn() -> io::Result<Terminal> + Send + Sync + 'static) -> Self {
        TerminalApprover {
            open: Arc::new(open),
            screen: Arc::new(Mutex::new(())),
        }
    }

    /// Held while a prompt is on screen: a live display must not draw while it is taken.
    pub fn screen_lock(&self) -> Arc<Mutex<()>> {
        self.screen.clone()
    }
}

fn open_dev_tty() -> io::Result<Terminal> {
    let input = OpenOptions::new().read(true).open("/dev/tty")?;
    let output = OpenOptions::new().write(true).open("/dev/tty")?;
    Ok(Terminal {
        input: Box::new(BufReader::new(input)),
        output: Box::new(output),
        ansi: true,
    })
}

enum Answer {
    Yes,
    No(String),
    NoTerminal(io::Error),
}

fn ask(open: &Opener, prompt: &str) -> Answer {
    let mut term = match open() {
        Ok(term) => term,
        Err(e) => return Answer::NoTerminal(e),
    };
    let clear = if term.ansi { "\r\x1b[2K" } else { "" };
    if let Err(e) = write!(term.output, "{clear}{prompt}").and_then(|()| term.output.flush()) {
        return Answer::NoTerminal(e);
    }
    let mut line = String::new();
    match term.input.read_line(&mut line) {
        Ok(0) => Answer::No("no answer at the terminal prompt (end of input)".into()),
        Ok(_) => match line.trim().to_ascii_lowercase().as_str() {
            "y" | "yes" => Answer::Yes,
            _ => Answer::No("refused at the terminal prompt".into()),
        },
        Err(e) => Answer::NoTerminal(e),
    }
}

/// The prompt: the tool, the reasons, and the arguments on one line (cut).
pub(crate) fn prompt_text(path: &str, reasons: &[String], args: &serde_json::Value) -> String {
    let json = args.to_string();
    let shown: String = json.chars().take(ARGS_SHOWN).collect();
    let more = if shown.len() < json.len() { "…" } else { "" };
    format!(
        "codemode: the program wants to call `{path}`: {}\n  args: {shown}{more}\n  allow this call? [y/N] ",
        reasons.join("; ")
    )
}

impl TerminalApprover {
    /// Shows `prompt` and reads the answer on a thread of its own. The read blocks until a line
    /// is typed and cannot be interrupted; not on tokio's blocking pool, because a runtime being
    /// dropped waits for its blocking tasks, so Ctrl-C at the prompt (which cancels the run and
    /// drops the call) would otherwise hang until Enter. An abandoned prompt thread ends with
    /// the process.
    async fn answer(&self, prompt: String) -> Result<Answer, HookError> {
        let open = self.open.clone();
        let screen = self.screen.clone();
        let (reply, answer) = tokio::sync::oneshot::channel();
        std::thread::Builder::new()
            .name("codemode-prompt".into())
            .spawn(move || {
                let _screen = screen.lock().unwrap_or_else(|p| p.into_inner());
                let _ = reply.send(ask(&*open, &prompt));
            })
            .map_err(|e| HookError::new(format!("the terminal prompt failed: {e}")))?;
        answer
            .await
            .map_err(|_| HookError::new("the terminal prompt failed: its thread panicked"))
    }
}

impl Approver for TerminalApprover {
    fn approve<'a>(
        &'a self,
        request: &'a ApprovalRequest<'a>,
    ) -> BoxFuture<'a, Result<ApprovalDecision, HookError>> {
        let path = request.call.path.to_string();
        let prompt = prompt_text(&path, request.reasons, request.call.args);
        async move {
            Ok(match self.answer(prompt).await? {
                Answer::Yes => ApprovalDecision::Approve,
                Answer::No(reason) => ApprovalDecision::Refuse { reason },
                Answer::NoTerminal(e) => ApprovalDecision::Refuse {
                    reason: format!(
                        "{NO_TERMINAL} ({e}); `{path}` needs approval: add an allow rule for it to the policy (--policy FILE) to run it without asking"
                    ),
                },
            })
        }
        .boxed()
    }

    fn approve_program<'a>(
        &'a self,
        request: &'a ProgramApprovalRequest<'a>,
    ) -> BoxFuture<'a, Result<Option<ApprovalDecision>, HookError>> {
        let prompt = format!(
            "codemode: {}\n  run this program? [y/N] ",
            request.summary().replace('\n', "\n  ")
        );
        async move {
            Ok(Some(match self.answer(prompt).await? {
                Answer::Yes => ApprovalDecision::Approve,
                Answer::No(reason) => ApprovalDecision::Refuse { reason },
                Answer::NoTerminal(e) => ApprovalDecision::Refuse {
                    reason: format!(
                        "{NO_TERMINAL} ({e}); the program needs approval: add allow rules for its tools to the policy (--policy FILE), or pass --program-approval off to be asked per call"
                    ),
                },
            }))
        }
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::prompt_text;
    use serde_json::json;

    #[test]
    fn prompt_names_tool_reasons_and_cuts_long_args() {
        let long = "x".repeat(1000);
        let p = prompt_text(
            "shell",
            &["runs a command".into()],
            &json!({ "command": long }),
        );
        assert!(p.contains("`shell`: runs a command"), "{p}");
        assert!(p.contains("…\n"), "{p}");
        assert!(p.len() < 400, "{}", p.len());
    }
}

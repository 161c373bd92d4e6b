//! Whole-program approval: before a code-mode run starts, the pipeline says which of the calls
//! a program's plan names would be put to the approver ([`Pipeline::preview`]), and the
//! approver is asked once, with the program and its plan ([`Pipeline::approve_program`]).
//!
//! An approval becomes an [`ApprovedPlan`](crate::call::ApprovedPlan) on the run's extensions;
//! the gates then answer the `ask`s of the calls it covers without asking again. Nothing here
//! can turn a `deny` into a run: hooks and guards still decide every call at run time.

use std::str::FromStr;
use std::time::Duration;

use serde_json::Value;

use super::Pipeline;
use super::approval::{ApprovalDecision, ProgramApprovalRequest};
use super::gates::{guarded, pre_hooks};
use super::hooks::CallInfo;
use crate::call::{Caller, DeniedBy, Extensions};

/// Whether a program whose plan names calls that would ask is put to the approver once, before
/// it runs (policy key `program_approval`, flag `--program-approval`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ProgramApproval {
    /// Every `ask` is put to the approver when its call is made (the default).
    #[default]
    Off,
    /// The approver sees the program and its plan once, before the run; an approval covers the
    /// `ask`s of the planned tool paths.
    Ask,
}

impl ProgramApproval {
    /// `"off"` or `"ask"`.
    pub fn as_str(self) -> &'static str {
        match self {
            ProgramApproval::Off => "off",
            ProgramApproval::Ask => "ask",
        }
    }
}

impl FromStr for ProgramApproval {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "off" => Ok(ProgramApproval::Off),
            "ask" => Ok(ProgramApproval::Ask),
            other => Err(format!(
                "unknown program approval `{other}` (expected `ask` or `off`)"
            )),
        }
    }
}

/// The approver's answer about a whole program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProgramVerdict {
    /// Approved: the `ask`s of the calls the plan covers are answered yes.
    Approved,
    /// Refused: the run does not start (`DENIED`, `details.by = "approver"`).
    Refused {
        /// Why.
        reason: String,
    },
    /// No approver, or one that does not approve whole programs: every `ask` is put to it (or
    /// denied) when its call is made, as without program approval.
    PerCall,
}

/// The decision of the pre-execute hooks about one planned call, without the approver.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Preview {
    /// Every hook allows it.
    Allow,
    /// At least one hook asks (and none denies).
    Ask {
        /// The reasons of the hooks that ask.
        reasons: Vec<String>,
    },
    /// A hook denies it (or failed): the call will be refused when made, approval or not.
    Deny {
        /// Who denies.
        by: DeniedBy,
        /// Why.
        reason: String,
    },
    /// No tool has this path.
    UnknownTool,
}

impl Pipeline {
    /// What the pre-execute hooks decide about a call of `path` with `args` by `caller`, as the
    /// gates would run them, but without asking anyone and without running anything. Hooks
    /// whose decision depends on arguments see `args` only: for a planned call whose arguments
    /// are not constant, pass `{}`, and the call is decided again when it is made.
    pub async fn preview(
        &self,
        path: &str,
        args: &Value,
        caller: &Caller,
        extensions: &Extensions,
    ) -> Preview {
        let Some(tool) = self.inner.registry.get(path) else {
            return Preview::UnknownTool;
        };
        let info = CallInfo {
            call_id: "plan",
            path,
            tool: &tool.tool,
            args,
            caller,
            // The scheduler has not placed the call; hooks that read this see the safe answer.
            parallel: false,
            extensions,
        };
        match pre_hooks(&self.inner, &info).await {
            Ok(reasons) if reasons.is_empty() => Preview::Allow,
            Ok(reasons) => Preview::Ask { reasons },
            Err((by, reason)) => Preview::Deny { by, reason },
        }
    }

    /// Puts a whole program to the approver once, within the pipeline's approval timeout. An
    /// error, a panic or the timeout is a refusal; `waited` receives the time spent waiting.
    pub async fn approve_program(
        &self,
        request: &ProgramApprovalRequest<'_>,
        waited: &mut Duration,
    ) -> ProgramVerdict {
        let Some(approver) = &self.inner.approver else {
            return ProgramVerdict::PerCall;
        };
        let started = tokio::time::Instant::now();
        let answer = tokio::time::timeout(
            self.inner.approval_timeout,
            guarded("approver", || approver.approve_program(request)),
        )
        .await;
        *waited = started.elapsed();
        match answer {
            Ok(Ok(Some(ApprovalDecision::Approve))) => ProgramVerdict::Approved,
            Ok(Ok(Some(ApprovalDecision::Refuse { reason }))) => ProgramVerdict::Refused { reason },
            Ok(Ok(None)) => ProgramVerdict::PerCall,
            Ok(Err(why)) => ProgramVerdict::Refused { reason: why },
            Err(_) => ProgramVerdict::Refused {
                reason: format!(
                    "no approval within {} ms",
                    self.inner.approval_timeout.as_millis()
                ),
            },
        }
    }
}

/// Lines of the program shown in a summary; the rest is counted.
const SUMMARY_PROGRAM_LINES: usize = 60;
/// Characters of one program line shown.
const SUMMARY_LINE_CHARS: usize = 160;
/// Planned calls (and blind spots) listed; the rest is counted.
const SUMMARY_ENTRIES: usize = 40;
/// Characters of a call's constant arguments shown.
const SUMMARY_ARGS_CHARS: usize = 120;

impl ProgramApprovalRequest<'_> {
    /// A readable account of the request, for a person: the program with line numbers, the
    /// calls it names (with constant arguments, and which ask), what the plan cannot see, and
    /// what an approval covers. Long parts are cut, and say so.
    pub fn summary(&self) -> String {
        use std::fmt::Write as _;
        let mut out = String::new();
        let lines: Vec<&str> = self.code.lines().collect();
        let _ = writeln!(
            out,
            "a program ({} lines) asks to run; it calls tools that need approval.",
            lines.len()
        );
        for (i, line) in lines.iter().take(SUMMARY_PROGRAM_LINES).enumerate() {
            let _ = writeln!(out, "{:>4} | {}", i + 1, cut(line, SUMMARY_LINE_CHARS));
        }
        if lines.len() > SUMMARY_PROGRAM_LINES {
            let _ = writeln!(
                out,
                "     | ... {} more lines",
                lines.len() - SUMMARY_PROGRAM_LINES
            );
        }
        out.push_str("Planned calls:\n");
        for call in self.plan.calls.iter().take(SUMMARY_ENTRIES) {
            let what = if call.called {
                match &call.args {
                    Some(args) => cut(&args.to_string(), SUMMARY_ARGS_CHARS),
                    None => "(arguments computed at run time)".into(),
                }
            } else {
                format!("(referenced: may call {} or any tool under it)", call.path)
            };
            let asks = match self.asks.iter().find(|a| a.path == call.path) {
                Some(ask) => format!("  <- asks: {}", ask.reasons.join("; ")),
                None => String::new(),
            };
            let _ = writeln!(out, "  line {:<4} {} {what}{asks}", call.line, call.path);
        }
        if self.plan.calls.len() > SUMMARY_ENTRIES {
            let _ = writeln!(
                out,
                "  ... {} more",
                self.plan.calls.len() - SUMMARY_ENTRIES
            );
        }
        if !self.plan.dynamic.is_empty() {
            out.push_str(
                "It may also call tools the plan cannot see (each such call still asks):\n",
            );
            for spot in self.plan.dynamic.iter().take(SUMMARY_ENTRIES) {
                let under = spot
                    .prefix
                    .as_deref()
                    .map(|p| format!(" under {p}"))
                    .unwrap_or_default();
                let _ = writeln!(
                    out,
                    "  line {:<4} {}{under}",
                    spot.line,
                    spot.kind.describe()
                );
            }
        }
        let approved: Vec<&str> = self.asks.iter().map(|a| a.path.as_str()).collect();
        let _ = write!(
            out,
            "Approving answers yes for: {}. Denied calls stay denied.",
            approved.join(", ")
        );
        out
    }
}

fn cut(text: &str, chars: usize) -> String {
    match text.char_indices().nth(chars) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

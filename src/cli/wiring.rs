//! What `run` and `mcp` share: the limits of a run (defaults, then the policy's `[limits]`, then
//! the flags), the log files, and the Code Mode assembly over the sources.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::sources::Sources;
use codemode::harness::{Harness, HarnessBuilder};
use codemode::learned::TypeStore;
use codemode::pipeline::{AuditLog, EventSink, ProgramApproval, SessionLog, SessionLogOptions};
use codemode::policy::PolicyLimits;
use codemode::sandbox::{Isolation, Limits, MIB, ProcessConfig};

/// The limits of a run: defaults, then the policy's `[limits]`, then the flags.
pub fn run_limits(policy: &PolicyLimits, timeout_ms: Option<u64>, heap_mb: Option<u64>) -> Limits {
    let mut limits = policy.apply(Limits::default());
    if let Some(ms) = timeout_ms {
        limits.deadline = Duration::from_millis(ms);
    }
    if let Some(mb) = heap_mb {
        limits.heap_bytes = mb as usize * MIB;
    }
    limits
}

/// `--session-log` and `--audit-log`, open for appending. Clones share the files (a command
/// keeps one to ask [`Logs::failures`] after the harness took the other).
#[derive(Clone, Default)]
pub struct Logs {
    /// Durable `tool/result` events: each `run_code` call, and direct calls.
    session: Option<(PathBuf, Arc<SessionLog>)>,
    /// One record per nested (or direct) tool call.
    audit: Option<(PathBuf, Arc<AuditLog>)>,
}

impl Logs {
    /// Opens the files the flags name; an error is an input error.
    pub fn open(
        session_log: &Option<PathBuf>,
        audit_log: &Option<PathBuf>,
    ) -> Result<Logs, String> {
        let cannot = |flag: &str, path: &PathBuf, e: std::io::Error| {
            format!("{flag} {}: cannot open for appending: {e}", path.display())
        };
        let session = match session_log {
            Some(path) => Some((
                path.clone(),
                Arc::new(
                    SessionLog::open(path, SessionLogOptions::default())
                        .map_err(|e| cannot("--session-log", path, e))?,
                ),
            )),
            None => None,
        };
        let audit = match audit_log {
            Some(path) => Some((
                path.clone(),
                Arc::new(AuditLog::open(path).map_err(|e| cannot("--audit-log", path, e))?),
            )),
            None => None,
        };
        Ok(Logs { session, audit })
    }

    /// One line per log file that lost records (the details went to stderr as they happened).
    pub fn failures(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some((path, log)) = &self.session
            && log.write_errors() > 0
        {
            out.push(format!(
                "--session-log {}: {} record(s) could not be written",
                path.display(),
                log.write_errors()
            ));
        }
        if let Some((path, log)) = &self.audit
            && log.write_errors() > 0
        {
            out.push(format!(
                "--audit-log {}: {} record(s) could not be written",
                path.display(),
                log.write_errors()
            ));
        }
        out
    }
}

/// `--isolation`: where programs run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum IsolationFlag {
    /// Engine threads inside this process: fastest; an engine fault ends the process.
    Thread,
    /// Worker processes of this binary: a crash ends only its run (status `crashed`), and
    /// workers are recycled, which bounds what the engine leaks.
    Process,
}

impl IsolationFlag {
    /// The isolation; worker processes may grow by `waiting_workers` for runs that only wait.
    pub fn isolation(self, waiting_workers: usize) -> Isolation {
        match self {
            IsolationFlag::Thread => Isolation::Thread,
            IsolationFlag::Process => Isolation::Process(ProcessConfig {
                waiting_workers,
                ..ProcessConfig::default()
            }),
        }
    }
}

/// `--program-approval`: whether a program is put to the approver once, before it runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ProgramApprovalFlag {
    /// Show the program and its planned calls once; an approval covers the planned tools' asks.
    Ask,
    /// Ask about each call when it is made.
    Off,
}

/// The Code Mode assembly over `sources`: the policy hook, the built-ins' path guard and the
/// audit log on the inner pipeline; the session log on both (it keeps only durable events: the
/// `run_code` calls and direct calls, never nested ones); program approval from the flag, else
/// the policy's `program_approval`; output types learned into `types`. The caller adds its
/// approver.
pub fn harness(
    sources: &Sources,
    limits: Limits,
    logs: Logs,
    program_approval: Option<ProgramApprovalFlag>,
    types: Option<TypeStore>,
) -> HarnessBuilder {
    let program_approval = match program_approval {
        Some(ProgramApprovalFlag::Ask) => ProgramApproval::Ask,
        Some(ProgramApprovalFlag::Off) => ProgramApproval::Off,
        None => sources.policy.program_approval(),
    };
    let policy = sources.policy.clone();
    let builtins = sources.builtins().cloned();
    let session = logs.session.map(|(_, log)| log);
    let audit = logs.audit.map(|(_, log)| log as Arc<dyn EventSink>);
    let outer_session = session.clone();
    let mut builder = Harness::builder();
    if let Some(types) = types {
        // Mock tools (`--tools`) answer with samples: nothing to learn about the real tools.
        builder = builder.learn_types(types.ignoring(sources.mock_paths()));
    }
    builder
        .limits(limits)
        .program_approval(program_approval)
        .inner(move |mut pipeline| {
            pipeline = pipeline.pre_hook(policy.pre_hook());
            if let Some(builtins) = &builtins {
                pipeline = pipeline.guard(builtins.guard());
            }
            if let Some(audit) = &audit {
                pipeline = pipeline.shared_observer(Arc::clone(audit));
            }
            if let Some(log) = &session {
                pipeline = pipeline.session_log(Arc::clone(log));
            }
            pipeline
        })
        .outer(move |pipeline| match &outer_session {
            Some(log) => pipeline.session_log(Arc::clone(log)),
            None => pipeline,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_beat_the_policy_which_beats_the_defaults() {
        let policy = PolicyLimits {
            timeout_ms: Some(1000),
            heap_mb: Some(64),
            max_tool_calls: Some(5),
            ..PolicyLimits::default()
        };
        let limits = run_limits(&policy, None, None);
        assert_eq!(limits.deadline, Duration::from_millis(1000));
        assert_eq!(limits.heap_bytes, 64 * MIB);
        assert_eq!(limits.tool_calls, 5);
        let limits = run_limits(&policy, Some(2000), Some(32));
        assert_eq!(limits.deadline, Duration::from_millis(2000));
        assert_eq!(limits.heap_bytes, 32 * MIB);
        let limits = run_limits(&PolicyLimits::default(), None, None);
        assert_eq!(limits, Limits::default());
    }
}

use std::sync::OnceLock;
use std::time::Duration;

use codemode::sandbox::{Limits, RunOptions, RunOutcome, Sandbox, SandboxConfig};

/// One sandbox pool shared by every test (its workers outlive each test's tokio runtime).
pub fn sandbox() -> &'static Sandbox {
    static SANDBOX: OnceLock<Sandbox> = OnceLock::new();
    SANDBOX.get_or_init(|| {
        Sandbox::new(SandboxConfig {
            workers: 2,
            ..SandboxConfig::default()
        })
        .expect("sandbox starts")
    })
}

pub async fn run(source: &str) -> RunOutcome {
    sandbox().run(source).await
}

pub async fn run_limited(source: &str, limits: Limits) -> RunOutcome {
    sandbox().run_with(source, RunOptions::new(limits)).await
}

/// Limits with a short deadline, for tests that expect to be stopped.
pub fn short(deadline_ms: u64) -> Limits {
    Limits::default().with_deadline(Duration::from_millis(deadline_ms))
}

pub fn value(outcome: &RunOutcome) -> serde_json::Value {
    assert!(outcome.is_ok(), "run failed: {}", outcome.to_json());
    outcome.value_json().unwrap_or(serde_json::Value::Null)
}

pub fn logs(outcome: &RunOutcome) -> Vec<String> {
    outcome.logs.iter().map(|l| l.text.clone()).collect()
}

/// The `codemode` binary serves as the worker program of process-isolated sandboxes.
pub fn worker_program() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_BIN_EXE_codemode"))
}

/// One process-isolated sandbox shared by the tests that don't watch its workers.
pub fn process_sandbox() -> &'static Sandbox {
    static SANDBOX: OnceLock<Sandbox> = OnceLock::new();
    SANDBOX.get_or_init(|| {
        Sandbox::new(SandboxConfig {
            workers: 2,
            isolation: codemode::sandbox::Isolation::Process(
                codemode::sandbox::ProcessConfig::with_program(worker_program()),
            ),
            ..SandboxConfig::default()
        })
        .expect("sandbox starts")
    })
}

//! Live mode: a real model over an OpenAI-compatible Chat Completions API.

use std::time::Duration;

use super::report::{BenchReport, Mode, ScenarioReport};
use super::scenario::Scenario;
use crate::sandbox::Sandbox;

/// How to reach the model, and how long to let it go.
#[derive(Clone, Debug)]
pub struct LiveOptions {
    /// Base URL (`/chat/completions` is appended).
    pub endpoint: String,
    /// The model name.
    pub model: String,
    /// Sent as a Bearer token.
    pub api_key: Option<String>,
    /// Runs per scenario and mode.
    pub repeat: usize,
    /// Model turns before a loop is cut off.
    pub max_turns: usize,
    /// Timeout of one model request.
    pub request_timeout: Duration,
    /// The modes to run (direct, code).
    pub modes: Vec<Mode>,
}

/// Runs every scenario live.
pub async fn live_all(
    scenarios: &[Scenario],
    _sandbox: &Sandbox,
    _options: &LiveOptions,
    mut progress: impl FnMut(&ScenarioReport),
) -> BenchReport {
    let reports: Vec<ScenarioReport> = scenarios
        .iter()
        .map(|s| ScenarioReport {
            name: s.name.clone(),
            description: s.description.clone(),
            source: s.source.display().to_string(),
            error: Some("live mode is not written yet".into()),
            modes: Vec::new(),
        })
        .collect();
    reports.iter().for_each(&mut progress);
    BenchReport::new("live", "api", reports)
}

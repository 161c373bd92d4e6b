//! Live mode: a real model over an OpenAI-compatible Chat Completions API.
//!
//! Each scenario runs in each mode (`repeat` times), every run on fresh tools: direct mode
//! offers every tool as a function, code mode `run_code` alone (discovery mode, when asked for,
//! `run_code` with the discovery tools). The loop ([`run`]) sends the conversation, executes the
//! model's tool calls through the pipeline, sends their content back, and ends on a final
//! answer, at the turn cap, or on an API error that retries did not cure. The report holds the
//! API's own token counts; whatever was measured before an error is kept.

mod chat;
mod run;

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
    /// Timeout of one model request (each attempt: 429, 5xx, timeouts and lost connections
    /// are tried three times in all).
    pub request_timeout: Duration,
    /// The modes to run (direct, code; discovery too if asked).
    pub modes: Vec<Mode>,
}

/// The name the report's tokenizer field carries: the counts are the API's `usage`.
const LIVE_TOKENIZER: &str = "api usage";

/// Runs every scenario live: each scenario `repeat` times (`name #1`, `name #2`, ... when more
/// than once), each time in every mode of `options`. `progress` hears of each run as it ends.
pub async fn live_all(
    scenarios: &[Scenario],
    sandbox: &Sandbox,
    options: &LiveOptions,
    mut progress: impl FnMut(&ScenarioReport),
) -> BenchReport {
    let chat = chat::Chat::new(
        &options.endpoint,
        options.api_key.clone(),
        options.request_timeout,
    );
    let repeat = options.repeat.max(1);
    let mut reports = Vec::with_capacity(scenarios.len() * repeat);
    for scenario in scenarios {
        for i in 1..=repeat {
            let mut report = ScenarioReport {
                name: if repeat == 1 {
                    scenario.name.clone()
                } else {
                    format!("{} #{i}", scenario.name)
                },
                description: scenario.description.clone(),
                source: scenario.source.display().to_string(),
                error: None,
                modes: Vec::new(),
            };
            match &chat {
                Ok(chat) => {
                    let mut errors = Vec::new();
                    for &mode in &options.modes {
                        match run::run(scenario, mode, sandbox, chat, options).await {
                            Ok(done) => report.modes.push(done),
                            Err(e) => errors.push(format!("{} mode: {e}", mode.as_str())),
                        }
                    }
                    if !errors.is_empty() {
                        report.error = Some(errors.join("; "));
                    }
                }
                Err(e) => report.error = Some(e.clone()),
            }
            progress(&report);
            reports.push(report);
        }
    }
    let mut report = BenchReport::new("live", LIVE_TOKENIZER, reports);
    report.model = Some(options.model.clone());
    report
}

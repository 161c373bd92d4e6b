//! `codemode bench`: code mode against direct tool calls, on scenarios anyone can write.
//!
//! A [`Scenario`] is a task, its tools (fixtures, the built-ins over inline files, or MCP
//! servers), a code-mode program and the value it must return. [`replay`] runs it in each mode
//! without a model: every tool call really goes through the pipeline, and the tokens the model
//! would have read and written are counted with `o200k_base`. Live mode drives a real model
//! through an OpenAI-compatible Chat Completions API. Reports come out as data
//! ([`BenchReport`]), Markdown and an SVG chart.

mod chart;
mod latency;
mod live;
mod markdown;
mod record;
mod replay;
mod report;
mod scenario;
mod tokens;
mod tools;

pub use chart::chart_svg;
pub use latency::LatencyModel;
pub use live::{LiveOptions, live_all};
pub use markdown::markdown;
pub use record::{RecordedCall, Recorder, waves};
pub use replay::replay;
pub use report::{
    BenchReport, LiveDetails, LiveProgram, Mode, ModeReport, ModeTotals, REPORT_VERSION,
    ScenarioReport,
};
pub use scenario::{Fixture, FixtureResponse, PlannedCall, Scenario, ScenarioError, ToolEntry};
pub use tokens::{Conversation, MESSAGE_OVERHEAD, TOKENIZER, TurnTokens, count as count_tokens};

use crate::sandbox::Sandbox;

/// Replays every scenario in turn; `progress` hears of each one as it finishes.
pub async fn replay_all(
    scenarios: &[Scenario],
    sandbox: &Sandbox,
    latency: &LatencyModel,
    mut progress: impl FnMut(&ScenarioReport),
) -> BenchReport {
    let mut reports = Vec::with_capacity(scenarios.len());
    for scenario in scenarios {
        let report = replay(scenario, sandbox, latency).await;
        progress(&report);
        reports.push(report);
    }
    let mut report = BenchReport::new("replay", TOKENIZER, reports);
    report.latency_model = Some(*latency);
    report
}

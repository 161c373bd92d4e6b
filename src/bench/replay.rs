//! Replay measurement: no model, deterministic. Each mode's calls really execute through the
//! pipeline; the tokens are what the model would have read and written around them.
//!
//! - **code**: one turn writes the `run_code` call with the program; its content comes back;
//!   a second turn writes the final answer.
//! - **discovery**: the same with `program_discovery` and the discovery description.
//! - **direct**: the plan (`direct_turns`, or the waves of the program's recorded calls) runs
//!   one turn per wave; every call's content comes back; a last turn writes the final answer.

use std::time::Instant;

use serde_json::{Value, json};

use super::latency::LatencyModel;
use super::record::{RecordedCall, Recorder, waves};
use super::report::{Mode, ModeReport, ScenarioReport};
use super::scenario::{PlannedCall, Scenario};
use super::tokens::Conversation;
use super::tools::{Function, ScenarioTools, run_code_function};
use crate::call::{CallStatus, TrackWaves};
use crate::harness::run_outcome;
use crate::pipeline::CallRequest;
use crate::sandbox::Sandbox;

/// Runs `scenario` in every mode it supports, on `sandbox`.
pub async fn replay(
    scenario: &Scenario,
    sandbox: &Sandbox,
    latency: &LatencyModel,
) -> ScenarioReport {
    let mut report = ScenarioReport {
        name: scenario.name.clone(),
        description: scenario.description.clone(),
        source: scenario.source.display().to_string(),
        error: None,
        modes: Vec::new(),
    };
    let code = match code_mode(scenario, &scenario.program, Mode::Code, sandbox, latency).await {
        Ok(done) => done,
        Err(e) => {
            report.error = Some(e);
            return report;
        }
    };
    let direct = direct_mode(scenario, &code.calls, latency).await;
    match direct {
        Ok(direct) => report.modes.push(direct),
        Err(e) => {
            report.error = Some(e);
            return report;
        }
    }
    report.modes.push(code.report);
    if let Some(program) = &scenario.program_discovery {
        match code_mode(scenario, program, Mode::Discovery, sandbox, latency).await {
            Ok(done) => report.modes.push(done.report),
            Err(e) => report.error = Some(format!("discovery mode: {e}")),
        }
    }
    report
}

struct CodeRun {
    report: ModeReport,
    calls: Vec<RecordedCall>,
}

async fn code_mode(
    scenario: &Scenario,
    program: &str,
    mode: Mode,
    sandbox: &Sandbox,
    latency: &LatencyModel,
) -> Result<CodeRun, String> {
    let tools = ScenarioTools::start(scenario).await?;
    let recorder = Recorder::default();
    let observed = recorder.clone();
    let harness = tools.harness(sandbox, mode, move |pipeline| {
        pipeline.observer(observed.clone())
    })?;
    let definitions = json!([run_code_function(&harness)]);
    let mut conversation = Conversation::new(&definitions.to_string(), &scenario.task);

    // Waves date each call for the direct plan.
    let call = harness
        .call(harness.request(program).extension(TrackWaves))
        .await;
    let content = call.content.clone();
    let tool_ms = call.timing.duration.as_secs_f64() * 1000.0;
    let mut problems = Vec::new();
    let (tool_calls, kept) = match run_outcome(call) {
        Ok(run) => {
            if !run.is_ok() {
                problems.push(format!(
                    "the program did not end ok: {}",
                    content.lines().next().unwrap_or_default()
                ));
            } else if run.value_json().as_ref() != Some(&scenario.expected) {
                problems.push(format!(
                    "the program returned {}, not the expected value",
                    clip(&run.value_json().unwrap_or(Value::Null).to_string())
                ));
            }
            (run.stats.tool_calls, run.stats.bytes_kept_in_sandbox)
        }
        Err(e) => {
            problems.push(format!("run_code failed: {e}"));
            (0, 0)
        }
    };
    let calls = recorder.calls();
    let written = json!({"name": harness.run_code().name(), "arguments": {"code": program}});
    conversation.turn(&written.to_string(), [content.as_str()]);
    conversation.turn(&scenario.answer, []);
    let report = ModeReport {
        mode,
        correct: problems.is_empty(),
        problems,
        turns: conversation.turns().len() as u64,
        tool_calls,
        input_tokens: conversation.cumulative_input(),
        peak_context_tokens: conversation.peak_context(),
        output_tokens: conversation.output(),
        definition_tokens: super::tokens::count(&definitions.to_string()),
        bytes_to_model: content.len() as u64,
        bytes_kept_in_sandbox: kept,
        tool_ms,
        model_ms: latency.model_ms(conversation.turns()),
        turn_tokens: conversation.turns().to_vec(),
        live: None,
    };
    Ok(CodeRun { report, calls })
}

/// One call of a direct-mode turn, with what the program received for it (derived plans only).
struct Step<'a> {
    call: PlannedCall,
    path: String,
    received: Option<&'a Result<Value, String>>,
}

async fn direct_mode(
    scenario: &Scenario,
    recorded: &[RecordedCall],
    latency: &LatencyModel,
) -> Result<ModeReport, String> {
    let tools = ScenarioTools::start(scenario).await?;
    let functions = tools.functions();
    let plan = plan(scenario, recorded, &functions)?;
    let pipeline = tools.direct_pipeline();
    let definitions =
        serde_json::to_string(&functions.iter().map(|f| &f.definition).collect::<Vec<_>>())
            .unwrap_or_default();
    let mut conversation = Conversation::new(&definitions, &scenario.task);
    let mut problems = Vec::new();
    let (mut tool_ms, mut bytes, mut calls) = (0.0, 0u64, 0u64);
    for turn in &plan {
        let written: Vec<Value> = turn
            .iter()
            .map(|s| json!({"name": s.call.tool, "arguments": s.call.args}))
            .collect();
        let started = Instant::now();
        let outcomes = futures::future::join_all(
            turn.iter()
                .map(|s| pipeline.call(CallRequest::new(&s.path, s.call.args.clone()))),
        )
        .await;
        tool_ms += started.elapsed().as_secs_f64() * 1000.0;
        for (step, outcome) in turn.iter().zip(&outcomes) {
            calls += 1;
            bytes += outcome.content.len() as u64;
            let got: Result<Value, String> = match (&outcome.status, &outcome.value) {
                (CallStatus::Ok, Some(v)) => Ok(Value::clone(v)),
                _ => Err(outcome.content.clone()),
            };
            match step.received {
                Some(received) if received != &got => problems.push(format!(
                    "`{}` returned {} directly, but the program received {}",
                    step.call.tool,
                    clip(&describe(&got)),
                    clip(&describe(received))
                )),
                None if got.is_err() => problems.push(format!(
                    "`{}` failed: {}",
                    step.call.tool,
                    clip(&describe(&got))
                )),
                _ => {}
            }
        }
        conversation.turn(
            &Value::Array(written).to_string(),
            outcomes.iter().map(|o| o.content.as_str()),
        );
    }
    conversation.turn(&scenario.answer, []);
    Ok(ModeReport {
        mode: Mode::Direct,
        correct: problems.is_empty(),
        problems,
        turns: conversation.turns().len() as u64,
        tool_calls: calls,
        input_tokens: conversation.cumulative_input(),
        peak_context_tokens: conversation.peak_context(),
        output_tokens: conversation.output(),
        definition_tokens: super::tokens::count(&definitions),
        bytes_to_model: bytes,
        bytes_kept_in_sandbox: 0,
        tool_ms,
        model_ms: latency.model_ms(conversation.turns()),
        turn_tokens: conversation.turns().to_vec(),
        live: None,
    })
}

/// The direct-mode turns: the scenario's own plan, or the recorded calls by wave. A planned
/// call names a tool by its function name, its scenario name or its sandbox path.
fn plan<'a>(
    scenario: &Scenario,
    recorded: &'a [RecordedCall],
    functions: &[Function],
) -> Result<Vec<Vec<Step<'a>>>, String> {
    if let Some(turns) = &scenario.direct_turns {
        return turns
            .iter()
            .enumerate()
            .map(|(t, turn)| {
                turn.iter()
                    .map(|call| {
                        let function = functions
                            .iter()
                            .find(|f| f.name == call.tool || f.path == call.tool)
                            .ok_or_else(|| {
                                format!(
                                    "direct_turns[{t}]: no tool `{}` in the scenario",
                                    call.tool
                                )
                            })?;
                        Ok(Step {
                            call: PlannedCall {
                                tool: function.name.clone(),
                                args: call.args.clone(),
                            },
                            path: function.path.clone(),
                            received: recorded
                                .iter()
                                .find(|r| r.tool == function.path && r.args == call.args)
                                .map(|r| &r.result),
                        })
                    })
                    .collect()
            })
            .collect();
    }
    Ok(waves(recorded)
        .into_iter()
        .map(|wave| {
            wave.into_iter()
                .map(|r| {
                    let name = functions
                        .iter()
                        .find(|f| f.path == r.tool)
                        .map_or_else(|| r.tool.clone(), |f| f.name.clone());
                    Step {
                        call: PlannedCall {
                            tool: name,
                            args: r.args.clone(),
                        },
                        path: r.tool.clone(),
                        received: Some(&r.result),
                    }
                })
                .collect()
        })
        .collect())
}

fn describe(result: &Result<Value, String>) -> String {
    match result {
        Ok(v) => v.to_string(),
        Err(e) => format!("an error ({e})"),
    }
}

/// At most 200 characters of `text`, for problem lines.
fn clip(text: &str) -> String {
    match text.char_indices().nth(200) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text.to_string(),
    }
}

//! The loop of one live run: one scenario, one mode, fresh tools.

use std::time::Instant;

use serde_json::{Value, json};

use super::LiveOptions;
use super::chat::{Chat, Reply, ToolCall};
use crate::bench::report::{LiveDetails, LiveProgram, Mode, ModeReport};
use crate::bench::scenario::Scenario;
use crate::bench::tokens::{self, TurnTokens};
use crate::bench::tools::{Function, ScenarioTools, run_code_function};
use crate::harness::{Harness, run_outcome};
use crate::pipeline::{CallRequest, Pipeline};
use crate::sandbox::Sandbox;

/// The system message of every run.
pub(crate) const SYSTEM: &str =
    "You are an agent. Use the tools to complete the task, then answer in plain text.";

/// Names listed when the model calls a tool that does not exist.
const NAMES_LISTED: usize = 20;

/// How the model's tool calls are executed in one mode.
enum Executor {
    /// Every tool, through the direct pipeline.
    Direct {
        pipeline: Pipeline,
        functions: Vec<Function>,
    },
    /// `run_code` alone, through the harness.
    Code { harness: Harness },
}

/// What one tool call did.
#[derive(Default)]
struct Executed {
    /// The tool message's content.
    content: String,
    /// Calls that went through the pipeline (nested ones for `run_code`).
    tool_calls: u64,
    /// Bytes of tool values the program kept (code mode).
    kept: u64,
    /// The program, for a `run_code` call.
    program: Option<LiveProgram>,
}

impl Executor {
    fn new(mode: Mode, tools: &ScenarioTools, sandbox: &Sandbox) -> Result<Executor, String> {
        if mode == Mode::Direct {
            return Ok(Executor::Direct {
                pipeline: tools.direct_pipeline(),
                functions: tools.functions(),
            });
        }
        let harness = tools.harness(sandbox, mode, |pipeline| pipeline)?;
        Ok(Executor::Code { harness })
    }

    /// The `tools` of the request.
    fn definitions(&self) -> Value {
        match self {
            Executor::Direct { functions, .. } => {
                Value::Array(functions.iter().map(|f| f.definition.clone()).collect())
            }
            Executor::Code { harness } => json!([run_code_function(harness)]),
        }
    }

    fn names(&self) -> Vec<&str> {
        match self {
            Executor::Direct { functions, .. } => {
                functions.iter().map(|f| f.name.as_str()).collect()
            }
            Executor::Code { harness } => vec![harness.run_code().name()],
        }
    }

    async fn call(&self, call: &ToolCall) -> Executed {
        let args = match arguments(&call.arguments) {
            Ok(args) => args,
            Err(e) => {
                return Executed {
                    content: format!(
                        "error: the arguments of `{}` are not valid JSON ({e}); send one JSON object",
                        call.name
                    ),
                    ..Executed::default()
                };
            }
        };
        match self {
            Executor::Direct {
                pipeline,
                functions,
            } => {
                let Some(function) = functions.iter().find(|f| f.name == call.name) else {
                    return self.unknown(&call.name);
                };
                let outcome = pipeline.call(CallRequest::new(&function.path, args)).await;
                Executed {
                    content: outcome.content,
                    tool_calls: 1,
                    ..Executed::default()
                }
            }
            Executor::Code { harness } => {
                if call.name != harness.run_code().name() {
                    return self.unknown(&call.name);
                }
                let Some(code) = args.get("code").and_then(Value::as_str) else {
                    return Executed {
                        content: format!(
                            "error: `{}` takes {{\"code\": \"<the TypeScript program>\"}}; the arguments were {}",
                            call.name,
                            clip(&args.to_string())
                        ),
                        ..Executed::default()
                    };
                };
                let outcome = harness.call(harness.request(code)).await;
                let content = outcome.content.clone();
                let (program, tool_calls, kept) = match run_outcome(outcome) {
                    Ok(run) => (
                        LiveProgram {
                            code: code.to_string(),
                            status: run.status.as_str().to_string(),
                            error: run.error.as_ref().map(|e| match e.line {
                                Some(line) => format!("{}: {} (line {line})", e.name, e.message),
                                None => format!("{}: {}", e.name, e.message),
                            }),
                        },
                        run.stats.tool_calls,
                        run.stats.bytes_kept_in_sandbox,
                    ),
                    Err(e) => (
                        LiveProgram {
                            code: code.to_string(),
                            status: "error".to_string(),
                            error: Some(e.to_string()),
                        },
                        0,
                        0,
                    ),
                };
                Executed {
                    content,
                    tool_calls,
                    kept,
                    program: Some(program),
                }
            }
        }
    }

    fn unknown(&self, name: &str) -> Executed {
        let names = self.names();
        let mut listed = names
            .iter()
            .take(NAMES_LISTED)
            .copied()
            .collect::<Vec<_>>()
            .join(", ");
        if names.len() > NAMES_LISTED {
            listed.push_str(&format!(", and {} more", names.len() - NAMES_LISTED));
        }
        Executed {
            content: format!("error: there is no tool named `{name}`; the tools are: {listed}"),
            ..Executed::default()
        }
    }
}

/// The arguments the model wrote: a JSON text (empty means no arguments).
fn arguments(text: &str) -> Result<Value, serde_json::Error> {
    if text.trim().is_empty() {
        return Ok(json!({}));
    }
    serde_json::from_str(text)
}

/// The assistant message that goes back into the conversation.
fn assistant_message(reply: &Reply) -> Value {
    let mut message = json!({"role": "assistant", "content": reply.content});
    if !reply.tool_calls.is_empty() {
        message["tool_calls"] = reply
            .tool_calls
            .iter()
            .map(|c| {
                json!({"id": c.id, "type": "function",
                       "function": {"name": c.name, "arguments": c.arguments}})
            })
            .collect();
    }
    message
}

/// Runs `scenario` live in `mode`: until the model answers without calling a tool, the turn
/// cap, or an API error.
///
/// The counts: `turns` are the requests that got a reply; `input_tokens` / `output_tokens` sum
/// the API's `usage` (a server that reports none counts 0, and `problems` says so: nothing is
/// estimated); `model_ms` sums the time of the attempts that answered (retries and their waits
/// are in `wall_ms` only); `tool_ms` sums each turn's tool execution wall time.
///
/// # Errors
/// The scenario's tools did not start, or the harness could not be built.
pub(crate) async fn run(
    scenario: &Scenario,
    mode: Mode,
    sandbox: &Sandbox,
    chat: &Chat,
    options: &LiveOptions,
) -> Result<ModeReport, String> {
    let tools = ScenarioTools::start(scenario).await?;
    let executor = Executor::new(mode, &tools, sandbox)?;
    let wall = Instant::now();
    let definitions = executor.definitions();
    let mut report = ModeReport {
        mode,
        correct: false,
        problems: Vec::new(),
        turns: 0,
        tool_calls: 0,
        input_tokens: 0,
        peak_context_tokens: 0,
        output_tokens: 0,
        definition_tokens: tokens::count(&definitions.to_string()),
        bytes_to_model: 0,
        bytes_kept_in_sandbox: 0,
        tool_ms: 0.0,
        model_ms: 0.0,
        turn_tokens: Vec::new(),
        live: None,
    };
    let mut live = LiveDetails::default();
    let mut messages = vec![
        json!({"role": "system", "content": SYSTEM}),
        json!({"role": "user", "content": scenario.task}),
    ];
    let mut without_usage = 0u64;
    loop {
        if report.turns as usize >= options.max_turns {
            live.ended = "turn_cap".to_string();
            break;
        }
        let mut body = json!({
            "model": options.model,
            "messages": messages,
            "tools": definitions,
            "tool_choice": "auto",
        });
        if mode == Mode::Direct {
            body["parallel_tool_calls"] = Value::Bool(true);
        }
        let reply = match chat.complete(&body).await {
            Ok(reply) => reply,
            Err(e) => {
                live.ended = format!("error: {e}");
                break;
            }
        };
        report.turns += 1;
        report.model_ms += reply.elapsed.as_secs_f64() * 1000.0;
        let usage = reply.usage.unwrap_or_else(|| {
            without_usage += 1;
            Default::default()
        });
        report.input_tokens += usage.prompt_tokens;
        report.output_tokens += usage.completion_tokens;
        report.peak_context_tokens = report.peak_context_tokens.max(usage.prompt_tokens);
        report.turn_tokens.push(TurnTokens {
            input: usage.prompt_tokens,
            output: usage.completion_tokens,
        });
        if reply.finish_reason.as_deref() == Some("length") {
            report.problems.push(format!(
                "turn {}: the reply was cut at the model's output limit (finish_reason `length`)",
                report.turns
            ));
        }
        if reply.tool_calls.is_empty() {
            live.answer = Some(reply.content.unwrap_or_default());
            live.ended = "answer".to_string();
            break;
        }
        messages.push(assistant_message(&reply));
        let started = Instant::now();
        let results =
            futures::future::join_all(reply.tool_calls.iter().map(|c| executor.call(c))).await;
        report.tool_ms += started.elapsed().as_secs_f64() * 1000.0;
        for (call, done) in reply.tool_calls.iter().zip(results) {
            report.tool_calls += done.tool_calls;
            report.bytes_to_model += done.content.len() as u64;
            report.bytes_kept_in_sandbox += done.kept;
            live.programs.extend(done.program);
            messages
                .push(json!({"role": "tool", "tool_call_id": call.id, "content": done.content}));
        }
    }
    live.wall_ms = wall.elapsed().as_secs_f64() * 1000.0;
    if without_usage > 0 {
        report.problems.push(format!(
            "the API reported no token usage on {without_usage} of {} turn(s); those count 0 tokens",
            report.turns
        ));
    }
    match &live.answer {
        Some(answer) => {
            let missing: Vec<String> = scenario
                .answer_contains
                .iter()
                .filter(|s| !answer.contains(s.as_str()))
                .map(|s| format!("{s:?}"))
                .collect();
            if missing.is_empty() {
                report.correct = true;
            } else {
                report.problems.insert(
                    0,
                    format!(
                        "the answer does not contain {}: {}",
                        missing.join(", "),
                        clip(answer)
                    ),
                );
            }
        }
        None if live.ended == "turn_cap" => report.problems.insert(
            0,
            format!(
                "no answer: the model was still calling tools after {} turns (--max-turns)",
                report.turns
            ),
        ),
        None => report
            .problems
            .insert(0, format!("no answer: {}", live.ended)),
    }
    report.live = Some(live);
    drop(executor);
    drop(tools);
    Ok(report)
}

/// At most 200 characters of `text`, for problem lines.
fn clip(text: &str) -> String {
    match text.char_indices().nth(200) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text.to_string(),
    }
}

//! The results of a bench, as data: `report.json` is this, serialized (its schema is stable and
//! versioned by [`REPORT_VERSION`]; README "report.json" documents it).

use serde::{Deserialize, Serialize};

use super::latency::LatencyModel;
use super::tokens::TurnTokens;

/// The version of the `report.json` schema. Bumped on any change a reader could notice.
pub const REPORT_VERSION: u32 = 1;

/// How a scenario was solved.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Every tool exposed to the model; one model turn per wave of calls.
    Direct,
    /// `run_code` with the whole SDK in its description.
    Code,
    /// `run_code` with `catalog.search` / `catalog.describe` instead of the SDK.
    Discovery,
}

impl Mode {
    /// `direct`, `code` or `discovery`.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Direct => "direct",
            Mode::Code => "code",
            Mode::Discovery => "discovery",
        }
    }
}

/// The whole bench.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BenchReport {
    /// [`REPORT_VERSION`].
    pub version: u32,
    /// `replay` or `live`.
    pub kind: String,
    /// The tokenizer of the replayed counts (`o200k_base`); live counts are the API's own.
    pub tokenizer: String,
    /// The latency model of `model_ms` (replay only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_model: Option<LatencyModel>,
    /// The model asked (live only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// One entry per scenario, in the order they ran.
    pub scenarios: Vec<ScenarioReport>,
    /// Sums per mode over the scenarios that ran in it.
    pub totals: Vec<ModeTotals>,
}

/// One scenario.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScenarioReport {
    /// Its name.
    pub name: String,
    /// What it measures.
    pub description: String,
    /// The file it came from.
    pub source: String,
    /// Why it could not run at all (its tools did not start, ...); the modes are then empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// One entry per mode it ran in (direct, code, then discovery when it has a program for it).
    pub modes: Vec<ModeReport>,
}

impl ScenarioReport {
    /// The entry of `mode`, if the scenario ran in it.
    pub fn mode(&self, mode: Mode) -> Option<&ModeReport> {
        self.modes.iter().find(|m| m.mode == mode)
    }
}

/// One scenario in one mode.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModeReport {
    /// The mode.
    pub mode: Mode,
    /// Whether the solution was correct (replay: the value equals `expected`, and in direct mode
    /// every call returned what the program received; live: the answer contains every
    /// `answer_contains` string).
    pub correct: bool,
    /// What was wrong, when not correct (and anything worth a look when it was).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
    /// Model turns (each a request to the model).
    pub turns: u64,
    /// Tool calls executed through the pipeline (nested ones in code mode).
    pub tool_calls: u64,
    /// Input tokens summed over every turn (each turn resends the context).
    pub input_tokens: u64,
    /// The largest context one turn read.
    pub peak_context_tokens: u64,
    /// Tokens the model wrote.
    pub output_tokens: u64,
    /// Tokens of the tool definitions the model is given (part of every turn's input).
    pub definition_tokens: u64,
    /// Bytes of tool output the model read (direct: every call's content; code: the run's).
    pub bytes_to_model: u64,
    /// Bytes of tool values that stayed in the sandbox (code modes only).
    pub bytes_kept_in_sandbox: u64,
    /// Tool execution time, measured (direct: the waves' wall time; code: the runs' wall time).
    pub tool_ms: f64,
    /// Model time: modelled from the tokens in replay, measured per request in live mode.
    pub model_ms: f64,
    /// Input and output tokens of each turn.
    pub turn_tokens: Vec<TurnTokens>,
    /// Live mode: what happened, turn by turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live: Option<LiveDetails>,
}

/// What a live run of one scenario in one mode did.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LiveDetails {
    /// The model's final answer (`None` when it gave none before the turn cap or an error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// Why the loop ended: `answer`, `turn_cap`, or the error that stopped it.
    pub ended: String,
    /// Every program the model wrote (code mode), in order, with how its run ended.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub programs: Vec<LiveProgram>,
    /// Wall time of the whole loop, model and tools (milliseconds).
    pub wall_ms: f64,
}

/// A program a live model wrote.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LiveProgram {
    /// The code.
    pub code: String,
    /// The run's status (`ok`, `error`, `timeout`, ...).
    pub status: String,
    /// The error, when the run did not end `ok`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Sums over the scenarios that ran in one mode.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModeTotals {
    /// The mode.
    pub mode: Mode,
    /// Scenarios that ran in it.
    pub scenarios: u64,
    /// Of which correct.
    pub correct: u64,
    /// Sum of turns.
    pub turns: u64,
    /// Sum of tool calls.
    pub tool_calls: u64,
    /// Sum of cumulative input tokens.
    pub input_tokens: u64,
    /// Sum of output tokens.
    pub output_tokens: u64,
    /// Sum of measured tool time.
    pub tool_ms: f64,
    /// Sum of model time.
    pub model_ms: f64,
}

impl BenchReport {
    /// A report over `scenarios`, with the totals computed.
    pub fn new(kind: &str, tokenizer: &str, scenarios: Vec<ScenarioReport>) -> BenchReport {
        let mut totals: Vec<ModeTotals> = Vec::new();
        for mode in [Mode::Direct, Mode::Code, Mode::Discovery] {
            let runs: Vec<&ModeReport> = scenarios.iter().filter_map(|s| s.mode(mode)).collect();
            if runs.is_empty() {
                continue;
            }
            totals.push(ModeTotals {
                mode,
                scenarios: runs.len() as u64,
                correct: runs.iter().filter(|r| r.correct).count() as u64,
                turns: runs.iter().map(|r| r.turns).sum(),
                tool_calls: runs.iter().map(|r| r.tool_calls).sum(),
                input_tokens: runs.iter().map(|r| r.input_tokens).sum(),
                output_tokens: runs.iter().map(|r| r.output_tokens).sum(),
                tool_ms: runs.iter().map(|r| r.tool_ms).sum(),
                model_ms: runs.iter().map(|r| r.model_ms).sum(),
            });
        }
        BenchReport {
            version: REPORT_VERSION,
            kind: kind.to_string(),
            tokenizer: tokenizer.to_string(),
            latency_model: None,
            model: None,
            scenarios,
            totals,
        }
    }

    /// The totals of `mode`.
    pub fn totals(&self, mode: Mode) -> Option<&ModeTotals> {
        self.totals.iter().find(|t| t.mode == mode)
    }

    /// How much less cumulative input code mode read than direct, over the scenarios that ran
    /// in both (0.68 = 68% fewer tokens; negative when code mode read more).
    pub fn code_input_saving(&self) -> Option<f64> {
        let (mut direct, mut code) = (0u64, 0u64);
        for s in &self.scenarios {
            if let (Some(d), Some(c)) = (s.mode(Mode::Direct), s.mode(Mode::Code)) {
                direct += d.input_tokens;
                code += c.input_tokens;
            }
        }
        (direct > 0).then(|| 1.0 - code as f64 / direct as f64)
    }

    /// Whether every scenario ran, and correctly, in every mode it ran in.
    pub fn all_correct(&self) -> bool {
        self.scenarios
            .iter()
            .all(|s| s.error.is_none() && s.modes.iter().all(|m| m.correct))
    }

    /// The JSON, pretty-printed.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}

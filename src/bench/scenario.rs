//! Scenario files: one JSON document per scenario (README "codemode bench" has a complete
//! example). Loading checks everything that can be checked without running: unknown fields,
//! tool entries, names, texts, and that the answer holds what `answer_contains` asks for.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

/// One scenario: a task, the tools it may use, the code-mode solution and the expected value.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// Short name (the report's row).
    pub name: String,
    /// One line on what the scenario measures.
    pub description: String,
    /// The prompt text the model gets.
    pub task: String,
    /// Where the tools come from and how they answer.
    pub tools: Vec<ToolEntry>,
    /// The code-mode solution (the whole SDK in the `run_code` description).
    pub program: String,
    /// The solution for discovery mode (`catalog.search` / `catalog.describe`), when given.
    pub program_discovery: Option<String>,
    /// The value the program must return.
    pub expected: Value,
    /// The model's final answer (the JSON of `expected` when the file has none).
    pub answer: String,
    /// Strings a correct final answer contains (checked on live answers; the replayed answer
    /// must contain them too, or the file is rejected).
    pub answer_contains: Vec<String>,
    /// The direct-mode plan, when the file gives one: turns of parallel calls.
    pub direct_turns: Option<Vec<Vec<PlannedCall>>>,
    /// The file it was read from.
    pub source: PathBuf,
}

/// One call of a direct-mode turn.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlannedCall {
    /// The tool's name as the model calls it (its name in the scenario; `ns.name` for an
    /// upstream's tool).
    pub tool: String,
    /// The arguments.
    #[serde(default = "empty_object")]
    pub args: Value,
}

fn empty_object() -> Value {
    Value::Object(Default::default())
}

/// Where some of a scenario's tools come from.
#[derive(Clone, Debug)]
pub enum ToolEntry {
    /// One tool answered from recorded responses.
    Fixture {
        /// The MCP-style declaration (`name`, `description`, `inputSchema`, `outputSchema`).
        declaration: Value,
        /// How it answers.
        fixture: Fixture,
    },
    /// The built-in tools over a directory holding `files` (made afresh for every mode).
    Builtins {
        /// Relative path → content.
        files: Vec<(String, String)>,
    },
    /// An MCP server's tools, as `tools.NS.*`.
    Upstream {
        /// The namespace (an identifier).
        namespace: String,
        /// The program and its arguments.
        command: Vec<String>,
        /// Extra environment variables.
        env: Vec<(String, String)>,
    },
}

/// Recorded answers of a fixture tool.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fixture {
    /// Matched in order by JSON equality of the arguments (key order aside).
    #[serde(default)]
    pub responses: Vec<FixtureResponse>,
    /// The answer when no response matches; without one such a call is a `TOOL_ERROR`.
    #[serde(default)]
    pub default: Option<Value>,
}

/// One recorded answer.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FixtureResponse {
    /// The arguments it answers.
    pub args: Value,
    /// The value returned.
    #[serde(default)]
    pub result: Option<Value>,
    /// Or the message of a tool failure.
    #[serde(default)]
    pub error: Option<String>,
}

/// A file that is not a valid scenario. The message names the file and the field.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {message}")]
pub struct ScenarioError {
    /// The file.
    pub path: String,
    /// What is wrong, and where in the file.
    pub message: String,
}

/// A string, or lines joined with `\n` (programs read better as arrays of lines in JSON).
#[derive(Deserialize)]
#[serde(untagged)]
enum Text {
    One(String),
    Lines(Vec<String>),
}

impl Text {
    fn joined(self) -> String {
        match self {
            Text::One(s) => s,
            Text::Lines(lines) => lines.join("\n"),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    name: String,
    #[serde(default)]
    description: String,
    task: Text,
    tools: Vec<Value>,
    program: Text,
    #[serde(default)]
    program_discovery: Option<Text>,
    expected: Value,
    #[serde(default)]
    answer: Option<Text>,
    #[serde(default)]
    answer_contains: Vec<String>,
    #[serde(default)]
    direct_turns: Option<Vec<Vec<PlannedCall>>>,
}

impl Scenario {
    /// Reads and checks one scenario file.
    ///
    /// # Errors
    /// The file cannot be read or is not a valid scenario; the message says where.
    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        let fail = |message: String| ScenarioError {
            path: path.display().to_string(),
            message,
        };
        let text = std::fs::read_to_string(path).map_err(|e| fail(format!("cannot read: {e}")))?;
        Scenario::parse(&text, path).map_err(fail)
    }

    /// Parses a scenario from `text`; `source` is only recorded.
    ///
    /// # Errors
    /// What is wrong, and where in the document.
    pub fn parse(text: &str, source: &Path) -> Result<Scenario, String> {
        let raw: RawScenario = serde_json::from_str(text).map_err(|e| {
            format!(
                "not a valid scenario (line {}, column {}): {e}",
                e.line(),
                e.column()
            )
        })?;
        if raw.name.trim().is_empty() {
            return Err("`name` is empty".into());
        }
        let tools = raw
            .tools
            .iter()
            .enumerate()
            .map(|(i, entry)| tool_entry(entry).map_err(|e| format!("tools[{i}]: {e}")))
            .collect::<Result<Vec<_>, _>>()?;
        if tools.is_empty() {
            return Err("`tools` is empty: a scenario needs at least one tool".into());
        }
        if tools
            .iter()
            .filter(|t| matches!(t, ToolEntry::Builtins { .. }))
            .count()
            > 1
        {
            return Err(
                "more than one `builtins` entry in `tools` (one directory per scenario)".into(),
            );
        }
        let answer = match raw.answer {
            Some(text) => text.joined(),
            None => serde_json::to_string(&raw.expected).unwrap_or_default(),
        };
        for needle in &raw.answer_contains {
            if !answer.contains(needle.as_str()) {
                return Err(format!(
                    "`answer_contains` has {needle:?}, which the answer does not contain (the answer is `answer`, or the JSON of `expected`)"
                ));
            }
        }
        if let Some(turns) = &raw.direct_turns
            && let Some(i) = turns.iter().position(Vec::is_empty)
        {
            return Err(format!(
                "direct_turns[{i}] is empty: a turn makes at least one call"
            ));
        }
        let program = raw.program.joined();
        if program.trim().is_empty() {
            return Err("`program` is empty".into());
        }
        Ok(Scenario {
            name: raw.name,
            description: raw.description,
            task: raw.task.joined(),
            tools,
            program,
            program_discovery: raw.program_discovery.map(Text::joined),
            expected: raw.expected,
            answer,
            answer_contains: raw.answer_contains,
            direct_turns: raw.direct_turns,
            source: source.to_path_buf(),
        })
    }

    /// Every `*.json` file of `dir`, by file name, loaded; or `path` itself when it is a file.
    ///
    /// # Errors
    /// The first file that is not a valid scenario, or a directory without any; two scenarios
    /// with one name.
    pub fn load_all(path: &Path) -> Result<Vec<Scenario>, ScenarioError> {
        let fail = |message: String| ScenarioError {
            path: path.display().to_string(),
            message,
        };
        let mut files = Vec::new();
        if path.is_dir() {
            let entries = std::fs::read_dir(path).map_err(|e| fail(format!("cannot read: {e}")))?;
            for entry in entries {
                let file = entry.map_err(|e| fail(format!("cannot read: {e}")))?.path();
                if file.extension().is_some_and(|e| e == "json") {
                    files.push(file);
                }
            }
            files.sort();
            if files.is_empty() {
                return Err(fail("no scenario files (*.json) in this directory".into()));
            }
        } else {
            files.push(path.to_path_buf());
        }
        let scenarios = files
            .iter()
            .map(|f| Scenario::load(f))
            .collect::<Result<Vec<_>, _>>()?;
        for (i, s) in scenarios.iter().enumerate() {
            if let Some(other) = scenarios[..i].iter().find(|o| o.name == s.name) {
                return Err(ScenarioError {
                    path: s.source.display().to_string(),
                    message: format!(
                        "the name `{}` is already used by {}",
                        s.name,
                        other.source.display()
                    ),
                });
            }
        }
        Ok(scenarios)
    }
}

fn tool_entry(entry: &Value) -> Result<ToolEntry, String> {
    let Some(object) = entry.as_object() else {
        return Err(
            "expected an object (a tool, `{\"builtins\": ...}` or `{\"upstream\": ...}`)".into(),
        );
    };
    if let Some(builtins) = object.get("builtins") {
        if object.len() > 1 {
            return Err("a `builtins` entry has no other keys".into());
        }
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Builtins {
            files: serde_json::Map<String, Value>,
        }
        let b: Builtins =
            serde_json::from_value(builtins.clone()).map_err(|e| format!("builtins: {e}"))?;
        let files = b
            .files
            .into_iter()
            .map(|(path, content)| match content {
                Value::String(text) => check_relative(&path).map(|()| (path, text)),
                _ => Err(format!(
                    "builtins.files[{path:?}]: the content must be a string"
                )),
            })
            .collect::<Result<Vec<_>, _>>()?;
        return Ok(ToolEntry::Builtins { files });
    }
    if let Some(upstream) = object.get("upstream") {
        if object.len() > 1 {
            return Err("an `upstream` entry has no other keys".into());
        }
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Upstream {
            namespace: String,
            command: String,
            #[serde(default)]
            args: Vec<String>,
            #[serde(default)]
            env: std::collections::BTreeMap<String, String>,
        }
        let u: Upstream =
            serde_json::from_value(upstream.clone()).map_err(|e| format!("upstream: {e}"))?;
        if !crate::sdk::is_identifier(&u.namespace) {
            return Err(format!(
                "upstream.namespace `{}` is not an identifier",
                u.namespace
            ));
        }
        let mut command = vec![u.command];
        command.extend(u.args);
        return Ok(ToolEntry::Upstream {
            namespace: u.namespace,
            command,
            env: u.env.into_iter().collect(),
        });
    }
    let mut declaration = object.clone();
    let fixture = match declaration.remove("fixture") {
        Some(f) => serde_json::from_value::<Fixture>(f).map_err(|e| format!("fixture: {e}"))?,
        None => Fixture::default(),
    };
    let name = declaration
        .get("name")
        .and_then(Value::as_str)
        .ok_or("a tool needs a string `name`")?;
    if name.is_empty()
        || name.len() > 64
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(format!(
            "tool name `{name}` is not a valid function name for a chat API (1-64 of A-Z a-z 0-9 _ -)"
        ));
    }
    for (i, r) in fixture.responses.iter().enumerate() {
        if r.result.is_some() == r.error.is_some() {
            return Err(format!(
                "tool `{name}`: fixture.responses[{i}] needs exactly one of `result` and `error`"
            ));
        }
    }
    Ok(ToolEntry::Fixture {
        declaration: Value::Object(declaration),
        fixture,
    })
}

fn check_relative(path: &str) -> Result<(), String> {
    let p = Path::new(path);
    if path.is_empty()
        || p.is_absolute()
        || p.components()
            .any(|c| !matches!(c, std::path::Component::Normal(_)))
    {
        return Err(format!(
            "builtins.files: {path:?} must be a relative path without `.` or `..`"
        ));
    }
    Ok(())
}

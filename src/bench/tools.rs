//! A scenario's tools, made real: fixture tools answering from their recorded responses, the
//! built-ins over a fresh temporary directory holding the scenario's files, and upstream MCP
//! servers. Every mode gets its own set, so one mode's writes never reach another's.

use std::sync::Arc;

use serde_json::{Value, json};

use super::report::Mode;
use super::scenario::{Fixture, Scenario, ToolEntry};
use crate::builtins::BuiltinTools;
use crate::harness::{Discovery, Harness};
use crate::mcp::{DEFAULT_STARTUP_TIMEOUT, Upstream, UpstreamSpec};
use crate::pipeline::{Pipeline, PipelineBuilder};
use crate::sandbox::Sandbox;
use crate::schema::import_tools;
use crate::tool::{ToolDefinition, ToolInfo, ToolRegistry};
use crate::{ToolFailure, harness::visible_tools};

/// The live tools of one scenario in one mode. Dropping it removes the directory and stops the
/// upstream servers.
pub(crate) struct ScenarioTools {
    pub(crate) registry: ToolRegistry,
    builtins: Option<BuiltinTools>,
    _dir: Option<tempfile::TempDir>,
    upstreams: Vec<Upstream>,
}

impl Drop for ScenarioTools {
    fn drop(&mut self) {
        for upstream in &self.upstreams {
            upstream.kill();
        }
    }
}

impl ScenarioTools {
    /// Makes the tools of `scenario`. Must run inside the Tokio runtime that will serve the
    /// calls (it owns the upstream connections).
    pub(crate) async fn start(scenario: &Scenario) -> Result<ScenarioTools, String> {
        let mut tools = ScenarioTools {
            registry: ToolRegistry::new(),
            builtins: None,
            _dir: None,
            upstreams: Vec::new(),
        };
        for entry in &scenario.tools {
            match entry {
                ToolEntry::Fixture {
                    declaration,
                    fixture,
                } => {
                    let tool = fixture_tool(declaration, fixture)?;
                    tools.registry.register(tool).map_err(|e| e.to_string())?;
                }
                ToolEntry::Builtins { files } => {
                    let dir = tempfile::tempdir()
                        .map_err(|e| format!("cannot make the fixture directory: {e}"))?;
                    for (path, content) in files {
                        let file = dir.path().join(path);
                        if let Some(parent) = file.parent() {
                            std::fs::create_dir_all(parent)
                                .map_err(|e| format!("builtins.files {path}: {e}"))?;
                        }
                        std::fs::write(&file, content)
                            .map_err(|e| format!("builtins.files {path}: {e}"))?;
                    }
                    let builtins = BuiltinTools::new(dir.path()).map_err(|e| e.to_string())?;
                    builtins
                        .register(&mut tools.registry)
                        .map_err(|e| e.to_string())?;
                    tools.builtins = Some(builtins);
                    tools._dir = Some(dir);
                }
                ToolEntry::Upstream {
                    namespace,
                    command,
                    env,
                } => {
                    let spec = UpstreamSpec {
                        namespace: namespace.clone(),
                        command: command.clone(),
                        env: env
                            .iter()
                            .map(|(k, v)| (k.clone(), Some(v.clone())))
                            .collect(),
                    };
                    let upstream = Upstream::connect(&spec, DEFAULT_STARTUP_TIMEOUT, None)
                        .await
                        .map_err(|e| e.to_string())?;
                    let specs = upstream.list_tools().await.map_err(|e| e.to_string())?;
                    upstream
                        .register(&specs, &mut tools.registry)
                        .map_err(|e| e.to_string())?;
                    tools.upstreams.push(upstream);
                }
            }
        }
        Ok(tools)
    }

    /// Adds what the tools need on any pipeline that calls them (the built-ins' path guard).
    pub(crate) fn customize(
        &self,
    ) -> impl Fn(PipelineBuilder) -> PipelineBuilder + Send + Sync + 'static {
        let builtins = self.builtins.clone();
        move |pipeline| match &builtins {
            Some(b) => pipeline.guard(b.guard()),
            None => pipeline,
        }
    }

    /// The Code Mode assembly over the tools, on `sandbox`: the whole SDK in the `run_code`
    /// description, or the discovery tools in `Mode::Discovery`. `observe` adds to the inner
    /// pipeline (an observer of the nested calls).
    pub(crate) fn harness(
        &self,
        sandbox: &Sandbox,
        mode: Mode,
        observe: impl Fn(PipelineBuilder) -> PipelineBuilder + Send + Sync + 'static,
    ) -> Result<Harness, String> {
        let customize = self.customize();
        Harness::builder()
            .sandbox(sandbox.clone())
            .discovery(if mode == Mode::Discovery {
                Discovery::On
            } else {
                Discovery::Off
            })
            .inner(move |pipeline| observe(customize(pipeline)))
            .build(self.registry.clone())
            .map_err(|e| e.to_string())
    }

    /// The pipeline of direct calls: every tool, every stage.
    pub(crate) fn direct_pipeline(&self) -> Pipeline {
        (self.customize())(Pipeline::builder(self.registry.clone())).build()
    }

    /// The tools as a chat API carries them to the model in direct mode.
    pub(crate) fn functions(&self) -> Vec<Function> {
        visible_tools(&self.registry)
            .iter()
            .map(Function::of)
            .collect()
    }
}

/// A tool as the model sees it in direct mode: an OpenAI-style function.
#[derive(Clone, Debug)]
pub(crate) struct Function {
    /// The function name (`ns__name` for a namespaced tool).
    pub(crate) name: String,
    /// The registry path calls go to.
    pub(crate) path: String,
    /// `{"type": "function", "function": {...}}`.
    pub(crate) definition: Value,
}

impl Function {
    fn of(info: &ToolInfo) -> Function {
        let name = match &info.namespace {
            Some(ns) => function_name(&format!("{ns}__{}", info.name)),
            None => function_name(&info.name),
        };
        Function {
            definition: json!({
                "type": "function",
                "function": {
                    "name": name,
                    "description": info.description,
                    "parameters": info.parameters,
                }
            }),
            name,
            path: info.path.clone(),
        }
    }
}

/// `run_code` as a chat API carries it to the model in code mode.
pub(crate) fn run_code_function(harness: &Harness) -> Value {
    let run_code = harness.run_code();
    json!({"type": "function", "function": {
        "name": run_code.name(),
        "description": run_code.description(),
        "parameters": run_code.parameters(),
    }})
}

/// `name` as a chat API accepts it: `[A-Za-z0-9_-]`, at most 64 characters.
fn function_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect()
}

/// A fixture tool: validated arguments (the pipeline does it) matched against the recorded
/// responses by JSON equality. Parallel-safe: its answers do not depend on order.
fn fixture_tool(declaration: &Value, fixture: &Fixture) -> Result<ToolDefinition, String> {
    let specs = import_tools(&json!({ "tools": [declaration] })).map_err(|e| e.to_string())?;
    let spec = &specs[0];
    let fixture = Arc::new(fixture.clone());
    let name: Arc<str> = spec.name.as_str().into();
    let mut builder = ToolDefinition::builder(&spec.name)
        .description(&spec.description)
        .parameters(spec.parameters.clone())
        .parallel_safe()
        .execute(move |args, _exec| {
            let answer = answer(&name, &fixture, &args);
            futures::future::ready(answer)
        });
    if let Some(out) = &spec.output_schema {
        builder = builder.output_schema(out.clone());
    }
    builder.build().map_err(|e| e.to_string())
}

fn answer(name: &str, fixture: &Fixture, args: &Value) -> Result<Value, ToolFailure> {
    if let Some(response) = fixture.responses.iter().find(|r| &r.args == args) {
        return match (&response.result, &response.error) {
            (Some(value), _) => Ok(value.clone()),
            (None, Some(message)) => Err(ToolFailure::new(message.clone())),
            (None, None) => unreachable!("checked when the scenario was loaded"),
        };
    }
    if let Some(value) = &fixture.default {
        return Ok(value.clone());
    }
    Err(ToolFailure::new(format!(
        "`{name}` has no fixture response for these arguments: {args} ({} recorded response(s); add one to the scenario's fixture, or a `default`)",
        fixture.responses.len()
    )))
}

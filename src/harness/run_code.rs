//! The `run_code` tool: input `{code}`, a description that embeds the SDK and the rules, the
//! render of DESIGN.md §5, and presenters (a code card for the call, a terminal card for the
//! result). Its body returns the [`RunOutcome`] typed: render, presenters and callers read it
//! without parsing its JSON back.

use serde::Deserialize;
use serde_json::{Value, json};

use super::CodeMode;
use crate::call::Limits;
use crate::learned::TypeStore;
use crate::sandbox::{RunOutcome, render};
use crate::sdk::run_code_description;
use crate::tool::{Card, ToolBuildError, ToolDefinition, ValueFailure};

/// The name of the Code Mode tool.
pub const RUN_CODE: &str = "run_code";

/// The arguments of `run_code` (its schema says the same).
#[derive(Deserialize)]
struct RunCodeArgs {
    code: String,
}

/// The `run_code` description around `sdk` (the whole SDK, or the discovery one).
pub(crate) fn description(sdk: &str, limits: &Limits) -> String {
    run_code_description(sdk, limits)
}

/// Adds what the run's calls taught `types` to its file, on a blocking thread the run does not
/// wait for (a save may wait on another process's). A cache that cannot be written costs the
/// learning, never the run: it is logged, and retried at the next save (after a later run that
/// recorded something, or at the process's end: a process that ends right after a run saves once
/// more itself, [`TypeStore::save`]).
///
/// A run whose calls recorded nothing (it called no tool without an output schema) has nothing to
/// save and wakes no thread.
fn save_learned(types: TypeStore) {
    if !types.has_unsaved() {
        return;
    }
    tokio::task::spawn_blocking(move || {
        if let Err(error) = types.save() {
            tracing::warn!(%error, "learned output types were not saved");
        }
    });
}

/// The `run_code` tool over `code_mode`, with `description`.
pub(crate) fn run_code_tool(
    code_mode: &CodeMode,
    description: String,
    types: Option<TypeStore>,
) -> Result<ToolDefinition, ToolBuildError> {
    let code_mode = code_mode.clone();
    let output_bytes = code_mode.limits().output_bytes;
    ToolDefinition::builder(RUN_CODE)
        .description(description)
        .parameters(json!({
            "type": "object",
            "properties": {"code": {"type": "string", "description": "TypeScript or JavaScript: the body of an async function"}},
            "required": ["code"],
            "additionalProperties": false
        }))
        .execute_typed(move |args: Value, exec| {
            let code_mode = code_mode.clone();
            let types = types.clone();
            async move {
                // The pipeline validated the arguments against the schema above.
                let RunCodeArgs { code } = serde_json::from_value(args)
                    .map_err(|e| crate::call::ToolFailure::new(format!("run_code: {e}")))?;
                let outcome = code_mode.run(&code, exec.cancel.clone(), &exec.extensions).await;
                if let Some(types) = types {
                    save_learned(types);
                }
                Ok(outcome)
            }
        })
        .render_typed(move |outcome: &RunOutcome| render(outcome, output_bytes))
        .value_failure_typed(|outcome: &RunOutcome| {
            let error = outcome.error.as_ref().filter(|_| !outcome.is_ok())?;
            let status = outcome.status.as_str();
            Some(ValueFailure {
                code: status.to_ascii_uppercase(),
                message: error.message.clone(),
                details: json!({"status": status, "name": error.name}),
            })
        })
        .present_call(|args| Card::Generic {
            title: RUN_CODE.into(),
            body: args.get("code").and_then(Value::as_str).map(str::to_string),
        })
        .present_result(move |_args, result| {
            let parsed;
            let outcome = match result.typed.and_then(|t| t.downcast::<RunOutcome>()) {
                Some(outcome) => Some(outcome),
                None => {
                    parsed = result.value.and_then(|v| RunOutcome::deserialize(v).ok());
                    parsed.as_ref()
                }
            };
            let (output, exit_code) = match (outcome, result.value) {
                (Some(outcome), _) => (render(outcome, output_bytes), i64::from(!outcome.is_ok())),
                (None, Some(value)) => (value.to_string(), 1),
                (None, None) => (result.content.to_string(), 1),
            };
            Card::Terminal {
                title: RUN_CODE.into(),
                command: RUN_CODE.into(),
                output,
                exit_code: Some(exit_code),
            }
        })
        .build()
}

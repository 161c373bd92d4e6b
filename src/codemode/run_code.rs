//! The `run_code` tool: input `{code}`, a description that embeds the SDK and the rules, the
//! render of DESIGN.md §5, and presenters (a code card for the call, a terminal card for the
//! result).

use serde_json::{Value, json};

use super::{CodeMode, sdk_for};
use crate::pipeline::ToolFailure;
use crate::sandbox::{Limits, RunOutcome, render};
use crate::sdk::{DescriptionLimits, run_code_description};
use crate::tool::{Card, ToolBuildError, ToolDefinition, ToolRegistry};

/// The name of the Code Mode tool.
pub const RUN_CODE: &str = "run_code";

fn description_limits(limits: &Limits) -> DescriptionLimits {
    DescriptionLimits {
        deadline_ms: limits.deadline.as_millis() as u64,
        heap_bytes: limits.heap_bytes as u64,
        max_tool_calls: limits.tool_calls,
        max_in_flight_calls: limits.in_flight_calls as u64,
        console_bytes: limits.console_bytes as u64,
        return_value_bytes: limits.return_bytes as u64,
        program_bytes: limits.program_bytes as u64,
        call_bytes: limits.call_arg_bytes.max(limits.call_result_bytes) as u64,
        output_bytes: limits.output_bytes as u64,
    }
}

impl CodeMode {
    /// The `run_code` description for the visible tools of `registry`.
    pub fn description(&self, registry: &ToolRegistry) -> String {
        self.description_with_sdk(&sdk_for(registry))
    }

    /// The `run_code` description around a given SDK text (e.g. the compact one of
    /// [`super::discovery::discovery_sdk`]).
    pub fn description_with_sdk(&self, sdk: &str) -> String {
        run_code_description(sdk, &description_limits(self.limits()))
    }

    /// The `run_code` tool definition. Register it in `registry`, build the pipeline, then
    /// [`CodeMode::attach`] it.
    ///
    /// # Errors
    /// Only if the fixed schema failed to compile (a bug).
    pub fn tool(&self, registry: &ToolRegistry) -> Result<ToolDefinition, ToolBuildError> {
        self.tool_with_description(self.description(registry))
    }

    /// The `run_code` tool definition with a description already made (e.g. with
    /// [`CodeMode::description_with_sdk`] for progressive discovery).
    ///
    /// # Errors
    /// Only if the fixed schema failed to compile (a bug).
    pub fn tool_with_description(
        &self,
        description: String,
    ) -> Result<ToolDefinition, ToolBuildError> {
        let code_mode = self.clone();
        let output_bytes = self.limits().output_bytes;
        ToolDefinition::builder(RUN_CODE)
            .description(description)
            .parameters(json!({
                "type": "object",
                "properties": {"code": {"type": "string", "description": "TypeScript or JavaScript: the body of an async function"}},
                "required": ["code"],
                "additionalProperties": false
            }))
            .execute(move |args: Value, exec| {
                let code_mode = code_mode.clone();
                async move {
                    let code = args.get("code").and_then(Value::as_str).unwrap_or_default().to_string();
                    let outcome = code_mode.run(&code, exec.cancel.clone()).await;
                    serde_json::to_value(&outcome)
                        .map_err(|e| ToolFailure::new(format!("the outcome could not be serialized: {e}")))
                }
            })
            // The run has its own deadline; the pipeline's per-attempt timeout must not cut it
            // short (time awaiting approvals does not count against the run).
            .timeout_ms(u64::MAX / 4)
            .render(move |value| match serde_json::from_value::<RunOutcome>(value.clone()) {
                Ok(outcome) => render(&outcome, output_bytes),
                Err(_) => value.to_string(),
            })
            .present_call(|args| Card::Generic {
                title: "run_code".into(),
                body: args.get("code").and_then(Value::as_str).map(str::to_string),
            })
            .present_result(move |_args, result| {
                let (output, exit_code) = match result.value {
                    Some(value) => match serde_json::from_value::<RunOutcome>(value.clone()) {
                        Ok(outcome) => (render(&outcome, output_bytes), i64::from(!outcome.is_ok())),
                        Err(_) => (value.to_string(), 1),
                    },
                    None => (result.content.to_string(), 1),
                };
                Card::Terminal { title: "run_code".into(), command: "run_code".into(), output, exit_code: Some(exit_code) }
            })
            .build()
    }
}

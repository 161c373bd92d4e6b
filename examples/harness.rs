//! A minimal harness: one tool, Code Mode on top, and a `run_code` call through the pipeline.
//! Run with `cargo run --example harness`.

use codemode::codemode::{CodeMode, RUN_CODE};
use codemode::sandbox::{Limits, Sandbox, SandboxConfig};
use codemode::{CallRequest, Pipeline, ToolDefinition, ToolRegistry};
use serde_json::{Value, json};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut registry = ToolRegistry::new();
    registry.register(
        ToolDefinition::builder("add")
            .description("Adds two numbers")
            .parameters(json!({
                "type": "object",
                "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                "required": ["a", "b"]
            }))
            .execute(|args: Value, _exec| async move {
                let a = args["a"].as_f64().unwrap_or_default();
                let b = args["b"].as_f64().unwrap_or_default();
                Ok(json!(a + b))
            })
            .parallel_safe()
            .build()?,
    )?;
    let code_mode = CodeMode::new(Sandbox::new(SandboxConfig::default())?, Limits::default());
    // The run_code description embeds the generated SDK of the tools registered so far.
    registry.register(code_mode.tool(&registry)?)?;
    let pipeline = Pipeline::builder(registry).build(); // + hooks, guards, approver, session log...
    code_mode.attach(pipeline.clone());

    let code = "const sums = await Promise.all([1, 2, 3].map((n) => tools.add({ a: n, b: 10 })));\nconsole.log('sums', sums);\nreturn sums.reduce((x, y) => x + y, 0);";
    let outcome = pipeline
        .call(CallRequest::new(RUN_CODE, json!({ "code": code })))
        .await;
    print!("{}", outcome.content);
    Ok(())
}

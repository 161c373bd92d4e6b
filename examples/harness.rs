//! A minimal harness: two tools, a hook that asks about one of them, an approver, and Code Mode
//! on top, built in one call. Run with `cargo run --example harness`.
//!
//! The program's `tools.add(...)` and `tools.delete_note(...)` calls each go through the inner
//! pipeline (validation, the hook, the approver, events), exactly like direct calls.

use codemode::pipeline::{ApprovalDecision, HookDecision, approver_fn, pre_hook_fn};
use codemode::{Harness, ToolDefinition, ToolRegistry};
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
    registry.register(
        ToolDefinition::builder("delete_note")
            .description("Deletes a note by id")
            .parameters(json!({"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}))
            .execute(|args: Value, _exec| async move { Ok(json!({"deleted": args["id"]})) })
            .build()?,
    )?;

    // visible registry -> inner pipeline -> Code Mode -> run_code -> outer pipeline.
    let harness = Harness::builder()
        .inner(|pipeline| {
            pipeline
                .pre_hook(pre_hook_fn("ask-deletes", |call| {
                    if call.path.starts_with("delete") {
                        HookDecision::Ask {
                            reason: "deletes data".into(),
                        }
                    } else {
                        HookDecision::Allow
                    }
                }))
                .approver(approver_fn(|request| {
                    println!("approver: {} {}", request.call.path, request.call.args);
                    ApprovalDecision::Approve
                }))
        })
        .build(registry)?;

    let code = "const sums = await Promise.all([1, 2, 3].map((n) => tools.add({ a: n, b: 10 })));\nconsole.log('sums', sums);\nawait tools.delete_note({ id: 7 });\nreturn sums.reduce((x, y) => x + y, 0);";
    let outcome = harness.run(code).await?;
    println!("status: {:?}", outcome.status);
    print!("{}", codemode::sandbox::render(&outcome, usize::MAX));
    Ok(())
}

//! After the body: result limit, output validation, render, post-execute hooks, finalize_content.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use serde_json::Value;

use super::Inner;
use super::gates::guarded;
use super::hooks::{CallInfo, PostInfo};
use crate::call::{CallError, CallLimits, ContextEntry, ErrorKind, LimitKind, Typed, json_size};
use crate::schema::ArgIssue;
use crate::tool::ToolDefinition;

pub(crate) struct Finished {
    pub(crate) value: Arc<Value>,
    pub(crate) content: String,
    /// `content` is the compact JSON text of `value` (see `CallOutcome::content_is_value_json`).
    pub(crate) content_is_value_json: bool,
    /// The body's typed value, unless a hook replaced the value.
    pub(crate) typed: Option<Typed>,
}

/// Turns a body's value into the final value and content. `contexts` collects hook attachments
/// (kept even when a later hook blocks, so the harness can see why).
pub(crate) async fn finish(
    inner: &Inner,
    info: &CallInfo<'_>,
    value: Value,
    mut typed: Option<Typed>,
    contexts: &mut Vec<ContextEntry>,
) -> Result<Finished, CallError> {
    let tool = info.tool;
    // The default render of a value that is not a string is its compact JSON text: made first,
    // it also gives the result's size, and the sandbox hands the same text to the program (one
    // serialisation of a large result instead of three).
    let json_text = (tool.inner.render.is_none() && !value.is_string())
        .then(|| crate::tool::default_render(&value));
    let size = json_text
        .as_ref()
        .map_or_else(|| json_size(&value), |text| text.len() as u64);
    check_result_size(&inner.limits, size)?;
    if let Some(schema) = &tool.inner.output {
        let issues = schema.issues(&value);
        if !issues.is_empty() {
            return Err(output_invalid(info.path, issues, None));
        }
    }
    let mut content_is_value_json = json_text.is_some();
    let mut content = match json_text {
        Some(text) => text,
        None => render(tool, &value, typed.as_ref())?,
    };
    let mut value = Arc::new(value);
    let mut content_replaced = false;
    for hook in &inner.post_hooks {
        let name = hook.name();
        let post = PostInfo {
            call: info,
            value: &value,
            content: &content,
        };
        let action = match guarded(name, || hook.after(&post)).await {
            Ok(action) => action,
            Err(why) => {
                let reason = format!("post hook {why}");
                return Err(CallError::new(
                    ErrorKind::Blocked {
                        reason: reason.clone(),
                    },
                    reason,
                ));
            }
        };
        contexts.extend(action.contexts);
        if let Some(reason) = action.block {
            let message = format!("result blocked by post hook `{name}`: {reason}");
            return Err(CallError::new(ErrorKind::Blocked { reason }, message));
        }
        if let Some(c) = action.replace_content {
            content = c;
            content_replaced = true;
            content_is_value_json = false;
        }
        if let Some(v) = action.replace_value {
            if let Some(schema) = &tool.inner.output {
                let issues = schema.issues(&v);
                if !issues.is_empty() {
                    return Err(output_invalid(info.path, issues, Some(name)));
                }
            }
            // The JSON is the truth now: the typed value no longer describes it.
            typed = None;
            if !content_replaced {
                content = render(tool, &v, None)?;
            }
            content_is_value_json =
                !content_replaced && tool.inner.render.is_none() && !v.is_string();
            value = Arc::new(v);
        }
    }
    if let Some(finalize) = &tool.inner.finalize {
        content_is_value_json = false;
        let v = &value;
        content = std::panic::catch_unwind(AssertUnwindSafe(move || finalize(content, v)))
            .map_err(|_| tool_bug(info.path, "finalize_content panicked"))?;
    }
    Ok(Finished {
        value,
        content,
        content_is_value_json,
        typed,
    })
}

fn check_result_size(limits: &CallLimits, size: u64) -> Result<(), CallError> {
    if size > limits.max_result_bytes {
        let message = format!(
            "result is {size} bytes, over the limit of {} bytes",
            limits.max_result_bytes
        );
        return Err(CallError::new(
            ErrorKind::LimitExceeded {
                limit: LimitKind::ResultBytes,
                value: size,
            },
            message,
        ));
    }
    Ok(())
}

fn render(
    tool: &ToolDefinition,
    value: &Value,
    typed: Option<&Typed>,
) -> Result<String, CallError> {
    std::panic::catch_unwind(AssertUnwindSafe(|| tool.render_typed(value, typed)))
        .map_err(|_| tool_bug(tool.sandbox_name(), "render panicked"))
}

fn tool_bug(path: &str, what: &str) -> CallError {
    CallError::new(
        ErrorKind::ToolError {
            retryable: false,
            attempts: 1,
        },
        format!("tool `{path}`: {what}"),
    )
}

fn output_invalid(path: &str, issues: Vec<ArgIssue>, by: Option<&str>) -> CallError {
    let first = issues.first().map(ToString::to_string).unwrap_or_default();
    let message = match by {
        Some(hook) => format!(
            "post hook `{hook}` replaced the value of `{path}` with one that breaks its output schema: {first}"
        ),
        None => format!("`{path}` returned a value that breaks its output schema: {first}"),
    };
    CallError::new(
        ErrorKind::OutputInvalid {
            issues,
            by: by.map(str::to_owned),
        },
        message,
    )
}

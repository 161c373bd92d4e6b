//! `write_file` and `edit_file`.

use std::fs;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use similar::TextDiff;

use super::fs_read::io_failure;
use super::{Root, args_schema, blocking, card_args, parse_args, truncate_str};
use crate::pipeline::{CallStatus, ToolFailure};
use crate::tool::{Card, ToolDefinition};

/// Bytes of written content a `write_file` diff card shows.
const MAX_CARD_CONTENT: usize = 64 * 1024;

/// A unified diff with three lines of context and `a/`/`b/` headers.
fn unified(old: &str, new: &str, old_name: &str, new_name: &str) -> String {
    TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(old_name, new_name)
        .to_string()
}

/// The arguments of `write_file`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct WriteFileArgs<'a> {
    /// File path, relative to the workspace root.
    path: &'a str,
    /// The whole new content of the file.
    content: &'a str,
}

pub(crate) fn write_file(root: Arc<Root>) -> ToolDefinition {
    ToolDefinition::builder("write_file")
        .path_args(root.path_args(false))
        .description(
            "Write a text file under the workspace root, replacing it if it exists and creating \
             missing parent directories. Prefer edit_file for changes to an existing file.",
        )
        .parameters(args_schema::<WriteFileArgs>())
        .output_schema(json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "The file written, relative to the root."},
                "bytes_written": {"type": "integer"}
            },
            "required": ["path", "bytes_written"],
            "additionalProperties": false
        }))
        .render(|v| {
            format!(
                "Wrote {} bytes to {}",
                v["bytes_written"].as_u64().unwrap_or(0),
                v["path"].as_str().unwrap_or("")
            )
        })
        .present_call(write_card)
        .present_result(|args, view| match view.status {
            CallStatus::Ok => write_card(args),
            CallStatus::Error => Card::Generic {
                title: format!("Write {} failed", card_args::<WriteFileArgs>(args).path),
                body: Some(view.content.to_owned()),
            },
        })
        .execute(move |args, _exec| {
            let root = root.clone();
            async move { blocking(move || write(&root, &args)).await }
        })
        .build()
        .expect("write_file builds")
}

/// The content written, as a diff from nothing (the presenter sees only the arguments).
fn write_card(args: &Value) -> Card {
    let WriteFileArgs { path, content } = card_args(args);
    let path = path.to_owned();
    let shown = truncate_str(content, MAX_CARD_CONTENT);
    let mut unified = unified("", shown, "/dev/null", &format!("b/{path}"));
    if shown.len() < content.len() {
        unified.push_str(&format!(
            "\\ (diff cut at {} KiB of {} bytes)\n",
            MAX_CARD_CONTENT / 1024,
            content.len()
        ));
    }
    Card::Diff {
        title: format!("Write {path}"),
        path,
        unified,
    }
}

fn write(root: &Root, args: &Value) -> Result<Value, ToolFailure> {
    let WriteFileArgs { path, content } = parse_args("write_file", args)?;
    let r = root.resolve(path)?;
    if r.abs.is_dir() {
        return Err(ToolFailure::new(format!(
            "`{}` is a directory; write_file needs a file path",
            r.rel
        )));
    }
    if let Some(parent) = r.abs.parent() {
        fs::create_dir_all(parent).map_err(|e| {
            let rel = root.relative(parent);
            io_failure(root, &rel, "create the directory", &e)
        })?;
    }
    fs::write(&r.abs, content).map_err(|e| io_failure(root, &r.rel, "write", &e))?;
    Ok(json!({"path": r.rel, "bytes_written": content.len()}))
}

/// The arguments of `edit_file`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct EditFileArgs<'a> {
    /// File path, relative to the workspace root.
    path: &'a str,
    /// Exact text to replace (whitespace and indentation included).
    #[schemars(length(min = 1))]
    old: &'a str,
    /// Replacement text.
    new: &'a str,
    /// Replace every occurrence instead of requiring exactly one. Default false.
    // `Option` rather than `#[serde(default)] bool`: a default would add `@default` to the SDK.
    replace_all: Option<bool>,
}

pub(crate) fn edit_file(root: Arc<Root>) -> ToolDefinition {
    ToolDefinition::builder("edit_file")
        .path_args(root.path_args(false))
        .description(
            "Edit a text file under the workspace root by exact string replacement: `old` must \
             occur exactly once (include enough surrounding lines to make it unique), or pass \
             `replace_all: true` to replace every occurrence. Returns the number of replacements \
             and a unified diff.",
        )
        .parameters(args_schema::<EditFileArgs>())
        .output_schema(json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "The file edited, relative to the root."},
                "replacements": {"type": "integer", "minimum": 1},
                "diff": {"type": "string", "description": "Unified diff of the change."}
            },
            "required": ["path", "replacements", "diff"],
            "additionalProperties": false
        }))
        .render(|v| {
            let n = v["replacements"].as_u64().unwrap_or(0);
            format!(
                "Edited {}: {n} replacement{}\n{}",
                v["path"].as_str().unwrap_or(""),
                if n == 1 { "" } else { "s" },
                v["diff"].as_str().unwrap_or("")
            )
        })
        .present_call(|args| {
            let EditFileArgs { path, old, new, .. } = card_args(args);
            Card::Diff {
                title: format!("Edit {path}"),
                unified: unified(old, new, &format!("a/{path}"), &format!("b/{path}")),
                path: path.to_owned(),
            }
        })
        .present_result(|args, view| {
            let path = card_args::<EditFileArgs>(args).path;
            match (view.status, view.value) {
                (CallStatus::Ok, Some(v)) => Card::Diff {
                    title: format!("Edit {}", v["path"].as_str().unwrap_or(path)),
                    path: v["path"].as_str().unwrap_or(path).to_owned(),
                    unified: v["diff"].as_str().unwrap_or("").to_owned(),
                },
                _ => Card::Generic {
                    title: format!("Edit {path} failed"),
                    body: Some(view.content.to_owned()),
                },
            }
        })
        .execute(move |args, _exec| {
            let root = root.clone();
            async move { blocking(move || edit(&root, &args)).await }
        })
        .build()
        .expect("edit_file builds")
}

fn edit(root: &Root, args: &Value) -> Result<Value, ToolFailure> {
    let args: EditFileArgs = parse_args("edit_file", args)?;
    let r = root.resolve(args.path)?;
    let (old, new) = (args.old, args.new);
    let replace_all = args.replace_all.unwrap_or(false);
    if old.is_empty() {
        return Err(ToolFailure::new("`old` must not be empty"));
    }
    if old == new {
        return Err(ToolFailure::new(
            "`old` and `new` are identical; there is nothing to change",
        ));
    }
    if r.abs.is_dir() {
        return Err(ToolFailure::new(format!(
            "`{}` is a directory, not a file",
            r.rel
        )));
    }
    let bytes = fs::read(&r.abs).map_err(|e| io_failure(root, &r.rel, "read", &e))?;
    if bytes.contains(&0) {
        return Err(ToolFailure::new(format!(
            "`{}` is a binary file; edit_file only edits text",
            r.rel
        )));
    }
    let text = String::from_utf8(bytes).map_err(|_| {
        ToolFailure::new(format!(
            "`{}` is not valid UTF-8; edit_file only edits UTF-8 text",
            r.rel
        ))
    })?;
    let count = text.matches(old).count();
    let edited = match count {
        0 => {
            return Err(ToolFailure::new(format!(
                "`old` was not found in `{}`; read the file and copy the exact text, \
                 whitespace and indentation included",
                r.rel
            )));
        }
        1 => text.replacen(old, new, 1),
        n if !replace_all => {
            return Err(ToolFailure::new(format!(
                "`old` occurs {n} times in `{}`; include more surrounding lines to make it \
                 unique, or pass replace_all: true to replace all {n}",
                r.rel
            )));
        }
        _ => text.replace(old, new),
    };
    fs::write(&r.abs, &edited).map_err(|e| io_failure(root, &r.rel, "write", &e))?;
    let diff = unified(
        &text,
        &edited,
        &format!("a/{}", r.rel),
        &format!("b/{}", r.rel),
    );
    Ok(json!({"path": r.rel, "replacements": count, "diff": diff}))
}

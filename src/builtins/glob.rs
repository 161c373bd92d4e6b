//! `glob`: files under a directory whose path matches a glob.

use std::fs;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::fs_read::io_failure;
use super::walk::{cancelled, compile_glob, ok_value, result_card, search_card, walk};
use super::{MAX_GLOB_RESULTS, Root, args_schema, blocking, card_args, parse_args};
use crate::pipeline::ToolFailure;
use crate::tool::{SearchHit, ToolDefinition};

/// The arguments of `glob`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct GlobArgs<'a> {
    /// Glob, e.g. `**/*.rs`.
    pattern: &'a str,
    /// Directory to search, relative to the workspace root. Default the root.
    #[serde(borrow)]
    path: Option<&'a str>,
}

pub(crate) fn glob(root: Arc<Root>) -> ToolDefinition {
    ToolDefinition::builder("glob")
        .path_args(root.path_args(true))
        .description(format!(
            "Find files under the workspace root whose path matches a glob. The pattern is matched \
             against paths relative to `path` (default the root): `*` stays within one directory, \
             `**` crosses directories, `{{a,b}}` alternates (e.g. `**/*.rs`, `src/*.{{ts,tsx}}`). \
             Respects .gitignore. Returns matching file paths relative to the root, sorted, at most \
             {MAX_GLOB_RESULTS}."
        ))
        .parameters(args_schema::<GlobArgs>())
        .output_schema(json!({
            "type": "object",
            "properties": {
                "paths": {"type": "array", "items": {"type": "string"}, "description": "Matching files, relative to the root, sorted."},
                "truncated": {"type": "boolean", "description": format!("More than {MAX_GLOB_RESULTS} files matched; the first ones are listed.")}
            },
            "required": ["paths", "truncated"],
            "additionalProperties": false
        }))
        .parallel_safe()
        .render(|value| {
            let paths = value["paths"].as_array().map(Vec::as_slice).unwrap_or(&[]);
            if paths.is_empty() {
                return "(no files matched)".to_owned();
            }
            let mut out: Vec<&str> = paths.iter().filter_map(Value::as_str).collect();
            let note = format!("(only the first {MAX_GLOB_RESULTS} paths are listed)");
            if value["truncated"].as_bool() == Some(true) {
                out.push(&note);
            }
            out.join("\n")
        })
        .present_call(|args| {
            let GlobArgs { pattern, path } = card_args(args);
            search_card("Glob", pattern, path, Vec::new())
        })
        .present_result(|args, view| {
            let hits = ok_value(view)
                .and_then(|v| v["paths"].as_array())
                .map(|paths| {
                    paths
                        .iter()
                        .filter_map(Value::as_str)
                        .map(|p| SearchHit {
                            path: p.to_owned(),
                            line: 0,
                            text: String::new(),
                        })
                        .collect()
                })
                .unwrap_or_default();
            let GlobArgs { pattern, path } = card_args(args);
            result_card("Glob", pattern, path, view, hits)
        })
        .execute(move |args, exec| {
            let root = root.clone();
            async move { blocking(move || run_glob(&root, &args, &exec.cancel)).await }
        })
        .build()
        .expect("glob builds")
}

fn run_glob(root: &Root, args: &Value, cancel: &CancellationToken) -> Result<Value, ToolFailure> {
    let GlobArgs { pattern, path } = parse_args("glob", args)?;
    let matcher = compile_glob(pattern, "glob")?;
    let dir = root.resolve(path.unwrap_or("."))?;
    let meta = fs::metadata(&dir.abs).map_err(|e| io_failure(root, &dir.rel, "search", &e))?;
    if !meta.is_dir() {
        return Err(ToolFailure::new(format!(
            "`{}` is not a directory; glob searches a directory",
            dir.rel
        )));
    }
    let mut paths = Vec::new();
    for entry in walk(root, &dir.abs) {
        if cancel.is_cancelled() {
            return Err(cancelled());
        }
        let Ok(entry) = entry else { continue };
        let Some(ft) = entry.file_type() else {
            continue;
        };
        if ft.is_dir() {
            continue;
        }
        let Ok(under) = entry.path().strip_prefix(&dir.abs) else {
            continue;
        };
        if matcher.is_match(under) {
            paths.push(root.relative(entry.path()));
        }
    }
    paths.sort();
    let truncated = paths.len() > MAX_GLOB_RESULTS;
    paths.truncate(MAX_GLOB_RESULTS);
    Ok(json!({"paths": paths, "truncated": truncated}))
}

//! `read_file` and `list_dir`.

use std::fs;
use std::io::{BufRead, BufReader, ErrorKind};
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{
    DEFAULT_READ_LIMIT, MAX_LIST_ENTRIES, MAX_READ_BYTES, Root, args_schema, blocking, card_args,
    parse_args, truncate_str,
};
use crate::pipeline::{CallStatus, ToolFailure};
use crate::tool::{Card, ResultView, ToolDefinition};

/// Bytes at the start of a file checked for a NUL byte (binary detection).
const BINARY_SNIFF_BYTES: usize = 8192;

/// An I/O failure on `rel`, worded for the model.
pub(crate) fn io_failure(root: &Root, rel: &str, what: &str, e: &std::io::Error) -> ToolFailure {
    match e.kind() {
        ErrorKind::NotFound => ToolFailure::new(format!("not found: {}", root.describe(rel))),
        ErrorKind::PermissionDenied => {
            ToolFailure::new(format!("permission denied: cannot {what} `{rel}`"))
        }
        _ => ToolFailure::new(format!("cannot {what} `{rel}`: {e}")),
    }
}

/// The arguments of `read_file`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ReadFileArgs<'a> {
    /// File path, relative to the workspace root.
    path: &'a str,
    /// First line to read (1-based). Default 1.
    #[schemars(range(min = 1))]
    offset: Option<u64>,
    #[schemars(
        range(min = 1),
        description = format!("How many lines to read. Default {DEFAULT_READ_LIMIT}.")
    )]
    limit: Option<u64>,
}

pub(crate) fn read_file(root: Arc<Root>) -> ToolDefinition {
    ToolDefinition::builder("read_file")
        .path_args(root.path_args(true))
        .description(format!(
            "Read a text file under the workspace root. Returns the raw text of lines \
             `offset`..`offset+limit-1` (1-based; default the first {DEFAULT_READ_LIMIT} lines, at \
             most {} KiB) plus the range and the file's total line count. Binary files are refused.",
            MAX_READ_BYTES / 1024
        ))
        .parameters(args_schema::<ReadFileArgs>())
        .output_schema(json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "The file, relative to the root."},
                "content": {"type": "string", "description": "The lines read, exactly as in the file (no line numbers)."},
                "start_line": {"type": "integer", "description": "First line returned (1-based)."},
                "end_line": {"type": "integer", "description": "Last line returned (1-based, inclusive; start_line - 1 when none)."},
                "total_lines": {"type": "integer", "description": "Lines in the whole file."}
            },
            "required": ["path", "content", "start_line", "end_line", "total_lines"],
            "additionalProperties": false
        }))
        .parallel_safe()
        .render(render_read)
        .present_call(|args| {
            let path = card_args::<ReadFileArgs>(args).path;
            Card::Read {
                title: format!("Read {path}"),
                path: path.to_owned(),
                range: None,
                text: String::new(),
            }
        })
        .present_result(present_read)
        .execute(move |args, _exec| {
            let root = root.clone();
            async move { blocking(move || read(&root, &args)).await }
        })
        .build()
        .expect("read_file builds")
}

fn read(root: &Root, args: &Value) -> Result<Value, ToolFailure> {
    let args: ReadFileArgs = parse_args("read_file", args)?;
    let r = root.resolve(args.path)?;
    // The schema's minimum is 1; `max(1)` keeps the arithmetic below safe without it.
    let offset = args.offset.unwrap_or(1).max(1);
    let limit = args.limit.unwrap_or(DEFAULT_READ_LIMIT).max(1);
    let meta = fs::metadata(&r.abs).map_err(|e| io_failure(root, &r.rel, "read", &e))?;
    if meta.is_dir() {
        return Err(ToolFailure::new(format!(
            "`{}` is a directory, not a file; use list_dir to see its entries",
            r.rel
        )));
    }
    let file = fs::File::open(&r.abs).map_err(|e| io_failure(root, &r.rel, "read", &e))?;
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    let head = reader
        .fill_buf()
        .map_err(|e| io_failure(root, &r.rel, "read", &e))?;
    if head[..head.len().min(BINARY_SNIFF_BYTES)].contains(&0) {
        return Err(ToolFailure::new(format!(
            "`{}` is a binary file (it has a NUL byte in its first {} KiB); read_file only reads text",
            r.rel,
            BINARY_SNIFF_BYTES / 1024
        )));
    }

    let last_wanted = offset.saturating_add(limit - 1);
    let mut line = Vec::new();
    let mut content: Vec<u8> = Vec::new();
    let mut total = 0u64;
    let mut end_line = offset - 1;
    let mut full = false;
    loop {
        line.clear();
        let n = reader
            .read_until(b'\n', &mut line)
            .map_err(|e| io_failure(root, &r.rel, "read", &e))?;
        if n == 0 {
            break;
        }
        total += 1;
        if full || total < offset || total > last_wanted {
            continue;
        }
        if content.len() + line.len() > MAX_READ_BYTES {
            if content.is_empty() {
                // A single huge line: its head, cut on a char boundary.
                let text = String::from_utf8_lossy(&line);
                content.extend_from_slice(truncate_str(&text, MAX_READ_BYTES).as_bytes());
                end_line = total;
            }
            full = true;
            continue;
        }
        content.extend_from_slice(&line);
        end_line = total;
    }
    if offset > 1 && offset > total {
        return Err(ToolFailure::new(format!(
            "offset {offset} is past the end of `{}`, which has {total} lines",
            r.rel
        )));
    }
    Ok(json!({
        "path": r.rel,
        "content": String::from_utf8_lossy(&content),
        "start_line": offset,
        "end_line": end_line,
        "total_lines": total,
    }))
}

/// `cat -n` style: the line number right-aligned in six columns, a tab, the line.
fn render_read(value: &Value) -> String {
    let content = value["content"].as_str().unwrap_or("");
    let start = value["start_line"].as_u64().unwrap_or(1);
    let end = value["end_line"].as_u64().unwrap_or(0);
    let total = value["total_lines"].as_u64().unwrap_or(0);
    if total == 0 {
        return "(empty file)".to_owned();
    }
    let mut out = String::with_capacity(content.len() + 8 * (end + 1 - start) as usize);
    for (i, line) in content.split_inclusive('\n').enumerate() {
        let line = line.strip_suffix('\n').unwrap_or(line);
        let line = line.strip_suffix('\r').unwrap_or(line);
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&format!("{:>6}\t{line}", start + i as u64));
    }
    if end < total {
        out.push_str(&format!(
            "\n\n(lines {start}-{end} of {total}; call read_file with offset {} to read on)",
            end + 1
        ));
    }
    out
}

fn present_read(args: &Value, view: &ResultView<'_>) -> Card {
    let path = card_args::<ReadFileArgs>(args).path.to_owned();
    match (view.status, view.value) {
        (CallStatus::Ok, Some(value)) => {
            let start = value["start_line"].as_u64().unwrap_or(1);
            let end = value["end_line"].as_u64().unwrap_or(0);
            Card::Read {
                title: format!("Read {}", value["path"].as_str().unwrap_or(&path)),
                path: value["path"].as_str().unwrap_or(&path).to_owned(),
                range: (end >= start).then_some([start, end]),
                text: value["content"].as_str().unwrap_or("").to_owned(),
            }
        }
        _ => Card::Generic {
            title: format!("Read {path} failed"),
            body: Some(view.content.to_owned()),
        },
    }
}

/// The arguments of `list_dir`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ListDirArgs<'a> {
    /// Directory path, relative to the workspace root ("." for the root).
    path: &'a str,
}

pub(crate) fn list_dir(root: Arc<Root>) -> ToolDefinition {
    ToolDefinition::builder("list_dir")
        .path_args(root.path_args(true))
        .description(format!(
            "List a directory under the workspace root: its entries sorted by name, each with its \
             kind (file, dir, symlink, other) and size in bytes (files only). At most \
             {MAX_LIST_ENTRIES} entries. Use \".\" for the root."
        ))
        .parameters(args_schema::<ListDirArgs>())
        .output_schema(json!({
            "type": "object",
            "properties": {
                "entries": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "name": {"type": "string"},
                            "kind": {"type": "string", "enum": ["file", "dir", "symlink", "other"]},
                            "size": {"type": ["integer", "null"], "description": "Bytes, for files; null otherwise."}
                        },
                        "required": ["name", "kind", "size"],
                        "additionalProperties": false
                    }
                },
                "truncated": {"type": "boolean", "description": format!("More than {MAX_LIST_ENTRIES} entries; the first ones by name are listed.")}
            },
            "required": ["entries", "truncated"],
            "additionalProperties": false
        }))
        .parallel_safe()
        .render(render_list)
        .present_call(|args| Card::generic(format!("List {}", card_args::<ListDirArgs>(args).path)))
        .present_result(|args, view| Card::Generic {
            title: format!("List {}", card_args::<ListDirArgs>(args).path),
            body: Some(view.content.to_owned()),
        })
        .execute(move |args, _exec| {
            let root = root.clone();
            async move { blocking(move || list(&root, &args)).await }
        })
        .build()
        .expect("list_dir builds")
}

fn list(root: &Root, args: &Value) -> Result<Value, ToolFailure> {
    let args: ListDirArgs = parse_args("list_dir", args)?;
    let r = root.resolve(args.path)?;
    let meta = fs::metadata(&r.abs).map_err(|e| io_failure(root, &r.rel, "list", &e))?;
    if !meta.is_dir() {
        return Err(ToolFailure::new(format!(
            "`{}` is not a directory; use read_file to read a file",
            r.rel
        )));
    }
    let dir = fs::read_dir(&r.abs).map_err(|e| io_failure(root, &r.rel, "list", &e))?;
    let hidden = root.hidden();
    let mut entries: Vec<(String, &'static str, Option<u64>)> = Vec::new();
    for entry in dir {
        let entry = entry.map_err(|e| io_failure(root, &r.rel, "list", &e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        // `r.abs` is symlink-free, so this is the entry's normalised path, as rules see it.
        let rel = if r.rel == "." {
            name.clone()
        } else {
            format!("{}/{name}", r.rel)
        };
        if hidden.as_ref().is_some_and(|h| h.hides(&rel)) {
            continue;
        }
        let (kind, size) = match entry.path().symlink_metadata() {
            Ok(m) if m.file_type().is_symlink() => ("symlink", None),
            Ok(m) if m.is_dir() => ("dir", None),
            Ok(m) if m.is_file() => ("file", Some(m.len())),
            _ => ("other", None),
        };
        entries.push((name, kind, size));
    }
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    let truncated = entries.len() > MAX_LIST_ENTRIES;
    entries.truncate(MAX_LIST_ENTRIES);
    let entries: Vec<Value> = entries
        .into_iter()
        .map(|(name, kind, size)| json!({"name": name, "kind": kind, "size": size}))
        .collect();
    Ok(json!({"entries": entries, "truncated": truncated}))
}

/// One entry a line: `dir/`, `link@`, `file (12 bytes)`.
fn render_list(value: &Value) -> String {
    let entries = value["entries"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    if entries.is_empty() {
        return "(empty directory)".to_owned();
    }
    let mut out: Vec<String> = entries
        .iter()
        .map(|e| {
            let name = e["name"].as_str().unwrap_or("");
            match e["kind"].as_str() {
                Some("dir") => format!("{name}/"),
                Some("symlink") => format!("{name}@"),
                Some("file") => format!("{name} ({} bytes)", e["size"].as_u64().unwrap_or(0)),
                _ => name.to_owned(),
            }
        })
        .collect();
    if value["truncated"].as_bool() == Some(true) {
        out.push(format!(
            "(only the first {MAX_LIST_ENTRIES} entries are listed)"
        ));
    }
    out.join("\n")
}

//! `grep`: file contents matching a regular expression, searched with `grep-regex` +
//! `grep-searcher` over the shared walk.

use std::collections::{BTreeMap, VecDeque};
use std::fs;
use std::sync::Arc;

use grep_regex::RegexMatcher;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::fs_read::io_failure;
use super::walk::{cancelled, compile_glob, ok_value, result_card, search_card, walk};
use super::{
    DEFAULT_GREP_RESULTS, MAX_GREP_LINE_CHARS, MAX_GREP_RESULTS, Root, args_schema, blocking,
    card_args, parse_args, truncate_str,
};
use crate::pipeline::ToolFailure;
use crate::tool::{SearchHit, ToolDefinition};

/// Upper bound of `grep`'s `context`.
const MAX_GREP_CONTEXT: u64 = 20;

/// The arguments of `grep`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct GrepArgs<'a> {
    /// Regular expression.
    pattern: &'a str,
    /// File or directory to search, relative to the workspace root. Default the root.
    #[serde(borrow)]
    path: Option<&'a str>,
    /// Only search files matching this glob, e.g. `*.rs`.
    #[serde(borrow)]
    glob: Option<&'a str>,
    /// Lines of context before and after each match. Default 0.
    #[schemars(range(min = 0, max = MAX_GREP_CONTEXT))]
    context: Option<u64>,
    #[schemars(
        range(min = 1, max = MAX_GREP_RESULTS),
        description = format!("Most matches to return. Default {DEFAULT_GREP_RESULTS}.")
    )]
    max_results: Option<u64>,
}

pub(crate) fn grep(root: Arc<Root>) -> ToolDefinition {
    ToolDefinition::builder("grep")
        .path_args(root.path_args(true))
        .description(format!(
            "Search file contents under the workspace root with a regular expression (Rust regex \
             syntax, as ripgrep; `(?i)` for case-insensitive). `path` is a file or directory \
             (default the root); `glob` filters files (matched against the file name, or against \
             the path under `path` when it contains `/`); `context` adds that many lines before \
             and after each match. Respects .gitignore; skips binary files. Returns at most \
             `max_results` matches (default {DEFAULT_GREP_RESULTS}) with 1-based line numbers and \
             `truncated: true` when there were more."
        ))
        .parameters(args_schema::<GrepArgs>())
        .output_schema(json!({
            "type": "object",
            "properties": {
                "matches": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "path": {"type": "string", "description": "File, relative to the root."},
                            "line": {"type": "integer", "description": "1-based line number."},
                            "text": {"type": "string", "description": "The matching line, without its line terminator."},
                            "before": {"type": "array", "items": {"type": "string"}, "description": "Lines before the match (only with `context`)."},
                            "after": {"type": "array", "items": {"type": "string"}, "description": "Lines after the match (only with `context`)."}
                        },
                        "required": ["path", "line", "text"],
                        "additionalProperties": false
                    }
                },
                "truncated": {"type": "boolean", "description": "More matches exist than were returned."}
            },
            "required": ["matches", "truncated"],
            "additionalProperties": false
        }))
        .parallel_safe()
        .render(render_grep)
        .present_call(|args| {
            let args: GrepArgs = card_args(args);
            search_card("Grep", args.pattern, args.path, Vec::new())
        })
        .present_result(|args, view| {
            let hits = ok_value(view)
                .and_then(|v| v["matches"].as_array())
                .map(|ms| {
                    ms.iter()
                        .map(|m| SearchHit {
                            path: m["path"].as_str().unwrap_or("").to_owned(),
                            line: m["line"].as_u64().unwrap_or(0),
                            text: m["text"].as_str().unwrap_or("").to_owned(),
                        })
                        .collect()
                })
                .unwrap_or_default();
            let args: GrepArgs = card_args(args);
            result_card("Grep", args.pattern, args.path, view, hits)
        })
        .execute(move |args, exec| {
            let root = root.clone();
            async move { blocking(move || run_grep(&root, &args, &exec.cancel)).await }
        })
        .build()
        .expect("grep builds")
}

/// One match being collected.
struct Hit {
    path: Arc<str>,
    line: u64,
    text: String,
    before: Vec<String>,
    after: Vec<String>,
}

/// Collects the matches of one file, with per-match context.
struct Collector<'a> {
    path: Arc<str>,
    context: u64,
    /// The last `context` lines reported (matches and context lines), for `before`.
    recent: VecDeque<(u64, String)>,
    hits: &'a mut Vec<Hit>,
    /// Index in `hits` of this file's first match.
    first: usize,
    max: usize,
    truncated: &'a mut bool,
}

impl Collector<'_> {
    /// A reported line is `after` context of every earlier match within `context` lines.
    fn feed_after(&mut self, line: u64, text: &str) {
        for hit in self.hits[self.first..].iter_mut().rev() {
            if hit.line + self.context < line {
                break;
            }
            if hit.line < line {
                hit.after.push(text.to_owned());
            }
        }
    }

    fn remember(&mut self, line: u64, text: String) {
        if self.context == 0 {
            return;
        }
        self.recent.push_back((line, text));
        while self.recent.len() as u64 > self.context {
            self.recent.pop_front();
        }
    }
}

/// A line as reported: terminator removed, lossy UTF-8, long lines cut.
fn clean(bytes: &[u8]) -> String {
    let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    let text = String::from_utf8_lossy(bytes);
    if text.len() > MAX_GREP_LINE_CHARS {
        format!("{}…", truncate_str(&text, MAX_GREP_LINE_CHARS))
    } else {
        text.into_owned()
    }
}

impl Sink for Collector<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _s: &Searcher, m: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        let line = m.line_number().unwrap_or(0);
        let text = clean(m.bytes());
        self.feed_after(line, &text);
        if self.hits.len() >= self.max {
            *self.truncated = true;
            return Ok(false);
        }
        let before = self
            .recent
            .iter()
            .filter(|(n, _)| *n < line && n + self.context >= line)
            .map(|(_, t)| t.clone())
            .collect();
        self.hits.push(Hit {
            path: self.path.clone(),
            line,
            text: text.clone(),
            before,
            after: Vec::new(),
        });
        self.remember(line, text);
        Ok(true)
    }

    fn context(&mut self, _s: &Searcher, c: &SinkContext<'_>) -> Result<bool, Self::Error> {
        let line = c.line_number().unwrap_or(0);
        let text = clean(c.bytes());
        self.feed_after(line, &text);
        self.remember(line, text);
        Ok(true)
    }
}

fn run_grep(root: &Root, args: &Value, cancel: &CancellationToken) -> Result<Value, ToolFailure> {
    let args: GrepArgs = parse_args("grep", args)?;
    let pattern = args.pattern;
    let matcher = RegexMatcher::new_line_matcher(pattern)
        .map_err(|e| ToolFailure::new(format!("invalid regular expression `{pattern}`: {e}")))?;
    let filter = args
        .glob
        .map(|g| Ok::<_, ToolFailure>((compile_glob(g, "glob filter")?, g.contains('/'))))
        .transpose()?;
    // The schema bounds both; the clamps keep a pipeline without validation within them.
    let context = args.context.unwrap_or(0).min(MAX_GREP_CONTEXT);
    let max = args
        .max_results
        .unwrap_or(DEFAULT_GREP_RESULTS)
        .clamp(1, MAX_GREP_RESULTS) as usize;
    let target = root.resolve(args.path.unwrap_or("."))?;
    let meta =
        fs::metadata(&target.abs).map_err(|e| io_failure(root, &target.rel, "search", &e))?;
    let base = if meta.is_dir() {
        target.abs.as_path()
    } else {
        target.abs.parent().unwrap_or(&target.abs)
    };

    let mut searcher = SearcherBuilder::new()
        .line_number(true)
        .before_context(context as usize)
        .after_context(context as usize)
        .binary_detection(BinaryDetection::quit(b'\x00'))
        .build();
    let mut hits: Vec<Hit> = Vec::new();
    let mut truncated = false;
    for entry in walk(root, &target.abs) {
        if cancel.is_cancelled() {
            return Err(cancelled());
        }
        let Ok(entry) = entry else { continue };
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        if let Some((glob, by_path)) = &filter {
            let matched = if *by_path {
                entry
                    .path()
                    .strip_prefix(base)
                    .is_ok_and(|p| glob.is_match(p))
            } else {
                glob.is_match(entry.file_name())
            };
            if !matched {
                continue;
            }
        }
        let path: Arc<str> = root.relative(entry.path()).into();
        let first = hits.len();
        let sink = Collector {
            path,
            context,
            recent: VecDeque::new(),
            hits: &mut hits,
            first,
            max,
            truncated: &mut truncated,
        };
        // Unreadable files are skipped, as ripgrep does.
        let _ = searcher.search_path(&matcher, entry.path(), sink);
        if truncated {
            break;
        }
    }

    let matches: Vec<Value> = hits
        .into_iter()
        .map(|h| {
            let mut m = Map::new();
            m.insert("path".into(), Value::String(h.path.to_string()));
            m.insert("line".into(), json!(h.line));
            m.insert("text".into(), Value::String(h.text));
            if context > 0 {
                m.insert("before".into(), json!(h.before));
                m.insert("after".into(), json!(h.after));
            }
            Value::Object(m)
        })
        .collect();
    Ok(json!({"matches": matches, "truncated": truncated}))
}

/// The lines of one file to print: line number -> (is a match, text).
type FileLines<'a> = BTreeMap<u64, (bool, &'a str)>;

/// ripgrep's layout: `path:line:text` for matches, `path-line-text` for context lines, `--`
/// between groups that are not adjacent.
fn render_grep(value: &Value) -> String {
    let matches = value["matches"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    if matches.is_empty() {
        return "(no matches)".to_owned();
    }
    let with_context = matches
        .iter()
        .any(|m| m.get("before").is_some() || m.get("after").is_some());
    // Lines to print, grouped by file in result order: line -> (is a match, text).
    let mut files: Vec<(&str, FileLines<'_>)> = Vec::new();
    for m in matches {
        let path = m["path"].as_str().unwrap_or("");
        if files.last().is_none_or(|(p, _)| *p != path) {
            files.push((path, BTreeMap::new()));
        }
        let lines = &mut files.last_mut().expect("pushed above").1;
        let line = m["line"].as_u64().unwrap_or(0);
        let before = m["before"].as_array().map(Vec::as_slice).unwrap_or(&[]);
        let after = m["after"].as_array().map(Vec::as_slice).unwrap_or(&[]);
        let first = line.saturating_sub(before.len() as u64);
        for (i, text) in before.iter().enumerate() {
            lines
                .entry(first + i as u64)
                .or_insert((false, text.as_str().unwrap_or("")));
        }
        for (i, text) in after.iter().enumerate() {
            lines
                .entry(line + 1 + i as u64)
                .or_insert((false, text.as_str().unwrap_or("")));
        }
        lines.insert(line, (true, m["text"].as_str().unwrap_or("")));
    }
    let mut out: Vec<String> = Vec::new();
    for (path, lines) in &files {
        let mut prev: Option<u64> = None;
        for (n, (is_match, text)) in lines {
            let gap = prev.is_none_or(|p| *n > p + 1);
            if with_context && gap && !out.is_empty() {
                out.push("--".to_owned());
            }
            let sep = if *is_match { ':' } else { '-' };
            out.push(format!("{path}{sep}{n}{sep}{text}"));
            prev = Some(*n);
        }
    }
    if value["truncated"].as_bool() == Some(true) {
        out.push(format!(
            "(stopped after {} matches; narrow the search or raise max_results)",
            matches.len()
        ));
    }
    out.join("\n")
}

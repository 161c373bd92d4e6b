//! What `glob` and `grep` share, on ripgrep's crates: the `ignore` walk (respecting
//! `.gitignore`, `.ignore` and `.git/info/exclude`, inside or outside a git repository; hidden
//! files are included, `.git` is skipped, symlinks are not followed), `globset` patterns,
//! cancellation, and the search card.

use std::path::Path;

use globset::{GlobBuilder, GlobMatcher};
use ignore::WalkBuilder;
use serde_json::Value;

use crate::pipeline::{CallStatus, ToolFailure};
use crate::tool::{Card, ResultView, SearchHit};

/// The walk both tools use: sorted siblings, ignore files respected even outside git.
pub(crate) fn walk(dir: &Path) -> ignore::Walk {
    let mut b = WalkBuilder::new(dir);
    b.hidden(false)
        .require_git(false)
        .follow_links(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(|e| e.file_name() != ".git");
    b.build()
}

/// A glob as both tools read it: `*` stays within one directory.
pub(crate) fn compile_glob(pattern: &str, what: &str) -> Result<GlobMatcher, ToolFailure> {
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| ToolFailure::new(format!("invalid {what} `{pattern}`: {e}")))
}

pub(crate) fn cancelled() -> ToolFailure {
    ToolFailure::new("the search was cancelled")
}

/// The value of a successful call, for the result card.
pub(crate) fn ok_value<'a>(view: &ResultView<'a>) -> Option<&'a Value> {
    (view.status == CallStatus::Ok)
        .then_some(view.value)
        .flatten()
}

/// `Glob PATTERN in PATH` with its hits.
pub(crate) fn search_card(
    verb: &str,
    pattern: &str,
    path: Option<&str>,
    hits: Vec<SearchHit>,
) -> Card {
    let query = pattern.to_owned();
    let mut title = format!("{verb} {query}");
    if let Some(path) = path {
        title.push_str(&format!(" in {path}"));
    }
    Card::Search { title, query, hits }
}

/// The search card of a finished call; a generic one carrying the message when it failed.
pub(crate) fn result_card(
    verb: &str,
    pattern: &str,
    path: Option<&str>,
    view: &ResultView<'_>,
    hits: Vec<SearchHit>,
) -> Card {
    if view.status != CallStatus::Ok {
        return Card::Generic {
            title: format!("{verb} {pattern} failed"),
            body: Some(view.content.to_owned()),
        };
    }
    search_card(verb, pattern, path, hits)
}

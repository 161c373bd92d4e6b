//! What `glob` and `grep` share, on ripgrep's crates: the `ignore` walk (respecting
//! `.gitignore`, `.ignore` and `.git/info/exclude`, inside or outside a git repository; hidden
//! files are included, `.git` is skipped, symlinks are not followed, files a policy hides are
//! left out), `globset` patterns, cancellation, and the search card.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use globset::{GlobBuilder, GlobMatcher};
use ignore::WalkBuilder;
use serde_json::Value;

use super::{Root, paths};
use crate::pipeline::{CallStatus, ToolFailure};
use crate::tool::{Card, FileFilter, ResultView, SearchHit};

/// The walk both tools use: sorted siblings, ignore files respected even outside git. `dir` is
/// resolved (symlink-free) inside the root, so the walk's paths are the files' real paths. Files
/// the policy hides are never yielded (so never read), including `dir` itself when it is one,
/// and directories whose whole content is hidden are not entered.
pub(crate) fn walk(
    root: &Root,
    dir: &Path,
) -> impl Iterator<Item = Result<ignore::DirEntry, ignore::Error>> + use<> {
    let visibility = Visibility {
        hidden: root.hidden(),
        base: root.path.clone(),
    };
    // The walk never filters its starting point (a file `grep` was pointed at, say).
    let top_kept = visibility.keeps(dir, dir.is_dir());
    let mut b = WalkBuilder::new(dir);
    b.hidden(false)
        .require_git(false)
        .follow_links(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(move |e| {
            e.file_name() != ".git"
                && visibility.keeps(e.path(), e.file_type().is_some_and(|t| t.is_dir()))
        });
    b.build().take_while(move |_| top_kept)
}

/// What the policy hides from a walk.
struct Visibility {
    hidden: Option<Arc<dyn FileFilter>>,
    base: PathBuf,
}

impl Visibility {
    /// A file is kept unless hidden; a directory unless everything under it is (a directory a
    /// rule matches by itself may still hold files the rule does not match).
    fn keeps(&self, path: &Path, is_dir: bool) -> bool {
        let Some(hidden) = &self.hidden else {
            return true;
        };
        let rel = paths::relative(&self.base, path);
        if is_dir {
            !hidden.hides_everything_under(&rel)
        } else {
            !hidden.hides(&rel)
        }
    }
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

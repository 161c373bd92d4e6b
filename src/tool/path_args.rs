//! The path-argument capability of tools whose arguments name files under a root (the built-in
//! file tools). A policy uses it to match rules against the file a call reaches rather than the
//! string it was spelled with (`./secret/x`, `src/../secret/x`, an absolute path or a symlink
//! all reach `secret/x`), and to tell the tools' listings which files to leave out.
//!
//! It is crate-visible on purpose: only tools whose bodies really resolve paths this way may
//! carry it. A tool of another source (an upstream MCP server, a tools file) that happens to be
//! called `read_file` cannot claim it, so its arguments are compared as given.

use std::fmt;
use std::sync::{Arc, RwLock};

use serde_json::Value;

/// Which files the listings of a [`PathScope`] leave out. Paths are normalised: relative to the
/// root, `/`-separated, symlinks resolved.
pub(crate) trait FileFilter: Send + Sync + fmt::Debug {
    /// Whether the file at `rel` is left out.
    fn hides(&self, rel: &str) -> bool;
    /// Whether every path below the directory `rel` is left out, so a walk need not enter it.
    fn hides_everything_under(&self, rel: &str) -> bool;
}

type Normaliser = Box<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// One root shared by a catalog's tools: how their path arguments normalise, and the filter the
/// policy installed for their listings.
pub(crate) struct PathScope {
    normalise: Normaliser,
    /// Set after the tools are built (the policy needs their registry paths to pick its rules),
    /// read by every listing call.
    hidden: RwLock<Option<Arc<dyn FileFilter>>>,
}

impl fmt::Debug for PathScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PathScope")
            .field("hidden", &self.hidden())
            .finish_non_exhaustive()
    }
}

impl PathScope {
    /// `normalise` maps an argument to its root-relative form, `None` when it does not resolve
    /// inside the root.
    pub(crate) fn new(normalise: impl Fn(&str) -> Option<String> + Send + Sync + 'static) -> Self {
        PathScope {
            normalise: Box::new(normalise),
            hidden: RwLock::new(None),
        }
    }

    pub(crate) fn normalise(&self, input: &str) -> Option<String> {
        (self.normalise)(input)
    }

    /// The filter in force now (`None`: nothing is hidden).
    pub(crate) fn hidden(&self) -> Option<Arc<dyn FileFilter>> {
        // A poisoned lock still holds a whole value (it is replaced in one assignment).
        self.hidden
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub(crate) fn set_hidden(&self, filter: Option<Arc<dyn FileFilter>>) {
        *self.hidden.write().unwrap_or_else(|e| e.into_inner()) = filter;
    }
}

/// What a tool declares about its path arguments.
#[derive(Clone, Debug)]
pub(crate) struct PathArgs {
    /// The root its paths resolve against, shared with the other tools of its catalog.
    pub(crate) scope: Arc<PathScope>,
    /// Top-level argument keys holding paths.
    pub(crate) keys: &'static [&'static str],
    /// Whether its results show files' names or content (reads, listings, searches), as opposed
    /// to only changing files. Deny rules on such tools hide the files from listings.
    pub(crate) reveals: bool,
}

/// A path argument whose normalised form differs from what was given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct NormalisedPath {
    pub(crate) key: &'static str,
    pub(crate) given: String,
    pub(crate) rel: String,
}

impl PathArgs {
    /// `args` with every path argument replaced by its normalised form, and the ones that
    /// changed; `None` when nothing changed. An argument that does not resolve inside the root
    /// (an escape, a symlink loop) is left as given: the confinement guard refuses that call.
    pub(crate) fn normalise(&self, args: &Value) -> Option<(Value, Vec<NormalisedPath>)> {
        let mut changed = Vec::new();
        for key in self.keys {
            let Some(given) = args.get(*key).and_then(Value::as_str) else {
                continue;
            };
            match self.scope.normalise(given) {
                Some(rel) if rel != given => changed.push(NormalisedPath {
                    key,
                    given: given.to_owned(),
                    rel,
                }),
                _ => {}
            }
        }
        if changed.is_empty() {
            return None;
        }
        let mut normalised = args.clone();
        for n in &changed {
            normalised[n.key] = Value::String(n.rel.clone());
        }
        Some((normalised, changed))
    }
}

//! Path rules on tools that declare path arguments (the built-in file tools): rules see the
//! normalised path, and deny rules hide the files they cover from the tools' listings.
//!
//! **Which deny rules hide files.** A rule hides the files its argument matchers accept when
//! - its decision is `deny`;
//! - its tool globs match the registry path of a tool of the catalog whose results reveal files
//!   (`read_file`, `list_dir`, `glob`, `grep`): a rule only on `write_file`/`edit_file` protects
//!   a file from changes, and the file stays readable, so it stays listed;
//! - it has at least one argument matcher, and every matcher tests a path argument (`path`, or
//!   the pointer `/path`): a rule that also looks at another argument does not deny the file as
//!   such.
//!
//! Its matchers are then applied to each candidate file's normalised path. `ask` rules hide
//! nothing: they gate calls, and the files stay listed (and searched) by the listings.

use std::sync::Arc;

use globset::GlobMatcher;
use serde_json::Value;

use super::rules::{ArgMatcher, Decision, Rule, Test};
use crate::tool::{FileFilter, NormalisedPath, PathArgs, PathScope, ToolRegistry};

/// The files a policy's deny path rules cover, for one catalog's listings.
#[derive(Debug)]
pub(crate) struct HiddenFiles {
    rules: Vec<PathRule>,
}

/// One deny rule's path tests (all must match).
#[derive(Debug)]
struct PathRule {
    tests: Vec<Test>,
    /// For each test a glob `P/**`, the matcher of `P`: a directory matching every `P` has all
    /// its descendants hidden. `None` when some test is not of that form.
    prefixes: Option<Vec<GlobMatcher>>,
}

impl PathRule {
    fn new(matchers: &[ArgMatcher]) -> PathRule {
        let tests: Vec<Test> = matchers.iter().map(|m| m.test.clone()).collect();
        let prefixes = tests
            .iter()
            .map(|t| match t {
                Test::Glob(g) => g
                    .glob()
                    .glob()
                    .strip_suffix("/**")
                    .and_then(|p| ArgMatcher::arg_glob(p).ok()),
                _ => None,
            })
            .collect();
        PathRule { tests, prefixes }
    }
}

impl FileFilter for HiddenFiles {
    fn hides(&self, rel: &str) -> bool {
        let value = Value::String(rel.to_owned());
        self.rules
            .iter()
            .any(|r| r.tests.iter().all(|t| t.matches(&value)))
    }

    fn hides_everything_under(&self, rel: &str) -> bool {
        // `P/**` matches `D/x` for every `x` when `D` matches `P` (the glob is `P`, then `/`,
        // then anything), so no descendant of `D` can escape that test.
        self.rules.iter().any(|r| {
            r.prefixes
                .as_ref()
                .is_some_and(|ps| ps.iter().all(|p| p.is_match(rel)))
        })
    }
}

/// Whether `key` (a top-level key or a JSON pointer) names one of `keys`.
fn is_path_key(key: &str, keys: &[&str]) -> bool {
    let key = key.strip_prefix('/').unwrap_or(key);
    keys.contains(&key)
}

/// The deny rules that hide files of one scope, given the registry paths of its tools.
pub(crate) fn hidden_files(rules: &[Rule], tools: &[(&str, &PathArgs)]) -> Option<HiddenFiles> {
    let keys: Vec<&str> = tools
        .iter()
        .flat_map(|(_, a)| a.keys.iter().copied())
        .collect();
    let rules: Vec<PathRule> = rules
        .iter()
        .filter(|r| r.decision == Decision::Deny && !r.args.is_empty())
        .filter(|r| r.args.iter().all(|m| is_path_key(&m.key, &keys)))
        .filter(|r| {
            tools
                .iter()
                .any(|(path, a)| a.reveals && r.matches_tool(path))
        })
        .map(|r| PathRule::new(&r.args))
        .collect();
    (!rules.is_empty()).then_some(HiddenFiles { rules })
}

/// The tools of one scope, by registry path.
type ScopeTools<'a> = Vec<(&'a str, &'a PathArgs)>;

/// Installs [`hidden_files`] into the scope of every tool of `registry` that declares path
/// arguments (scopes are shared by a catalog's tools, found by identity).
pub(crate) fn install(rules: &[Rule], registry: &ToolRegistry) {
    let mut scopes: Vec<(Arc<PathScope>, ScopeTools<'_>)> = Vec::new();
    for registered in registry.registered() {
        let Some(args) = registered.tool.path_args() else {
            continue;
        };
        let entry = (registered.path.as_str(), args);
        match scopes.iter_mut().find(|(s, _)| Arc::ptr_eq(s, &args.scope)) {
            Some((_, tools)) => tools.push(entry),
            None => scopes.push((args.scope.clone(), vec![entry])),
        }
    }
    for (scope, tools) in scopes {
        let filter = hidden_files(rules, &tools).map(|h| Arc::new(h) as Arc<dyn FileFilter>);
        scope.set_hidden(filter);
    }
}

/// `path "./secret/x" (normalised: secret/x)` for each changed argument, for reasons.
pub(crate) fn describe(changed: &[NormalisedPath]) -> String {
    changed
        .iter()
        .map(|n| format!("{} {:?} (normalised: {})", n.key, n.given, n.rel))
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Policy;

    fn scope() -> Arc<PathScope> {
        Arc::new(PathScope::new(|s| Some(s.to_owned())))
    }

    fn filter(text: &str, tools: &[(&str, bool)]) -> Option<HiddenFiles> {
        let policy = Policy::from_toml_str(text, "p.toml").unwrap();
        let scope = scope();
        let args: Vec<PathArgs> = tools
            .iter()
            .map(|(_, reveals)| PathArgs {
                scope: scope.clone(),
                keys: &["path"],
                reveals: *reveals,
            })
            .collect();
        let tools: Vec<(&str, &PathArgs)> = tools.iter().map(|t| t.0).zip(&args).collect();
        hidden_files(&policy.inner.rules, &tools)
    }

    const READS: &[(&str, bool)] = &[("read_file", true), ("write_file", false)];

    #[test]
    fn deny_rules_on_revealing_tools_with_only_path_matchers_hide_files() {
        let rule = |tools: &str, decision: &str, args: &str| {
            format!("[[rule]]\ntools = [{tools}]\ndecision = \"{decision}\"\n{args}\n")
        };
        let glob = "args.path = { glob = \"secret/**\" }";
        let hides = |text: &str| filter(text, READS).is_some_and(|h| h.hides("secret/k"));
        assert!(hides(&rule("\"read_file\"", "deny", glob)));
        assert!(hides(&rule("\"**\"", "deny", glob)));
        assert!(hides(&rule(
            "\"read_file\"",
            "deny",
            "args.\"/path\" = { regex = \"^secret/\" }"
        )));
        // Changes only, asks, tool-wide denies and mixed matchers hide nothing.
        assert!(!hides(&rule("\"write_file\"", "deny", glob)));
        assert!(!hides(&rule("\"read_file\"", "ask", glob)));
        assert!(!hides(&rule("\"read_file\"", "deny", "")));
        assert!(!hides(&rule(
            "\"read_file\"",
            "deny",
            &format!("{glob}\nargs.offset = {{ equals = 1 }}")
        )));
    }

    #[test]
    fn a_prefix_glob_hides_whole_directories() {
        let text = "[[rule]]\ntools = [\"read_file\"]\ndecision = \"deny\"\nargs.path = { glob = \"**/secret/**\" }\n";
        let h = filter(text, READS).unwrap();
        assert!(h.hides("a/secret/k") && h.hides("secret/k") && !h.hides("secret"));
        assert!(h.hides_everything_under("secret") && h.hides_everything_under("a/b/secret"));
        assert!(!h.hides_everything_under("secrets") && !h.hides_everything_under("a"));
        let text = "[[rule]]\ntools = [\"read_file\"]\ndecision = \"deny\"\nargs.path = { glob = \"secret*\" }\n";
        let h = filter(text, READS).unwrap();
        assert!(h.hides("secret") && !h.hides("secret/k"));
        assert!(!h.hides_everything_under("secret"));
    }
}

//! Compiled rules: tool globs over sandbox paths, argument matchers, and the decision order
//! (deny beats ask beats allow).

use globset::{GlobBuilder, GlobMatcher};
use serde_json::Value;

/// What a rule (or the policy's `default`) decides. Ordered: `Allow < Ask < Deny`, so the
/// strongest matching decision wins.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Decision {
    /// The call proceeds.
    Allow,
    /// The call goes to the embedder's approver; no approver, a refusal or a timeout is a
    /// denial.
    Ask,
    /// The call is refused with `DENIED` (`details.by = "policy"`).
    Deny,
}

impl Decision {
    /// Reads the file form (`"allow"`, `"ask"`, `"deny"`); `None` for anything else.
    pub fn parse(text: &str) -> Option<Decision> {
        match text {
            "allow" => Some(Decision::Allow),
            "ask" => Some(Decision::Ask),
            "deny" => Some(Decision::Deny),
            _ => None,
        }
    }

    /// The file form, the inverse of [`parse`](Self::parse).
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Allow => "allow",
            Decision::Ask => "ask",
            Decision::Deny => "deny",
        }
    }
}

/// A glob over sandbox paths (`grep`, `memory.search_nodes`). `.` separates the namespace from
/// the name and is literal: `*` never crosses it (`memory.*` is every tool of `memory`, `*` every
/// top-level tool), `**` does (`**` is every tool, namespaced or not).
#[derive(Clone, Debug)]
pub(crate) struct ToolGlob {
    pub(crate) text: String,
    matcher: GlobMatcher,
}

impl ToolGlob {
    pub(crate) fn new(pattern: &str) -> Result<ToolGlob, String> {
        if pattern.is_empty() {
            return Err("empty tool glob (use `**` for every tool)".into());
        }
        if pattern.contains('/') {
            return Err(format!(
                "tool glob `{pattern}` contains `/`; sandbox paths use `.` between namespace and name (`memory.*`)"
            ));
        }
        let glob = GlobBuilder::new(&pattern.replace('.', "/"))
            .literal_separator(true)
            .build()
            .map_err(|e| format!("bad tool glob `{pattern}`: {}", e.kind()))?;
        Ok(ToolGlob {
            text: pattern.to_string(),
            matcher: glob.compile_matcher(),
        })
    }

    pub(crate) fn is_match(&self, path: &str) -> bool {
        self.matcher.is_match(path.replace('.', "/"))
    }
}

/// How one argument is tested. Globs and regexes match string values only (anything else does
/// not match); `equals` compares JSON values (numbers by value: `1` equals `1.0`).
#[derive(Clone, Debug)]
pub(crate) enum Test {
    /// `*` stays inside one `/`-separated segment, `**` crosses them (path-like arguments).
    Glob(GlobMatcher),
    /// Unanchored search (`regex` crate syntax); anchor with `^...$` for a whole-value match.
    Regex(regex::Regex),
    Equals(Value),
}

impl Test {
    pub(crate) fn matches(&self, value: &Value) -> bool {
        match (self, value) {
            (Test::Glob(glob), Value::String(s)) => glob.is_match(s),
            (Test::Regex(re), Value::String(s)) => re.is_match(s),
            (Test::Equals(Value::Number(a)), Value::Number(b)) => a.as_f64() == b.as_f64(),
            (Test::Equals(expected), actual) => expected == actual,
            _ => false,
        }
    }
}

/// One argument matcher: where the value is, and how it is tested. A missing argument does not
/// match.
#[derive(Clone, Debug)]
pub(crate) struct ArgMatcher {
    /// A top-level key (`path`), or a JSON pointer when it starts with `/` (`/options/mode`).
    pub(crate) key: String,
    pub(crate) test: Test,
}

impl ArgMatcher {
    pub(crate) fn arg_glob(pattern: &str) -> Result<GlobMatcher, String> {
        GlobBuilder::new(pattern)
            .literal_separator(true)
            .build()
            .map(|g| g.compile_matcher())
            .map_err(|e| format!("bad argument glob `{pattern}`: {}", e.kind()))
    }

    fn is_match(&self, args: &Value) -> bool {
        let found = if self.key.starts_with('/') {
            args.pointer(&self.key)
        } else {
            args.get(&self.key)
        };
        found.is_some_and(|value| self.test.matches(value))
    }
}

/// A compiled `[[rule]]`: it matches a call when one of its tool globs matches the path and
/// every argument matcher matches.
#[derive(Clone, Debug)]
pub(crate) struct Rule {
    pub(crate) tools: Vec<ToolGlob>,
    pub(crate) decision: Decision,
    pub(crate) reason: String,
    pub(crate) args: Vec<ArgMatcher>,
    /// 1-based line of the rule in its file (for lint warnings).
    pub(crate) line: usize,
}

impl Rule {
    pub(crate) fn matches_tool(&self, path: &str) -> bool {
        self.tools.iter().any(|g| g.is_match(path))
    }

    pub(crate) fn matches(&self, path: &str, args: &Value) -> bool {
        self.matches_tool(path) && self.args.iter().all(|m| m.is_match(args))
    }
}

/// The strongest decision among the matching rules, with the reasons of every rule at that
/// level; `None` when no rule matches.
pub(crate) fn strongest<'a>(
    rules: &'a [Rule],
    path: &str,
    args: &Value,
) -> Option<(Decision, Vec<&'a str>)> {
    let mut best: Option<(Decision, Vec<&str>)> = None;
    for rule in rules.iter().filter(|r| r.matches(path, args)) {
        match &mut best {
            Some((d, reasons)) if *d == rule.decision => reasons.push(&rule.reason),
            Some((d, _)) if *d > rule.decision => {}
            _ => best = Some((rule.decision, vec![&rule.reason])),
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn star_stays_inside_a_namespace_and_double_star_crosses() {
        let g = ToolGlob::new("memory.*").unwrap();
        assert!(g.is_match("memory.search_nodes"));
        assert!(!g.is_match("memory"));
        assert!(!g.is_match("grep"));
        let top = ToolGlob::new("*").unwrap();
        assert!(top.is_match("grep") && !top.is_match("memory.search_nodes"));
        let all = ToolGlob::new("**").unwrap();
        assert!(all.is_match("grep") && all.is_match("memory.search_nodes"));
        let w = ToolGlob::new("fs.write_*").unwrap();
        assert!(w.is_match("fs.write_file") && !w.is_match("fsXwrite_file"));
    }

    #[test]
    fn bad_tool_globs_are_refused() {
        assert!(ToolGlob::new("").is_err());
        assert!(ToolGlob::new("a/b").is_err());
        assert!(ToolGlob::new("[abc").is_err());
    }
}

//! The policy file as written: raw TOML shapes (every key known, every value spanned) and the
//! error type that points at `FILE:LINE:COL`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;
use toml::Spanned;

/// Why a policy could not be loaded. `Invalid` reads `FILE:LINE:COL: what was wrong`, with
/// 1-based line and column (in characters), for syntax and semantic errors alike.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PolicyError {
    /// The policy file could not be read.
    #[error("{}: cannot read the policy file: {source}", path.display())]
    Read {
        /// The file that was asked for.
        path: PathBuf,
        /// Why reading it failed.
        #[source]
        source: std::io::Error,
    },
    /// The text is not a valid policy: a TOML syntax error or a semantic one (unknown key or
    /// decision, bad glob or regex, limit out of range, ...).
    #[error("{origin}:{line}:{column}: {message}")]
    Invalid {
        /// Name of the text in messages, usually the file path.
        origin: String,
        /// 1-based line of the offending spot.
        line: usize,
        /// 1-based column on `line`, in characters.
        column: usize,
        /// What was wrong, often with a hint of how to fix it.
        message: String,
    },
}

impl PolicyError {
    /// An error at byte offset `at` of `text`.
    pub(super) fn at(origin: &str, text: &str, at: usize, message: impl Into<String>) -> Self {
        let (line, column) = line_col(text, at);
        PolicyError::Invalid {
            origin: origin.to_string(),
            line,
            column,
            message: message.into(),
        }
    }

    /// Wraps a `toml` error (syntax, unknown key, wrong type, missing key) with its position and
    /// a hint of what to do.
    pub(super) fn from_toml(origin: &str, text: &str, e: &toml::de::Error) -> Self {
        let at = e.span().map_or(0, |s| s.start);
        let mut message = e.message().trim().replace('\n', "; ");
        if message.starts_with("unknown field") {
            message.push_str(" (remove the key or fix its spelling; see examples/policy.toml)");
        } else if message.starts_with("missing field") {
            message.push_str(" (every [[rule]] needs `tools` and `decision`)");
        } else if message.starts_with("invalid type") {
            message.push_str(" (see examples/policy.toml for the type of each key)");
        }
        PolicyError::at(origin, text, at, message)
    }
}

/// 1-based line and column (in characters) of byte offset `at`.
fn line_col(text: &str, at: usize) -> (usize, usize) {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[line_start..].chars().count() + 1)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPolicy {
    pub default: Option<Spanned<String>>,
    pub program_approval: Option<Spanned<String>>,
    pub limits: Option<RawLimits>,
    pub visible: Option<RawVisible>,
    #[serde(default, rename = "rule")]
    pub rules: Vec<Spanned<RawRule>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRule {
    pub tools: Spanned<Vec<Spanned<String>>>,
    pub decision: Spanned<String>,
    pub reason: Option<String>,
    #[serde(default)]
    pub args: BTreeMap<Spanned<String>, Spanned<RawMatcher>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawMatcher {
    pub glob: Option<Spanned<String>>,
    pub regex: Option<Spanned<String>>,
    pub equals: Option<toml::Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawVisible {
    pub include: Option<Vec<Spanned<String>>>,
    #[serde(default)]
    pub exclude: Vec<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLimits {
    pub timeout_ms: Option<Spanned<i64>>,
    pub heap_mb: Option<Spanned<i64>>,
    pub max_tool_calls: Option<Spanned<i64>>,
    pub max_in_flight_calls: Option<Spanned<i64>>,
    pub console_bytes: Option<Spanned<i64>>,
    pub return_bytes: Option<Spanned<i64>>,
    pub program_bytes: Option<Spanned<i64>>,
    pub call_arg_bytes: Option<Spanned<i64>>,
    pub call_result_bytes: Option<Spanned<i64>>,
    pub output_bytes: Option<Spanned<i64>>,
    pub workers: Option<Spanned<i64>>,
    pub waiting_workers: Option<Spanned<i64>>,
}

/// Parses the text into the raw shapes.
pub(super) fn parse(text: &str, origin: &str) -> Result<RawPolicy, PolicyError> {
    toml::from_str(text).map_err(|e| PolicyError::from_toml(origin, text, &e))
}

#[cfg(test)]
mod tests {
    use super::line_col;

    #[test]
    fn positions_are_one_based_in_characters() {
        let text = "a = 1\nbé = 2\n";
        assert_eq!(line_col(text, 0), (1, 1));
        assert_eq!(line_col(text, 6), (2, 1));
        assert_eq!(line_col(text, 9), (2, 3));
    }
}

//! How a result is shown: the default render of a canonical value into model-visible content,
//! and presenter cards (DESIGN.md section 6), render intents a UI draws without special-casing
//! tool names. Presenters are pure functions of (args, durable result), so a replayed session log
//! yields the same cards as the live run.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::call::{CallStatus, Typed};

/// One hit of a search card.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchHit {
    /// The file's path.
    pub path: String,
    /// 1-based line number.
    pub line: u64,
    /// The matching line.
    pub text: String,
}

/// A card: `{kind, title, ...}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Card {
    /// Anything: a title and an optional body.
    Generic {
        /// What the card is about.
        title: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        /// Text under the title.
        body: Option<String>,
    },
    /// A command and its output.
    Terminal {
        /// What the card is about.
        title: String,
        /// The command run.
        command: String,
        #[serde(default)]
        /// Its output.
        output: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        /// Its exit code; `None` while it runs or when it did not report one.
        exit_code: Option<i64>,
    },
    /// A change to a file.
    Diff {
        /// What the card is about.
        title: String,
        /// The file changed.
        path: String,
        /// The change as a unified diff.
        unified: String,
    },
    /// Search results.
    Search {
        /// What the card is about.
        title: String,
        /// What was searched for.
        query: String,
        /// The hits.
        hits: Vec<SearchHit>,
    },
    /// Part of a file that was read.
    Read {
        /// What the card is about.
        title: String,
        /// The file read.
        path: String,
        /// First and last line shown, 1-based and inclusive.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        range: Option<[u64; 2]>,
        /// The text read.
        text: String,
    },
    /// A web page.
    Web {
        /// What the card is about.
        title: String,
        /// The page's address.
        url: String,
        /// A summary of the page.
        summary: String,
    },
}

impl Card {
    /// The card used when a tool has no presenter (or its presenter panicked).
    pub fn generic(title: impl Into<String>) -> Self {
        Card::Generic {
            title: title.into(),
            body: None,
        }
    }
}

/// The durable result a `present_result` presenter sees: exactly what the session log keeps.
#[derive(Clone, Copy, Debug)]
pub struct ResultView<'a> {
    /// `ok` or `error`.
    pub status: CallStatus,
    /// The error code, on error.
    pub code: Option<&'a str>,
    /// The canonical value, on success.
    pub value: Option<&'a Value>,
    /// The model-visible content.
    pub content: &'a str,
    /// The typed value of an `execute_typed` body (absent for a replayed or replaced value).
    pub typed: Option<&'a Typed>,
}

/// Strings are shown raw; anything else as compact JSON (cheapest in tokens for the model).
pub fn default_render(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        // `to_string` goes through `fmt`; the serializer writes straight into the buffer.
        other => serde_json::to_string(other).unwrap_or_default(),
    }
}

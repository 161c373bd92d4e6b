//! One problem with a value (arguments or output), located by a JSON pointer.

use std::fmt;

use serde::{Deserialize, Serialize};

/// One problem with a value: where (JSON pointer, `""` is the root) and what.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArgIssue {
    /// JSON pointer to the offending value (`"/items/0/name"`); `""` is the whole value.
    pub path: String,
    /// What is wrong there, in plain words.
    pub message: String,
}

impl ArgIssue {
    /// An issue at JSON pointer `path`.
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        ArgIssue {
            path: path.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for ArgIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = if self.path.is_empty() {
            "/"
        } else {
            &self.path
        };
        write!(f, "{path}: {}", self.message)
    }
}

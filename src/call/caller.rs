//! Who issued a call, how it ended, and what hooks attached to it.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// Who issued a call. Serialises as `{"kind":"direct"}` or
/// `{"kind":"code_mode","run_id":"r_..","seq":3}` (DESIGN.md section 8).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Caller {
    /// Issued by the harness itself (including `run_code`); the durable `tool/result` event is
    /// written for these calls only.
    Direct,
    /// Issued by a `run_code` program; emits live `tools/*` observations only.
    CodeMode {
        /// Id of the run that issued the call (`r_...`).
        run_id: Arc<str>,
        /// 1-based position of the call among those the program issued.
        seq: u64,
    },
}

impl Caller {
    /// A nested call of run `run_id`, the `seq`-th the program issued.
    pub fn code_mode(run_id: impl Into<Arc<str>>, seq: u64) -> Self {
        Caller::CodeMode {
            run_id: run_id.into(),
            seq,
        }
    }

    /// Direct calls are durable; nested code-mode calls are observations only.
    pub fn is_durable(&self) -> bool {
        matches!(self, Caller::Direct)
    }
}

impl fmt::Display for Caller {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Caller::Direct => f.write_str("direct"),
            Caller::CodeMode { run_id, seq } => write!(f, "code_mode:{run_id}:{seq}"),
        }
    }
}

/// A context attachment from a post-execute hook (`{kind, text}`, DESIGN.md section 3).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextEntry {
    /// Free-form label chosen by the hook (e.g. `"note"`).
    pub kind: String,
    /// The attached text.
    pub text: String,
}

impl ContextEntry {
    /// An attachment of the given kind and text.
    pub fn new(kind: impl Into<String>, text: impl Into<String>) -> Self {
        ContextEntry {
            kind: kind.into(),
            text: text.into(),
        }
    }
}

/// `ok` or `error`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallStatus {
    /// The call produced a value and content.
    Ok,
    /// The call ended with a [`CallError`](crate::call::CallError).
    Error,
}

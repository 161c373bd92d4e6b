//! The static plan of a program (the tool calls its source names, and what the analysis cannot
//! see): a shared term, because the sandbox computes it ([`plan`](crate::sandbox::plan)), the
//! pipeline pre-approves by it ([`ApprovedPlan`]) and the outcome and the audit log carry it.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What a program can call, as far as its source shows.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProgramPlan {
    /// Every place the program names a tool, in source order.
    pub calls: Vec<PlannedCall>,
    /// Every place the analysis cannot follow, in source order.
    pub dynamic: Vec<DynamicAccess>,
}

impl ProgramPlan {
    /// Whether the program may call tools the plan does not name.
    pub fn may_call_any(&self) -> bool {
        !self.dynamic.is_empty()
    }

    /// Whether a call of `path` is covered by the plan: a planned call of exactly `path`, or a
    /// reference to `path` or to a namespace above it. A program that may call any tool covers
    /// nothing beyond what it names.
    pub fn covers(&self, path: &str) -> bool {
        self.calls.iter().any(|c| {
            c.path == path
                || (!c.called
                    && path
                        .strip_prefix(c.path.as_str())
                        .is_some_and(|rest| rest.starts_with('.')))
        })
    }
}

/// One place the program names a tool.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlannedCall {
    /// The sandbox path named (`grep`, `github.create_issue`); for a reference, possibly a
    /// namespace.
    pub path: String,
    /// 1-based line in the program's source.
    pub line: u32,
    /// 1-based column.
    pub column: u32,
    /// Called right there (`tools.x(...)`); `false`: a reference used some other way.
    pub called: bool,
    /// The arguments, when they are a constant the source spells out (`{}` for none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Value>,
}

/// A place where the program reaches tools in a way the analysis cannot follow.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DynamicAccess {
    /// What the program does there.
    pub kind: DynamicKind,
    /// The path known before the blind spot (`ns` in `tools.ns[name]`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// 1-based line.
    pub line: u32,
    /// 1-based column.
    pub column: u32,
}

/// Why the analysis cannot follow a use of `tools`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DynamicKind {
    /// `tools[name]`: a name computed at run time.
    Computed,
    /// `const t = tools`, `t = tools.ns`: another name for `tools` or a namespace.
    Aliased,
    /// `const { grep } = tools`.
    Destructured,
    /// `f(tools)`, `{...tools}`, `[tools]`: `tools` handed to other code.
    Passed,
    /// `eval`, `Function`, `globalThis`, `self`, `window`: code or globals the analysis
    /// cannot see through.
    DynamicCode,
}

impl DynamicKind {
    /// What the program does there, in words.
    pub fn describe(self) -> &'static str {
        match self {
            DynamicKind::Computed => "a tool name computed at run time (tools[name])",
            DynamicKind::Aliased => "tools under another name",
            DynamicKind::Destructured => "tools destructured",
            DynamicKind::Passed => "tools handed to other code",
            DynamicKind::DynamicCode => "dynamic code or globals (eval, Function, globalThis)",
        }
    }
}

/// Put on a run's extensions once the approver has approved the whole program: the `ask`
/// decisions of its nested calls whose tool path the plan covers ([`ProgramPlan::covers`]) are
/// answered yes without asking again. `deny` stays `deny`, and calls outside the plan still ask.
/// Only the host puts it there; a program has no way to reach a run's extensions.
#[derive(Clone, Debug)]
pub struct ApprovedPlan(pub Arc<ProgramPlan>);

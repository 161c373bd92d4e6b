//! The ground floor: the terms every layer shares, and nothing else. `tool`, `pipeline`,
//! `sandbox`, `sdk` and the harness all read this module; it imports no other module of the
//! crate (see `docs/ARCHITECTURE.md` and the layering test).
//!
//! - who issued a call ([`Caller`]) and how it ended ([`CallStatus`], [`CallError`] with its
//!   stable [`ErrorCode`], [`ContextEntry`] attachments);
//! - what a tool body may fail with ([`ToolFailure`]);
//! - typed per-call data ([`Extensions`], [`RunId`]) and typed values ([`Typed`]);
//! - the limits of a run and of each call ([`Limits`], [`CallLimits`]);
//! - the static plan of a program ([`ProgramPlan`]) and its approval ([`ApprovedPlan`]);
//! - ids and timestamps.

mod caller;
mod code;
mod error;
mod extensions;
pub(crate) mod ids;
mod issue;
mod limits;
mod plan;
mod typed;

pub use caller::{CallStatus, Caller, ContextEntry};
pub use code::ErrorCode;
pub use error::{CallError, DeniedBy, ErrorKind, HookError, LimitKind, ToolFailure};
pub use extensions::{CallWave, Extensions, RunId, TrackWaves};
pub use issue::ArgIssue;
pub(crate) use limits::json_size;
pub use limits::{CANCEL_GRACE, CallLimits, Limits, MIB};
pub use plan::{ApprovedPlan, DynamicAccess, DynamicKind, PlannedCall, ProgramPlan};
pub use typed::Typed;
pub(crate) use typed::TypedSlot;

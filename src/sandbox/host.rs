//! The boundary between a run and the tools it may call. The sandbox knows nothing about the
//! pipeline: Code Mode implements [`ToolHost`] over it, and every `tools.x(args)` of a program
//! becomes one [`ToolHost::call`].

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::watchdog::RunControl;
use crate::call::{CallError, ContextEntry, Extensions};

/// What a run's program may call.
pub trait ToolHost: Send + Sync + 'static {
    /// The sandbox paths visible to programs: `grep`, `memory.search_nodes`, ...
    fn paths(&self) -> Vec<String>;

    /// Execute one call. The future runs on the sandbox worker; implementations that need their
    /// own runtime (the pipeline) spawn onto it and await the handle.
    fn call(&self, request: ToolRequest) -> BoxFuture<'static, Result<ToolReply, CallError>>;
}

/// One call issued by a program.
pub struct ToolRequest {
    /// The sandbox path the program used (may name no tool: the host answers `UNKNOWN_TOOL`).
    pub path: String,
    /// The arguments after the value mapping of DESIGN.md §5 (`null` when unconvertible).
    pub args: Value,
    /// Why the arguments could not be converted (a cycle, a throwing getter, a proxy trap): the
    /// host must answer `INVALID_ARGS` without running the tool.
    pub unconvertible: Option<String>,
    /// Id of the run that issued the call (caller provenance `code_mode{run_id, seq}`).
    pub run_id: String,
    /// 1-based sequence number of this call among those the run issued.
    pub seq: u64,
    /// Its [`CallWave`](crate::call::CallWave): 1 plus the highest wave among the calls whose
    /// results the program had received when it issued this one; `None` unless the run asked
    /// for waves ([`TrackWaves`](crate::call::TrackWaves) in its extensions).
    pub wave: Option<u64>,
    /// Cancelled when the run ends while the call is in flight. It is the run's own token,
    /// shared by all its calls: watch it, never cancel it (make a `child_token()` to stop one
    /// call's work).
    pub cancel: CancellationToken,
    /// Pauses the run's deadline while the call awaits an approver.
    pub deadline: DeadlinePause,
    /// The extensions of the run ([`RunOptions::extensions`](super::RunOptions)), for the host
    /// to hand on to the call.
    pub extensions: Extensions,
}

impl std::fmt::Debug for ToolRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolRequest")
            .field("path", &self.path)
            .field("args", &self.args)
            .field("unconvertible", &self.unconvertible)
            .field("run_id", &self.run_id)
            .field("seq", &self.seq)
            .field("wave", &self.wave)
            .field("extensions", &self.extensions)
            .finish_non_exhaustive()
    }
}

/// A successful call, as the program will see it: its value, and the context attachments
/// (`{kind, text}`) of post-execute hooks. A failed call is a [`CallError`]: the program gets a
/// rejected promise with a `ToolError` carrying its code, message and details. Build one with
/// [`ToolReply::new`] and set its other fields: it also has a field of the sandbox's own.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ToolReply {
    /// The call's value.
    pub value: Value,
    /// Context attachments of post-execute hooks.
    pub contexts: Vec<ContextEntry>,
    /// The compact JSON text of `value` (`serde_json::to_string(&value)`), when the host
    /// already has it: the sandbox hands it to the program as is instead of serialising the
    /// value again (a large result is then written once). `None`: the sandbox serialises.
    #[serde(skip)]
    pub json: Option<String>,
    /// The value as the engine is handed it, set by the sandbox alone: a worker process
    /// receives a structured result from its host so (`process/frame.rs`), and `value` is then
    /// `null`.
    #[serde(skip)]
    pub(crate) encoded: Option<EncodedValue>,
}

impl ToolReply {
    /// A reply with no context attachments.
    pub fn new(value: Value) -> ToolReply {
        ToolReply {
            value,
            contexts: Vec::new(),
            json: None,
            encoded: None,
        }
    }

    /// A reply whose value is `encoded`.
    pub(crate) fn encoded(encoded: EncodedValue, contexts: Vec<ContextEntry>) -> ToolReply {
        ToolReply {
            value: Value::Null,
            contexts,
            json: None,
            encoded: Some(encoded),
        }
    }
}

/// A structured value (an array or an object) as the engine is handed it, and the size of its
/// compact JSON text, which the run's figures count.
#[derive(Clone, PartialEq)]
pub(crate) struct EncodedValue {
    pub format: Encoding,
    pub bytes: Vec<u8>,
    pub size: u64,
}

/// How an [`EncodedValue`]'s bytes hold it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) enum Encoding {
    /// The engine's binary object format (`handover.rs`).
    Binary,
    /// Its compact JSON text, for what the binary format declines (deeper than it nests).
    Json,
}

impl EncodedValue {
    /// `value` (an array or an object) as an engine takes it: in the engine's binary object
    /// format when the format carries it in at most `binary_up_to` bytes (0: never), else as its
    /// JSON text. `json` is that text when the host already wrote it; its size, either way, is
    /// what the run's `bytes_kept_in_sandbox` counts, in both isolation modes. The value is
    /// freed here, before the engine builds its copy.
    pub(crate) fn of(value: Value, json: Option<String>, binary_up_to: usize) -> EncodedValue {
        let size = json
            .as_ref()
            .map_or_else(|| crate::call::json_size(&value), |text| text.len() as u64);
        #[cfg(not(feature = "v8"))]
        if binary_up_to > 0
            && let Some(bytes) = super::handover::engine_bytes(&value)
            && bytes.len() <= binary_up_to
        {
            return EncodedValue {
                format: Encoding::Binary,
                bytes,
                size,
            };
        }
        #[cfg(feature = "v8")]
        let _ = binary_up_to;
        let text = json.unwrap_or_else(|| value.to_string());
        EncodedValue {
            format: Encoding::Json,
            bytes: text.into_bytes(),
            size,
        }
    }
}

impl std::fmt::Debug for EncodedValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EncodedValue")
            .field("format", &self.format)
            .field("bytes", &self.bytes.len())
            .field("size", &self.size)
            .finish()
    }
}

/// The tool side of a run as it travels to its worker: the host, the run's id and the
/// extensions handed on to each call.
#[derive(Clone)]
pub(crate) struct RunTools {
    pub host: Arc<dyn ToolHost>,
    pub run_id: String,
    pub extensions: Extensions,
}

/// A handle that stops and restarts the run's deadline clock (nested pauses are counted).
#[derive(Clone)]
pub struct DeadlinePause(pub(crate) Arc<dyn DeadlineClock>);

/// Whatever keeps a run's deadline: the run's own control in this process, or a worker
/// process reached over its pipe.
pub(crate) trait DeadlineClock: Send + Sync {
    fn pause(&self);
    fn resume(&self);
}

impl DeadlineClock for RunControl {
    fn pause(&self) {
        RunControl::pause(self);
    }

    fn resume(&self) {
        RunControl::resume(self);
    }
}

impl std::fmt::Debug for DeadlinePause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DeadlinePause")
    }
}

impl DeadlinePause {
    /// Stop the deadline clock; every `pause` must be matched by one [`resume`](Self::resume).
    pub fn pause(&self) {
        self.0.pause();
    }

    /// Undo one [`pause`](Self::pause); the clock runs again, with the paused time added to the
    /// deadline, once every pause is resumed.
    pub fn resume(&self) {
        self.0.resume();
    }
}

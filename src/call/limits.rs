//! The limits of DESIGN.md §5: one [`Limits`] per run, with the per-call part nested in it.
//! The sandbox enforces the run's fields; the pipeline enforces [`CallLimits`]; the `run_code`
//! description states both. Every field has the documented default.

use std::time::Duration;

/// One MiB, the unit of the heap flags.
pub const MIB: usize = 1024 * 1024;

/// How long a tool body that had started when its call was cancelled may take to finish.
/// Until its body starts, a cancelled call stops at once and has no effect. Once it has
/// started, dropping it would not undo what it did (a file write on a blocking thread still
/// lands) and would leave no record, so it is told (its token fires) and awaited, and its own
/// outcome is reported. A body still running after this grace is dropped and reported as
/// abandoned (`CANCELLED`, `details.executed = true`): what it did is unknown. A body that
/// answers the cancellation with a failure (a killed `shell` command) is also `CANCELLED`
/// with `details.executed = true`: it stopped part-way.
pub const CANCEL_GRACE: Duration = Duration::from_secs(2);

/// Limits applied to one run. `Limits::default()` gives the defaults of DESIGN.md §5.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Limits {
    /// Wall-clock deadline; the isolate is terminated when it passes (status `timeout`).
    pub deadline: Duration,
    /// Heap limit of the isolate (status `out_of_memory` when reached).
    pub heap_bytes: usize,
    /// Console bytes kept; later entries are dropped behind one marker entry.
    pub console_bytes: usize,
    /// Largest serialized return value (status `limit_exceeded` when larger).
    pub return_bytes: usize,
    /// Largest program accepted (rejected before running, status `error`).
    pub program_bytes: usize,
    /// Tool calls per run (status `limit_exceeded` on the call past it).
    pub tool_calls: u64,
    /// Tool calls in flight at once; further calls queue.
    pub in_flight_calls: usize,
    /// Model-visible content of a run (the `run_code` render), cut with a marker.
    pub output_bytes: usize,
    /// The limits of each tool call the run makes (enforced by the pipeline).
    pub call: CallLimits,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            deadline: Duration::from_secs(30),
            heap_bytes: 256 * MIB,
            console_bytes: MIB,
            return_bytes: 4 * MIB,
            program_bytes: 256 * 1024,
            tool_calls: 1000,
            in_flight_calls: 64,
            output_bytes: 40_000,
            call: CallLimits::default(),
        }
    }
}

impl Limits {
    /// These limits with another deadline.
    pub fn with_deadline(mut self, deadline: Duration) -> Self {
        self.deadline = deadline;
        self
    }

    /// These limits with another heap limit.
    pub fn with_heap_bytes(mut self, heap_bytes: usize) -> Self {
        self.heap_bytes = heap_bytes;
        self
    }
}

/// Per-call size limits, measured on serialized JSON. A call past one fails with
/// `LIMIT_EXCEEDED` and `details = {limit, value}` (catchable in a program).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CallLimits {
    /// Largest serialized arguments of one call.
    pub max_arg_bytes: u64,
    /// Largest serialized result of one call.
    pub max_result_bytes: u64,
}

impl CallLimits {
    /// No per-call limit (the outer pipeline's `run_code` call: the run has limits of its own).
    pub const UNLIMITED: CallLimits = CallLimits {
        max_arg_bytes: u64::MAX,
        max_result_bytes: u64::MAX,
    };
}

impl Default for CallLimits {
    fn default() -> Self {
        CallLimits {
            max_arg_bytes: 8 << 20,
            max_result_bytes: 8 << 20,
        }
    }
}

/// The size in bytes of `value`'s compact JSON text (what the byte limits count), without
/// writing the text.
pub(crate) fn json_size(value: &serde_json::Value) -> u64 {
    struct Count(u64);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len() as u64;
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut c = Count(0);
    let _ = serde_json::to_writer(&mut c, value);
    c.0
}

//! Per-run limits (DESIGN.md §5). Every field has the documented default.

use std::time::Duration;

/// Limits applied to one run. `Limits::default()` gives the defaults of DESIGN.md §5.
#[derive(Debug, Clone, PartialEq, Eq)]
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
    /// Largest serialized arguments of one tool call (`LIMIT_EXCEEDED`, catchable).
    pub call_arg_bytes: usize,
    /// Largest serialized result of one tool call (`LIMIT_EXCEEDED`, catchable).
    pub call_result_bytes: usize,
    /// Model-visible content of a run (the `run_code` render), cut with a marker.
    pub output_bytes: usize,
}

pub const MIB: usize = 1024 * 1024;

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
            call_arg_bytes: 8 * MIB,
            call_result_bytes: 8 * MIB,
            output_bytes: 40_000,
        }
    }
}

impl Limits {
    pub fn with_deadline(mut self, deadline: Duration) -> Self {
        self.deadline = deadline;
        self
    }

    pub fn with_heap_bytes(mut self, heap_bytes: usize) -> Self {
        self.heap_bytes = heap_bytes;
        self
    }
}

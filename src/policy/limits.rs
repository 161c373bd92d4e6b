//! The `[limits]` section: optional overrides of [`Limits`]. Precedence (DESIGN.md §5): CLI flags
//! beat the policy file, which beats the defaults; apply the policy first, then the flags.

use std::time::Duration;

use toml::Spanned;

use super::file::{PolicyError, RawLimits};
use crate::call::{Limits, MIB};

/// Limit overrides from a policy; `None` keeps the value it is applied to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PolicyLimits {
    /// Wall-clock deadline of a run, in milliseconds (`Limits::deadline`).
    pub timeout_ms: Option<u64>,
    /// Heap limit of the isolate, in MiB, 8 to 16384 (`Limits::heap_bytes`).
    pub heap_mb: Option<u64>,
    /// Tool calls per run (`Limits::tool_calls`).
    pub max_tool_calls: Option<u64>,
    /// Tool calls in flight at once (`Limits::in_flight_calls`).
    pub max_in_flight_calls: Option<u64>,
    /// Console bytes kept (`Limits::console_bytes`).
    pub console_bytes: Option<u64>,
    /// Largest serialized return value (`Limits::return_bytes`).
    pub return_bytes: Option<u64>,
    /// Largest program accepted (`Limits::program_bytes`).
    pub program_bytes: Option<u64>,
    /// Largest serialized arguments of one call (`CallLimits::max_arg_bytes`).
    pub call_arg_bytes: Option<u64>,
    /// Largest serialized result of one call (`CallLimits::max_result_bytes`).
    pub call_result_bytes: Option<u64>,
    /// Model-visible content of a run (`Limits::output_bytes`).
    pub output_bytes: Option<u64>,
    /// Programs running at once in `codemode mcp` (sandbox workers), 1 to 256. Not a per-run
    /// limit: [`PolicyLimits::apply`] leaves it to the server.
    pub workers: Option<u64>,
    /// Extra worker processes `codemode mcp` may start while every worker's run only waits on
    /// tools or an approver, 0 to 1024 (`ProcessConfig::waiting_workers`).
    pub waiting_workers: Option<u64>,
}

impl PolicyLimits {
    /// `limits` with every override of this policy applied.
    pub fn apply(&self, mut limits: Limits) -> Limits {
        let size = |v: u64| usize::try_from(v).unwrap_or(usize::MAX);
        if let Some(v) = self.timeout_ms {
            limits.deadline = Duration::from_millis(v);
        }
        if let Some(v) = self.heap_mb {
            limits.heap_bytes = size(v).saturating_mul(MIB);
        }
        if let Some(v) = self.max_tool_calls {
            limits.tool_calls = v;
        }
        if let Some(v) = self.max_in_flight_calls {
            limits.in_flight_calls = size(v);
        }
        if let Some(v) = self.console_bytes {
            limits.console_bytes = size(v);
        }
        if let Some(v) = self.return_bytes {
            limits.return_bytes = size(v);
        }
        if let Some(v) = self.program_bytes {
            limits.program_bytes = size(v);
        }
        if let Some(v) = self.call_arg_bytes {
            limits.call.max_arg_bytes = v;
        }
        if let Some(v) = self.call_result_bytes {
            limits.call.max_result_bytes = v;
        }
        if let Some(v) = self.output_bytes {
            limits.output_bytes = size(v);
        }
        limits
    }

    pub(super) fn compile(raw: RawLimits, origin: &str, text: &str) -> Result<Self, PolicyError> {
        let check = |name: &str, v: Option<Spanned<i64>>, min: i64, max: i64| {
            let Some(v) = v else { return Ok(None) };
            let n = *v.get_ref();
            if n < min || n > max {
                return Err(PolicyError::at(
                    origin,
                    text,
                    v.span().start,
                    format!(
                        "limits.{name} = {n} is out of range; use an integer from {min} to {max}"
                    ),
                ));
            }
            Ok(Some(n as u64))
        };
        let big = i64::MAX;
        Ok(PolicyLimits {
            timeout_ms: check("timeout_ms", raw.timeout_ms, 1, big)?,
            heap_mb: check("heap_mb", raw.heap_mb, 8, 16384)?,
            max_tool_calls: check("max_tool_calls", raw.max_tool_calls, 1, big)?,
            max_in_flight_calls: check("max_in_flight_calls", raw.max_in_flight_calls, 1, big)?,
            console_bytes: check("console_bytes", raw.console_bytes, 0, big)?,
            return_bytes: check("return_bytes", raw.return_bytes, 1, big)?,
            program_bytes: check("program_bytes", raw.program_bytes, 1, big)?,
            call_arg_bytes: check("call_arg_bytes", raw.call_arg_bytes, 1, big)?,
            call_result_bytes: check("call_result_bytes", raw.call_result_bytes, 1, big)?,
            output_bytes: check("output_bytes", raw.output_bytes, 1, big)?,
            workers: check("workers", raw.workers, 1, 256)?,
            waiting_workers: check("waiting_workers", raw.waiting_workers, 0, 1024)?,
        })
    }
}

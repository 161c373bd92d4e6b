//! The description of the `run_code` tool: how programs run, what comes back, the limits,
//! the error codes, and the SDK itself.

use super::runtime_types::ToolErrorCode;
use super::template::fill;

const DESCRIPTION_TEMPLATE: &str = include_str!("../../sdk-templates/run_code_description.md");

/// The run limits the description states.
///
/// Plain numbers rather than the sandbox's own limit type, so the generator does not depend on
/// the sandbox; defaults are the design contract's.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DescriptionLimits {
    /// Wall-clock deadline of one run.
    pub deadline_ms: u64,
    pub heap_bytes: u64,
    pub max_tool_calls: u64,
    pub max_in_flight_calls: u64,
    /// Console bytes kept per run.
    pub console_bytes: u64,
    /// Serialized return value.
    pub return_value_bytes: u64,
    /// Program source.
    pub program_bytes: u64,
    /// Arguments or result of one tool call.
    pub call_bytes: u64,
    /// The model-visible output of `run_code`.
    pub output_bytes: u64,
}

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;

impl Default for DescriptionLimits {
    fn default() -> Self {
        Self {
            deadline_ms: 30_000,
            heap_bytes: 256 * MIB,
            max_tool_calls: 1000,
            max_in_flight_calls: 64,
            console_bytes: MIB,
            return_value_bytes: 4 * MIB,
            program_bytes: 256 * KIB,
            call_bytes: 8 * MIB,
            output_bytes: 40_000,
        }
    }
}

/// See [`crate::sdk::run_code_description`].
pub fn render_description(sdk: &str, limits: &DescriptionLimits) -> String {
    let error_codes: Vec<String> = ToolErrorCode::ALL
        .iter()
        .map(|code| format!("- `{}`: {}", code.as_str(), code.meaning()))
        .collect();
    let mut sdk = sdk.to_owned();
    if !sdk.ends_with('\n') {
        sdk.push('\n');
    }
    fill(
        DESCRIPTION_TEMPLATE,
        &[
            ("deadline", &duration(limits.deadline_ms)),
            ("deadline_ms", &limits.deadline_ms.to_string()),
            ("output_cap", &bytes(limits.output_bytes)),
            ("heap", &bytes(limits.heap_bytes)),
            ("max_tool_calls", &limits.max_tool_calls.to_string()),
            ("max_in_flight", &limits.max_in_flight_calls.to_string()),
            ("console_cap", &bytes(limits.console_bytes)),
            ("return_cap", &bytes(limits.return_value_bytes)),
            ("program_cap", &bytes(limits.program_bytes)),
            ("call_cap", &bytes(limits.call_bytes)),
            ("error_codes", &error_codes.join("\n")),
            ("fence", &fence_for(&sdk)),
            ("sdk", &sdk),
        ],
    )
}

/// A Markdown fence longer than any backtick run inside the SDK (descriptions may hold
/// code samples), so the block cannot be closed early.
fn fence_for(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    "`".repeat((longest + 1).max(3))
}

/// `30000` -> `30 s`, `1500` -> `1500 ms`.
fn duration(ms: u64) -> String {
    if ms.is_multiple_of(1000) {
        format!("{} s", ms / 1000)
    } else {
        format!("{ms} ms")
    }
}

/// Whole MiB/KiB when exact (`4 MiB`), else a plain byte count (`40,000 bytes`).
fn bytes(n: u64) -> String {
    if n >= MIB && n.is_multiple_of(MIB) {
        format!("{} MiB", n / MIB)
    } else if n >= KIB && n.is_multiple_of(KIB) {
        format!("{} KiB", n / KIB)
    } else {
        format!("{} bytes", thousands(n))
    }
}

fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_durations_read_naturally() {
        assert_eq!(bytes(40_000), "40,000 bytes");
        assert_eq!(bytes(4 * MIB), "4 MiB");
        assert_eq!(bytes(256 * KIB), "256 KiB");
        assert_eq!(bytes(999), "999 bytes");
        assert_eq!(duration(30_000), "30 s");
        assert_eq!(duration(1_500), "1500 ms");
    }

    #[test]
    fn fence_outgrows_backticks_in_the_sdk() {
        assert_eq!(fence_for("no ticks"), "```");
        assert_eq!(fence_for("/** e.g. ```ts x``` */"), "````");
    }

    #[test]
    fn description_states_configured_limits_and_every_code() {
        let limits = DescriptionLimits {
            deadline_ms: 5_000,
            max_tool_calls: 7,
            ..DescriptionLimits::default()
        };
        let text = render_description("declare const tools: {};", &limits);
        assert!(text.contains("Deadline: 5 s"), "{text}");
        assert!(text.contains("at most 7 per run"), "{text}");
        for code in ToolErrorCode::ALL {
            assert!(text.contains(&format!("`{}`", code.as_str())), "{text}");
        }
        assert!(
            text.ends_with("```ts\ndeclare const tools: {};\n```\n"),
            "{text}"
        );
    }
}

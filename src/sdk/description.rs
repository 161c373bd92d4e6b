//! The description of the `run_code` tool: how programs run, what comes back, the limits,
//! the error codes, and the SDK itself.

use super::runtime_types::ToolErrorCode;
use super::template::fill;
use crate::call::Limits;

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;

const DESCRIPTION_TEMPLATE: &str = include_str!("../../sdk-templates/run_code_description.md");

/// See [`crate::sdk::run_code_description`].
pub(crate) fn render_description(sdk: &str, limits: &Limits) -> String {
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
            ("deadline", &duration(limits.deadline.as_millis() as u64)),
            ("deadline_ms", &limits.deadline.as_millis().to_string()),
            ("output_cap", &bytes(limits.output_bytes as u64)),
            ("heap", &bytes(limits.heap_bytes as u64)),
            ("max_tool_calls", &limits.tool_calls.to_string()),
            ("max_in_flight", &limits.in_flight_calls.to_string()),
            ("console_cap", &bytes(limits.console_bytes as u64)),
            ("return_cap", &bytes(limits.return_bytes as u64)),
            ("program_cap", &bytes(limits.program_bytes as u64)),
            (
                "call_cap",
                &bytes(limits.call.max_arg_bytes.max(limits.call.max_result_bytes)),
            ),
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
        let limits = Limits {
            deadline: std::time::Duration::from_secs(5),
            tool_calls: 7,
            ..Limits::default()
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

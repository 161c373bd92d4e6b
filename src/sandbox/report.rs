//! The model-visible content of a run (DESIGN.md §5): a status line when not ok, the console
//! entries (`warn`/`error` prefixed with their level), then `=> ` and the return value as pretty
//! JSON; capped at `max_bytes` with the marker `[... N bytes truncated]`.

use super::outcome::{LogLevel, RunOutcome, RunStatus};

/// The model-visible content of `outcome` (the render of `run_code`). Longer text is cut to
/// `max_bytes` (on a character boundary; `Limits::output_bytes`, default 40,000) and ends with
/// the marker.
pub fn render(outcome: &RunOutcome, max_bytes: usize) -> String {
    let mut out = String::new();
    if outcome.status != RunStatus::Ok {
        out.push_str(&status_line(outcome));
        out.push('\n');
    }
    if let Some(why) = &outcome.record_error {
        out.push_str(&format!("[not recorded] {why}\n"));
    }
    for entry in &outcome.logs {
        match entry.level {
            LogLevel::Warn => out.push_str("warn: "),
            LogLevel::Error => out.push_str("error: "),
            _ => {}
        }
        out.push_str(&entry.text);
        out.push('\n');
    }
    if let Some(value) = outcome.value_json() {
        out.push_str("=> ");
        out.push_str(&serde_json::to_string_pretty(&value).unwrap_or_default());
        out.push('\n');
    } else if let Some(raw) = &outcome.value {
        // Deeper than serde_json's recursion limit: show it as the program produced it.
        out.push_str("=> ");
        out.push_str(raw.get());
        out.push('\n');
    }
    truncate(out, max_bytes)
}

/// `[timeout after 30000 ms]`, `[error] TypeError: boom (line 4)`, ...
pub fn status_line(outcome: &RunOutcome) -> String {
    let Some(error) = &outcome.error else {
        return format!("[{}]", outcome.status.as_str());
    };
    match outcome.status {
        RunStatus::Timeout => format!("[{}]", error.message),
        status => {
            let mut line = format!("[{}] {}: {}", status.as_str(), error.name, error.message);
            if let Some(code) = &error.code {
                line.push_str(&format!(" [{code}]"));
            }
            if let Some(l) = error.line {
                line.push_str(&format!(" (line {l})"));
            }
            line
        }
    }
}

fn truncate(mut text: String, max_bytes: usize) -> String {
    if text.len() <= max_bytes {
        return text;
    }
    let mut cut = max_bytes;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let dropped = text.len() - cut;
    text.truncate(cut);
    text.push_str(&format!("\n[... {dropped} bytes truncated]"));
    text
}

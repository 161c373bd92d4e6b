//! The outcome as JSON under the output budget, for clients that hand it to the model whole
//! (MCP `structuredContent`), and its JSON Schema (`run_code`'s `outputSchema`).
//!
//! The rendered text is already cut at `output_bytes`; many MCP clients show the model the
//! structured content instead, so it gets the same budget. `status`, `error`, `contexts` and
//! `stats` are always whole (they are small and say what happened). `value` and `logs` share
//! what is left: each gets half, and what one does not use goes to the other. A part that does
//! not fit is cut with an explicit marker that gives its full size:
//!
//! - `value` is replaced by `value_truncated: {bytes, preview}`: the value's JSON size and the
//!   first bytes of its JSON text (the value itself is left out, never replaced by a cut one
//!   that would parse as something else);
//! - `planned_calls` and `dynamic_access` (the program's plan, for the harness and its approver)
//!   are left out first, replaced by `plan_truncated: {planned_calls, dynamic_access}` counts;
//! - `logs` keeps its first entries (the last one kept may be cut), and `logs_truncated:
//!   {entries, bytes}` counts the entries not shown whole and the text bytes left out.

use serde_json::{Map, Value, json};

use super::outcome::{LogEntry, RunOutcome};

/// Bytes kept back for the truncation markers' own keys and numbers.
const MARKER_BYTES: usize = 96;

/// `outcome` as a JSON object of at most `max_bytes` serialized bytes (beyond that only when its
/// always-whole parts alone are larger).
pub fn capped_outcome(outcome: &RunOutcome, max_bytes: usize) -> Value {
    let full = serde_json::to_value(outcome).expect("RunOutcome always serialises");
    // Every run_code answer over MCP comes here: an outcome within the budget (the usual case)
    // costs one measuring pass and no copy.
    if json_len(&full) <= max_bytes {
        return full;
    }
    let Value::Object(mut fields) = full else {
        unreachable!("an outcome serialises as an object")
    };
    // The plan is for the harness and its approver, not the model (which wrote the program):
    // over the budget it goes first, counted.
    let planned = fields.remove("planned_calls").map_or(0, |v| array_len(&v));
    let dynamic = fields.remove("dynamic_access").map_or(0, |v| array_len(&v));
    if planned + dynamic > 0 {
        fields.insert(
            "plan_truncated".into(),
            json!({"planned_calls": planned, "dynamic_access": dynamic}),
        );
    }
    let value_text = outcome.value.as_ref().map(|raw| raw.get());
    let value_bytes = value_text.map_or(0, str::len);
    fields.remove("value");
    let logs = fields.remove("logs");
    let logs_bytes = logs.as_ref().map_or(0, json_len);
    let rest = Value::Object(fields);
    let fixed = json_len(&rest) + r#","logs":[]"#.len();
    let Value::Object(mut fields) = rest else {
        unreachable!()
    };
    let room = max_bytes.saturating_sub(fixed + 2 * MARKER_BYTES);
    let (value_room, logs_room) = split(room, value_bytes, logs_bytes);
    if let Some(text) = value_text {
        if value_bytes <= value_room {
            fields.insert("value".into(), parsed_value(outcome));
        } else {
            let preview = prefix(text, value_room);
            fields.insert(
                "value_truncated".into(),
                json!({"bytes": value_bytes, "preview": preview}),
            );
        }
    }
    let logs = if logs_bytes <= logs_room {
        logs.unwrap_or_else(|| json!([]))
    } else {
        let (kept, dropped_entries, dropped_bytes) = cut_logs(&outcome.logs, logs_room);
        fields.insert(
            "logs_truncated".into(),
            json!({"entries": dropped_entries, "bytes": dropped_bytes}),
        );
        serde_json::to_value(kept).expect("log entries serialise")
    };
    fields.insert("logs".into(), logs);
    Value::Object(order(fields))
}

/// Splits `room` between the value and the logs: half each, and what one does not need goes
/// to the other.
fn split(room: usize, value: usize, logs: usize) -> (usize, usize) {
    let half = room / 2;
    if value <= half {
        (value, room - value)
    } else if logs <= half {
        (room - logs, logs)
    } else {
        (half, room - half)
    }
}

/// The value as parsed JSON; one too deep to parse (it was produced under the engine's own
/// nesting limit) stays out rather than failing the whole result.
fn parsed_value(outcome: &RunOutcome) -> Value {
    outcome.value_json().unwrap_or(Value::Null)
}

/// The first entries whose serialized size fits `room`, the last one cut to fit; then how many
/// entries were not kept whole and how many text bytes were left out.
fn cut_logs(logs: &[LogEntry], room: usize) -> (Vec<LogEntry>, usize, usize) {
    let mut kept = Vec::new();
    let mut used = 0usize;
    for (i, entry) in logs.iter().enumerate() {
        let size = json_len(&serde_json::to_value(entry).expect("a log entry serialises")) + 1;
        if used + size <= room {
            used += size;
            kept.push(entry.clone());
            continue;
        }
        let dropped_after: usize = logs[i + 1..].iter().map(|e| e.text.len()).sum();
        // The entry's JSON without its text: what a cut entry costs before any text.
        let shell = size - json_len(&Value::String(entry.text.clone())) + 2;
        let text_room = room.saturating_sub(used + shell);
        if text_room > 0 {
            let text = prefix(&entry.text, text_room);
            let cut = entry.text.len() - text.len();
            kept.push(LogEntry {
                level: entry.level,
                text,
            });
            return (kept, logs.len() - i, cut + dropped_after);
        }
        return (kept, logs.len() - i, entry.text.len() + dropped_after);
    }
    (kept, 0, 0)
}

/// The longest prefix of `text` whose JSON string form fits `room` bytes (escapes counted).
fn prefix(text: &str, room: usize) -> String {
    let mut used = 2; // the quotes
    let mut end = 0;
    for (i, c) in text.char_indices() {
        let cost = match c {
            '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
            c if (c as u32) < 0x20 => 6,
            c => c.len_utf8(),
        };
        if used + cost > room {
            break;
        }
        used += cost;
        end = i + c.len_utf8();
    }
    text[..end].to_owned()
}

/// The outcome's keys in their documented order, the markers beside what they replace.
fn order(mut fields: Map<String, Value>) -> Map<String, Value> {
    let mut out = Map::new();
    for key in [
        "version",
        "status",
        "value",
        "value_truncated",
        "logs",
        "logs_truncated",
        "error",
        "contexts",
        "stats",
        "record_error",
        "planned_calls",
        "dynamic_access",
        "plan_truncated",
    ] {
        if let Some(v) = fields.remove(key) {
            out.insert(key.into(), v);
        }
    }
    out.extend(fields);
    out
}

fn array_len(value: &Value) -> usize {
    value.as_array().map_or(0, Vec::len)
}

fn json_len(value: &Value) -> usize {
    serde_json::to_vec(value).map_or(0, |v| v.len())
}

/// The JSON Schema of an outcome as [`capped_outcome`] gives it (the full outcome conforms too).
pub fn outcome_schema() -> Value {
    let count = json!({"type": "integer", "minimum": 0});
    json!({
        "type": "object",
        "properties": {
            "version": {"type": "integer", "const": super::outcome::OUTCOME_VERSION},
            "status": {"type": "string", "enum": ["ok", "error", "timeout", "out_of_memory", "limit_exceeded", "cancelled", "crashed"]},
            "value": {"description": "What the program returned (absent when it returned nothing)."},
            "value_truncated": {
                "type": "object",
                "description": "The value was over the output budget: its JSON size and the start of its JSON text.",
                "properties": {"bytes": count, "preview": {"type": "string"}},
                "required": ["bytes", "preview"]
            },
            "logs": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "level": {"type": "string", "enum": ["log", "info", "warn", "error", "debug"]},
                        "text": {"type": "string"}
                    },
                    "required": ["level", "text"]
                }
            },
            "logs_truncated": {
                "type": "object",
                "description": "Console entries over the output budget: entries not shown whole and text bytes left out.",
                "properties": {"entries": count, "bytes": count},
                "required": ["entries", "bytes"]
            },
            "error": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "message": {"type": "string"},
                    "line": count,
                    "column": count,
                    "stack": {"type": "string"},
                    "code": {"type": "string"},
                    "tool": {"type": "string"},
                    "details": {}
                },
                "required": ["name", "message"]
            },
            "contexts": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"tool": {"type": "string"}, "kind": {"type": "string"}, "text": {"type": "string"}},
                    "required": ["tool", "kind", "text"]
                }
            },
            "stats": {
                "type": "object",
                "properties": {
                    "tool_calls": count,
                    "calls_by_tool": {"type": "object", "additionalProperties": count},
                    "cancelled_calls": count,
                    "finished_after_end": count,
                    "wall_ms": {"type": "number", "minimum": 0},
                    "bytes_kept_in_sandbox": count,
                    "bytes_returned": count
                },
                "required": ["tool_calls", "calls_by_tool", "cancelled_calls", "wall_ms", "bytes_kept_in_sandbox", "bytes_returned"]
            },
            "record_error": {"type": "string", "description": "The run's record could not be written to the session log: why."},
            "planned_calls": {
                "type": "array",
                "description": "The program's static plan: each place it names a tool (a call, or a reference that may call what is under it), with constant arguments.",
                "items": {
                    "type": "object",
                    "properties": {"path": {"type": "string"}, "line": count, "column": count, "called": {"type": "boolean"}, "args": {}},
                    "required": ["path", "line", "column", "called"]
                }
            },
            "dynamic_access": {
                "type": "array",
                "description": "Where the program reaches tools in ways the plan cannot follow: it may call any tool.",
                "items": {
                    "type": "object",
                    "properties": {
                        "kind": {"type": "string", "enum": ["computed", "aliased", "destructured", "passed", "dynamic_code"]},
                        "prefix": {"type": "string"},
                        "line": count,
                        "column": count
                    },
                    "required": ["kind", "line", "column"]
                }
            },
            "plan_truncated": {
                "type": "object",
                "description": "The outcome was over the output budget: the plan was left out; how many entries it had.",
                "properties": {"planned_calls": count, "dynamic_access": count},
                "required": ["planned_calls", "dynamic_access"]
            }
        },
        "required": ["version", "status", "logs", "contexts", "stats"]
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::outcome::{LogLevel, RunStats, RunStatus};
    use serde_json::value::RawValue;

    fn outcome(lines: usize, line: &str, value: &Value) -> RunOutcome {
        RunOutcome {
            version: crate::sandbox::outcome::OUTCOME_VERSION,
            status: RunStatus::Ok,
            value: Some(RawValue::from_string(value.to_string()).unwrap()),
            logs: (0..lines)
                .map(|i| LogEntry {
                    level: LogLevel::Log,
                    text: format!("{i} {line}"),
                })
                .collect(),
            error: None,
            contexts: Vec::new(),
            stats: RunStats::default(),
            record_error: None,
            planned_calls: Vec::new(),
            dynamic_access: Vec::new(),
        }
    }

    fn validator() -> jsonschema::Validator {
        jsonschema::validator_for(&outcome_schema()).unwrap()
    }

    #[test]
    fn an_outcome_under_the_budget_is_whole() {
        let o = outcome(3, "hi", &json!({"a": [1, 2]}));
        let capped = capped_outcome(&o, 40_000);
        assert_eq!(capped, serde_json::from_str::<Value>(&o.to_json()).unwrap());
        assert!(validator().is_valid(&capped));
    }

    #[test]
    fn logs_and_value_share_the_budget_with_markers_and_sizes() {
        let items: Vec<Value> = (0..3000).map(|i| json!({"i": i, "name": "item"})).collect();
        let value = Value::Array(items);
        let o = outcome(5000, &"x".repeat(30), &value);
        let capped = capped_outcome(&o, 40_000);
        let size = serde_json::to_vec(&capped).unwrap().len();
        assert!(size <= 40_000, "{size} bytes");
        assert!(
            size > 30_000,
            "the budget is used, not wasted: {size} bytes"
        );
        assert!(capped.get("value").is_none());
        assert_eq!(
            capped["value_truncated"]["bytes"],
            json!(value.to_string().len())
        );
        let preview = capped["value_truncated"]["preview"].as_str().unwrap();
        assert!(value.to_string().starts_with(preview) && preview.len() > 10_000);
        let kept = capped["logs"].as_array().unwrap();
        let dropped = capped["logs_truncated"]["entries"].as_u64().unwrap() as usize;
        assert_eq!(capped["logs"][0]["text"], o.logs[0].text);
        // Every entry is either kept whole, or the one cut short, or counted as dropped.
        assert!(kept.len() + dropped == 5000 || kept.len() + dropped == 5001);
        let shown: usize = kept.iter().map(|e| e["text"].as_str().unwrap().len()).sum();
        let total: usize = o.logs.iter().map(|e| e.text.len()).sum();
        assert_eq!(
            shown + capped["logs_truncated"]["bytes"].as_u64().unwrap() as usize,
            total
        );
        assert!(validator().is_valid(&capped));
    }

    #[test]
    fn a_small_part_leaves_its_share_to_the_other() {
        // Tiny logs: the value gets nearly the whole budget and fits.
        let value = json!("v".repeat(30_000));
        let capped = capped_outcome(&outcome(2, "hi", &value), 40_000);
        assert_eq!(capped["value"], value);
        assert!(capped.get("logs_truncated").is_none());
        // A tiny value: the logs get the rest.
        let capped = capped_outcome(&outcome(2000, &"y".repeat(30), &json!(1)), 40_000);
        assert_eq!(capped["value"], json!(1));
        let kept = capped["logs"].as_array().unwrap().len();
        assert!(kept > 600, "{kept} entries kept (about 57 bytes each)");
        assert!(serde_json::to_vec(&capped).unwrap().len() <= 40_000);
    }

    #[test]
    fn prefixes_count_escapes_and_keep_characters_whole() {
        assert_eq!(prefix("a\"b", 4), "a");
        assert_eq!(prefix("a\"b", 5), "a\"");
        assert_eq!(prefix("éé", 5), "é");
        assert_eq!(prefix("\u{1}", 7), "");
        assert_eq!(prefix("\u{1}", 8), "\u{1}");
    }
}

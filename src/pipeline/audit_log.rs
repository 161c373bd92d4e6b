//! The opt-in audit log (DESIGN.md section 5): one JSON line per nested code-mode call with the
//! tool, a SHA-256 digest of the canonical JSON of its arguments, the outcome code and timing,
//! and never a value. Register it as a live observer: it reads `tools/result` events.
//!
//! A call that was denied or put to the approver also carries `decision` (`deny` or
//! `approved`), `by` (`policy`, `hook`, `guard` or `approver`) and `reason` (for an approved call,
//! why it was asked; `asked` keeps that on a call denied after being asked). `duration_ms` is
//! issue to completion; `queued_ms` (behind exclusive calls) and `approval_ms` (waiting for the
//! approver) are the parts of it that were waiting, not running.
//!
//! `run_id` (top level, beside `caller`) is the run the call belongs to: the same id is on the
//! run's durable `tool/result` and on its spans (`codemode.run_id`).
//!
//! `executed` says whether the tool's body started: a `CANCELLED` call with `executed: false`
//! had no effect; any record with `executed: true` may have (a call whose run ended while its
//! tool was running is recorded with the tool's own outcome, after the run).

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::events::{Event, EventSink, PlanEvent};

/// Appends audit records, one `write` per record.
pub struct AuditLog {
    file: Mutex<File>,
    include_direct: bool,
    write_errors: AtomicU64,
}

impl std::fmt::Debug for AuditLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditLog")
            .field("include_direct", &self.include_direct)
            .finish_non_exhaustive()
    }
}

impl AuditLog {
    /// Opens (creating if needed) `path` for appending; records nested code-mode calls only.
    ///
    /// # Errors
    /// The file cannot be opened for appending.
    pub fn open(path: impl AsRef<Path>) -> io::Result<AuditLog> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(AuditLog {
            file: Mutex::new(file),
            include_direct: false,
            write_errors: AtomicU64::new(0),
        })
    }

    /// Records that could not be written (each is also reported with `tracing::error!`, which
    /// the `codemode` binary prints on stderr).
    pub fn write_errors(&self) -> u64 {
        self.write_errors.load(Ordering::Relaxed)
    }

    /// Also records direct calls.
    pub fn include_direct(mut self) -> Self {
        self.include_direct = true;
        self
    }
}

impl EventSink for AuditLog {
    fn emit(&self, event: &Event) {
        let e = match event {
            Event::Result(e) => e,
            Event::Plan(plan) => return self.write_plan(plan),
            _ => return,
        };
        if e.caller.is_durable() && !self.include_direct {
            return;
        }
        let mut record = json!({
            "event": "audit",
            "call_id": e.call_id,
            "tool": e.tool,
            "caller": e.caller,
            "args_sha256": args_digest(&e.args),
            "status": e.status,
            "code": e.code,
            "executed": e.executed,
            "started_at": e.started_at,
            "duration_ms": e.duration_ms,
            "queued_ms": e.queued_ms,
            "approval_ms": e.approval_ms,
        });
        // Top level, not only inside `caller`: the key that joins a record to its run's durable
        // `tool/result` and to its spans.
        if let (Some(run_id), Value::Object(fields)) = (&e.run_id, &mut record) {
            fields.insert("run_id".into(), json!(run_id));
        }
        if let (Some(auth), Value::Object(fields)) = (&e.authorization, &mut record) {
            fields.insert("decision".into(), json!(auth.decision));
            fields.insert("by".into(), json!(auth.by));
            fields.insert("reason".into(), json!(auth.reason));
            if let Some(asked) = &auth.asked {
                fields.insert("asked".into(), json!(asked));
            }
            if auth.with_program {
                fields.insert("with_program".into(), json!(true));
            }
        }
        self.write(&record, &e.call_id);
    }
}

impl AuditLog {
    /// One `audit_plan` record per run, before it starts: the program's digest (never its text),
    /// its planned calls (constant arguments as digests) and blind spots, and how the whole
    /// program was judged when it was put to the approver.
    fn write_plan(&self, plan: &PlanEvent) {
        let calls: Vec<Value> = plan
            .planned_calls
            .iter()
            .map(|c| {
                let mut call = json!({
                    "tool": c.path,
                    "line": c.line,
                    "column": c.column,
                    "called": c.called,
                });
                if let (Some(args), Value::Object(fields)) = (&c.args, &mut call) {
                    fields.insert("args_sha256".into(), json!(args_digest(args)));
                }
                call
            })
            .collect();
        let mut record = json!({
            "event": "audit_plan",
            "run_id": plan.run_id,
            "program_sha256": plan.program_sha256,
            "planned_calls": calls,
            "dynamic_access": plan.dynamic_access,
            "may_call_any": !plan.dynamic_access.is_empty(),
            "at": plan.at,
        });
        if let Value::Object(fields) = &mut record {
            if let Some(why) = &plan.unplanned {
                fields.insert("unplanned".into(), json!(why));
            }
            if let Some(auth) = &plan.approval {
                fields.insert("decision".into(), json!(auth.decision));
                fields.insert("by".into(), json!(auth.by));
                fields.insert("reason".into(), json!(auth.reason));
            }
        }
        self.write(&record, &plan.run_id);
    }

    fn write(&self, record: &Value, id: &str) {
        let mut line = record.to_string().into_bytes();
        line.push(b'\n');
        let mut file = self.file.lock().unwrap_or_else(|p| p.into_inner());
        if let Err(err) = file.write_all(&line) {
            self.write_errors.fetch_add(1, Ordering::Relaxed);
            tracing::error!(error = %err, id, "audit log write failed");
        }
    }
}

/// Hex SHA-256 of the canonical JSON of `value` (object keys sorted, no whitespace), so equal
/// arguments give equal digests whatever their key order.
pub fn args_digest(value: &Value) -> String {
    let mut canonical = Vec::new();
    write_canonical(value, &mut canonical);
    let digest = Sha256::digest(&canonical);
    let mut hex = String::with_capacity(64);
    for b in digest.iter() {
        hex.push(char::from(b"0123456789abcdef"[usize::from(b >> 4)]));
        hex.push(char::from(b"0123456789abcdef"[usize::from(b & 15)]));
    }
    hex
}

fn write_canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push(b'{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(Value::String(k.clone()).to_string().as_bytes());
                out.push(b':');
                write_canonical(&map[k], out);
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(v, out);
            }
            out.push(b']');
        }
        scalar => out.extend_from_slice(scalar.to_string().as_bytes()),
    }
}

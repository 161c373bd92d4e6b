//! The durable session log: append-only JSONL of `tool/result` events.
//!
//! Each event is serialized into one buffer and handed to the kernel with one `write` before the
//! call's result is returned, so a writer killed mid-run loses no completed event; at worst the
//! last line is torn, which the reader detects and skips with a warning. `fsync` happens only
//! when configured (it costs milliseconds per event on most disks).

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use super::events::{Event, EventSink, ResultEvent};
use crate::tool::{Card, ToolRegistry};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
/// How a [`SessionLog`] writes.
pub struct SessionLogOptions {
    /// `fsync` after every event (survives power loss, not only process death).
    pub fsync: bool,
}

/// Appends `tool/result` events to a file. Register it with `PipelineBuilder::session_log`.
pub struct SessionLog {
    file: Mutex<(File, Vec<u8>)>,
    options: SessionLogOptions,
    write_errors: AtomicU64,
}

impl std::fmt::Debug for SessionLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionLog")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl SessionLog {
    /// Opens (creating if needed) `path` for appending.
    ///
    /// # Errors
    /// The file cannot be opened for appending.
    pub fn open(path: impl AsRef<Path>, options: SessionLogOptions) -> io::Result<SessionLog> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(SessionLog {
            file: Mutex::new((file, Vec::with_capacity(1024))),
            options,
            write_errors: AtomicU64::new(0),
        })
    }

    /// Events that could not be written (each is also reported with `tracing::error!`).
    pub fn write_errors(&self) -> u64 {
        self.write_errors.load(Ordering::Relaxed)
    }

    /// Writes one event as one line with one `write`.
    ///
    /// # Errors
    /// Serialization or I/O failure.
    pub fn append(&self, event: &Event) -> io::Result<()> {
        let mut guard = self.file.lock().unwrap_or_else(|p| p.into_inner());
        let (file, buf) = &mut *guard;
        buf.clear();
        serde_json::to_writer(&mut *buf, event)?;
        buf.push(b'\n');
        // A regular file takes the whole buffer in one write; write_all only loops on a short write.
        file.write_all(buf)?;
        if self.options.fsync {
            file.sync_data()?;
        }
        Ok(())
    }
}

impl EventSink for SessionLog {
    fn emit(&self, event: &Event) {
        if !matches!(event, Event::Durable(_)) {
            return;
        }
        let _ = self.record(event);
    }

    fn record(&self, event: &Event) -> Result<(), String> {
        if !matches!(event, Event::Durable(_)) {
            return Ok(());
        }
        self.append(event).map_err(|e| {
            self.write_errors.fetch_add(1, Ordering::Relaxed);
            tracing::error!(error = %e, call_id = event.call_id(), "session log write failed");
            format!("the session log could not be written: {e}")
        })
    }
}

/// One replayed `tool/result` with its result card rendered again by the tool's presenter.
#[derive(Clone, Debug, PartialEq)]
pub struct ReplayEntry {
    /// The durable event as logged.
    pub event: ResultEvent,
    /// `present_result(args, result)` of the registered tool, `None` without a presenter.
    pub card: Option<Card>,
}

#[derive(Clone, Debug, Default, PartialEq)]
/// A session log read back.
pub struct Replay {
    /// Every readable `tool/result`, in order.
    pub entries: Vec<ReplayEntry>,
    /// Torn or unreadable lines, and tools no longer registered.
    pub warnings: Vec<String>,
}

/// Reads a session log and re-renders each result card with the registry's presenters.
///
/// # Errors
/// The file cannot be read. Bad lines are warnings, not errors.
pub fn replay(path: impl AsRef<Path>, registry: &ToolRegistry) -> io::Result<Replay> {
    let bytes = std::fs::read(path)?;
    let mut out = Replay::default();
    let mut rest = &bytes[..];
    let mut line_no = 0;
    while !rest.is_empty() {
        line_no += 1;
        let Some(end) = rest.iter().position(|b| *b == b'\n') else {
            let msg = format!(
                "line {line_no}: torn last line ({} bytes without newline) skipped",
                rest.len()
            );
            tracing::warn!("{msg}");
            out.warnings.push(msg);
            break;
        };
        let line = &rest[..end];
        rest = &rest[end + 1..];
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<Event>(line) {
            Ok(Event::Durable(event)) => {
                let card = match registry.get(&event.tool) {
                    Some(r) => r.tool.present_result(&event.args, &event.view()),
                    None => {
                        out.warnings.push(format!(
                            "line {line_no}: tool `{}` is not registered",
                            event.tool
                        ));
                        None
                    }
                };
                out.entries.push(ReplayEntry { event, card });
            }
            Ok(_) => {}
            Err(e) => {
                let msg = format!("line {line_no}: unreadable event skipped: {e}");
                tracing::warn!("{msg}");
                out.warnings.push(msg);
            }
        }
    }
    Ok(out)
}

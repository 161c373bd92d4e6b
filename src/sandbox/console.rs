//! The console cap: entries are kept until the cap, the entry that crosses it is cut at a
//! character boundary, and everything after is counted into one marker entry.
//!
//! Every entry costs its text plus [`ENTRY_COST`] against the cap, so a flood of empty lines
//! (`for (;;) console.log('')`) is bounded like a flood of text: without the per-entry cost
//! it kept 1.7 million entries (1.2-1.6 GiB of host memory) before the deadline.

use super::outcome::{LogEntry, LogLevel};

/// What one entry costs beyond its text: about its size in memory (a `LogEntry`) and in the
/// outcome's JSON (`{"level":"log","text":""}` is 26 bytes).
pub(crate) const ENTRY_COST: usize = 32;

#[derive(Default)]
pub(crate) struct ConsoleBuffer {
    pub entries: Vec<LogEntry>,
    kept_bytes: usize,
    dropped_bytes: usize,
    dropped_entries: usize,
    full: bool,
    cap: usize,
}

impl ConsoleBuffer {
    pub(crate) fn with_cap(cap: usize) -> ConsoleBuffer {
        ConsoleBuffer {
            cap,
            ..ConsoleBuffer::default()
        }
    }

    /// Keeps `text` if it fits; once anything was dropped, nothing more is kept.
    #[cfg(test)]
    pub(crate) fn push(&mut self, level: LogLevel, text: &str) {
        self.push_owned(level, text.to_owned());
    }

    /// [`push`](Self::push) of an owned text: a kept entry is stored without a copy.
    pub(crate) fn push_owned(&mut self, level: LogLevel, mut text: String) {
        if self.full {
            self.drop_entry(text.len());
            return;
        }
        let room = self.cap.checked_sub(self.kept_bytes + ENTRY_COST);
        let Some(room) = room.filter(|&room| room > 0 || text.is_empty()) else {
            self.full = true;
            self.drop_entry(text.len());
            return;
        };
        let mut keep = text.len().min(room);
        while !text.is_char_boundary(keep) {
            keep -= 1;
        }
        self.kept_bytes += keep + ENTRY_COST;
        if keep < text.len() {
            self.full = true;
            self.dropped_bytes += text.len() - keep;
        }
        text.truncate(keep);
        self.entries.push(LogEntry { level, text });
    }

    /// Whether anything was dropped: every later entry is only counted.
    pub(crate) fn is_full(&self) -> bool {
        self.full
    }

    /// Counts an entry of `bytes` that is not kept (the buffer is full).
    pub(crate) fn drop_bytes(&mut self, bytes: usize) {
        self.drop_entry(bytes);
    }

    fn drop_entry(&mut self, bytes: usize) {
        self.dropped_bytes += bytes;
        self.dropped_entries += 1;
    }

    /// The kept entries, plus the marker when anything was dropped.
    pub(crate) fn finish(mut self) -> Vec<LogEntry> {
        if self.full {
            let entries = match self.dropped_entries {
                1 => " in 1 entry".to_string(),
                n => format!(" in {n} entries"),
            };
            self.entries.push(LogEntry {
                level: LogLevel::Warn,
                text: if self.dropped_entries == 0 {
                    format!("[console truncated: {} bytes dropped]", self.dropped_bytes)
                } else {
                    format!(
                        "[console truncated: {} bytes dropped{entries}]",
                        self.dropped_bytes
                    )
                },
            });
        }
        self.entries
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_until_cap_then_marks_the_rest() {
        let mut buffer = ConsoleBuffer::with_cap(10 + 2 * ENTRY_COST);
        buffer.push(LogLevel::Log, "12345");
        buffer.push(LogLevel::Log, "67890abc");
        buffer.push(LogLevel::Warn, "dropped");
        let entries = buffer.finish();
        assert_eq!(entries[0].text, "12345");
        assert_eq!(entries[1].text, "67890");
        assert_eq!(
            entries[2].text,
            "[console truncated: 10 bytes dropped in 1 entry]"
        );
        assert_eq!(entries.len(), 3);
    }

    #[test]
    fn never_splits_a_character() {
        let mut buffer = ConsoleBuffer::with_cap(4 + ENTRY_COST);
        buffer.push(LogLevel::Log, "ab€");
        let entries = buffer.finish();
        assert_eq!(entries[0].text, "ab");
    }

    #[test]
    fn empty_entries_count_against_the_cap() {
        let cap = 1024;
        let mut buffer = ConsoleBuffer::with_cap(cap);
        for _ in 0..1_000_000 {
            buffer.push(LogLevel::Log, "");
        }
        let entries = buffer.finish();
        assert_eq!(
            entries.len(),
            cap / ENTRY_COST + 1,
            "kept entries plus the marker"
        );
        let marker = &entries.last().unwrap().text;
        assert_eq!(
            marker,
            &format!(
                "[console truncated: 0 bytes dropped in {} entries]",
                1_000_000 - cap / ENTRY_COST
            )
        );
    }

    #[test]
    fn nothing_is_kept_after_the_marker_point() {
        let mut buffer = ConsoleBuffer::with_cap(8 + ENTRY_COST);
        buffer.push(LogLevel::Log, "123456789");
        buffer.push(LogLevel::Log, "");
        buffer.push(LogLevel::Log, "x");
        let entries = buffer.finish();
        assert_eq!(entries.len(), 2);
        assert_eq!(
            entries[1].text,
            "[console truncated: 2 bytes dropped in 2 entries]"
        );
    }
}

//! The console byte cap: entries are kept until the cap, the entry that crosses it is cut at
//! a character boundary, and everything after is counted into one marker entry.

use super::outcome::{LogEntry, LogLevel};

#[derive(Default)]
pub(crate) struct ConsoleBuffer {
    pub entries: Vec<LogEntry>,
    kept_bytes: usize,
    dropped_bytes: usize,
    cap: usize,
}

impl ConsoleBuffer {
    pub fn with_cap(cap: usize) -> ConsoleBuffer {
        ConsoleBuffer {
            cap,
            ..ConsoleBuffer::default()
        }
    }

    pub fn push(&mut self, level: LogLevel, text: &str) {
        let room = self.cap.saturating_sub(self.kept_bytes);
        if self.dropped_bytes > 0 || room == 0 {
            self.dropped_bytes += text.len();
            return;
        }
        let mut keep = text.len().min(room);
        while !text.is_char_boundary(keep) {
            keep -= 1;
        }
        self.kept_bytes += keep;
        self.dropped_bytes += text.len() - keep;
        self.entries.push(LogEntry {
            level,
            text: text[..keep].to_string(),
        });
    }

    /// The kept entries, plus the marker when anything was dropped.
    pub fn finish(mut self) -> Vec<LogEntry> {
        if self.dropped_bytes > 0 {
            self.entries.push(LogEntry {
                level: LogLevel::Warn,
                text: format!("[console truncated: {} bytes dropped]", self.dropped_bytes),
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
        let mut buffer = ConsoleBuffer::with_cap(10);
        buffer.push(LogLevel::Log, "12345");
        buffer.push(LogLevel::Log, "67890abc");
        buffer.push(LogLevel::Warn, "dropped");
        let entries = buffer.finish();
        assert_eq!(entries[0].text, "12345");
        assert_eq!(entries[1].text, "67890");
        assert_eq!(entries[2].text, "[console truncated: 10 bytes dropped]");
    }

    #[test]
    fn never_splits_a_character() {
        let mut buffer = ConsoleBuffer::with_cap(4);
        buffer.push(LogLevel::Log, "ab€");
        let entries = buffer.finish();
        assert_eq!(entries[0].text, "ab");
    }
}

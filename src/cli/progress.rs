//! Live progress of `codemode run` on stderr: the nested calls in flight with their elapsed
//! time, redrawn in place. Only when stderr is a terminal, and only once a run has lasted
//! [`PROGRESS_AFTER`], so quick runs print nothing live.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use codemode::pipeline::{Caller, Event, EventSink};

/// A run shows live progress once it has lasted this long.
pub const PROGRESS_AFTER: Duration = Duration::from_millis(300);
/// Redraw interval.
const TICK: Duration = Duration::from_millis(100);
/// Calls named in the line; the rest are counted.
const SHOWN: usize = 3;

/// One call in flight: its tool, whether it still waits in the queue, and since when it runs
/// (or waits).
struct InFlight {
    tool: String,
    queued: bool,
    since: Instant,
}

#[derive(Default)]
struct State {
    /// By call id.
    in_flight: BTreeMap<Arc<str>, InFlight>,
    done: u64,
}

/// Records nested calls from the pipeline's live events.
#[derive(Clone, Default)]
pub struct ProgressSink(Arc<Mutex<State>>);

impl EventSink for ProgressSink {
    fn emit(&self, event: &Event) {
        let mut state = self.0.lock().unwrap_or_else(|p| p.into_inner());
        match event {
            Event::Call(e) if matches!(e.caller, Caller::CodeMode { .. }) => {
                let call = InFlight {
                    tool: e.tool.clone(),
                    queued: e.queued,
                    since: Instant::now(),
                };
                state.in_flight.insert(e.call_id.clone(), call);
            }
            Event::Started(e) => {
                if let Some(call) = state.in_flight.get_mut(&e.call_id) {
                    call.queued = false;
                    call.since = Instant::now();
                }
            }
            Event::Result(e) if state.in_flight.remove(&e.call_id).is_some() => state.done += 1,
            _ => {}
        }
    }
}

/// The progress line: elapsed time, calls done, calls running (oldest first), how many wait in
/// the queue behind exclusive calls, cut to `width`.
pub fn progress_line(
    elapsed: Duration,
    done: u64,
    in_flight: &[(String, Duration)],
    queued: usize,
    width: usize,
) -> String {
    let mut line = format!("[{:.1} s] {done} calls done", elapsed.as_secs_f64());
    if !in_flight.is_empty() {
        line.push_str("; running: ");
        let shown: Vec<String> = in_flight
            .iter()
            .take(SHOWN)
            .map(|(tool, d)| format!("{tool} {:.1} s", d.as_secs_f64()))
            .collect();
        line.push_str(&shown.join(", "));
        if in_flight.len() > SHOWN {
            line.push_str(&format!(" (+{} more)", in_flight.len() - SHOWN));
        }
    }
    if queued > 0 {
        line.push_str(&format!("; {queued} queued"));
    }
    if line.chars().count() >= width {
        line = line.chars().take(width.saturating_sub(2)).collect();
        line.push('…');
    }
    line
}

/// Draws the progress line until dropped; the line is cleared at the end. `screen` is held by
/// approval prompts: no frame is drawn while it is taken.
pub struct ProgressDisplay {
    task: tokio::task::JoinHandle<()>,
    drawn: Arc<Mutex<bool>>,
}

impl ProgressDisplay {
    /// Starts drawing on the current runtime.
    pub fn start(sink: ProgressSink, screen: Arc<Mutex<()>>) -> ProgressDisplay {
        let started = Instant::now();
        let drawn = Arc::new(Mutex::new(false));
        let flag = drawn.clone();
        let task = tokio::spawn(async move {
            loop {
                tokio::time::sleep(TICK).await;
                let elapsed = started.elapsed();
                if elapsed < PROGRESS_AFTER {
                    continue;
                }
                let Ok(_screen) = screen.try_lock() else {
                    continue;
                };
                let (done, mut calls, queued) = {
                    let state = sink.0.lock().unwrap_or_else(|p| p.into_inner());
                    let calls: Vec<(String, Duration)> = state
                        .in_flight
                        .values()
                        .filter(|c| !c.queued)
                        .map(|c| (c.tool.clone(), c.since.elapsed()))
                        .collect();
                    let queued = state.in_flight.len() - calls.len();
                    (state.done, calls, queued)
                };
                calls.sort_by_key(|c| std::cmp::Reverse(c.1));
                let line = progress_line(elapsed, done, &calls, queued, terminal_width());
                let mut err = std::io::stderr().lock();
                let _ = write!(err, "\r\x1b[2K{line}");
                let _ = err.flush();
                *flag.lock().unwrap_or_else(|p| p.into_inner()) = true;
            }
        });
        ProgressDisplay { task, drawn }
    }

    /// Stops drawing and clears the line.
    pub fn finish(self) {
        self.task.abort();
        if *self.drawn.lock().unwrap_or_else(|p| p.into_inner()) {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
        }
    }
}

/// Columns of the terminal on stderr (80 when unknown).
fn terminal_width() -> usize {
    // SAFETY: TIOCGWINSZ writes one `winsize` into the struct we own; fd 2 outlives the call.
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::ioctl(2, libc::TIOCGWINSZ, &mut ws) } == 0;
    if ok && ws.ws_col > 0 {
        usize::from(ws.ws_col)
    } else {
        80
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queued_calls_are_counted_as_queued_until_their_turn() {
        use codemode::pipeline::{CallEvent, StartedEvent};
        let sink = ProgressSink::default();
        let call = |id: &str, queued| {
            Event::Call(CallEvent {
                call_id: id.into(),
                tool: "write_file".into(),
                caller: Caller::code_mode("r_1", 1),
                args: Arc::new(serde_json::Value::Null),
                card: None,
                at: String::new(),
                queued,
                extensions: Default::default(),
            })
        };
        sink.emit(&call("c1", false));
        sink.emit(&call("c2", true));
        let queued = |sink: &ProgressSink| {
            let state = sink.0.lock().unwrap();
            state.in_flight.values().filter(|c| c.queued).count()
        };
        assert_eq!(queued(&sink), 1);
        sink.emit(&Event::Started(StartedEvent {
            call_id: "c2".into(),
            tool: "write_file".into(),
            caller: Caller::code_mode("r_1", 2),
            queued_ms: 5.0,
            extensions: Default::default(),
        }));
        assert_eq!(queued(&sink), 0);
    }

    #[test]
    fn line_names_calls_in_flight_and_counts_the_rest() {
        let calls: Vec<(String, Duration)> = ["grep", "glob", "read_file", "shell"]
            .iter()
            .map(|t| (t.to_string(), Duration::from_millis(1500)))
            .collect();
        let line = progress_line(Duration::from_millis(2345), 7, &calls, 0, 200);
        assert_eq!(
            line,
            "[2.3 s] 7 calls done; running: grep 1.5 s, glob 1.5 s, read_file 1.5 s (+1 more)"
        );
        assert_eq!(
            progress_line(Duration::from_secs(1), 0, &[], 0, 200),
            "[1.0 s] 0 calls done"
        );
        assert_eq!(
            progress_line(Duration::from_secs(1), 0, &calls[..1], 2, 200),
            "[1.0 s] 0 calls done; running: grep 1.5 s; 2 queued"
        );
        let cut = progress_line(Duration::from_secs(1), 0, &calls, 0, 20);
        assert_eq!(cut.chars().count(), 19, "{cut}");
    }
}

//! The calls a program made, in the order the host saw them, and the direct-mode plan derived
//! from them.
//!
//! The plan's assumption (README documents it): a call's wave is 1 plus the highest wave among
//! the calls whose results the program had already received when it issued it. "Received" is
//! read from the host's events: a result event before the call's issue event. So calls issued
//! together (`Promise.all`) share a wave, and a call issued after awaiting another comes one
//! wave later. A direct-calling model makes one turn per wave.

use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::call::{CallStatus, Caller};
use crate::pipeline::{Event, EventSink};

/// One call a program made.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedCall {
    /// The registry path it went to.
    pub tool: String,
    /// The arguments snapshot.
    pub args: Value,
    /// Whether it succeeded, and the value (or error message) the program received.
    pub result: Result<Value, String>,
    /// Its wave (1-based).
    pub wave: usize,
}

#[derive(Debug)]
enum Seen {
    Issued {
        call_id: Arc<str>,
        tool: String,
        args: Value,
    },
    Finished {
        call_id: Arc<str>,
        result: Result<Value, String>,
    },
}

/// An [`EventSink`] for the inner pipeline of a code-mode run: keeps the program's calls.
#[derive(Clone, Debug, Default)]
pub struct Recorder {
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl EventSink for Recorder {
    fn emit(&self, event: &Event) {
        let seen = match event {
            Event::Call(e) if matches!(e.caller, Caller::CodeMode { .. }) => Seen::Issued {
                call_id: e.call_id.clone(),
                tool: e.tool.clone(),
                args: Value::clone(&e.args),
            },
            Event::Result(e) if matches!(e.caller, Caller::CodeMode { .. }) => Seen::Finished {
                call_id: e.call_id.clone(),
                result: match (&e.status, &e.value) {
                    (CallStatus::Ok, Some(v)) => Ok(Value::clone(v)),
                    _ => Err(e.content.clone()),
                },
            },
            _ => return,
        };
        self.seen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(seen);
    }
}

impl Recorder {
    /// The calls in issue order, each with its wave. A call without a result (the run ended
    /// first) is left out: the program never received anything from it.
    pub fn calls(&self) -> Vec<RecordedCall> {
        let seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        let mut calls: Vec<(Arc<str>, RecordedCall, Option<usize>)> = Vec::new();
        // Waves of the calls finished so far, to date each newly issued call.
        let mut received_wave = 0;
        for event in seen.iter() {
            match event {
                Seen::Issued {
                    call_id,
                    tool,
                    args,
                } => calls.push((
                    call_id.clone(),
                    RecordedCall {
                        tool: tool.clone(),
                        args: args.clone(),
                        result: Err(String::new()),
                        wave: received_wave + 1,
                    },
                    None,
                )),
                Seen::Finished { call_id, result } => {
                    if let Some((_, call, finished)) =
                        calls.iter_mut().find(|(id, _, _)| id == call_id)
                    {
                        call.result = result.clone();
                        *finished = Some(call.wave);
                        received_wave = received_wave.max(call.wave);
                    }
                }
            }
        }
        calls
            .into_iter()
            .filter(|(_, _, finished)| finished.is_some())
            .map(|(_, call, _)| call)
            .collect()
    }
}

/// The calls grouped by wave: the turns of a direct-calling model.
pub fn waves(calls: &[RecordedCall]) -> Vec<Vec<&RecordedCall>> {
    let count = calls.iter().map(|c| c.wave).max().unwrap_or(0);
    (1..=count)
        .map(|w| calls.iter().filter(|c| c.wave == w).collect())
        .filter(|wave: &Vec<_>| !wave.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn issued(id: &str) -> Seen {
        Seen::Issued {
            call_id: id.into(),
            tool: "t".into(),
            args: Value::String(id.into()),
        }
    }
    fn finished(id: &str) -> Seen {
        Seen::Finished {
            call_id: id.into(),
            result: Ok(Value::Null),
        }
    }

    #[test]
    fn calls_issued_together_share_a_wave_and_awaited_ones_come_later() {
        let recorder = Recorder::default();
        // a and b together; c after a's result; d after c's; e issued before c finished.
        let order = [
            issued("a"),
            issued("b"),
            finished("a"),
            issued("c"),
            finished("b"),
            issued("e"),
            finished("c"),
            issued("d"),
            finished("e"),
            finished("d"),
            issued("never-finished"),
        ];
        recorder.seen.lock().unwrap().extend(order);
        let calls = recorder.calls();
        let waves: Vec<(String, usize)> = calls
            .iter()
            .map(|c| (c.args.as_str().unwrap().to_string(), c.wave))
            .collect();
        assert_eq!(
            waves,
            [
                ("a".into(), 1),
                ("b".into(), 1),
                ("c".into(), 2),
                ("e".into(), 2),
                ("d".into(), 3)
            ]
        );
        let grouped = super::waves(&calls);
        assert_eq!(grouped.iter().map(Vec::len).collect::<Vec<_>>(), [2, 2, 1]);
    }
}

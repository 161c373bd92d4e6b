//! The calls a program made, each with its wave, and the direct-mode plan derived from them.
//!
//! The plan's assumption (README documents it): a call's wave is 1 plus the highest wave among
//! the calls whose results the program had already received when it issued it
//! ([`CallWave`], which the sandbox puts on every nested call). So calls issued together
//! (`Promise.all`) share a wave, and a call issued after awaiting another comes one wave later.
//! A direct-calling model makes one turn per wave.

use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::call::{CallStatus, CallWave, Caller};
use crate::pipeline::{Event, EventSink};

/// One call a program made.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedCall {
    /// The registry path it went to.
    pub tool: String,
    /// The arguments snapshot.
    pub args: Value,
    /// The value the program received, or the error's content.
    pub result: Result<Value, String>,
    /// Its wave (1-based; 0 when the run did not ask for waves with
    /// [`TrackWaves`](crate::call::TrackWaves)).
    pub wave: u64,
}

#[derive(Debug, Default)]
struct Seen {
    /// Issued calls in issue order, by call id; the result arrives later.
    calls: Vec<(Arc<str>, RecordedCall, bool)>,
}

/// An [`EventSink`] for the inner pipeline of a code-mode run: keeps the program's calls.
#[derive(Clone, Debug, Default)]
pub struct Recorder {
    seen: Arc<Mutex<Seen>>,
}

impl EventSink for Recorder {
    fn emit(&self, event: &Event) {
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        match event {
            Event::Call(e) if matches!(e.caller, Caller::CodeMode { .. }) => {
                // 0: the run did not track waves (see `TrackWaves`).
                let wave = e.extensions.get::<CallWave>().map_or(0, |w| w.0);
                seen.calls.push((
                    e.call_id.clone(),
                    RecordedCall {
                        tool: e.tool.clone(),
                        args: Value::clone(&e.args),
                        result: Err(String::new()),
                        wave,
                    },
                    false,
                ));
            }
            Event::Result(e) if matches!(e.caller, Caller::CodeMode { .. }) => {
                if let Some((_, call, finished)) = seen
                    .calls
                    .iter_mut()
                    .rev()
                    .find(|(id, _, _)| *id == e.call_id)
                {
                    call.result = match (&e.status, &e.value) {
                        (CallStatus::Ok, Some(v)) => Ok(Value::clone(v)),
                        _ => Err(e.content.clone()),
                    };
                    *finished = true;
                }
            }
            _ => {}
        }
    }
}

impl Recorder {
    /// The calls in issue order. A call without a result (the run ended first) is left out:
    /// the program never received anything from it.
    pub fn calls(&self) -> Vec<RecordedCall> {
        let seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        seen.calls
            .iter()
            .filter(|(_, _, finished)| *finished)
            .map(|(_, call, _)| call.clone())
            .collect()
    }
}

/// The calls grouped by wave: the turns of a direct-calling model. Calls without a wave (0)
/// come first, one turn each.
pub fn waves(calls: &[RecordedCall]) -> Vec<Vec<&RecordedCall>> {
    let count = calls.iter().map(|c| c.wave).max().unwrap_or(0);
    let untracked = calls.iter().filter(|c| c.wave == 0).map(|c| vec![c]);
    untracked
        .chain(
            (1..=count)
                .map(|w| calls.iter().filter(|c| c.wave == w).collect())
                .filter(|wave: &Vec<_>| !wave.is_empty()),
        )
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(wave: u64) -> RecordedCall {
        RecordedCall {
            tool: "t".into(),
            args: Value::Null,
            result: Ok(Value::Null),
            wave,
        }
    }

    #[test]
    fn waves_group_calls_in_issue_order() {
        let calls = [call(1), call(1), call(2), call(3), call(2)];
        let grouped = waves(&calls);
        assert_eq!(
            grouped
                .iter()
                .map(|w| w.iter().map(|c| c.wave).collect::<Vec<_>>())
                .collect::<Vec<_>>(),
            [vec![1, 1], vec![2, 2], vec![3]]
        );
        assert!(waves(&[]).is_empty());
    }
}

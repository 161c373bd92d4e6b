//! The modelled model time of a replayed conversation: per turn, a time to first token, the
//! prefill of the context, and the decode of the output. Tool time is measured, never
//! modelled, and reported apart.

use serde::{Deserialize, Serialize};

use super::tokens::TurnTokens;

/// How long a model takes per turn (`--ttft-ms`, `--prefill-tps`, `--decode-tps`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct LatencyModel {
    /// Fixed cost of a turn before any token: network, queueing, scheduling (milliseconds).
    pub ttft_ms: f64,
    /// Input tokens read per second.
    pub prefill_tps: f64,
    /// Output tokens written per second.
    pub decode_tps: f64,
}

impl Default for LatencyModel {
    /// A hosted frontier model: 500 ms to first token, 5,000 tokens/s prefill, 60 tokens/s
    /// decode.
    fn default() -> Self {
        LatencyModel {
            ttft_ms: 500.0,
            prefill_tps: 5_000.0,
            decode_tps: 60.0,
        }
    }
}

impl LatencyModel {
    /// Milliseconds for `turns`.
    pub fn model_ms(&self, turns: &[TurnTokens]) -> f64 {
        turns
            .iter()
            .map(|t| {
                self.ttft_ms
                    + t.input as f64 * 1000.0 / self.prefill_tps
                    + t.output as f64 * 1000.0 / self.decode_tps
            })
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_turn_costs_ttft_plus_prefill_plus_decode() {
        let model = LatencyModel {
            ttft_ms: 100.0,
            prefill_tps: 1000.0,
            decode_tps: 10.0,
        };
        let turns = [
            TurnTokens {
                input: 500,
                output: 5,
            },
            TurnTokens {
                input: 1000,
                output: 10,
            },
        ];
        assert_eq!(
            model.model_ms(&turns),
            100.0 + 500.0 + 500.0 + 100.0 + 1000.0 + 1000.0
        );
    }
}

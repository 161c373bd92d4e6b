//! What the model reads and writes, counted with `o200k_base` (the tokenizer of OpenAI's
//! current models; its vocabulary ships inside `tiktoken-rs`, so nothing is downloaded).
//!
//! The conversation model: a fixed prefix (the tool definitions as a chat API carries them, and
//! the task), then turns. Each turn resends the whole context as input, the model writes its
//! output (tool calls, a program, or the final answer), and the tool results are appended.
//! Every message costs [`MESSAGE_OVERHEAD`] tokens of chat framing.

use serde::{Deserialize, Serialize};

/// Tokens of chat framing per message (role and separators), as OpenAI documents for its chat
/// format.
pub const MESSAGE_OVERHEAD: u64 = 4;

/// The tokenizer's name, for reports.
pub const TOKENIZER: &str = "o200k_base";

/// Tokens of `text`.
pub fn count(text: &str) -> u64 {
    tiktoken_rs::o200k_base_singleton()
        .encode_ordinary(text)
        .len() as u64
}

/// One model turn's tokens.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnTokens {
    /// What the model read: the whole context so far.
    pub input: u64,
    /// What it wrote.
    pub output: u64,
}

/// A conversation being counted.
#[derive(Clone, Debug, Default)]
pub struct Conversation {
    context: u64,
    turns: Vec<TurnTokens>,
}

impl Conversation {
    /// A conversation whose context starts with `definitions` (the tools' JSON) and the task.
    pub fn new(definitions: &str, task: &str) -> Conversation {
        Conversation {
            context: count(definitions) + MESSAGE_OVERHEAD + count(task) + MESSAGE_OVERHEAD,
            turns: Vec::new(),
        }
    }

    /// A turn: the model reads the context and writes `output`; then `results` (each one
    /// message) join the context.
    pub fn turn<'a>(&mut self, output: &str, results: impl IntoIterator<Item = &'a str>) {
        let output = count(output) + MESSAGE_OVERHEAD;
        self.turns.push(TurnTokens {
            input: self.context,
            output,
        });
        self.context += output;
        for result in results {
            self.context += count(result) + MESSAGE_OVERHEAD;
        }
    }

    /// The turns so far.
    pub fn turns(&self) -> &[TurnTokens] {
        &self.turns
    }

    /// Input tokens over every turn (each turn resends the context).
    pub fn cumulative_input(&self) -> u64 {
        self.turns.iter().map(|t| t.input).sum()
    }

    /// The largest context a turn read.
    pub fn peak_context(&self) -> u64 {
        self.turns.iter().map(|t| t.input).max().unwrap_or(0)
    }

    /// Tokens the model wrote.
    pub fn output(&self) -> u64 {
        self.turns.iter().map(|t| t.output).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_turn_rereads_the_context_and_results_join_it() {
        assert_eq!(count("hello world"), 2);
        let mut c = Conversation::new("", "");
        let start = 2 * MESSAGE_OVERHEAD;
        c.turn("hello world", ["hello world", "hello world"]);
        c.turn("hello", []);
        let after_first = start + (2 + MESSAGE_OVERHEAD) * 3;
        assert_eq!(
            c.turns(),
            &[
                TurnTokens {
                    input: start,
                    output: 2 + MESSAGE_OVERHEAD
                },
                TurnTokens {
                    input: after_first,
                    output: 1 + MESSAGE_OVERHEAD
                },
            ]
        );
        assert_eq!(c.cumulative_input(), start + after_first);
        assert_eq!(c.peak_context(), after_first);
        assert_eq!(c.output(), 3 + 2 * MESSAGE_OVERHEAD);
    }
}

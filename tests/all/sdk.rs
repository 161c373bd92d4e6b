//! The TypeScript SDK generator against a corpus of realistic tool schemas: snapshots,
//! determinism, and type-checking with the real TypeScript compiler.

mod corpus;
mod generate;
pub(crate) mod tsc;

//! codemode: a runtime for Code Mode. A model writes a short TypeScript/JavaScript program
//! against a typed `tools` SDK; the program runs in a sandboxed deno_core isolate, and only what
//! it prints and returns comes back.
//!
//! The [`sandbox`] module runs programs with real limits (see its docs for an example).

#![warn(missing_docs, unreachable_pub, missing_debug_implementations)]

#[cfg(all(feature = "quickjs", feature = "v8"))]
compile_error!(
    "codemode: select exactly one engine. Features `quickjs` (default) and `v8` are both on; build with `--no-default-features --features v8` for V8."
);
#[cfg(not(any(feature = "quickjs", feature = "v8")))]
compile_error!(
    "codemode: select exactly one engine: enable feature `quickjs` (the default) or `v8` (e.g. `--no-default-features --features v8`)."
);

#[cfg(feature = "mimalloc")]
mod alloc;
pub mod bench;
pub mod builtins;
pub mod call;
pub mod harness;
pub mod learned;
pub mod mcp;
pub mod pipeline;
pub mod policy;
pub mod sandbox;
pub mod schema;
pub mod sdk;
pub mod tool;

pub use call::{Extensions, Limits, RunId};
pub use harness::{Harness, HarnessBuilder};
pub use pipeline::{
    CallError, CallOutcome, CallRequest, CallStatus, Caller, ErrorCode, Pipeline, PipelineBuilder,
    Scope, ToolFailure,
};
pub use tool::{ExecContext, ToolDefinition, ToolRegistry};

//! One integration-test binary (the engine links once), a module per capability.

mod common;
mod support;

mod approval;
mod audit_log;
mod builtin_tools;
mod cli;
mod cli_mcp;
mod cli_policy;
mod code_mode;
mod concurrency;
mod errors_and_values;
mod events;
mod fuzz_props;
mod glue_hostile;
mod harness;
mod hooks;
mod hostile_corpus;
mod import;
mod isolation;
mod layering;
mod limits;
mod mcp_e2e;
mod pipeline;
mod policy;
mod programs;
mod registry;
mod scheduler;
mod schema;
mod sdk;
mod session_log;
mod terminal_approver;
mod tool_bindings;
mod tracing_spans;
mod upstream_faults;
mod wrappers;

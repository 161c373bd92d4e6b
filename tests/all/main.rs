//! One integration-test binary (the engine links once), a module per capability.

mod common;

mod cli;
mod concurrency;
mod errors_and_values;
mod isolation;
mod limits;
mod programs;
mod sdk;
mod tool_bindings;

//! Shared fixtures.

use std::sync::{Arc, Mutex};

use codemode::pipeline::{Event, EventSink};
use codemode::schema::{object, string};
use codemode::{ToolDefinition, ToolFailure, ToolRegistry};
use serde_json::{Value, json};

/// `echo({text})` -> `{"echo": text}`, parallel-safe.
pub fn echo_tool(name: &str) -> ToolDefinition {
    ToolDefinition::builder(name)
        .description("echoes its text")
        .parameters(object().property("text", string().description("what to echo")))
        .output_schema(object().property("echo", string()))
        .parallel_safe()
        .execute(|args: Value, _exec| async move {
            Ok::<_, ToolFailure>(json!({ "echo": args["text"] }))
        })
        .build()
        .expect("echo builds")
}

pub fn registry(tools: impl IntoIterator<Item = ToolDefinition>) -> ToolRegistry {
    let mut r = ToolRegistry::new();
    for t in tools {
        r.register(t).expect("registers");
    }
    r
}

/// Collects every event it sees.
#[derive(Clone, Default)]
pub struct Recorder(pub Arc<Mutex<Vec<Event>>>);

impl Recorder {
    pub fn events(&self) -> Vec<Event> {
        self.0.lock().unwrap().clone()
    }

    pub fn names(&self) -> Vec<&'static str> {
        self.events().iter().map(Event::name).collect()
    }
}

impl EventSink for Recorder {
    fn emit(&self, event: &Event) {
        self.0.lock().unwrap().push(event.clone());
    }
}

/// An ordered log of labelled steps, shared between a test and its tools or hooks.
#[derive(Clone, Default)]
pub struct Trace(pub Arc<Mutex<Vec<String>>>);

impl Trace {
    pub fn push(&self, step: impl Into<String>) {
        self.0.lock().unwrap().push(step.into());
    }
    pub fn steps(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

//! A tool's value as the Rust type it was made from, carried beside its JSON.
//!
//! A body built with `ToolBuilder::execute_typed` returns a typed value; the pipeline keeps it
//! next to the JSON (which events, logs and programs read) so that the tool's own render and
//! presenters, and the caller through `CallOutcome::typed`, use it without parsing the JSON
//! back. A post-execute hook that replaces the value drops it: the JSON is then the truth.

use std::any::Any;
use std::fmt;
use std::sync::{Arc, Mutex};

/// A typed value, shared. Read it with [`Typed::downcast`].
#[derive(Clone)]
pub struct Typed(Arc<dyn Any + Send + Sync>);

impl Typed {
    /// Wraps `value`.
    pub fn new<T: Send + Sync + 'static>(value: T) -> Typed {
        Typed(Arc::new(value))
    }

    /// The value, if it is a `T`.
    pub fn downcast<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.0.downcast_ref::<T>()
    }

    /// The value shared, if it is a `T`.
    pub fn downcast_arc<T: Send + Sync + 'static>(&self) -> Option<Arc<T>> {
        Arc::clone(&self.0).downcast::<T>().ok()
    }
}

impl fmt::Debug for Typed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Typed(..)")
    }
}

/// Where a body leaves its typed value for the pipeline (one per call, shared by its
/// attempts: the last attempt's value wins).
#[derive(Clone, Default)]
pub(crate) struct TypedSlot(Arc<Mutex<Option<Typed>>>);

impl TypedSlot {
    pub(crate) fn set(&self, value: Typed) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(value);
    }

    pub(crate) fn take(&self) -> Option<Typed> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}

//! Typed per-call data that rides on the call (the `http::Extensions` pattern of axum).
//!
//! A harness puts what only it understands on a call (the MCP request a run belongs to, a run id
//! it chose, a trace parent) and reads it back wherever the call goes: the tool body's
//! [`ExecContext`](crate::ExecContext), the Approver's request, the events. A `run_code` call's
//! extensions are handed on to every nested call of its program, so an approval asked deep in a
//! run reaches the client that started it. Nothing travels through task-locals.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

/// A map from type to one value of that type. Cloning is cheap: values are shared.
#[derive(Clone, Default)]
pub struct Extensions {
    // `None` until the first insert: most calls carry nothing, and an empty map costs nothing.
    map: Option<Arc<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>>,
}

impl Extensions {
    /// An empty map.
    pub fn new() -> Self {
        Extensions::default()
    }

    /// Puts `value` in, replacing the value of the same type.
    pub fn insert<T: Send + Sync + 'static>(&mut self, value: T) {
        let map = Arc::make_mut(self.map.get_or_insert_with(Default::default));
        map.insert(TypeId::of::<T>(), Arc::new(value));
    }

    /// The value of type `T`, if one was put in.
    pub fn get<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.map
            .as_ref()?
            .get(&TypeId::of::<T>())?
            .downcast_ref::<T>()
    }

    /// Whether nothing was put in.
    pub fn is_empty(&self) -> bool {
        self.map.as_ref().is_none_or(|m| m.is_empty())
    }

    /// Every value of `other` put in over this map's.
    pub fn extend(&mut self, other: &Extensions) {
        let Some(theirs) = &other.map else { return };
        if self.is_empty() {
            self.map = Some(Arc::clone(theirs));
            return;
        }
        let map = Arc::make_mut(self.map.get_or_insert_with(Default::default));
        for (id, value) in theirs.iter() {
            map.insert(*id, Arc::clone(value));
        }
    }
}

/// Two maps are equal when both are empty or both are the same shared map: values of any type
/// cannot be compared, and events that carry a map still need equality.
impl PartialEq for Extensions {
    fn eq(&self, other: &Self) -> bool {
        match (&self.map, &other.map) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => self.is_empty() && other.is_empty(),
        }
    }
}

impl fmt::Debug for Extensions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let len = self.map.as_ref().map_or(0, |m| m.len());
        f.debug_struct("Extensions").field("len", &len).finish()
    }
}

/// The id of a Code Mode run, chosen by whoever issues the `run_code` call (put it in the call's
/// extensions): nested calls then carry `code_mode{run_id, seq}` with that id, and the run can be
/// stopped by it. Without one, the sandbox makes a fresh id.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RunId(pub Arc<str>);

impl RunId {
    /// A fresh id: `r_` and 32 hex digits.
    pub fn fresh() -> RunId {
        RunId(format!("r_{}", uuid::Uuid::new_v4().simple()).into())
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// How deep in the program's chain of results a nested call sits: 1 plus the highest wave among
/// the calls whose results the program had received when it issued this one (1 when it had
/// received none). Calls issued together (`Promise.all`) share a wave; a call made after
/// awaiting another comes one wave later. A model calling tools directly would need one turn
/// per wave (`codemode bench` plans with it). Nested calls carry it when their run asked for
/// it with [`TrackWaves`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CallWave(pub u64);

/// Put on a run (in the extensions of its `run_code` call, or of
/// [`RunOptions`](crate::sandbox::RunOptions)) to have every nested call carry its
/// [`CallWave`]. Off by default: knowing when the program received a result takes a promise
/// reaction per call in the isolate (about 22,000 instructions, +55% on a minimal call).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct TrackWaves;

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq)]
    struct Route(u32);

    #[test]
    fn values_are_found_by_type_and_replaced_by_type() {
        let mut ext = Extensions::new();
        assert!(ext.is_empty());
        assert_eq!(ext.get::<Route>(), None);
        ext.insert(Route(1));
        ext.insert(RunId("r_1".into()));
        ext.insert(Route(2));
        assert_eq!(ext.get::<Route>(), Some(&Route(2)));
        assert_eq!(ext.get::<RunId>().map(RunId::as_str), Some("r_1"));
    }

    #[test]
    fn a_clone_does_not_see_later_inserts_and_extend_overrides() {
        let mut a = Extensions::new();
        a.insert(Route(1));
        let b = a.clone();
        a.insert(RunId("r_a".into()));
        assert_eq!(b.get::<RunId>(), None);
        let mut c = Extensions::new();
        c.insert(Route(9));
        c.extend(&a);
        assert_eq!(c.get::<Route>(), Some(&Route(1)));
        assert_eq!(c.get::<RunId>().map(RunId::as_str), Some("r_a"));
    }
}

//! The shape of a tool's results, learned by folding them one by one.
//!
//! A [`Shape`] records which JSON kinds were seen at a position and, for objects, how often
//! each field was there. It never keeps a value: strings stay `string`, numbers `number`, and
//! no literal or enum type is ever inferred. Field names are kept (they are the type).
//!
//! Folding is order-independent below the storage budget ([`MAX_NODES`]): the shape of a set of
//! results does not depend on the order they came in, and two shapes [`merge`](Shape::merge) to
//! the shape of both their results. That is what lets several processes share one cache file.
//! Rendering takes its own, smaller budget ([`RENDERED_NODES`]) from a copy, so what is kept
//! never depends on what was shown.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Positions deeper than this (the result itself is depth 0) become `unknown`.
pub const MAX_DEPTH: usize = 8;
/// An object position that has seen more distinct field names than this is a map: its names
/// are dropped and their values merged into one `[key: string]: T` (ids as keys would
/// otherwise be learned as field names, and grow without bound).
pub const MAX_FIELDS: usize = 64;
/// A name longer than this (in bytes) is data, not a field name: its object is a map at once.
/// So are names that are all digits, hold whitespace, a `/`, an `@` after the first character,
/// or look like a UUID (ids, paths and e-mail addresses used as keys).
pub const MAX_NAME_BYTES: usize = 64;
/// At most this many elements of one array are folded per result (the first ones).
pub const MAX_ARRAY_SAMPLE: usize = 1_000;
/// A kept shape above this many positions loses depth until it fits (the deepest levels become
/// `unknown`), so one tool's entry stays bounded whatever it returns.
pub const MAX_NODES: usize = 10_000;
/// What the SDK shows of a shape: a copy above this many positions loses depth until it fits.
pub const RENDERED_NODES: usize = 1_000;

/// The kinds seen at one position of a result. An empty shape is `never` (e.g. the elements of
/// arrays that were always empty).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Shape {
    #[serde(default, skip_serializing_if = "is_false")]
    /// `null` was seen.
    pub null: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    /// A boolean was seen.
    pub boolean: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    /// A number was seen (integer or not: no finer kind is kept).
    pub number: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    /// A string was seen.
    pub string: bool,
    /// The elements of every array seen here, merged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub array: Option<Box<Shape>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The objects seen here.
    pub object: Option<ObjectShape>,
    /// Past a cap: any value.
    #[serde(default, skip_serializing_if = "is_false")]
    pub unknown: bool,
}

/// The objects seen at one position.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ObjectShape {
    /// How many objects were folded here; a field seen in all of them is required.
    pub count: u64,
    /// By name (sorted, so the rendering does not depend on the order results came in).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub fields: BTreeMap<String, FieldShape>,
    /// Set once the position had more than [`MAX_FIELDS`] names: every value, names dropped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub map: Option<Box<Shape>>,
}

/// One field of an object position.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FieldShape {
    /// In how many of the position's objects the field was present.
    pub seen: u64,
    /// Its values.
    pub shape: Shape,
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl Shape {
    /// The shape of one value.
    pub fn of(value: &Value) -> Shape {
        let mut shape = Shape::default();
        shape.fold(value);
        shape
    }

    /// Adds one observation (a whole result) to the shape.
    pub fn fold(&mut self, value: &Value) {
        self.fold_at(value, 0);
        self.fit_budget(MAX_NODES);
    }

    /// Adds every observation of `other`.
    pub fn merge(&mut self, other: &Shape) {
        self.merge_at(other, 0);
        self.fit_budget(MAX_NODES);
    }

    /// A copy with at most `nodes` positions: the deepest levels become `unknown` until it fits.
    pub fn within(&self, nodes: usize) -> Shape {
        let mut copy = self.clone();
        copy.fit_budget(nodes);
        copy
    }

    /// Whether no value was ever seen here (`never`).
    pub fn is_empty(&self) -> bool {
        *self == Shape::default()
    }

    /// How many positions the shape describes (each kind at each position counts one).
    pub fn nodes(&self) -> usize {
        let scalars = [
            self.null,
            self.boolean,
            self.number,
            self.string,
            self.unknown,
        ]
        .into_iter()
        .filter(|b| *b)
        .count();
        let array = self.array.as_ref().map_or(0, |items| 1 + items.nodes());
        let object = self.object.as_ref().map_or(0, |object| {
            1 + object
                .fields
                .values()
                .map(|f| f.shape.nodes())
                .sum::<usize>()
                + object.map.as_ref().map_or(0, |m| m.nodes())
        });
        scalars + array + object
    }

    fn fold_at(&mut self, value: &Value, depth: usize) {
        if depth > MAX_DEPTH {
            self.become_unknown();
            return;
        }
        if self.unknown {
            return;
        }
        match value {
            Value::Null => self.null = true,
            Value::Bool(_) => self.boolean = true,
            Value::Number(_) => self.number = true,
            Value::String(_) => self.string = true,
            Value::Array(items) => {
                let elements = self.array.get_or_insert_with(Box::default);
                for item in items.iter().take(MAX_ARRAY_SAMPLE) {
                    elements.fold_at(item, depth + 1);
                }
            }
            Value::Object(fields) => {
                let object = self.object.get_or_insert_with(ObjectShape::default);
                object.count += 1;
                if object.map.is_none() && fields.keys().any(|name| is_data_like(name)) {
                    object.become_map();
                }
                for (name, value) in fields {
                    if let Some(map) = object.map.as_mut() {
                        map.fold_at(value, depth + 1);
                        continue;
                    }
                    // `get_mut` first: the name is only copied the first time it is seen.
                    let field = match object.fields.get_mut(name.as_str()) {
                        Some(field) => field,
                        None => object.fields.entry(name.clone()).or_default(),
                    };
                    field.seen += 1;
                    field.shape.fold_at(value, depth + 1);
                    // Checked per name: a result with a million keys never holds them all.
                    object.collapse_if_wide();
                }
            }
        }
    }

    fn merge_at(&mut self, other: &Shape, depth: usize) {
        if depth > MAX_DEPTH || other.unknown {
            if !other.is_empty() {
                self.become_unknown();
            }
            return;
        }
        if self.unknown {
            return;
        }
        self.null |= other.null;
        self.boolean |= other.boolean;
        self.number |= other.number;
        self.string |= other.string;
        if let Some(items) = &other.array {
            self.array
                .get_or_insert_with(Box::default)
                .merge_at(items, depth + 1);
        }
        if let Some(theirs) = &other.object {
            let ours = self.object.get_or_insert_with(ObjectShape::default);
            ours.count += theirs.count;
            for (name, field) in &theirs.fields {
                match ours.map.as_mut() {
                    Some(map) => map.merge_at(&field.shape, depth + 1),
                    None => {
                        let mine = ours.fields.entry(name.clone()).or_default();
                        mine.seen += field.seen;
                        mine.shape.merge_at(&field.shape, depth + 1);
                    }
                }
            }
            if let Some(map) = &theirs.map {
                ours.become_map();
                let mine = ours.map.as_mut().expect("a map now");
                mine.merge_at(map, depth + 1);
            }
            ours.collapse_if_wide();
        }
    }

    /// Any value from here on: the kinds and structure below are dropped.
    fn become_unknown(&mut self) {
        *self = Shape {
            unknown: true,
            ..Shape::default()
        };
    }

    /// Drops depth until the shape has at most `budget` positions.
    fn fit_budget(&mut self, budget: usize) {
        let mut depth = MAX_DEPTH;
        while self.nodes() > budget && depth > 0 {
            depth -= 1;
            self.truncate(0, depth);
        }
    }

    fn truncate(&mut self, depth: usize, max: usize) {
        if depth > max {
            if !self.is_empty() {
                self.become_unknown();
            }
            return;
        }
        if let Some(items) = self.array.as_mut() {
            items.truncate(depth + 1, max);
        }
        if let Some(object) = self.object.as_mut() {
            for field in object.fields.values_mut() {
                field.shape.truncate(depth + 1, max);
            }
            if let Some(map) = object.map.as_mut() {
                map.truncate(depth + 1, max);
            }
        }
    }
}

/// Whether a key is more likely a value (an id, a path, an address) than a field name.
fn is_data_like(name: &str) -> bool {
    let bytes = name.as_bytes();
    name.len() > MAX_NAME_BYTES
        || (!bytes.is_empty() && bytes.iter().all(u8::is_ascii_digit))
        || name.chars().any(char::is_whitespace)
        || name.contains('/')
        || name.find('@').is_some_and(|i| i > 0)
        || is_uuid(bytes)
}

/// `8-4-4-4-12` hex digits.
fn is_uuid(bytes: &[u8]) -> bool {
    bytes.len() == 36
        && bytes.iter().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => *b == b'-',
            _ => b.is_ascii_hexdigit(),
        })
}

impl ObjectShape {
    /// Whether a field is present in every object seen here.
    pub fn is_required(&self, field: &FieldShape) -> bool {
        field.seen >= self.count
    }

    fn collapse_if_wide(&mut self) {
        if self.fields.len() > MAX_FIELDS {
            self.become_map();
        }
    }

    /// Names dropped, their values merged.
    fn become_map(&mut self) {
        if self.map.is_some() {
            return;
        }
        let mut values = Shape::default();
        for field in std::mem::take(&mut self.fields).into_values() {
            // Depth was already capped when the fields were folded.
            values.merge_at(&field.shape, 0);
        }
        self.map = Some(Box::new(values));
    }
}

#[cfg(test)]
mod tests;

//! Schema-conforming sample values, for mock executors (`codemode run --tools FILE`).
//!
//! Generation is heuristic, so every choice between alternatives (`oneOf`, `anyOf`, type arrays)
//! is checked with the real validator and the first candidate that validates wins.

use serde_json::{Map, Value, json};

const MAX_DEPTH: usize = 16;
/// Sub-schemas sampled (and alternatives validated) for one value at most: `anyOf` inside
/// `anyOf` through a `$ref` would otherwise branch exponentially with the depth. Past it, the
/// rest of the value is `null`.
const MAX_STEPS: usize = 5_000;
/// The longest string a sample is padded to for `minLength`.
const MAX_SAMPLE_CHARS: u64 = 4_096;

/// A value that validates against `schema` for the common shapes (object, array, string, number,
/// integer, boolean, null, enum, const, oneOf, anyOf, allOf, local `$ref`); `null` when unknown.
/// Bounded whatever the schema: `$ref` cycles end at a depth limit, and the work at a step budget.
pub fn sample_value(schema: &Value) -> Value {
    Sampler {
        root: schema,
        steps: std::cell::Cell::new(0),
    }
    .sample(schema, 0)
}

struct Sampler<'a> {
    root: &'a Value,
    /// Steps taken so far (see [`MAX_STEPS`]).
    steps: std::cell::Cell<usize>,
}

impl Sampler<'_> {
    /// Takes one step of the budget; `false` once it is spent.
    fn step(&self) -> bool {
        let taken = self.steps.get();
        self.steps.set(taken + 1);
        taken < MAX_STEPS
    }

    fn sample(&self, schema: &Value, depth: usize) -> Value {
        let Value::Object(s) = schema else {
            return Value::Null;
        };
        if depth > MAX_DEPTH || !self.step() {
            return Value::Null;
        }
        if let Some(v) = s.get("const") {
            return v.clone();
        }
        if let Some(Value::Array(values)) = s.get("enum") {
            return values.first().cloned().unwrap_or(Value::Null);
        }
        if let Some(Value::String(r)) = s.get("$ref") {
            return match self.resolve(r) {
                Some(target) => self.sample(target, depth + 1),
                None => Value::Null,
            };
        }
        if let Some(Value::Array(parts)) = s.get("allOf") {
            return self.sample(&merge_all(s, parts, self), depth + 1);
        }
        for key in ["oneOf", "anyOf"] {
            if let Some(Value::Array(options)) = s.get(key) {
                let candidates: Vec<Value> =
                    options.iter().map(|o| self.sample(o, depth + 1)).collect();
                return self.first_valid(schema, candidates);
            }
        }
        if let Some(v) = s
            .get("default")
            .or_else(|| s.get("examples").and_then(|e| e.get(0)))
            && self.valid(schema, v)
        {
            return v.clone();
        }
        match s.get("type") {
            Some(Value::String(t)) => self.of_type(t, s, depth),
            Some(Value::Array(types)) => {
                let candidates = types
                    .iter()
                    .filter_map(Value::as_str)
                    .map(|t| self.of_type(t, s, depth))
                    .collect();
                self.first_valid(schema, candidates)
            }
            _ if s.contains_key("properties") => self.of_type("object", s, depth),
            _ if s.contains_key("items") => self.of_type("array", s, depth),
            _ => Value::Null,
        }
    }

    fn of_type(&self, ty: &str, s: &Map<String, Value>, depth: usize) -> Value {
        match ty {
            "object" => {
                let mut out = Map::new();
                if let Some(Value::Object(props)) = s.get("properties") {
                    for (name, sub) in props {
                        out.insert(name.clone(), self.sample(sub, depth + 1));
                    }
                }
                Value::Object(out)
            }
            "array" => {
                let n = s
                    .get("minItems")
                    .and_then(Value::as_u64)
                    .unwrap_or(1)
                    .min(8);
                let n = s
                    .get("maxItems")
                    .and_then(Value::as_u64)
                    .map_or(n, |m| n.min(m));
                let items = s
                    .get("items")
                    .map(|i| self.sample(i, depth + 1))
                    .unwrap_or(Value::Null);
                Value::Array((0..n).map(|_| items.clone()).collect())
            }
            "string" => Value::String(sample_string(s)),
            "integer" => sample_number(s, true),
            "number" => sample_number(s, false),
            "boolean" => Value::Bool(true),
            _ => Value::Null,
        }
    }

    fn resolve(&self, reference: &str) -> Option<&Value> {
        let pointer = reference.strip_prefix('#')?;
        self.root.pointer(pointer)
    }

    fn first_valid(&self, schema: &Value, candidates: Vec<Value>) -> Value {
        let fallback = candidates.first().cloned().unwrap_or(Value::Null);
        candidates
            .into_iter()
            .find(|c| self.step() && self.valid(schema, c))
            .unwrap_or(fallback)
    }

    /// Validates against a sub-schema with the root's definitions in reach of its `$ref`s.
    fn valid(&self, schema: &Value, value: &Value) -> bool {
        let mut with_defs = schema.clone();
        if let (Value::Object(target), Value::Object(root)) = (&mut with_defs, self.root) {
            for key in ["$defs", "definitions"] {
                if let Some(defs) = root.get(key) {
                    target.entry(key).or_insert_with(|| defs.clone());
                }
            }
        }
        jsonschema::validator_for(&with_defs)
            .map(|v| v.is_valid(value))
            .unwrap_or(false)
    }
}

/// Folds `allOf` parts (resolving `$ref`s) into one schema: properties and required lists are
/// united, other keywords taken from the first part that has them.
fn merge_all(base: &Map<String, Value>, parts: &[Value], sampler: &Sampler<'_>) -> Value {
    let mut merged = base.clone();
    merged.remove("allOf");
    for part in parts {
        let mut part = part;
        // A chain of `$ref`s is followed at most MAX_DEPTH links: a cycle ends there.
        let mut hops = 0;
        while let Some(Value::String(r)) = part.get("$ref") {
            match sampler.resolve(r) {
                Some(t) if hops < MAX_DEPTH => part = t,
                _ => break,
            }
            hops += 1;
        }
        let Value::Object(p) = part else { continue };
        for (k, v) in p {
            match (k.as_str(), merged.get_mut(k), v) {
                ("properties", Some(Value::Object(have)), Value::Object(add)) => {
                    have.extend(add.iter().map(|(a, b)| (a.clone(), b.clone())));
                }
                ("required", Some(Value::Array(have)), Value::Array(add)) => {
                    have.extend(add.iter().cloned())
                }
                (_, Some(_), _) => {}
                (_, None, _) => {
                    merged.insert(k.clone(), v.clone());
                }
            }
        }
    }
    Value::Object(merged)
}

fn sample_string(s: &Map<String, Value>) -> String {
    let base = match s.get("format").and_then(Value::as_str) {
        Some("date-time") => "2024-01-01T00:00:00Z",
        Some("date") => "2024-01-01",
        Some("time") => "00:00:00Z",
        Some("email") => "user@example.com",
        Some("uri") | Some("url") => "https://example.com/",
        Some("uuid") => "00000000-0000-4000-8000-000000000000",
        Some("ipv4") => "127.0.0.1",
        Some("ipv6") => "::1",
        Some("hostname") => "example.com",
        _ => "string",
    };
    let mut out = base.to_owned();
    // A sample, not a stress test: a `minLength` past this is not met (the mock's value then
    // fails its own output check, with a message saying so, instead of hanging on a huge fill).
    let min = s
        .get("minLength")
        .and_then(Value::as_u64)
        .unwrap_or(0)
        .min(MAX_SAMPLE_CHARS) as usize;
    let have = out.chars().count();
    if have < min {
        out.push_str(&"x".repeat(min - have));
    }
    if let Some(max) = s.get("maxLength").and_then(Value::as_u64) {
        out = out.chars().take(max as usize).collect();
    }
    out
}

fn sample_number(s: &Map<String, Value>, integer: bool) -> Value {
    let num = |k: &str| s.get(k).and_then(Value::as_f64);
    let step = if integer { 1.0 } else { 0.5 };
    let mut n = 0.0_f64;
    if let Some(m) = num("minimum") {
        n = n.max(m);
    }
    if let Some(m) = num("exclusiveMinimum") {
        n = n.max(m + step);
    }
    if let Some(m) = num("maximum") {
        n = n.min(m);
    }
    if let Some(m) = num("exclusiveMaximum") {
        n = n.min(m - step);
    }
    if let Some(k) = num("multipleOf").filter(|k| *k > 0.0) {
        n = (n / k).ceil() * k;
    }
    if integer {
        json!(n.ceil() as i64)
    } else if n.fract() == 0.0 && n.abs() < 1e15 {
        json!(n as i64)
    } else {
        json!(n)
    }
}

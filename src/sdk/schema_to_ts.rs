//! JSON Schema -> [`TsType`].
//!
//! One [`Converter`] per schema document (a tool's input or its output schema): local `$ref`s
//! are resolved against that document and become named declarations prefixed with the tool's
//! name, so two tools may both define `$defs/Node` without clashing. Named declarations are
//! also what makes recursive schemas finite.
//!
//! The mapping errs towards accepting: a keyword TypeScript cannot express (`not`, `if`,
//! `pattern`) widens the type or moves to the JSDoc, it never makes a valid value a type error.

use std::collections::{HashMap, VecDeque};

use serde_json::{Map, Value};

use super::jsdoc::Doc;
use super::naming::{NameAllocator, pascal_case, string_literal};
use super::ts_type::{ObjectType, Property, TsType, Tuple};

/// A named type to declare: `interface Name {...}` or `type Name = ...;`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Declaration {
    pub name: String,
    pub doc: Doc,
    pub ty: TsType,
}

/// Converts `schema` into its declarations: the root named `root_name` first, then every
/// `$ref` target it reaches, in order of first reference, named `{def_prefix}{Def}`.
pub(crate) fn convert_document(
    schema: &Value,
    root_name: &str,
    def_prefix: &str,
    names: &mut NameAllocator,
) -> Vec<Declaration> {
    let mut converter = Converter {
        root: schema,
        root_name,
        def_prefix,
        names,
        ref_names: HashMap::new(),
        pending: VecDeque::new(),
    };
    let mut declarations = vec![Declaration {
        name: root_name.to_owned(),
        doc: Doc::of_schema(schema),
        ty: converter.convert(schema),
    }];
    while let Some((name, target)) = converter.pending.pop_front() {
        let ty = converter.convert(target);
        declarations.push(Declaration {
            name,
            doc: Doc::of_schema(target),
            ty,
        });
    }
    declarations
}

struct Converter<'a> {
    root: &'a Value,
    root_name: &'a str,
    def_prefix: &'a str,
    names: &'a mut NameAllocator,
    /// `$ref` string -> declared name, so each target is declared once.
    ref_names: HashMap<String, String>,
    /// Targets named but not yet declared.
    pending: VecDeque<(String, &'a Value)>,
}

impl<'a> Converter<'a> {
    fn convert(&mut self, schema: &'a Value) -> TsType {
        match schema {
            Value::Bool(false) => TsType::NEVER,
            Value::Object(map) => self.convert_map(map),
            // `true` and anything that is not a schema accept every value.
            _ => TsType::UNKNOWN,
        }
    }

    /// For positions without a JSDoc slot (items, union members): keeps the format visible.
    fn convert_inline(&mut self, schema: &'a Value) -> TsType {
        let ty = self.convert(schema);
        match schema.get("format").and_then(Value::as_str) {
            Some(format) if ty != TsType::UNKNOWN => {
                TsType::Commented(format!("format: {format}"), Box::new(ty))
            }
            _ => ty,
        }
    }

    /// A schema is the conjunction of its keywords, so each group of keywords yields one part
    /// and the parts are intersected.
    fn convert_map(&mut self, map: &'a Map<String, Value>) -> TsType {
        let mut parts = Vec::new();
        if let Some(reference) = map.get("$ref").and_then(Value::as_str) {
            parts.push(self.reference(reference));
        }
        if let Some(value) = map.get("const") {
            parts.push(literal(value));
        } else if let Some(values) = map.get("enum").and_then(Value::as_array) {
            parts.push(TsType::union(values.iter().map(literal)));
        } else if let Some(typed) = self.typed(map) {
            parts.push(typed);
        }
        if let Some(members) = map.get("allOf").and_then(Value::as_array) {
            for member in members {
                parts.push(self.convert_inline(member));
            }
        }
        for keyword in ["oneOf", "anyOf"] {
            if let Some(members) = map.get(keyword).and_then(Value::as_array) {
                let members: Vec<TsType> = members.iter().map(|m| self.convert_inline(m)).collect();
                parts.push(TsType::union(members));
            }
        }
        // `{type: "object", oneOf: [...]}`: the members say everything; a bare
        // `{ [key: string]: unknown } &` in front would only add noise.
        if parts.len() > 1 && parts.iter().any(|p| *p != bare_object()) {
            parts.retain(|p| *p != bare_object());
        }
        let ty = TsType::intersection(parts);
        if map.get("nullable") == Some(&Value::Bool(true)) {
            TsType::union([ty, TsType::NULL])
        } else {
            ty
        }
    }

    /// The `type` keyword (a name or a list of names); inferred from object or array keywords
    /// when absent, because imported schemas often omit it.
    fn typed(&mut self, map: &'a Map<String, Value>) -> Option<TsType> {
        let names: Vec<&str> = match map.get("type") {
            Some(Value::String(name)) => vec![name.as_str()],
            Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
            _ if OBJECT_KEYWORDS.iter().any(|k| map.contains_key(*k)) => vec!["object"],
            _ if ARRAY_KEYWORDS.iter().any(|k| map.contains_key(*k)) => vec!["array"],
            _ => return None,
        };
        if names.is_empty() {
            // `type: []` is malformed; treat it as absent rather than as "no value fits".
            return None;
        }
        let members: Vec<TsType> = names
            .into_iter()
            .map(|name| self.primitive(name, map))
            .collect();
        Some(TsType::union(members))
    }

    fn primitive(&mut self, name: &str, map: &'a Map<String, Value>) -> TsType {
        match name {
            "string" => TsType::Keyword("string"),
            "number" | "integer" => TsType::Keyword("number"),
            "boolean" => TsType::Keyword("boolean"),
            "null" => TsType::NULL,
            "array" => self.array(map),
            "object" => TsType::Object(self.object(map)),
            _ => TsType::UNKNOWN,
        }
    }

    fn array(&mut self, map: &'a Map<String, Value>) -> TsType {
        // 2020-12 tuples use `prefixItems` + `items`; draft 7 used `items: [...]` +
        // `additionalItems`. Both describe a fixed head and an optional typed tail.
        let (head, tail) = match (map.get("prefixItems"), map.get("items")) {
            (Some(Value::Array(head)), tail) => (head, tail),
            (_, Some(Value::Array(head))) => (head, map.get("additionalItems")),
            (_, Some(items)) => return TsType::Array(Box::new(self.convert_inline(items))),
            (_, None) => return TsType::Array(Box::new(TsType::UNKNOWN)),
        };
        let elements: Vec<TsType> = head.iter().map(|item| self.convert_inline(item)).collect();
        let max_items = map.get("maxItems").and_then(Value::as_u64);
        let closed_by_max = max_items.is_some_and(|max| max <= elements.len() as u64);
        let rest = match tail {
            _ if closed_by_max => None,
            Some(Value::Bool(false)) => None,
            Some(schema) => Some(Box::new(self.convert_inline(schema))),
            None => Some(Box::new(TsType::UNKNOWN)),
        };
        let required = map.get("minItems").and_then(Value::as_u64).unwrap_or(0);
        TsType::Tuple(Tuple {
            elements,
            required: usize::try_from(required).unwrap_or(usize::MAX),
            rest,
        })
    }

    fn object(&mut self, map: &'a Map<String, Value>) -> ObjectType {
        let required: Vec<&str> = map
            .get("required")
            .and_then(Value::as_array)
            .map(|names| names.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut properties = Vec::new();
        if let Some(Value::Object(declared)) = map.get("properties") {
            for (name, schema) in declared {
                properties.push(Property {
                    name: name.clone(),
                    optional: !required.contains(&name.as_str()),
                    ty: self.convert(schema),
                    doc: Doc::of_schema(schema),
                });
            }
        }
        // A name that is required but not described must still be passed.
        for name in &required {
            if !properties.iter().any(|p| p.name == *name) {
                properties.push(Property {
                    name: (*name).to_owned(),
                    optional: false,
                    ty: TsType::UNKNOWN,
                    doc: Doc::default(),
                });
            }
        }
        let index = self.index_signature(map, &properties);
        ObjectType {
            properties,
            index: index.map(Box::new),
        }
    }

    /// `additionalProperties` / `patternProperties` as `[key: string]: T`.
    ///
    /// TypeScript requires every property to fit the index type, so the declared properties'
    /// types (and `undefined` for optional ones) join the union.
    fn index_signature(
        &mut self,
        map: &'a Map<String, Value>,
        properties: &[Property],
    ) -> Option<TsType> {
        let mut values = Vec::new();
        match map.get("additionalProperties") {
            Some(Value::Bool(false)) => {}
            Some(schema) => values.push(self.convert_inline(schema)),
            // JSON Schema leaves objects open by default, but a schema that names its
            // properties means "these" (and the closed type catches the model's typos); only a
            // schema that names nothing is a free-form map.
            None if !NAMING_KEYWORDS.iter().any(|k| map.contains_key(*k)) => {
                values.push(TsType::UNKNOWN)
            }
            None => {}
        }
        if let Some(Value::Object(patterns)) = map.get("patternProperties") {
            for schema in patterns.values() {
                values.push(self.convert_inline(schema));
            }
        }
        if values.is_empty() {
            return None;
        }
        values.extend(properties.iter().map(|p| p.ty.clone()));
        if properties.iter().any(|p| p.optional) {
            values.push(TsType::Keyword("undefined"));
        }
        Some(TsType::union(values))
    }

    fn reference(&mut self, reference: &str) -> TsType {
        if let Some(name) = self.ref_names.get(reference) {
            return TsType::Named(name.clone());
        }
        let Some(fragment) = reference.strip_prefix('#') else {
            return unresolved(reference);
        };
        if fragment.is_empty() {
            return TsType::Named(self.root_name.to_owned());
        }
        let pointer = percent_decode(fragment);
        let Some(target) = self.root.pointer(&pointer) else {
            return unresolved(reference);
        };
        let last = pointer.rsplit('/').next().unwrap_or_default();
        let last = last.replace("~1", "/").replace("~0", "~");
        let name = self
            .names
            .allocate(&format!("{}{}", self.def_prefix, pascal_case(&last)));
        self.ref_names.insert(reference.to_owned(), name.clone());
        self.pending.push_back((name.clone(), target));
        TsType::Named(name)
    }
}

const OBJECT_KEYWORDS: &[&str] = &[
    "properties",
    "additionalProperties",
    "patternProperties",
    "required",
];
/// Keywords that name an object's keys, making it a record rather than a map.
const NAMING_KEYWORDS: &[&str] = &["properties", "patternProperties", "required"];
const ARRAY_KEYWORDS: &[&str] = &["items", "prefixItems"];

/// What `{type: "object"}` alone maps to.
fn bare_object() -> TsType {
    TsType::Object(ObjectType {
        properties: Vec::new(),
        index: Some(Box::new(TsType::UNKNOWN)),
    })
}

/// A JSON value as a literal type; object and array values are valid TypeScript type
/// literals too (`{"a":1}`, `[1,2]`).
fn literal(value: &Value) -> TsType {
    match value {
        Value::String(text) => TsType::Literal(string_literal(text)),
        Value::Null => TsType::NULL,
        other => TsType::Literal(other.to_string()),
    }
}

/// Remote and broken refs cannot be followed offline; `unknown` keeps the SDK compiling.
fn unresolved(reference: &str) -> TsType {
    TsType::Commented(
        format!("unresolved $ref: {reference}"),
        Box::new(TsType::UNKNOWN),
    )
}

/// `$ref` fragments are URI fragments: `%24defs` means `$defs`.
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| text.to_owned())
}

#[cfg(test)]
mod tests;

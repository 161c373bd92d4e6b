//! A typed builder for the JSON Schemas of tool parameters and outputs.
//!
//! Object properties are required unless marked `.optional()` or given a `.default(..)`, because a
//! model reads "required" as "must send" and most tool arguments are mandatory.

use serde_json::{Map, Value};

/// A JSON Schema under construction. Convert with `Value::from(schema)` or [`Schema::into_json`].
#[derive(Clone, Debug, PartialEq)]
pub struct Schema {
    json: Map<String, Value>,
    optional: bool,
}

fn typed(ty: &str) -> Schema {
    let mut json = Map::new();
    json.insert("type".into(), Value::from(ty));
    Schema {
        json,
        optional: false,
    }
}

/// `{"type":"string"}`
pub fn string() -> Schema {
    typed("string")
}
/// `{"type":"number"}`
pub fn number() -> Schema {
    typed("number")
}
/// `{"type":"integer"}`
pub fn integer() -> Schema {
    typed("integer")
}
/// `{"type":"boolean"}`
pub fn boolean() -> Schema {
    typed("boolean")
}
/// `{"type":"null"}`
pub fn null() -> Schema {
    typed("null")
}
/// `{"type":"array","items":..}`
pub fn array(items: Schema) -> Schema {
    typed("array").keyword("items", items.into_json())
}
/// An object without properties yet; add them with [`Schema::property`]. Extra properties are
/// rejected (`additionalProperties: false`) so a misspelt argument is reported, not ignored.
pub fn object() -> Schema {
    typed("object")
        .keyword("properties", Value::Object(Map::new()))
        .keyword("additionalProperties", Value::Bool(false))
}
/// Exactly one of the given schemas.
pub fn one_of(options: impl IntoIterator<Item = Schema>) -> Schema {
    let list = options.into_iter().map(Schema::into_json).collect();
    Schema::raw(Map::new()).keyword("oneOf", Value::Array(list))
}
/// Any of the given schemas.
pub fn any_of(options: impl IntoIterator<Item = Schema>) -> Schema {
    let list = options.into_iter().map(Schema::into_json).collect();
    Schema::raw(Map::new()).keyword("anyOf", Value::Array(list))
}
/// One of a fixed list of values.
pub fn enum_<V: Into<Value>>(values: impl IntoIterator<Item = V>) -> Schema {
    let list = values.into_iter().map(Into::into).collect();
    Schema::raw(Map::new()).keyword("enum", Value::Array(list))
}
/// Exactly this value.
pub fn const_(value: impl Into<Value>) -> Schema {
    Schema::raw(Map::new()).keyword("const", value.into())
}

impl Schema {
    /// Wraps an arbitrary JSON Schema object (imported tools, hand-written schemas).
    pub fn raw(json: Map<String, Value>) -> Self {
        Schema {
            json,
            optional: false,
        }
    }

    /// Sets any keyword; the escape hatch for everything the DSL does not name.
    pub fn keyword(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.json.insert(key.to_owned(), value.into());
        self
    }

    /// Text shown to the model (JSDoc in the SDK).
    pub fn description(self, text: impl Into<String>) -> Self {
        self.keyword("description", Value::String(text.into()))
    }

    /// A default value; the property becomes optional in its object.
    pub fn default(mut self, value: impl Into<Value>) -> Self {
        self.optional = true;
        self.keyword("default", value.into())
    }

    /// Marks this schema optional when used as an object property.
    pub fn optional(mut self) -> Self {
        self.optional = true;
        self
    }

    /// Marks this schema required when used as an object property (the default).
    pub fn required(mut self) -> Self {
        self.optional = false;
        self
    }

    /// Whether an enclosing object lists this property as required.
    pub fn is_optional(&self) -> bool {
        self.optional
    }

    /// Also accepts `null` (a type array with `"null"`, or an `anyOf` when there is no `type`).
    pub fn nullable(mut self) -> Self {
        match self.json.remove("type") {
            Some(Value::String(t)) => {
                self.json
                    .insert("type".into(), Value::from(vec![t, "null".to_owned()]));
                self
            }
            Some(other) => {
                self.json.insert("type".into(), other);
                self
            }
            None => any_of([self, null()]),
        }
    }

    /// Adds a property to an object schema.
    pub fn property(mut self, name: &str, schema: Schema) -> Self {
        let required = !schema.optional;
        if let Some(Value::Object(props)) = self.json.get_mut("properties") {
            props.insert(name.to_owned(), schema.into_json());
        } else {
            let mut props = Map::new();
            props.insert(name.to_owned(), schema.into_json());
            self.json.insert("properties".into(), Value::Object(props));
        }
        if required {
            match self.json.get_mut("required") {
                Some(Value::Array(list)) => list.push(Value::from(name)),
                _ => {
                    self.json.insert("required".into(), Value::from(vec![name]));
                }
            }
        }
        self
    }

    /// Allows properties that are not declared (objects are closed by default).
    pub fn allow_additional(self) -> Self {
        self.keyword("additionalProperties", Value::Bool(true))
    }

    /// `minimum` for numbers and integers.
    pub fn minimum(self, n: impl Into<Value>) -> Self {
        self.keyword("minimum", n.into())
    }
    /// `maximum` for numbers and integers.
    pub fn maximum(self, n: impl Into<Value>) -> Self {
        self.keyword("maximum", n.into())
    }
    /// `minLength` for strings.
    pub fn min_length(self, n: u64) -> Self {
        self.keyword("minLength", n)
    }
    /// `maxLength` for strings.
    pub fn max_length(self, n: u64) -> Self {
        self.keyword("maxLength", n)
    }
    /// `pattern` for strings (ECMA-262 regular expression).
    pub fn pattern(self, re: &str) -> Self {
        self.keyword("pattern", re)
    }
    /// `minItems` for arrays.
    pub fn min_items(self, n: u64) -> Self {
        self.keyword("minItems", n)
    }
    /// `maxItems` for arrays.
    pub fn max_items(self, n: u64) -> Self {
        self.keyword("maxItems", n)
    }

    /// The finished JSON Schema.
    pub fn into_json(self) -> Value {
        Value::Object(self.json)
    }
}

impl From<Schema> for Value {
    fn from(schema: Schema) -> Value {
        schema.into_json()
    }
}

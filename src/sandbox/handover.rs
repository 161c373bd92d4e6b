//! A structured tool result handed to the engine in QuickJS's own binary object format, which the
//! engine facade's `ValueDeserializer` reads with `JS_ReadObject`, instead of as JSON text for
//! `JSON.parse`.
//!
//! Why: for a large result, `JSON.parse` was the largest part of the hand-over (W4: 4.3 of the
//! call's 10 ms for 10,000 records). It allocates a string for every key of every object and
//! atomises it, and it reads every number with `strtod` into a float. The binary format names
//! each key once, in an atom table, and carries integers as integers, which the program's later
//! arithmetic and comparisons also run faster on.
//!
//! What the engine builds is what `JSON.parse` of the value's compact JSON text builds: plain
//! objects with own, enumerable, writable, configurable properties in the same order (array-index
//! keys as integer atoms, as the engine's own conversion makes them), arrays, strings, numbers
//! (an integer in `i32` range as an integer, every other number as the same `f64` `strtod` gives),
//! booleans and `null`. The unit tests hold what a program can observe of every value built this
//! way to what it observes of `JSON.parse`'s, over edge cases and random values.
//!
//! The format is the engine's, not a stable interface (the facade and the engine are pinned, and
//! the unit tests fail on any drift). [`engine_bytes`] declines what it cannot express exactly or
//! what the reader's limits refuse, and the caller hands that over as text; so the reader refuses
//! only what the run's heap cannot hold.

use std::collections::HashMap;

use serde_json::Value;

/// The facade's envelope: its wire header and magic, then one value tagged `V` as a
/// length-prefixed `JS_WriteObject` blob (`v8x` `src/quickjs/serializer.rs`).
const FACADE_HEADER: &[u8] = &[0xff, 0x0f, b'Q', b'J', b'S', b'V'];
const FACADE_VALUE_TAG: u8 = b'V';

/// QuickJS-ng's object format (`quickjs.c`, `BCTagEnum` and `JS_WriteObject2`). Its fixed-width
/// fields are in the machine's byte order (the reader copies them); the envelope's length is
/// little-endian.
const BC_VERSION: u8 = 28;
/// The checksum field's "not computed" value, which the reader accepts without checking: the
/// bytes go no further than this process or its own worker process (over a pipe, from a host of
/// the same engine fingerprint), and computing it would cost both sides a pass over them.
const UNCHECKED: u32 = u32::MAX;
const ATOM_TYPE_STRING: u8 = 1;
const TAG_NULL: u8 = 1;
const TAG_FALSE: u8 = 3;
const TAG_TRUE: u8 = 4;
const TAG_INT32: u8 = 5;
const TAG_FLOAT64: u8 = 6;
const TAG_STRING: u8 = 7;
const TAG_OBJECT: u8 = 8;
const TAG_ARRAY: u8 = 9;
/// The reader's index of the first atom of the table when it reads no bytecode: index 0 is
/// `JS_ATOM_NULL`.
const FIRST_ATOM: u32 = 1;
/// The largest array index the engine keeps as an integer atom (`JS_ATOM_MAX_INT`).
const MAX_INT_ATOM: u64 = (1 << 31) - 1;
/// The engine's longest string (`JS_STRING_LEN_MAX`), in characters.
const MAX_STRING_LEN: usize = (1 << 30) - 1;
/// Deeper values go as text. The engine reads recursively (as `JSON.parse` does) and checks its
/// stack; this writer recurses too, on the engine thread's stack or, for a worker process, on
/// the host's thread that answers it.
const MAX_DEPTH: usize = 512;
/// The reader's largest atom table (`JS_ReadObjectAtoms`); values with more distinct keys go as
/// text.
const MAX_ATOMS: usize = 1_000_000;
/// Up to this many distinct keys, a key's atom is found by a scan, which beats hashing for the
/// handful of keys most results repeat: W4's records encode in 0.35 ms, against 1.0-1.2 ms with
/// the hash map for every key (std's SipHash on 30,000 short keys).
const SCANNED_ATOMS: usize = 16;

/// `value` (an array or an object) in the facade's envelope, ready for `v8::ValueDeserializer`;
/// `None` when the format cannot carry it exactly (too deep, a string too long for the engine, too
/// many distinct keys), and the caller hands the text over instead.
pub(crate) fn engine_bytes(value: &Value) -> Option<Vec<u8>> {
    let mut writer = Writer::default();
    writer.value(value, 0)?;
    if writer.atoms.len() > MAX_ATOMS {
        return None;
    }
    // Everything before the body (which the writer could only lay out first, since the table
    // lists the keys in order of first use), inserted in front of it.
    let mut prefix =
        Vec::with_capacity(32 + writer.atoms.iter().map(|a| a.len() + 2).sum::<usize>());
    prefix.extend_from_slice(FACADE_HEADER);
    prefix.push(FACADE_VALUE_TAG);
    prefix.extend_from_slice(&[0; 4]); // the blob's length, below
    let blob_start = prefix.len();
    prefix.push(BC_VERSION);
    prefix.extend_from_slice(&UNCHECKED.to_ne_bytes());
    put_leb128(&mut prefix, writer.atoms.len() as u32);
    for atom in &writer.atoms {
        prefix.push(ATOM_TYPE_STRING);
        put_string(&mut prefix, atom)?;
    }
    let blob_len = u32::try_from(prefix.len() - blob_start + writer.body.len()).ok()?;
    prefix[blob_start - 4..blob_start].copy_from_slice(&blob_len.to_le_bytes());
    let mut bytes = writer.body;
    bytes.splice(0..0, prefix);
    Some(bytes)
}

/// The body as the engine's writer lays it out, and the keys in order of first use (the atom
/// table, which goes in front of the body).
#[derive(Default)]
struct Writer<'v> {
    body: Vec<u8>,
    atoms: Vec<&'v str>,
    indexes: HashMap<&'v str, u32>,
}

impl<'v> Writer<'v> {
    fn value(&mut self, value: &'v Value, depth: usize) -> Option<()> {
        match value {
            Value::Null => self.body.push(TAG_NULL),
            Value::Bool(false) => self.body.push(TAG_FALSE),
            Value::Bool(true) => self.body.push(TAG_TRUE),
            // `-0` stays a float (`as_i64` reads it as `0` when serde_json keeps numbers as text).
            Value::Number(n) => match n
                .as_i64()
                .and_then(|i| i32::try_from(i).ok())
                .filter(|&i| i != 0 || n.as_f64().is_some_and(f64::is_sign_positive))
            {
                Some(i) => {
                    self.body.push(TAG_INT32);
                    // Zigzag, then LEB128, as `dbuf_put_sleb128`.
                    put_leb128(&mut self.body, ((i << 1) ^ (i >> 31)) as u32);
                }
                None => {
                    self.body.push(TAG_FLOAT64);
                    self.body
                        .extend_from_slice(&n.as_f64()?.to_bits().to_ne_bytes());
                }
            },
            Value::String(s) => {
                self.body.push(TAG_STRING);
                put_string(&mut self.body, s)?;
            }
            Value::Array(items) => {
                if depth == MAX_DEPTH {
                    return None;
                }
                self.body.push(TAG_ARRAY);
                put_leb128(&mut self.body, u32::try_from(items.len()).ok()?);
                for item in items {
                    self.value(item, depth + 1)?;
                }
            }
            Value::Object(map) => {
                if depth == MAX_DEPTH {
                    return None;
                }
                self.body.push(TAG_OBJECT);
                put_leb128(&mut self.body, u32::try_from(map.len()).ok()?);
                for (key, item) in map {
                    let atom = self.atom(key)?;
                    put_leb128(&mut self.body, atom);
                    self.value(item, depth + 1)?;
                }
            }
        }
        Some(())
    }

    /// A key as the reader takes it: an array index as an integer atom (odd), as the engine makes
    /// every such key; any other key as its index in the atom table (even).
    fn atom(&mut self, key: &'v str) -> Option<u32> {
        if let Some(index) = array_index(key) {
            return Some((index << 1) | 1);
        }
        let found = if self.atoms.len() <= SCANNED_ATOMS {
            self.atoms
                .iter()
                .position(|atom| *atom == key)
                .map(|at| at as u32)
        } else {
            self.indexes.get(key).copied()
        };
        let at = match found {
            Some(at) => at,
            None => {
                let at = u32::try_from(self.atoms.len()).ok()?;
                self.atoms.push(key);
                if self.atoms.len() > SCANNED_ATOMS {
                    if self.indexes.is_empty() {
                        self.indexes
                            .extend(self.atoms.iter().enumerate().map(|(i, a)| (*a, i as u32)));
                    } else {
                        self.indexes.insert(key, at);
                    }
                }
                at
            }
        };
        Some((at + FIRST_ATOM) << 1)
    }
}

/// `key` as the engine's integer atom, when it is one: a canonical decimal (no sign, no leading
/// zero) up to `JS_ATOM_MAX_INT` (`is_num_string` and `JS_NewAtomStr` in `quickjs.c`).
fn array_index(key: &str) -> Option<u32> {
    let bytes = key.as_bytes();
    if bytes.is_empty() || bytes.len() > 10 || !bytes.iter().all(u8::is_ascii_digit) {
        return None;
    }
    if bytes[0] == b'0' && bytes.len() > 1 {
        return None;
    }
    let n = bytes.iter().fold(0u64, |n, d| n * 10 + u64::from(d - b'0'));
    (n <= MAX_INT_ATOM).then_some(n as u32)
}

/// A string as `JS_WriteString` writes one: its length in characters shifted left, the low bit
/// set for 16-bit characters, then Latin-1 bytes when every character fits in one (as the
/// engine's own strings then are), else UTF-16 code units.
fn put_string(out: &mut Vec<u8>, s: &str) -> Option<()> {
    if s.is_ascii() {
        if s.len() > MAX_STRING_LEN {
            return None;
        }
        put_leb128(out, (s.len() as u32) << 1);
        out.extend_from_slice(s.as_bytes());
    } else if s.chars().all(|c| u32::from(c) <= 0xff) {
        let len = s.chars().count();
        if len > MAX_STRING_LEN {
            return None;
        }
        put_leb128(out, (len as u32) << 1);
        out.extend(s.chars().map(|c| u32::from(c) as u8));
    } else {
        let len = s.encode_utf16().count();
        if len > MAX_STRING_LEN {
            return None;
        }
        put_leb128(out, ((len as u32) << 1) | 1);
        for unit in s.encode_utf16() {
            out.extend_from_slice(&unit.to_ne_bytes());
        }
    }
    Some(())
}

/// Unsigned LEB128, as `dbuf_put_leb128`.
fn put_leb128(out: &mut Vec<u8>, mut v: u32) {
    loop {
        let low = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(low);
            return;
        }
        out.push(low | 0x80);
    }
}

/// The value [`engine_bytes`] wrote, built in the engine; `None` when the engine's reader refused
/// it (another version of the format, its stack, its heap), and the caller hands the text over
/// instead.
pub(crate) fn read<'a>(
    scope: &mut deno_core::v8::PinScope<'a, '_>,
    bytes: &[u8],
) -> Option<deno_core::v8::Local<'a, deno_core::v8::Value>> {
    use deno_core::v8::{self, ValueDeserializerHelper};

    /// The values handed over hold no host objects or shared buffers.
    struct PlainValues;
    impl v8::ValueDeserializerImpl for PlainValues {}

    let deserializer = v8::ValueDeserializer::new(scope, Box::new(PlainValues), bytes);
    let context = scope.get_current_context();
    if deserializer.read_header(context) != Some(true) {
        return None;
    }
    deserializer.read_value(context)
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use deno_core::{JsRuntime, RuntimeOptions, v8};
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestRunner};
    use serde_json::{Value, json};

    use super::*;
    use crate::sandbox::engine::on_engine_thread;

    /// Everything a program can observe of a value built from JSON: each own key's type, name and
    /// attributes, in order, whether a lookup by that name finds it (a digit key the engine does
    /// not hold as it would make it is not found), the prototype, extensibility, the type of each
    /// primitive and its exact value (the sign of a zero too).
    const DESCRIBE: &str = r#"
        globalThis.describe = (value) => {
            const d = (v) => {
                if (v === null || typeof v !== "object") {
                    return [typeof v, Object.is(v, -0) ? "-0" : String(v)];
                }
                const proto = Object.getPrototypeOf(v);
                return [
                    proto === Array.prototype ? "Array" : proto === Object.prototype ? "Object" : "other",
                    Array.isArray(v),
                    Object.isExtensible(v),
                    Reflect.ownKeys(v).map((k) => {
                        const p = Object.getOwnPropertyDescriptor(v, k);
                        return [typeof k, String(k), p.writable, p.enumerable, p.configurable,
                                Object.is(v[k], p.value), d(p.value)];
                    }),
                ];
            };
            return JSON.stringify(d(value));
        };
    "#;

    /// What a program observes of `value` handed over in binary, and parsed from its text.
    fn seen(runtime: &mut JsRuntime, value: &Value) -> (String, String) {
        deno_core::scope!(scope, runtime);
        let global = scope.get_current_context().global(scope);
        let name = v8::String::new(scope, "describe").unwrap();
        let describe: v8::Local<v8::Function> =
            global.get(scope, name.into()).unwrap().try_into().unwrap();
        let describe = |scope: &mut v8::PinScope, v: v8::Local<v8::Value>| {
            let undefined = v8::undefined(scope).into();
            let text = describe.call(scope, undefined, &[v]).unwrap();
            text.to_rust_string_lossy(scope)
        };
        let bytes = engine_bytes(value).expect("the binary form carries it");
        let built = read(scope, &bytes).expect("the engine reads the binary form");
        let text = v8::String::new(scope, &value.to_string()).unwrap();
        let parsed = v8::json::parse(scope, text).unwrap();
        (describe(scope, built), describe(scope, parsed))
    }

    fn assert_same(runtime: &mut JsRuntime, value: &Value) {
        let (binary, parsed) = seen(runtime, value);
        assert_eq!(binary, parsed, "as the program sees {value}");
    }

    fn runtime() -> JsRuntime {
        let mut runtime = JsRuntime::new(RuntimeOptions::default());
        runtime.execute_script("describe.js", DESCRIBE).unwrap();
        runtime
    }

    #[test]
    fn the_engine_builds_what_json_parse_builds() {
        let many_keys: serde_json::Map<String, Value> =
            (0..40).map(|i| (format!("key{i}"), json!(i))).collect();
        let values = vec![
            json!([]),
            json!({}),
            json!([{"id": 0, "name": "record 0", "score": 0}, {"id": 1, "name": "record 1", "score": 7919}]),
            json!({"__proto__": {"polluted": true}, "": 0, "constructor": "c", "toString": 1}),
            // Array-index keys become integer atoms; other digit strings stay names.
            json!({"0": "a", "01": "b", "7": [], "2147483647": 1, "2147483648": 2,
                   "4294967295": 3, "-1": 4, "1e3": 5, "1.5": 6, " 1": 7}),
            json!([
                0,
                1,
                -1,
                63,
                64,
                -64,
                -65,
                8191,
                8192,
                i32::MIN,
                i32::MAX,
                2147483648u64,
                -2147483649i64,
                9007199254740993u64,
                u64::MAX,
                i64::MIN,
                -0.0,
                0.5,
                -1.5,
                1e300,
                5e-324,
                3.0
            ]),
            json!([
                "",
                "ascii",
                "é latin-1 ÿ",
                "€ wide",
                "😀 astral",
                "nul \u{0} inside",
                "\u{fffd}",
                "mixed é and 日本"
            ]),
            json!({"é": 1, "日本": {"😀": [true, false, null]}, "many": many_keys}),
            json!([[[[[]]]], {"a": {"b": {"c": [{}]}}}]),
            // The same keys in differing orders and sets, past the scanned table.
            Value::Array(
                (0..60)
                    .map(|i| {
                        let mut map = serde_json::Map::new();
                        for k in (0..(i % 7 + 1)).rev() {
                            map.insert(format!("k{}", (i * 3 + k) % 23), json!(k));
                        }
                        Value::Object(map)
                    })
                    .collect(),
            ),
        ];
        on_engine_thread(move || {
            let mut runtime = runtime();
            for value in &values {
                assert_same(&mut runtime, value);
            }
        })
        .unwrap();
    }

    /// JSON values with any keys (array indexes among them), characters and numbers.
    fn values() -> impl Strategy<Value = Value> {
        let text = prop_oneof![
            prop::collection::vec(any::<char>(), 0..6).prop_map(String::from_iter),
            (0u64..5_000_000_000).prop_map(|n| n.to_string()),
            prop::sample::select(vec!["id", "name", "score", "0", "00", "__proto__"])
                .prop_map(String::from),
        ];
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            any::<i32>().prop_map(|n| json!(n)),
            any::<u64>().prop_map(|n| json!(n)),
            any::<f64>().prop_map(|x| json!(x)),
            text.clone().prop_map(Value::String),
        ];
        leaf.prop_recursive(6, 64, 8, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
                prop::collection::vec((text.clone(), inner), 0..8)
                    .prop_map(|pairs| Value::Object(pairs.into_iter().collect())),
            ]
        })
    }

    #[test]
    fn any_json_value_is_built_as_json_parse_builds_it() {
        on_engine_thread(|| {
            let runtime = RefCell::new(runtime());
            let mut runner = TestRunner::new(Config {
                cases: 400,
                failure_persistence: None,
                ..Config::default()
            });
            runner
                .run(
                    &values().prop_filter("structured", |v| v.is_array() || v.is_object()),
                    |value| {
                        assert_same(&mut runtime.borrow_mut(), &value);
                        Ok(())
                    },
                )
                .unwrap();
        })
        .unwrap();
    }

    #[test]
    fn what_the_format_cannot_carry_is_declined_for_the_text() {
        let mut deep = json!([]);
        for _ in 0..MAX_DEPTH {
            deep = json!([deep]);
        }
        assert!(engine_bytes(&deep).is_none(), "nested past {MAX_DEPTH}");
        let mut at_limit = json!(1);
        for _ in 0..MAX_DEPTH {
            at_limit = json!([at_limit]);
        }
        assert!(engine_bytes(&at_limit).is_some(), "nested {MAX_DEPTH} deep");
    }

    #[test]
    fn array_indexes_are_the_engines() {
        for (key, index) in [
            ("0", Some(0)),
            ("7", Some(7)),
            ("2147483647", Some(2147483647)),
        ] {
            assert_eq!(array_index(key), index, "{key}");
        }
        for key in [
            "",
            "01",
            "-1",
            "+1",
            "2147483648",
            "4294967295",
            "12345678901",
            "1e3",
            "a",
        ] {
            assert_eq!(array_index(key), None, "{key}");
        }
    }
}

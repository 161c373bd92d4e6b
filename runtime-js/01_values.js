// The value mapping of DESIGN.md §5, used for tool arguments and the return
// value: `JSON.stringify` semantics with captured intrinsics and guarded reads,
// except BigInt -> decimal string, NaN/±Infinity -> null, and a cycle -> an
// error naming its path. Every read of a user object can throw (getters,
// proxies); any throw becomes a `ValueError` for that value, never a crash.
"use strict";
((internal) => {
  const {
    ArrayIsArray,
    ArrayPrototypeJoin,
    ArrayPrototypePop,
    ArrayPrototypePush,
    BigIntPrototypeToString,
    BigIntPrototypeValueOf,
    BooleanPrototypeValueOf,
    JSONStringify,
    NumberIsFinite,
    NumberPrototypeToString,
    NumberPrototypeValueOf,
    ObjectKeys,
    ObjectPrototypeToString,
    ReflectApply,
    String,
    StringPrototypeValueOf,
    WeakMap,
    WeakMapPrototypeGet,
    WeakMapPrototypeSet,
  } = internal.primordials;

  // Thrown (internally) when a value cannot be mapped; carries a path like `$.a[2]`.
  // Null-prototype records branded in a WeakMap: no user-patchable setter or
  // `instanceof` hook is involved in making or recognising one.
  const valueErrors = new WeakMap();
  const ValueError = (message, path, limit) => {
    const error = { __proto__: null, message, path, limit: limit === true };
    WeakMapPrototypeSet(valueErrors, error, true);
    return error;
  };
  const isValueError = (e) =>
    e !== null && typeof e === "object" && WeakMapPrototypeGet(valueErrors, e) === true;

  const isIdentifier = (key) => {
    if (key.length === 0) return false;
    for (let i = 0; i < key.length; i++) {
      const c = key[i];
      const ok = (c >= "a" && c <= "z") || (c >= "A" && c <= "Z") || c === "_" ||
        c === "$" || (i > 0 && c >= "0" && c <= "9");
      if (!ok) return false;
    }
    return true;
  };
  const childPath = (path, key) =>
    typeof key === "number"
      ? path + "[" + key + "]"
      : isIdentifier(key)
      ? path + "." + key
      : path + "[" + JSONStringify(key) + "]";

  // Serialize `value` to JSON text; returns `undefined` when the top-level value
  // maps to nothing (undefined, a function, a symbol). `maxBytes` caps the text.
  function serialize(value, maxBytes) {
    const parts = [];
    let size = 0;
    const stack = [];
    const stackPaths = [];
    const emit = (text, path) => {
      size += text.length;
      if (size > maxBytes) {
        throw ValueError(
          "value is larger than the limit of " + maxBytes + " bytes",
          path,
          true,
        );
      }
      ArrayPrototypePush(parts, text);
    };

    const read = (holder, key, path) => {
      try {
        return holder[key];
      } catch (e) {
        throw ValueError("reading the property threw: " + safeMessage(e), path);
      }
    };

    function write(holder, key, value, path) {
      // toJSON is honoured (Date -> ISO string), like JSON.stringify.
      if (value !== null && (typeof value === "object" || typeof value === "bigint")) {
        let toJSON;
        try {
          toJSON = value.toJSON;
        } catch (e) {
          throw ValueError("reading toJSON threw: " + safeMessage(e), path);
        }
        if (typeof toJSON === "function") {
          try {
            value = ReflectApply(toJSON, value, [typeof key === "number" ? String(key) : key]);
          } catch (e) {
            throw ValueError("toJSON threw: " + safeMessage(e), path);
          }
        }
      }
      switch (typeof value) {
        case "string":
          emit(JSONStringify(value), path);
          return true;
        case "number":
          emit(NumberIsFinite(value) ? NumberPrototypeToString(value) : "null", path);
          return true;
        case "boolean":
          emit(value ? "true" : "false", path);
          return true;
        case "bigint":
          emit('"' + BigIntPrototypeToString(value) + '"', path);
          return true;
        case "undefined":
        case "function":
        case "symbol":
          return false;
      }
      if (value === null) {
        emit("null", path);
        return true;
      }
      // Boxed primitives unwrap, as JSON.stringify does.
      let tag;
      try {
        tag = ObjectPrototypeToString(value);
      } catch (e) {
        throw ValueError("inspecting the value threw: " + safeMessage(e), path);
      }
      try {
        if (tag === "[object Number]") return write(holder, key, NumberPrototypeValueOf(value), path);
        if (tag === "[object String]") return write(holder, key, StringPrototypeValueOf(value), path);
        if (tag === "[object Boolean]") return write(holder, key, BooleanPrototypeValueOf(value), path);
        if (tag === "[object BigInt]") return write(holder, key, BigIntPrototypeValueOf(value), path);
      } catch (e) {
        if (isValueError(e)) throw e;
        // A forged toStringTag: treat it as a plain object below.
      }
      for (let i = 0; i < stack.length; i++) {
        if (stack[i] === value) {
          throw ValueError(
            "cyclic value: " + path + " refers back to " + stackPaths[i],
            path,
          );
        }
      }
      ArrayPrototypePush(stack, value);
      ArrayPrototypePush(stackPaths, path);
      let isArray;
      try {
        isArray = ArrayIsArray(value);
      } catch (e) {
        throw ValueError("inspecting the value threw: " + safeMessage(e), path);
      }
      if (isArray) {
        const length = read(value, "length", path);
        emit("[", path);
        for (let i = 0; i < length; i++) {
          if (i > 0) emit(",", path);
          const p = childPath(path, i);
          if (!write(value, i, read(value, i, p), p)) emit("null", p);
        }
        emit("]", path);
      } else {
        let keys;
        try {
          keys = ObjectKeys(value);
        } catch (e) {
          throw ValueError("listing the keys threw: " + safeMessage(e), path);
        }
        emit("{", path);
        let first = true;
        for (let i = 0; i < keys.length; i++) {
          const k = keys[i];
          const p = childPath(path, k);
          const v = read(value, k, p);
          const mark = parts.length;
          const sizeMark = size;
          if (!first) emit(",", p);
          emit(JSONStringify(k) + ":", p);
          if (write(value, k, v, p)) {
            first = false;
          } else {
            // Dropped member (undefined, function, symbol): undo the key.
            while (parts.length > mark) ArrayPrototypePop(parts);
            size = sizeMark;
          }
        }
        emit("}", path);
      }
      ArrayPrototypePop(stack);
      ArrayPrototypePop(stackPaths);
      return true;
    }

    try {
      if (!write({ __proto__: null, "": value }, "", value, "$")) return undefined;
    } catch (e) {
      if (isValueError(e)) throw e;
      // Deep nesting overflows the stack: a RangeError from the engine.
      throw ValueError("value could not be serialized: " + safeMessage(e), "$");
    }
    return ArrayPrototypeJoin(parts, "");
  }

  // A message from any thrown value, without running user code that can throw again.
  function safeMessage(e) {
    try {
      if (e !== null && typeof e === "object") {
        const m = e.message;
        if (typeof m === "string") return m;
      }
      if (typeof e === "string") return e;
      return internal.inspect ? internal.inspect(e) : String(e);
    } catch {
      return "<unprintable value>";
    }
  }

  internal.isValueError = isValueError;
  internal.serialize = serialize;
  internal.safeMessage = safeMessage;
})(globalThis.__codemodeInternal);

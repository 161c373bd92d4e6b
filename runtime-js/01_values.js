// The value mapping of DESIGN.md §5, used for tool arguments and the return
// value: `JSON.stringify` semantics with captured intrinsics and guarded reads,
// except BigInt -> decimal string, NaN/±Infinity -> null, and a cycle or a
// value nested deeper than `MAX_NESTING` levels -> an error naming its path.
// Every read of a user object can throw (getters, proxies); any throw becomes a
// `ValueError` for that value, never a crash. Also the caps on error text
// (`capText`, `capStack`) that every report leaving the isolate goes through.
"use strict";
((internal) => {
  const {
    ArrayIsArray,
    ArrayPrototype,
    ArrayPrototypeJoin,
    BigIntPrototypeToString,
    BigIntPrototypeValueOf,
    BooleanPrototypeValueOf,
    JSONStringify,
    MathMax,
    MathMin,
    NullArray,
    NumberIsFinite,
    NumberPrototypeToString,
    NumberPrototypeValueOf,
    ObjectGetOwnPropertyDescriptor,
    ObjectGetOwnPropertyNames,
    ObjectGetPrototypeOf,
    ObjectKeys,
    ObjectPrototype,
    ObjectPrototypeHasOwnProperty,
    ObjectPrototypeToString,
    ReflectApply,
    String,
    StringPrototypeCharCodeAt,
    StringPrototypeIncludes,
    StringPrototypeIndexOf,
    StringPrototypeLastIndexOf,
    StringPrototypeSlice,
    StringPrototypeToWellFormed,
    StringPrototypeValueOf,
    TypeError,
    WeakMap,
    WeakMapPrototypeGet,
    WeakMapPrototypeSet,
  } = internal.primordials;

  // Thrown (internally) when a value cannot be mapped; carries a path like `$.a[2]`.
  // Null-prototype records branded in a WeakMap: no user-patchable setter or
  // `instanceof` hook is involved in making or recognising one.
  const valueErrors = new WeakMap();
  const TypeErrorPrototype = TypeError.prototype;
  const ValueError = (message, path, limit) => {
    const error = { __proto__: null, message, path, limit: limit === true };
    WeakMapPrototypeSet(valueErrors, error, true);
    return error;
  };
  const isValueError = (e) =>
    e !== null && typeof e === "object" && WeakMapPrototypeGet(valueErrors, e) === true;

  // The deepest nesting of arrays and objects a value may have (the top-level value is level 1).
  // The host reads values with serde_json, whose recursion limit is 128; the outcome embeds the
  // value a few levels down (MCP results, session logs), so the limit leaves room for that.
  const MAX_NESTING = 100;

  // --- Error text caps ------------------------------------------------------
  // Every name, message and stack that leaves the isolate is cut to ERROR_TEXT_CAP UTF-16 units,
  // with a marker naming the original length. Only slices of the original are made: a huge
  // string is never copied whole.
  const ERROR_TEXT_CAP = 65536;
  const isHighSurrogate = (c) => c >= 0xd800 && c <= 0xdbff;
  const isLowSurrogate = (c) => c >= 0xdc00 && c <= 0xdfff;
  // The first `n` units of `text`, one fewer where the cut would split a surrogate pair.
  const headOf = (text, n) =>
    StringPrototypeSlice(text, 0, n > 0 && isHighSurrogate(StringPrototypeCharCodeAt(text, n - 1)) ? n - 1 : n);
  // The last `n` units of `text`, one fewer where the cut would split a surrogate pair.
  const tailOf = (text, n) => {
    const start = text.length - n;
    return StringPrototypeSlice(text, isLowSurrogate(StringPrototypeCharCodeAt(text, start)) ? start + 1 : start);
  };

  // `prefix + text`, cut to the cap with `… [WHAT truncated: N chars in all]` appended. The
  // prefix is a short constant of the glue: it is never cut.
  function capText(prefix, text, what) {
    const total = prefix.length + text.length;
    if (total <= ERROR_TEXT_CAP) return prefix + text;
    const keep = ERROR_TEXT_CAP - prefix.length;
    return prefix + headOf(text, keep > 0 ? keep : 0) + "… [" + what + " truncated: " + total + " chars in all]";
  }

  // A stack cut to the cap. Both ends are kept: the engine's stack starts with the message (which
  // may be the long part) and its frames, which locate the error, follow it.
  function capStack(text) {
    if (text.length <= ERROR_TEXT_CAP) return text;
    let first = headOf(text, ERROR_TEXT_CAP / 2);
    // Never end on a cut frame line: a cut `program:LINE:COL` would be read as another position.
    const newline = StringPrototypeLastIndexOf(first, "\n");
    if (newline > 0 && first.length - newline < 1024) first = StringPrototypeSlice(first, 0, newline);
    return first + "\n… [stack truncated: " + text.length + " chars in all] …\n" + tailOf(text, ERROR_TEXT_CAP / 2);
  }

  // A string as JSON text the host can read. `JSON.stringify` writes a lone surrogate as a
  // `\udXXX` escape, which the host's JSON reader (serde_json) refuses, so the whole outcome
  // would be lost: such a string is written well-formed instead (U+FFFD in place of the lone
  // surrogate). Only a string whose text holds `\ud` is looked at twice.
  const quoteJson = (s) => {
    const text = JSONStringify(s);
    return StringPrototypeIncludes(text, "\\ud") ? JSONStringify(StringPrototypeToWellFormed(s)) : text;
  };

  // A path for a message: a very long one (deep nesting) keeps both ends, cut between members.
  const PATH_CAP = 200;
  const shortPath = (path) => {
    if (path.length <= PATH_CAP) return path;
    let head = headOf(path, PATH_CAP / 2);
    const end = MathMax(StringPrototypeLastIndexOf(head, "["), StringPrototypeLastIndexOf(head, "."));
    if (end > 0) head = StringPrototypeSlice(head, 0, end);
    let tail = tailOf(path, PATH_CAP / 2);
    const bracket = StringPrototypeIndexOf(tail, "[");
    const dot = StringPrototypeIndexOf(tail, ".");
    const start = bracket === -1 ? dot : dot === -1 ? bracket : MathMin(bracket, dot);
    if (start > 0) tail = StringPrototypeSlice(tail, start);
    return head + "…" + tail;
  };

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
  const MAX_KEY_IN_PATH = 100;
  const childPath = (path, key) => {
    if (typeof key === "number") return path + "[" + key + "]";
    if (key.length > MAX_KEY_IN_PATH) return path + "[" + JSONStringify(headOf(key, MAX_KEY_IN_PATH) + "…") + "]";
    return isIdentifier(key) ? path + "." + key : path + "[" + JSONStringify(key) + "]";
  };

  // Path of the value reached through `keys[0..depth)` (`$`, `$.a[2]`). Built only for an
  // error message: making a path for every member costs more than the rest of the walk.
  const pathOf = (keys, depth) => {
    let path = "$";
    for (let i = 0; i < depth; i++) path = childPath(path, keys[i]);
    return shortPath(path);
  };

  // Serialize `value` to JSON text; returns `undefined` when the top-level value
  // maps to nothing (undefined, a function, a symbol). `maxBytes` caps the text.
  //
  // The walk's state lives in the variables below, not in closures or records
  // made per call (in this engine, that allocation cost more than the walk for
  // small values). `stack[d]` is the object being written at depth `d` and
  // `keys[d]` the key of its member being written; they, and the `parts` array,
  // have a null prototype, so no write reaches anything the program could patch.
  // Re-entrant: a getter or toJSON may call a tool, which serializes again; the
  // inner call saves the outer state and restores it when it ends.
  let parts = null;
  let size = 0;
  let limit = 0;
  let stack = null;
  let keys = null;
  let idle = null; // the records of the outermost call, kept between calls

  function serialize(value, maxBytes) {
    const outerParts = parts, outerSize = size, outerLimit = limit, outerStack = stack, outerKeys = keys;
    const own = idle !== null
      ? idle
      : { __proto__: null, parts: NullArray(), stack: { __proto__: null }, keys: { __proto__: null } };
    idle = null;
    parts = own.parts;
    size = 0;
    limit = maxBytes;
    stack = own.stack;
    keys = own.keys;
    let done = false;
    try {
      const text = write({ __proto__: null, "": value }, "", value, 0) ? ArrayPrototypeJoin(parts, "") : undefined;
      done = true;
      return text;
    } catch (e) {
      if (isValueError(e)) throw e;
      // Deep nesting overflows the stack: a RangeError from the engine.
      throw ValueError("value could not be serialized: " + safeMessage(e), "$");
    } finally {
      // Drop references to the program's values before the records are reused (a
      // finished walk has cleared its stack entries on the way up).
      parts.length = 0;
      if (!done) {
        for (const d in stack) stack[d] = undefined;
        for (const d in keys) keys[d] = undefined;
      }
      idle = own;
      parts = outerParts;
      size = outerSize;
      limit = outerLimit;
      stack = outerStack;
      keys = outerKeys;
    }
  }

  // Appends `text`; `depth` locates the value being written (for the error).
  function emit(text, depth) {
    size += text.length;
    if (size > limit) {
      throw ValueError("value is larger than the limit of " + limit + " bytes", pathOf(keys, depth), true);
    }
    parts[parts.length] = text;
  }

  function read(holder, key, depth) {
    try {
      return holder[key];
    } catch (e) {
      throw ValueError("reading the property threw: " + safeMessage(e), pathOf(keys, depth));
    }
  }

  // Writes the value at `depth` (its key is `keys[depth - 1]`); false when it maps to nothing.
  function write(holder, key, value, depth) {
    // toJSON is honoured (Date -> ISO string), like JSON.stringify.
    if (value !== null && (typeof value === "object" || typeof value === "bigint")) {
      let toJSON;
      try {
        toJSON = value.toJSON;
      } catch (e) {
        throw ValueError("reading toJSON threw: " + safeMessage(e), pathOf(keys, depth));
      }
      if (typeof toJSON === "function") {
        try {
          value = ReflectApply(toJSON, value, [typeof key === "number" ? String(key) : key]);
        } catch (e) {
          throw ValueError("toJSON threw: " + safeMessage(e), pathOf(keys, depth));
        }
      }
    }
    switch (typeof value) {
      case "string":
        emit(quoteJson(value), depth);
        return true;
      case "number":
        emit(NumberIsFinite(value) ? NumberPrototypeToString(value) : "null", depth);
        return true;
      case "boolean":
        emit(value ? "true" : "false", depth);
        return true;
      case "bigint":
        emit('"' + BigIntPrototypeToString(value) + '"', depth);
        return true;
      case "undefined":
      case "function":
      case "symbol":
        return false;
    }
    if (value === null) {
      emit("null", depth);
      return true;
    }
    // Boxed primitives unwrap, as JSON.stringify does.
    let tag;
    try {
      tag = ObjectPrototypeToString(value);
    } catch (e) {
      throw ValueError("inspecting the value threw: " + safeMessage(e), pathOf(keys, depth));
    }
    if (tag !== "[object Object]" && tag !== "[object Array]") {
      try {
        if (tag === "[object Number]") return write(holder, key, NumberPrototypeValueOf(value), depth);
        if (tag === "[object String]") return write(holder, key, StringPrototypeValueOf(value), depth);
        if (tag === "[object Boolean]") return write(holder, key, BooleanPrototypeValueOf(value), depth);
        if (tag === "[object BigInt]") return write(holder, key, BigIntPrototypeValueOf(value), depth);
      } catch (e) {
        if (isValueError(e)) throw e;
        // A forged toStringTag: treat it as a plain object below.
      }
    }
    if (depth >= MAX_NESTING) {
      throw ValueError("value is nested deeper than " + MAX_NESTING + " levels", pathOf(keys, depth));
    }
    for (let i = 0; i < depth; i++) {
      if (stack[i] === value) {
        const path = pathOf(keys, depth);
        throw ValueError("cyclic value: " + path + " refers back to " + pathOf(keys, i), path);
      }
    }
    stack[depth] = value;
    let isArray;
    try {
      isArray = ArrayIsArray(value);
    } catch (e) {
      throw ValueError("inspecting the value threw: " + safeMessage(e), pathOf(keys, depth));
    }
    const child = depth + 1;
    if (isArray) {
      const length = read(value, "length", depth);
      emit("[", depth);
      for (let i = 0; i < length; i++) {
        keys[depth] = i;
        if (i > 0) emit(",", depth);
        if (!write(value, i, read(value, i, child), child)) emit("null", child);
      }
      emit("]", depth);
    } else {
      let names;
      try {
        names = ObjectKeys(value);
      } catch (e) {
        throw ValueError("listing the keys threw: " + safeMessage(e), pathOf(keys, depth));
      }
      emit("{", depth);
      let first = true;
      for (let i = 0; i < names.length; i++) {
        const k = names[i];
        keys[depth] = k;
        const v = read(value, k, child);
        const mark = parts.length;
        const sizeMark = size;
        if (!first) emit(",", child);
        emit(quoteJson(k) + ":", child);
        if (write(value, k, v, child)) {
          first = false;
        } else {
          // Dropped member (undefined, function, symbol): undo the key.
          parts.length = mark;
          size = sizeMark;
        }
      }
      emit("}", depth);
    }
    stack[depth] = undefined;
    keys[depth] = undefined;
    return true;
  }

  // A message from any thrown value, without running user code that can throw again.
  // Capped like every error text, so messages built from it stay small.
  function safeMessage(e) {
    try {
      if (e !== null && typeof e === "object") {
        const m = e.message;
        if (typeof m === "string") return capText("", m, "message");
      }
      if (typeof e === "string") return capText("", e, "message");
      return capText("", internal.inspect ? internal.inspect(e) : String(e), "message");
    } catch {
      return "<unprintable value>";
    }
  }

  // Tool arguments. The engine's own JSON.stringify writes the same text as `serialize` for
  // plain data at a fraction of the cost (for `{}` the careful walk cost more than the rest of
  // the binding call). What it refuses takes the careful walk, which reads the value again:
  // - a TypeError (a BigInt, a cycle): the walk maps BigInt and names a cycle's path;
  // - anything else was thrown by the program's own getter, `toJSON` or proxy trap: that stays
  //   an error even if the second reading succeeds (the walk only locates it);
  // - unless the program put an accessor at an index of Array.prototype or Object.prototype (or
  //   a proxy behind Array.prototype): the engine's JSON.stringify keeps its bookkeeping in an
  //   ordinary array, so that accessor ran inside it and the throw says nothing about the
  //   arguments. The walk, which inherits nothing, decides alone.
  // A termination is uncatchable and passes through.
  function serializeArgs(value) {
    let refused;
    try {
      return JSONStringify(value);
    } catch (e) {
      refused = e;
    }
    const text = serialize(value, 1 << 30);
    if (isTypeError(refused) || prototypesIntercept()) return text;
    throw ValueError("reading the arguments threw: " + safeMessage(refused), "$");
  }

  // Looked at only after the engine's JSON.stringify refused.
  function prototypesIntercept() {
    try {
      return ObjectGetPrototypeOf(ArrayPrototype) !== ObjectPrototype ||
        hasIndexAccessor(ArrayPrototype) || hasIndexAccessor(ObjectPrototype);
    } catch {
      return true;
    }
  }
  function hasIndexAccessor(object) {
    const names = ObjectGetOwnPropertyNames(object);
    for (let i = 0; i < names.length; i++) {
      const c = StringPrototypeCharCodeAt(names[i], 0);
      // An accessor descriptor has an own `get` (a data descriptor inherits whatever
      // Object.prototype holds).
      if (c >= 48 && c <= 57 && ObjectPrototypeHasOwnProperty(ObjectGetOwnPropertyDescriptor(object, names[i]), "get")) {
        return true;
      }
    }
    return false;
  }

  const isTypeError = (e) => {
    try {
      return e !== null && typeof e === "object" && ObjectGetPrototypeOf(e) === TypeErrorPrototype;
    } catch {
      return false; // a proxy's trap threw
    }
  };

  internal.MAX_NESTING = MAX_NESTING;
  internal.ERROR_TEXT_CAP = ERROR_TEXT_CAP;
  internal.capText = capText;
  internal.capStack = capStack;
  internal.quoteJson = quoteJson;
  internal.isValueError = isValueError;
  internal.serialize = serialize;
  internal.serializeArgs = serializeArgs;
  internal.safeMessage = safeMessage;
})(globalThis.__codemodeInternal);

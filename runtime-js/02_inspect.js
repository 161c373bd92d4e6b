// Console formatting: strings print raw; every other value prints like Node's
// `util.inspect` in compact, single-line form (`{ a: 1, b: [ 1, 2 ] }`,
// `<ref *1> { self: [Circular *1] }`, `[Getter]`). Accessors are never invoked
// and every other read is guarded, so a hostile object prints as something
// instead of breaking the program's console. The lists filled here have a null
// prototype: a setter the program put on Array.prototype is never reached.
"use strict";
((internal) => {
  const {
    ArrayIsArray,
    ArrayPrototypeIndexOf,
    ArrayPrototypeJoin,
    ArrayPrototypePop,
    ArrayPrototypePush,
    BigIntPrototypeToString,
    DatePrototypeGetTime,
    DatePrototypeToISOString,
    ErrorPrototype,
    FunctionPrototypeToString,
    JSONStringify,
    MapPrototypeForEach,
    MapPrototypeGetSize,
    NullArray,
    NumberIsFinite,
    NumberPrototypeToString,
    ObjectGetOwnPropertyDescriptor,
    ObjectGetPrototypeOf,
    ObjectIs,
    ObjectKeys,
    ObjectPrototypeHasOwnProperty,
    ObjectPrototypeToString,
    RegExpPrototypeToString,
    SetPrototypeForEach,
    SetPrototypeGetSize,
    String,
    StringPrototypeReplaceAll,
    StringPrototypeSlice,
    StringPrototypeStartsWith,
    SymbolPrototypeToString,
    TypedArrayPrototypeGetLength,
    TypedArrayPrototypeGetSymbolToStringTag,
  } = internal.primordials;

  const MAX_DEPTH = 2;
  const MAX_ITEMS = 100;
  const MAX_STRING = 10000;

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

  const quote = (s) => {
    if (s.length > MAX_STRING) {
      s = StringPrototypeSlice(s, 0, MAX_STRING);
    }
    const escaped = StringPrototypeReplaceAll(
      StringPrototypeSlice(JSONStringify(s), 1, -1),
      "\\\"",
      "\"",
    );
    return "'" + StringPrototypeReplaceAll(escaped, "'", "\\'") + "'";
  };

  const formatKey = (key) =>
    typeof key === "symbol" ? "[" + SymbolPrototypeToString(key) + "]" : isIdentifier(key) ? key : quote(key);

  const tagOf = (value) => {
    try {
      return ObjectPrototypeToString(value);
    } catch {
      return "[object Object]";
    }
  };

  // Descriptors the engine returns are ordinary objects: a field they lack (`value` of an
  // accessor, `get` of a data property) would be read from Object.prototype, which the program
  // may have patched. Only own fields are read, after this test.
  const isData = (desc) => ObjectPrototypeHasOwnProperty(desc, "value");

  // The constructor name from the prototype chain, read without invoking getters.
  const constructorName = (value) => {
    try {
      let proto = ObjectGetPrototypeOf(value);
      while (proto !== null) {
        const desc = ObjectGetOwnPropertyDescriptor(proto, "constructor");
        if (desc !== undefined && isData(desc) && typeof desc.value === "function") {
          const nameDesc = ObjectGetOwnPropertyDescriptor(desc.value, "name");
          if (nameDesc !== undefined && isData(nameDesc) && typeof nameDesc.value === "string") return nameDesc.value;
        }
        proto = ObjectGetPrototypeOf(proto);
      }
      return null;
    } catch {
      return "Object";
    }
  };

  function formatPrimitive(value, nested) {
    switch (typeof value) {
      case "string":
        return nested ? quote(value) : value;
      case "number":
        return ObjectIs(value, -0) ? "-0" : NumberPrototypeToString(value);
      case "bigint":
        return BigIntPrototypeToString(value) + "n";
      case "boolean":
        return value ? "true" : "false";
      case "undefined":
        return "undefined";
      case "symbol":
        return SymbolPrototypeToString(value);
    }
    return null;
  }

  function formatFunction(fn) {
    let name = "";
    try {
      const desc = ObjectGetOwnPropertyDescriptor(fn, "name");
      if (desc !== undefined && isData(desc) && typeof desc.value === "string") name = desc.value;
    } catch {
      // a proxy over a function: keep the anonymous form
    }
    let isClass = false;
    try {
      isClass = StringPrototypeStartsWith(FunctionPrototypeToString(fn), "class");
    } catch {
      // not inspectable
    }
    if (isClass) return "[class " + (name || "(anonymous)") + "]";
    return name ? "[Function: " + name + "]" : "[Function (anonymous)]";
  }

  function formatError(err) {
    try {
      const stack = err.stack;
      if (typeof stack === "string" && stack.length > 0) {
        const name = err.name;
        const message = err.message;
        const head = String(name) + (message === "" ? "" : ": " + String(message));
        return StringPrototypeStartsWith(stack, head) ? stack : head + "\n" + stack;
      }
      return String(err.name) + ": " + String(err.message);
    } catch {
      return "[Error: <unprintable>]";
    }
  }

  function inspect(value, nested) {
    const primitive = formatPrimitive(value, nested === true);
    if (primitive !== null) return primitive;
    if (value === null) return "null";
    if (typeof value === "function") return formatFunction(value);
    const seen = NullArray();
    const circular = NullArray();
    const out = format(value, 0, nested === true, seen, circular);
    return circular.length > 0 ? "<ref *1> " + out : out;
  }

  function format(value, depth, nested, seen, circular) {
    const primitive = formatPrimitive(value, nested || depth > 0);
    if (primitive !== null) return primitive;
    if (value === null) return "null";
    if (typeof value === "function") return formatFunction(value);

    if (ArrayPrototypeIndexOf(seen, value) !== -1) {
      if (ArrayPrototypeIndexOf(circular, value) === -1) ArrayPrototypePush(circular, value);
      return "[Circular *1]";
    }

    const tag = tagOf(value);
    try {
      if (tag === "[object Date]") {
        const time = DatePrototypeGetTime(value);
        return NumberIsFinite(time) ? DatePrototypeToISOString(value) : "Invalid Date";
      }
      if (tag === "[object RegExp]") return RegExpPrototypeToString(value);
    } catch {
      // a forged tag: fall through to the object form
    }
    let isError = false;
    try {
      let proto = ObjectGetPrototypeOf(value);
      while (proto !== null && !isError) {
        isError = proto === ErrorPrototype;
        proto = ObjectGetPrototypeOf(proto);
      }
    } catch {
      // proxy: not an error
    }
    if (isError) {
      const text = formatError(value);
      return depth > 0 ? "[" + text + "]" : text;
    }

    const name = constructorName(value);
    let isArray = false;
    try {
      isArray = ArrayIsArray(value);
    } catch {
      return "[object: inspection failed]";
    }

    if (depth > MAX_DEPTH) {
      return isArray ? "[Array]" : "[" + (name || "Object") + "]";
    }

    ArrayPrototypePush(seen, value);
    const items = NullArray();
    let prefix = "";
    try {
      if (isArray) {
        const length = value.length;
        const shown = length < MAX_ITEMS ? length : MAX_ITEMS;
        for (let i = 0; i < shown; i++) {
          ArrayPrototypePush(items, formatProperty(value, String(i), depth, seen, circular, true));
        }
        if (length > shown) ArrayPrototypePush(items, "... " + (length - shown) + " more items");
        if (name !== "Array") prefix = (name || "Array") + "(" + length + ") ";
      } else if (tag === "[object Map]") {
        const size = MapPrototypeGetSize(value);
        MapPrototypeForEach(value, (v, k) => {
          if (items.length < MAX_ITEMS) {
            ArrayPrototypePush(
              items,
              format(k, depth + 1, true, seen, circular) + " => " +
                format(v, depth + 1, true, seen, circular),
            );
          }
        });
        prefix = "Map(" + size + ") ";
      } else if (tag === "[object Set]") {
        const size = SetPrototypeGetSize(value);
        SetPrototypeForEach(value, (v) => {
          if (items.length < MAX_ITEMS) ArrayPrototypePush(items, format(v, depth + 1, true, seen, circular));
        });
        prefix = "Set(" + size + ") ";
      } else if (tag === "[object Promise]") {
        prefix = "Promise ";
        ArrayPrototypePush(items, "<unknown>");
      } else {
        let typedTag;
        try {
          typedTag = TypedArrayPrototypeGetSymbolToStringTag(value);
        } catch {
          typedTag = undefined;
        }
        if (typedTag !== undefined) {
          const length = TypedArrayPrototypeGetLength(value);
          const shown = length < MAX_ITEMS ? length : MAX_ITEMS;
          for (let i = 0; i < shown; i++) ArrayPrototypePush(items, formatPrimitive(value[i], true));
          if (length > shown) ArrayPrototypePush(items, "... " + (length - shown) + " more items");
          prefix = typedTag + "(" + length + ") ";
        } else {
          if (name === null) prefix = "[Object: null prototype] ";
          else if (name !== "Object") prefix = name + " ";
        }
      }
      if (!isArray) {
        const keys = ObjectKeys(value);
        for (let i = 0; i < keys.length && items.length < MAX_ITEMS; i++) {
          ArrayPrototypePush(items, formatProperty(value, keys[i], depth, seen, circular, false));
        }
      }
    } catch (e) {
      ArrayPrototypePop(seen);
      return "[object: inspection failed]";
    }
    ArrayPrototypePop(seen);

    const open = isArray ? "[" : "{";
    const close = isArray ? "]" : "}";
    if (items.length === 0) {
      if (prefix !== "" && !isArray && tag !== "[object Object]") return prefix + "{}";
      return prefix + open + close;
    }
    return prefix + open + " " + ArrayPrototypeJoin(items, ", ") + " " + close;
  }

  function formatProperty(obj, key, depth, seen, circular, isIndex) {
    let desc;
    try {
      desc = ObjectGetOwnPropertyDescriptor(obj, key);
    } catch {
      desc = undefined;
    }
    let text;
    if (desc === undefined) {
      text = isIndex ? "<empty item>" : "undefined";
      return isIndex ? text : formatKey(key) + ": " + text;
    }
    if (!isData(desc)) {
      text = desc.get !== undefined ? (desc.set !== undefined ? "[Getter/Setter]" : "[Getter]") : "[Setter]";
    } else {
      text = format(desc.value, depth + 1, true, seen, circular);
    }
    return isIndex ? text : formatKey(key) + ": " + text;
  }

  internal.inspect = inspect;
  internal.isIdentifierName = isIdentifier;
})(globalThis.__codemodeInternal);

// The small web-platform surface of DESIGN.md §5: TextEncoder/TextDecoder
// (UTF-8), atob/btoa, structuredClone, URL/URLSearchParams. URL parsing is the
// WHATWG parser of Rust's `url` crate behind one op; the rest is plain JS.
// Nothing here writes through the program's prototypes: internal lists have a
// null prototype, objects handed to the program are filled while they have
// none (or by definition), and descriptors are null-prototype records.
"use strict";
((internal) => {
  const p = internal.primordials;
  const {
    ArrayBufferIsView,
    ArrayBufferPrototypeSlice,
    ArrayIsArray,
    ArrayPrototype,
    ArrayPrototypePush,
    ArrayPrototypeJoin,
    ArrayPrototypeSplice,
    Date,
    DatePrototypeGetTime,
    JSONParse,
    Map,
    MapPrototypeGet,
    MapPrototypeSet,
    MapPrototypeForEach,
    NullArray,
    Set,
    SetPrototypeAdd,
    SetPrototypeForEach,
    ObjectDefineProperty,
    ObjectKeys,
    ObjectPrototype,
    ObjectPrototypeToString,
    ObjectGetPrototypeOf,
    ObjectSetPrototypeOf,
    ErrorPrototype,
    RegExp,
    RegExpPrototypeGetFlags,
    RegExpPrototypeGetSource,
    String,
    StringFromCharCode,
    StringPrototypeCharCodeAt,
    StringPrototypeIndexOf,
    StringPrototypeReplaceAll,
    StringPrototypeSlice,
    StringPrototypeSplit,
    TypeError,
    Uint8Array,
  } = p;
  const { op_codemode_url_parse, op_codemode_url_set } = internal.ops;
  const { encode, decode } = internal.core;
  const encodeURIComponent = globalThis.encodeURIComponent;
  const decodeURIComponent = globalThis.decodeURIComponent;

  class TextEncoder {
    get encoding() {
      return "utf-8";
    }
    encode(input = "") {
      return encode(String(input));
    }
  }

  class TextDecoder {
    #fatal;
    constructor(label = "utf-8", options = undefined) {
      const l = String(label);
      if (l !== "utf-8" && l !== "utf8" && l !== "unicode-1-1-utf-8") {
        throw new p.RangeError("only utf-8 is supported, not " + l);
      }
      this.#fatal = options != null && options.fatal === true;
    }
    get encoding() {
      return "utf-8";
    }
    decode(input = new Uint8Array(0)) {
      const bytes = input instanceof Uint8Array ? input : new Uint8Array(input.buffer ?? input);
      const text = decode(bytes);
      if (this.#fatal && StringPrototypeIndexOf(text, "\uFFFD") !== -1) {
        throw new TypeError("the encoded data is not valid utf-8");
      }
      return text;
    }
  }

  const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  function btoa(data) {
    const s = String(data);
    let out = "";
    for (let i = 0; i < s.length; i += 3) {
      const a = StringPrototypeCharCodeAt(s, i);
      const b = i + 1 < s.length ? StringPrototypeCharCodeAt(s, i + 1) : -1;
      const c = i + 2 < s.length ? StringPrototypeCharCodeAt(s, i + 2) : -1;
      if (a > 255 || b > 255 || c > 255) {
        throw new internal.DOMException("the string contains characters outside of the Latin1 range", "InvalidCharacterError");
      }
      const n = (a << 16) | ((b < 0 ? 0 : b) << 8) | (c < 0 ? 0 : c);
      out += B64[(n >> 18) & 63] + B64[(n >> 12) & 63] + (b < 0 ? "=" : B64[(n >> 6) & 63]) +
        (c < 0 ? "=" : B64[n & 63]);
    }
    return out;
  }
  function atob(data) {
    let s = StringPrototypeReplaceAll(StringPrototypeReplaceAll(String(data), " ", ""), "\n", "");
    if (s.length % 4 === 0) {
      if (s[s.length - 1] === "=") s = StringPrototypeSlice(s, 0, s[s.length - 2] === "=" ? -2 : -1);
    }
    if (s.length % 4 === 1) {
      throw new internal.DOMException("the string to be decoded is not correctly encoded", "InvalidCharacterError");
    }
    let out = "";
    let bits = 0;
    let value = 0;
    for (let i = 0; i < s.length; i++) {
      const v = StringPrototypeIndexOf(B64, s[i]);
      if (v === -1) {
        throw new internal.DOMException("the string to be decoded is not correctly encoded", "InvalidCharacterError");
      }
      value = (value << 6) | v;
      bits += 6;
      if (bits >= 8) {
        bits -= 8;
        out += StringFromCharCode((value >> bits) & 255);
      }
    }
    return out;
  }

  class DOMException extends p.Error {
    constructor(message = "", name = "Error") {
      super(message);
      ObjectDefineProperty(this, "name", { __proto__: null, value: name, configurable: true, writable: true });
    }
  }
  internal.DOMException = DOMException;

  // structuredClone for the data types a program handles: primitives, plain
  // objects, arrays, Date, RegExp, Map, Set, ArrayBuffer, typed arrays, errors.
  // Arrays and objects are filled while they have a null prototype (so a key
  // like `__proto__` or an index with a setter on Array.prototype stays an own
  // property, as the spec's CreateDataProperty makes it) and get theirs after.
  function structuredClone(value) {
    const memory = new Map();
    const clone = (v) => {
      if (v === null || (typeof v !== "object" && typeof v !== "function" && typeof v !== "symbol")) return v;
      if (typeof v === "function" || typeof v === "symbol") {
        throw new DOMException(internal.inspect(v) + " could not be cloned", "DataCloneError");
      }
      const known = MapPrototypeGet(memory, v);
      if (known !== undefined) return known;
      const tag = ObjectPrototypeToString(v);
      let out;
      if (tag === "[object Date]") out = new Date(DatePrototypeGetTime(v));
      else if (tag === "[object RegExp]") out = new RegExp(RegExpPrototypeGetSource(v), RegExpPrototypeGetFlags(v));
      else if (tag === "[object Map]") {
        out = new Map();
        MapPrototypeSet(memory, v, out);
        MapPrototypeForEach(v, (val, key) => MapPrototypeSet(out, clone(key), clone(val)));
        return out;
      } else if (tag === "[object Set]") {
        out = new Set();
        MapPrototypeSet(memory, v, out);
        SetPrototypeForEach(v, (val) => SetPrototypeAdd(out, clone(val)));
        return out;
      } else if (tag === "[object ArrayBuffer]") out = ArrayBufferPrototypeSlice(v, 0);
      else if (ArrayBufferIsView(v)) {
        const Ctor = v.constructor;
        out = new Ctor(clone(v.buffer), v.byteOffset, v.length);
      } else if (isError(v)) {
        out = new p.Error(v.message);
        ObjectDefineProperty(out, "name", { __proto__: null, value: v.name, configurable: true, writable: true });
        const stack = v.stack;
        if (typeof stack === "string") {
          ObjectDefineProperty(out, "stack", { __proto__: null, value: stack, configurable: true, writable: true });
        }
      } else if (ArrayIsArray(v)) {
        out = NullArray();
        MapPrototypeSet(memory, v, out);
        for (let i = 0; i < v.length; i++) out[i] = clone(v[i]);
        ObjectSetPrototypeOf(out, ArrayPrototype);
        return out;
      } else {
        out = { __proto__: null };
        MapPrototypeSet(memory, v, out);
        const keys = ObjectKeys(v);
        for (let i = 0; i < keys.length; i++) out[keys[i]] = clone(v[keys[i]]);
        ObjectSetPrototypeOf(out, ObjectPrototype);
        return out;
      }
      MapPrototypeSet(memory, v, out);
      return out;
    };
    return clone(value);
  }
  const isError = (v) => {
    let proto = ObjectGetPrototypeOf(v);
    while (proto !== null) {
      if (proto === ErrorPrototype) return true;
      proto = ObjectGetPrototypeOf(proto);
    }
    return false;
  };

  // --- URL ------------------------------------------------------------------
  const parseUrl = (href, base) => {
    const json = op_codemode_url_parse(href, base === undefined ? "" : String(base), base !== undefined);
    if (json === "") throw new TypeError("Invalid URL: " + href);
    return JSONParse(json);
  };

  // Glue-only access to the private state of the two classes (set by their static blocks), so
  // neither calls the other through a method the program could replace.
  let attachParams;
  let resetParams;
  let setSearchFromParams;

  // `#list` holds `[name, value]` pairs; it has a null prototype (pushes, splices and sorts never
  // reach Array.prototype).
  class URLSearchParams {
    #list = NullArray();
    #url = null;
    constructor(init = "") {
      if (typeof init === "object" && init !== null) {
        if (ArrayIsArray(init)) {
          for (let i = 0; i < init.length; i++) {
            const pair = init[i];
            if (pair.length !== 2) throw new TypeError("each pair must have exactly two items");
            ArrayPrototypePush(this.#list, [String(pair[0]), String(pair[1])]);
          }
        } else {
          const keys = ObjectKeys(init);
          for (let i = 0; i < keys.length; i++) ArrayPrototypePush(this.#list, [keys[i], String(init[keys[i]])]);
        }
      } else {
        this.#parse(String(init));
      }
    }
    static {
      attachParams = (params, url) => {
        params.#url = url;
      };
      resetParams = (params, query) => {
        params.#list = NullArray();
        params.#parse(query);
      };
    }
    #parse(query) {
      if (query[0] === "?") query = StringPrototypeSlice(query, 1);
      if (query === "") return;
      const pieces = StringPrototypeSplit(query, "&");
      for (let i = 0; i < pieces.length; i++) {
        if (pieces[i] === "") continue;
        const eq = StringPrototypeIndexOf(pieces[i], "=");
        const name = eq === -1 ? pieces[i] : StringPrototypeSlice(pieces[i], 0, eq);
        const value = eq === -1 ? "" : StringPrototypeSlice(pieces[i], eq + 1);
        ArrayPrototypePush(this.#list, [formDecode(name), formDecode(value)]);
      }
    }
    #update() {
      if (this.#url !== null) setSearchFromParams(this.#url, this.#serialize());
    }
    get size() {
      return this.#list.length;
    }
    append(name, value) {
      ArrayPrototypePush(this.#list, [String(name), String(value)]);
      this.#update();
    }
    delete(name, value = undefined) {
      const n = String(name);
      for (let i = this.#list.length - 1; i >= 0; i--) {
        if (this.#list[i][0] === n && (value === undefined || this.#list[i][1] === String(value))) {
          ArrayPrototypeSplice(this.#list, i, 1);
        }
      }
      this.#update();
    }
    get(name) {
      const n = String(name);
      for (let i = 0; i < this.#list.length; i++) if (this.#list[i][0] === n) return this.#list[i][1];
      return null;
    }
    getAll(name) {
      const n = String(name);
      const out = NullArray();
      for (let i = 0; i < this.#list.length; i++) if (this.#list[i][0] === n) ArrayPrototypePush(out, this.#list[i][1]);
      return ObjectSetPrototypeOf(out, ArrayPrototype);
    }
    has(name, value = undefined) {
      const n = String(name);
      for (let i = 0; i < this.#list.length; i++) {
        if (this.#list[i][0] === n && (value === undefined || this.#list[i][1] === String(value))) return true;
      }
      return false;
    }
    set(name, value) {
      const n = String(name);
      let found = false;
      for (let i = 0; i < this.#list.length; i++) {
        if (this.#list[i][0] !== n) continue;
        if (!found) {
          this.#list[i][1] = String(value);
          found = true;
        } else {
          ArrayPrototypeSplice(this.#list, i, 1);
          i--;
        }
      }
      if (!found) ArrayPrototypePush(this.#list, [n, String(value)]);
      this.#update();
    }
    sort() {
      p.ArrayPrototypeSort(this.#list, (a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
      this.#update();
    }
    forEach(callback, thisArg = undefined) {
      for (let i = 0; i < this.#list.length; i++) {
        p.ReflectApply(callback, thisArg, [this.#list[i][1], this.#list[i][0], this]);
      }
    }
    *entries() {
      for (let i = 0; i < this.#list.length; i++) yield [this.#list[i][0], this.#list[i][1]];
    }
    *keys() {
      for (let i = 0; i < this.#list.length; i++) yield this.#list[i][0];
    }
    *values() {
      for (let i = 0; i < this.#list.length; i++) yield this.#list[i][1];
    }
    [Symbol.iterator]() {
      return this.entries();
    }
    toString() {
      return this.#serialize();
    }
    #serialize() {
      const out = NullArray();
      for (let i = 0; i < this.#list.length; i++) {
        ArrayPrototypePush(out, formEncode(this.#list[i][0]) + "=" + formEncode(this.#list[i][1]));
      }
      return ArrayPrototypeJoin(out, "&");
    }
  }

  const formEncode = (s) => {
    let out = StringPrototypeReplaceAll(encodeURIComponent(s), "%20", "+");
    const specials = ["!", "%21", "'", "%27", "(", "%28", ")", "%29", "~", "%7E"];
    for (let i = 0; i < specials.length; i += 2) out = StringPrototypeReplaceAll(out, specials[i], specials[i + 1]);
    return out;
  };
  const formDecode = (s) => {
    const plus = StringPrototypeReplaceAll(s, "+", " ");
    try {
      return decodeURIComponent(plus);
    } catch {
      return plus;
    }
  };

  class URL {
    #parts;
    #params;
    constructor(url, base = undefined) {
      this.#parts = parseUrl(String(url), base);
      this.#params = new URLSearchParams(this.#parts.search);
      attachParams(this.#params, this);
    }
    static canParse(url, base = undefined) {
      try {
        parseUrl(String(url), base);
        return true;
      } catch {
        return false;
      }
    }
    #set(field, value) {
      const json = op_codemode_url_set(this.#parts.href, field, String(value));
      if (json === "") {
        if (field === "href") throw new TypeError("Invalid URL: " + value);
        return; // the WHATWG setters ignore values they cannot apply
      }
      this.#parts = JSONParse(json);
      if (field !== "hash") resetParams(this.#params, this.#parts.search);
    }
    static {
      setSearchFromParams = (url, query) => {
        const json = op_codemode_url_set(url.#parts.href, "search", query);
        if (json !== "") url.#parts = JSONParse(json);
      };
    }
    get href() { return this.#parts.href; }
    set href(v) { this.#set("href", v); }
    get origin() { return this.#parts.origin; }
    get protocol() { return this.#parts.protocol; }
    set protocol(v) { this.#set("protocol", v); }
    get username() { return this.#parts.username; }
    set username(v) { this.#set("username", v); }
    get password() { return this.#parts.password; }
    set password(v) { this.#set("password", v); }
    get host() { return this.#parts.host; }
    set host(v) { this.#set("host", v); }
    get hostname() { return this.#parts.hostname; }
    set hostname(v) { this.#set("hostname", v); }
    get port() { return this.#parts.port; }
    set port(v) { this.#set("port", v); }
    get pathname() { return this.#parts.pathname; }
    set pathname(v) { this.#set("pathname", v); }
    get search() { return this.#parts.search; }
    set search(v) { this.#set("search", v); }
    get hash() { return this.#parts.hash; }
    set hash(v) { this.#set("hash", v); }
    get searchParams() { return this.#params; }
    toString() { return this.#parts.href; }
    toJSON() { return this.#parts.href; }
  }

  internal.web = {
    __proto__: null,
    TextEncoder,
    TextDecoder,
    atob,
    btoa,
    structuredClone,
    URL,
    URLSearchParams,
    DOMException,
  };
})(globalThis.__codemodeInternal);

// Captured intrinsics. This file runs before any user code; everything the glue
// needs later is read here once, so user code that patches `JSON`,
// `Promise.prototype.then`, `Array.prototype` or `Function.prototype.call`
// cannot reach into the glue. Methods are "uncurried" (`fn(thisArg, ...args)`)
// through a bound `call`, which keeps the original `call` even if it is replaced.
"use strict";
((globalThis) => {
  const uncurryThis = Function.prototype.bind.call(
    Function.prototype.bind,
    Function.prototype.call,
  );
  const getter = (proto, name) =>
    uncurryThis(Object.getOwnPropertyDescriptor(proto, name).get);

  const p = {
    __proto__: null,
    uncurryThis,
    ObjectKeys: Object.keys,
    ObjectGetOwnPropertyNames: Object.getOwnPropertyNames,
    ObjectGetOwnPropertyDescriptor: Object.getOwnPropertyDescriptor,
    ObjectGetPrototypeOf: Object.getPrototypeOf,
    ObjectDefineProperty: Object.defineProperty,
    ObjectSetPrototypeOf: Object.setPrototypeOf,
    ObjectFreeze: Object.freeze,
    ObjectCreate: Object.create,
    ObjectIs: Object.is,
    ObjectPrototype: Object.prototype,
    ObjectPrototypeToString: uncurryThis(Object.prototype.toString),
    ObjectPrototypeHasOwnProperty: uncurryThis(Object.prototype.hasOwnProperty),
    ObjectPrototypePropertyIsEnumerable: uncurryThis(
      Object.prototype.propertyIsEnumerable,
    ),
    ArrayIsArray: Array.isArray,
    ArrayPrototype: Array.prototype,
    ArrayPrototypePush: uncurryThis(Array.prototype.push),
    ArrayPrototypePop: uncurryThis(Array.prototype.pop),
    ArrayPrototypeJoin: uncurryThis(Array.prototype.join),
    ArrayPrototypeIndexOf: uncurryThis(Array.prototype.indexOf),
    ArrayPrototypeSlice: uncurryThis(Array.prototype.slice),
    ArrayPrototypeSplice: uncurryThis(Array.prototype.splice),
    ArrayPrototypeSort: uncurryThis(Array.prototype.sort),
    String,
    StringPrototypeSlice: uncurryThis(String.prototype.slice),
    StringPrototypeIndexOf: uncurryThis(String.prototype.indexOf),
    StringPrototypeLastIndexOf: uncurryThis(String.prototype.lastIndexOf),
    StringPrototypeSplit: uncurryThis(String.prototype.split),
    StringPrototypeCharCodeAt: uncurryThis(String.prototype.charCodeAt),
    StringPrototypeStartsWith: uncurryThis(String.prototype.startsWith),
    StringPrototypeIncludes: uncurryThis(String.prototype.includes),
    StringPrototypeRepeat: uncurryThis(String.prototype.repeat),
    StringPrototypeReplaceAll: uncurryThis(String.prototype.replaceAll),
    StringPrototypeToUpperCase: uncurryThis(String.prototype.toUpperCase),
    StringPrototypePadEnd: uncurryThis(String.prototype.padEnd),
    StringPrototypePadStart: uncurryThis(String.prototype.padStart),
    StringPrototypeTrim: uncurryThis(String.prototype.trim),
    StringFromCharCode: String.fromCharCode,
    StringPrototypeValueOf: uncurryThis(String.prototype.valueOf),
    StringPrototypeToWellFormed: uncurryThis(String.prototype.toWellFormed),
    NumberIsFinite: Number.isFinite,
    NumberIsInteger: Number.isInteger,
    NumberParseInt: Number.parseInt,
    NumberPrototypeToString: uncurryThis(Number.prototype.toString),
    NumberPrototypeValueOf: uncurryThis(Number.prototype.valueOf),
    BooleanPrototypeValueOf: uncurryThis(Boolean.prototype.valueOf),
    BigIntPrototypeToString: uncurryThis(BigInt.prototype.toString),
    BigIntPrototypeValueOf: uncurryThis(BigInt.prototype.valueOf),
    SymbolPrototypeToString: uncurryThis(Symbol.prototype.toString),
    SymbolToStringTag: Symbol.toStringTag,
    FunctionPrototypeToString: uncurryThis(Function.prototype.toString),
    DatePrototypeToISOString: uncurryThis(Date.prototype.toISOString),
    DatePrototypeGetTime: uncurryThis(Date.prototype.getTime),
    RegExpPrototypeToString: uncurryThis(RegExp.prototype.toString),
    RegExpPrototypeExec: uncurryThis(RegExp.prototype.exec),
    Map,
    MapPrototypeGet: uncurryThis(Map.prototype.get),
    MapPrototypeSet: uncurryThis(Map.prototype.set),
    MapPrototypeDelete: uncurryThis(Map.prototype.delete),
    MapPrototypeGetSize: getter(Map.prototype, "size"),
    MapPrototypeForEach: uncurryThis(Map.prototype.forEach),
    SetPrototypeGetSize: getter(Set.prototype, "size"),
    SetPrototypeForEach: uncurryThis(Set.prototype.forEach),
    Set,
    SetPrototypeAdd: uncurryThis(Set.prototype.add),
    Date,
    RegExp,
    RegExpPrototypeGetSource: getter(RegExp.prototype, "source"),
    RegExpPrototypeGetFlags: getter(RegExp.prototype, "flags"),
    ArrayBufferIsView: ArrayBuffer.isView,
    ArrayBufferPrototypeSlice: uncurryThis(ArrayBuffer.prototype.slice),
    ArrayBufferPrototypeGetByteLength: getter(ArrayBuffer.prototype, "byteLength"),
    TypedArrayPrototypeGetLength: getter(
      Object.getPrototypeOf(Uint8Array.prototype),
      "length",
    ),
    TypedArrayPrototypeGetSymbolToStringTag: getter(
      Object.getPrototypeOf(Uint8Array.prototype),
      Symbol.toStringTag,
    ),
    ErrorPrototype: Error.prototype,
    Error,
    TypeError,
    RangeError,
    Promise,
    PromisePrototypeThen: uncurryThis(Promise.prototype.then),
    PromiseResolve: Promise.resolve.bind(Promise),
    PromiseReject: Promise.reject.bind(Promise),
    // The engine's own (no executor closure to make and call): `{promise, resolve, reject}`, all
    // own properties.
    PromiseWithResolvers: Promise.withResolvers.bind(Promise),
    ReflectApply: Reflect.apply,
    ReflectOwnKeys: Reflect.ownKeys,
    ReflectGet: Reflect.get,
    ReflectDeleteProperty: Reflect.deleteProperty,
    ReflectDefineProperty: Reflect.defineProperty,
    JSONStringify: JSON.stringify,
    JSONParse: JSON.parse,
    MathMin: Math.min,
    MathMax: Math.max,
    MathFloor: Math.floor,
    Uint8Array,
    WeakMap,
    WeakMapPrototypeGet: uncurryThis(WeakMap.prototype.get),
    WeakMapPrototypeSet: uncurryThis(WeakMap.prototype.set),
    Proxy,
  };

  // Containers the glue fills while a program runs. `[]` and `{}` inherit from Array.prototype
  // and Object.prototype, which the program may patch: writing a new index or key ([[Set]], which
  // ArrayPrototypePush/Splice/Sort do as well) would reach an inherited setter. A null-prototype
  // array is still an array (own `length`, `ArrayIsArray`, the captured methods) but inherits
  // nothing; records are `{ __proto__: null }`, property descriptors too.
  const setPrototypeOf = Object.setPrototypeOf;
  p.NullArray = () => setPrototypeOf([], null);

  // The only ops the glue may call. Each is captured here and nowhere exposed;
  // 99_bootstrap.js removes `Deno` so user code reaches none of them.
  const OP_ALLOW_LIST = [
    "op_codemode_console",
    "op_codemode_finish",
    "op_codemode_tool_call",
    "op_codemode_tool_call_full",
    "op_codemode_url_parse",
    "op_codemode_url_set",
  ];
  const allOps = globalThis.Deno.core.ops;
  const ops = { __proto__: null };
  for (let i = 0; i < OP_ALLOW_LIST.length; i++) {
    const name = OP_ALLOW_LIST[i];
    if (typeof allOps[name] === "function") ops[name] = allOps[name];
  }
  const denoCore = globalThis.Deno.core;
  const core = {
    __proto__: null,
    createTimer: denoCore.createTimer,
    cancelTimer: denoCore.cancelTimer,
    encode: denoCore.encode,
    decode: denoCore.decode,
    setUnhandledPromiseRejectionHandler: denoCore.setUnhandledPromiseRejectionHandler,
    registerErrorClass: denoCore.registerErrorClass,
    queueMicrotask: globalThis.queueMicrotask,
  };

  // Shared between the glue files during bootstrap only; 99_bootstrap.js deletes it.
  Object.defineProperty(globalThis, "__codemodeInternal", {
    value: { __proto__: null, primordials: p, ops, core, capturedOps: Object.keys(ops) },
    configurable: true,
    enumerable: false,
    writable: false,
  });
})(globalThis);

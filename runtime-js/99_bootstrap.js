// The bootstrap: shapes the global object before any model code runs: the
// ECMAScript built-ins plus exactly the globals of DESIGN.md §5; everything
// else (`Deno`, deno_core's internals, `SharedArrayBuffer`, `WebAssembly`,
// ...) is removed. `Atomics.wait` is removed as well: a blocked wait is beyond
// the watchdog's reach.
//
// This script only defines it, as `internal.bootstrap`, so that the startup
// snapshot holds it compiled; the host calls it on every isolate after the
// restore (the facade's snapshot writer cannot serialize a global whose
// deno_core globals were deleted, and the unhandled-rejection handler is
// runtime state a snapshot does not carry). Called as a function, it is not
// parsed per isolate: as a script, it was, twice (1.3M instructions of an
// isolate's build). It answers `[report, settleCalls, prebuildTools]`: a JSON
// report the host reads once (captured ops, globals that could not be
// removed), the function the host hands the results of calls that went on to
// (`settleCalls` in 06_tools.js), and the one that builds a run's `tools`
// object ahead of the run (`prebuildTools`, same file).
"use strict";
((internal) => {
  const {
    ArrayPrototypePush,
    JSONStringify,
    ObjectDefineProperty,
    ObjectGetOwnPropertyNames,
    ReflectDeleteProperty,
  } = internal.primordials;

  const ECMASCRIPT = [
    "globalThis", "Infinity", "NaN", "undefined", "eval", "isFinite", "isNaN",
    "parseFloat", "parseInt", "decodeURI", "decodeURIComponent", "encodeURI",
    "encodeURIComponent", "escape", "unescape", "Object", "Function", "Array",
    "Number", "Boolean", "String", "Symbol", "BigInt", "Math", "JSON", "Reflect",
    "Proxy", "Promise", "Date", "RegExp", "Error", "AggregateError", "EvalError",
    "RangeError", "ReferenceError", "SyntaxError", "TypeError", "URIError",
    "SuppressedError", "Map", "Set", "WeakMap", "WeakSet", "WeakRef", "ArrayBuffer",
    "DataView", "Int8Array", "Uint8Array", "Uint8ClampedArray", "Int16Array",
    "Uint16Array", "Int32Array", "Uint32Array", "Float16Array", "Float32Array",
    "Float64Array", "BigInt64Array", "BigUint64Array", "Atomics", "Iterator",
    "Intl", "DisposableStack", "AsyncDisposableStack",
  ];

  internal.bootstrap = () => {
    const web = internal.web;
    const timers = internal.timers;
    const installed = {
      __proto__: null,
      console: internal.console,
      setTimeout: timers.setTimeout,
      clearTimeout: timers.clearTimeout,
      setInterval: timers.setInterval,
      clearInterval: timers.clearInterval,
      queueMicrotask: timers.queueMicrotask,
      structuredClone: web.structuredClone,
      TextEncoder: web.TextEncoder,
      TextDecoder: web.TextDecoder,
      URL: web.URL,
      URLSearchParams: web.URLSearchParams,
      atob: web.atob,
      btoa: web.btoa,
      DOMException: web.DOMException,
      ToolError: internal.ToolError,
    };

    // Unhandled rejections fail the run with their reason (like Node and Deno by
    // default), through the same guarded path as every other failure.
    internal.core.setUnhandledPromiseRejectionHandler((_promise, reason) => {
      internal.failUnhandled(reason);
      return true;
    });

    // The engine facade's time-zone database, installed on the global object of every context
    // (and removed below with every other non-standard global): Intl.DateTimeFormat's
    // (05_intl.js) way to any IANA time zone.
    if (typeof globalThis.__v8xTemporalTimeZone === "function") {
      internal.intlHost.zone = globalThis.__v8xTemporalTimeZone;
    }
    internal.installLocaleFormats();
    // Temporal's hook on Date goes with Temporal (an isolate the whole glue builds has it; one
    // restored from the snapshot does not).
    ReflectDeleteProperty(Date.prototype, "toTemporalInstant");

    const keep = { __proto__: null };
    for (let i = 0; i < ECMASCRIPT.length; i++) keep[ECMASCRIPT[i]] = true;
    const undeletable = [];
    const names = ObjectGetOwnPropertyNames(globalThis);
    for (let i = 0; i < names.length; i++) {
      const name = names[i];
      if (keep[name] === true || name === "__codemodeInternal") continue;
      if (!ReflectDeleteProperty(globalThis, name)) ArrayPrototypePush(undeletable, name);
    }
    if (typeof globalThis.Atomics === "object") {
      ReflectDeleteProperty(globalThis.Atomics, "wait");
      ReflectDeleteProperty(globalThis.Atomics, "waitAsync");
    }

    const names2 = [];
    for (const name in installed) ArrayPrototypePush(names2, name);
    for (let i = 0; i < names2.length; i++) {
      ObjectDefineProperty(globalThis, names2[i], {
        value: installed[names2[i]],
        writable: true,
        configurable: true,
        enumerable: false,
      });
    }
    // `tools` is defined per run by the entry (98_run.js), from the run's catalog.
    ObjectDefineProperty(globalThis, "__codemodeEntry", {
      value: internal.entry,
      writable: false,
      configurable: true,
      enumerable: false,
    });
    ReflectDeleteProperty(globalThis, "__codemodeInternal");
    const report = JSONStringify({
      capturedOps: internal.capturedOps,
      undeletable,
    });
    return [report, internal.settleCalls, internal.prebuildTools];
  };
})(globalThis.__codemodeInternal);

// The `tools` object. It is built for each run from the host's catalog of sandbox
// paths (`grep`, `memory.search_nodes`), usually before the run while its isolate
// waits in the pool (`prebuildTools`): known names are plain frozen
// functions, own properties of frozen objects, so a call reaches them without
// a proxy trap; an unknown name falls through to a proxy in the prototype and
// still yields a function, whose call goes to the host and rejects with
// `UNKNOWN_TOOL` and close-match suggestions (a typo gets a useful error
// instead of "is not a function"). Every call crosses into Rust through
// `op_codemode_tool_call` (or `_full`, see `call`), naming a known tool by its catalog index (no path
// string to convert per call) and an unknown one by its path. The op is synchronous: it answers
// with the result of a call that finished at once, or `undefined` for one that goes on, whose
// result the host hands over later, with every other that arrived meanwhile (`settleCalls`).
"use strict";
((internal) => {
  const {
    Error,
    JSONParse,
    JSONStringify,
    ObjectCreate,
    ObjectDefineProperty,
    ObjectFreeze,
    ObjectSetPrototypeOf,
    Promise,
    PromisePrototypeThen,
    PromiseReject,
    PromiseResolve,
    Proxy,
    RangeError,
    TypeError,
    StringPrototypeIndexOf,
    StringPrototypeSlice,
    WeakMap,
    WeakMapPrototypeGet,
    WeakMapPrototypeSet,
  } = internal.primordials;
  const { op_codemode_tool_call, op_codemode_tool_call_full } = internal.ops;
  // The error class name the op's failures carry (`TOOL_ERROR_CLASS` in tool_ops.rs).
  const TOOL_ERROR_CLASS = "CodemodeToolError";

  // What each ToolError was created with: read from here (not from its possibly
  // patched properties) when the error ends the run.
  const toolErrors = new WeakMap();

  class ToolError extends Error {
    constructor(message, code, tool, details) {
      super(message);
      // Null-prototype descriptors: a `get`, `set` or `enumerable` the program put on
      // Object.prototype must not change what is defined (nor make the definition throw).
      ObjectDefineProperty(this, "name", { __proto__: null, value: "ToolError", writable: true, configurable: true });
      ObjectDefineProperty(this, "code", { __proto__: null, value: code, writable: true, configurable: true, enumerable: true });
      ObjectDefineProperty(this, "tool", { __proto__: null, value: tool, writable: true, configurable: true, enumerable: true });
      ObjectDefineProperty(this, "details", { __proto__: null, value: details, writable: true, configurable: true, enumerable: true });
    }
  }

  // The program sees `ToolError` as a global: frozen, so `super()` in its constructor (run while
  // deno_core converts a failed call) can never be redirected to program code.
  ObjectFreeze(ToolError);

  // The stack is read when the error ends the run, not when it is made: by then deno_core has
  // captured it at the call site (and a throwing `stack` getter is harmless there).
  internal.toolErrorInfo = (thrown) => {
    if (thrown === null || typeof thrown !== "object") return undefined;
    const record = WeakMapPrototypeGet(toolErrors, thrown);
    if (record === undefined) return undefined;
    let stack = "";
    try {
      stack = thrown.stack;
    } catch {
      // keep the empty stack
    }
    return {
      __proto__: null,
      name: record.name,
      message: record.message,
      stack: typeof stack === "string" ? stack : "",
      code: record.code,
      tool: record.tool,
      detailsJson: record.detailsJson,
    };
  };

  // The op answers with the tool's value itself. A failure throws the error deno_core builds
  // for the class registered below: a ToolError made from the failure record, which arrives as
  // the message (`{code, message, tool, detailsJson}` as JSON); a call that went on fails with
  // the same record, through `settleCalls`. This runs inside deno_core's error conversion, so it
  // reaches nothing the program can hook: native parses of host-written text, a frozen class,
  // captured intrinsics; no stringify (no `toJSON`), no `stack` read (no `prepareStackTrace`).
  function HostToolError(recordJson) {
    const record = JSONParse(recordJson);
    // `new HostToolError(json)` yields this object, not a HostToolError.
    return makeToolError(record.message, record.code, record.tool, record.detailsJson);
  }
  internal.core.registerErrorClass(TOOL_ERROR_CLASS, HostToolError);

  function makeToolError(message, code, tool, detailsJson) {
    const error = new ToolError(message, code, tool, JSONParse(detailsJson));
    WeakMapPrototypeSet(toolErrors, error, {
      __proto__: null,
      name: "ToolError",
      message,
      code,
      tool,
      detailsJson,
    });
    return error;
  }

  // Closed by 98_run.js as the program's body returns or throws, before its value or error is
  // read: a `toJSON`, getter or proxy trap run then cannot call a tool. Those calls (and any made
  // later, from a timer) are refused here, before the op: the host never sees them.
  const gate = { __proto__: null, closed: false };
  internal.toolGate = gate;
  const LATE_CALL_MESSAGE = "the program has already returned; tool calls made while its result is read are not executed";
  const ignore = () => {};
  function lateCall(path) {
    const promise = PromiseReject(makeToolError(LATE_CALL_MESSAGE, "CANCELLED", path, "{}"));
    // Handled here: the run's outcome is being decided, this rejection must not change it.
    PromisePrototypeThen(promise, undefined, ignore);
    return promise;
  }

  const serializeArgs = internal.serializeArgs;
  const UNKNOWN = -1;

  // Calls that went on (the op answered `undefined`): the resolving functions of the promise the
  // program holds, at the call's id, until the host settles it. Ids are small integers handed
  // out by the glue: a settled call's id is reused (`freeIds`), so the tables never outgrow the
  // most calls awaited at once, and a new id is one past the highest. So each table is an
  // array the engine writes in place or appends to, with no hashing and no entry object per
  // call (a `Map` of `Promise.withResolvers()` records cost about 6k instructions more a call).
  // The arrays have no prototype: an index accessor the program puts on `Array.prototype` or
  // `Object.prototype` is never reached, and the program can reach none of them.
  const resolveFns = ObjectSetPrototypeOf([], null);
  const rejectFns = ObjectSetPrototypeOf([], null);
  const freeIds = ObjectSetPrototypeOf([], null);
  let freeCount = 0;
  // One past the highest id issued so far.
  let nextId = 0;
  // The executor of every call's promise: it hands over the resolving functions (no record
  // object for them, no executor made per call as `withResolvers` does).
  let caughtResolve, caughtReject;
  const catchResolvers = (resolve, reject) => {
    caughtResolve = resolve;
    caughtReject = reject;
  };

  // Called by the host (`hand_over_results` in execute.rs) with the results that arrived since
  // its last call: `id, kind, value` triples as its arguments (`Results` in tool_ops.rs): kind 1
  // the value, 0 a failure's record, 2 and 3 why the engine could not take the value (a
  // RangeError or a TypeError). The engine gathers them into `results` by defining each element
  // (as it does for any rest parameter), so no index setter the program put on a prototype sees
  // them, as one would an array the host filled through the engine facade, which assigns. One
  // call per batch (of up to 1024 results), and no promise of deno_core's per call; the host
  // runs the microtasks after it. Resolving with a value may read a `then` the program put on
  // Object.prototype (as any promise resolution does); that runs program code here, which may
  // issue calls: they join the table.
  internal.settleCalls = function settleCalls(...results) {
    for (let i = 0; i < results.length; i += 3) {
      const id = results[i];
      const resolve = resolveFns[id];
      if (resolve === undefined) continue;
      const reject = rejectFns[id];
      resolveFns[id] = undefined;
      rejectFns[id] = undefined;
      freeIds[freeCount++] = id;
      const kind = results[i + 1];
      try {
        if (kind === 1) resolve(results[i + 2]);
        else if (kind === 0) reject(HostToolError(results[i + 2]));
        else if (kind === 2) reject(new RangeError(results[i + 2]));
        else reject(new TypeError(results[i + 2]));
      } catch (e) {
        // Making the error failed (the heap is exhausted): the call still settles.
        reject(e);
      }
    }
  };

  // Waves (`CallWave` in Rust): a call's wave is 1 plus the highest wave among the calls whose
  // results the program had received when it issued it. A result counts as received when it
  // reaches this handler, which runs before any code of the program can see it.
  // Set per run by `makeTools`: off unless the run asked for `TrackWaves` (a reaction per call).
  let trackWaves = false;
  let receivedWave = 0;
  // The two handlers of each wave, made once per wave (not per call).
  const waveHandlers = { __proto__: null };
  function handlersOf(wave) {
    let handlers = waveHandlers[wave];
    if (handlers === undefined) {
      const received = () => {
        if (wave > receivedWave) receivedWave = wave;
      };
      handlers = {
        __proto__: null,
        ok: (value) => {
          received();
          return value;
        },
        failed: (error) => {
          received();
          throw error;
        },
      };
      waveHandlers[wave] = handlers;
    }
    return handlers;
  }
  function tracked(promise, wave) {
    const { ok, failed } = handlersOf(wave);
    try {
      return PromisePrototypeThen(promise, ok, failed);
    } catch {
      // A program that broke `Promise` species gets the op's own promise (its waves stop
      // growing; nothing else changes).
      return promise;
    }
  }

  // `index` is the tool's place in the catalog, or UNKNOWN with `path` sent instead. A known
  // tool's arguments that cannot be converted send the reason in place of the path.
  // The common call (a known tool, converted arguments, no waves) takes the op with two
  // arguments fewer; every other goes through `op_codemode_tool_call_full`.
  function call(index, path, args) {
    if (gate.closed) return lateCall(path);
    let text = "";
    let detail = index === UNKNOWN ? path : "";
    try {
      text = serializeArgs(args === undefined ? {} : args);
      if (text === undefined) text = "{}";
    } catch (e) {
      // An unknown tool is refused as such before its arguments are looked at.
      if (index !== UNKNOWN) {
        detail = internal.isValueError(e)
          ? internal.capText("", e.message + " (at " + e.path + ")", "message")
          : internal.safeMessage(e);
      }
    }
    const reused = freeCount > 0;
    const id = reused ? freeIds[freeCount - 1] : nextId;
    const wave = trackWaves ? receivedWave + 1 : 0;
    let promise;
    try {
      const value = wave === 0 && detail === ""
        ? op_codemode_tool_call(index, id, text)
        : op_codemode_tool_call_full(index, id, wave, text, detail);
      if (value === undefined) {
        // The call goes on. Its id is taken first, before anything here can fail (at the
        // stack's limit, say) with the host already holding the call: an id whose promise
        // could not be made is never handed out again (its result finds no resolver).
        if (reused) freeCount--;
        else nextId++;
        promise = new Promise(catchResolvers);
        resolveFns[id] = caughtResolve;
        rejectFns[id] = caughtReject;
      } else {
        promise = PromiseResolve(value);
      }
    } catch (e) {
      promise = PromiseReject(e);
    }
    return wave === 0 ? promise : tracked(promise, wave);
  }

  const makeFunction = (index, path) => {
    const fn = (args) => call(index, path, args);
    ObjectDefineProperty(fn, "name", { __proto__: null, value: path });
    return ObjectFreeze(fn);
  };

  // Property names that must never look like tools: probing them (await, JSON,
  // inspection) has to see `undefined`.
  const NOT_TOOLS = { __proto__: null, then: true, toJSON: true, constructor: true, valueOf: true, toString: true };

  const unknownTool = (path) =>
    new Proxy(makeFunction(UNKNOWN, path), {
      // Null prototype: no other trap can be inherited from a patched Object.prototype.
      __proto__: null,
      get(target, key) {
        if (typeof key !== "string" || NOT_TOOLS[key] === true) return undefined;
        // The frozen function's own: a proxy must answer them as they are (the engine throws
        // "proxy: inconsistent get" otherwise, when the program reads `tools.nope.name`).
        if (key === "name" || key === "length") return target[key];
        return makeFunction(UNKNOWN, path + "." + key);
      },
    });

  // The prototype of a namespace (or of `tools`): reached only by names that are not own
  // properties, it answers with an unknown tool under `prefix`.
  const unknownNames = (prefix) =>
    new Proxy(ObjectFreeze({ __proto__: null }), {
      __proto__: null,
      get(t, key) {
        if (typeof key !== "string" || NOT_TOOLS[key] === true) return undefined;
        return unknownTool(prefix + key);
      },
    });

  // An own property whatever its name (no setter on the prototype chain is involved). A later
  // definition of the same name replaces the earlier one until the object is frozen.
  const define = (object, key, value) =>
    ObjectDefineProperty(object, key, { __proto__: null, value, enumerable: true, configurable: true });

  const buildTools = (paths) => {
    const root = ObjectCreate(unknownNames(""));
    const namespaces = { __proto__: null };
    for (let i = 0; i < paths.length; i++) {
      const path = paths[i];
      const dot = StringPrototypeIndexOf(path, ".");
      if (dot === -1) {
        define(root, path, makeFunction(i, path));
      } else {
        const ns = StringPrototypeSlice(path, 0, dot);
        if (namespaces[ns] === undefined) namespaces[ns] = ObjectCreate(unknownNames(ns + "."));
        define(namespaces[ns], StringPrototypeSlice(path, dot + 1), makeFunction(i, path));
      }
    }
    for (const ns in namespaces) define(root, ns, ObjectFreeze(namespaces[ns]));
    return ObjectFreeze(root);
  };

  // The `tools` object built before the run, while the isolate waits in the pool, for the
  // catalog its worker expects (the last run's): building it costs about 17.6k instructions per
  // tool, which the run would otherwise pay before the program starts. Handed out once.
  let prebuilt;
  internal.prebuildTools = (paths) => {
    prebuilt = buildTools(paths);
  };

  // The run's `tools`: the prebuilt object when the host passes `null` as the catalog (it does
  // only when it prebuilt this isolate's object for the run's own catalog), else built now.
  internal.makeTools = (paths, track) => {
    trackWaves = track;
    const tools = paths === null ? prebuilt : buildTools(paths);
    prebuilt = undefined;
    // The host's promise broken: a loud failure, never a run with no tools.
    if (tools === undefined) throw new Error("codemode: this isolate holds no prebuilt tools");
    return tools;
  };

  internal.ToolError = ToolError;
})(globalThis.__codemodeInternal);

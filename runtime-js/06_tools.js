// The `tools` object. It is built per run from the host's catalog of sandbox
// paths (`grep`, `memory.search_nodes`): known names are plain frozen
// functions; an unknown name still yields a function, whose call goes to the
// host and rejects with `UNKNOWN_TOOL` and close-match suggestions (a typo gets
// a useful error instead of "is not a function"). Every call crosses into Rust
// through the one op `op_codemode_tool_call`.
"use strict";
((internal) => {
  const {
    Error,
    JSONParse,
    JSONStringify,
    ObjectDefineProperty,
    ObjectFreeze,
    PromisePrototypeThen,
    Proxy,
    StringPrototypeCharCodeAt,
    StringPrototypeIndexOf,
    StringPrototypeSlice,
    WeakMap,
    WeakMapPrototypeGet,
    WeakMapPrototypeSet,
  } = internal.primordials;
  const { op_codemode_tool_call } = internal.ops;

  // What each ToolError was created with: read from here (not from its possibly
  // patched properties) when the error ends the run.
  const toolErrors = new WeakMap();

  class ToolError extends Error {
    constructor(message, code, tool, details) {
      super(message);
      ObjectDefineProperty(this, "name", { value: "ToolError", writable: true, configurable: true });
      ObjectDefineProperty(this, "code", { value: code, writable: true, configurable: true, enumerable: true });
      ObjectDefineProperty(this, "tool", { value: tool, writable: true, configurable: true, enumerable: true });
      ObjectDefineProperty(this, "details", { value: details, writable: true, configurable: true, enumerable: true });
    }
  }

  internal.toolErrorInfo = (thrown) => {
    if (thrown === null || typeof thrown !== "object") return undefined;
    return WeakMapPrototypeGet(toolErrors, thrown);
  };

  // The op resolves with the value's JSON text, or with `!` and a failure record.
  function settle(resultJson) {
    if (StringPrototypeCharCodeAt(resultJson, 0) !== 33) return JSONParse(resultJson);
    const result = JSONParse(StringPrototypeSlice(resultJson, 1));
    const error = new ToolError(result.message, result.code, result.tool, result.details);
    let stack = "";
    try {
      stack = error.stack;
    } catch {
      // keep the empty stack
    }
    WeakMapPrototypeSet(toolErrors, error, {
      __proto__: null,
      name: "ToolError",
      message: result.message,
      stack: typeof stack === "string" ? stack : "",
      code: result.code,
      tool: result.tool,
      detailsJson: JSONStringify(result.details),
    });
    throw error;
  }

  function call(path, args) {
    let text = "";
    let problem = "";
    try {
      text = internal.serialize(args === undefined ? {} : args, 1 << 30);
      if (text === undefined) text = "{}";
    } catch (e) {
      problem = internal.isValueError(e) ? e.message + " (at " + e.path + ")" : internal.safeMessage(e);
    }
    return PromisePrototypeThen(op_codemode_tool_call(path, text, problem), settle);
  }

  const makeFunction = (path) => {
    const fn = (args) => call(path, args);
    ObjectDefineProperty(fn, "name", { value: path });
    return ObjectFreeze(fn);
  };

  // Property names that must never look like tools: probing them (await, JSON,
  // inspection) has to see `undefined`.
  const NOT_TOOLS = { __proto__: null, then: true, toJSON: true, constructor: true, valueOf: true, toString: true };

  const unknownTool = (path) =>
    new Proxy(makeFunction(path), {
      get(target, key) {
        if (typeof key !== "string" || NOT_TOOLS[key] === true) return undefined;
        return makeFunction(path + "." + key);
      },
    });

  const guard = (target, prefix) =>
    new Proxy(target, {
      get(t, key) {
        if (typeof key !== "string") return undefined;
        const own = t[key];
        if (own !== undefined || NOT_TOOLS[key] === true) return own;
        return unknownTool(prefix + key);
      },
    });

  internal.makeTools = (paths) => {
    const root = { __proto__: null };
    const namespaces = { __proto__: null };
    for (let i = 0; i < paths.length; i++) {
      const path = paths[i];
      const dot = StringPrototypeIndexOf(path, ".");
      if (dot === -1) {
        root[path] = makeFunction(path);
      } else {
        const ns = StringPrototypeSlice(path, 0, dot);
        if (namespaces[ns] === undefined) namespaces[ns] = { __proto__: null };
        namespaces[ns][StringPrototypeSlice(path, dot + 1)] = makeFunction(path);
      }
    }
    for (const ns in namespaces) root[ns] = guard(ObjectFreeze(namespaces[ns]), ns + ".");
    return guard(ObjectFreeze(root), "");
  };

  internal.ToolError = ToolError;
})(globalThis.__codemodeInternal);

// The run itself: the one-shot entry that starts the model's async function,
// and the single place where a run ends (`finish`). Every value that leaves
// here for the host is plain data built by the glue (strings and numbers in a
// null-prototype record), never a user object: a hostile thrown value or return
// value cannot reach deno_core's error or value conversion.
"use strict";
((internal) => {
  const {
    ErrorPrototype,
    JSONStringify,
    ObjectDefineProperty,
    ObjectGetPrototypeOf,
    PromisePrototypeThen,
    PromiseResolve,
    ReflectDeleteProperty,
    String,
  } = internal.primordials;
  const { op_codemode_finish } = internal.ops;
  const inspect = internal.inspect;
  const serialize = internal.serialize;
  const isValueError = internal.isValueError;

  let finished = false;
  // Set per run by the entry. Counted in UTF-16 units, a lower bound of the UTF-8 size, so this
  // early stop never rejects a value that fits; the host checks the exact size.
  let returnLimit = 0;

  const isError = (value) => {
    let proto = ObjectGetPrototypeOf(value);
    while (proto !== null) {
      if (proto === ErrorPrototype) return true;
      proto = ObjectGetPrototypeOf(proto);
    }
    return false;
  };

  const stringOr = (value, fallback) => (typeof value === "string" ? value : fallback);

  // A plain record describing any thrown value.
  function describe(thrown) {
    const tool = internal.toolErrorInfo ? internal.toolErrorInfo(thrown) : undefined;
    if (tool !== undefined) return tool;
    try {
      if (thrown !== null && typeof thrown === "object" && isError(thrown)) {
        const name = thrown.name;
        const message = thrown.message;
        const stack = thrown.stack;
        return {
          __proto__: null,
          name: stringOr(name, "Error"),
          message: typeof message === "string" ? message : message === undefined ? "" : inspect(message, true),
          stack: stringOr(stack, ""),
        };
      }
    } catch {
      // A getter or proxy trap threw while we looked: describe it without reading further.
      return { __proto__: null, name: "Error", message: "Uncaught exception (its properties could not be read)", stack: "" };
    }
    return { __proto__: null, name: "Error", message: "Uncaught " + inspect(thrown), stack: "" };
  }

  function finishWith(status, record, valueText) {
    if (finished) return;
    finished = true;
    const report = { __proto__: null, status, error: record };
    op_codemode_finish(JSONStringify(report), valueText === undefined ? "" : valueText, valueText !== undefined);
  }

  internal.fail = (thrown) => {
    if (finished) return;
    let record;
    try {
      record = describe(thrown);
    } catch {
      record = { __proto__: null, name: "Error", message: "Uncaught exception", stack: "" };
    }
    finishWith("error", record, undefined);
  };

  // Run-ending limits detected in JS (e.g. the tool-call cap) end the run here.
  internal.endWithLimit = (message) => {
    finishWith("limit_exceeded", { __proto__: null, name: "LimitExceeded", message, stack: "" }, undefined);
  };

  function succeed(value) {
    if (finished) return;
    let text;
    try {
      text = serialize(value, returnLimit);
    } catch (e) {
      if (isValueError(e)) {
        const status = e.limit ? "limit_exceeded" : "error";
        const name = e.limit ? "LimitExceeded" : "TypeError";
        finishWith(status, { __proto__: null, name, message: "the return value " + (e.limit ? "is too large: " : "cannot be serialized: ") + e.message + " (at " + e.path + ")", stack: "" }, undefined);
      } else {
        internal.fail(e);
      }
      return;
    }
    finishWith("ok", null, text);
  }

  // Called exactly once, by the program script, before any model code runs.
  internal.entry = function codemodeEntry(userFunction, returnBytes, toolPaths) {
    ReflectDeleteProperty(globalThis, "__codemodeEntry");
    returnLimit = returnBytes;
    ObjectDefineProperty(globalThis, "tools", {
      value: internal.makeTools(toolPaths),
      writable: false,
      configurable: false,
      enumerable: false,
    });
    // The program starts at the first microtask checkpoint, not inside the script that compiled
    // it: the host guards the heap between the two (`Engine::guard_heap`).
    PromisePrototypeThen(PromiseResolve(undefined), () => {
      let promise;
      try {
        promise = userFunction();
      } catch (e) {
        internal.fail(e);
        return;
      }
      PromisePrototypeThen(promise, succeed, internal.fail);
    });
  };
  internal.isFinished = () => finished;
  internal.String = String;
})(globalThis.__codemodeInternal);

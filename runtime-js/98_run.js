// The run itself: the one-shot entry that starts the model's async function,
// and the single place where a run ends (`finish`). Every value that leaves
// here for the host is plain data built by the glue (strings and numbers in a
// null-prototype record), never a user object: a hostile thrown value or return
// value cannot reach deno_core's error or value conversion. Every text in the
// report is capped (see `capText`/`capStack` in 01_values.js), and every way
// into `finishWith` ends the run with a report, even when writing it fails.
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
  const capText = internal.capText;
  const capStack = internal.capStack;
  const toolGate = internal.toolGate;
  const CAP = internal.ERROR_TEXT_CAP;
  const quoteJson = internal.quoteJson;

  // Written when the report itself cannot be (it is built from capped text, so this is a last
  // resort, e.g. the engine refusing an allocation).
  const FALLBACK_REPORT = JSONStringify({
    status: "error",
    error: { name: "InternalError", message: "the run ended, but its report could not be written", stack: "" },
  });

  let finished = false;
  // The run ended `ok`. An unhandled rejection reported in the same turn of the event loop
  // (the loop dispatches rejections after the timers and microtasks that let the program
  // return) still fails it: the host reads the outcome only once the turn is over.
  let succeeded = false;
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

  // A plain record describing any thrown value; its texts are capped (a huge string is only
  // sliced, never copied whole).
  function describe(thrown) {
    const tool = internal.toolErrorInfo ? internal.toolErrorInfo(thrown) : undefined;
    if (tool !== undefined) {
      tool.message = capText("", tool.message, "message");
      tool.stack = capStack(tool.stack);
      return tool;
    }
    try {
      if (thrown !== null && typeof thrown === "object" && isError(thrown)) {
        const name = thrown.name;
        const message = thrown.message;
        const stack = thrown.stack;
        return {
          __proto__: null,
          name: capText("", stringOr(name, "Error"), "name"),
          message: capText(
            "",
            typeof message === "string" ? message : message === undefined ? "" : inspect(message, true),
            "message",
          ),
          stack: capStack(stringOr(stack, "")),
        };
      }
    } catch {
      // A getter or proxy trap threw while we looked: describe it without reading further.
      return { __proto__: null, name: "Error", message: "Uncaught exception (its properties could not be read)", stack: "" };
    }
    // A thrown string prints raw: it is cut before anything is added to it.
    return {
      __proto__: null,
      name: "Error",
      message: capText("Uncaught ", typeof thrown === "string" ? thrown : inspect(thrown), "message"),
      stack: "",
    };
  }

  // The report as JSON text, written field by field: the engine's own `JSON.stringify` of an
  // object keeps its bookkeeping in an ordinary array, which a setter the program put on
  // Array.prototype would reach. Only strings are stringified here.
  function reportJson(status, record) {
    if (record === null) return '{"status":' + quoteJson(status) + ',"error":null}';
    let text = '{"status":' + quoteJson(status) + ',"error":{"name":' + quoteJson(record.name) +
      ',"message":' + quoteJson(record.message) + ',"stack":' + quoteJson(record.stack);
    if (typeof record.code === "string") text += ',"code":' + quoteJson(record.code);
    if (typeof record.tool === "string") text += ',"tool":' + quoteJson(record.tool);
    if (typeof record.detailsJson === "string") text += ',"detailsJson":' + quoteJson(record.detailsJson);
    return text + "}}";
  }

  // The one place a run ends. A caller's record may hold text of any length (a return-value
  // error quotes the program's own messages): capped here too, with room for the markers the
  // caps add, so text capped once is not cut again.
  const RECORD_SLACK = 256;
  function finishWith(status, record, valueText, replacing = false) {
    toolGate.closed = true;
    if (finished) return;
    finished = true;
    succeeded = status === "ok";
    let report;
    try {
      if (record !== null) {
        if (record.name.length > CAP + RECORD_SLACK) record.name = capText("", record.name, "name");
        if (record.message.length > CAP + RECORD_SLACK) record.message = capText("", record.message, "message");
        if (record.stack.length > CAP + RECORD_SLACK) record.stack = capStack(record.stack);
      }
      report = reportJson(status, record);
    } catch {
      report = FALLBACK_REPORT;
      valueText = undefined;
    }
    try {
      op_codemode_finish(report, valueText === undefined ? "" : valueText, valueText !== undefined, replacing);
    } catch {
      // E.g. the value text could not be handed over: the run still ends, with the fixed report.
      op_codemode_finish(FALLBACK_REPORT, "", false, replacing);
    }
  }

  const recordOf = (thrown) => {
    try {
      return describe(thrown);
    } catch {
      return { __proto__: null, name: "Error", message: "Uncaught exception", stack: "" };
    }
  };

  internal.fail = (thrown) => {
    // Before the thrown value is looked at (its getters may call tools).
    toolGate.closed = true;
    if (finished) return;
    finishWith("error", recordOf(thrown), undefined);
  };

  // The unhandled-rejection handler: fails the run, even one that returned in this turn.
  internal.failUnhandled = (reason) => {
    toolGate.closed = true;
    if (finished && !succeeded) return;
    const replacing = finished;
    finished = false;
    finishWith("error", recordOf(reason), undefined, replacing);
  };

  // Run-ending limits detected in JS (e.g. the tool-call cap) end the run here.
  internal.endWithLimit = (message) => {
    finishWith("limit_exceeded", { __proto__: null, name: "LimitExceeded", message, stack: "" }, undefined);
  };

  function succeed(value) {
    // Before the value is serialized (its `toJSON` or getters may call tools).
    toolGate.closed = true;
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
  internal.entry = function codemodeEntry(userFunction, returnBytes, toolPaths, trackWaves) {
    ReflectDeleteProperty(globalThis, "__codemodeEntry");
    returnLimit = returnBytes;
    ObjectDefineProperty(globalThis, "tools", {
      __proto__: null,
      value: internal.makeTools(toolPaths, trackWaves === true),
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

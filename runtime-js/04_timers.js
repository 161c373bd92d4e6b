// Timers and microtasks. Callbacks run inside a guard: a throw from a timer or a
// microtask fails the run with that error (as an uncaught exception would in
// Node) instead of reaching deno_core's exception reporting with a hostile
// value. Timers need no limit of their own: the run's deadline ends them.
"use strict";
((internal) => {
  const { Map, MapPrototypeDelete, MapPrototypeGet, MapPrototypeSet, ReflectApply, TypeError } =
    internal.primordials;
  const { createTimer, cancelTimer, queueMicrotask: coreQueueMicrotask } = internal.core;

  const timers = new Map();
  let nextId = 1;

  const guarded = (callback, args) => () => {
    try {
      ReflectApply(callback, undefined, args);
    } catch (e) {
      internal.fail(e);
    }
  };

  function schedule(callback, delay, args, repeat) {
    if (typeof callback !== "function") {
      throw new TypeError("the callback must be a function (strings are not evaluated)");
    }
    const id = nextId++;
    const run = guarded(callback, args);
    const timer = createTimer(
      repeat ? run : () => {
        MapPrototypeDelete(timers, id);
        run();
      },
      delay,
      undefined,
      repeat,
      true,
    );
    MapPrototypeSet(timers, id, timer);
    return id;
  }

  function clear(id) {
    const timer = MapPrototypeGet(timers, id);
    if (timer === undefined) return;
    MapPrototypeDelete(timers, id);
    cancelTimer(timer);
  }

  internal.timers = {
    __proto__: null,
    setTimeout: (callback, delay, ...args) => schedule(callback, delay, args, false),
    setInterval: (callback, delay, ...args) => schedule(callback, delay, args, true),
    clearTimeout: (id) => clear(id),
    clearInterval: (id) => clear(id),
    queueMicrotask: (callback) => {
      if (typeof callback !== "function") throw new TypeError("the callback must be a function");
      coreQueueMicrotask(guarded(callback, []));
    },
  };
})(globalThis.__codemodeInternal);

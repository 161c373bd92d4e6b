// Intl.DateTimeFormat, NumberFormat, PluralRules and RelativeTimeFormat, and
// the toLocaleString family of Date, Number and BigInt, loaded on first use.
// Their implementation (intl.js, in English) is kept in the startup snapshot
// as source text (`internal.intlSource`, set by the script before this one)
// and evaluated by the first use in a run: as functions in every isolate it
// cost 0.81M instructions per build and 0.11 MB per idle isolate, for the few
// programs that format. Until then, Intl's four constructors are accessors
// that load and become plain values, and the prototypes' methods are small
// functions that load and call on.
"use strict";
((internal) => {
  const {
    BigIntPrototypeValueOf,
    NumberPrototypeValueOf,
    ObjectDefineProperty,
  } = internal.primordials;
  // Captured before any program runs: a program that replaces `eval` cannot
  // change what the implementation is made by.
  const indirectEval = globalThis.eval;
  const source = internal.intlSource;
  delete internal.intlSource;
  // The facade's time-zone function, set on every isolate by the bootstrap.
  internal.intlHost = { __proto__: null, zone: undefined };

  let implementation;
  const load = () => {
    if (implementation === undefined) implementation = indirectEval(source)(internal);
    return implementation;
  };

  const Intl = globalThis.Intl;
  const settle = (name, value) =>
    ObjectDefineProperty(Intl, name, { __proto__: null, value, writable: true, configurable: true });
  for (const name of ["DateTimeFormat", "NumberFormat", "PluralRules", "RelativeTimeFormat"]) {
    ObjectDefineProperty(Intl, name, {
      __proto__: null,
      get() {
        const value = load()[name];
        settle(name, value);
        return value;
      },
      set(value) {
        settle(name, value);
      },
      configurable: true,
    });
  }

  const method = (name, body) =>
    ({
      [name](locales, options) {
        return body(this, locales, options);
      },
    })[name];
  const dateMethod = (name, required, defaults) =>
    method(name, (date, locales, options) =>
      load().dateToLocale(name, date, required, defaults, locales, options));
  const toLocaleString = dateMethod("toLocaleString", "any", "all");
  const toLocaleDateString = dateMethod("toLocaleDateString", "date", "date");
  const toLocaleTimeString = dateMethod("toLocaleTimeString", "time", "time");
  const numberToLocaleString = method("toLocaleString", (number, locales, options) =>
    load().numberToLocale(NumberPrototypeValueOf(number), locales, options));
  const bigintToLocaleString = method("toLocaleString", (bigint, locales, options) =>
    load().numberToLocale(BigIntPrototypeValueOf(bigint), locales, options));

  // Run by the bootstrap on every isolate: a restored context gets the engine's own Date,
  // Number and BigInt prototypes back from the snapshot, so these cannot be set here once.
  internal.installLocaleFormats = () => {
    const set = (proto, name, value) =>
      ObjectDefineProperty(proto, name, { __proto__: null, value, writable: true, configurable: true });
    set(Date.prototype, "toLocaleString", toLocaleString);
    set(Date.prototype, "toLocaleDateString", toLocaleDateString);
    set(Date.prototype, "toLocaleTimeString", toLocaleTimeString);
    set(Number.prototype, "toLocaleString", numberToLocaleString);
    set(BigInt.prototype, "toLocaleString", bigintToLocaleString);
  };
})(globalThis.__codemodeInternal);

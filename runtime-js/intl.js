// The implementation of Intl.DateTimeFormat, NumberFormat, PluralRules and
// RelativeTimeFormat, and of the toLocaleString family of Date, Number and
// BigInt, in English (en-US) for every locale asked for: see 05_intl.js, which
// keeps this source as a string in the startup snapshot and evaluates it on
// the first use in a run, so that programs that never format pay nothing
// (its functions in every isolate cost 0.81M instructions per build and 0.11
// MB per idle isolate). Hence this file holds no backtick and no dollar-brace:
// it travels inside a String.raw template (engine.rs checks it).
//
// The engine facade has no ICU: its Intl is a stub (NumberFormat wrote
// String(n), PluralRules always said "other") whose DateTimeFormat reads a
// host function from the global object, which the bootstrap removes with
// every other non-standard global, so "new Intl.DateTimeFormat().format(d)"
// threw "not a function". Dates format in en-US patterns (numeric, textual
// months and weekdays, 12/24-hour clocks, dateStyle/timeStyle, time zone
// names) in any IANA time zone through the facade's time-zone database (the
// host function, handed over per isolate by the bootstrap as
// internal.intlHost.zone); without timeZone, in the process's local time, as
// Date's own getters see it. Numbers are rounded on their shortest decimal
// digits (1.005 -> "1.01" at two places), half away from zero, as ICU does.
(function (internal) {
  "use strict";
  const {
    ArrayIsArray,
    ArrayPrototypeJoin,
    ArrayPrototypePush,
    Date,
    DatePrototypeGetTime,
    ObjectDefineProperty,
    ObjectKeys,
    String,
    WeakMap,
    WeakMapPrototypeGet,
    WeakMapPrototypeSet,
  } = internal.primordials;
  // The facade's time-zone function, set per isolate by the bootstrap (05_intl.js).
  const host = internal.intlHost;

  const MONTHS = ["January", "February", "March", "April", "May", "June", "July",
    "August", "September", "October", "November", "December"];
  const WEEKDAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];
  const TEXT = ["long", "short", "narrow"];
  const NUMERIC = ["numeric", "2-digit"];
  const CHOICES = {
    __proto__: null,
    weekday: TEXT,
    era: TEXT,
    year: NUMERIC,
    month: ["numeric", "2-digit", "long", "short", "narrow"],
    day: NUMERIC,
    hour: NUMERIC,
    minute: NUMERIC,
    second: NUMERIC,
    timeZoneName: ["short", "long", "shortOffset", "longOffset", "shortGeneric", "longGeneric"],
    hourCycle: ["h11", "h12", "h23", "h24"],
    dateStyle: ["full", "long", "medium", "short"],
    timeStyle: ["full", "long", "medium", "short"],
  };
  const DATE_FIELDS = ["weekday", "year", "month", "day"];
  const TIME_FIELDS = ["hour", "minute", "second", "fractionalSecondDigits"];
  const FIELDS = ["weekday", "era", "year", "month", "day", "hour", "minute", "second",
    "fractionalSecondDigits", "timeZoneName"];

  const pad = (n, width) => {
    let s = String(n);
    while (s.length < width) s = "0" + s;
    return s;
  };
  const text = (name, style) => (style === "long" ? name : style === "short" ? name.slice(0, 3) : name[0]);

  function option(options, name) {
    const value = options[name];
    if (value === undefined) return undefined;
    const s = String(value);
    const allowed = CHOICES[name];
    if (allowed !== undefined && !allowed.includes(s)) {
      throw new RangeError("Value " + s + " out of range for Intl.DateTimeFormat options property " + name);
    }
    return s;
  }

  // The canonical name of a time zone, or a RangeError naming the one that is not.
  function canonicalZone(name) {
    const zone = String(name);
    if (host.zone === undefined) throw new RangeError("Invalid time zone specified: " + zone);
    try {
      return host.zone(0, zone).timeZone;
    } catch {
      throw new RangeError("Invalid time zone specified: " + zone);
    }
  }

  // The wall-clock fields of instant "ms" in "zone" (undefined: the process's local time).
  function fieldsAt(ms, zone) {
    const millisecond = ((ms % 1000) + 1000) % 1000;
    if (zone === undefined) {
      const d = new Date(ms);
      return {
        year: d.getFullYear(), month: d.getMonth() + 1, day: d.getDate(), weekday: d.getDay(),
        hour: d.getHours(), minute: d.getMinutes(), second: d.getSeconds(), millisecond,
        offsetMinutes: -d.getTimezoneOffset(),
      };
    }
    const z = host.zone(ms, zone);
    const noon = new Date(0);
    noon.setUTCFullYear(z.year, z.month - 1, z.day);
    return {
      year: z.year, month: z.month, day: z.day, weekday: noon.getUTCDay(),
      hour: z.hour, minute: z.minute, second: z.second, millisecond,
      offsetMinutes: Math.round(Number(z.offsetNanoseconds) / 6e10),
    };
  }

  function offsetName(minutes, long) {
    if (minutes === 0) return "GMT";
    const sign = minutes < 0 ? "-" : "+";
    const h = Math.floor(Math.abs(minutes) / 60);
    const m = Math.abs(minutes) % 60;
    if (long) return "GMT" + sign + pad(h, 2) + ":" + pad(m, 2);
    return m === 0 ? "GMT" + sign + h : "GMT" + sign + h + ":" + pad(m, 2);
  }

  function zoneName(style, zone, minutes) {
    const utc = zone === "UTC" || (zone === undefined && minutes === 0);
    if (style === "long" || style === "longGeneric") {
      return utc ? "Coordinated Universal Time" : offsetName(minutes, true);
    }
    if (style === "longOffset") return offsetName(minutes, true);
    if (style === "shortOffset") return offsetName(minutes, false);
    return utc ? "UTC" : offsetName(minutes, false);
  }

  const STYLE_DATE = {
    __proto__: null,
    full: { weekday: "long", month: "long", day: "numeric", year: "numeric" },
    long: { month: "long", day: "numeric", year: "numeric" },
    medium: { month: "short", day: "numeric", year: "numeric" },
    short: { month: "numeric", day: "numeric", year: "2-digit" },
  };
  const STYLE_TIME = {
    __proto__: null,
    full: { hour: "numeric", minute: "2-digit", second: "2-digit", timeZoneName: "long" },
    long: { hour: "numeric", minute: "2-digit", second: "2-digit", timeZoneName: "short" },
    medium: { hour: "numeric", minute: "2-digit", second: "2-digit" },
    short: { hour: "numeric", minute: "2-digit" },
  };

  // ECMA-402's CreateDateTimeFormat, for en-US: "required" ("date", "time", "any") and
  // "defaults" ("date", "time", "all") as Date's toLocale*String pass them.
  function resolve(locales, options, required, defaults) {
    if (locales !== undefined && typeof locales !== "string" && !ArrayIsArray(locales)) {
      throw new TypeError("Intl.DateTimeFormat: locales must be a string or an array of strings");
    }
    const o = options === undefined ? { __proto__: null } : Object(options);
    const r = { __proto__: null };
    for (let i = 0; i < FIELDS.length; i++) {
      const name = FIELDS[i];
      if (name === "fractionalSecondDigits") {
        const v = o.fractionalSecondDigits;
        if (v !== undefined) {
          const n = Number(v);
          if (!(n === 1 || n === 2 || n === 3)) {
            throw new RangeError("fractionalSecondDigits value is out of range (1 to 3)");
          }
          r.fractionalSecondDigits = n;
        }
      } else {
        const v = option(o, name);
        if (v !== undefined) r[name] = v;
      }
    }
    const hour12 = o.hour12 === undefined ? undefined : !!o.hour12;
    const hourCycle = option(o, "hourCycle");
    const dateStyle = option(o, "dateStyle");
    const timeStyle = option(o, "timeStyle");
    const zone = o.timeZone === undefined ? undefined : canonicalZone(o.timeZone);
    if (dateStyle !== undefined || timeStyle !== undefined) {
      for (let i = 0; i < FIELDS.length; i++) {
        if (r[FIELDS[i]] !== undefined) {
          throw new TypeError("Can't set option " + FIELDS[i] + " when dateStyle or timeStyle is used");
        }
      }
      if (required === "date" && dateStyle === undefined) {
        throw new TypeError("toLocaleDateString: dateStyle is required with timeStyle");
      }
      if (required === "time" && timeStyle === undefined) {
        throw new TypeError("toLocaleTimeString: timeStyle is required with dateStyle");
      }
      if (dateStyle !== undefined) Object.assign(r, STYLE_DATE[dateStyle]);
      if (timeStyle !== undefined) Object.assign(r, STYLE_TIME[timeStyle]);
    } else {
      let needDefaults = true;
      if (required !== "time") for (const f of DATE_FIELDS) if (r[f] !== undefined) needDefaults = false;
      if (required !== "date") for (const f of TIME_FIELDS) if (r[f] !== undefined) needDefaults = false;
      if (needDefaults && (defaults === "date" || defaults === "all")) {
        r.year = r.month = r.day = "numeric";
      }
      if (needDefaults && (defaults === "time" || defaults === "all")) {
        r.hour = r.minute = r.second = "numeric";
      }
    }
    let cycle;
    if (r.hour !== undefined) {
      cycle = hour12 !== undefined ? (hour12 ? "h12" : "h23") : hourCycle !== undefined ? hourCycle : "h12";
    }
    return { fields: r, zone, cycle, dateStyle, timeStyle };
  }

  function push(parts, type, value) {
    ArrayPrototypePush(parts, { type, value: String(value) });
  }

  // The formatted parts of instant "ms" under resolved options "f".
  function partsOf(f, ms) {
    const r = f.fields;
    const t = fieldsAt(ms, f.zone);
    const parts = [];
    const bc = t.year <= 0;
    const yearValue = bc ? 1 - t.year : t.year;
    const year = r.year === "2-digit" ? pad(yearValue % 100, 2) : yearValue;
    const era = r.era !== undefined ? (bc ? "BC" : "AD") : undefined;
    const textMonth = r.month === "long" || r.month === "short" || r.month === "narrow";
    const hasDate = r.weekday !== undefined || r.year !== undefined || r.month !== undefined || r.day !== undefined;
    if (r.weekday !== undefined) {
      push(parts, "weekday", text(WEEKDAYS[t.weekday], r.weekday));
      if (r.year !== undefined || r.month !== undefined || r.day !== undefined) push(parts, "literal", ", ");
    }
    if (textMonth) {
      push(parts, "month", text(MONTHS[t.month - 1], r.month));
      if (r.day !== undefined) {
        push(parts, "literal", " ");
        push(parts, "day", r.day === "2-digit" ? pad(t.day, 2) : t.day);
      }
      if (r.year !== undefined) {
        push(parts, "literal", r.day !== undefined ? ", " : " ");
        push(parts, "year", year);
      }
    } else {
      let first = true;
      const numeric = (type, value) => {
        if (!first) push(parts, "literal", "/");
        first = false;
        push(parts, type, value);
      };
      if (r.month !== undefined) numeric("month", r.month === "2-digit" ? pad(t.month, 2) : t.month);
      if (r.day !== undefined) numeric("day", r.day === "2-digit" ? pad(t.day, 2) : t.day);
      if (r.year !== undefined) numeric("year", year);
    }
    if (era !== undefined) {
      if (hasDate) push(parts, "literal", " ");
      push(parts, "era", r.era === "long" ? (bc ? "Before Christ" : "Anno Domini") : r.era === "narrow" ? era[0] : era);
    }
    const hasTime = r.hour !== undefined || r.minute !== undefined || r.second !== undefined ||
      r.fractionalSecondDigits !== undefined;
    if (hasTime) {
      if (parts.length > 0) {
        // ICU's en joins: " at " after a date with its month in words (dateStyle full or long),
        // a plain space after a weekday alone, else a comma.
        const long = f.dateStyle !== undefined ? f.dateStyle === "full" || f.dateStyle === "long"
          : r.month === "long";
        const weekdayAlone = r.year === undefined && r.month === undefined && r.day === undefined && era === undefined;
        push(parts, "literal", long ? " at " : weekdayAlone ? " " : ", ");
      }
      let first = true;
      const sep = () => {
        if (!first) push(parts, "literal", ":");
        first = false;
      };
      if (r.hour !== undefined) {
        const h = t.hour;
        const shown = f.cycle === "h12" ? h % 12 || 12 : f.cycle === "h11" ? h % 12 : f.cycle === "h24" ? h || 24 : h;
        const twoDigit = r.hour === "2-digit" || f.cycle === "h23" || f.cycle === "h24";
        sep();
        push(parts, "hour", twoDigit ? pad(shown, 2) : shown);
      }
      if (r.minute !== undefined) {
        sep();
        push(parts, "minute", r.hour !== undefined || r.minute === "2-digit" ? pad(t.minute, 2) : t.minute);
      }
      if (r.second !== undefined || (r.fractionalSecondDigits !== undefined && r.minute !== undefined)) {
        sep();
        push(parts, "second", r.minute !== undefined || r.second === "2-digit" ? pad(t.second, 2) : t.second);
      }
      if (r.fractionalSecondDigits !== undefined) {
        if (!first) push(parts, "literal", ".");
        push(parts, "fractionalSecond", pad(t.millisecond, 3).slice(0, r.fractionalSecondDigits));
      }
      if (r.hour !== undefined && (f.cycle === "h12" || f.cycle === "h11")) {
        push(parts, "literal", " ");
        push(parts, "dayPeriod", t.hour < 12 ? "AM" : "PM");
      }
    }
    if (r.timeZoneName !== undefined) {
      if (parts.length > 0) push(parts, "literal", hasTime ? " " : ", ");
      push(parts, "timeZoneName", zoneName(r.timeZoneName, f.zone, t.offsetMinutes));
    }
    return parts;
  }

  function instant(date) {
    const ms = date === undefined ? Date.now() : date instanceof Date ? DatePrototypeGetTime(date) : Number(date);
    if (!Number.isFinite(ms) || Math.abs(ms) > 8.64e15) throw new RangeError("Invalid time value");
    return ms;
  }

  const joined = (parts) => {
    const values = [];
    for (let i = 0; i < parts.length; i++) ArrayPrototypePush(values, parts[i].value);
    return ArrayPrototypeJoin(values, "");
  };

  // A formatter's resolved options live in a WeakMap of its own, out of the program's reach (a
  // symbol-keyed property could be listed, rewritten or forged); its methods refuse any other
  // receiver, as the built-ins do.
  function slotOf(kind) {
    const records = new WeakMap();
    const attach = (self, resolved) => {
      WeakMapPrototypeSet(records, self, resolved);
      return self;
    };
    const read = (self) => {
      const resolved = self !== null && typeof self === "object" ? WeakMapPrototypeGet(records, self) : undefined;
      if (resolved === undefined) {
        throw new TypeError("Method called on an object that is not an Intl." + kind);
      }
      return resolved;
    };
    return { attach, read };
  }

  function supportedLocalesOf(locales) {
    const list = locales === undefined ? [] : typeof locales === "string" ? [locales] : Array.from(locales);
    return list.filter((l) => /^en(-|$)/i.test(String(l)));
  }

  // A formatter's prototype: "format" as a getter of a bound function when given (so that
  // "xs.map(f.format)" works), its methods, its tag; and "supportedLocalesOf".
  function definePrototype(ctor, kind, format, methods) {
    const proto = ctor.prototype;
    if (format !== undefined) ObjectDefineProperty(proto, "format", { __proto__: null, configurable: true, get: format });
    const names = ObjectKeys(methods);
    for (let i = 0; i < names.length; i++) {
      ObjectDefineProperty(proto, names[i], { __proto__: null, value: methods[names[i]], writable: true, configurable: true });
    }
    ObjectDefineProperty(proto, Symbol.toStringTag, { __proto__: null, value: "Intl." + kind, configurable: true });
    ObjectDefineProperty(ctor, "supportedLocalesOf", { __proto__: null, value: supportedLocalesOf, writable: true, configurable: true });
  }

  const { attach: attachDate, read: resolvedOf } = slotOf("DateTimeFormat");

  function DateTimeFormat(locales, options) {
    const self = new.target === undefined ? Object.create(DateTimeFormat.prototype) : this;
    return attachDate(self, resolve(locales, options, "any", "date"));
  }
  definePrototype(DateTimeFormat, "DateTimeFormat", function format() {
    const f = resolvedOf(this);
    return (date) => joined(partsOf(f, instant(date)));
  }, {
    formatToParts(date) {
      return partsOf(resolvedOf(this), instant(date));
    },
    formatRange(start, end) {
      const f = resolvedOf(this);
      return joined(partsOf(f, instant(start))) + " – " + joined(partsOf(f, instant(end)));
    },
    resolvedOptions() {
      const f = resolvedOf(this);
      const out = {
        locale: "en-US",
        calendar: "gregory",
        numberingSystem: "latn",
        timeZone: f.zone !== undefined ? f.zone : localZone(),
      };
      if (f.cycle !== undefined) {
        out.hourCycle = f.cycle;
        out.hour12 = f.cycle === "h12" || f.cycle === "h11";
      }
      if (f.dateStyle !== undefined || f.timeStyle !== undefined) {
        if (f.dateStyle !== undefined) out.dateStyle = f.dateStyle;
        if (f.timeStyle !== undefined) out.timeStyle = f.timeStyle;
      } else {
        for (let i = 0; i < FIELDS.length; i++) {
          const v = f.fields[FIELDS[i]];
          if (v !== undefined) out[FIELDS[i]] = v;
        }
      }
      return out;
    },
  });

  // Local time has no IANA name here: UTC when the process's offset is zero, else the offset.
  function localZone() {
    const minutes = -new Date().getTimezoneOffset();
    if (minutes === 0) return "UTC";
    const sign = minutes < 0 ? "-" : "+";
    return sign + pad(Math.floor(Math.abs(minutes) / 60), 2) + ":" + pad(Math.abs(minutes) % 60, 2);
  }

  // Date.prototype's toLocaleString (required "any", defaults "all"), toLocaleDateString
  // ("date", "date") and toLocaleTimeString ("time", "time").
  function dateToLocale(name, date, required, defaults, locales, options) {
    if (!(date instanceof Date)) throw new TypeError("Date.prototype." + name + " called on a non-Date");
    const ms = DatePrototypeGetTime(date);
    if (ms !== ms) return "Invalid Date";
    // Without locales and options (the usual call), the options are resolved once per method.
    const resolved = locales === undefined && options === undefined
      ? (defaultDates[name] ??= resolve(undefined, undefined, required, defaults))
      : resolve(locales, options, required, defaults);
    return joined(partsOf(resolved, ms));
  }
  const defaultDates = { __proto__: null };

  // ---- Intl.NumberFormat and Number.prototype.toLocaleString (en-US) ----

  // Symbols en-US writes for the commonest currencies; any other is written by its code.
  const CURRENCY_SYMBOLS = {
    __proto__: null,
    USD: "$", EUR: "€", GBP: "£", JPY: "¥", CNY: "CN¥", INR: "₹", KRW: "₩", CAD: "CA$",
    AUD: "A$", NZD: "NZ$", MXN: "MX$", BRL: "R$", HKD: "HK$", TWD: "NT$", ILS: "₪", VND: "₫",
    PHP: "₱", XAF: "FCFA", XOF: "F\u202fCFA",
  };
  const NARROW_SYMBOLS = { __proto__: null, CAD: "$", AUD: "$", NZD: "$", MXN: "$", HKD: "$", TWD: "$", CNY: "¥" };
  // ISO 4217 minor units, where they are not 2.
  const CURRENCY_DIGITS = {
    __proto__: null,
    JPY: 0, KRW: 0, VND: 0, CLP: 0, ISK: 0, UGX: 0, XAF: 0, XOF: 0, PYG: 0, HUF: 2,
    BHD: 3, KWD: 3, OMR: 3, JOD: 3, TND: 3, IQD: 0, LYD: 3,
  };
  const NUMBER_CHOICES = {
    __proto__: null,
    style: ["decimal", "percent", "currency"],
    currencyDisplay: ["symbol", "narrowSymbol", "code", "name"],
    currencySign: ["standard", "accounting"],
    notation: ["standard", "scientific", "engineering", "compact"],
    compactDisplay: ["short", "long"],
    signDisplay: ["auto", "always", "exceptZero", "negative", "never"],
  };
  const COMPACT = [["K", " thousand"], ["M", " million"], ["B", " billion"], ["T", " trillion"]];

  function numberOption(options, name, fallback) {
    const value = options[name];
    if (value === undefined) return fallback;
    const s = String(value);
    if (!NUMBER_CHOICES[name].includes(s)) {
      throw new RangeError("Value " + s + " out of range for Intl.NumberFormat options property " + name);
    }
    return s;
  }

  function digitsOption(options, name, low, high, fallback) {
    const value = options[name];
    if (value === undefined) return fallback;
    const n = Number(value);
    if (!(n >= low && n <= high) || n !== Math.floor(n)) {
      throw new RangeError(name + " value is out of range (" + low + " to " + high + ")");
    }
    return n;
  }

  function resolveNumber(locales, options) {
    if (locales !== undefined && typeof locales !== "string" && !ArrayIsArray(locales)) {
      throw new TypeError("Intl.NumberFormat: locales must be a string or an array of strings");
    }
    const o = options === undefined ? { __proto__: null } : Object(options);
    const r = { __proto__: null };
    if (o.style !== undefined && String(o.style) === "unit") {
      throw new RangeError("Intl.NumberFormat: style \"unit\" is not supported by this engine");
    }
    r.style = numberOption(o, "style", "decimal");
    let minFraction = 0;
    let maxFraction = 3;
    if (r.style === "currency") {
      if (o.currency === undefined) throw new TypeError("Currency code is required with currency style.");
      const code = String(o.currency);
      if (!/^[A-Za-z]{3}$/.test(code)) throw new RangeError("Invalid currency code : " + code);
      r.currency = code.toUpperCase();
      r.currencyDisplay = numberOption(o, "currencyDisplay", "symbol");
      r.currencySign = numberOption(o, "currencySign", "standard");
      const digits = CURRENCY_DIGITS[r.currency];
      minFraction = maxFraction = digits === undefined ? 2 : digits;
    } else if (r.style === "percent") {
      maxFraction = 0;
    }
    r.notation = numberOption(o, "notation", "standard");
    r.compactDisplay = r.notation === "compact" ? numberOption(o, "compactDisplay", "short") : undefined;
    r.signDisplay = numberOption(o, "signDisplay", "auto");
    r.minimumIntegerDigits = digitsOption(o, "minimumIntegerDigits", 1, 21, 1);
    const minSig = digitsOption(o, "minimumSignificantDigits", 1, 21, undefined);
    const maxSig = digitsOption(o, "maximumSignificantDigits", 1, 21, undefined);
    const minFrac = digitsOption(o, "minimumFractionDigits", 0, 100, undefined);
    const maxFrac = digitsOption(o, "maximumFractionDigits", 0, 100, undefined);
    if (minSig !== undefined || maxSig !== undefined) {
      r.minimumSignificantDigits = minSig === undefined ? 1 : minSig;
      r.maximumSignificantDigits = maxSig === undefined ? 21 : maxSig;
      if (r.minimumSignificantDigits > r.maximumSignificantDigits) {
        throw new RangeError("maximumSignificantDigits value is out of range");
      }
    } else if (minFrac !== undefined || maxFrac !== undefined || r.notation !== "compact") {
      r.minimumFractionDigits = minFrac === undefined ? Math.min(minFraction, maxFrac === undefined ? minFraction : maxFrac) : minFrac;
      r.maximumFractionDigits = maxFrac === undefined ? Math.max(maxFraction, r.minimumFractionDigits) : maxFrac;
      if (r.minimumFractionDigits > r.maximumFractionDigits) {
        throw new RangeError("maximumFractionDigits value is out of range");
      }
    }
    const grouping = o.useGrouping;
    r.useGrouping = grouping === undefined ? (r.notation === "compact" ? "min2" : "auto")
      : grouping === false || grouping === "false" ? false
      : grouping === true || grouping === "true" ? "always"
      : ["always", "auto", "min2"].includes(String(grouping)) ? String(grouping)
      : (() => { throw new RangeError("Value " + String(grouping) + " out of range for Intl.NumberFormat options property useGrouping"); })();
    return r;
  }

  // "digits" without its trailing zeros, "0" when nothing is left. A loop: /0+$/ backtracks over
  // every run of zeros, seconds for a BigInt of 100,000 digits.
  function trimZeros(digits) {
    let end = digits.length;
    while (end > 0 && digits.charCodeAt(end - 1) === 48) end--;
    return end === 0 ? "0" : digits.slice(0, end);
  }

  // |x| as decimal digits: "digits" (no leading zeros) times 10^(exp - digits.length + 1).
  function decimalOf(x) {
    if (typeof x === "bigint") {
      const s = String(x < 0n ? -x : x);
      const digits = trimZeros(s);
      return { digits, exp: s.length - 1 };
    }
    if (x === 0) return { digits: "0", exp: 0 };
    const e = Math.abs(x).toExponential();
    const at = e.indexOf("e");
    return { digits: e.slice(0, at).replace(".", ""), exp: Number(e.slice(at + 1)) };
  }

  // "d" rounded half away from zero to "keep" digits (a count from its first digit).
  function roundDigits(d, keep) {
    if (keep >= d.digits.length) return d;
    if (keep < 0) return { digits: "0", exp: 0 };
    const up = d.digits.charCodeAt(keep) >= 53; // "5"
    let kept = d.digits.slice(0, keep);
    let exp = d.exp;
    if (up) {
      let i = kept.length - 1;
      while (i >= 0 && kept[i] === "9") i--;
      if (i < 0) {
        kept = "1";
        exp += 1;
      } else {
        kept = kept.slice(0, i) + String.fromCharCode(kept.charCodeAt(i) + 1);
      }
    }
    kept = trimZeros(kept);
    return kept === "0" ? { digits: "0", exp: 0 } : { digits: kept, exp };
  }

  const isZero = (d) => d.digits === "0";

  // Integer and fraction digits of "d" under the resolved digit options.
  function shaped(r, d, fractionRule) {
    let rounded;
    let minFraction = 0;
    if (fractionRule !== undefined) {
      rounded = roundDigits(d, d.exp + 1 + fractionRule.max);
      minFraction = fractionRule.min;
    } else if (r.maximumSignificantDigits !== undefined) {
      rounded = roundDigits(d, r.maximumSignificantDigits);
    } else {
      rounded = roundDigits(d, d.exp + 1 + r.maximumFractionDigits);
      minFraction = r.minimumFractionDigits;
    }
    const { digits, exp } = rounded;
    let integer;
    let fraction;
    if (isZero(rounded)) {
      integer = "0";
      fraction = "";
    } else if (exp >= 0) {
      integer = digits.slice(0, exp + 1);
      while (integer.length < exp + 1) integer += "0";
      fraction = digits.slice(exp + 1);
    } else {
      integer = "0";
      fraction = "0".repeat(-exp - 1) + digits;
    }
    if (fractionRule === undefined && r.minimumSignificantDigits !== undefined) {
      // Significant digits shown: the integer's (it has no leading zero unless it is "0"), then
      // the fraction's from its first non-zero digit; a zero counts its "0".
      const shown = () => (integer !== "0" ? integer.length + fraction.length
        : isZero(rounded) ? 1 + fraction.length : fraction.replace(/^0+/, "").length);
      while (shown() < r.minimumSignificantDigits) fraction += "0";
    }
    while (fraction.length < minFraction) fraction += "0";
    while (integer.length < r.minimumIntegerDigits) integer = "0" + integer;
    return { integer, fraction, rounded };
  }

  function grouped(r, integer) {
    const mode = r.useGrouping;
    if (mode === false || integer.length <= 3) return [integer];
    if (mode === "min2" && integer.length <= 4) return [integer];
    const groups = [];
    const first = integer.length % 3 || 3;
    ArrayPrototypePush(groups, integer.slice(0, first));
    for (let at = first; at < integer.length; at += 3) ArrayPrototypePush(groups, integer.slice(at, at + 3));
    return groups;
  }

  function numberParts(r, x) {
    const parts = [];
    const negative = typeof x === "bigint" ? x < 0n : x < 0 || Object.is(x, -0);
    const nan = typeof x === "number" && x !== x;
    const infinite = typeof x === "number" && !nan && !Number.isFinite(x);
    let d = nan || infinite ? undefined : decimalOf(x);
    if (d !== undefined && r.style === "percent" && !isZero(d)) d = { digits: d.digits, exp: d.exp + 2 };
    const body = [];
    let exponent;
    let compact;
    if (d !== undefined) {
      let rule;
      if (r.notation === "compact" && r.maximumSignificantDigits === undefined && r.maximumFractionDigits === undefined) {
        rule = "compact";
      }
      let scaled = d;
      if (r.notation === "compact" && !isZero(d)) {
        // Round at the precision the number will be shown with, which may carry it into the
        // next unit (999.95 → 1K, 999,999 → 1M); numbers under 1,000 take no unit.
        const roundAt = (v) => (rule === "compact" ? roundDigits(v, v.exp >= 1 ? v.exp + 1 : 2)
          : r.maximumSignificantDigits !== undefined ? roundDigits(v, r.maximumSignificantDigits)
          : roundDigits(v, v.exp + 1 + r.maximumFractionDigits));
        let magnitude = d.exp;
        for (let pass = 0; pass < 2; pass++) {
          const unit = Math.max(0, Math.min(Math.floor(magnitude / 3), COMPACT.length));
          const shift = unit * 3;
          scaled = roundAt({ digits: d.digits, exp: d.exp - shift });
          if (!isZero(scaled) && scaled.exp + shift >= (unit + 1) * 3 && unit < COMPACT.length && pass === 0) {
            magnitude = scaled.exp + shift;
            continue;
          }
          compact = unit > 0 ? COMPACT[unit - 1] : undefined;
          break;
        }
      } else if (r.notation === "scientific" || r.notation === "engineering") {
        let e = d.exp;
        if (r.notation === "engineering") e = Math.floor(e / 3) * 3;
        if (isZero(d)) e = 0;
        scaled = { digits: d.digits, exp: d.exp - e };
        exponent = e;
      }
      const shape = rule === "compact" ? shaped(r, scaled, { min: 0, max: 20 }) : shaped(r, scaled, undefined);
      if (exponent !== undefined && shape.rounded.exp + exponent !== d.exp && !isZero(shape.rounded)) {
        // 9.9996E3 rounded to 10.000E3: written as 1E4.
        const e = r.notation === "engineering" ? Math.floor((shape.rounded.exp + exponent) / 3) * 3 : shape.rounded.exp + exponent;
        const again = shaped(r, { digits: shape.rounded.digits, exp: shape.rounded.exp + exponent - e }, undefined);
        shape.integer = again.integer;
        shape.fraction = again.fraction;
        exponent = e;
      }
      const groups = exponent === undefined ? grouped(r, shape.integer) : [shape.integer];
      for (let i = 0; i < groups.length; i++) {
        if (i > 0) ArrayPrototypePush(body, { type: "group", value: "," });
        ArrayPrototypePush(body, { type: "integer", value: groups[i] });
      }
      if (shape.fraction !== "") {
        ArrayPrototypePush(body, { type: "decimal", value: "." });
        ArrayPrototypePush(body, { type: "fraction", value: shape.fraction });
      }
      if (exponent !== undefined) {
        ArrayPrototypePush(body, { type: "exponentSeparator", value: "E" });
        if (exponent < 0) ArrayPrototypePush(body, { type: "exponentMinusSign", value: "-" });
        ArrayPrototypePush(body, { type: "exponentInteger", value: String(Math.abs(exponent)) });
      }
      if (compact !== undefined) {
        if (r.compactDisplay === "long") ArrayPrototypePush(body, { type: "literal", value: " " });
        ArrayPrototypePush(body, { type: "compact", value: r.compactDisplay === "long" ? compact[1].slice(1) : compact[0] });
      }
      d = shape.rounded;
    } else {
      ArrayPrototypePush(body, nan ? { type: "nan", value: "NaN" } : { type: "infinity", value: "∞" });
    }
    const zero = d !== undefined && isZero(d);
    let sign;
    switch (r.signDisplay) {
      case "auto": sign = negative && !nan ? "-" : ""; break;
      case "always": sign = nan ? "+" : negative ? "-" : "+"; break;
      case "exceptZero": sign = nan || zero ? "" : negative ? "-" : "+"; break;
      case "negative": sign = negative && !zero && !nan ? "-" : ""; break;
      default: sign = "";
    }
    const accounting = r.style === "currency" && r.currencySign === "accounting" && sign === "-";
    if (accounting) ArrayPrototypePush(parts, { type: "literal", value: "(" });
    else if (sign !== "") ArrayPrototypePush(parts, { type: sign === "-" ? "minusSign" : "plusSign", value: sign });
    if (r.style === "currency") {
      const code = r.currency;
      let symbol = r.currencyDisplay === "code" || r.currencyDisplay === "name" ? code : CURRENCY_SYMBOLS[code];
      if (r.currencyDisplay === "narrowSymbol") symbol = NARROW_SYMBOLS[code] || CURRENCY_SYMBOLS[code];
      if (r.currencyDisplay === "name") {
        for (let i = 0; i < body.length; i++) ArrayPrototypePush(parts, body[i]);
        ArrayPrototypePush(parts, { type: "literal", value: " " });
        ArrayPrototypePush(parts, { type: "currency", value: code });
      } else {
        const written = symbol === undefined ? code : symbol;
        ArrayPrototypePush(parts, { type: "currency", value: written });
        if (/[A-Za-z]$/.test(written) && d !== undefined) {
          ArrayPrototypePush(parts, { type: "literal", value: "\u00a0" });
        }
        for (let i = 0; i < body.length; i++) ArrayPrototypePush(parts, body[i]);
      }
    } else {
      for (let i = 0; i < body.length; i++) ArrayPrototypePush(parts, body[i]);
      if (r.style === "percent") ArrayPrototypePush(parts, { type: "percentSign", value: "%" });
    }
    if (accounting) ArrayPrototypePush(parts, { type: "literal", value: ")" });
    return parts;
  }

  function numberArgument(value) {
    if (typeof value === "bigint") return value;
    return Number(value);
  }

  const { attach: attachNumber, read: numberResolvedOf } = slotOf("NumberFormat");

  function NumberFormat(locales, options) {
    const self = new.target === undefined ? Object.create(NumberFormat.prototype) : this;
    return attachNumber(self, resolveNumber(locales, options));
  }
  definePrototype(NumberFormat, "NumberFormat", function format() {
    const r = numberResolvedOf(this);
    return (value) => joined(numberParts(r, numberArgument(value)));
  }, {
    formatToParts(value) {
      return numberParts(numberResolvedOf(this), numberArgument(value));
    },
    formatRange(start, end) {
      const r = numberResolvedOf(this);
      return joined(numberParts(r, numberArgument(start))) + "–" + joined(numberParts(r, numberArgument(end)));
    },
    resolvedOptions() {
      const r = numberResolvedOf(this);
      const out = { locale: "en-US", numberingSystem: "latn", style: r.style };
      if (r.currency !== undefined) {
        out.currency = r.currency;
        out.currencyDisplay = r.currencyDisplay;
        out.currencySign = r.currencySign;
      }
      out.minimumIntegerDigits = r.minimumIntegerDigits;
      if (r.minimumFractionDigits !== undefined) {
        out.minimumFractionDigits = r.minimumFractionDigits;
        out.maximumFractionDigits = r.maximumFractionDigits;
      }
      if (r.minimumSignificantDigits !== undefined) {
        out.minimumSignificantDigits = r.minimumSignificantDigits;
        out.maximumSignificantDigits = r.maximumSignificantDigits;
      }
      out.useGrouping = r.useGrouping;
      out.notation = r.notation;
      if (r.compactDisplay !== undefined) out.compactDisplay = r.compactDisplay;
      out.signDisplay = r.signDisplay;
      out.roundingMode = "halfExpand";
      return out;
    },
  });

  // ---- Intl.PluralRules and Intl.RelativeTimeFormat (English rules) ----

  const { attach: attachPlural, read: pluralOf } = slotOf("PluralRules");
  function PluralRules(locales, options) {
    if (new.target === undefined) throw new TypeError("Constructor Intl.PluralRules requires 'new'");
    const o = options === undefined ? { __proto__: null } : Object(options);
    const type = o.type === undefined ? "cardinal" : String(o.type);
    if (type !== "cardinal" && type !== "ordinal") {
      throw new RangeError("Value " + type + " out of range for Intl.PluralRules options property type");
    }
    // The digits a number is shown with decide ("1.0 items"), as NumberFormat would show it.
    const digits = resolveNumber(locales, o);
    attachPlural(this, { type, digits });
  }
  function englishPlural(r, n) {
    if (!Number.isFinite(n)) return "other";
    if (r.type === "ordinal") {
      if (n !== Math.floor(n)) return "other";
      const ten = Math.abs(n) % 10;
      const hundred = Math.abs(n) % 100;
      if (ten === 1 && hundred !== 11) return "one";
      if (ten === 2 && hundred !== 12) return "two";
      if (ten === 3 && hundred !== 13) return "few";
      return "other";
    }
    const shown = joined(numberParts(r.digits, Math.abs(n)));
    return shown === "1" ? "one" : "other";
  }
  definePrototype(PluralRules, "PluralRules", undefined, {
    select(value) {
      if (typeof value === "bigint") throw new TypeError("Cannot convert a BigInt value to a number");
      return englishPlural(pluralOf(this), Number(value));
    },
    resolvedOptions() {
      const r = pluralOf(this);
      return {
        locale: "en-US",
        type: r.type,
        minimumIntegerDigits: r.digits.minimumIntegerDigits,
        minimumFractionDigits: r.digits.minimumFractionDigits,
        maximumFractionDigits: r.digits.maximumFractionDigits,
        pluralCategories: r.type === "ordinal" ? ["few", "one", "two", "other"] : ["one", "other"],
      };
    },
  });

  // Each unit's words: long, short (one, more), narrow (written against the number).
  const UNITS = {
    __proto__: null,
    year: ["year", "yr.", "yr.", "y"], quarter: ["quarter", "qtr.", "qtrs.", "q"],
    month: ["month", "mo.", "mo.", "mo"], week: ["week", "wk.", "wk.", "w"],
    day: ["day", "day", "days", "d"], hour: ["hour", "hr.", "hr.", "h"],
    minute: ["minute", "min.", "min.", "m"], second: ["second", "sec.", "sec.", "s"],
  };
  // numeric "auto": the words for -1, 0 and 1, long and otherwise.
  const NEAR = {
    __proto__: null,
    year: [["last year", "this year", "next year"], ["last yr.", "this yr.", "next yr."]],
    quarter: [["last quarter", "this quarter", "next quarter"], ["last qtr.", "this qtr.", "next qtr."]],
    month: [["last month", "this month", "next month"], ["last mo.", "this mo.", "next mo."]],
    week: [["last week", "this week", "next week"], ["last wk.", "this wk.", "next wk."]],
    day: [["yesterday", "today", "tomorrow"], ["yesterday", "today", "tomorrow"]],
    hour: [[undefined, "this hour", undefined], [undefined, "this hour", undefined]],
    minute: [[undefined, "this minute", undefined], [undefined, "this minute", undefined]],
    second: [[undefined, "now", undefined], [undefined, "now", undefined]],
  };
  const { attach: attachRelative, read: relativeOf } = slotOf("RelativeTimeFormat");
  function RelativeTimeFormat(locales, options) {
    if (new.target === undefined) throw new TypeError("Constructor Intl.RelativeTimeFormat requires 'new'");
    if (locales !== undefined && typeof locales !== "string" && !ArrayIsArray(locales)) {
      throw new TypeError("Intl.RelativeTimeFormat: locales must be a string or an array of strings");
    }
    const o = options === undefined ? { __proto__: null } : Object(options);
    const style = o.style === undefined ? "long" : String(o.style);
    const numeric = o.numeric === undefined ? "always" : String(o.numeric);
    if (!["long", "short", "narrow"].includes(style)) {
      throw new RangeError("Value " + style + " out of range for Intl.RelativeTimeFormat options property style");
    }
    if (numeric !== "always" && numeric !== "auto") {
      throw new RangeError("Value " + numeric + " out of range for Intl.RelativeTimeFormat options property numeric");
    }
    attachRelative(this, { style, numeric, number: resolveNumber(undefined, undefined) });
  }
  function relativeParts(r, value, unit) {
    if (typeof value === "bigint") throw new TypeError("Cannot convert a BigInt value to a number");
    const n = Number(value);
    if (!Number.isFinite(n)) throw new RangeError("Intl.RelativeTimeFormat: the value must be a finite number");
    const name = String(unit).replace(/s$/, "");
    const forms = UNITS[name];
    if (forms === undefined) throw new RangeError("Invalid unit argument for format() '" + String(unit) + "'");
    const near = NEAR[name][r.style === "long" ? 0 : 1];
    if (r.numeric === "auto" && (n === -1 || n === 0 || n === 1) && near[n + 1] !== undefined) {
      return [{ type: "literal", value: near[n + 1] }];
    }
    const past = n < 0 || Object.is(n, -0);
    const number = numberParts(r.number, Math.abs(n));
    const one = joined(number) === "1";
    const word = r.style === "long" ? (one ? forms[0] : forms[0] + "s")
      : r.style === "short" ? " " + (one ? forms[1] : forms[2]) : forms[3];
    const unitText = r.style === "long" ? " " + word : word;
    const parts = [];
    if (!past) ArrayPrototypePush(parts, { type: "literal", value: "in " });
    for (let i = 0; i < number.length; i++) {
      ArrayPrototypePush(parts, { type: number[i].type, value: number[i].value, unit: name });
    }
    ArrayPrototypePush(parts, { type: "literal", value: past ? unitText + " ago" : unitText });
    return parts;
  }
  definePrototype(RelativeTimeFormat, "RelativeTimeFormat", undefined, {
    format(value, unit) {
      return joined(relativeParts(relativeOf(this), value, unit));
    },
    formatToParts(value, unit) {
      return relativeParts(relativeOf(this), value, unit);
    },
    resolvedOptions() {
      const r = relativeOf(this);
      return { locale: "en-US", style: r.style, numeric: r.numeric, numberingSystem: "latn" };
    },
  });

  const DEFAULT_NUMBER = resolveNumber(undefined, undefined);

  return {
    __proto__: null,
    DateTimeFormat,
    NumberFormat,
    PluralRules,
    RelativeTimeFormat,
    dateToLocale,
    // Number.prototype's and BigInt.prototype's toLocaleString, on the unwrapped value.
    numberToLocale: (value, locales, options) => joined(numberParts(
      locales === undefined && options === undefined ? DEFAULT_NUMBER : resolveNumber(locales, options),
      value,
    )),
  };
})

// Intl.DateTimeFormat and Date's toLocale*String, in English (en-US) for every
// locale. The engine facade has no ICU: its Intl is a stub whose
// DateTimeFormat reads a host function from the global object, which the
// bootstrap removes with every other non-standard global, so `new
// Intl.DateTimeFormat().format(d)` threw "not a function", and Date's
// toLocale*String ignored their options. This formats what programs ask for
// in en-US patterns (numeric, textual months and weekdays, 12/24-hour clocks,
// `dateStyle`/`timeStyle`, time zone names), in any IANA time zone through the
// facade's time-zone database (the host function, handed over per isolate by
// the bootstrap as `internal.intlHost.zone`). Without `timeZone` it is the
// process's local time, as Date's own getters see it.
"use strict";
((internal) => {
  const {
    ArrayIsArray,
    ArrayPrototypeJoin,
    ArrayPrototypePush,
    Date,
    DatePrototypeGetTime,
    ObjectDefineProperty,
    String,
  } = internal.primordials;
  const host = { __proto__: null, zone: undefined };
  internal.intlHost = host;

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
      throw new RangeError(`Value ${s} out of range for Intl.DateTimeFormat options property ${name}`);
    }
    return s;
  }

  // The canonical name of a time zone, or a RangeError naming the one that is not.
  function canonicalZone(name) {
    const zone = String(name);
    if (host.zone === undefined) throw new RangeError(`Invalid time zone specified: ${zone}`);
    try {
      return host.zone(0, zone).timeZone;
    } catch {
      throw new RangeError(`Invalid time zone specified: ${zone}`);
    }
  }

  // The wall-clock fields of instant `ms` in `zone` (undefined: the process's local time).
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
    if (long) return `GMT${sign}${pad(h, 2)}:${pad(m, 2)}`;
    return m === 0 ? `GMT${sign}${h}` : `GMT${sign}${h}:${pad(m, 2)}`;
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

  // ECMA-402's CreateDateTimeFormat, for en-US: `required` ("date", "time", "any") and
  // `defaults` ("date", "time", "all") as Date's toLocale*String pass them.
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
          throw new TypeError(`Can't set option ${FIELDS[i]} when dateStyle or timeStyle is used`);
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

  // The formatted parts of instant `ms` under resolved options `f`.
  function partsOf(f, ms) {
    const r = f.fields;
    const t = fieldsAt(ms, f.zone);
    const parts = [];
    const bc = t.year <= 0;
    const yearValue = bc ? 1 - t.year : t.year;
    const year = r.year === "2-digit" ? pad(yearValue % 100, 2) : yearValue;
    const era = r.era !== undefined || (bc && r.year !== undefined) ? (bc ? "BC" : "AD") : undefined;
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
        const long = f.dateStyle === "full" || f.dateStyle === "long";
        push(parts, "literal", long && f.timeStyle !== undefined ? " at " : ", ");
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
      if (r.second !== undefined) {
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
      if (parts.length > 0) push(parts, "literal", " ");
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

  const SLOT = Symbol("DateTimeFormat");
  const resolvedOf = (self) => {
    const f = self !== null && typeof self === "object" ? self[SLOT] : undefined;
    if (f === undefined) throw new TypeError("Method called on an object that is not an Intl.DateTimeFormat");
    return f;
  };

  function DateTimeFormat(locales, options) {
    const self = new.target === undefined ? Object.create(DateTimeFormat.prototype) : this;
    ObjectDefineProperty(self, SLOT, { value: resolve(locales, options, "any", "date") });
    return self;
  }
  const proto = DateTimeFormat.prototype;
  ObjectDefineProperty(proto, "format", {
    configurable: true,
    get() {
      const f = resolvedOf(this);
      return (date) => joined(partsOf(f, instant(date)));
    },
  });
  const methods = {
    formatToParts(date) {
      return partsOf(resolvedOf(this), instant(date));
    },
    formatRange(start, end) {
      const f = resolvedOf(this);
      return `${joined(partsOf(f, instant(start)))} – ${joined(partsOf(f, instant(end)))}`;
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
  };
  for (const name of ["formatToParts", "formatRange", "resolvedOptions"]) {
    ObjectDefineProperty(proto, name, { value: methods[name], writable: true, configurable: true });
  }
  ObjectDefineProperty(proto, Symbol.toStringTag, { value: "Intl.DateTimeFormat", configurable: true });
  ObjectDefineProperty(DateTimeFormat, "supportedLocalesOf", {
    value: function supportedLocalesOf(locales) {
      const list = locales === undefined ? [] : typeof locales === "string" ? [locales] : Array.from(locales);
      return list.filter((l) => /^en(-|$)/i.test(String(l)));
    },
    writable: true,
    configurable: true,
  });

  // Local time has no IANA name here: UTC when the process's offset is zero, else the offset.
  function localZone() {
    const minutes = -new Date().getTimezoneOffset();
    if (minutes === 0) return "UTC";
    const sign = minutes < 0 ? "-" : "+";
    return `${sign}${pad(Math.floor(Math.abs(minutes) / 60), 2)}:${pad(Math.abs(minutes) % 60, 2)}`;
  }

  ObjectDefineProperty(globalThis.Intl, "DateTimeFormat", {
    value: DateTimeFormat,
    writable: true,
    configurable: true,
  });

  const dateMethod = (name, required, defaults) => {
    ObjectDefineProperty(Date.prototype, name, {
      value: {
        [name](locales, options) {
          if (!(this instanceof Date)) throw new TypeError(`Date.prototype.${name} called on a non-Date`);
          const ms = DatePrototypeGetTime(this);
          if (ms !== ms) return "Invalid Date";
          return joined(partsOf(resolve(locales, options, required, defaults), ms));
        },
      }[name],
      writable: true,
      configurable: true,
    });
  };
  // Run by the bootstrap on every isolate: a restored context gets the engine's own
  // Date.prototype back from the snapshot, so these cannot be set here once.
  internal.installLocaleDates = () => {
    dateMethod("toLocaleString", "any", "all");
    dateMethod("toLocaleDateString", "date", "date");
    dateMethod("toLocaleTimeString", "time", "time");
  };
})(globalThis.__codemodeInternal);

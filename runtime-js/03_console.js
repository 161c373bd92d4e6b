// `console`: each call is formatted here (see 02_inspect.js) and handed to the
// host as one entry through `op_codemode_console`; the host keeps entries up to
// the console byte cap. Nothing is buffered in JS, so output written before a
// timeout or an out-of-memory stop is not lost. Lists filled here have a null
// prototype (see `NullArray` in 00_primordials.js).
"use strict";
((internal) => {
  const {
    ArrayIsArray,
    ArrayPrototypeJoin,
    ArrayPrototypePush,
    NullArray,
    NumberParseInt,
    ObjectFreeze,
    ObjectKeys,
    String,
    StringPrototypeIndexOf,
    StringPrototypePadEnd,
    StringPrototypeSlice,
    MathMax,
  } = internal.primordials;
  const { op_codemode_console } = internal.ops;
  const inspect = internal.inspect;

  const LEVEL = { __proto__: null, log: 0, info: 1, warn: 2, error: 3, debug: 4 };

  // printf-style directives in a leading string, as in Node: %s %d %i %f %j %o %O %c %%.
  function formatArgs(args) {
    // A lone string is printed as is, `%` included (Node: util.format('%% %s') is '%% %s').
    if (args.length === 1 && typeof args[0] === "string") return args[0];
    let out = "";
    let start = 0;
    if (args.length > 0 && typeof args[0] === "string") {
      const fmt = args[0];
      let used = 1;
      let text = "";
      let last = 0;
      // Jump from `%` to `%` (indexOf runs natively): walking the string a character at a
      // time through the primordial cost ~170 us per 1 KB line.
      for (let i = StringPrototypeIndexOf(fmt, "%"); i !== -1 && i < fmt.length - 1;
        i = StringPrototypeIndexOf(fmt, "%", i + 1)) {
        const d = fmt[i + 1];
        let rep = null;
        if (d === "%") rep = "%";
        else if (used < args.length) {
          const a = args[used];
          if (d === "s") rep = typeof a === "string" ? a : inspect(a, true);
          else if (d === "d" || d === "i") {
            rep = typeof a === "bigint" ? inspect(a) : typeof a === "number"
              ? String(d === "i" ? NumberParseInt(String(a)) : a)
              : "NaN";
          } else if (d === "f") rep = typeof a === "number" ? String(a) : "NaN";
          else if (d === "j" || d === "o" || d === "O") rep = inspect(a, true);
          else if (d === "c") rep = "";
          if (rep !== null && d !== "%") used++;
        }
        if (rep === null) continue;
        text += StringPrototypeSlice(fmt, last, i) + rep;
        last = i + 2;
        i++;
      }
      out = text + StringPrototypeSlice(fmt, last);
      start = used;
    }
    for (let i = start; i < args.length; i++) {
      const part = inspect(args[i]);
      out = i === 0 ? part : out + " " + part;
    }
    return out;
  }

  // The text's UTF-16 length sizes the host's buffer (one transcode instead of two).
  const emit = (level, text) => op_codemode_console(LEVEL[level], text, text.length);

  function table(data, columns) {
    if (data === null || typeof data !== "object") return emit("log", formatArgs([data]));
    const rowKeys = ObjectKeys(data);
    const header = NullArray();
    let hasValues = false;
    for (let r = 0; r < rowKeys.length; r++) {
      const row = data[rowKeys[r]];
      if (row !== null && typeof row === "object") {
        const keys = ObjectKeys(row);
        for (let k = 0; k < keys.length; k++) {
          let known = false;
          for (let h = 0; h < header.length; h++) if (header[h] === keys[k]) known = true;
          if (!known) ArrayPrototypePush(header, keys[k]);
        }
      } else hasValues = true;
    }
    const cols = ArrayIsArray(columns) ? columns : header;
    const headings = NullArray();
    ArrayPrototypePush(headings, "(index)");
    for (let c = 0; c < cols.length; c++) ArrayPrototypePush(headings, String(cols[c]));
    if (hasValues) ArrayPrototypePush(headings, "Values");
    const rows = NullArray();
    for (let r = 0; r < rowKeys.length; r++) {
      const row = data[rowKeys[r]];
      const cells = NullArray();
      ArrayPrototypePush(cells, rowKeys[r]);
      const isObject = row !== null && typeof row === "object";
      for (let c = 0; c < cols.length; c++) {
        const has = isObject && cols[c] in row;
        ArrayPrototypePush(cells, has ? inspect(row[cols[c]], true) : "");
      }
      if (hasValues) ArrayPrototypePush(cells, isObject ? "" : inspect(row, true));
      ArrayPrototypePush(rows, cells);
    }
    const widths = NullArray();
    for (let c = 0; c < headings.length; c++) {
      let w = headings[c].length;
      for (let r = 0; r < rows.length; r++) w = MathMax(w, rows[r][c].length);
      ArrayPrototypePush(widths, w + 2);
    }
    const line = (l, m, r) => {
      const segs = NullArray();
      for (let c = 0; c < widths.length; c++) ArrayPrototypePush(segs, StringPrototypePadEnd("", widths[c], "─"));
      return l + ArrayPrototypeJoin(segs, m) + r;
    };
    const render = (cells) => {
      const segs = NullArray();
      for (let c = 0; c < widths.length; c++) ArrayPrototypePush(segs, StringPrototypePadEnd(" " + cells[c], widths[c], " "));
      return "│" + ArrayPrototypeJoin(segs, "│") + "│";
    };
    const out = NullArray();
    ArrayPrototypePush(out, line("┌", "┬", "┐"));
    ArrayPrototypePush(out, render(headings));
    ArrayPrototypePush(out, line("├", "┼", "┤"));
    for (let r = 0; r < rows.length; r++) ArrayPrototypePush(out, render(rows[r]));
    ArrayPrototypePush(out, line("└", "┴", "┘"));
    emit("log", ArrayPrototypeJoin(out, "\n"));
  }

  const console = {
    log: (...args) => emit("log", formatArgs(args)),
    info: (...args) => emit("info", formatArgs(args)),
    warn: (...args) => emit("warn", formatArgs(args)),
    error: (...args) => emit("error", formatArgs(args)),
    debug: (...args) => emit("debug", formatArgs(args)),
    dir: (value) => emit("log", inspect(value, true)),
    table: (data, columns) => {
      try {
        table(data, columns);
      } catch {
        emit("log", formatArgs([data]));
      }
    },
    assert: (condition, ...args) => {
      if (condition) return;
      const rest = formatArgs(args);
      emit("error", rest === "" ? "Assertion failed" : "Assertion failed: " + rest);
    },
  };
  internal.console = ObjectFreeze(console);
})(globalThis.__codemodeInternal);

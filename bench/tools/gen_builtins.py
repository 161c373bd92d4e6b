#!/usr/bin/env python3
"""Generate the built-in tool scenarios over the `hookline` fixture repository
(bench/tools/repo_hookline.py). `expected` was produced by running each program with
`codemode run --root` over the files and checked by hand; check.mjs re-checks it.

    python3 bench/tools/gen_builtins.py bench/tools/builtins_expected.json && node bench/tools/check.mjs
"""
from common import prog, write
from repo_hookline import FILES

REPO = {"builtins": {"files": FILES}}
NOTE = "Built-ins over `hookline`, a 32-file Rust webhook delivery service"

SCENARIOS = [
    (1, {
        "name": "repo-todo-inventory",
        "description": f"{NOTE}: grep for TODO/FIXME, then read every file with a hit to name the enclosing function; direct mode reads ~10 whole files into the context.",
        "task": "In this Rust repository, list every TODO and FIXME comment in the .rs files, grouped by file, with the line number, the note itself and the name of the function it sits in. Also give the total count.",
        "tools": [REPO],
        "program": prog(r"""
            const { matches } = await tools.grep({ pattern: "\\b(TODO|FIXME)\\b", glob: "*.rs" });
            matches.sort((a, b) => a.path.localeCompare(b.path) || a.line - b.line);
            const paths = [...new Set(matches.map((m) => m.path))];
            const files = await Promise.all(paths.map((path) => tools.read_file({ path })));
            const linesOf = new Map(files.map((f) => [f.path, f.content.split("\n")]));
            const fnRe = /^\s*(?:pub(?:\([^)]*\))?\s+)?(?:async\s+)?fn\s+(\w+)/;
            const enclosing = (path, line) => {
              const lines = linesOf.get(path);
              for (let k = line - 1; k >= 0; k--) {
                const m = fnRe.exec(lines[k]);
                if (m) return m[1];
              }
              return null;
            };
            const by_file = {};
            for (const m of matches) {
              const [, kind, note] = /(TODO|FIXME):?\s*(.*)$/.exec(m.text);
              (by_file[m.path] ??= []).push({ line: m.line, kind, note, function: enclosing(m.path, m.line) });
            }
            return { total: matches.length, by_file };
        """),
        "expected": None,
        "answer_contains": ["12", "todo_pool", "src/scheduler.rs", "require_api_key"],
    }),
    (2, {
        "name": "repo-config-consumers",
        "description": f"{NOTE}: find the modules importing crate::config, read each in full and extract the config fields it reads; the answer is a short table, the reading is ~20 KB.",
        "task": "Which modules of this Rust crate import `crate::config` (a `use crate::config::...` line)? For each, give its path, its line count and the sorted list of Config fields it reads (accesses like `config.field` or `cfg.field`). Also give the total line count of those modules.",
        "tools": [REPO],
        "program": prog(r"""
            const { matches } = await tools.grep({ pattern: "^use crate::config::", glob: "*.rs" });
            const paths = [...new Set(matches.map((m) => m.path))].sort();
            const files = await Promise.all(paths.map((path) => tools.read_file({ path })));
            const modules = files.map((f) => {
              const fields = new Set([...f.content.matchAll(/\b(?:config|cfg)\.(\w+)/g)].map((m) => m[1]));
              return { path: f.path, lines: f.total_lines, fields: [...fields].sort() };
            });
            return { modules, total_lines: modules.reduce((n, m) => n + m.lines, 0) };
        """),
        "expected": None,
        "answer_contains": ["337", "src/scheduler.rs", "request_timeout_ms"],
    }),
    (3, {
        "name": "repo-backoff-callers",
        "description": f"{NOTE}: locate the backoff function among look-alikes, report its signature and doc, and every call site with its enclosing function; two greps and four file reads.",
        "task": "Find the function that computes the retry backoff delay in this Rust repository. Report its file, line, full signature and doc comment, and list every place it is called (file, line and the enclosing function), tests included.",
        "tools": [REPO],
        "program": prog(r"""
            const defs = await tools.grep({ pattern: "fn \\w*backoff\\w*\\(", glob: "*.rs", context: 3 });
            const def = defs.matches.find((m) => m.text.includes("-> Duration"));
            const name = /fn (\w+)/.exec(def.text)[1];
            const doc = def.before.filter((l) => l.trim().startsWith("///")).map((l) => l.trim().slice(3).trim()).join(" ");
            const uses = await tools.grep({ pattern: `\\b${name}\\(`, glob: "*.rs" });
            const calls = uses.matches.filter((m) => !m.text.includes(`fn ${name}`));
            const paths = [...new Set(calls.map((m) => m.path))];
            const files = await Promise.all(paths.map((path) => tools.read_file({ path })));
            const linesOf = new Map(files.map((f) => [f.path, f.content.split("\n")]));
            const fnRe = /^\s*(?:pub(?:\([^)]*\))?\s+)?(?:async\s+)?fn\s+(\w+)/;
            const enclosing = (path, line) => {
              const lines = linesOf.get(path);
              for (let k = line - 1; k >= 0; k--) {
                const m = fnRe.exec(lines[k]);
                if (m) return m[1];
              }
              return null;
            };
            const callers = calls
              .map((m) => ({ path: m.path, line: m.line, function: enclosing(m.path, m.line) }))
              .sort((a, b) => a.path.localeCompare(b.path) || a.line - b.line);
            return {
              definition: { path: def.path, line: def.line, signature: def.text.trim().replace(/\s*\{$/, ""), doc },
              callers,
            };
        """),
        "expected": None,
        "answer_contains": ["src/retry.rs", "backoff_delay", "worker_loop", "delays_grow_until_the_cap"],
    }),
]

if __name__ == "__main__":
    import json, sys
    expected = json.load(open(sys.argv[1])) if len(sys.argv) > 1 else {}
    for num, sc in SCENARIOS:
        sc["expected"] = expected.get(sc["name"])
        print(write(num, sc))

#!/usr/bin/env node
// Check bench scenarios without the runner: node bench/tools/check.mjs [FILE.json ...]
// (default: every bench/scenarios/*.json).
//
// For each scenario: the JSON parses and has the required keys; tool names are valid OpenAI
// function names and unique after sandbox renaming; fixture results validate against their
// outputSchema (via python3 jsonschema, when available); the program (and program_discovery)
// return exactly `expected` when run against a shim answering each call from the fixture by
// JSON-equal arguments; direct_turns calls all have fixtures; answer_contains strings occur in
// the answer. Scenarios with built-ins run through the real binary (CODEMODE, default
// /work/main/target/debug/codemode) over a temp dir holding the files.
//
// It also prints a rough token estimate (chars / 4) of direct vs code mode, so the suite's
// balance can be eyeballed before the real runner measures it.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { execFileSync } from "node:child_process";

const CODEMODE = process.env.CODEMODE || "/work/main/target/debug/codemode";
const here = path.dirname(new URL(import.meta.url).pathname);
const scenDir = path.resolve(here, "../scenarios");
const files = process.argv.slice(2).length
  ? process.argv.slice(2)
  : fs.readdirSync(scenDir).filter((f) => f.endsWith(".json")).sort().map((f) => path.join(scenDir, f));

const lines = (v) => (Array.isArray(v) ? v.join("\n") : v);
const canon = (v) =>
  Array.isArray(v) ? v.map(canon)
  : v && typeof v === "object" ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, canon(v[k])]))
  : v;
const jeq = (a, b) => JSON.stringify(canon(a)) === JSON.stringify(canon(b));
const sandboxName = (n) => (/^[A-Za-z_$][A-Za-z0-9_$]*$/.test(n) ? n : n.replace(/[^A-Za-z0-9_$]+/g, "_"));
const tok = (s) => Math.ceil((typeof s === "string" ? s : JSON.stringify(s)).length / 4);

// catalog.search as src/harness/discovery.rs ranks it.
function catalogSearch(toolList, query, limit = 10) {
  const words = query.split(/[^\p{L}\p{N}]+/u).filter(Boolean).map((w) => w.toLowerCase());
  const scored = toolList
    .map((t) => {
      const p = t.path.toLowerCase(), d = (t.description || "").toLowerCase();
      const score = words.reduce((s, w) => s + 3 * (p.includes(w) ? 1 : 0) + (d.includes(w) ? 1 : 0), 0);
      return [score, t];
    })
    .filter(([s]) => words.length === 0 || s > 0);
  scored.sort((a, b) => b[0] - a[0] || (a[1].path < b[1].path ? -1 : a[1].path > b[1].path ? 1 : 0));
  return scored.slice(0, Math.min(limit, 100)).map(([, t]) => ({ path: t.path, description: (t.description || "").split("\n")[0] }));
}

async function runShim(sc, code, errs) {
  const fixtureTools = sc.tools.filter((t) => t.name);
  const byName = new Map(fixtureTools.map((t) => [sandboxName(t.name), t]));
  const catalogList = fixtureTools.map((t) => ({ path: sandboxName(t.name), description: t.description || "" }));
  const calls = []; // {tool, args, wave, result}
  let maxDoneWave = 0;
  const call = (name, args) => {
    const wave = maxDoneWave + 1;
    const rec = { tool: name, args, wave };
    calls.push(rec);
    return Promise.resolve().then(() => {
      let out;
      if (name === "catalog.search") out = { tools: catalogSearch(catalogList, args.query, args.limit) };
      else if (name === "catalog.describe") {
        const t = byName.get(args.path);
        if (!t) throw Object.assign(new Error(`no visible tool has the path ${args.path}`), { code: "TOOL_ERROR" });
        out = { path: args.path, description: t.description, typescript: JSON.stringify(t.inputSchema) };
      } else {
        const t = byName.get(name);
        if (!t) throw Object.assign(new Error(`unknown tool ${name}`), { code: "UNKNOWN_TOOL" });
        const fx = t.fixture || {};
        const hit = (fx.responses || []).find((r) => jeq(r.args, args));
        if (hit && "error" in hit) throw Object.assign(new Error(hit.error), { code: "TOOL_ERROR" });
        if (hit) out = hit.result;
        else if ("default" in fx) out = fx.default;
        else {
          errs.push(`no fixture for ${name}(${JSON.stringify(args)})`);
          throw Object.assign(new Error(`no fixture for ${name}`), { code: "TOOL_ERROR" });
        }
      }
      rec.result = out;
      maxDoneWave = Math.max(maxDoneWave, wave);
      return structuredClone(out);
    });
  };
  const catalog = { search: (a) => call("catalog.search", a), describe: (a) => call("catalog.describe", a) };
  const tools = new Proxy({}, { get: (_, k) => (k === "catalog" ? catalog : (a) => call(String(k), a)) });
  const logs = [];
  const con = { log: (...a) => logs.push(a.map((x) => (typeof x === "string" ? x : JSON.stringify(x))).join(" ")) };
  const AsyncFunction = Object.getPrototypeOf(async function () {}).constructor;
  const value = await new AsyncFunction("tools", "console", code)(tools, con);
  return { value, calls, logs };
}

function runBuiltins(sc, code) {
  const b = sc.tools.find((t) => t.builtins).builtins;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "scen-"));
  for (const [rel, content] of Object.entries(b.files || {})) {
    fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    fs.writeFileSync(path.join(dir, rel), content);
  }
  const prog = path.join(dir, "..", path.basename(dir) + ".ts");
  fs.writeFileSync(prog, code);
  const out = JSON.parse(execFileSync(CODEMODE, ["run", prog, "--root", dir, "--json"], { encoding: "utf8" }));
  fs.rmSync(dir, { recursive: true });
  fs.rmSync(prog);
  if (out.status !== "ok") throw new Error(`codemode run: ${JSON.stringify(out).slice(0, 2000)}`);
  return { value: out.value, calls: null, logs: out.logs.map((l) => l.text), files: b.files };
}

let total = { direct: 0, code: 0 };
let failed = 0;
for (const file of files) {
  const errs = [];
  let sc;
  try { sc = JSON.parse(fs.readFileSync(file, "utf8")); } catch (e) { console.log(`FAIL ${file}: ${e.message}`); failed++; continue; }
  for (const k of ["name", "description", "task", "tools", "program", "expected"]) if (!(k in sc)) errs.push(`missing ${k}`);
  if (`${sc.name}.json` !== path.basename(file).replace(/^\d+-/, "")) errs.push(`name ${sc.name} does not match file`);
  const seen = new Set();
  for (const t of sc.tools.filter((t) => t.name)) {
    if (!/^[a-zA-Z0-9_-]{1,64}$/.test(t.name)) errs.push(`bad tool name ${t.name}`);
    const s = sandboxName(t.name);
    if (seen.has(s)) errs.push(`duplicate sandbox name ${s}`);
    seen.add(s);
  }
  const named = sc.tools.filter((t) => t.name);
  if (named.length) {
    const tf = path.join(os.tmpdir(), `scen-tools-${process.pid}.json`);
    fs.writeFileSync(tf, JSON.stringify({ tools: named.map(({ fixture, ...t }) => t) }));
    try { execFileSync(CODEMODE, ["sdk", "--tools", tf], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }); }
    catch (e) { errs.push(`codemode sdk --tools refused the tools: ${e.stderr}`); }
    fs.rmSync(tf);
  }
  if (sc.tools.filter((t) => t.builtins).length > 1) errs.push("more than one builtins entry");
  const hasBuiltins = sc.tools.some((t) => t.builtins);
  const runs = [["program", lines(sc.program)]];
  if (sc.program_discovery) runs.push(["program_discovery", lines(sc.program_discovery)]);
  let main;
  for (const [label, code] of runs) {
    try {
      const r = hasBuiltins ? runBuiltins(sc, code) : await runShim(sc, code, errs);
      if (!jeq(r.value, sc.expected)) errs.push(`${label} returned ${JSON.stringify(r.value)}\n   expected ${JSON.stringify(sc.expected)}`);
      if (label === "program") main = r;
    } catch (e) { errs.push(`${label} threw: ${e.stack || e.message}`); }
  }
  // direct_turns fixtures exist
  if (sc.direct_turns) {
    for (const turn of sc.direct_turns) for (const c of turn) {
      const t = sc.tools.find((t) => t.name && sandboxName(t.name) === sandboxName(c.tool));
      if (!t) { errs.push(`direct_turns: unknown tool ${c.tool}`); continue; }
      const fx = t.fixture || {};
      if (!(fx.responses || []).some((r) => jeq(r.args, c.args)) && !("default" in fx)) errs.push(`direct_turns: no fixture for ${c.tool}(${JSON.stringify(c.args)})`);
    }
  }
  const answer = sc.answer !== undefined ? lines(sc.answer) : JSON.stringify(sc.expected);
  for (const s of sc.answer_contains || []) if (!answer.includes(s)) errs.push(`answer lacks ${JSON.stringify(s)}`);
  // rough token estimate
  let est = "";
  if (main && main.calls) {
    const defs = tok(sc.tools.filter((t) => t.name).map(({ fixture, ...t }) => t));
    const task = tok(lines(sc.task));
    let turns;
    if (sc.direct_turns) {
      turns = sc.direct_turns.map((turn) => turn.map((c) => {
        const t = sc.tools.find((t) => t.name && sandboxName(t.name) === sandboxName(c.tool));
        const fx = t.fixture || {}; const hit = (fx.responses || []).find((r) => jeq(r.args, c.args));
        return { args: c.args, result: hit ? hit.result ?? hit.error : fx.default };
      }));
    } else {
      turns = [];
      for (const c of main.calls.filter((c) => !c.tool.startsWith("catalog."))) (turns[c.wave - 1] ||= []).push(c);
      turns = turns.filter(Boolean);
    }
    let ctx = task, direct = 0;
    for (const turn of turns) {
      direct += defs + ctx;
      ctx += turn.reduce((s, c) => s + 20 + tok(c.args) + tok(c.result ?? ""), 0);
    }
    direct += defs + ctx;
    const out = tok(JSON.stringify(main.value)) + main.logs.reduce((s, l) => s + tok(l), 0);
    const code = 2 * (defs + task) + tok(lines(sc.program)) + out;
    total.direct += direct; total.code += code;
    est = ` ~direct ${direct} tok, ~code ${code} tok, ${turns.length} turns, ${main.calls.length} calls`;
  } else if (main) {
    const sz = Object.values(main.files).reduce((s, c) => s + c.length, 0);
    est = ` (built-ins; ${Object.keys(main.files).length} files, ${sz} bytes)`;
  }
  // EMIT_TURNS=DIR: write a copy of the scenario whose direct_turns are the program's waves as
  // this shim derives them (to compare with the runner's own derivation).
  if (process.env.EMIT_TURNS && main && main.calls && !sc.direct_turns) {
    const waves = [];
    for (const c of main.calls.filter((c) => !c.tool.startsWith("catalog."))) (waves[c.wave - 1] ||= []).push({ tool: c.tool, args: c.args });
    fs.mkdirSync(process.env.EMIT_TURNS, { recursive: true });
    fs.writeFileSync(path.join(process.env.EMIT_TURNS, path.basename(file)), JSON.stringify({ ...sc, direct_turns: waves.filter(Boolean) }));
  } else if (process.env.EMIT_TURNS) fs.copyFileSync(file, path.join(process.env.EMIT_TURNS, path.basename(file)));
  const size = fs.statSync(file).size;
  if (size > 650_000) errs.push(`file is ${size} bytes`);
  if (errs.length) { failed++; console.log(`FAIL ${path.basename(file)}\n - ${errs.join("\n - ")}`); }
  else console.log(`ok   ${path.basename(file)} (${(size / 1024).toFixed(0)} KB)${est}`);
}

// outputSchema validation through python3 jsonschema, when present.
try {
  execFileSync("python3", [path.join(here, "check_schemas.py"), ...files], { stdio: "inherit" });
} catch (e) { failed++; }
console.log(`\nfixture scenarios, rough estimate: direct ${total.direct} tok, code ${total.code} tok (${(100 * (1 - total.code / total.direct)).toFixed(0)}% fewer)`);
process.exit(failed ? 1 : 0);

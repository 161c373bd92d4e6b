// Issue 14's four workloads (W1-W4, plus W1 cold) run on *peer* JavaScript sandboxes, so that
// codemode (benches/workloads.rs, `CODEMODE_WORKLOADS_RUNS=3`) can be compared with them on the
// same machine in the same run. One peer per node process, so that the peak RSS printed last is
// that peer's own (it includes node itself, ~40-50 MB).
//
//   cd benches/peers && npm install      # node 20 (isolated-vm 5 builds a native addon on install)
//   node js_workloads.mjs isolated-vm|quickjs-emscripten|node-vm|tanstack
//   PEERS_RUNS=5 node js_workloads.mjs isolated-vm    # timed runs per workload (default 3)
//
// stdout: one JSON object per line and nothing else (diagnostics go to stderr):
//   {"runtime", "workload": "w1"|"w1_cold"|"w2"|"w3"|"w4", "runs_ms", "median_ms", "note"}
//   (w2 adds "per_call_us"), then {"runtime", "peak_rss_mb"}.
//
// Method, the same for every peer: each workload gets 1 untimed warm-up run, then N timed runs.
// Every run uses a fresh sandbox. For w1..w4 the sandbox (isolate/context/runtime with the
// `tools` bridge installed) is built before the timer starts, like codemode's pool of pre-built
// isolates; the timer covers compiling and running the program and getting its result back in
// the host as plain data. w1_cold also times building the sandbox. Disposal is never timed.
// A program is the body of an async function; `tools.<name>(args)` calls the host tool
// `<name>`, each call a real round trip into the host, awaited asynchronously in the sandbox.

import { createRequire } from 'node:module'
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import vm from 'node:vm'

const HERE = dirname(fileURLToPath(import.meta.url))
const require = createRequire(import.meta.url)

// ---- the workloads, exactly as issue 14 (and benches/workloads.rs) define them ----

const W1 = 'return 1 + 1'
const W2 = 'let n = 0; for (let i = 0; i < 1000; i++) { const r = await tools.echo({ x: i }); if (r === i) n++ } return n'
const W3 = 'const r = await Promise.all(Array.from({ length: 100 }, (_, i) => tools.sleep10({ x: i }))); return r.length'
const W4 = 'const rs = await tools.get_records({}); return rs.sort((a, b) => b.score - a.score).slice(0, 5)'

const records = () => {
  const rs = []
  for (let id = 0; id < 10000; id++) rs.push({ id, name: `record ${id}`, score: (id * 7919) % 10007 })
  return rs
}
const W4_EXPECTED = records().sort((a, b) => b.score - a.score).slice(0, 5).map((r) => r.id)

// Host tools. `sleep10` counts how many of its calls are in flight at once, to check that the
// 100 calls of W3 really run concurrently on the host.
let inFlight = 0
let peakInFlight = 0
const HOST_TOOLS = {
  echo: (args) => args.x,
  sleep10: (args) => {
    peakInFlight = Math.max(peakInFlight, ++inFlight)
    return new Promise((resolve) => setTimeout(() => { inFlight--; resolve(args.x) }, 10))
  },
  get_records: () => records(),
}
const TOOL_NAMES = Object.keys(HOST_TOOLS)
const callHost = async (name, args) => HOST_TOOLS[name](args)

// Script run in each sandbox when it is built: `tools` as an object of async functions, each
// calling the peer's bridge `call(name, args)` (JS source) which returns a promise of the result.
const toolsPrelude = (call) =>
  `(() => { const call = ${call}; globalThis.tools = { ${TOOL_NAMES.map((n) => `${n}: (args) => call(${JSON.stringify(n)}, args)`).join(', ')} } })()`
const wrap = (program) => `(async () => {\n${program}\n})()`

function pkgVersion(name) {
  for (let dir = HERE; ; dir = dirname(dir)) {
    const file = join(dir, 'node_modules', name, 'package.json')
    if (existsSync(file)) return JSON.parse(readFileSync(file, 'utf8')).version
    if (dirname(dir) === dir) throw new Error(`${name} is not installed (run npm install in ${HERE})`)
  }
}

// ---- the peers: build(), run(sandbox, program) -> plain result, dispose(sandbox) ----

const PEERS = {
  async 'isolated-vm'() {
    const ivm = require('isolated-vm')
    // `Reference.apply` with `result: { promise: true }`: the call returns a promise inside the
    // isolate at once and the isolate keeps running; the host function runs on node's event
    // loop and its (awaited) result is copied back (structured clone) to resolve that promise.
    // (`applySyncPromise`, which TanStack uses, blocks the isolate per call: ~20% faster for W2
    // but it serializes W3's calls. An async `ivm.Callback` cannot return a host promise.)
    const call = `(name, args) => __host.apply(undefined, [name, args], { arguments: { copy: true }, result: { promise: true, copy: true } })`
    return {
      runtime: `isolated-vm ${pkgVersion('isolated-vm')}`,
      note: 'ivm.Reference.apply(..., {arguments: {copy: true}, result: {promise: true, copy: true}}): async in the isolate, host fn on the node event loop, values structured-cloned both ways; program via context.eval({promise: true, copy: true})',
      build() {
        const isolate = new ivm.Isolate({ memoryLimit: 128 })
        const context = isolate.createContextSync()
        context.global.setSync('__host', new ivm.Reference(callHost))
        context.evalSync(toolsPrelude(call))
        return { isolate, context }
      },
      run: ({ context }, program) => context.eval(wrap(program), { promise: true, copy: true }),
      dispose({ isolate, context }) {
        context.release()
        isolate.dispose()
      },
    }
  },

  async 'quickjs-emscripten'() {
    const { getQuickJS } = require('quickjs-emscripten')
    const QuickJS = await getQuickJS() // the WASM module (release, sync build): once per process
    // Each tool call is a host function returning a `context.newPromise()` handle, resolved when
    // the host's promise settles, then `runtime.executePendingJobs()` resumes the program. Values
    // cross as JSON strings (one string copy into/out of WASM memory; the fastest way to move
    // 10,000 records in, far faster than building them handle by handle).
    const call = `async (name, args) => JSON.parse(await __host(name, JSON.stringify(args)))`
    const drain = (runtime) => {
      const r = runtime.executePendingJobs()
      if (r.error) {
        const e = r.error.context.dump(r.error)
        r.error.dispose()
        throw new Error(`pending job failed: ${JSON.stringify(e)}`)
      }
    }
    return {
      runtime: `quickjs-emscripten ${pkgVersion('quickjs-emscripten')}`,
      note: 'host fn returns context.newPromise(), resolved from the host promise then runtime.executePendingJobs(); args/results cross as JSON strings; release-sync WASM build (the asyncify build suspends the whole VM per call, which would serialize W3)',
      build() {
        const runtime = QuickJS.newRuntime()
        runtime.setMemoryLimit(128 * 1024 * 1024)
        const ctx = runtime.newContext()
        const host = ctx.newFunction('__host', (nameH, argsH) => {
          const name = ctx.getString(nameH)
          const args = JSON.parse(ctx.getString(argsH))
          const deferred = ctx.newPromise()
          callHost(name, args).then((value) => {
            if (!ctx.alive) return
            const h = ctx.newString(JSON.stringify(value))
            deferred.resolve(h)
            h.dispose()
            drain(runtime)
          })
          return deferred.handle // the library dups it for the VM and frees ours
        })
        ctx.setProp(ctx.global, '__host', host)
        host.dispose()
        ctx.unwrapResult(ctx.evalCode(toolsPrelude(call))).dispose()
        return { runtime, ctx }
      },
      async run({ runtime, ctx }, program) {
        const promise = ctx.unwrapResult(ctx.evalCode(wrap(program)))
        const settled = ctx.resolvePromise(promise)
        promise.dispose()
        drain(runtime)
        const value = ctx.unwrapResult(await settled)
        const result = ctx.dump(value) // QuickJS-side JSON serialization, parsed in the host
        value.dispose()
        return result
      },
      dispose({ runtime, ctx }) {
        ctx.dispose()
        runtime.dispose()
      },
    }
  },

  async 'node-vm'() {
    // Not a security boundary: same V8 isolate and heap, another realm. Host functions are called
    // directly and values are shared by reference (nothing is copied): the floor of the others.
    const call = `async (name, args) => __host(name, args)`
    return {
      runtime: `node:vm (node ${process.version})`,
      note: 'host fn placed on the context global, called directly from an async function of the sandbox realm; objects shared by reference, no copying (not a security boundary)',
      build() {
        const context = vm.createContext({ __host: callHost })
        vm.runInContext(toolsPrelude(call), context)
        return context
      },
      run: (context, program) => new vm.Script(wrap(program)).runInContext(context),
      dispose() {},
    }
  },

  async tanstack() {
    // TanStack code mode's own pipeline, as its `execute_typescript` tool runs a program
    // (createCodeModeTool): tools made with @tanstack/ai's toolDefinition().server(), turned into
    // `external_<name>` bindings (toolsToBindings + createEventAwareBindings), the program
    // stripped of TypeScript by esbuild (stripTypeScript), then run by the isolate driver in a
    // context from driver.createContext(). Only the context creation moves before the timer
    // (TanStack itself has no pool and creates one per execution: that is w1_cold).
    // Its other driver, @tanstack/ai-isolate-quickjs 0.1.30, is not used: it runs on the asyncify
    // build, where a tool call made after the program's first `await` (from executePendingJobs)
    // aborts the process ("RuntimeError: table index is out of bounds") by the third sequential
    // call, so W2 cannot run; and it instantiates a new WASM module per context (~100-300 ms).
    const { toolsToBindings, createEventAwareBindings, stripTypeScript } = await import('@tanstack/ai-code-mode')
    const { createNodeIsolateDriver } = await import('@tanstack/ai-isolate-node')
    const { toolDefinition } = await import('@tanstack/ai')
    const { z } = await import('zod')
    const input = { echo: z.object({ x: z.number() }), sleep10: z.object({ x: z.number() }), get_records: z.object({}) }
    const tools = TOOL_NAMES.map((name) =>
      toolDefinition({ name, description: name, inputSchema: input[name] }).server(async (args) => HOST_TOOLS[name](args)),
    )
    const bindings = createEventAwareBindings(toolsToBindings(tools, 'external_'), () => {})
    const driver = createNodeIsolateDriver()
    // TanStack exposes tools as global `external_<name>` functions, not a `tools` object.
    const prelude = `const tools = { ${TOOL_NAMES.map((n) => `${n}: external_${n}`).join(', ')} };\n`
    return {
      runtime: `TanStack code mode ${pkgVersion('@tanstack/ai-code-mode')} (ai-isolate-node ${pkgVersion('@tanstack/ai-isolate-node')}, isolated-vm ${pkgVersion('isolated-vm')})`,
      note: "TanStack's own bridge: each external_* call is ivm Reference.applySyncPromise with JSON strings (blocks the isolate until the host promise settles, so concurrent calls are serialized); program stripped of TS by esbuild, result JSON-stringified out; program prefixed with `const tools = {echo: external_echo, ...}`; default limits (128 MB, 30 s); isolated-vm overridden to 5.0.4 (the driver asks ^6, which needs node >= 22); peak RSS leaves out esbuild's service process (~14 MB)",
      build: () => driver.createContext({ bindings, timeout: 30000, memoryLimit: 128 }),
      async run(context, program) {
        const js = await stripTypeScript(prelude + program)
        const r = await context.execute(js)
        if (!r.success) throw new Error(`${r.error?.name}: ${r.error?.message}`)
        return r.value
      },
      dispose: (context) => context.dispose(),
    }
  },
}

// ---- the runner ----

const WORKLOADS = [
  { name: 'w1', program: W1, check: (v) => v === 2 },
  { name: 'w1_cold', program: W1, cold: true, check: (v) => v === 2 },
  { name: 'w2', program: W2, check: (v) => v === 1000 },
  { name: 'w3', program: W3, check: (v) => v === 100 },
  { name: 'w4', program: W4, check: (v) => Array.isArray(v) && JSON.stringify(v.map((r) => r.id)) === JSON.stringify(W4_EXPECTED) },
]

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  const m = s.length >> 1
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2
}
const round3 = (x) => Math.round(x * 1000) / 1000

async function runOnce(peer, workload) {
  let sandbox = workload.cold ? undefined : await peer.build()
  peakInFlight = 0
  const start = process.hrtime.bigint()
  if (workload.cold) sandbox = await peer.build()
  const value = await peer.run(sandbox, workload.program)
  const ms = Number(process.hrtime.bigint() - start) / 1e6
  await peer.dispose(sandbox)
  if (!workload.check(value)) throw new Error(`${workload.name}: wrong result ${JSON.stringify(value)}`)
  return ms
}

async function main() {
  const name = process.argv[2]
  if (!PEERS[name]) {
    console.error(`usage: node js_workloads.mjs ${Object.keys(PEERS).join('|')}`)
    process.exit(2)
  }
  const runs = Number(process.env.PEERS_RUNS ?? 3)
  if (!(Number.isInteger(runs) && runs > 0)) throw new Error(`PEERS_RUNS must be a positive integer, not ${process.env.PEERS_RUNS}`)
  const peer = await PEERS[name]()
  for (const workload of WORKLOADS) {
    await runOnce(peer, workload) // warm-up, untimed
    const times = []
    let peak = Infinity
    for (let i = 0; i < runs; i++) {
      times.push(await runOnce(peer, workload))
      peak = Math.min(peak, peakInFlight)
    }
    const med = median(times)
    let note = peer.note
    if (workload.name === 'w3') note += `; host saw ${peak} of the 100 sleep10 calls in flight at once (lowest peak over the timed runs)`
    const line = { runtime: peer.runtime, workload: workload.name, runs_ms: times.map(round3), median_ms: round3(med) }
    if (workload.name === 'w2') line.per_call_us = round3((med * 1000) / 1000)
    line.note = note
    console.log(JSON.stringify(line))
    console.error(`${name} ${workload.name}: median ${med.toFixed(3)} ms of ${times.map((t) => t.toFixed(3)).join(', ')}`)
  }
  const peakRssMb = Math.round((process.resourceUsage().maxRSS / 1024) * 10) / 10
  console.log(JSON.stringify({ runtime: peer.runtime, peak_rss_mb: peakRssMb }))
}

main().catch((e) => {
  console.error(e?.stack ?? e)
  process.exit(1)
})

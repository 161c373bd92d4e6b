//! Hostile programs through the real binary, a corpus by category: CPU, memory, stack, async,
//! escape, thrown values, return values, console, bindings, source shape.
//!
//! Every case runs as `codemode run - --json` in a process of its own and must end with a
//! readable outcome of the expected status, within a wall-time bound and a peak-RSS bound
//! (the child's `VmHWM`),
//! without a signal death or panic text. The host surviving is the point: a case that crashes
//! the process fails here whatever its status would have been.

use std::io::{Read, Write};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;

use std::os::unix::process::CommandExt;

/// The CLI refuses the program before any run (exit 2): no outcome.
const INPUT_ERROR: &str = "input error";

/// A check on the outcome beyond its status: why it is wrong, if it is.
type Check = fn(&Value) -> Result<(), String>;

/// One corpus entry.
struct Case {
    category: &'static str,
    name: &'static str,
    program: String,
    /// Statuses accepted (most cases have exactly one).
    statuses: &'static [&'static str],
    /// Extra checks on the outcome (error name, value...).
    check: Option<Check>,
    timeout_ms: u64,
    heap_mb: Option<u64>,
    max_wall: Duration,
    max_rss_mb: u64,
}

fn case(category: &'static str, name: &'static str, program: impl Into<String>) -> Case {
    Case {
        category,
        name,
        program: program.into(),
        statuses: &["ok"],
        check: None,
        timeout_ms: 2_000,
        heap_mb: None,
        max_wall: Duration::from_secs(15),
        max_rss_mb: 400,
    }
}

impl Case {
    fn status(mut self, statuses: &'static [&'static str]) -> Self {
        self.statuses = statuses;
        self
    }
    fn check(mut self, check: Check) -> Self {
        self.check = Some(check);
        self
    }
    fn heap_mb(mut self, mb: u64) -> Self {
        self.heap_mb = Some(mb);
        self
    }
    fn timeout_ms(mut self, ms: u64) -> Self {
        self.timeout_ms = ms;
        self
    }
    fn rss_mb(mut self, mb: u64) -> Self {
        self.max_rss_mb = mb;
        self
    }
}

/// What one run of the binary left.
struct Ran {
    exit: Option<i32>,
    signal: Option<i32>,
    stdout: String,
    stderr: String,
    wall: Duration,
    peak_rss_mb: u64,
}

/// Runs the binary, reading its peak RSS while it runs.
fn run_binary(args: &[String], stdin: &[u8]) -> Ran {
    let started = Instant::now();
    // Its own process group keeps it away from the terminal.
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_codemode"))
        .env("CODEMODE_TYPES_CACHE", "off")
        .process_group(0)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    let mut input = child.stdin.take().unwrap();
    let stdin = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = input.write_all(&stdin);
    });
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = Vec::new();
        let _ = out.read_to_end(&mut text);
        text
    });
    let pid = child.id();
    let peak = std::thread::spawn(move || peak_rss_kib(pid));
    let mut err_text = Vec::new();
    let _ = err.read_to_end(&mut err_text);
    let out_text = reader.join().unwrap();
    let _ = writer.join();
    let status = child.wait().expect("the child is reaped");
    let wall = started.elapsed();
    let peak_rss_kib = peak.join().unwrap();
    let (exit, signal) = (
        status.code(),
        std::os::unix::process::ExitStatusExt::signal(&status),
    );
    Ran {
        exit,
        signal,
        stdout: String::from_utf8_lossy(&out_text).into_owned(),
        stderr: String::from_utf8_lossy(&err_text).into_owned(),
        wall,
        peak_rss_mb: peak_rss_kib / 1024,
    }
}

/// The child's peak RSS: its `VmHWM`, read every 10 ms until it exits (the last reading holds
/// the peak up to then). Not `ru_maxrss` from `wait4`: Linux folds the parent's high-water mark
/// into it at exec (the child ran in a copy of the test binary, hundreds of MB in a full run).
/// Readings count only once the child runs our binary, i.e. after its exec.
fn peak_rss_kib(pid: u32) -> u64 {
    let binary = std::fs::canonicalize(env!("CARGO_BIN_EXE_codemode")).ok();
    let mut peak = 0;
    loop {
        let exe = std::fs::read_link(format!("/proc/{pid}/exe")).ok();
        let status = std::fs::read_to_string(format!("/proc/{pid}/status"));
        let Ok(status) = status else { return peak };
        if exe.is_some() && exe == binary {
            let hwm = status
                .lines()
                .find_map(|line| line.strip_prefix("VmHWM:"))
                .and_then(|rest| {
                    rest.trim()
                        .trim_end_matches("kB")
                        .trim()
                        .parse::<u64>()
                        .ok()
                });
            match hwm {
                Some(kib) => peak = peak.max(kib),
                // A zombie has no memory left to read: it has exited.
                None => return peak,
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn judge(case: &Case) -> Result<String, String> {
    let mut args: Vec<String> = ["run", "-", "--json", "--timeout-ms"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    args.push(case.timeout_ms.to_string());
    if let Some(mb) = case.heap_mb {
        args.push("--heap-mb".into());
        args.push(mb.to_string());
    }
    let ran = run_binary(&args, case.program.as_bytes());
    if case.statuses == [INPUT_ERROR] {
        return if ran.exit == Some(2) && ran.stderr.contains("limit") {
            Ok("input error".into())
        } else {
            Err(format!("exit {:?}, stderr {}", ran.exit, ran.stderr))
        };
    }
    let tail = |text: &str| -> String {
        let start = text.len().saturating_sub(600);
        let mut start = start;
        while !text.is_char_boundary(start) {
            start += 1;
        }
        text[start..].to_string()
    };
    if let Some(signal) = ran.signal {
        return Err(format!(
            "killed by signal {signal}; stderr: {}",
            tail(&ran.stderr)
        ));
    }
    if ran.stderr.contains("panicked") || ran.stderr.contains("overflowed its stack") {
        return Err(format!("panic text on stderr: {}", tail(&ran.stderr)));
    }
    let outcome: Value = serde_json::from_str(&ran.stdout).map_err(|e| {
        format!(
            "no readable outcome ({e}); exit {:?}; stdout: {}; stderr: {}",
            ran.exit,
            tail(&ran.stdout),
            tail(&ran.stderr)
        )
    })?;
    let status = outcome["status"].as_str().unwrap_or("<none>");
    // A program that cannot be compiled is an input error (exit 2), still with its outcome.
    let expected_exit = match status {
        "ok" => 0,
        "error" if error_name(&outcome) == "SyntaxError" => 2,
        _ => 1,
    };
    if ran.exit != Some(expected_exit) {
        return Err(format!(
            "exit {:?} for status {status}; stderr: {}",
            ran.exit,
            tail(&ran.stderr)
        ));
    }
    if !case.statuses.contains(&status) {
        return Err(format!(
            "status {status}, expected one of {:?}; error: {}",
            case.statuses,
            tail(&outcome["error"].to_string())
        ));
    }
    if let Some(check) = case.check {
        check(&outcome)?;
    }
    if ran.wall > case.max_wall {
        return Err(format!(
            "took {:?}, bound {:?} (status {status})",
            ran.wall, case.max_wall
        ));
    }
    if ran.peak_rss_mb > case.max_rss_mb {
        return Err(format!(
            "peak RSS {} MB, bound {} MB (status {status})",
            ran.peak_rss_mb, case.max_rss_mb
        ));
    }
    Ok(format!(
        "{status} in {} ms, {} MB",
        ran.wall.as_millis(),
        ran.peak_rss_mb
    ))
}

fn error_name(outcome: &Value) -> &str {
    outcome["error"]["name"].as_str().unwrap_or("")
}

fn error_message(outcome: &Value) -> &str {
    outcome["error"]["message"].as_str().unwrap_or("")
}

fn expect_name(outcome: &Value, name: &str) -> Result<(), String> {
    if error_name(outcome) == name {
        Ok(())
    } else {
        Err(format!("error {}, expected name {name}", outcome["error"]))
    }
}

fn nested(open: &str, middle: &str, close: &str, depth: usize) -> String {
    format!("{}{}{}", open.repeat(depth), middle, close.repeat(depth))
}

fn corpus() -> Vec<Case> {
    vec![
        // CPU
        case("cpu", "busy loop", "while (true) {}").status(&["timeout"]),
        case("cpu", "busy loop after await", "await null; for (;;) {}").status(&["timeout"]),
        case(
            "cpu",
            "microtask flood",
            "const f = () => Promise.resolve().then(f); f(); await new Promise(() => setTimeout(() => {}, 1e9));",
        )
        .status(&["timeout", "out_of_memory"]),
        case(
            "cpu",
            "busy loop in a timer",
            "setTimeout(() => { for (;;) {} }, 0); await new Promise(r => setTimeout(r, 1e9));",
        )
        .status(&["timeout"]),
        case(
            "cpu",
            "catastrophic regex",
            "return /^(a+)+$/.test('a'.repeat(40) + 'b');",
        )
        .status(&["timeout"]),
        case(
            "cpu",
            "try/finally cannot swallow the deadline",
            "for (;;) { try { while (true) {} } finally { continue; } }",
        )
        .status(&["timeout"]),
        // Memory
        case(
            "memory",
            "array growth",
            "const a = []; for (;;) a.push({ x: a.length, s: 'y'.repeat(64) });",
        )
        .heap_mb(64)
        .timeout_ms(20_000)
        .status(&["out_of_memory"]),
        case(
            "memory",
            "allocation bomb inside try/catch",
            "const a = []; try { for (;;) a.push(new Array(1e5).fill(1)); } catch (e) { return 'caught'; }",
        )
        .heap_mb(64)
        .timeout_ms(20_000)
        .status(&["out_of_memory"]),
        case(
            "memory",
            "string doubling",
            "let s = 'x'; for (;;) s = s + s;",
        )
        .heap_mb(64)
        .status(&["error", "out_of_memory"]),
        case(
            "memory",
            "a refused huge allocation is caught and the run goes on",
            "let caught = 0; for (const make of [() => new ArrayBuffer(2 ** 31), () => new Float64Array(2 ** 27)]) { try { make(); } catch { caught++; } } return caught;",
        )
        .heap_mb(64)
        .check(|o| {
            if o["value"] == 2 {
                Ok(())
            } else {
                Err(format!("value {}", o["value"]))
            }
        }),
        case(
            "memory",
            "one huge ArrayBuffer",
            "const b = new ArrayBuffer(2 ** 31); return b.byteLength;",
        )
        .heap_mb(64)
        .status(&["error", "out_of_memory"]),
        case(
            "memory",
            "map of strings",
            "const m = new Map(); for (let i = 0; ; i++) m.set('k' + i, 'v'.repeat(100) + i);",
        )
        .heap_mb(64)
        .timeout_ms(20_000)
        .status(&["out_of_memory"]),
        // Stack
        case("stack", "unbounded recursion", "function f() { return f() + 1; } return f();")
            .status(&["error"])
            .check(|o| expect_name(o, "RangeError").or_else(|_| expect_name(o, "InternalError"))),
        case(
            "stack",
            "recursion caught and ignored",
            "function f(n) { try { return f(n + 1); } catch { return n; } } return f(0) > 100;",
        ),
        case(
            "stack",
            "recursive getter while the value is read",
            "const o = { get x() { return this.x; } }; return o;",
        )
        .status(&["error"]),
        case(
            "stack",
            "recursive toJSON",
            "const o = { toJSON() { return JSON.stringify(o); } }; return o;",
        )
        .status(&["error"]),
        // Async
        case("async", "promise that never settles", "await new Promise(() => {});")
            .status(&["error"])
            .check(|o| expect_name(o, "UnsettledPromise")),
        case(
            "async",
            "interval forever",
            "setInterval(() => {}, 1); await new Promise(() => {});",
        )
        .status(&["timeout"]),
        case(
            "async",
            "unhandled rejection",
            "Promise.reject(new Error('late')); await new Promise(r => setTimeout(r, 10)); return 1;",
        )
        .status(&["error"]),
        case(
            "async",
            "a million timers",
            "for (let i = 0; i < 1e6; i++) setTimeout(() => {}, 1e6); return 'queued';",
        )
        .status(&["ok", "out_of_memory", "timeout", "error"]),
        // Escape attempts
        case(
            "escape",
            "no Deno, ops, require, process",
            "return [typeof Deno, typeof require, typeof process, typeof __codemodeInternal, typeof __codemodeEntry, typeof fetch];",
        )
        .check(|o| {
            let v = &o["value"];
            if v.as_array().is_some_and(|a| a.iter().all(|t| t == "undefined")) {
                Ok(())
            } else {
                Err(format!("reachable: {v}"))
            }
        }),
        case(
            "escape",
            "Function constructor reaches only the same globals",
            "const g = (0, eval)('this'); const f = Function('return this')(); return [typeof g.Deno, typeof f.Deno, g === globalThis];",
        )
        .check(|o| {
            if o["value"] == serde_json::json!(["undefined", "undefined", true]) {
                Ok(())
            } else {
                Err(format!("value {}", o["value"]))
            }
        }),
        case(
            "escape",
            "constructor chain",
            "return typeof (() => {}).constructor.constructor('return Deno')();",
        )
        .status(&["error"])
        .check(|o| expect_name(o, "ReferenceError")),
        case("escape", "dynamic import", "await import('node:fs');").status(&["error"]),
        case(
            "escape",
            "SharedArrayBuffer, Atomics.wait, WebAssembly",
            "return [typeof SharedArrayBuffer, typeof Atomics?.wait, typeof WebAssembly];",
        )
        .check(|o| {
            if o["value"] == serde_json::json!(["undefined", "undefined", "undefined"]) {
                Ok(())
            } else {
                Err(format!("value {}", o["value"]))
            }
        }),
        case(
            "escape",
            "patched intrinsics do not reach the glue",
            "JSON.stringify = () => { throw 1 }; Promise.prototype.then = () => { throw 2 }; Array.prototype.push = () => { throw 3 }; Function.prototype.call = () => { throw 4 }; Object.prototype.toJSON = () => 'x'; console.log('still', { a: 1 }); return { b: 2 };",
        ),
        case(
            "escape",
            "a setter on Array.prototype[0]",
            "Object.defineProperty(Array.prototype, 0, { set() { throw new Error('hooked'); } }); console.log('a', 'b'); return [42];",
        )
        .check(|o| {
            if o["value"] == serde_json::json!([42]) && o["logs"][0]["text"] == "a b" {
                Ok(())
            } else {
                Err(format!("value {} logs {}", o["value"], o["logs"]))
            }
        }),
        // Thrown values
        case(
            "thrown",
            "a proxy whose traps throw",
            "throw new Proxy({}, { get() { throw 1; }, getPrototypeOf() { throw 2; }, ownKeys() { throw 3; } });",
        )
        .status(&["error"]),
        case("thrown", "null", "throw null;").status(&["error"]),
        case(
            "thrown",
            "an error with throwing getters",
            "const e = new Error('x'); Object.defineProperty(e, 'message', { get() { throw e; } }); Object.defineProperty(e, 'stack', { get() { throw e; } }); throw e;",
        )
        .status(&["error"]),
        case(
            "thrown",
            "a 30 MB message",
            "throw new Error('m'.repeat(3e7));",
        )
        // Building and reading 30 MB takes ~0.9 s alone on a 2-core machine, twice that when the
        // suite runs beside it: the case is about the cap on the error, not the deadline.
        .timeout_ms(20_000)
        .status(&["error"])
        .check(|o| {
            let size = o["error"].to_string().len();
            if size < 512 * 1024 {
                Ok(())
            } else {
                Err(format!("error record is {size} bytes"))
            }
        }),
        case(
            "thrown",
            "a 100 MB stack",
            "const e = new Error('x'); e.stack = 's'.repeat(1e8); throw e;",
        )
        .status(&["error", "out_of_memory"])
        .check(|o| {
            if error_name(o) == "UnsettledPromise" {
                Err("misreported as UnsettledPromise".into())
            } else if o["error"].to_string().len() > 512 * 1024 {
                Err("uncapped stack".into())
            } else {
                Ok(())
            }
        }),
        case(
            "thrown",
            "a huge thrown string",
            "throw 's'.repeat(5e7);",
        )
        .status(&["error", "out_of_memory"])
        .check(|o| {
            if o["error"].to_string().len() > 512 * 1024 {
                Err("uncapped message".into())
            } else {
                Ok(())
            }
        }),
        // Return values
        case("return", "a cycle", "const a = { b: {} }; a.b.a = a; return a;")
            .status(&["error"])
            .check(|o| {
                if error_message(o).contains("cyclic") {
                    Ok(())
                } else {
                    Err(format!("message {}", error_message(o)))
                }
            }),
        case(
            "return",
            "nested 200 levels",
            "let v = 1; for (let i = 0; i < 200; i++) v = [v]; return v;",
        )
        .status(&["error"])
        .check(|o| {
            if error_message(o).contains("deeper") || error_message(o).contains("nested") {
                Ok(())
            } else {
                Err(format!("message {}", error_message(o)))
            }
        }),
        case(
            "return",
            "nested 100000 levels",
            "let v = {}; for (let i = 0; i < 1e5; i++) v = { v }; return v;",
        )
        .status(&["error"]),
        case("return", "null", "return null;").check(|o| {
            if o.get("value") == Some(&Value::Null) {
                Ok(())
            } else {
                Err(format!("outcome {o}"))
            }
        }),
        case("return", "NaN", "return NaN;").check(|o| {
            if o.get("value") == Some(&Value::Null) {
                Ok(())
            } else {
                Err(format!("outcome {o}"))
            }
        }),
        case("return", "undefined", "return undefined;").check(|o| {
            if o.get("value").is_none() {
                Ok(())
            } else {
                Err(format!("outcome {o}"))
            }
        }),
        case(
            "return",
            "over the return limit",
            "return 'x'.repeat(5 * 1024 * 1024);",
        )
        .status(&["limit_exceeded"]),
        case(
            "return",
            "a revoked proxy",
            "const { proxy, revoke } = Proxy.revocable({}, {}); revoke(); return proxy;",
        )
        .status(&["error"]),
        case(
            "return",
            "a getter that throws",
            "return { get x() { throw new Error('no'); } };",
        )
        .status(&["error"]),
        case("return", "BigInt", "return 2n ** 70n;").check(|o| {
            if o["value"] == "1180591620717411303424" {
                Ok(())
            } else {
                Err(format!("value {}", o["value"]))
            }
        }),
        // Console
        case(
            "console",
            "empty lines forever",
            "for (;;) console.log('');",
        )
        .status(&["timeout"])
        .rss_mb(400)
        .check(|o| {
            let n = o["logs"].as_array().map_or(0, Vec::len);
            if n <= 1024 * 1024 / 32 + 1 {
                Ok(())
            } else {
                Err(format!("{n} console entries kept"))
            }
        }),
        case(
            "console",
            "one huge line",
            "console.log('z'.repeat(2e7)); return 1;",
        )
        .timeout_ms(20_000)
        .rss_mb(600),
        case(
            "console",
            "a deep object",
            "let v = {}; for (let i = 0; i < 1e5; i++) v = { v }; console.log(v); return 1;",
        ),
        case(
            "console",
            "a hostile proxy",
            "console.log(new Proxy({}, { get() { throw 1; }, ownKeys() { throw 2; }, getPrototypeOf() { throw 3; } })); return 1;",
        ),
        // Bindings
        case(
            "bindings",
            "an unknown tool",
            "try { await tools.nope({}); } catch (e) { return e.code; }",
        )
        .check(|o| {
            if o["value"] == "UNKNOWN_TOOL" {
                Ok(())
            } else {
                Err(format!("value {}", o["value"]))
            }
        }),
        case(
            "bindings",
            "arguments nested 100000 levels",
            "let v = {}; for (let i = 0; i < 1e5; i++) v = { v }; try { await tools.nope(v); } catch (e) { return e.code; }",
        ),
        case(
            "bindings",
            "a tool call from toJSON of the return value",
            "return { toJSON() { tools.anything({}); return 1; } };",
        ),
        case(
            "bindings",
            "the tools object cannot be replaced",
            "try { tools = 1; } catch {} try { globalThis.tools = 2; } catch {} return typeof tools;",
        )
        .check(|o| {
            if o["value"] == "object" {
                Ok(())
            } else {
                Err(format!("value {}", o["value"]))
            }
        }),
        // Source shape
        case(
            "source",
            "arrays nested 6000 deep",
            format!("return {};", nested("[", "1", "]", 6000)),
        )
        .status(&["error"])
        .check(nesting_error),
        case(
            "source",
            "parentheses nested 6000 deep",
            format!("return {};", nested("(", "1", ")", 6000)),
        )
        .status(&["error"])
        .check(nesting_error),
        case(
            "source",
            "objects nested 6000 deep",
            format!("return {};", nested("{a:", "1", "}", 6000)),
        )
        .status(&["error"])
        .check(nesting_error),
        case(
            "source",
            "an arrow chain 6000 long",
            format!("return {}1;", "x => ".repeat(6000)),
        )
        .status(&["error"])
        .check(nesting_error),
        case(
            "source",
            "a ternary chain 6000 long",
            format!("return {}1;", "x ? 1 : ".repeat(6000)),
        )
        .status(&["error"])
        .check(nesting_error),
        case(
            "source",
            "TypeScript generics nested 6000 deep",
            format!(
                "let v: {} = 1; return v;",
                nested("Array<", "number", ">", 6000)
            ),
        )
        .status(&["error"])
        .check(nesting_error),
        case(
            "source",
            "if (1) x 36000",
            format!("{}return 1;", "if (1) ".repeat(36_000)),
        )
        .status(&["error"])
        .check(nesting_error),
        case(
            "source",
            "if (1) x 20000",
            format!("{}return 1;", "if (1) ".repeat(20_000)),
        )
        .status(&["error"])
        .check(nesting_error),
        case(
            "source",
            "unary operators x 200000",
            format!("return {}1;", "!".repeat(200_000)),
        )
        .status(&["error"])
        .check(nesting_error),
        case(
            "source",
            "template literals nested 3000 deep",
            format!("return {};", nested("`${", "1", "}`", 3000)),
        )
        .status(&["error"])
        .check(nesting_error),
        case(
            "source",
            "a left-deep sum of 60000 terms",
            format!("return 0{};", "+1".repeat(60_000)),
        )
        .status(&["error"])
        .check(nesting_error),
        case(
            "source",
            "a member chain 60000 long",
            format!("const a = {{}}; a.a = a; return typeof a{};", ".a".repeat(60_000)),
        )
        .status(&["error"])
        .check(nesting_error),
        case(
            "source",
            "nesting just under the bound still runs",
            format!("return {};", nested("[", "1", "]", 90)),
        )
        .check(|o| {
            if o["value"].is_array() {
                Ok(())
            } else {
                Err(format!("outcome {o}"))
            }
        }),
        case(
            "source",
            "a program over 256 KiB",
            format!("return 1; // {}", "p".repeat(300 * 1024)),
        )
        .status(&[INPUT_ERROR]),
        case("source", "NUL bytes and line separators", "return '\0\u{2028}\u{2029}'.length;")
            .check(|o| {
                if o["value"] == 3 {
                    Ok(())
                } else {
                    Err(format!("value {}", o["value"]))
                }
            }),
        case("source", "a byte-order mark", "\u{feff}return 1;"),
        case("source", "an unterminated template", "return `${").status(&["error"]),
    ]
}

/// A program nested past the bound is refused before it runs, with a message that says so.
fn nesting_error(outcome: &Value) -> Result<(), String> {
    let message = error_message(outcome);
    if error_name(outcome) == "SyntaxError" && message.contains("nest") {
        Ok(())
    } else {
        Err(format!("error {}", outcome["error"]))
    }
}

#[test]
fn hostile_corpus_is_contained() {
    let cases = corpus();
    let total = cases.len();
    // Two at a time: the machines have two cores, and each case is its own process.
    let queue = std::sync::Mutex::new(cases.into_iter());
    let failures = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| {
                loop {
                    let next = queue.lock().unwrap().next();
                    let Some(case) = next else { break };
                    let label = format!("[{}] {}", case.category, case.name);
                    match judge(&case) {
                        Ok(summary) => eprintln!("contained {label}: {summary}"),
                        Err(why) => {
                            eprintln!("NOT contained {label}: {why}");
                            failures.lock().unwrap().push(format!("{label}: {why}"));
                        }
                    }
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    assert!(
        failures.is_empty(),
        "{} of {total} hostile cases not contained:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

//! Each run starts from fresh global state with exactly the globals of DESIGN.md §5, and the glue
//! survives user code that patches the intrinsics it relies on.

use codemode::sandbox::{RunStatus, Sandbox};
use serde_json::json;

use crate::common::{logs, run, value};

#[tokio::test]
async fn globals_do_not_leak_between_runs() {
    assert_eq!(
        value(&run("globalThis.leak = 42; Object.prototype.polluted = 1; return 1;").await),
        json!(1)
    );
    for _ in 0..4 {
        let outcome = run("return [typeof leak, typeof ({}).polluted];").await;
        assert_eq!(value(&outcome), json!(["undefined", "undefined"]));
    }
}

#[tokio::test]
async fn globals_are_exactly_the_documented_ones() {
    let outcome = run("return Object.getOwnPropertyNames(globalThis).sort();").await;
    let names: Vec<String> = serde_json::from_value(value(&outcome)).unwrap();
    let documented = [
        "tools",
        "console",
        "setTimeout",
        "clearTimeout",
        "setInterval",
        "clearInterval",
        "queueMicrotask",
        "structuredClone",
        "TextEncoder",
        "TextDecoder",
        "URL",
        "URLSearchParams",
        "atob",
        "btoa",
        "DOMException",
        "ToolError",
    ];
    let ecmascript = [
        "globalThis",
        "Infinity",
        "NaN",
        "undefined",
        "eval",
        "isFinite",
        "isNaN",
        "parseFloat",
        "parseInt",
        "decodeURI",
        "decodeURIComponent",
        "encodeURI",
        "encodeURIComponent",
        "escape",
        "unescape",
        "Object",
        "Function",
        "Array",
        "Number",
        "Boolean",
        "String",
        "Symbol",
        "BigInt",
        "Math",
        "JSON",
        "Reflect",
        "Proxy",
        "Promise",
        "Date",
        "RegExp",
        "Error",
        "AggregateError",
        "EvalError",
        "RangeError",
        "ReferenceError",
        "SyntaxError",
        "TypeError",
        "URIError",
        "SuppressedError",
        "Map",
        "Set",
        "WeakMap",
        "WeakSet",
        "WeakRef",
        "ArrayBuffer",
        "DataView",
        "Int8Array",
        "Uint8Array",
        "Uint8ClampedArray",
        "Int16Array",
        "Uint16Array",
        "Int32Array",
        "Uint32Array",
        "Float16Array",
        "Float32Array",
        "Float64Array",
        "BigInt64Array",
        "BigUint64Array",
        "Atomics",
        "Iterator",
        "Intl",
        "DisposableStack",
        "AsyncDisposableStack",
    ];
    for name in &names {
        assert!(
            documented.contains(&name.as_str()) || ecmascript.contains(&name.as_str()),
            "undocumented global: {name}"
        );
    }
    for name in documented {
        assert!(names.iter().any(|n| n == name), "missing global: {name}");
    }
}

#[tokio::test]
async fn host_capabilities_are_absent() {
    let outcome = run(
        "return ['Deno', 'process', 'require', 'fetch', 'WebSocket', 'Worker', 'SharedArrayBuffer', '__bootstrap', '__codemodeInternal', '__codemodeEntry'].map((n) => typeof globalThis[n]);",
    )
    .await;
    assert_eq!(value(&outcome), json!(vec!["undefined"; 10]));
}

#[tokio::test]
async fn dynamic_import_is_rejected() {
    let outcome = run("try { await import('data:text/javascript,export default 1'); return 'loaded'; } catch (e) { return 'rejected'; }").await;
    assert_eq!(value(&outcome), json!("rejected"));
}

#[tokio::test]
async fn an_import_says_imports_are_not_available_whatever_the_specifier() {
    // deno_core's own loader answered with module-resolution advice about relative paths.
    let outcome = run(
        "const out = []; for (const s of ['fs', 'node:fs', './x.js', '/abs.js', 'https://example.com/m.js']) { try { await import(s); out.push('loaded'); } catch (e) { out.push(`${e.name}: ${e.message}`); } } return out;",
    )
    .await;
    let messages = value(&outcome);
    for (message, specifier) in messages.as_array().unwrap().iter().zip([
        "fs",
        "node:fs",
        "./x.js",
        "/abs.js",
        "https://example.com/m.js",
    ]) {
        assert_eq!(
            message,
            &json!(format!(
                "TypeError: imports are not available in the sandbox (`{specifier}`): a program has `tools`, `console` and JavaScript's built-ins only"
            ))
        );
    }
}

#[tokio::test]
async fn no_op_is_reachable_from_user_code() {
    // Walk everything reachable from globalThis (own properties and prototypes, without
    // invoking getters) and look for deno_core ops.
    let source = r#"
        const seen = new Set(); const found = []; const queue = [globalThis];
        while (queue.length) {
            const v = queue.pop();
            if (v === null || (typeof v !== "object" && typeof v !== "function") || seen.has(v)) continue;
            seen.add(v);
            queue.push(Object.getPrototypeOf(v));
            for (const key of Reflect.ownKeys(v)) {
                const d = Object.getOwnPropertyDescriptor(v, key);
                if (!d || !("value" in d)) continue;
                if (typeof key === "string" && key.startsWith("op_")) found.push(key);
                queue.push(d.value);
            }
        }
        return { found, visited: seen.size };
    "#;
    let result = value(&run(source).await);
    assert_eq!(result["found"], json!([]));
    assert!(
        result["visited"].as_u64().unwrap() > 100,
        "the walk saw too little: {result}"
    );
}

#[test]
fn glue_captures_exactly_the_reviewed_ops() {
    let report = Sandbox::bootstrap_report().expect("bootstrap works");
    let mut captured = report.captured_ops.clone();
    captured.sort();
    // The reviewed allow-list: change it only together with a review of the new op.
    assert_eq!(
        captured,
        vec![
            "op_codemode_console",
            "op_codemode_finish",
            "op_codemode_tool_call",
            "op_codemode_tool_call_full",
            "op_codemode_url_parse",
            "op_codemode_url_set"
        ]
    );
    assert!(
        report.undeletable.is_empty(),
        "globals the bootstrap could not remove: {:?}",
        report.undeletable
    );
}

#[tokio::test]
async fn patched_intrinsics_do_not_break_the_glue() {
    let source = r#"
        JSON.stringify = () => { throw new Error("patched JSON"); };
        JSON.parse = () => { throw new Error("patched JSON"); };
        Promise.prototype.then = function () { throw new Error("patched then"); };
        Array.prototype.push = function () { throw new Error("patched push"); };
        Array.prototype.join = function () { throw new Error("patched join"); };
        Array.prototype[Symbol.iterator] = function () { throw new Error("patched iterator"); };
        Function.prototype.call = function () { throw new Error("patched call"); };
        Function.prototype.apply = function () { throw new Error("patched apply"); };
        Object.keys = () => { throw new Error("patched keys"); };
        Object.defineProperty(Object.prototype, "status", { set() { throw new Error("patched setter"); } });
        Object.prototype.toJSON = () => "hijacked";
        console.log({ a: [1, 2] });
        return { kept: [1, { b: 2 }] };
    "#;
    let outcome = run(source).await;
    assert_eq!(outcome.status, RunStatus::Ok, "{}", outcome.to_json());
    assert_eq!(logs(&outcome), vec!["{ a: [ 1, 2 ] }"]);
    // toJSON is honoured by the value mapping (as JSON.stringify would), so the patched
    // Object.prototype.toJSON applies to the object itself.
    assert_eq!(outcome.value.unwrap().get(), "\"hijacked\"");
}

//! Hostile and odd thrown values and return values all come back as structured outcomes.

use codemode::sandbox::{RunOutcome, RunStatus};
use serde_json::json;

use crate::common::{logs, run, value};

fn error_of(outcome: &RunOutcome) -> (String, String) {
    assert_eq!(outcome.status, RunStatus::Error, "{}", outcome.to_json());
    let error = outcome.error.clone().expect("error present");
    (error.name, error.message)
}

#[tokio::test]
async fn thrown_errors_carry_name_message_and_program_position() {
    let outcome = run("const a = 1;\nconst b = 2;\n\nthrow new TypeError('bad thing');").await;
    let error = outcome.error.clone().unwrap();
    assert_eq!(
        (error.name.as_str(), error.message.as_str()),
        ("TypeError", "bad thing")
    );
    assert_eq!(error.line, Some(4), "{}", outcome.to_json());
    assert!(
        error.stack.unwrap().contains("program:4:"),
        "{}",
        outcome.to_json()
    );
}

#[tokio::test]
async fn positions_survive_typescript_stripping() {
    let source = "interface Big {\n  a: string;\n  b: number;\n}\ntype T = Big | null;\nconst x: T = null;\nfunction boom(v: T): never {\n  throw new Error('at line 8');\n}\nboom(x);";
    let error = run(source).await.error.unwrap();
    assert_eq!(error.line, Some(8), "{error:?}");
    assert!(
        error.stack.as_deref().unwrap_or("").contains("program:10:"),
        "{error:?}"
    );
}

#[tokio::test]
async fn runtime_type_error_has_a_line() {
    let error = run("const o = undefined;\nreturn o.missing;")
        .await
        .error
        .unwrap();
    assert_eq!(error.name, "TypeError");
    assert_eq!(error.line, Some(2), "{error:?}");
}

#[tokio::test]
async fn syntax_errors_point_at_the_model_line() {
    let outcome = run("const ok = 1;\nconst broken = ;").await;
    let error = outcome.error.unwrap();
    assert_eq!(error.name, "SyntaxError");
    assert_eq!((error.line, error.column), (Some(2), Some(16)));
}

#[tokio::test]
async fn a_program_the_engine_refuses_to_compile_fails_with_its_syntax_error() {
    // The TypeScript front end lets a nested label of the same name through; the engine does
    // not, so the run fails when the engine compiles it, before anything of it runs.
    let outcome = run("console.log('never');\nouter: { outer: { } }\nreturn 1;").await;
    let (name, message) = error_of(&outcome);
    assert_eq!(name, "Error");
    assert!(
        message.contains("SyntaxError") && message.contains("duplicate label"),
        "{message}"
    );
    assert!(logs(&outcome).is_empty(), "{}", outcome.to_json());
}

#[tokio::test]
async fn non_error_throws_are_structured() {
    assert_eq!(
        error_of(&run("throw null").await),
        ("Error".into(), "Uncaught null".into())
    );
    assert_eq!(
        error_of(&run("throw 1").await),
        ("Error".into(), "Uncaught 1".into())
    );
    assert_eq!(
        error_of(&run("throw {}").await),
        ("Error".into(), "Uncaught {}".into())
    );
    assert_eq!(
        error_of(&run("throw 'text'").await),
        ("Error".into(), "Uncaught text".into())
    );
    assert_eq!(
        error_of(&run("throw undefined").await),
        ("Error".into(), "Uncaught undefined".into())
    );
}

#[tokio::test]
async fn hostile_thrown_values_never_crash_the_host() {
    let cases = [
        "throw new Proxy({}, { get() { throw new Error('trap'); }, getPrototypeOf() { throw new Error('trap'); }, ownKeys() { throw 1; } })",
        "throw new Proxy(new Error('x'), { get() { throw new Error('trap'); } })",
        "const e = new Error('m'); Object.defineProperty(e, 'message', { get() { throw new Error('getter'); } }); throw e;",
        "const e = new Error(); e.message = { not: 'a string' }; throw e;",
        "const e = new Error('x'); e.name = Symbol('s'); throw e;",
        "throw Object.create(null)",
        "throw new Proxy(function () {}, { get() { throw 1; }, apply() { throw 2; } })",
        "const p = Promise.reject(new Proxy({}, { get() { throw 1; } })); await p;",
        "setTimeout(() => { throw new Proxy({}, { get() { throw 1; } }); }, 1); await new Promise(() => {});",
        "queueMicrotask(() => { throw new Proxy({}, { getPrototypeOf() { throw 1; } }); }); await new Promise((r) => setTimeout(r, 10));",
        "Promise.reject(new Proxy({}, { get() { throw 1; } })); await new Promise((r) => setTimeout(r, 10));",
    ];
    for case in cases {
        let outcome = run(case).await;
        assert_eq!(
            outcome.status,
            RunStatus::Error,
            "{case}: {}",
            outcome.to_json()
        );
        assert!(outcome.error.is_some(), "{case}");
    }
    assert_eq!(
        value(&run("return 'still alive'").await),
        json!("still alive")
    );
}

#[tokio::test]
async fn error_with_non_string_message_is_described() {
    let outcome = run("const e = new Error(); e.message = { code: 7 }; throw e;").await;
    assert_eq!(outcome.error.unwrap().message, "{ code: 7 }");
}

#[tokio::test]
async fn return_values_follow_the_value_mapping() {
    let outcome = run(
        "return { big: 2n ** 70n, nan: NaN, inf: -Infinity, undef: undefined, fn() {}, sym: Symbol('s'), arr: [undefined, () => 1, NaN], date: new Date(0), map: new Map([[1, 2]]), set: new Set([1]), nested: { n: null } };",
    )
    .await;
    assert_eq!(
        value(&outcome),
        json!({
            "big": "1180591620717411303424", "nan": null, "inf": null,
            "arr": [null, null, null], "date": "1970-01-01T00:00:00.000Z", "map": {}, "set": {}, "nested": {"n": null}
        })
    );
}

#[tokio::test]
async fn odd_top_level_return_values() {
    assert!(run("return undefined").await.value.is_none());
    assert!(run("return () => 1").await.value.is_none());
    assert_eq!(value(&run("return NaN").await), json!(null));
    assert_eq!(value(&run("return 12n").await), json!("12"));
    assert_eq!(value(&run("return 'plain'").await), json!("plain"));
    assert_eq!(value(&run("return new Number(3)").await), json!(3));
}

#[tokio::test]
async fn cyclic_return_value_names_the_path() {
    let outcome = run("const a = { b: { list: [1] } }; a.b.list.push(a); return a;").await;
    let (name, message) = error_of(&outcome);
    assert_eq!(name, "TypeError");
    assert!(
        message.contains("$.b.list[1]") && message.contains("refers back to $"),
        "{message}"
    );
}

#[tokio::test]
async fn throwing_getter_in_return_value_is_an_error_for_that_value() {
    let outcome = run("return { ok: 1, bad: { get x() { throw new Error('nope'); } } };").await;
    let (_, message) = error_of(&outcome);
    assert!(
        message.contains("$.bad.x") && message.contains("nope"),
        "{message}"
    );
    let proxy = run("return new Proxy({}, { ownKeys() { throw new Error('keys'); } });").await;
    assert!(error_of(&proxy).1.contains("keys"));
}

#[tokio::test]
async fn very_deep_return_value_is_an_error_not_a_crash() {
    let outcome = run("let v = []; for (let i = 0; i < 100000; i++) v = [v]; return v;").await;
    assert_eq!(
        outcome.status,
        RunStatus::Error,
        "{}",
        &outcome.to_json()[..200.min(outcome.to_json().len())]
    );
    // Up to the value-nesting limit (100 levels) a value is returned; deeper is an error that
    // names the path (a value the host could not read back used to vanish).
    let moderately_deep = run("let v = 1; for (let i = 0; i < 99; i++) v = [v]; return v;").await;
    assert_eq!(moderately_deep.status, RunStatus::Ok);
    assert!(moderately_deep.value.unwrap().get().starts_with("[[[["));
}

#[tokio::test]
async fn console_survives_cyclic_and_throwing_objects() {
    let outcome = run(
        "const a = [1]; a.push(a); console.log(a); console.log(new Proxy({}, { ownKeys() { throw 1; }, getPrototypeOf() { throw 2; } })); console.log({ toString() { throw 1; } }); return 'ok';",
    )
    .await;
    assert_eq!(value(&outcome), json!("ok"));
    assert_eq!(logs(&outcome)[0], "<ref *1> [ 1, [Circular *1] ]");
    assert_eq!(logs(&outcome).len(), 3);
}

#[tokio::test]
async fn awaiting_a_promise_that_never_settles_is_unsettled_promise() {
    let outcome = run("await new Promise(() => {});").await;
    assert_eq!(error_of(&outcome).0, "UnsettledPromise");
}

#[tokio::test]
async fn unhandled_rejection_fails_the_run() {
    let outcome = run("Promise.reject(new Error('lost')); await new Promise((r) => setTimeout(r, 20)); return 'finished';").await;
    assert_eq!(error_of(&outcome), ("Error".into(), "lost".into()));
}

#[tokio::test]
async fn an_unhandled_rejection_fails_the_run_even_when_the_program_ends_in_the_same_turn() {
    // The busy wait lets the 1 ms timer expire before the loop's timer phase: the timer fires,
    // the program returns and only then are rejections dispatched, all in one turn of the
    // loop (under load this happened by chance, and the run ended `ok`).
    let outcome = run("Promise.reject(new Error('lost')); const p = new Promise((r) => setTimeout(r, 1)); const t = Date.now(); while (Date.now() - t < 5) {} await p; return 'finished';").await;
    assert_eq!(error_of(&outcome), ("Error".into(), "lost".into()));
    assert_eq!(outcome.value_json(), None);
}

#[tokio::test]
async fn a_throw_in_a_timer_fails_the_run() {
    let outcome = run("setTimeout(() => { throw new RangeError('in timer'); }, 1); await new Promise((r) => setTimeout(r, 50));").await;
    assert_eq!(error_of(&outcome), ("RangeError".into(), "in timer".into()));
}

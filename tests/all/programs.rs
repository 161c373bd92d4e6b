//! Programs as models write them: async bodies, TypeScript, console output.

use codemode::sandbox::{LogLevel, RunStatus};
use serde_json::json;

use crate::common::{logs, run, value};

#[tokio::test]
async fn return_and_top_level_await_work() {
    let outcome = run("const x = await Promise.resolve(20);\nreturn { answer: x + 22 };").await;
    assert_eq!(value(&outcome), json!({"answer": 42}));
}

#[tokio::test]
async fn program_without_return_has_no_value() {
    let outcome = run("console.log('only output');").await;
    assert_eq!(outcome.status, RunStatus::Ok);
    assert!(outcome.value.is_none());
    let json: serde_json::Value = serde_json::from_str(&outcome.to_json()).unwrap();
    assert!(
        json.get("value").is_none(),
        "undefined return must be absent"
    );
}

#[tokio::test]
async fn typescript_as_models_write_it_runs() {
    let source = r#"
        enum Color { Red = "red", Green = "green" }
        namespace Geometry { export const area = (w: number, h: number): number => w * h; }
        class Point { constructor(public x: number, private readonly y: number) {} sum() { return this.x + this.y; } }
        interface Named { name: string }
        type Pair<T> = [T, T];
        import type { Nothing } from "nowhere";
        function first<T>(pair: Pair<T>): T { return pair[0]; }
        const named = { name: "n" } satisfies Named;
        const n = (7 as unknown) as number;
        return [Color.Green, Geometry.area(2, 3), new Point(1, 2).sum(), first<string>(["a", "b"]), named.name, n];
    "#;
    assert_eq!(
        value(&run(source).await),
        json!(["green", 6, 3, "a", "n", 7])
    );
}

#[tokio::test]
async fn console_levels_are_kept() {
    let outcome = run("console.log('l'); console.info('i'); console.warn('w'); console.error('e'); console.debug('d');").await;
    let levels: Vec<LogLevel> = outcome.logs.iter().map(|l| l.level).collect();
    assert_eq!(
        levels,
        vec![
            LogLevel::Log,
            LogLevel::Info,
            LogLevel::Warn,
            LogLevel::Error,
            LogLevel::Debug
        ]
    );
    assert_eq!(logs(&outcome), vec!["l", "i", "w", "e", "d"]);
}

#[tokio::test]
async fn console_formats_like_node_in_compact_form() {
    let outcome = run(r#"
        console.log({ a: 1, b: [1, 2] });
        console.log("str", 1, "x", null, undefined, true, 10n);
        const o = { name: "o" }; o.self = o; console.log(o);
        console.log({ get g() { throw new Error("no"); } });
        console.log([1, "two", { three: 3 }]);
        console.log(new Map([["k", 1]]), new Set([1]));
        console.log("%s is %d years", "Bob", 42);
        console.dir("quoted");
        console.log(function named() {}, class K {});
        console.log({ nested: { deeper: { deepest: { gone: 1 } } } });
    "#)
    .await;
    assert_eq!(
        logs(&outcome),
        vec![
            "{ a: 1, b: [ 1, 2 ] }",
            "str 1 x null undefined true 10n",
            "<ref *1> { name: 'o', self: [Circular *1] }",
            "{ g: [Getter] }",
            "[ 1, 'two', { three: 3 } ]",
            "Map(1) { 'k' => 1 } Set(1) { 1 }",
            "Bob is 42 years",
            "'quoted'",
            "[Function: named] [class K]",
            "{ nested: { deeper: { deepest: [Object] } } }",
        ]
    );
}

#[tokio::test]
async fn console_table_renders_a_table() {
    let outcome = run("console.table([{ a: 1, b: 'x' }, { a: 2 }]);").await;
    let text = &logs(&outcome)[0];
    assert!(text.contains("(index)") && text.contains("│ a"), "{text}");
    assert!(text.contains("'x'"), "{text}");
}

#[tokio::test]
async fn timers_and_microtasks_run() {
    let source = r#"
        const order = [];
        queueMicrotask(() => order.push("micro"));
        await new Promise((resolve) => setTimeout(() => { order.push("timeout"); resolve(); }, 5));
        let ticks = 0;
        await new Promise((resolve) => { const id = setInterval(() => { if (++ticks === 3) { clearInterval(id); resolve(); } }, 1); });
        const cancelled = setTimeout(() => order.push("never"), 1); clearTimeout(cancelled);
        await new Promise((r) => setTimeout(r, 5));
        return { order, ticks };
    "#;
    assert_eq!(
        value(&run(source).await),
        json!({"order": ["micro", "timeout"], "ticks": 3})
    );
}

#[tokio::test]
async fn web_globals_work() {
    let source = r#"
        const bytes = new TextEncoder().encode("héllo");
        const text = new TextDecoder().decode(bytes);
        const url = new URL("/a/b?x=1&y=two#frag", "https://example.com:8080");
        url.searchParams.append("z", "3 4");
        const params = new URLSearchParams({ q: "a+b", n: "1" });
        const clone = structuredClone({ d: new Date(0), m: new Map([[1, 2]]), nested: [1, { x: 2 }] });
        return {
            len: bytes.length, text,
            href: url.href, host: url.host, path: url.pathname, x: url.searchParams.get("x"),
            params: params.toString(),
            b64: btoa("hi there"), back: atob(btoa("hi there")),
            cloneOk: clone.d instanceof Date && clone.m.get(1) === 2 && clone.nested[1].x === 2,
        };
    "#;
    assert_eq!(
        value(&run(source).await),
        json!({
            "len": 6, "text": "héllo",
            "href": "https://example.com:8080/a/b?x=1&y=two&z=3+4#frag", "host": "example.com:8080",
            "path": "/a/b", "x": "1",
            "params": "q=a%2Bb&n=1",
            "b64": "aGkgdGhlcmU=", "back": "hi there",
            "cloneOk": true,
        })
    );
}

#[tokio::test]
async fn invalid_url_throws_type_error() {
    let outcome =
        run("try { new URL('not a url'); } catch (e) { return e.name + ': ' + e.message; }").await;
    assert_eq!(value(&outcome), json!("TypeError: Invalid URL: not a url"));
}

/// `Intl.DateTimeFormat` threw "not a function" (the engine's stub read a global the bootstrap
/// removes) and Date's `toLocale*String` ignored their options. Checked on isolates built both
/// ways: the first builds run the whole glue, later ones are restored from the snapshot.
#[tokio::test]
async fn dates_format_in_english_in_any_time_zone() {
    let source = r#"
        const d = new Date(Date.UTC(2024, 2, 5, 14, 7, 9, 45));
        const f = (o) => new Intl.DateTimeFormat("en-US", o).format(d);
        return [
            f({ timeZone: "UTC" }),
            f({ timeZone: "UTC", year: "numeric", month: "long", day: "numeric" }),
            f({ timeZone: "America/New_York", dateStyle: "full", timeStyle: "long" }),
            f({ timeZone: "Asia/Kolkata", dateStyle: "medium", timeStyle: "short" }),
            f({ timeZone: "UTC", dateStyle: "short" }),
            d.toLocaleTimeString("en-US", { timeZone: "Europe/Paris", hour12: false }),
            d.toLocaleString("en-US", { timeZone: "UTC" }),
            d.toLocaleDateString("de-DE", { timeZone: "UTC", weekday: "short", month: "short", day: "numeric" }),
            d.toLocaleDateString("en-US", { timeZone: "UTC", month: "long", year: "numeric" }),
            new Intl.DateTimeFormat("en-US", { timeZone: "UTC", hour: "2-digit", minute: "2-digit" })
                .formatToParts(d).map((p) => `${p.type}=${p.value}`).join("|"),
            [d].map(new Intl.DateTimeFormat("en-US", { timeZone: "UTC" }).format)[0],
            new Intl.DateTimeFormat("en", { timeZone: "europe/berlin" }).resolvedOptions().timeZone,
            new Date(NaN).toLocaleString(),
            f({ timeZone: "UTC", weekday: "long", hour: "numeric" }),
            f({ timeZone: "UTC", month: "long", year: "numeric", hour: "numeric" }),
            f({ timeZone: "UTC", timeZoneName: "short" }),
            f({ timeZone: "UTC", hour: "numeric", minute: "numeric", fractionalSecondDigits: 2 }),
            new Date(Date.UTC(-500, 5, 15)).toLocaleDateString("en-US", { timeZone: "UTC" }),
        ];
    "#;
    let expected = json!([
        "3/5/2024",
        "March 5, 2024",
        "Tuesday, March 5, 2024 at 9:07:09 AM GMT-5",
        "Mar 5, 2024, 7:37 PM",
        "3/5/24",
        "15:07:09",
        "3/5/2024, 2:07:09 PM",
        "Tue, Mar 5",
        "March 2024",
        "hour=02|literal=:|minute=07|literal= |dayPeriod=PM",
        "3/5/2024",
        "Europe/Berlin",
        "Invalid Date",
        "Tuesday 2 PM",
        "March 2024 at 2 PM",
        "3/5/2024, UTC",
        "2:07:09.04 PM",
        "6/15/501",
    ]);
    for _ in 0..6 {
        assert_eq!(value(&run(source).await), expected);
    }
}

#[tokio::test]
async fn bad_date_format_options_are_refused_with_what_was_wrong() {
    let source = r#"
        const refusal = (o) => {
            try { new Intl.DateTimeFormat("en-US", o); return "accepted"; }
            catch (e) { return `${e.name}: ${e.message}`; }
        };
        return [
            refusal({ timeZone: "Mars/Olympus" }),
            refusal({ month: "longest" }),
            refusal({ dateStyle: "long", year: "numeric" }),
            (() => { try { new Intl.DateTimeFormat().format(NaN); } catch (e) { return `${e.name}: ${e.message}`; } })(),
        ];
    "#;
    assert_eq!(
        value(&run(source).await),
        json!([
            "RangeError: Invalid time zone specified: Mars/Olympus",
            "RangeError: Value longest out of range for Intl.DateTimeFormat options property month",
            "TypeError: Can't set option year when dateStyle or timeStyle is used",
            "RangeError: Invalid time value",
        ])
    );
}

/// The engine's `Intl` stub wrote numbers as `String(n)` and said "other" for every plural; these
/// are the outputs V8 gives in en-US.
#[tokio::test]
async fn numbers_plurals_and_relative_times_format_in_english() {
    let source = r#"
        const nf = (o, x) => new Intl.NumberFormat("en-US", o).format(x);
        const rtf = new Intl.RelativeTimeFormat("en", { numeric: "auto" });
        return [
            (1234567.891).toLocaleString(),
            nf({ maximumFractionDigits: 2 }, 1.005),
            nf({ style: "percent", maximumFractionDigits: 1 }, 0.2567),
            nf({ style: "currency", currency: "USD" }, 1234.5),
            nf({ style: "currency", currency: "EUR", currencySign: "accounting" }, -9.999),
            nf({ style: "currency", currency: "JPY" }, 1234.5),
            nf({ notation: "compact" }, 1234),
            nf({ notation: "compact" }, 999999),
            nf({ notation: "compact", compactDisplay: "long" }, 2500000),
            nf({ notation: "scientific" }, 123456),
            nf({ maximumSignificantDigits: 3 }, 123456),
            nf({ minimumIntegerDigits: 3, minimumFractionDigits: 1 }, 7),
            nf({ signDisplay: "exceptZero" }, -0),
            (12345678901234567890n).toLocaleString(),
            [1, 2.5].map(new Intl.NumberFormat("en-US", { minimumFractionDigits: 1 }).format),
            new Intl.NumberFormat("en-US", { style: "currency", currency: "USD" })
                .formatToParts(-1234.5).map((p) => `${p.type}=${p.value}`).join("|"),
            [0, 1, 2].map((n) => new Intl.PluralRules("en-US").select(n)),
            [1, 2, 3, 4, 11, 22].map((n) => new Intl.PluralRules("en-US", { type: "ordinal" }).select(n)),
            [rtf.format(-1, "day"), rtf.format(3, "hours"), rtf.format(-2, "week"), rtf.format(0, "second")],
            new Intl.RelativeTimeFormat("en", { style: "short" }).format(-5, "minute"),
            [nf({ notation: "compact" }, 0.1), nf({ notation: "compact", maximumFractionDigits: 2 }, 999999)],
            [nf({ style: "currency", currency: "CHF" }, NaN), nf({ style: "currency", currency: "CHF" }, 12)],
            [new Intl.RelativeTimeFormat("en", { style: "narrow" }).format(-2, "year"),
             new Intl.RelativeTimeFormat("en", { style: "short", numeric: "auto" }).format(-1, "year")],
        ];
    "#;
    let expected = json!([
        "1,234,567.891",
        "1.01",
        "25.7%",
        "$1,234.50",
        "(€10.00)",
        "¥1,235",
        "1.2K",
        "1M",
        "2.5 million",
        "1.235E5",
        "123,000",
        "007.0",
        "0",
        "12,345,678,901,234,567,890",
        ["1.0", "2.5"],
        "minusSign=-|currency=$|integer=1|group=,|integer=234|decimal=.|fraction=50",
        ["other", "one", "other"],
        ["one", "two", "few", "other", "other", "two"],
        ["yesterday", "in 3 hours", "2 weeks ago", "now"],
        "5 min. ago",
        ["0.1", "1M"],
        ["CHFNaN", "CHF\u{a0}12.00"],
        ["2y ago", "last yr."],
    ]);
    for _ in 0..6 {
        assert_eq!(value(&run(source).await), expected);
    }
}

#[tokio::test]
async fn bad_number_format_options_are_refused_with_what_was_wrong() {
    let source = r#"
        const refusal = (make) => { try { make(); return "accepted"; } catch (e) { return `${e.name}: ${e.message}`; } };
        return [
            refusal(() => new Intl.NumberFormat("en-US", { style: "currency" })),
            refusal(() => new Intl.NumberFormat("en-US", { style: "unit", unit: "meter" })),
            refusal(() => new Intl.NumberFormat("en-US", { maximumFractionDigits: 200 })),
            refusal(() => new Intl.NumberFormat("en-US", { notation: "tiny" })),
            refusal(() => new Intl.RelativeTimeFormat("en").format(1, "fortnight")),
        ];
    "#;
    assert_eq!(
        value(&run(source).await),
        json!([
            "TypeError: Currency code is required with currency style.",
            "RangeError: Intl.NumberFormat: style \"unit\" is not supported by this engine",
            "RangeError: maximumFractionDigits value is out of range (0 to 100)",
            "RangeError: Value tiny out of range for Intl.NumberFormat options property notation",
            "RangeError: Invalid unit argument for format() 'fortnight'",
        ])
    );
}

/// A formatter's state is out of the program's reach, and what a program does to its own
/// prototypes or with huge numbers does not break or stall the formatters.
#[tokio::test]
async fn formatters_keep_their_state_and_survive_hostile_programs() {
    let source = r#"
        const nf = new Intl.NumberFormat("en-US", { maximumFractionDigits: 1 });
        const hidden = Object.getOwnPropertySymbols(nf).length + Reflect.ownKeys(nf).length;
        let forged;
        try { Intl.NumberFormat.prototype.formatToParts.call({}, 5); forged = "forged"; }
        catch (e) { forged = e.name; }
        // Descriptor keys inherited from Object.prototype before the first use.
        Object.defineProperty(Object.prototype, "get", { __proto__: null, value: 1, configurable: true });
        Object.defineProperty(Object.prototype, "value", { __proto__: null, value: 2, configurable: true });
        const polluted = [nf.format(1234.56), (5).toLocaleString(), new Date(0).toLocaleDateString("en-US", { timeZone: "UTC" })];
        delete Object.prototype.get;
        delete Object.prototype.value;
        // 100,000 digits: a backtracking regex made this take longer than any deadline.
        const digits = (10n ** 100000n + 1n).toLocaleString().length;
        return [hidden, forged, polluted, digits];
    "#;
    assert_eq!(
        value(&run(source).await),
        json!([0, "TypeError", ["1,234.6", "5", "1/1/1970"], 133_334])
    );
}

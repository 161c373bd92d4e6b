//! Every limit of DESIGN.md §5, proven. Time bounds are generous: latencies belong in benchmarks.

use std::time::{Duration, Instant};

use codemode::sandbox::{Limits, MIB, RunStatus};
use serde_json::json;

use crate::common::{logs, run, run_limited, short, value};

/// A run-ending limit must leave the pool healthy: the next run succeeds.
async fn next_run_succeeds() {
    assert_eq!(value(&run("return 'alive'").await), json!("alive"));
}

async fn assert_times_out(source: &str) {
    let started = Instant::now();
    let outcome = run_limited(source, short(300)).await;
    assert_eq!(outcome.status, RunStatus::Timeout, "{}", outcome.to_json());
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "took {:?}",
        started.elapsed()
    );
    let error = outcome.error.expect("timeout has an error");
    assert_eq!(error.message, "timeout after 300 ms");
    next_run_succeeds().await;
}

#[tokio::test]
async fn infinite_loop_is_terminated() {
    assert_times_out("while (true) {}").await;
}

#[tokio::test]
async fn microtask_flood_is_terminated() {
    assert_times_out("(function f() { queueMicrotask(f); })(); await new Promise(() => {});").await;
}

#[tokio::test]
async fn busy_loop_after_await_is_terminated() {
    assert_times_out("await new Promise((r) => setTimeout(r, 10)); for (;;) {}").await;
}

#[tokio::test]
async fn promise_loop_is_terminated() {
    assert_times_out("for (;;) { await Promise.resolve(); }").await;
}

#[tokio::test]
async fn timeout_cannot_be_caught() {
    let outcome = run_limited(
        "for (let i = 0; i < 1000; i++) { try { while (true) {} } catch (e) { console.log('caught', String(e)); } } return 'escaped';",
        short(300),
    )
    .await;
    assert_eq!(outcome.status, RunStatus::Timeout, "{}", outcome.to_json());
    assert!(
        logs(&outcome).is_empty(),
        "user code caught the termination: {:?}",
        logs(&outcome)
    );
}

#[tokio::test]
async fn waiting_on_timers_past_the_deadline_times_out() {
    assert_times_out("await new Promise((r) => setTimeout(r, 60_000));").await;
}

#[tokio::test]
async fn console_output_before_a_timeout_is_kept() {
    let outcome = run_limited("console.log('before'); while (true) {}", short(200)).await;
    assert_eq!(outcome.status, RunStatus::Timeout);
    assert_eq!(logs(&outcome), vec!["before"]);
}

#[tokio::test]
async fn allocation_bomb_ends_out_of_memory() {
    let limits = Limits {
        heap_bytes: 64 * MIB,
        ..short(60_000)
    };
    let started = Instant::now();
    let outcome = run_limited(
        "const keep = []; while (true) { keep.push(new Array(100000).fill(1.5)); }",
        limits,
    )
    .await;
    assert_eq!(
        outcome.status,
        RunStatus::OutOfMemory,
        "{}",
        outcome.to_json()
    );
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "took {:?}",
        started.elapsed()
    );
    next_run_succeeds().await;
}

#[tokio::test]
async fn string_bomb_ends_out_of_memory() {
    let limits = Limits {
        heap_bytes: 64 * MIB,
        ..short(60_000)
    };
    let outcome = run_limited(
        "const keep = []; for (let i = 0; ; i++) keep.push('x'.repeat(1 << 20) + i);",
        limits,
    )
    .await;
    assert_eq!(
        outcome.status,
        RunStatus::OutOfMemory,
        "{}",
        outcome.to_json()
    );
    next_run_succeeds().await;
}

#[tokio::test]
async fn out_of_memory_cannot_be_caught() {
    let limits = Limits {
        heap_bytes: 64 * MIB,
        ..short(60_000)
    };
    let outcome = run_limited(
        "const keep = []; try { while (true) keep.push(new Array(100000).fill(1.5)); } catch (e) { keep.length = 0; return 'caught ' + e; }",
        limits,
    )
    .await;
    assert_eq!(
        outcome.status,
        RunStatus::OutOfMemory,
        "{}",
        outcome.to_json()
    );
}

#[tokio::test]
async fn deep_recursion_is_a_catchable_range_error() {
    let outcome = run("function f(n) { return f(n + 1) + 1; }\ntry { f(0); } catch (e) { return [e instanceof RangeError, e.name]; }").await;
    assert_eq!(value(&outcome), json!([true, "RangeError"]));
    let uncaught = run("const f = (n) => f(n + 1) + 1;\nf(0);").await;
    assert_eq!(uncaught.status, RunStatus::Error);
    assert_eq!(uncaught.error.unwrap().name, "RangeError");
}

#[tokio::test]
async fn console_bytes_are_capped_with_a_marker() {
    let limits = Limits {
        console_bytes: 1000,
        ..Limits::default()
    };
    let outcome = run_limited(
        "for (let i = 0; i < 100; i++) console.log('x'.repeat(99)); return 'done';",
        limits,
    )
    .await;
    assert_eq!(value(&outcome), json!("done"));
    let kept: usize = outcome
        .logs
        .iter()
        .take(outcome.logs.len() - 1)
        .map(|l| l.text.len())
        .sum();
    // Each entry costs its text plus 32 bytes: seven whole entries (7 x 131), then 51 bytes
    // of the eighth fill the 1000.
    assert_eq!(kept, 7 * 99 + 51);
    assert_eq!(outcome.logs.len(), 8 + 1);
    assert_eq!(
        outcome.logs.last().unwrap().text,
        "[console truncated: 9156 bytes dropped in 92 entries]"
    );
}

#[tokio::test]
async fn default_console_cap_is_one_mebibyte() {
    let outcome =
        run("const line = 'y'.repeat(1023); for (let i = 0; i < 2048; i++) console.log(line);")
            .await;
    let kept: usize = outcome
        .logs
        .iter()
        .take(outcome.logs.len() - 1)
        .map(|l| l.text.len())
        .sum();
    assert_eq!(kept + (outcome.logs.len() - 1) * 32, MIB);
    assert!(
        outcome
            .logs
            .last()
            .unwrap()
            .text
            .starts_with("[console truncated: ")
    );
}

#[tokio::test]
async fn a_flood_of_long_console_lines_ends_ok_with_the_cap_marker() {
    // 200,000 lines of 1 KB: at ~170 us a line (a character-by-character scan for printf
    // directives) this ran into the deadline; it must end `ok`, the console capped.
    let limits = Limits {
        deadline: Duration::from_secs(15),
        ..Limits::default()
    };
    let outcome = run_limited(
        "const line = 'z'.repeat(1024); for (let i = 0; i < 200000; i++) console.log(line); return 'done';",
        limits,
    )
    .await;
    assert_eq!(outcome.status, RunStatus::Ok, "{:?}", outcome.error);
    assert_eq!(value(&outcome), json!("done"));
    let marker = &outcome.logs.last().unwrap().text;
    assert!(
        marker.starts_with("[console truncated: ") && marker.contains(" entries]"),
        "{marker}"
    );
}

#[tokio::test]
async fn oversized_program_is_rejected_before_running() {
    let source = format!("return 1; // {}", "p".repeat(256 * 1024));
    let outcome = run(&source).await;
    assert_eq!(outcome.status, RunStatus::Error);
    let error = outcome.error.unwrap();
    assert_eq!(error.name, "ProgramTooLarge");
    assert!(error.message.contains("262144"), "{}", error.message);
}

#[tokio::test]
async fn oversized_return_value_is_limit_exceeded() {
    let outcome = run("return 'z'.repeat(5 * 1024 * 1024);").await;
    assert_eq!(
        outcome.status,
        RunStatus::LimitExceeded,
        "{}",
        outcome.to_json()
    );
    assert!(outcome.error.unwrap().message.contains("4194304"));
    let limits = Limits {
        return_bytes: 100,
        ..Limits::default()
    };
    let small = run_limited(
        "return Array.from({ length: 50 }, (_, i) => i);",
        limits.clone(),
    )
    .await;
    assert_eq!(small.status, RunStatus::LimitExceeded);
    // 40 three-byte characters: 40 UTF-16 units but 120 UTF-8 bytes; the exact size decides.
    let multibyte = run_limited("return '€'.repeat(40);", limits).await;
    assert_eq!(
        multibyte.status,
        RunStatus::LimitExceeded,
        "{}",
        multibyte.to_json()
    );
}

#[tokio::test]
async fn shared_array_buffer_and_atomics_wait_are_absent() {
    let outcome = run(
        "return [typeof SharedArrayBuffer, typeof Atomics, typeof Atomics.wait, typeof Atomics.waitAsync, typeof WebAssembly];",
    )
    .await;
    assert_eq!(
        value(&outcome),
        json!(["undefined", "object", "undefined", "undefined", "undefined"])
    );
}

/// A forking microtask flood outruns the engine's termination (it fails one job per interrupt
/// check, and the facade's drain runs the next): the watchdog gives the worker up after its
/// grace, the caller gets its outcome, and a replacement worker serves the next run.
#[tokio::test]
async fn a_run_that_cannot_be_stopped_gives_its_worker_up_and_the_pool_recovers() {
    use codemode::sandbox::{Sandbox, SandboxConfig};
    let sandbox = Sandbox::new(SandboxConfig {
        workers: 1,
        limits: short(300),
        ..SandboxConfig::default()
    })
    .unwrap();
    let started = Instant::now();
    let outcome = sandbox
        .run("const f = () => Promise.resolve().then(f); f(); await new Promise(() => setTimeout(() => {}, 1e9));")
        .await;
    assert!(
        matches!(outcome.status, RunStatus::Timeout | RunStatus::OutOfMemory),
        "{}",
        outcome.to_json()
    );
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    let next = sandbox.run("return 1 + 1").await;
    assert_eq!(next.value_json(), Some(json!(2)), "{}", next.to_json());
}

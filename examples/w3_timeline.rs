//! W3's timeline: where the time of `Promise.all` over 100 calls of a 10 ms tool goes. Each run
//! goes through the same public API as `benches/workloads.rs` (a `Harness` on a warm pool); the
//! tool marks when each call's body starts and when its sleep ends. Per run, and as medians:
//! the first and the last call reaching its tool, the first and the last sleep ending, and the
//! run's end, all in ms from the start of `harness.run`.
//!
//! ```text
//! cargo run --release --example w3_timeline [RUNS]   # RUNS defaults to 30
//! W3_GAPS=1 cargo run --release --example w3_timeline  # also each run's gaps between call starts
//! W3_TIMER=thread cargo run --release --example w3_timeline  # the tool woken by a thread, not tokio
//! ```
//!
//! It also prints the mean of `end - last call` over the runs: the wait and what follows it, apart
//! from the issue.
//!
//! Each sleep ends at the millisecond tick after its deadline (tokio rounds it up; the pool's tick
//! thread wakes the worker on that tick), so a run ends about 10.5 ms after its last call starts,
//! plus the handling of the last results and the reply: every microsecond of issuing or handing
//! over shows in the end (docs/PERFORMANCE-LOG.md, "On the tick, with warm memory").

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use codemode::sandbox::{Limits, Sandbox, SandboxConfig};
use codemode::{Harness, ToolDefinition, ToolRegistry};
use serde_json::{Value, json};

const W3: &str = "const r = await Promise.all(Array.from({ length: 100 }, (_, i) => tools.sleep10({ x: i }))); return r.length";

/// When a call's body started (`Start`) or its sleep ended (`Woke`).
#[derive(Clone, Copy, PartialEq)]
enum Mark {
    Start,
    Woke,
}

type Marks = Arc<Mutex<Vec<(Mark, Instant)>>>;

/// A wake-up 10 ms after a call began, from a thread of its own.
type Alarm = (Instant, tokio::sync::oneshot::Sender<()>);

/// The thread that sends every [`Alarm`] at its time (`recv_timeout` waits below a millisecond,
/// up to the kernel's timer slack, 50 µs by default).
fn alarm_thread() -> std::sync::mpsc::Sender<Alarm> {
    use std::sync::mpsc::RecvTimeoutError;
    let (alarms, received) = std::sync::mpsc::channel::<Alarm>();
    std::thread::spawn(move || {
        let mut due: Vec<Alarm> = Vec::new();
        loop {
            let now = Instant::now();
            let (ready, waiting): (Vec<Alarm>, Vec<Alarm>) =
                due.drain(..).partition(|(at, _)| *at <= now);
            due = waiting;
            for (_, wake) in ready {
                let _ = wake.send(());
            }
            let next = due.iter().map(|(at, _)| *at).min();
            let got = match next {
                Some(at) => received.recv_timeout(at.saturating_duration_since(Instant::now())),
                None => received.recv().map_err(|_| RecvTimeoutError::Disconnected),
            };
            match got {
                Ok(alarm) => due.push(alarm),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return,
            }
        }
    });
    alarms
}

/// W3's `sleep10`, marking its start and its wake-up. With `W3_TIMER=thread`, it waits for
/// [`alarm_thread`] instead of tokio's timer: a wake-up from outside the runtime, as a network
/// reply's is, which tokio does not round to its millisecond ticks.
fn registry(marks: &Marks) -> ToolRegistry {
    let marks = Arc::clone(marks);
    let alarms = match std::env::var("W3_TIMER").as_deref() {
        Ok("thread") => Some(alarm_thread()),
        Ok("tokio") | Err(_) => None,
        Ok(other) => panic!("W3_TIMER is `thread` or `tokio` (the default), not `{other}`"),
    };
    let sleep10 = ToolDefinition::builder("sleep10")
        .description("sleeps 10 ms, returns its `x`")
        .parameters(json!({"type": "object"}))
        .parallel_safe()
        .execute(move |args: Value, _exec| {
            let marks = Arc::clone(&marks);
            let alarms = alarms.clone();
            async move {
                let began = Instant::now();
                marks.lock().unwrap().push((Mark::Start, began));
                match alarms {
                    Some(alarms) => {
                        let (wake, woken) = tokio::sync::oneshot::channel();
                        let due = began + Duration::from_millis(10);
                        alarms.send((due, wake)).unwrap();
                        woken.await.unwrap();
                    }
                    None => tokio::time::sleep(Duration::from_millis(10)).await,
                }
                marks.lock().unwrap().push((Mark::Woke, Instant::now()));
                Ok(args["x"].clone())
            }
        })
        .build()
        .unwrap();
    let mut registry = ToolRegistry::new();
    registry.register(sleep10).unwrap();
    registry
}

fn main() {
    // Steady state: every isolate restored from the startup snapshot (docs/PERFORMANCE.md).
    codemode::sandbox::make_startup_snapshot().unwrap();
    let runs: usize = std::env::args()
        .nth(1)
        .map(|n| n.parse().expect("RUNS is a number"))
        .unwrap_or(30);
    let marks = Marks::default();
    let host = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    // As in the workloads bench: the 100 calls in flight at once.
    let limits = Limits {
        in_flight_calls: 128,
        ..Limits::default()
    };
    let sandbox = Sandbox::new(SandboxConfig {
        workers: 1,
        limits: limits.clone(),
        ..SandboxConfig::default()
    })
    .unwrap();
    let harness = Harness::builder()
        .limits(limits)
        .sandbox(sandbox.clone())
        .inner(|pipeline| pipeline.pool_size(128))
        .build(registry(&marks))
        .unwrap();

    let show_gaps = std::env::var_os("W3_GAPS").is_some();
    const COLUMNS: [&str; 5] = ["first call", "last call", "first wake", "last wake", "end"];
    let mut rows: Vec<[f64; 5]> = Vec::new();
    for _ in 0..runs {
        while sandbox.warm_workers() < 1 {
            std::thread::sleep(Duration::from_micros(200));
        }
        marks.lock().unwrap().clear();
        let started = Instant::now();
        let outcome = host.block_on(harness.run(W3)).unwrap();
        let ended = Instant::now();
        assert!(outcome.is_ok(), "{}", outcome.to_json());
        let ms = |at: Instant| (at - started).as_secs_f64() * 1000.0;
        let marks = marks.lock().unwrap();
        let times = |kind: Mark| -> Vec<f64> {
            marks
                .iter()
                .filter(|(mark, _)| *mark == kind)
                .map(|(_, at)| ms(*at))
                .collect()
        };
        let (starts, wakes) = (times(Mark::Start), times(Mark::Woke));
        let row = [
            starts[0],
            starts[starts.len() - 1],
            wakes[0],
            wakes[wakes.len() - 1],
            ms(ended),
        ];
        let shown: Vec<String> = COLUMNS
            .iter()
            .zip(row)
            .map(|(name, at)| format!("{name} {at:.3}"))
            .collect();
        println!("{}", shown.join(", "));
        if show_gaps {
            let gaps: Vec<String> = starts
                .windows(2)
                .map(|w| format!("{:.0}", (w[1] - w[0]) * 1000.0))
                .collect();
            println!("gaps us: {}", gaps.join(" "));
        }
        rows.push(row);
    }
    let medians: Vec<String> = COLUMNS
        .iter()
        .enumerate()
        .map(|(column, name)| {
            let mut values: Vec<f64> = rows.iter().map(|row| row[column]).collect();
            values.sort_by(f64::total_cmp);
            format!("{name} {:.3}", values[values.len() / 2])
        })
        .collect();
    println!("medians over {runs} runs (ms): {}", medians.join(", "));
    // The wait alone: the last call's sleep (10 ms, rounded up to a tick), the wake-up, handling
    // the last results and the reply. Its mean moves with the timer's handling, not with how fast
    // the calls were issued; the tick phase spreads it by ±0.5 ms, so compare hundreds of runs.
    let mean = |column: usize| {
        rows.iter().map(|row| row[4] - row[column]).sum::<f64>() / rows.len() as f64
    };
    println!(
        "means over {runs} runs (ms): end - last call {:.3}, end - last wake {:.3}",
        mean(1),
        mean(3)
    );
}

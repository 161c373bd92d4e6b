//! What a fresh isolate leaves behind when it is dropped (docs/LIFECYCLE.md). The engine
//! facade keeps about 0.8 MB of every deno_core runtime; a bare isolate with a context keeps
//! almost nothing, and codemode's own glue adds little. Worker processes contain it: the host
//! does not grow, whatever the workers leak, because they are recycled.
//!
//! Each measurement runs in a process of its own (this test binary, started again on one
//! probe), so other tests' memory does not blur it.

use std::process::Command;

use codemode::sandbox::{Isolation, ProcessConfig, Sandbox, SandboxConfig};

use crate::common::worker_program;

const MODE: &str = "CODEMODE_CHURN_MODE";
const CYCLES: usize = 40;

fn rss_kb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|line| line.starts_with("VmRSS"))?
                .split_whitespace()
                .nth(1)?
                .parse()
                .ok()
        })
        .unwrap_or(0.0)
}

/// One create/drop cycle of `mode`, on the calling thread.
fn cycle(mode: &str, sandbox: Option<&Sandbox>, runtime: &tokio::runtime::Runtime) {
    match mode {
        "bare" => {
            let mut isolate = deno_core::v8::Isolate::new(Default::default());
            deno_core::v8::scope!(let scope, &mut isolate);
            let _context = deno_core::v8::Context::new(scope, Default::default());
        }
        "runtime" => drop(deno_core::JsRuntime::new(Default::default())),
        _ => {
            let outcome = runtime.block_on(sandbox.expect("a sandbox").run("return 1"));
            assert!(outcome.is_ok(), "{}", outcome.to_json());
        }
    }
}

/// The probe: prints the RSS growth per cycle of the mode named by `CODEMODE_CHURN_MODE`.
#[test]
#[ignore = "started by the tests below, in a process of its own"]
fn churn_probe() {
    let Ok(mode) = std::env::var(MODE) else {
        return;
    };
    deno_core::JsRuntime::init_platform(None);
    let sandbox = match mode.as_str() {
        "thread" | "process" => {
            // Made now, not in the background while the growth is measured.
            codemode::sandbox::make_startup_snapshot().unwrap();
            let isolation = if mode == "process" {
                Isolation::Process(ProcessConfig::with_program(worker_program()))
            } else {
                Isolation::Thread
            };
            Some(
                Sandbox::new(SandboxConfig {
                    workers: 1,
                    isolation,
                    ..SandboxConfig::default()
                })
                .unwrap(),
            )
        }
        _ => None,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // One thread, as a sandbox worker has; a few cycles first so allocator pools are warm.
    let growth = std::thread::scope(|scope| {
        scope
            .spawn(|| {
                for _ in 0..4 {
                    cycle(&mode, sandbox.as_ref(), &runtime);
                }
                let before = rss_kb();
                for _ in 0..CYCLES {
                    cycle(&mode, sandbox.as_ref(), &runtime);
                }
                (rss_kb() - before) / CYCLES as f64
            })
            .join()
            .unwrap()
    });
    println!("CHURN {mode} {growth:.1}");
}

/// Host RSS growth per cycle, in KiB, of `mode`.
fn growth_per_cycle(mode: &str) -> f64 {
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "lifecycle::churn_probe",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(MODE, mode)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let prefix = format!("CHURN {mode} ");
    stdout
        .lines()
        .find_map(|line| line.split_once(&prefix)?.1.trim().parse().ok())
        .unwrap_or_else(|| {
            panic!(
                "the {mode} probe printed no measurement:\n{stdout}\n{}",
                String::from_utf8_lossy(&out.stderr)
            )
        })
}

#[test]
fn the_isolate_leak_is_the_engine_facades_and_worker_processes_contain_it() {
    let bare = growth_per_cycle("bare");
    let runtime = growth_per_cycle("runtime");
    let thread = growth_per_cycle("thread");
    let process = growth_per_cycle("process");
    eprintln!(
        "RSS growth per cycle (KiB): bare isolate+context {bare:.0}, deno_core runtime {runtime:.0}, \
         thread-mode run {thread:.0}, process-mode run (host) {process:.0}"
    );
    // The facade's isolate and context alone keep little.
    assert!(
        bare < 150.0,
        "a bare isolate and context keep {bare:.0} KiB"
    );
    // A deno_core runtime keeps hundreds of KiB: the upstream defect docs/LIFECYCLE.md names.
    // If this fails, the facade fixed it: update the doc and reconsider the recycling defaults.
    assert!(
        runtime > 400.0,
        "a deno_core runtime keeps only {runtime:.0} KiB now: the upstream leak is gone"
    );
    // What codemode adds (ops, glue, the run) is marginal beside it.
    assert!(
        thread - runtime < 200.0,
        "a thread-mode run keeps {thread:.0} KiB, {:.0} more than a bare runtime",
        thread - runtime
    );
    // Worker processes keep the host flat.
    assert!(
        process < 50.0,
        "a process-mode run grows the host by {process:.0} KiB"
    );
}

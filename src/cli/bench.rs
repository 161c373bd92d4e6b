//! `codemode bench [SCENARIOS]`: code mode against direct tool calls. Replay by default
//! (offline, deterministic token counts); `--live` drives a model over an OpenAI-compatible
//! Chat Completions API.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};

use super::sdk::runtime;
use super::{EXIT_FAILED, EXIT_USAGE, output};
use codemode::bench::{
    BenchReport, LatencyModel, LiveOptions, Mode, Scenario, ScenarioReport, chart_svg, live_all,
    markdown, replay_all,
};
use codemode::sandbox::{Sandbox, SandboxConfig};

#[derive(Args)]
#[command(
    after_help = "Examples:\n  codemode bench                                   # the shipped suite, replayed\n  codemode bench bench/scenarios --out bench-report\n  codemode bench my-scenario.json --scenario triage --json\n  codemode bench --live --endpoint http://localhost:8080/v1 --model qwen3 --repeat 3\n  codemode bench --live --endpoint https://api.openai.com/v1 --model gpt-4.1 --api-key-env OPENAI_API_KEY\n\nExit codes: 0 every scenario ran and was correct in every mode (replay) or every live loop\nended with an answer; 1 otherwise; 2 usage or input error (a bad scenario file)."
)]
pub struct BenchArgs {
    /// A scenario file, or a directory of them (`*.json`, in file-name order).
    #[arg(default_value = "bench/scenarios")]
    scenarios: PathBuf,
    /// Only the scenarios with this name (repeatable).
    #[arg(long = "scenario", value_name = "NAME")]
    only: Vec<String>,
    /// Write report.md, report.json and chart.svg into DIR (made if missing).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Print report.json on stdout instead of the summary table.
    #[arg(long)]
    json: bool,
    /// Modelled time to first token of each model turn, in milliseconds (replay).
    #[arg(long, value_name = "MS", default_value_t = LatencyModel::default().ttft_ms)]
    ttft_ms: f64,
    /// Modelled prefill rate, input tokens per second (replay).
    #[arg(long, value_name = "N", default_value_t = LatencyModel::default().prefill_tps)]
    prefill_tps: f64,
    /// Modelled decode rate, output tokens per second (replay).
    #[arg(long, value_name = "N", default_value_t = LatencyModel::default().decode_tps)]
    decode_tps: f64,
    /// Drive a real model instead of replaying (needs --endpoint and --model).
    #[arg(long, requires_all = ["endpoint", "model"])]
    live: bool,
    /// Base URL of an OpenAI-compatible API (`/chat/completions` is appended), e.g.
    /// http://localhost:8080/v1.
    #[arg(long, value_name = "URL", requires = "live")]
    endpoint: Option<String>,
    /// The model name sent with each request.
    #[arg(long, value_name = "NAME", requires = "live")]
    model: Option<String>,
    /// The environment variable holding the API key (sent as a Bearer token).
    #[arg(long, value_name = "VAR", requires = "live")]
    api_key_env: Option<String>,
    /// Live runs per scenario and mode.
    #[arg(long, value_name = "K", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=100))]
    repeat: u64,
    /// Model turns before a live loop is cut off.
    #[arg(long, value_name = "N", default_value_t = 12, value_parser = clap::value_parser!(u64).range(1..=200))]
    max_turns: u64,
    /// The modes of a live run, comma-separated: `direct`, `code`, `discovery` (`run_code` with
    /// `catalog.search` / `catalog.describe` instead of the SDK).
    #[arg(long, value_name = "MODES", value_delimiter = ',', default_values = ["direct", "code"], requires = "live")]
    modes: Vec<ModeFlag>,
    /// Timeout of one model request, in seconds (live).
    #[arg(long, value_name = "S", default_value_t = 120, value_parser = clap::value_parser!(u64).range(1..))]
    request_timeout_s: u64,
}

pub fn bench(args: BenchArgs) -> i32 {
    let mut scenarios = match Scenario::load_all(&args.scenarios) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("codemode bench: {e}");
            return EXIT_USAGE;
        }
    };
    if !args.only.is_empty() {
        if let Some(missing) = args
            .only
            .iter()
            .find(|n| !scenarios.iter().any(|s| &s.name == *n))
        {
            let names: Vec<&str> = scenarios.iter().map(|s| s.name.as_str()).collect();
            eprintln!(
                "codemode bench: --scenario {missing}: no such scenario in {} (there are: {})",
                args.scenarios.display(),
                names.join(", ")
            );
            return EXIT_USAGE;
        }
        scenarios.retain(|s| args.only.contains(&s.name));
    }
    let latency = LatencyModel {
        ttft_ms: args.ttft_ms,
        prefill_tps: args.prefill_tps,
        decode_tps: args.decode_tps,
    };
    if !(latency.ttft_ms >= 0.0 && latency.prefill_tps > 0.0 && latency.decode_tps > 0.0) {
        eprintln!("codemode bench: --ttft-ms must be >= 0, --prefill-tps and --decode-tps > 0");
        return EXIT_USAGE;
    }
    let live = match live_options(&args) {
        Ok(live) => live,
        Err(message) => {
            eprintln!("codemode bench: {message}");
            return EXIT_USAGE;
        }
    };
    let Some(runtime) = runtime("bench") else {
        return EXIT_FAILED;
    };
    let sandbox = match Sandbox::new(SandboxConfig::default()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("codemode bench: the sandbox did not start: {e}");
            return EXIT_FAILED;
        }
    };
    let runs = scenarios.len() as u64 * live.as_ref().map_or(1, |l| l.repeat as u64);
    let bar = progress_bar(runs);
    let on_done = |s: &ScenarioReport| {
        bar.inc(1);
        bar.println(progress_line(s));
    };
    let report = runtime.block_on(async {
        match &live {
            Some(options) => live_all(&scenarios, &sandbox, options, on_done).await,
            None => replay_all(&scenarios, &sandbox, &latency, on_done).await,
        }
    });
    bar.finish_and_clear();
    runtime.shutdown_background();

    if let Some(dir) = &args.out
        && let Err(message) = write_reports(dir, &report)
    {
        eprintln!("codemode bench: {message}");
        return EXIT_FAILED;
    }
    let printed = if args.json {
        format!("{}\n", report.to_json())
    } else {
        markdown(&report)
    };
    if let Err(code) = output::emit("bench", &printed) {
        return code;
    }
    let ok = match &live {
        None => report.all_correct(),
        Some(_) => report.scenarios.iter().all(|s| {
            s.error.is_none()
                && s.modes
                    .iter()
                    .all(|m| m.live.as_ref().is_some_and(|l| l.ended == "answer"))
        }),
    };
    if ok { 0 } else { EXIT_FAILED }
}

fn live_options(args: &BenchArgs) -> Result<Option<LiveOptions>, String> {
    if !args.live {
        return Ok(None);
    }
    let api_key = match &args.api_key_env {
        Some(var) => Some(std::env::var(var).map_err(|_| {
            format!("--api-key-env {var}: the environment has no such variable (export it, or leave the flag out for a server without keys)")
        })?),
        None => None,
    };
    let endpoint = args.endpoint.clone().unwrap_or_default();
    url::Url::parse(&endpoint).map_err(|e| {
        format!("--endpoint {endpoint}: not a URL ({e}); e.g. http://localhost:8080/v1")
    })?;
    Ok(Some(LiveOptions {
        endpoint,
        model: args.model.clone().unwrap_or_default(),
        api_key,
        repeat: args.repeat as usize,
        max_turns: args.max_turns as usize,
        request_timeout: Duration::from_secs(args.request_timeout_s),
        modes: {
            let mut modes: Vec<Mode> = args.modes.iter().map(|m| m.mode()).collect();
            modes.dedup();
            modes
        },
    }))
}

/// `--modes`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum ModeFlag {
    /// Every tool as a function.
    Direct,
    /// `run_code` with the whole SDK.
    Code,
    /// `run_code` with the discovery tools.
    Discovery,
}

impl ModeFlag {
    fn mode(self) -> Mode {
        match self {
            ModeFlag::Direct => Mode::Direct,
            ModeFlag::Code => Mode::Code,
            ModeFlag::Discovery => Mode::Discovery,
        }
    }
}

fn progress_bar(len: u64) -> ProgressBar {
    let bar = ProgressBar::new(len);
    if let Ok(style) = ProgressStyle::with_template("{bar:30} {pos}/{len} scenarios {elapsed}") {
        bar.set_style(style);
    }
    bar
}

/// One line per finished scenario, above the bar (on stderr).
fn progress_line(s: &ScenarioReport) -> String {
    if let Some(e) = &s.error {
        return format!("{}: did not run: {e}", s.name);
    }
    let modes: Vec<String> = s
        .modes
        .iter()
        .map(|m| {
            format!(
                "{} {} ({} turns, {} input tokens)",
                m.mode.as_str(),
                if m.correct { "ok" } else { "WRONG" },
                m.turns,
                m.input_tokens
            )
        })
        .collect();
    format!("{}: {}", s.name, modes.join("; "))
}

fn write_reports(dir: &Path, report: &BenchReport) -> Result<(), String> {
    std::fs::create_dir_all(dir)
        .map_err(|e| format!("--out {}: cannot make it: {e}", dir.display()))?;
    let write = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
    };
    write("report.md", &markdown(report))?;
    write("report.json", &format!("{}\n", report.to_json()))?;
    write("chart.svg", &chart_svg(report)?)?;
    Ok(())
}

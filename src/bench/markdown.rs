//! `report.md` and the terminal summary: one row per scenario, direct against code (and
//! discovery where a scenario has it), then the totals. Losses are shown as they come out.

use std::fmt::Write;

use super::report::{BenchReport, Mode, ScenarioReport};

/// The report as Markdown.
pub fn markdown(report: &BenchReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# codemode bench ({})\n", report.kind);
    let mut about = format!("Tokens: {}", report.tokenizer);
    if let Some(model) = &report.model {
        about.push_str(&format!("; model: {model}"));
    }
    if let Some(l) = &report.latency_model {
        about.push_str(&format!(
            "; modelled model time: {} ms to first token per turn, prefill {} tokens/s, decode {} tokens/s",
            l.ttft_ms, l.prefill_tps, l.decode_tps
        ));
    }
    let _ = writeln!(out, "{about}.\n");
    out.push_str("| scenario | correct (direct/code) | turns | input tokens (direct → code) | saving | peak context | output tokens | tool ms (measured) | model s |\n");
    out.push_str("|---|---|---|---|---|---|---|---|---|\n");
    for s in &report.scenarios {
        row(&mut out, s);
    }
    if let (Some(d), Some(c)) = (report.totals(Mode::Direct), report.totals(Mode::Code)) {
        let _ = writeln!(
            out,
            "| **total** | {}/{} · {}/{} | {} → {} | {} → {} | {} | | {} → {} | {:.0} → {:.0} | {:.1} → {:.1} |",
            d.correct,
            d.scenarios,
            c.correct,
            c.scenarios,
            d.turns,
            c.turns,
            d.input_tokens,
            c.input_tokens,
            report.code_input_saving().map_or("n/a".into(), percent),
            d.output_tokens,
            c.output_tokens,
            d.tool_ms,
            c.tool_ms,
            d.model_ms / 1000.0,
            c.model_ms / 1000.0,
        );
    }
    let discovery: Vec<_> = report
        .scenarios
        .iter()
        .filter_map(|s| Some((s, s.mode(Mode::Discovery)?, s.mode(Mode::Code)?)))
        .collect();
    if !discovery.is_empty() {
        out.push_str("\n## Discovery\n\n| scenario | correct | turns | input tokens (code → discovery) | definition tokens (code → discovery) | tool calls |\n|---|---|---|---|---|---|\n");
        for (s, d, c) in discovery {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} → {} | {} → {} | {} |",
                s.name,
                mark(d.correct),
                d.turns,
                c.input_tokens,
                d.input_tokens,
                c.definition_tokens,
                d.definition_tokens,
                d.tool_calls
            );
        }
    }
    let losses: Vec<&ScenarioReport> = report
        .scenarios
        .iter()
        .filter(|s| matches!((s.mode(Mode::Direct), s.mode(Mode::Code)), (Some(d), Some(c)) if c.input_tokens >= d.input_tokens))
        .collect();
    if !losses.is_empty() {
        out.push_str("\n## Where code mode does not win\n\n");
        for s in losses {
            let (d, c) = (s.mode(Mode::Direct).unwrap(), s.mode(Mode::Code).unwrap());
            let _ = writeln!(
                out,
                "- **{}**: {} input tokens in code mode against {} direct ({} turns against {}). {}",
                s.name, c.input_tokens, d.input_tokens, c.turns, d.turns, s.description
            );
        }
    }
    let problems: Vec<String> = report
        .scenarios
        .iter()
        .flat_map(|s| {
            let scenario_error = s
                .error
                .iter()
                .map(move |e| format!("- **{}**: {e}", s.name));
            let mode_problems = s.modes.iter().flat_map(move |m| {
                m.problems
                    .iter()
                    .map(move |p| format!("- **{}** ({}): {p}", s.name, m.mode.as_str()))
            });
            scenario_error.chain(mode_problems)
        })
        .collect();
    if !problems.is_empty() {
        out.push_str("\n## Problems\n\n");
        for p in problems {
            let _ = writeln!(out, "{p}");
        }
    }
    out
}

fn row(out: &mut String, s: &ScenarioReport) {
    let (Some(d), Some(c)) = (s.mode(Mode::Direct), s.mode(Mode::Code)) else {
        let _ = writeln!(
            out,
            "| {} | did not run: {} | | | | | | | |",
            s.name,
            s.error
                .as_deref()
                .unwrap_or("no result")
                .replace('|', "\\|")
        );
        return;
    };
    let saving = 1.0 - c.input_tokens as f64 / d.input_tokens.max(1) as f64;
    let _ = writeln!(
        out,
        "| {} | {} / {} | {} → {} | {} → {} | {} | {} → {} | {} → {} | {:.1} → {:.1} | {:.1} → {:.1} |",
        s.name,
        mark(d.correct),
        mark(c.correct),
        d.turns,
        c.turns,
        d.input_tokens,
        c.input_tokens,
        percent(saving),
        d.peak_context_tokens,
        c.peak_context_tokens,
        d.output_tokens,
        c.output_tokens,
        d.tool_ms,
        c.tool_ms,
        d.model_ms / 1000.0,
        c.model_ms / 1000.0,
    );
}

/// `-68%` style: the change from direct to code (a saving is negative).
fn percent(saving: f64) -> String {
    format!("{:+.0}%", -saving * 100.0)
}

fn mark(correct: bool) -> &'static str {
    if correct { "yes" } else { "**no**" }
}

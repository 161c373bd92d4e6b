//! `codemode mcp` end to end, with real components nobody here wrote: the official Python MCP SDK
//! as the client, and the reference MCP servers from npm (everything, filesystem, memory) as
//! upstreams. The scenarios live in `tests/mcp/client_e2e.py`; each test runs one.
//!
//! `scripts/install-mcp-test-deps.sh` installs the components into `target/mcp-deps` on first
//! use (or set `CODEMODE_MCP_DEPS` to a directory it made). The tests are skipped, loudly, only
//! when a package registry is unreachable; any other install failure fails them.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

fn project_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The installed components, or why they cannot be had.
fn deps() -> Result<PathBuf, String> {
    static DEPS: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    DEPS.get_or_init(install).clone()
}

fn install() -> Result<PathBuf, String> {
    if let Some(dir) = std::env::var_os("CODEMODE_MCP_DEPS") {
        return Ok(PathBuf::from(dir));
    }
    let script = project_root().join("scripts/install-mcp-test-deps.sh");
    let out = Command::new("bash")
        .arg(&script)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", script.display()))?;
    if out.status.success() {
        return Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()));
    }
    let reason = format!(
        "{} failed: {}",
        script.display(),
        String::from_utf8_lossy(&out.stderr).trim()
    );
    match unreachable_registry() {
        Some(registry) => Err(format!("{registry} is unreachable ({reason})")),
        None => panic!("the registries answer, yet {reason}"),
    }
}

/// The registry that does not answer, if one does not.
fn unreachable_registry() -> Option<&'static str> {
    let answers = |program: &str, args: &[&str]| {
        Command::new(program)
            .args(args)
            .output()
            .is_ok_and(|out| out.status.success())
    };
    if !answers("npm", &["ping", "--loglevel=error"]) {
        return Some("the npm registry");
    }
    if !answers(
        "python3",
        &[
            "-m",
            "pip",
            "index",
            "versions",
            "mcp",
            "--disable-pip-version-check",
        ],
    ) {
        return Some("the Python package index");
    }
    None
}

/// The components, or `None` after saying loudly why the test is skipped.
pub(crate) fn deps_or_skip(test: &str) -> Option<PathBuf> {
    match deps() {
        Ok(deps) => Some(deps),
        Err(reason) => {
            let banner = "!".repeat(72);
            let _ = writeln!(
                std::io::stderr(),
                "\n{banner}\nSKIPPED: mcp_e2e::{test}: {reason}\n{banner}"
            );
            None
        }
    }
}

/// Run one scenario of the Python driver against the codemode binary.
fn scenario(name: &str) {
    scenario_with(name, &[]);
}

/// Run one scenario with extra environment for the driver.
fn scenario_with(name: &str, env: &[(&str, &str)]) {
    let Some(deps) = deps_or_skip(name) else {
        return;
    };
    let work = tempfile::tempdir().expect("temp dir");
    let python = deps.join("venv/bin/python");
    let driver = project_root().join("tests/mcp/client_e2e.py");
    let out = Command::new(&python)
        .arg(&driver)
        .arg(name)
        .arg(env!("CARGO_BIN_EXE_codemode"))
        .arg(&deps)
        .arg(work.path())
        .envs(env.iter().copied())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", python.display()));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains(&format!("scenario {name}: ok")),
        "scenario {name} failed ({}):\n--- stdout\n{stdout}\n--- stderr\n{}",
        out.status,
        tail(&stderr, 60)
    );
}

/// The last `lines` lines of a long traceback.
fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

#[test]
fn lists_run_code_with_the_sdk_and_runs_a_program_over_upstreams_and_builtins_on_protocol_2026() {
    scenario("list_and_run_modern");
}

#[test]
fn lists_run_code_with_the_sdk_and_runs_a_program_over_upstreams_and_builtins_on_legacy_protocol() {
    scenario("list_and_run_legacy");
}

#[test]
fn upstream_results_map_to_values_and_upstreams_get_a_minimal_environment() {
    scenario("content_mapping");
}

#[test]
fn upstream_is_error_becomes_tool_error_with_the_server_text() {
    scenario("tool_error_and_failure");
}

#[test]
fn expose_direct_serves_the_visible_tools_through_the_pipeline() {
    scenario("expose_direct");
}

#[test]
fn nested_calls_are_progress_notifications_and_a_cancelled_request_cancels_its_run() {
    scenario("progress_and_cancel");
}

#[test]
fn asks_are_elicited_by_input_required_round_trips_on_protocol_2026() {
    scenario("approvals_modern");
}

#[test]
fn an_input_required_retry_must_continue_the_same_call_and_delivers_the_answer() {
    scenario("mrtr_retry_rules");
}

#[test]
fn asks_are_elicited_by_server_requests_on_legacy_protocol() {
    scenario("approvals_legacy");
}

#[test]
fn structured_content_keeps_the_output_budget_and_matches_the_declared_output_schema() {
    scenario("capped_structured");
}

#[test]
fn a_program_cannot_call_run_code_over_mcp() {
    scenario("no_nested_run_code");
}

#[test]
fn a_whole_program_is_approved_once_by_elicitation_on_protocol_2026() {
    scenario("program_approval_modern");
}

#[test]
fn a_whole_program_is_approved_once_by_elicitation_on_legacy_protocol() {
    scenario("program_approval_legacy");
}

#[test]
fn asks_are_refused_when_the_client_cannot_elicit() {
    scenario("no_elicitation_denies");
}

#[test]
fn a_failed_or_dead_upstream_is_reported_while_other_sources_keep_working() {
    scenario("upstream_failures");
}

#[test]
fn progressive_discovery_lets_programs_find_and_describe_tools_missing_from_the_description() {
    scenario("discovery");
}

#[test]
fn an_upstream_tool_list_change_refreshes_the_sdk_for_the_next_run() {
    scenario("list_changed");
}

/// `--upstream` for the fixture server in `mode`, run by the installed Python.
fn fixture_upstream(deps: &std::path::Path, namespace: &str, mode: &str) -> String {
    format!(
        "{namespace}={} {} {mode}",
        deps.join("venv/bin/python").display(),
        project_root().join("tests/mcp/fixture_server.py").display()
    )
}

#[test]
fn a_killed_worker_process_ends_its_run_as_crashed_and_the_server_keeps_serving() {
    scenario("crashed_worker");
}

#[test]
fn two_thousand_sequential_runs_do_not_grow_the_server_in_process_mode() {
    // The bounded soak (`make soak` runs 10,000 in both modes).
    scenario_with(
        "soak",
        &[
            ("CODEMODE_SOAK_RUNS", "2000"),
            ("CODEMODE_SOAK_MAX_GROWTH_MB", "64"),
            ("CODEMODE_SCENARIO_TIMEOUT_S", "600"),
        ],
    );
}

#[test]
fn a_thousand_concurrent_requests_queue_without_growing_the_server() {
    scenario_with(
        "load",
        &[
            ("CODEMODE_LOAD_REQUESTS", "1000"),
            ("CODEMODE_LOAD_MAX_RSS_MB", "300"),
            ("CODEMODE_SCENARIO_TIMEOUT_S", "600"),
        ],
    );
}

#[test]
fn two_upstream_tools_mapping_to_one_sandbox_name_are_a_startup_error_naming_both() {
    let Some(deps) = deps_or_skip("collision") else {
        return;
    };
    for command in ["tools", "sdk", "mcp"] {
        let out = Command::new(env!("CARGO_BIN_EXE_codemode"))
            .env("CODEMODE_TYPES_CACHE", "off")
            .args([
                command,
                "--upstream",
                &fixture_upstream(&deps, "c", "collide"),
            ])
            .stdin(std::process::Stdio::null())
            .output()
            .expect("run codemode");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{command}: {stderr}");
        assert!(
            stderr.contains("`get-user` and `get_user` both map to sandbox name `c.get_user`"),
            "{command}: {stderr}"
        );
    }
}

#[test]
fn codemode_run_calls_upstream_tools_through_the_pipeline() {
    let Some(deps) = deps_or_skip("run_with_upstream") else {
        return;
    };
    let work = tempfile::tempdir().expect("temp dir");
    let memory = format!(
        "memory={}",
        deps.join("node/node_modules/.bin/mcp-server-memory")
            .display()
    );
    let memory_file = format!(
        "memory:MEMORY_FILE_PATH={}",
        work.path().join("m.jsonl").display()
    );
    let program = work.path().join("p.ts");
    std::fs::write(
        &program,
        r#"await tools.memory.create_entities({entities: [{name: "a", entityType: "t", observations: []}]});
const g = await tools.memory.read_graph({});
return g.entities.map((e: {name: string}) => e.name);"#,
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_codemode"))
        .env("CODEMODE_TYPES_CACHE", "off")
        .args([
            "run",
            "--json",
            "--upstream",
            &memory,
            "--upstream-env",
            &memory_file,
        ])
        .arg(&program)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run codemode");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let outcome: serde_json::Value = serde_json::from_str(&stdout).expect("outcome JSON");
    assert_eq!(outcome["value"], serde_json::json!(["a"]), "{outcome}");
    assert_eq!(outcome["stats"]["calls_by_tool"]["memory.read_graph"], 1);
}

//! `--policy`, `--session-log`, `--audit-log`, approvals on the terminal, progress and the
//! summary line, through the `codemode` binary.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use codemode::pipeline::args_digest;
use serde_json::{Value, json};

use crate::cli::{codemode, run_stdin};

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

fn outcome(stdout: &str) -> Value {
    serde_json::from_str(stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

#[test]
fn policy_rules_allow_and_deny_with_reasons() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let policy = write(
        dir.path(),
        "p.toml",
        r#"
        default = "allow"
        [[rule]]
        tools = ["write_file"]
        decision = "deny"
        reason = "no secrets"
        args.path = { glob = "secret*" }
        "#,
    );
    let program = b"await tools.write_file({path: 'ok.txt', content: 'x'}); let e; try { await tools.write_file({path: 'secret.txt', content: 'x'}); } catch (err) { e = [err.code, err.details.by, err.details.reason]; } return e;";
    let (code, stdout, stderr) = run_stdin(
        &[
            "run",
            "-",
            "--json",
            "--root",
            root.to_str().unwrap(),
            "--policy",
            &policy,
        ],
        program,
    );
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert_eq!(
        outcome(&stdout)["value"],
        json!(["DENIED", "policy", "no secrets"])
    );
    assert!(root.join("ok.txt").exists(), "an allowed write happens");
    assert!(
        !root.join("secret.txt").exists(),
        "a denied write must not happen"
    );
}

#[test]
fn without_a_terminal_an_ask_is_denied_with_a_hint() {
    let dir = tempfile::tempdir().unwrap();
    let program = b"try { await tools.shell({command: 'touch ran'}); } catch (e) { return [e.code, e.details.by, e.details.reason]; }";
    let (code, stdout, stderr) = run_stdin(
        &["run", "-", "--json", "--root", dir.path().to_str().unwrap()],
        program,
    );
    assert_eq!(code, 0, "{stdout}{stderr}");
    let value = &outcome(&stdout)["value"];
    assert_eq!(value[0], "DENIED");
    assert_eq!(value[1], "approver");
    let reason = value[2].as_str().unwrap();
    assert!(
        reason.starts_with("no terminal to ask on") && reason.contains("add an allow rule"),
        "{reason}"
    );
    assert!(!dir.path().join("ran").exists());
}

#[test]
fn hidden_tools_are_absent_from_tools_and_sdk_and_unknown_to_programs() {
    let dir = tempfile::tempdir().unwrap();
    let policy = write(
        dir.path(),
        "p.toml",
        "default = \"allow\"\n[visible]\nexclude = [\"shell\", \"write_*\"]\n",
    );
    let root = dir.path().to_str().unwrap();
    let (code, stdout, _) = run_stdin(&["tools", "--root", root, "--policy", &policy], b"");
    assert_eq!(code, 0);
    assert!(stdout.contains("tools.grep"), "{stdout}");
    assert!(
        !stdout.contains("tools.shell") && !stdout.contains("write_file"),
        "{stdout}"
    );
    let (code, stdout, _) = run_stdin(&["sdk", "--root", root, "--policy", &policy], b"");
    assert_eq!(code, 0);
    assert!(
        stdout.contains("grep(") && !stdout.contains("shell("),
        "{stdout}"
    );
    let program =
        b"try { await tools.shell({command: 'touch ran'}); } catch (e) { return e.code; }";
    let (code, stdout, stderr) = run_stdin(
        &["run", "-", "--json", "--root", root, "--policy", &policy],
        program,
    );
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert_eq!(outcome(&stdout)["value"], "UNKNOWN_TOOL");
    assert!(!dir.path().join("ran").exists());
}

#[test]
fn limit_flags_beat_the_policy_which_beats_the_defaults() {
    let dir = tempfile::tempdir().unwrap();
    let policy = write(dir.path(), "p.toml", "[limits]\ntimeout_ms = 200\n");
    let program = b"await new Promise(r => setTimeout(r, 800)); return 1";
    let (code, stdout, _) = run_stdin(&["run", "-", "--json", "--policy", &policy], program);
    assert_eq!(code, 1);
    assert_eq!(
        outcome(&stdout)["status"],
        "timeout",
        "the policy's limit applies"
    );
    let (code, stdout, _) = run_stdin(
        &[
            "run",
            "-",
            "--json",
            "--policy",
            &policy,
            "--timeout-ms",
            "5000",
        ],
        program,
    );
    assert_eq!(code, 0, "the flag beats the policy: {stdout}");
    let (code, _, _) = run_stdin(&["run", "-", "--json"], program);
    assert_eq!(code, 0, "the default deadline (30 s) is long enough");
}

#[test]
fn bad_policy_files_are_input_errors_with_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let bad = write(
        dir.path(),
        "bad.toml",
        "[[rule]]\ntools = [\"grep\"]\ndecision = \"permit\"\n",
    );
    for command in ["run", "tools", "sdk"] {
        let mut args = vec![command];
        if command == "run" {
            args.push("-");
        }
        args.extend(["--policy", &bad]);
        let (code, _, stderr) = run_stdin(&args, b"return 1");
        assert_eq!(code, 2, "{command}: {stderr}");
        assert!(
            stderr.contains(&format!("{bad}:3:12: unknown decision `permit`")),
            "{command}: {stderr}"
        );
    }
    let syntax = write(dir.path(), "syntax.toml", "default = \"ask\"\n[limits\n");
    let (code, _, stderr) = run_stdin(&["tools", "--policy", &syntax], b"");
    assert_eq!(code, 2);
    assert!(stderr.contains(&format!("{syntax}:2:")), "{stderr}");
    let (code, _, stderr) = run_stdin(&["tools", "--policy", "/nope/p.toml"], b"");
    assert_eq!(code, 2);
    assert!(
        stderr.contains("/nope/p.toml: cannot read the policy file"),
        "{stderr}"
    );
}

#[test]
fn a_root_that_is_missing_or_a_file_is_an_input_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "f.txt", "x");
    let (code, _, stderr) = run_stdin(&["run", "-", "--root", &file], b"return 1");
    assert_eq!(code, 2);
    assert!(
        stderr.contains("--root") && stderr.contains("not a directory"),
        "{stderr}"
    );
    let (code, _, stderr) = run_stdin(&["sdk", "--root", "/definitely/not/here"], b"");
    assert_eq!(code, 2);
    assert!(
        stderr.contains("--root") && stderr.contains("/definitely/not/here"),
        "{stderr}"
    );
}

#[test]
fn policy_globs_that_match_no_tool_are_warnings() {
    let dir = tempfile::tempdir().unwrap();
    let policy = write(
        dir.path(),
        "p.toml",
        "default = \"allow\"\n[[rule]]\ntools = [\"grpe\"]\ndecision = \"deny\"\n",
    );
    let (code, _, stderr) = run_stdin(
        &[
            "tools",
            "--root",
            dir.path().to_str().unwrap(),
            "--policy",
            &policy,
        ],
        b"",
    );
    assert_eq!(code, 0, "a warning is not an error");
    assert!(
        stderr.contains("warning:") && stderr.contains("rule tool glob `grpe` matches no tool"),
        "{stderr}"
    );
}

#[test]
fn session_and_audit_logs_record_the_run_and_its_nested_calls() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("a.txt"), "alpha\n").unwrap();
    let session = dir.path().join("session.jsonl");
    let audit = dir.path().join("audit.jsonl");
    let program = "const a = await tools.read_file({path: 'a.txt'});\nconst g = await tools.grep({pattern: 'alp'});\nlet denied;\ntry { await tools.write_file({path: 'b.txt', content: 'b'}); } catch (e) { denied = e.code; }\nreturn {lines: a.total_lines, hits: g.matches.length, denied};";
    let (code, stdout, stderr) = run_stdin(
        &[
            "run",
            "-",
            "--json",
            "--root",
            root.to_str().unwrap(),
            "--session-log",
            session.to_str().unwrap(),
            "--audit-log",
            audit.to_str().unwrap(),
        ],
        program.as_bytes(),
    );
    assert_eq!(code, 0, "{stdout}{stderr}");
    let printed = outcome(&stdout);
    assert_eq!(
        printed["value"],
        json!({"lines": 1, "hits": 1, "denied": "DENIED"})
    );

    // The session log: one durable event, the run_code call, with the program and its outcome.
    let text = std::fs::read_to_string(&session).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 1, "{text}");
    let event = &lines[0];
    assert_eq!(event["event"], "tool/result");
    assert_eq!(event["tool"], "run_code");
    assert_eq!(event["caller"]["kind"], "direct");
    assert_eq!(event["status"], "ok");
    assert_eq!(event["args"]["code"], program);
    assert_eq!(event["value"]["value"], printed["value"]);
    assert_eq!(event["value"]["stats"]["tool_calls"], 3);
    assert!(
        event["content"]
            .as_str()
            .unwrap()
            .contains("\"denied\": \"DENIED\"")
    );

    // The audit log: one record per nested call, digests of the arguments, never values.
    // First the run's plan (digests only), then the calls.
    let text = std::fs::read_to_string(&audit).unwrap();
    let (plans, records): (Vec<Value>, Vec<Value>) = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .partition(|r| r["event"] == "audit_plan");
    assert_eq!(plans.len(), 1, "{text}");
    assert_eq!(plans[0]["run_id"], records[0]["run_id"], "{text}");
    assert!(
        text.lines().next().unwrap().contains("audit_plan"),
        "{text}"
    );
    let tools: Vec<&str> = records
        .iter()
        .map(|r| r["tool"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["read_file", "grep", "write_file"], "{text}");
    assert_eq!(
        records[0]["args_sha256"],
        args_digest(&json!({"path": "a.txt"}))
    );
    assert_eq!(records[0]["caller"]["kind"], "code_mode");
    assert_eq!(records[0]["status"], "ok");
    assert_eq!(records[2]["code"], "DENIED");
    assert!(
        !text.contains("alpha"),
        "values never reach the audit log: {text}"
    );
}

#[test]
fn human_mode_ends_with_the_summary_line_on_stderr() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "alpha\n").unwrap();
    let program =
        b"await tools.read_file({path: 'a.txt'}); await tools.list_dir({path: '.'}); return 'done'";
    let (code, stdout, stderr) = run_stdin(
        &["run", "-", "--root", dir.path().to_str().unwrap()],
        program,
    );
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert_eq!(stdout, "=> \"done\"\n");
    let summary = stderr.lines().last().unwrap_or_default();
    assert!(
        summary.starts_with("[2 tool calls in ")
            && summary.contains(" bytes kept in the sandbox, ")
            && summary.ends_with(" bytes returned]"),
        "{stderr}"
    );
    // Not a terminal: nothing live was drawn.
    assert!(!stderr.contains("calls done"), "{stderr}");
}

#[test]
fn ctrl_c_cancels_the_run_and_keeps_its_output() {
    let mut child = codemode()
        .args(["run", "-", "--json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"console.log('before'); await new Promise(r => setTimeout(r, 60000));")
        .unwrap();
    // Generous: the Ctrl-C handler is installed once the sandbox has started.
    std::thread::sleep(Duration::from_millis(2500));
    // SAFETY: signalling our own child process.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let outcome = outcome(&stdout);
    assert_eq!(outcome["status"], "cancelled");
    assert_eq!(outcome["logs"][0]["text"], "before");
}

/// `codemode ARGS` started on a pseudo-terminal (util-linux `script`), stdin and stdout piped;
/// `None` when `script` is missing.
fn spawn_on_a_terminal(args: &[&str]) -> Option<std::process::Child> {
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("`script` is not installed; skipping the terminal test");
        return None;
    }
    // `exec`: no shell stays between the terminal and codemode. dash (Debian's /bin/sh, which
    // `script` runs when $SHELL is unset, as under CI) would otherwise take the Ctrl-C too and
    // exit 130 whatever codemode answered.
    let mut line = format!("exec {}", shell_quote(env!("CARGO_BIN_EXE_codemode")));
    for a in args {
        line.push(' ');
        line.push_str(&shell_quote(a));
    }
    Some(
        Command::new("script")
            .args(["-qec", &line, "/dev/null"])
            .env("CODEMODE_TYPES_CACHE", "off")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    )
}

/// Runs `codemode ARGS` on a pseudo-terminal, typing `input`.
fn on_a_terminal(args: &[&str], input: &str) -> Option<(i32, String)> {
    let mut child = spawn_on_a_terminal(args)?;
    let mut stdin = child.stdin.take().unwrap();
    // Typed after the prompt is likely up; the terminal buffers it either way.
    std::thread::sleep(Duration::from_millis(300));
    stdin.write_all(input.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    drop(stdin);
    Some((
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    ))
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

#[test]
fn the_terminal_prompt_approves_on_yes_and_refuses_otherwise() {
    let dir = tempfile::tempdir().unwrap();
    let prog = write(
        dir.path(),
        "p.ts",
        "let r; try { await tools.write_file({path: 'w.txt', content: 'x'}); r = 'written'; } catch (e) { r = e.details.reason; } return r;",
    );
    let root = dir.path().to_str().unwrap();
    let Some((code, screen)) = on_a_terminal(&["run", &prog, "--root", root], "y\n") else {
        return;
    };
    assert_eq!(code, 0, "{screen}");
    assert!(
        screen.contains("the program wants to call `write_file`: changes files"),
        "{screen}"
    );
    assert!(screen.contains("args: {\"path\":\"w.txt\""), "{screen}");
    assert!(screen.contains("=> \"written\""), "{screen}");
    assert!(dir.path().join("w.txt").exists());
    std::fs::remove_file(dir.path().join("w.txt")).unwrap();

    let (code, screen) = on_a_terminal(&["run", &prog, "--root", root], "nope\n").unwrap();
    assert_eq!(code, 0, "{screen}");
    assert!(
        screen.contains("=> \"refused at the terminal prompt\""),
        "{screen}"
    );
    assert!(!dir.path().join("w.txt").exists());
}

#[test]
fn program_approval_asks_once_on_the_terminal_with_the_program_and_its_plan() {
    let dir = tempfile::tempdir().unwrap();
    let prog = write(
        dir.path(),
        "p.ts",
        "await tools.write_file({path: 'a.txt', content: 'x'});\nawait tools.write_file({path: 'b.txt', content: 'y'});\nreturn 'written';",
    );
    let root = dir.path().to_str().unwrap();
    let args = ["run", &prog, "--root", root, "--program-approval", "ask"];
    let Some((code, screen)) = on_a_terminal(&args, "y\n") else {
        return;
    };
    assert_eq!(code, 0, "{screen}");
    assert_eq!(
        screen.matches("run this program? [y/N]").count(),
        1,
        "{screen}"
    );
    assert!(
        screen.contains("1 | await tools.write_file({path: 'a.txt', content: 'x'});"),
        "{screen}"
    );
    assert!(
        screen.contains(r#"write_file {"path":"b.txt","content":"y"}  <- asks: changes files"#),
        "{screen}"
    );
    assert!(
        !screen.contains("allow this call?"),
        "no per-call prompt: {screen}"
    );
    assert!(screen.contains("=> \"written\""), "{screen}");
    assert!(dir.path().join("a.txt").exists() && dir.path().join("b.txt").exists());
}

#[test]
fn without_a_terminal_a_program_that_needs_approval_is_refused_before_it_runs() {
    let dir = tempfile::tempdir().unwrap();
    let policy = write(
        dir.path(),
        "p.toml",
        "program_approval = \"ask\"\ndefault = \"allow\"\n[[rule]]\ntools = [\"write_file\"]\ndecision = \"ask\"\n",
    );
    let program = b"await tools.write_file({path: 'w.txt', content: 'x'}); return 1";
    let root = dir.path().to_str().unwrap();
    let (code, stdout, stderr) = run_stdin(
        &["run", "-", "--json", "--root", root, "--policy", &policy],
        program,
    );
    assert_eq!(code, 1, "{stdout}{stderr}");
    let outcome = outcome(&stdout);
    assert_eq!(outcome["status"], "error");
    assert_eq!(outcome["error"]["code"], "DENIED");
    assert_eq!(outcome["error"]["details"]["by"], "approver");
    let reason = outcome["error"]["details"]["reason"].as_str().unwrap();
    assert!(reason.starts_with("no terminal to ask on"), "{reason}");
    assert_eq!(outcome["stats"]["tool_calls"], 0);
    assert!(!dir.path().join("w.txt").exists());

    // The flag beats the policy: off asks per call (and, without a terminal, refuses that call).
    let (code, stdout, stderr) = run_stdin(
        &[
            "run",
            "-",
            "--json",
            "--root",
            root,
            "--policy",
            &policy,
            "--program-approval",
            "off",
        ],
        program,
    );
    assert_eq!(code, 1, "{stdout}{stderr}");
    let outcome = self::outcome(&stdout);
    assert_eq!(outcome["error"]["name"], "ToolError", "{outcome}");
    assert_eq!(outcome["stats"]["tool_calls"], 1);
}

#[test]
fn ctrl_c_at_the_terminal_prompt_cancels_the_run_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let prog = write(
        dir.path(),
        "p.ts",
        "await tools.write_file({path: 'w.txt', content: 'x'}); return 'written';",
    );
    let root = dir.path().to_str().unwrap();
    let Some(mut child) = spawn_on_a_terminal(&["run", &prog, "--root", root]) else {
        return;
    };
    let mut stdin = child.stdin.take().unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    // Ctrl-C on the terminal (the line discipline turns it into SIGINT); never an Enter.
    stdin.write_all(b"\x03").unwrap();
    let typed = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if typed.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            panic!("Ctrl-C at the prompt did not end the run within 10 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    drop(stdin);
    let mut screen = String::new();
    use std::io::Read;
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut screen)
        .unwrap();
    assert_eq!(status.code(), Some(1), "{screen}");
    assert!(screen.contains("allow this call? [y/N]"), "{screen}");
    assert!(screen.contains("[cancelled]"), "{screen}");
    assert!(!dir.path().join("w.txt").exists());
}

#[test]
fn slow_runs_show_live_progress_on_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let policy = write(dir.path(), "p.toml", "default = \"allow\"\n");
    let prog = write(
        dir.path(),
        "p.ts",
        "await tools.shell({command: 'sleep 1'}); return 'slept'",
    );
    let root = dir.path().to_str().unwrap();
    let Some((code, screen)) =
        on_a_terminal(&["run", &prog, "--root", root, "--policy", &policy], "")
    else {
        return;
    };
    assert_eq!(code, 0, "{screen}");
    assert!(screen.contains("calls done; running: shell"), "{screen}");
    assert!(screen.contains("=> \"slept\""), "{screen}");
}

#[test]
fn log_files_that_cannot_be_opened_are_input_errors() {
    for flag in ["--session-log", "--audit-log"] {
        let (code, _, stderr) = run_stdin(&["run", "-", flag, "/nope/dir/log.jsonl"], b"return 1");
        assert_eq!(code, 2, "{flag}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "{flag} /nope/dir/log.jsonl: cannot open for appending"
            )),
            "{stderr}"
        );
    }
}

#[test]
fn records_that_cannot_be_written_are_errors_and_mark_the_outcome() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "hi").unwrap();
    let root = dir.path().to_str().unwrap();
    let program = b"await tools.read_file({path: 'a.txt'}); return 1";
    // The durable record: stderr names the file, the exit is 1, the outcome says why.
    let (code, stdout, stderr) = run_stdin(
        &[
            "run",
            "-",
            "--json",
            "--root",
            root,
            "--session-log",
            "/dev/full",
        ],
        program,
    );
    assert_eq!(code, 1, "{stderr}");
    let outcome: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(outcome["status"], "ok");
    assert!(
        outcome["record_error"]
            .as_str()
            .unwrap()
            .contains("No space left on device"),
        "{outcome}"
    );
    assert!(
        stderr.contains("--session-log /dev/full: 1 record(s) could not be written"),
        "{stderr}"
    );
    let (code, stdout, _) = run_stdin(
        &["run", "-", "--root", root, "--session-log", "/dev/full"],
        program,
    );
    assert_eq!(code, 1);
    assert!(
        stdout.starts_with("[not recorded] the session log could not be written"),
        "{stdout}"
    );
    // An audit record: the same on stderr and in the exit code.
    let (code, _, stderr) = run_stdin(
        &["run", "-", "--root", root, "--audit-log", "/dev/full"],
        program,
    );
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("--audit-log /dev/full: 2 record(s) could not be written"),
        "{stderr}"
    );
}

/// Runs `program` with the built-ins over a fresh root, an allow-all policy and an audit log;
/// returns the root, the outcome and the audit records.
fn run_audited(program: &str, extra: &[&str]) -> (tempfile::TempDir, Value, Vec<Value>) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let policy = write(dir.path(), "p.toml", "default = \"allow\"\n");
    let audit = dir.path().join("audit.jsonl");
    let mut args = vec![
        "run",
        "-",
        "--json",
        "--root",
        root.to_str().unwrap(),
        "--policy",
        &policy,
        "--audit-log",
        audit.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let (_, stdout, stderr) = run_stdin(&args, program.as_bytes());
    let outcome = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}{stderr}"));
    let records = std::fs::read_to_string(&audit)
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|record| record["event"] == "audit")
        .collect();
    (dir, outcome, records)
}

#[test]
fn calls_in_flight_when_the_run_ends_are_audited_and_reported_truthfully() {
    for round in 0..3 {
        let program = "for (let i = 0; i < 20; i++) tools.write_file({ path: 'ff' + i + '.txt', content: 'x' }); return 1;";
        let (dir, outcome, records) = run_audited(program, &[]);
        let root = dir.path().join("root");
        let stats = &outcome["stats"];
        assert_eq!(outcome["status"], "ok", "{outcome}");
        assert_eq!(stats["tool_calls"], 20);
        // Exactly one record per call that reached the pipeline.
        assert_eq!(records.len(), 20, "round {round}: {records:?}");
        let mut seqs: Vec<u64> = records
            .iter()
            .map(|r| r["caller"]["seq"].as_u64().unwrap())
            .collect();
        seqs.sort_unstable();
        assert_eq!(seqs, (1..=20).collect::<Vec<_>>());
        // The file system agrees with every record, and the stats with the records.
        let mut cancelled = 0;
        for record in &records {
            let seq = record["caller"]["seq"].as_u64().unwrap();
            let file = root.join(format!("ff{}.txt", seq - 1));
            match (record["status"].as_str(), record["executed"].as_bool()) {
                (Some("ok"), Some(true)) => {
                    assert!(file.exists(), "recorded as written: {record}")
                }
                (Some("error"), Some(false)) => {
                    assert_eq!(record["code"], "CANCELLED", "{record}");
                    assert!(
                        !file.exists(),
                        "recorded as cancelled but written: {record}"
                    );
                    cancelled += 1;
                }
                _ => panic!("unexpected record {record}"),
            }
        }
        assert_eq!(stats["cancelled_calls"], cancelled, "{outcome}");
        let finished_after = stats["finished_after_end"].as_u64().unwrap();
        let ok = records.iter().filter(|r| r["status"] == "ok").count() as u64;
        assert!(finished_after <= ok, "{outcome}");
    }
}

#[test]
fn a_shell_call_cut_by_the_deadline_is_audited() {
    let (_dir, outcome, records) = run_audited(
        "await tools.shell({ command: 'sleep 30' }); return 1;",
        &["--timeout-ms", "500"],
    );
    assert_eq!(outcome["status"], "timeout", "{outcome}");
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0]["tool"], "shell");
    assert_eq!(records[0]["executed"], true, "{records:?}");
    assert_eq!(outcome["stats"]["finished_after_end"], 1, "{outcome}");
    assert_eq!(outcome["stats"]["cancelled_calls"], 0, "{outcome}");
}

#[test]
fn a_tool_call_from_to_json_of_the_return_value_never_executes() {
    let (dir, outcome, records) = run_audited(
        "return { toJSON() { tools.write_file({ path: 'late.txt', content: 'x' }); return 1; } };",
        &[],
    );
    assert_eq!(outcome["status"], "ok", "{outcome}");
    assert_eq!(outcome["value"], 1);
    assert!(!dir.path().join("root/late.txt").exists());
    assert!(records.is_empty(), "{records:?}");
}

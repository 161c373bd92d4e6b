//! The `codemode run` command: outputs and exit codes of DESIGN.md §8.

use std::io::Write;
use std::process::{Command, Stdio};

/// The binary in a session of its own: no controlling terminal, so an `ask` never prompts
/// (whoever runs the tests) and is refused, as documented.
pub fn codemode() -> Command {
    use std::os::unix::process::CommandExt;
    let mut command = Command::new(env!("CARGO_BIN_EXE_codemode"));
    // Learned output types would otherwise go to (and come from) the user's cache.
    command.env("CODEMODE_TYPES_CACHE", "off");
    // SAFETY: setsid is async-signal-safe and touches no memory of the parent.
    unsafe {
        command.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    command
}

pub fn run_stdin(args: &[&str], stdin: &[u8]) -> (i32, String, String) {
    let mut child = codemode()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The command may exit before reading stdin (e.g. a missing file): ignore a broken pipe.
    let _ = child.stdin.take().unwrap().write_all(stdin);
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn ok_run_prints_console_and_value_and_exits_zero() {
    let (code, stdout, _) = run_stdin(
        &["run", "-"],
        b"console.log('hi'); console.warn('careful'); return {a: 1};",
    );
    assert_eq!(code, 0);
    assert_eq!(stdout, "hi\nwarn: careful\n=> {\n  \"a\": 1\n}\n");
}

#[test]
fn json_output_is_the_run_outcome() {
    let (code, stdout, _) = run_stdin(&["run", "-", "--json"], b"return 6 * 7");
    assert_eq!(code, 0);
    let outcome: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(outcome["version"], 1);
    assert_eq!(outcome["status"], "ok");
    assert_eq!(outcome["value"], 42);
    assert!(
        outcome["logs"].is_array()
            && outcome["contexts"].is_array()
            && outcome["stats"].is_object()
    );
}

#[test]
fn failed_run_exits_one_with_status_line() {
    let (code, stdout, _) = run_stdin(&["run", "-"], b"\nthrow new TypeError('boom')");
    assert_eq!(code, 1);
    assert!(
        stdout.starts_with("[error] TypeError: boom (line 2)"),
        "{stdout}"
    );
}

#[test]
fn timeout_flag_is_honoured() {
    let (code, stdout, _) = run_stdin(
        &["run", "-", "--json", "--timeout-ms", "200"],
        b"while(true){}",
    );
    assert_eq!(code, 1);
    let outcome: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(outcome["status"], "timeout");
}

#[test]
fn heap_flag_is_honoured() {
    let (code, stdout, _) = run_stdin(
        &["run", "-", "--json", "--heap-mb", "32"],
        b"const k = []; for (;;) k.push(new Array(1e5).fill(1.5));",
    );
    assert_eq!(code, 1);
    let outcome: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(outcome["status"], "out_of_memory");
}

#[test]
fn input_errors_exit_two_with_a_clear_message() {
    let (code, _, stderr) = run_stdin(&["run", "/definitely/not/here.ts"], b"");
    assert_eq!(code, 2);
    assert!(stderr.contains("no such file"), "{stderr}");

    let (code, _, stderr) = run_stdin(&["run", "-"], b"  \n ");
    assert_eq!(code, 2);
    assert!(stderr.contains("empty"), "{stderr}");

    let (code, _, stderr) = run_stdin(&["run", "-"], b"const x = 1;\nlet = = 2;");
    assert_eq!(code, 2);
    assert!(stderr.contains("line 2, column"), "{stderr}");

    let (code, _, stderr) = run_stdin(&["run", "-"], b"return '\xff\xfe';");
    assert_eq!(code, 2);
    assert!(stderr.contains("not valid UTF-8"), "{stderr}");

    let big = vec![b' '; 300 * 1024];
    let (code, _, stderr) = run_stdin(&["run", "-"], &big);
    assert_eq!(code, 2);
    assert!(stderr.contains("larger than the limit"), "{stderr}");

    let (code, _, stderr) = run_stdin(&["run", "-", "--timeout-ms", "soon"], b"");
    assert_eq!(code, 2);
    assert!(stderr.contains("--timeout-ms"), "{stderr}");
}

const TOOLS_JSON: &str = r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[
  {"name":"get-user","description":"Fetch a user","inputSchema":{"type":"object","properties":{"id":{"type":"integer"}},"required":["id"]},
   "outputSchema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}},
  {"name":"search","description":"Search things","inputSchema":{"type":"object","properties":{"q":{"type":"string"}}}}]}}"#;

fn tools_file() -> tempfile::NamedTempFile {
    let mut file = tempfile::NamedTempFile::new().unwrap();
    file.write_all(TOOLS_JSON.as_bytes()).unwrap();
    file
}

#[test]
fn tools_lists_sandbox_names_with_source_names() {
    let file = tools_file();
    let (code, stdout, _) = run_stdin(&["tools", "--tools", file.path().to_str().unwrap()], b"");
    assert_eq!(code, 0);
    assert!(
        stdout.contains("tools.get_user") && stdout.contains("(source name: get-user)"),
        "{stdout}"
    );
    assert!(stdout.contains("tools.search"), "{stdout}");
}

#[test]
fn sdk_prints_and_writes_the_declarations() {
    let file = tools_file();
    let (code, stdout, _) = run_stdin(&["sdk", "--tools", file.path().to_str().unwrap()], b"");
    assert_eq!(code, 0);
    assert!(
        stdout.contains("declare const tools") && stdout.contains("get_user("),
        "{stdout}"
    );
    let out = tempfile::NamedTempFile::new().unwrap();
    let (code, _, _) = run_stdin(
        &[
            "sdk",
            "--tools",
            file.path().to_str().unwrap(),
            "--out",
            out.path().to_str().unwrap(),
        ],
        b"",
    );
    assert_eq!(code, 0);
    assert_eq!(std::fs::read_to_string(out.path()).unwrap(), stdout);
}

#[test]
fn run_with_mock_tools_validates_and_answers_samples() {
    let file = tools_file();
    let program = b"const u = await tools.get_user({ id: 1 }); let code; try { await tools.get_user({ id: 'x' }); } catch (e) { code = e.code; } return { name: typeof u.name, code };";
    let (code, stdout, stderr) = run_stdin(
        &[
            "run",
            "-",
            "--json",
            "--tools",
            file.path().to_str().unwrap(),
        ],
        program,
    );
    assert_eq!(code, 0, "{stdout}{stderr}");
    let outcome: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        outcome["value"],
        serde_json::json!({"name": "string", "code": "INVALID_ARGS"})
    );
    assert_eq!(outcome["stats"]["tool_calls"], 2);
}

#[test]
fn bad_tools_files_are_input_errors() {
    let mut bad = tempfile::NamedTempFile::new().unwrap();
    bad.write_all(b"{\"tools\": [ {\"description\": \"no name\"} ]}")
        .unwrap();
    let (code, _, stderr) = run_stdin(&["sdk", "--tools", bad.path().to_str().unwrap()], b"");
    assert_eq!(code, 2);
    assert!(stderr.contains("tool #"), "{stderr}");
    let (code, _, stderr) = run_stdin(&["tools", "--tools", "/nope/tools.json"], b"");
    assert_eq!(code, 2);
    assert!(stderr.contains("no such file"), "{stderr}");
    let mut garbage = tempfile::NamedTempFile::new().unwrap();
    garbage.write_all(b"{ not json").unwrap();
    let (code, _, stderr) = run_stdin(&["sdk", "--tools", garbage.path().to_str().unwrap()], b"");
    assert_eq!(code, 2);
    assert!(stderr.contains("not valid JSON (line 1"), "{stderr}");
}

#[test]
fn run_with_root_reads_and_refuses_writes_by_default() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "alpha\nbeta\n").unwrap();
    let program = b"const r = await tools.read_file({ path: 'notes.txt' }); let code; try { await tools.write_file({ path: 'x.txt', content: 'x' }); } catch (e) { code = [e.code, e.details.by]; } return { lines: r.total_lines, code };";
    let (code, stdout, stderr) = run_stdin(
        &["run", "-", "--json", "--root", dir.path().to_str().unwrap()],
        program,
    );
    assert_eq!(code, 0, "{stdout}{stderr}");
    let outcome: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        outcome["value"],
        serde_json::json!({"lines": 2, "code": ["DENIED", "approver"]})
    );
    assert!(
        !dir.path().join("x.txt").exists(),
        "a refused write must not happen"
    );
}

#[test]
fn a_missing_root_is_an_input_error() {
    let (code, _, stderr) = run_stdin(&["tools", "--root", "/definitely/not/a/dir"], b"");
    assert_eq!(code, 2);
    assert!(stderr.contains("--root"), "{stderr}");
}

#[test]
fn tools_with_root_lists_the_builtins() {
    let dir = tempfile::tempdir().unwrap();
    let (code, stdout, _) = run_stdin(&["tools", "--root", dir.path().to_str().unwrap()], b"");
    assert_eq!(code, 0);
    for name in [
        "read_file",
        "list_dir",
        "glob",
        "grep",
        "write_file",
        "edit_file",
        "shell",
    ] {
        assert!(
            stdout.contains(&format!("tools.{name}")),
            "{name} missing: {stdout}"
        );
    }
}

#[test]
fn programs_leave_nothing_in_the_engine_cache_directory() {
    let home = tempfile::tempdir().unwrap();
    let cache = home.path().join("cache");
    let run = |program: &str| {
        let out = codemode()
            .args(["run", "-"])
            .env("HOME", home.path())
            .env("XDG_CACHE_HOME", &cache)
            .env_remove("V82JSC_NO_BC_CACHE")
            .env_remove("V82JSC_BC_CACHE_DIR")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .and_then(|mut child| {
                child.stdin.take().unwrap().write_all(program.as_bytes())?;
                child.wait_with_output()
            })
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{out:?}");
    };
    run("return 'first program'");
    run("return 'second program'");
    let files: Vec<_> = walk(&cache);
    assert!(files.is_empty(), "the engine cached files: {files:?}");
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .flat_map(|e| {
            let path = e.path();
            if path.is_dir() {
                walk(&path)
            } else {
                vec![path]
            }
        })
        .collect()
}

#[test]
fn a_null_return_is_kept_in_json_and_human_mode() {
    for program in ["return null", "return NaN", "return -Infinity"] {
        let (code, stdout, _) = run_stdin(&["run", "-", "--json"], program.as_bytes());
        assert_eq!(code, 0);
        let outcome: serde_json::Value = serde_json::from_str(&stdout).unwrap();
        assert_eq!(
            outcome.get("value"),
            Some(&serde_json::Value::Null),
            "{program}: {stdout}"
        );
        let (code, stdout, _) = run_stdin(&["run", "-"], program.as_bytes());
        assert_eq!(code, 0);
        assert_eq!(stdout, "=> null\n", "{program}");
    }
    let (_, stdout, _) = run_stdin(&["run", "-"], b"return undefined");
    assert_eq!(stdout, "", "undefined prints nothing");
}

/// Output larger than a pipe's buffer, so the writer is still writing when its reader goes away.
const BIG_OUTPUT_PROGRAM: &[u8] = b"return 'x'.repeat(300000)";

/// `codemode run - --full-output` of [`BIG_OUTPUT_PROGRAM`] (uncut, so more than a pipe
/// holds), writing to `stdout`.
fn run_big_output(stdout: Stdio) -> std::process::Child {
    let mut child = codemode()
        .args(["run", "-", "--full-output"])
        .stdin(Stdio::piped())
        .stdout(stdout)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(BIG_OUTPUT_PROGRAM).unwrap();
    drop(stdin);
    child
}

#[test]
fn a_reader_that_goes_away_ends_the_output_quietly() {
    use std::io::Read;
    let mut child = run_big_output(Stdio::piped());
    // Read the first bytes, then hang up, as `| head -c 10` does.
    let mut first = [0u8; 10];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(&first, b"=> \"xxxxxx");
}

#[test]
fn a_full_disk_is_an_error_naming_stdout() {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let child = run_big_output(full.into());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("cannot write the output to stdout") && stderr.contains("No space left"),
        "{stderr}"
    );
}

#[test]
fn human_output_keeps_the_output_budget_unless_full_output_is_asked() {
    let program =
        b"for (let i = 0; i < 3000; i++) console.log('line ' + i + ' ' + 'x'.repeat(20)); return 1";
    let (code, stdout, _) = run_stdin(&["run", "-"], program);
    assert_eq!(code, 0);
    assert!(
        stdout.len() <= 40_000 + 64,
        "{} bytes printed",
        stdout.len()
    );
    let marker = stdout.lines().last().unwrap();
    assert!(
        marker.starts_with("[... ") && marker.ends_with(" bytes truncated]"),
        "{marker}"
    );
    let (code, full, _) = run_stdin(&["run", "-", "--full-output"], program);
    assert_eq!(code, 0);
    assert!(full.len() > 80_000, "{} bytes printed", full.len());
    assert!(full.ends_with("=> 1\n"), "{}", &full[full.len() - 40..]);
    let dropped: usize = marker
        .trim_start_matches("[... ")
        .trim_end_matches(" bytes truncated]")
        .parse()
        .unwrap();
    assert_eq!(stdout.len() - marker.len() - 1 + dropped, full.len());
}

#[test]
fn a_heap_limit_stop_keeps_engine_noise_off_stderr() {
    // Arrays of doubles: the stop lands while an error's stack is being built, where deno_core
    // printed "Failed to create JsStackFrame ... This is a bug in deno".
    let program = b"const a = []; while (true) a.push(new Array(100000).fill(1.5));";
    for _ in 0..3 {
        let (code, stdout, stderr) = run_stdin(&["run", "-", "--heap-mb", "16"], program);
        assert_eq!(code, 1);
        assert!(stdout.starts_with("[out_of_memory]"), "{stdout}");
        assert_eq!(stderr, "", "engine noise on stderr");
    }
}

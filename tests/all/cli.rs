//! The `codemode run` command: outputs and exit codes of DESIGN.md §8.

use std::io::Write;
use std::process::{Command, Stdio};

fn codemode() -> Command {
    Command::new(env!("CARGO_BIN_EXE_codemode"))
}

fn run_stdin(args: &[&str], stdin: &[u8]) -> (i32, String, String) {
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

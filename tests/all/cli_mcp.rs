//! Startup errors of the source flags (`--upstream`, `--upstream-env`) and of `codemode mcp`:
//! each is a clear message and exit code 2, before anything is served.

use super::cli::codemode;

fn fails_with(args: &[&str], needle: &str) {
    let out = codemode().args(args).output().expect("run codemode");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert!(
        stderr.contains(needle),
        "{args:?}: expected {needle:?} in: {stderr}"
    );
}

#[test]
fn an_upstream_namespace_that_clashes_with_a_builtin_is_a_startup_error() {
    for command in ["tools", "sdk", "mcp", "run"] {
        let mut args = vec![command, "--root", ".", "--upstream", "grep=true"];
        if command == "run" {
            args.push("examples/demo.ts");
        }
        fails_with(&args, "the namespace `grep` clashes with the tool `grep`");
    }
}

#[test]
fn the_same_upstream_namespace_twice_is_a_startup_error() {
    fails_with(
        &["tools", "--upstream", "a=true", "--upstream", "a=false"],
        "the namespace `a` is given twice",
    );
}

#[test]
fn malformed_upstream_flags_are_startup_errors() {
    fails_with(&["tools", "--upstream", "nocommand"], "expected NS=CMD");
    fails_with(
        &["tools", "--upstream", "my-ns=true"],
        "is not a JavaScript identifier",
    );
    fails_with(&["tools", "--upstream", "ns="], "the command is empty");
    fails_with(
        &["tools", "--upstream", "a=true", "--upstream-env", "b:KEY"],
        "no --upstream has the namespace `b`",
    );
}

#[test]
fn unknown_flags_and_a_missing_root_are_startup_errors() {
    fails_with(&["mcp", "--no-such-flag"], "--no-such-flag");
    fails_with(&["mcp", "--root", "/no/such/dir"], "/no/such/dir");
}

#[test]
fn an_upstream_that_cannot_start_fails_sdk_and_tools_unless_allowed() {
    for command in ["sdk", "tools"] {
        let out = codemode()
            .args([command, "--root", ".", "--upstream", "gone=/no/such/server"])
            .output()
            .expect("run codemode");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{command}: {stderr}");
        assert!(
            stderr.contains("1 upstream(s) did not start")
                && stderr.contains("cannot start `/no/such/server`")
                && stderr.contains("--allow-missing-upstreams"),
            "{command}: {stderr}"
        );
        assert!(out.stdout.is_empty(), "{command} printed a partial result");
    }
}

#[test]
fn an_upstream_that_cannot_start_is_a_warning_and_the_other_sources_still_load() {
    let out = codemode()
        .args([
            "tools",
            "--root",
            ".",
            "--upstream",
            "gone=/no/such/server",
            "--allow-missing-upstreams",
        ])
        .output()
        .expect("run codemode");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("upstream `gone`: cannot start `/no/such/server`"),
        "{stderr}"
    );
    assert!(stdout.contains("tools.grep"), "{stdout}");
}

#[test]
fn an_upstream_that_is_not_an_mcp_server_is_reported_with_its_stderr() {
    let out = codemode()
        .args([
            "tools",
            "--upstream-timeout-ms",
            "5000",
            "--upstream",
            "noisy=sh -c 'echo boom >&2; exit 3'",
            "--allow-missing-upstreams",
        ])
        .output()
        .expect("run codemode");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("upstream `noisy`")
            && stderr.contains("handshake")
            && stderr.contains("boom"),
        "{stderr}"
    );
}

#[test]
fn the_discovery_namespace_is_reserved_unless_discovery_is_off() {
    fails_with(
        &["mcp", "--upstream", "catalog=true"],
        "the namespace `catalog` holds the discovery tools",
    );
    fails_with(
        &["mcp", "--discovery", "on", "--upstream", "catalog = true"],
        "pick another namespace, or pass --discovery off",
    );
}

#[test]
fn a_source_tool_named_run_code_is_a_startup_error() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("tools.json");
    std::fs::write(
        &file,
        r#"[{"name": "run-code", "description": "shadows Code Mode", "parameters": {"type": "object"}}]"#,
    )
    .unwrap();
    let file = file.to_str().unwrap();
    for command in ["tools", "sdk", "mcp"] {
        fails_with(
            &[command, "--tools", file],
            "the tool `run-code` maps to `run_code`, the name of the Code Mode tool itself",
        );
    }
}

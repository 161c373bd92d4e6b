//! The binary's observability: `--log-level` / `RUST_LOG` on stderr (stdout untouched),
//! `--otlp-endpoint` exporting the run's spans, and the run id that joins the trace, the
//! session log and the audit log.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Stdio;
use std::sync::mpsc;

use serde_json::Value;

use crate::cli::{codemode, run_stdin};

#[test]
fn the_default_log_is_silent_for_an_ok_run() {
    let (code, stdout, stderr) = run_stdin(&["run", "-"], b"return 6 * 7");
    assert_eq!(code, 0);
    assert_eq!(stdout, "=> 42\n");
    assert_eq!(stderr, "");
}

#[test]
fn log_level_debug_traces_on_stderr_and_leaves_stdout_alone() {
    for args in [
        &["--log-level", "debug", "run", "-"][..],
        &["run", "-", "--log-level", "debug"][..],
    ] {
        let (code, stdout, stderr) = run_stdin(args, b"return 6 * 7");
        assert_eq!(code, 0, "{stderr}");
        assert_eq!(stdout, "=> 42\n", "{args:?}");
        assert!(
            stderr.contains("DEBUG") && stderr.contains("execute_tool run_code"),
            "{args:?}: {stderr}"
        );
    }
}

#[test]
fn rust_log_is_honoured_and_the_flag_beats_it() {
    let run = |rust_log: &str, extra: &[&str]| {
        let mut child = codemode()
            .args(["run", "-"])
            .args(extra)
            .env("RUST_LOG", rust_log)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(b"return 6 * 7")
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        assert_eq!(String::from_utf8_lossy(&out.stdout), "=> 42\n");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    assert!(run("debug", &[]).contains("tool call done"));
    assert_eq!(run("debug", &["--log-level", "warn"]), "");
    assert!(
        run("nonsense=loud", &[]).contains("ignoring RUST_LOG"),
        "a bad RUST_LOG is reported, not fatal"
    );
}

#[test]
fn a_bad_log_level_is_a_usage_error() {
    let (code, stdout, stderr) = run_stdin(&["--log-level", "codemode=loud", "run", "-"], b"1");
    assert_eq!(code, 2, "{stderr}");
    assert_eq!(stdout, "");
    assert!(stderr.contains("--log-level"), "{stderr}");
}

/// A one-thread OTLP/HTTP receiver: every request's path and JSON body, in order.
fn otlp_receiver() -> (String, mpsc::Receiver<(String, Value)>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let (sender, received) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let Some(request) = read_request(&stream) else {
                continue;
            };
            // Passed on before answering: once the exporter has its answer, the test sees the
            // request.
            if sender.send(request).is_err() {
                return;
            }
            let mut stream = stream;
            let _ = stream.write_all(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}",
            );
        }
    });
    (endpoint, received)
}

fn read_request(stream: &TcpStream) -> Option<(String, Value)> {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let path = line.split_whitespace().nth(1)?.to_string();
    let mut length = 0;
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).ok()?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().ok()?;
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some((path, serde_json::from_slice(&body).ok()?))
}

/// One exported span: its ids, name and attributes (values as strings).
#[derive(Debug)]
struct ExportedSpan {
    trace_id: String,
    span_id: String,
    parent_span_id: String,
    name: String,
    attributes: HashMap<String, String>,
}

fn exported_spans(body: &Value) -> Vec<ExportedSpan> {
    let mut spans = Vec::new();
    for resource in body["resourceSpans"].as_array().into_iter().flatten() {
        for scope in resource["scopeSpans"].as_array().into_iter().flatten() {
            for span in scope["spans"].as_array().into_iter().flatten() {
                let attributes = span["attributes"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|kv| {
                        let value = kv["value"]
                            .as_object()
                            .and_then(|v| v.values().next())
                            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
                            .unwrap_or_default();
                        (kv["key"].as_str().unwrap_or_default().to_string(), value)
                    })
                    .collect();
                let text = |key: &str| span[key].as_str().unwrap_or_default().to_string();
                spans.push(ExportedSpan {
                    trace_id: text("traceId"),
                    span_id: text("spanId"),
                    parent_span_id: text("parentSpanId"),
                    name: text("name"),
                    attributes,
                });
            }
        }
    }
    spans
}

fn json_lines(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn otlp_export_carries_the_run_and_its_nested_calls_joined_by_run_id() {
    let (endpoint, received) = otlp_receiver();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("a.txt"), "alpha\n").unwrap();
    let session = dir.path().join("session.jsonl");
    let audit = dir.path().join("audit.jsonl");
    let program = "const d = await tools.list_dir({path: '.'});\nconst a = await tools.read_file({path: 'a.txt'});\nreturn a.total_lines;";
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
            "--otlp-endpoint",
            &endpoint,
        ],
        program.as_bytes(),
    );
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert_eq!(stderr, "", "exporting adds nothing to stderr");
    let printed: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(printed["value"], 1);

    // The command exits only after the exporter has its answers: every request is here.
    let requests: Vec<(String, Value)> = received.try_iter().collect();
    assert!(!requests.is_empty(), "no OTLP request arrived");
    assert!(
        requests.iter().all(|(path, _)| path == "/v1/traces"),
        "{requests:?}"
    );
    let spans: Vec<ExportedSpan> = requests
        .iter()
        .flat_map(|(_, body)| exported_spans(body))
        .collect();
    let one = |name: &str| -> &ExportedSpan {
        let found: Vec<&ExportedSpan> = spans.iter().filter(|s| s.name == name).collect();
        assert_eq!(found.len(), 1, "one {name} span in {spans:#?}");
        found[0]
    };
    let outer = one("execute_tool run_code");
    let run = one("code_mode_run");
    let list = one("execute_tool list_dir");
    let read = one("execute_tool read_file");
    assert!(outer.parent_span_id.is_empty(), "{outer:?}");
    assert_eq!(run.parent_span_id, outer.span_id);
    for call in [list, read] {
        assert_eq!(call.parent_span_id, run.span_id, "{call:?}");
        assert_eq!(call.trace_id, outer.trace_id);
        assert_eq!(call.attributes["gen_ai.operation.name"], "execute_tool");
        assert_eq!(call.attributes["codemode.caller"], "code_mode");
    }
    assert_eq!(list.attributes["gen_ai.tool.name"], "list_dir");
    assert_eq!(read.attributes["gen_ai.tool.name"], "read_file");

    // One run id across the trace, the durable record and the audit records.
    let run_id = run.attributes["codemode.run_id"].clone();
    assert!(run_id.starts_with("r_"), "{run:?}");
    assert_eq!(list.attributes["codemode.run_id"], run_id);
    assert_eq!(read.attributes["codemode.run_id"], run_id);
    let durable = json_lines(&session);
    assert_eq!(durable.len(), 1);
    assert_eq!(durable[0]["tool"], "run_code");
    assert_eq!(durable[0]["run_id"], run_id.as_str());
    let mut records = json_lines(&audit);
    assert_eq!(records.len(), 3);
    // The run's plan comes first, under the same run id.
    let plan = records.remove(0);
    assert_eq!(plan["event"], "audit_plan");
    assert_eq!(plan["run_id"], run_id.as_str(), "{plan}");
    for record in &records {
        assert_eq!(record["run_id"], run_id.as_str(), "{record}");
        assert_eq!(record["caller"]["run_id"], run_id.as_str(), "{record}");
    }
    // The call ids join the audit records to their spans.
    let mut span_calls = [
        list.attributes["gen_ai.tool.call.id"].clone(),
        read.attributes["gen_ai.tool.call.id"].clone(),
    ];
    let mut audit_calls = [
        records[0]["call_id"].as_str().unwrap().to_string(),
        records[1]["call_id"].as_str().unwrap().to_string(),
    ];
    span_calls.sort();
    audit_calls.sort();
    assert_eq!(span_calls, audit_calls);
}

#[test]
fn a_collector_that_is_down_is_a_warning_not_a_failure() {
    // A port nobody listens on: taken, then let go.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let endpoint = format!("http://127.0.0.1:{port}");
    let (code, stdout, stderr) =
        run_stdin(&["run", "-", "--otlp-endpoint", &endpoint], b"return 6 * 7");
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout, "=> 42\n");
    assert_eq!(
        stderr.matches("cannot export spans to").count(),
        1,
        "said once: {stderr}"
    );
}

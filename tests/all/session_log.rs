use std::io::BufRead;
use std::sync::Arc;
use std::time::Duration;

use codemode::pipeline::{CallRequest, SessionLog, SessionLogOptions, replay};
use codemode::{Caller, Pipeline};
use serde_json::json;

use crate::events::search_tool;
use crate::support::registry;

fn lines(path: &std::path::Path) -> usize {
    std::io::BufReader::new(std::fs::File::open(path).unwrap())
        .lines()
        .count()
}

#[tokio::test]
async fn each_direct_result_is_on_disk_before_the_call_returns() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("session.jsonl");
    let log = Arc::new(SessionLog::open(&path, SessionLogOptions::default()).unwrap());
    let p = Pipeline::builder(registry([search_tool()]))
        .session_log(log.clone())
        .build();
    for i in 0..3 {
        let out = p
            .call(CallRequest::new(
                "search",
                json!({"query": format!("q{i}")}),
            ))
            .await;
        assert!(out.is_ok());
        assert_eq!(
            lines(&path),
            i + 1,
            "written before the result was handed back"
        );
    }
    let nested =
        CallRequest::new("search", json!({"query": "n"})).caller(Caller::code_mode("r", 1));
    assert!(p.call(nested).await.is_ok());
    assert_eq!(lines(&path), 3, "nested calls are not durable");
    assert_eq!(log.write_errors(), 0);
}

#[tokio::test]
async fn replay_re_renders_cards_identically() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("session.jsonl");
    let log = Arc::new(SessionLog::open(&path, SessionLogOptions { fsync: true }).unwrap());
    let reg = registry([search_tool()]);
    let p = Pipeline::builder(reg.clone()).session_log(log).build();
    let mut live_cards = Vec::new();
    for q in ["alpha", "beta"] {
        live_cards.push(
            p.call(CallRequest::new("search", json!({"query": q})))
                .await
                .result_card,
        );
    }
    let failed = p
        .call(CallRequest::new("search", json!({"query": 5})))
        .await;
    live_cards.push(failed.result_card);

    let replayed = replay(&path, &reg).unwrap();
    assert!(replayed.warnings.is_empty(), "{:?}", replayed.warnings);
    let cards: Vec<_> = replayed.entries.iter().map(|e| e.card.clone()).collect();
    assert_eq!(cards, live_cards);
    assert!(
        replayed.entries.iter().all(|e| e.card == e.event.card),
        "recorded card equals re-rendered card"
    );
    assert_eq!(
        replayed.entries[2].event.code.as_deref(),
        Some("INVALID_ARGS")
    );
}

#[tokio::test]
async fn a_torn_last_line_is_skipped_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("session.jsonl");
    let log = Arc::new(SessionLog::open(&path, SessionLogOptions::default()).unwrap());
    let reg = registry([search_tool()]);
    let p = Pipeline::builder(reg.clone()).session_log(log).build();
    for q in ["a", "b", "c"] {
        p.call(CallRequest::new("search", json!({"query": q})))
            .await;
    }
    let bytes = std::fs::read(&path).unwrap();
    let last_start = bytes[..bytes.len() - 1]
        .iter()
        .rposition(|b| *b == b'\n')
        .unwrap()
        + 1;
    let cut = last_start + (bytes.len() - last_start) / 2;
    std::fs::write(&path, &bytes[..cut]).unwrap();

    let replayed = replay(&path, &reg).unwrap();
    assert_eq!(replayed.entries.len(), 2);
    assert_eq!(replayed.warnings.len(), 1);
    assert!(
        replayed.warnings[0].contains("line 3") && replayed.warnings[0].contains("torn"),
        "{:?}",
        replayed.warnings
    );
}

#[tokio::test]
async fn a_corrupt_middle_line_is_skipped_and_the_rest_survives() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("session.jsonl");
    let reg = registry([search_tool()]);
    {
        let log = Arc::new(SessionLog::open(&path, SessionLogOptions::default()).unwrap());
        let p = Pipeline::builder(reg.clone()).session_log(log).build();
        p.call(CallRequest::new("search", json!({"query": "a"})))
            .await;
    }
    std::fs::write(
        &path,
        [std::fs::read(&path).unwrap(), b"{not json\n".to_vec()].concat(),
    )
    .unwrap();
    {
        // Reopening appends after the garbage.
        let log = Arc::new(SessionLog::open(&path, SessionLogOptions::default()).unwrap());
        let p = Pipeline::builder(reg.clone()).session_log(log).build();
        p.call(CallRequest::new("search", json!({"query": "b"})))
            .await;
    }
    let replayed = replay(&path, &reg).unwrap();
    assert_eq!(replayed.entries.len(), 2);
    assert!(
        replayed.warnings[0].contains("line 2"),
        "{:?}",
        replayed.warnings
    );
}

const CHILD_ENV: &str = "CODEMODE_TEST_SESSION_LOG";

/// Run by `every_completed_event_survives_a_killed_writer` in a child process: writes until killed.
#[tokio::test]
#[ignore = "helper run in a child process"]
async fn session_log_writer_child() {
    let Ok(path) = std::env::var(CHILD_ENV) else {
        return;
    };
    let log = Arc::new(SessionLog::open(&path, SessionLogOptions::default()).unwrap());
    let p = Pipeline::builder(registry([search_tool()]))
        .session_log(log)
        .build();
    for i in 0.. {
        p.call(CallRequest::new(
            "search",
            json!({"query": format!("query number {i} {}", "x".repeat(i % 500))}),
        ))
        .await;
    }
}

#[test]
fn every_completed_event_survives_a_killed_writer() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("session.jsonl");
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "session_log::session_log_writer_child",
            "--ignored",
            "--nocapture",
        ])
        .env(CHILD_ENV, &path)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0) < 200_000 {
        assert!(
            std::time::Instant::now() < deadline,
            "child wrote too little"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap(); // SIGKILL: no destructors, no flush
    child.wait().unwrap();
    let replayed = replay(&path, &registry([search_tool()])).unwrap();
    assert!(replayed.entries.len() > 100);
    assert!(
        replayed.warnings.iter().all(|w| w.contains("torn")),
        "{:?}",
        replayed.warnings
    );
    assert!(replayed.warnings.len() <= 1);
    for (i, e) in replayed.entries.iter().enumerate() {
        assert!(
            e.event.args["query"]
                .as_str()
                .unwrap()
                .starts_with(&format!("query number {i} "))
        );
        assert_eq!(e.card, e.event.card);
    }
}

#[tokio::test]
async fn a_durable_record_that_cannot_be_written_is_in_the_calls_outcome() {
    let log = std::sync::Arc::new(
        codemode::pipeline::SessionLog::open("/dev/full", Default::default()).unwrap(),
    );
    let p = codemode::Pipeline::builder(crate::support::registry([crate::support::echo_tool(
        "echo",
    )]))
    .session_log(log.clone())
    .build();
    let out = p
        .call(codemode::pipeline::CallRequest::new(
            "echo",
            serde_json::json!({"text": "x"}),
        ))
        .await;
    assert!(out.is_ok());
    let why = out.durable_error.expect("the failure is reported");
    assert!(why.contains("No space left on device"), "{why}");
    assert_eq!(log.write_errors(), 1);
}

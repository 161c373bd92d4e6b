//! `codemode bench --live` against a scripted OpenAI-compatible server: a tiny HTTP/1.1 server
//! on 127.0.0.1 that answers each request with the next step of its script (a model's tool
//! calls, a final answer, an API error, a hang) and records what the client sent. The client
//! is the real one (reqwest over TCP); nothing is mocked.

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use codemode::bench::{BenchReport, LiveOptions, Mode, ModeReport, Scenario, live_all};

// ---------------------------------------------------------------------------------------------
// The scripted server
// ---------------------------------------------------------------------------------------------

/// One answer of the server.
struct Step {
    status: u16,
    body: String,
    delay: Duration,
    headers: Vec<(String, String)>,
}

impl Step {
    fn json(status: u16, body: Value) -> Step {
        Step {
            status,
            body: body.to_string(),
            delay: Duration::ZERO,
            headers: Vec::new(),
        }
    }

    fn raw(status: u16, body: &str) -> Step {
        Step {
            status,
            body: body.to_string(),
            delay: Duration::ZERO,
            headers: Vec::new(),
        }
    }

    fn header(mut self, name: &str, value: &str) -> Step {
        self.headers.push((name.into(), value.into()));
        self
    }

    fn after(mut self, delay: Duration) -> Step {
        self.delay = delay;
        self
    }
}

/// What the client sent.
#[derive(Clone, Debug)]
struct Received {
    request_line: String,
    authorization: Option<String>,
    body: Value,
}

impl Received {
    fn messages(&self) -> &Vec<Value> {
        self.body["messages"].as_array().expect("messages")
    }

    fn tool_names(&self) -> Vec<String> {
        self.body["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap().to_string())
            .collect()
    }
}

#[derive(Default)]
struct State {
    script: VecDeque<Step>,
    received: Vec<Received>,
}

/// The server: each connection is served on a thread of its own, one request per connection.
struct Scripted {
    port: u16,
    state: Arc<Mutex<State>>,
}

impl Scripted {
    fn start(script: Vec<Step>) -> Scripted {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let state = Arc::new(Mutex::new(State {
            script: script.into(),
            received: Vec::new(),
        }));
        let shared = state.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let state = shared.clone();
                std::thread::spawn(move || serve(stream, &state));
            }
        });
        Scripted { port, state }
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    fn received(&self) -> Vec<Received> {
        self.state.lock().unwrap().received.clone()
    }

    fn left(&self) -> usize {
        self.state.lock().unwrap().script.len()
    }
}

fn serve(mut stream: TcpStream, state: &Mutex<State>) {
    let mut data = Vec::new();
    let mut buf = [0u8; 8192];
    let head_end = loop {
        if let Some(i) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => data.extend_from_slice(&buf[..n]),
        }
    };
    let head = String::from_utf8_lossy(&data[..head_end]).to_string();
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or_default().to_string();
    let mut length = 0usize;
    let mut authorization = None;
    for line in lines {
        if let Some((name, value)) = line.split_once(':') {
            match name.trim().to_ascii_lowercase().as_str() {
                "content-length" => length = value.trim().parse().unwrap_or(0),
                "authorization" => authorization = Some(value.trim().to_string()),
                _ => {}
            }
        }
    }
    let mut body = data[head_end + 4..].to_vec();
    while body.len() < length {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => body.extend_from_slice(&buf[..n]),
        }
    }
    let step = {
        let mut state = state.lock().unwrap();
        state.received.push(Received {
            request_line,
            authorization,
            body: serde_json::from_slice(&body).unwrap_or(Value::Null),
        });
        state
            .script
            .pop_front()
            .unwrap_or_else(|| Step::raw(500, "the script is exhausted"))
    };
    std::thread::sleep(step.delay);
    let mut response = format!(
        "HTTP/1.1 {} Scripted\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        step.status,
        step.body.len()
    );
    for (name, value) in &step.headers {
        response.push_str(&format!("{name}: {value}\r\n"));
    }
    response.push_str("\r\n");
    response.push_str(&step.body);
    let _ = stream.write_all(response.as_bytes());
    let _ = stream.flush();
}

// ---------------------------------------------------------------------------------------------
// What the scripted model says
// ---------------------------------------------------------------------------------------------

fn completion(message: Value, finish: &str, usage: (u64, u64)) -> Step {
    Step::json(
        200,
        json!({
            "id": "chatcmpl-scripted",
            "object": "chat.completion",
            "model": "scripted",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": usage.0, "completion_tokens": usage.1,
                      "total_tokens": usage.0 + usage.1},
        }),
    )
}

/// Tool calls: (id, function name, the arguments' JSON text).
fn calls(calls: &[(&str, &str, &str)], usage: (u64, u64)) -> Step {
    let calls: Vec<Value> = calls
        .iter()
        .map(|(id, name, args)| {
            json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}})
        })
        .collect();
    completion(
        json!({"role": "assistant", "content": null, "tool_calls": calls}),
        "tool_calls",
        usage,
    )
}

fn run_code(id: &str, code: &str, usage: (u64, u64)) -> Step {
    calls(
        &[(id, "run_code", &json!({ "code": code }).to_string())],
        usage,
    )
}

fn answer(text: &str, usage: (u64, u64)) -> Step {
    completion(json!({"role": "assistant", "content": text}), "stop", usage)
}

// ---------------------------------------------------------------------------------------------
// The scenario and the runs
// ---------------------------------------------------------------------------------------------

const PARIS: &str = r#"{"temp":21,"sky":"sunny"}"#;
const OSLO: &str = r#"{"temp":4,"sky":"snow"}"#;
const RIGHT: &str = "Paris: 21 degrees, sunny. Oslo: 4 degrees, snow.";

fn scenario_json() -> Value {
    json!({
        "name": "weather",
        "description": "two cities' weather",
        "task": "What is the temperature in Paris and in Oslo?",
        "tools": [{
            "name": "get_weather",
            "description": "The weather in a city.",
            "inputSchema": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
                "additionalProperties": false
            },
            "fixture": {"responses": [
                {"args": {"city": "Paris"}, "result": serde_json::from_str::<Value>(PARIS).unwrap()},
                {"args": {"city": "Oslo"}, "result": serde_json::from_str::<Value>(OSLO).unwrap()}
            ]}
        }],
        "program": [
            "const [p, o] = await Promise.all([tools.get_weather({city: 'Paris'}), tools.get_weather({city: 'Oslo'})]);",
            "return {paris: p.temp, oslo: o.temp};"
        ],
        "expected": {"paris": 21, "oslo": 4},
        "answer": RIGHT,
        "answer_contains": ["Paris: 21", "Oslo: 4"]
    })
}

/// The scenario, written into `dir` and loaded as a user's file would be.
fn scenario_file(dir: &tempfile::TempDir) -> PathBuf {
    let path = dir.path().join("weather.json");
    std::fs::write(
        &path,
        serde_json::to_string_pretty(&scenario_json()).unwrap(),
    )
    .unwrap();
    path
}

fn options(server: &Scripted, modes: &[Mode]) -> LiveOptions {
    LiveOptions {
        endpoint: server.endpoint(),
        model: "scripted".into(),
        api_key: None,
        repeat: 1,
        max_turns: 8,
        request_timeout: Duration::from_secs(3),
        modes: modes.to_vec(),
    }
}

async fn live(options: &LiveOptions) -> BenchReport {
    let dir = tempfile::tempdir().unwrap();
    let scenario = Scenario::load(&scenario_file(&dir)).unwrap();
    live_all(&[scenario], crate::common::sandbox(), options, |_| {}).await
}

fn only(report: &BenchReport, mode: Mode) -> &ModeReport {
    assert_eq!(report.scenarios.len(), 1, "{}", report.to_json());
    let s = &report.scenarios[0];
    assert_eq!(s.error, None, "{}", report.to_json());
    s.mode(mode).expect("the mode ran")
}

fn ended(m: &ModeReport) -> &str {
    &m.live.as_ref().expect("live details").ended
}

fn tool_message<'a>(request: &'a Received, id: &str) -> &'a Value {
    request
        .messages()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == id)
        .unwrap_or_else(|| panic!("no tool message for {id} in {:#}", request.body))
}

fn content(message: &Value) -> &str {
    message["content"].as_str().expect("string content")
}

// ---------------------------------------------------------------------------------------------
// The model's side: tools, programs, answers
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn direct_mode_runs_parallel_calls_and_sends_their_results_back() {
    let server = Scripted::start(vec![
        calls(
            &[
                ("c1", "get_weather", r#"{"city":"Paris"}"#),
                ("c2", "get_weather", r#"{"city":"Oslo"}"#),
            ],
            (100, 20),
        ),
        answer(RIGHT, (150, 10)),
    ]);
    let mut options = options(&server, &[Mode::Direct]);
    options.api_key = Some("sk-scripted".into());
    let report = live(&options).await;
    assert_eq!(report.kind, "live");
    assert_eq!(report.model.as_deref(), Some("scripted"));
    let m = only(&report, Mode::Direct);
    assert!(m.correct, "{:?}", m.problems);
    assert!(m.problems.is_empty(), "{:?}", m.problems);
    assert_eq!(ended(m), "answer");
    let live = m.live.as_ref().unwrap();
    assert_eq!(live.answer.as_deref(), Some(RIGHT));
    assert!(live.programs.is_empty());
    assert!(live.wall_ms >= m.model_ms);
    assert_eq!(m.turns, 2);
    assert_eq!(m.tool_calls, 2);
    assert_eq!((m.input_tokens, m.output_tokens), (250, 30));
    assert_eq!(m.peak_context_tokens, 150);
    assert_eq!(
        m.turn_tokens
            .iter()
            .map(|t| (t.input, t.output))
            .collect::<Vec<_>>(),
        vec![(100, 20), (150, 10)]
    );
    assert!(m.definition_tokens > 0);

    let received = server.received();
    assert_eq!(received.len(), 2);
    let first = &received[0];
    assert_eq!(first.request_line, "POST /v1/chat/completions HTTP/1.1");
    assert_eq!(first.authorization.as_deref(), Some("Bearer sk-scripted"));
    assert_eq!(first.body["model"], "scripted");
    assert_eq!(first.body["tool_choice"], "auto");
    assert_eq!(first.tool_names(), vec!["get_weather"]);
    let roles: Vec<&str> = first
        .messages()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, vec!["system", "user"]);
    assert_eq!(
        first.messages()[1]["content"],
        "What is the temperature in Paris and in Oslo?"
    );

    // The second request carries the model's calls and the fixture's answers, by call id.
    let second = &received[1];
    let assistant = &second.messages()[2];
    assert_eq!(assistant["role"], "assistant");
    assert_eq!(assistant["tool_calls"][0]["id"], "c1");
    assert_eq!(
        assistant["tool_calls"][1]["function"]["name"],
        "get_weather"
    );
    let paris: Value = serde_json::from_str(content(tool_message(second, "c1"))).unwrap();
    let oslo: Value = serde_json::from_str(content(tool_message(second, "c2"))).unwrap();
    assert_eq!(paris, serde_json::from_str::<Value>(PARIS).unwrap());
    assert_eq!(oslo, serde_json::from_str::<Value>(OSLO).unwrap());
    assert_eq!(
        m.bytes_to_model as usize,
        content(tool_message(second, "c1")).len() + content(tool_message(second, "c2")).len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn direct_mode_answers_a_models_bad_calls_with_clear_tool_errors() {
    let server = Scripted::start(vec![
        calls(
            &[
                ("u", "get_wether", r#"{"city":"Paris"}"#),
                ("j", "get_weather", r#"{"city": Paris"#),
                ("v", "get_weather", r#"{"town":"Paris"}"#),
            ],
            (10, 5),
        ),
        answer(RIGHT, (20, 5)),
    ]);
    let report = live(&options(&server, &[Mode::Direct])).await;
    let m = only(&report, Mode::Direct);
    assert!(m.correct, "{:?}", m.problems);
    // Only the call that reached a tool went through the pipeline.
    assert_eq!(m.tool_calls, 1);
    let second = &server.received()[1];
    let unknown = content(tool_message(second, "u"));
    assert!(
        unknown.contains("no tool named `get_wether`") && unknown.contains("get_weather"),
        "{unknown}"
    );
    let bad_json = content(tool_message(second, "j"));
    assert!(bad_json.contains("not valid JSON"), "{bad_json}");
    let invalid = content(tool_message(second, "v"));
    assert!(
        invalid.contains("city") || invalid.contains("town"),
        "{invalid}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn code_mode_a_failing_program_is_seen_by_the_model_and_retried() {
    let broken = "const w = await tools.get_wether({city: 'Paris'});\nreturn w;";
    let fixed = "const [p, o] = await Promise.all([tools.get_weather({city: 'Paris'}), tools.get_weather({city: 'Oslo'})]);\nreturn {paris: p.temp, oslo: o.temp};";
    let server = Scripted::start(vec![
        run_code("r1", broken, (300, 40)),
        run_code("r2", fixed, (400, 50)),
        answer(RIGHT, (500, 15)),
    ]);
    let report = live(&options(&server, &[Mode::Code])).await;
    let m = only(&report, Mode::Code);
    assert!(m.correct, "{:?}", m.problems);
    assert_eq!(ended(m), "answer");
    assert_eq!(m.turns, 3);
    assert_eq!((m.input_tokens, m.output_tokens), (1200, 105));
    assert_eq!(m.peak_context_tokens, 500);
    // Nested calls: the broken program's call of `get_wether` reached the pipeline (and
    // failed there), then the fixed program's two.
    assert_eq!(m.tool_calls, 3);
    assert!(m.bytes_kept_in_sandbox > 0);
    let programs = &m.live.as_ref().unwrap().programs;
    assert_eq!(programs.len(), 2);
    assert_eq!(programs[0].code, broken);
    assert_eq!(programs[0].status, "error");
    let error = programs[0].error.as_deref().unwrap();
    assert!(error.contains("get_wether"), "{error}");
    assert_eq!(programs[1].code, fixed);
    assert_eq!(programs[1].status, "ok");
    assert_eq!(programs[1].error, None);

    let received = server.received();
    assert_eq!(received.len(), 3);
    // Code mode offers `run_code` alone, its description carrying the SDK.
    assert_eq!(received[0].tool_names(), vec!["run_code"]);
    let description = received[0].body["tools"][0]["function"]["description"]
        .as_str()
        .unwrap();
    assert!(description.contains("get_weather"), "{description}");
    assert!(received[0].body.get("parallel_tool_calls").is_none());
    // The model read the failure, then the fixed program's value.
    let failure = content(tool_message(&received[1], "r1"));
    assert!(failure.contains("get_wether"), "{failure}");
    let success = content(tool_message(&received[2], "r2"));
    assert!(success.contains("21") && success.contains('4'), "{success}");
    assert_eq!(m.bytes_to_model as usize, failure.len() + success.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_that_keeps_calling_tools_is_cut_off_at_the_turn_cap() {
    let call = || calls(&[("c", "get_weather", r#"{"city":"Paris"}"#)], (10, 1));
    let server = Scripted::start(vec![call(), call(), call(), call(), call()]);
    let mut options = options(&server, &[Mode::Direct]);
    options.max_turns = 3;
    let report = live(&options).await;
    let m = only(&report, Mode::Direct);
    assert_eq!(ended(m), "turn_cap");
    assert!(!m.correct);
    assert_eq!(m.turns, 3);
    assert_eq!(m.tool_calls, 3);
    assert_eq!(m.input_tokens, 30);
    assert_eq!(m.live.as_ref().unwrap().answer, None);
    assert!(m.problems[0].contains("after 3 turns"), "{:?}", m.problems);
    assert_eq!(server.received().len(), 3);
    assert_eq!(server.left(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_answer_is_not_correct_and_the_missing_strings_are_named() {
    let server = Scripted::start(vec![answer("Paris: 21 degrees. Oslo: cold.", (10, 5))]);
    let report = live(&options(&server, &[Mode::Direct])).await;
    let m = only(&report, Mode::Direct);
    assert_eq!(ended(m), "answer");
    assert!(!m.correct);
    assert_eq!(m.problems.len(), 1, "{:?}", m.problems);
    assert!(m.problems[0].contains("\"Oslo: 4\""), "{:?}", m.problems);
    assert!(!m.problems[0].contains("\"Paris: 21\""), "{:?}", m.problems);
    assert!(!report.all_correct());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeats_are_reported_one_by_one_and_totals_add_up() {
    let server = Scripted::start(vec![answer(RIGHT, (10, 5)), answer("no idea", (11, 6))]);
    let mut options = options(&server, &[Mode::Direct]);
    options.repeat = 2;
    let dir = tempfile::tempdir().unwrap();
    let scenario = Scenario::load(&scenario_file(&dir)).unwrap();
    let mut heard = Vec::new();
    let report = live_all(&[scenario], crate::common::sandbox(), &options, |s| {
        heard.push(s.name.clone())
    })
    .await;
    assert_eq!(heard, vec!["weather #1", "weather #2"]);
    let names: Vec<&str> = report.scenarios.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, vec!["weather #1", "weather #2"]);
    let totals = report.totals(Mode::Direct).unwrap();
    assert_eq!((totals.scenarios, totals.correct), (2, 1));
    assert_eq!((totals.input_tokens, totals.output_tokens), (21, 11));
}

// ---------------------------------------------------------------------------------------------
// The API's side: errors, retries, timeouts
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_500_then_a_reply_is_retried_and_succeeds() {
    let server = Scripted::start(vec![
        Step::json(500, json!({"error": {"message": "overloaded"}})),
        answer(RIGHT, (10, 5)),
    ]);
    let report = live(&options(&server, &[Mode::Direct])).await;
    let m = only(&report, Mode::Direct);
    assert_eq!(ended(m), "answer");
    assert!(m.correct, "{:?}", m.problems);
    assert_eq!(m.turns, 1);
    assert_eq!(server.received().len(), 2);
    assert_eq!(server.received()[0].body, server.received()[1].body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_429_is_retried_after_its_retry_after() {
    let server = Scripted::start(vec![
        Step::json(429, json!({"error": {"message": "slow down"}})).header("Retry-After", "0"),
        Step::json(429, json!({"error": {"message": "slow down"}})).header("Retry-After", "0"),
        answer(RIGHT, (10, 5)),
    ]);
    let started = Instant::now();
    let report = live(&options(&server, &[Mode::Direct])).await;
    let m = only(&report, Mode::Direct);
    assert_eq!(ended(m), "answer");
    assert!(m.correct);
    assert_eq!(server.received().len(), 3);
    // Retry-After: 0 is honoured instead of the backoff.
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_persistent_500_ends_the_loop_and_keeps_what_was_measured() {
    let fail = || Step::json(500, json!({"error": {"message": "the GPU fell over"}}));
    let server = Scripted::start(vec![
        // Direct: one turn of calls, then the API fails for good.
        calls(
            &[
                ("c1", "get_weather", r#"{"city":"Paris"}"#),
                ("c2", "get_weather", r#"{"city":"Oslo"}"#),
            ],
            (100, 20),
        ),
        fail(),
        fail(),
        fail(),
        // Code: one program, then the same.
        run_code(
            "r1",
            "return await tools.get_weather({city: 'Paris'});",
            (200, 30),
        ),
        fail(),
        fail(),
        fail(),
    ]);
    let report = live(&options(&server, &[Mode::Direct, Mode::Code])).await;
    assert_eq!(server.received().len(), 8);
    assert_eq!(server.left(), 0);
    for (mode, input, output) in [(Mode::Direct, 100, 20), (Mode::Code, 200, 30)] {
        let m = only(&report, mode);
        let ended = ended(m);
        assert!(ended.starts_with("error: "), "{ended}");
        assert!(ended.contains("HTTP 500"), "{ended}");
        assert!(ended.contains("the GPU fell over"), "{ended}");
        assert!(ended.contains("after 3 attempts"), "{ended}");
        assert!(ended.contains("/v1/chat/completions"), "{ended}");
        assert!(!m.correct);
        assert!(m.problems[0].contains("HTTP 500"), "{:?}", m.problems);
        assert_eq!(m.turns, 1);
        assert_eq!((m.input_tokens, m.output_tokens), (input, output));
        assert_eq!(m.turn_tokens.len(), 1);
        assert!(m.bytes_to_model > 0);
    }
    assert_eq!(only(&report, Mode::Direct).tool_calls, 2);
    let code = only(&report, Mode::Code);
    assert_eq!(code.tool_calls, 1);
    let programs = &code.live.as_ref().unwrap().programs;
    assert_eq!(programs.len(), 1);
    assert_eq!(programs[0].status, "ok");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_request_times_out_is_retried_and_then_named() {
    let hang = || answer(RIGHT, (1, 1)).after(Duration::from_millis(1500));
    let server = Scripted::start(vec![
        // Direct: one hang, then a prompt reply.
        hang(),
        answer(RIGHT, (10, 5)),
        // Code: hangs on every attempt.
        hang(),
        hang(),
        hang(),
    ]);
    let mut options = options(&server, &[Mode::Direct, Mode::Code]);
    options.request_timeout = Duration::from_millis(300);
    let started = Instant::now();
    let report = live(&options).await;
    assert!(started.elapsed() < Duration::from_secs(4));
    let direct = only(&report, Mode::Direct);
    assert_eq!(ended(direct), "answer");
    assert!(direct.correct);
    assert_eq!((direct.input_tokens, direct.output_tokens), (10, 5));
    let code = only(&report, Mode::Code);
    let ended = ended(code);
    assert!(ended.starts_with("error: timed out"), "{ended}");
    assert!(ended.contains("0.3 s"), "{ended}");
    assert!(ended.contains("after 3 attempts"), "{ended}");
    assert!(ended.contains("--request-timeout-s"), "{ended}");
    assert_eq!(code.turns, 0);
    assert_eq!(server.received().len(), 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_that_is_not_json_is_a_clear_error_and_not_retried() {
    let server = Scripted::start(vec![Step::raw(200, "{\"choices\": [oops")]);
    let report = live(&options(&server, &[Mode::Direct])).await;
    let m = only(&report, Mode::Direct);
    let ended = ended(m);
    assert!(ended.starts_with("error: "), "{ended}");
    assert!(ended.contains("not a chat completion"), "{ended}");
    assert!(ended.contains("not JSON"), "{ended}");
    assert!(ended.contains("{\"choices\": [oops"), "{ended}");
    assert_eq!(server.received().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_401_is_not_retried_and_carries_the_apis_message() {
    let server = Scripted::start(vec![Step::json(
        401,
        json!({"error": {"message": "Incorrect API key provided: sk-wr***", "type": "invalid_request_error"}}),
    )]);
    let mut options = options(&server, &[Mode::Direct]);
    options.api_key = Some("sk-wrong".into());
    let report = live(&options).await;
    let m = only(&report, Mode::Direct);
    let ended = ended(m);
    assert!(ended.contains("HTTP 401"), "{ended}");
    assert!(ended.contains("Incorrect API key provided"), "{ended}");
    assert!(ended.contains("--api-key-env"), "{ended}");
    assert!(!ended.contains("attempts"), "{ended}");
    assert_eq!(m.turns, 0);
    assert_eq!(server.received().len(), 1);
    assert_eq!(
        server.received()[0].authorization.as_deref(),
        Some("Bearer sk-wrong")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endpoint_nobody_listens_on_is_named() {
    // A port that was just free: connecting is refused.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let server = Scripted::start(Vec::new());
    let mut options = options(&server, &[Mode::Direct]);
    options.endpoint = format!("http://127.0.0.1:{port}/v1/");
    let report = live(&options).await;
    let ended = ended(only(&report, Mode::Direct));
    assert!(
        ended.contains(&format!(
            "cannot connect to http://127.0.0.1:{port}/v1/chat/completions"
        )),
        "{ended}"
    );
    assert!(ended.contains("after 3 attempts"), "{ended}");
}

// ---------------------------------------------------------------------------------------------
// The binary
// ---------------------------------------------------------------------------------------------

#[test]
fn the_cli_runs_live_and_prints_the_report() {
    let server = Scripted::start(vec![
        calls(&[("c1", "get_weather", r#"{"city":"Paris"}"#)], (50, 5)),
        answer(RIGHT, (60, 6)),
        run_code(
            "r1",
            "const [p, o] = await Promise.all([tools.get_weather({city: 'Paris'}), tools.get_weather({city: 'Oslo'})]);\nreturn {paris: p.temp, oslo: o.temp};",
            (70, 7),
        ),
        answer(RIGHT, (80, 8)),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let file = scenario_file(&dir);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_codemode"))
        .arg("bench")
        .arg(&file)
        .args(["--live", "--endpoint", &server.endpoint()])
        .args(["--model", "scripted", "--json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["kind"], "live");
    assert_eq!(report["model"], "scripted");
    let modes = report["scenarios"][0]["modes"].as_array().unwrap();
    let names: Vec<&str> = modes.iter().map(|m| m["mode"].as_str().unwrap()).collect();
    assert_eq!(names, vec!["direct", "code"]);
    for m in modes {
        assert_eq!(m["live"]["ended"], "answer", "{m:#}");
        assert_eq!(m["live"]["answer"], RIGHT);
        assert_eq!(m["correct"], true);
        assert_eq!(m["turns"], 2);
    }
    assert_eq!(modes[0]["input_tokens"], 110);
    assert_eq!(modes[1]["input_tokens"], 150);
    assert_eq!(modes[1]["live"]["programs"][0]["status"], "ok");
    assert_eq!(server.received().len(), 4);
}

#[test]
fn the_cli_runs_the_modes_it_is_given_discovery_included() {
    let server = Scripted::start(vec![
        run_code(
            "r1",
            "const found = await tools.catalog.search({query: 'weather'});\nconst p = await tools.get_weather({city: 'Paris'});\nconst o = await tools.get_weather({city: 'Oslo'});\nreturn {found: found.tools.length, paris: p.temp, oslo: o.temp};",
            (70, 7),
        ),
        answer(RIGHT, (80, 8)),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let file = scenario_file(&dir);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_codemode"))
        .arg("bench")
        .arg(&file)
        .args(["--live", "--endpoint", &server.endpoint()])
        .args(["--model", "scripted", "--modes", "discovery", "--json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let modes = report["scenarios"][0]["modes"].as_array().unwrap();
    assert_eq!(modes.len(), 1);
    assert_eq!(modes[0]["mode"], "discovery");
    assert_eq!(modes[0]["correct"], true, "{:#}", modes[0]);
    // The model was offered `run_code` whose description shows the discovery tools.
    let request = &server.received()[0];
    let description = request.body["tools"][0]["function"]["description"]
        .as_str()
        .unwrap();
    assert!(description.contains("catalog.search"), "{description}");
    assert_eq!(modes[0]["live"]["programs"][0]["status"], "ok");
}

//! Learned output types (issue 13, part 1): results of tools without an output schema become
//! named SDK types, widen as results differ, persist in a cache file that holds no value, and
//! never fail a call.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use codemode::harness::sdk_with_types;
use codemode::learned::{ToolKey, TypeStore};
use codemode::{Harness, ToolDefinition, ToolFailure, ToolRegistry};
use serde_json::{Value, json};

use crate::common::sandbox;
use crate::support::registry;

/// `list_users`, declaring no output schema: each call answers the next of `answers` (the last
/// one again when they run out). An answer `{"fail": ...}` fails the call.
fn users_tool(answers: Vec<Value>) -> ToolDefinition {
    let next = Arc::new(AtomicUsize::new(0));
    ToolDefinition::builder("list_users")
        .description("Lists users.")
        .parameters(json!({"type": "object", "properties": {"team": {"type": "string"}}}))
        .execute(move |_args: Value, _exec| {
            let i = next.fetch_add(1, Ordering::SeqCst).min(answers.len() - 1);
            let answer = answers[i].clone();
            async move {
                match answer.get("fail") {
                    Some(reason) => Err(ToolFailure::new(reason.to_string())),
                    None => Ok(answer),
                }
            }
        })
        .build()
        .unwrap()
}

fn harness(tools: ToolRegistry, store: &TypeStore) -> Harness {
    Harness::builder()
        .sandbox(sandbox().clone())
        .learn_types(store.clone())
        .build(tools)
        .unwrap()
}

async fn run_ok(harness: &Harness, code: &str) -> Value {
    let outcome = harness.run(code).await.unwrap();
    assert!(outcome.is_ok(), "{}", outcome.to_json());
    outcome.value_json().unwrap_or(Value::Null)
}

const THREE_CALLS: &str = "let n = 0; for (const team of ['a', 'b', 'c']) { n += (await tools.list_users({team})).users.length } return n";

fn user_pages() -> Vec<Value> {
    vec![
        json!({"users": [{"id": 7, "name": "Ada", "email": "ada@example.org"}], "next": "p2"}),
        json!({"users": [{"id": 8, "name": "Bob", "email": null}], "next": null}),
        json!({"users": [{"id": 9, "name": "Cy"}]}),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sdk_declares_a_named_type_inferred_from_the_results_it_saw() {
    let store = TypeStore::in_memory();
    let tools = registry([users_tool(user_pages())]);
    let before = sdk_with_types(&tools, Some(&store));
    assert!(
        before.contains("list_users(args?: ListUsersInput): Promise<unknown>;"),
        "{before}"
    );

    assert_eq!(
        run_ok(&harness(tools.clone(), &store), THREE_CALLS).await,
        json!(3)
    );

    let sdk = sdk_with_types(&tools, Some(&store));
    assert!(
        sdk.contains("list_users(args?: ListUsersInput): Promise<ListUsersOutput>;"),
        "{sdk}"
    );
    assert!(
        sdk.contains("Inferred by codemode from 3 successful results of this tool"),
        "{sdk}"
    );
    // `users` in every result: required; `next` in two of three: optional, and null once.
    assert!(sdk.contains("interface ListUsersOutput {"), "{sdk}");
    assert!(sdk.contains("  next?: string | null;"), "{sdk}");
    assert!(sdk.contains("  users: {\n"), "{sdk}");
    assert!(sdk.contains("email?: string | null;"), "{sdk}");
    assert!(
        sdk.contains("id: number;") && sdk.contains("name: string;"),
        "{sdk}"
    );
    // Kinds only: no literal type from a value.
    for value in ["Ada", "p2", "example.org", ": 7", ": 8;", "| 9"] {
        assert!(!sdk.contains(value), "{value} leaked: {sdk}");
    }

    // A harness built over the same store puts the type in run_code's description.
    let rebuilt = harness(tools, &store);
    let description = rebuilt.run_code().description();
    assert!(
        description.contains("Promise<ListUsersOutput>"),
        "{description}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_that_does_not_fit_widens_the_type_and_the_call_still_succeeds() {
    let store = TypeStore::in_memory();
    let tools = registry([users_tool(vec![
        json!({"users": [], "total": 0}),
        json!("no users in this team"),
    ])]);
    let harness = harness(tools.clone(), &store);
    let code = "const a = await tools.list_users({}); const b = await tools.list_users({}); return [typeof a, typeof b]";
    assert_eq!(run_ok(&harness, code).await, json!(["object", "string"]));
    let sdk = sdk_with_types(&tools, Some(&store));
    assert!(
        sdk.contains(
            "type ListUsersOutput = {\n  total: number;\n  users: unknown[];\n} | string;"
        ),
        "{sdk}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_calls_are_never_learned() {
    let store = TypeStore::in_memory();
    let tools = registry([users_tool(vec![
        json!({"users": [{"id": 1}]}),
        json!({"fail": "the directory is down"}),
    ])]);
    let harness = harness(tools.clone(), &store);
    let code = "await tools.list_users({}); try { await tools.list_users({}) } catch (e) { return e.code }";
    assert_eq!(run_ok(&harness, code).await, json!("TOOL_ERROR"));
    let key = key_of(&tools, "list_users");
    let learned = store.learned(&key).expect("the success was learned");
    assert_eq!(learned.results, 1);
}

fn key_of(tools: &ToolRegistry, path: &str) -> ToolKey {
    let tool = tools.get(path).expect("registered");
    ToolKey::new(path, tool.tool.name(), tool.tool.parameters())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declared_output_schema_always_wins_and_is_not_learned() {
    let store = TypeStore::in_memory();
    let declared = ToolDefinition::builder("count")
        .description("Counts.")
        .output_schema(
            json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}),
        )
        .execute(|_args: Value, _exec| async { Ok(json!({"n": 1, "extra": "x"})) })
        .build()
        .unwrap();
    let tools = registry([declared]);
    run_ok(
        &harness(tools.clone(), &store),
        "return await tools.count({})",
    )
    .await;
    assert!(store.entries().is_empty(), "{:?}", store.entries());
    let sdk = sdk_with_types(&tools, Some(&store));
    assert!(
        sdk.contains("interface CountOutput {\n  n: number;\n}"),
        "{sdk}"
    );
    assert!(!sdk.contains("Inferred"), "{sdk}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cache_file_survives_the_process_and_holds_no_value_from_a_result() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cache/types.json");
    let secrets = [
        "s3cr3t-token-value",
        "Ada Lovelace",
        "ada@example.org",
        "73194",
        "2718.28",
        "enum-like-state-OPEN",
    ];
    let answer = json!({
        "token": secrets[0],
        "owner": {"name": secrets[1], "email": secrets[2], "pin": 73194},
        "ratio": 2718.28,
        "state": secrets[5],
        "flags": [true, false],
        "tags": [secrets[1], secrets[2]],
    });
    let tools = registry([users_tool(vec![answer])]);
    let store = TypeStore::open(&path).unwrap();
    run_ok(
        &harness(tools.clone(), &store),
        "return await tools.list_users({})",
    )
    .await;

    // Saved after the run (in the background), without an explicit save.
    let waited = std::time::Instant::now();
    while !path.exists() && waited.elapsed() < std::time::Duration::from_secs(10) {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let text = std::fs::read_to_string(&path).expect("the run saved the cache");
    for secret in secrets {
        assert!(
            !text.contains(secret),
            "{secret} reached the cache:\n{text}"
        );
    }
    for field in [
        "token", "owner", "email", "pin", "ratio", "state", "flags", "tags",
    ] {
        assert!(
            text.contains(&format!("\"{field}\"")),
            "field {field} is kept:\n{text}"
        );
    }

    // Another store (another process) reads what this one learned.
    let reopened = TypeStore::open(&path).unwrap();
    let sdk = sdk_with_types(&tools, Some(&reopened));
    assert!(
        sdk.contains("from 1 successful result of this tool"),
        "{sdk}"
    );
    assert!(sdk.contains("  pin: number;"), "{sdk}");
    assert!(sdk.contains("  flags: boolean[];"), "{sdk}");
}

/// Eight processes' stores saving into one file at the same moment: the lock makes every save
/// see the ones before it, so no result is lost.
#[test]
fn concurrent_saves_into_one_cache_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("types.json");
    let key = ToolKey::new("ns.tool", "tool", &json!({"type": "object"}));
    let writers = 8;
    let start = Arc::new(std::sync::Barrier::new(writers));
    let handles: Vec<_> = (0..writers)
        .map(|i| {
            let (path, key, start) = (path.clone(), key.clone(), Arc::clone(&start));
            std::thread::spawn(move || {
                let store = TypeStore::open(&path).unwrap();
                store.record(key, &json!({ format!("field{i}"): i }));
                start.wait();
                assert!(store.save().unwrap());
            })
        })
        .collect();
    for handle in handles {
        handle.join().unwrap();
    }
    let learned = TypeStore::open(&path).unwrap().learned(&key).unwrap();
    assert_eq!(learned.results, writers as u64);
    assert_eq!(learned.shape.object.as_ref().unwrap().fields.len(), writers);
}

#[test]
fn two_writers_of_one_cache_keep_each_others_results() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("types.json");
    let key = ToolKey::new("ns.tool", "tool", &json!({"type": "object"}));
    // Both open the empty cache, as two servers starting at once would.
    let first = TypeStore::open(&path).unwrap();
    let second = TypeStore::open(&path).unwrap();
    first.record(key.clone(), &json!({"a": 1}));
    second.record(key.clone(), &json!({"b": "x"}));
    second.record(key.clone(), &json!({"b": "y"}));
    assert!(first.save().unwrap());
    assert!(second.save().unwrap());
    assert!(!second.save().unwrap(), "nothing new to write");

    let learned = TypeStore::open(&path).unwrap().learned(&key).unwrap();
    assert_eq!(learned.results, 3);
    let object = learned.shape.object.as_ref().unwrap();
    assert_eq!(object.count, 3);
    assert_eq!(object.fields["a"].seen, 1);
    assert_eq!(object.fields["b"].seen, 2);
}

#[test]
fn a_tool_whose_input_schema_changed_starts_over() {
    let old = ToolKey::new("gh.search", "search", &json!({"type": "object"}));
    let new = ToolKey::new(
        "gh.search",
        "search",
        &json!({"type": "object", "properties": {"q": {"type": "string"}}}),
    );
    assert_eq!((old.source.as_str(), old.tool.as_str()), ("gh", "search"));
    assert_ne!(old, new);
    let store = TypeStore::in_memory();
    store.record(old.clone(), &json!(1));
    assert!(store.learned(&new).is_none());
}

#[test]
fn a_file_that_is_not_a_types_cache_is_a_clear_error_and_is_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("types.json");
    std::fs::write(&path, "{\"hello\": 1}").unwrap();
    let error = TypeStore::open(&path).unwrap_err().to_string();
    assert!(error.contains(&path.display().to_string()), "{error}");
    assert!(error.contains("is not a codemode types cache"), "{error}");
    assert!(error.contains("--types-cache"), "{error}");
    std::fs::write(
        &path,
        "{\"format\": \"codemode-types\", \"version\": 99, \"tools\": []}",
    )
    .unwrap();
    let error = TypeStore::open(&path).unwrap_err().to_string();
    assert!(error.contains("version 99"), "{error}");
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "{\"format\": \"codemode-types\", \"version\": 99, \"tools\": []}"
    );
}

/// The CLI against a real server: `codemode types learn` runs sample calls of the reference
/// `everything` server (no output schemas) through the policy, `codemode sdk` then declares what
/// they returned, and tsc --strict accepts a program using those types and rejects a misspelt
/// field. The `memory` server declares its output schemas, which win.
#[test]
fn learned_types_from_a_real_server_type_check_with_tsc_strict() {
    use std::process::Command;
    let Some(deps) = crate::mcp_e2e::deps_or_skip("learned_types_from_a_real_server") else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let cache = work.path().join("types.json");
    let bin = |name: &str| deps.join("node/node_modules/.bin").join(name);
    let everything = format!("everything={}", bin("mcp-server-everything").display());
    let memory = format!("memory={}", bin("mcp-server-memory").display());
    let memory_file = format!(
        "memory:MEMORY_FILE_PATH={}",
        work.path().join("m.jsonl").display()
    );
    let upstreams = [
        "--upstream",
        &everything,
        "--upstream",
        &memory,
        "--upstream-env",
        &memory_file,
    ];
    let calls = work.path().join("calls.json");
    std::fs::write(
        &calls,
        json!([
            {"tool": "everything.get_sum", "args": {"a": 20, "b": 22}},
            {"tool": "everything.get_resource_links", "args": {"count": 2}},
            {"tool": "everything.get_resource_links", "args": {"count": 3}},
            {"tool": "memory.read_graph", "args": {}},
        ])
        .to_string(),
    )
    .unwrap();
    let codemode = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_codemode"))
            .args(args)
            .args(upstreams)
            .arg("--types-cache")
            .arg(&cache)
            .stdin(std::process::Stdio::null())
            .output()
            .expect("run codemode")
    };
    let learned = codemode(&["types", "learn", "--calls", calls.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&learned.stderr);
    assert!(learned.status.success(), "{stderr}");
    assert!(stderr.contains("4 of 4 calls succeeded"), "{stderr}");

    let out = codemode(&["sdk"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sdk = String::from_utf8(out.stdout).unwrap();
    assert!(
        sdk.contains("get_sum(args: EverythingGetSumInput): Promise<EverythingGetSumOutput>;"),
        "{sdk}"
    );
    assert!(
        sdk.contains("type EverythingGetSumOutput = string;"),
        "{sdk}"
    );
    assert!(sdk.contains("from 2 successful results"), "{sdk}");
    assert!(sdk.contains("uri: string;"), "{sdk}");
    // The memory server's declared schema, not a learned one: its declaration's JSDoc (the lines
    // just above it) says nothing of inference.
    let before = &sdk[..sdk
        .find("interface MemoryReadGraphOutput")
        .expect("declared output type")];
    let doc: Vec<&str> = before.trim_end().lines().rev().take(4).collect();
    assert!(!doc.concat().contains("Inferred"), "{doc:?}");
    assert!(
        sdk.contains("Inferred"),
        "the everything tools' types are inferred"
    );

    let show = Command::new(env!("CARGO_BIN_EXE_codemode"))
        .args(["types", "show", "--types-cache"])
        .arg(&cache)
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&show.stdout);
    assert!(show.status.success());
    assert!(
        shown.contains("// everything.get-sum (input schema "),
        "{shown}"
    );
    assert!(shown.contains(": 1 result\n"), "{shown}");
    assert!(
        !shown.contains("memory."),
        "declared outputs are not learned: {shown}"
    );

    let Some(tsc) = crate::sdk::tsc::tsc("learned_types_from_a_real_server") else {
        return;
    };
    let good = r#"const sum: string = await tools.everything.get_sum({ a: 1, b: 2 });
const links = await tools.everything.get_resource_links({ count: 2 });
const uris: string[] = [];
for (const link of links) {
  if (typeof link !== "string") uris.push(link.uri.toUpperCase(), link.name);
}
return { sum: sum.length, uris };"#;
    let checked = crate::sdk::tsc::check(
        tsc,
        "learned-good",
        &sdk,
        &[("good.ts".into(), good.into())],
    );
    assert!(checked.success, "{}\n{sdk}", checked.output);
    let wrong = r#"const links = await tools.everything.get_resource_links({ count: 2 });
for (const link of links) {
  if (typeof link !== "string") console.log(link.url);
}"#;
    let checked = crate::sdk::tsc::check(
        tsc,
        "learned-wrong",
        &sdk,
        &[("wrong.ts".into(), wrong.into())],
    );
    assert!(!checked.success, "tsc accepted a misspelt field:\n{sdk}");
    assert!(
        checked.output.contains("Property 'url' does not exist"),
        "{}",
        checked.output
    );
}

/// `codemode run` learns from the program's calls of a real upstream into `--types-cache`,
/// the next `codemode sdk` declares it, and the mock tools of `--tools` are never learned.
#[test]
fn codemode_run_learns_upstream_results_but_not_mock_answers() {
    use std::process::Command;
    let Some(deps) = crate::mcp_e2e::deps_or_skip("codemode_run_learns") else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let cache = work.path().join("types.json");
    let everything = format!(
        "everything={}",
        deps.join("node/node_modules/.bin/mcp-server-everything")
            .display()
    );
    let mocks = work.path().join("tools.json");
    std::fs::write(
        &mocks,
        json!([{"name": "lookup", "description": "Looks up.", "inputSchema": {"type": "object"}}])
            .to_string(),
    )
    .unwrap();
    let program = work.path().join("p.ts");
    std::fs::write(
        &program,
        "const s = await tools.everything.get_sum({a: 20, b: 22}); await tools.lookup({}); return s",
    )
    .unwrap();
    let codemode = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_codemode"))
            .args(args)
            .args(["--upstream", &everything, "--tools"])
            .arg(&mocks)
            .arg("--types-cache")
            .arg(&cache)
            .stdin(std::process::Stdio::null())
            .output()
            .expect("run codemode")
    };
    let before = String::from_utf8(codemode(&["sdk"]).stdout).unwrap();
    assert!(before.contains("): Promise<unknown>;"), "{before}");
    assert!(!before.contains("EverythingGetSumOutput"), "{before}");

    let run = codemode(&["run", "--json", program.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(stdout.contains("The sum of 20 and 22 is 42."), "{stdout}");

    let sdk = String::from_utf8(codemode(&["sdk"]).stdout).unwrap();
    assert!(
        sdk.contains("type EverythingGetSumOutput = string;"),
        "{sdk}"
    );
    assert!(
        sdk.contains("lookup(args?: LookupInput): Promise<unknown>;"),
        "{sdk}"
    );
    let text = std::fs::read_to_string(&cache).unwrap();
    assert!(
        text.contains("\"get-sum\"") && !text.contains("lookup"),
        "{text}"
    );
    assert!(
        !text.contains("sum of"),
        "a value reached the cache: {text}"
    );
}

/// In discovery mode, `catalog.describe` declares what is known when it is called: types learned
/// earlier in the same session show at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn catalog_describe_shows_types_learned_in_the_session() {
    let store = TypeStore::in_memory();
    let harness = Harness::builder()
        .sandbox(sandbox().clone())
        .discovery(codemode::harness::Discovery::On)
        .learn_types(store)
        .build(registry([users_tool(user_pages())]))
        .unwrap();
    let code = "const before = (await tools.catalog.describe({path: 'list_users'})).typescript; await tools.list_users({}); const after = (await tools.catalog.describe({path: 'list_users'})).typescript; return [before, after]";
    let value = run_ok(&harness, code).await;
    let before = value[0].as_str().unwrap();
    let after = value[1].as_str().unwrap();
    assert!(before.contains("Promise<unknown>"), "{before}");
    assert!(after.contains("Promise<ListUsersOutput>"), "{after}");
    assert!(after.contains("from 1 successful result"), "{after}");
}

/// Keys that are data (ids, addresses, paths, long strings) make their object a map, so they
/// never reach the cache as field names; odd but name-like keys are kept and quoted, and the
/// SDK with them passes tsc --strict.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_that_are_data_are_not_kept_and_odd_names_stay_valid_typescript() {
    let store = TypeStore::in_memory();
    let odd = json!({
        "by_user": {"u-1": 1, "ada@example.org": 2},
        "by_path": {"src/main.rs": 3},
        "by_id": {"12345": 4},
        "by_uuid": {"123e4567-e89b-12d3-a456-426614174000": 5},
        "long": {"k".repeat(65): 6},
        "named": {"__proto__": 1, "a\"b": "x", "x-y": null, "": 2, "ok": "y"},
    });
    let tools = registry([users_tool(vec![odd])]);
    run_ok(
        &harness(tools.clone(), &store),
        "return typeof (await tools.list_users({}))",
    )
    .await;
    let entries = store.entries();
    let cache = serde_json::to_string(&entries[0].1.shape).unwrap();
    for data in [
        "ada@example.org",
        "src/main.rs",
        "12345",
        "123e4567",
        "kkkkkkkk",
    ] {
        assert!(!cache.contains(data), "{data} was kept: {cache}");
    }
    let sdk = sdk_with_types(&tools, Some(&store));
    assert!(
        sdk.contains("by_path: {\n    [key: string]: number;\n  };"),
        "{sdk}"
    );
    assert!(sdk.contains("\"a\\\"b\": string;"), "{sdk}");
    assert!(sdk.contains("\"x-y\": null;"), "{sdk}");

    let Some(tsc) = crate::sdk::tsc::tsc("keys_that_are_data") else {
        return;
    };
    let program = r#"const r = await tools.list_users({});
const n: number = (r.by_user["anyone"] ?? 0) + r.named[""];
const s: string = r.named.ok + r.named["a\"b"];
return [n, s, r.named["x-y"], r.named.__proto__];"#;
    let checked = crate::sdk::tsc::check(
        tsc,
        "learned-odd",
        &sdk,
        &[("odd.ts".into(), program.into())],
    );
    assert!(checked.success, "{}\n{sdk}", checked.output);
}

/// `run_code` saves after a run only when the store has something to save; what says so must
/// turn on with a record and off with the save, and never for a store without a file.
#[test]
fn a_store_has_something_unsaved_from_a_record_until_its_save() {
    let dir = tempfile::tempdir().unwrap();
    let store = TypeStore::open(dir.path().join("types.json")).unwrap();
    let key = ToolKey::new("ns.tool", "tool", &json!({"type": "object"}));
    assert!(!store.has_unsaved(), "a fresh store");
    store.record(key.clone(), &json!({"id": 1}));
    assert!(store.has_unsaved(), "after a record");
    assert!(store.save().unwrap());
    assert!(!store.has_unsaved(), "after the save");
    let memory = TypeStore::in_memory();
    memory.record(key, &json!({"id": 1}));
    assert!(
        !memory.has_unsaved(),
        "a store without a file saves nothing"
    );
}

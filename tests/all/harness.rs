//! The Code Mode assembly as a library user meets it: one builder call, typed outcomes,
//! per-call data carried as extensions, composed pipeline customizations, and build errors that
//! name the problem.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use codemode::call::{ErrorCode, Extensions, RunId};
use codemode::harness::{Discovery, HarnessError, RUN_CODE};
use codemode::pipeline::{HookDecision, pre_hook_fn};
use codemode::sandbox::{RunOutcome, RunStatus};
use codemode::{Harness, ToolDefinition, ToolFailure, ToolRegistry};
use serde_json::{Value, json};

use crate::common::sandbox;
use crate::support::{Recorder, echo_tool, registry};

/// A tool every caller must reach before any returns: two runs that call it both finish only if
/// they run at the same time.
fn meet_tool() -> ToolDefinition {
    let barrier = Arc::new(tokio::sync::Barrier::new(2));
    ToolDefinition::builder("meet")
        .description("waits for a second caller")
        .execute(move |_args: Value, _exec| {
            let barrier = Arc::clone(&barrier);
            async move {
                tokio::time::timeout(Duration::from_secs(10), barrier.wait())
                    .await
                    .map_err(|_| ToolFailure::new("nobody came within 10 s"))?;
                Ok(json!("met"))
            }
        })
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_of_one_harness_do_not_wait_on_each_other() {
    // Its own sandbox with two workers: the shared one may be busy with other tests.
    let harness = Harness::builder()
        .workers(2)
        .build(registry([meet_tool()]))
        .unwrap();
    let code = "return await tools.meet({})";
    let (a, b) = tokio::join!(harness.run(code), harness.run(code));
    for outcome in [a.unwrap(), b.unwrap()] {
        assert_eq!(
            outcome.value_json(),
            Some(json!("met")),
            "{}",
            outcome.to_json()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_outcome_is_typed_and_its_accessors_read_it() {
    let harness = Harness::builder()
        .sandbox(sandbox().clone())
        .build(registry([echo_tool("echo")]))
        .unwrap();
    let outcome = harness
        .call(harness.request("const r = await tools.echo({ text: 'hi' }); return r.echo;"))
        .await;
    let run = outcome
        .typed::<RunOutcome>()
        .expect("run_code keeps its typed outcome");
    assert_eq!(run.value_json(), Some(json!("hi")));
    assert_eq!(
        outcome.value_as::<RunOutcome>().unwrap().status,
        RunStatus::Ok
    );
    assert_eq!(outcome.error_code(), None);
    // The JSON the events and the session log carry says the same.
    assert_eq!(outcome.result().unwrap()["status"], "ok");

    let failed = harness.run("await tools.nope({})").await.unwrap();
    assert_eq!(failed.status, RunStatus::Error);
    assert_eq!(
        failed.error.as_ref().map(|e| e.code.clone()),
        Some(Some("UNKNOWN_TOOL".to_string())),
        "{}",
        failed.to_json()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_run_code_call_has_an_error_code() {
    let harness = Harness::builder()
        .sandbox(sandbox().clone())
        .outer(|pipeline| {
            pipeline.pre_hook(pre_hook_fn("no-runs", |_| HookDecision::Deny {
                reason: "not now".into(),
            }))
        })
        .build(ToolRegistry::new())
        .unwrap();
    let outcome = harness.call(harness.request("return 1")).await;
    assert_eq!(outcome.error_code(), Some(ErrorCode::Denied));
    let err = harness.run("return 1").await.unwrap_err();
    assert!(err.to_string().contains("not now"), "{err}");
}

/// What a tool body saw of its call's extensions.
#[derive(Clone, Debug, PartialEq)]
struct Tenant(&'static str);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extensions_reach_hooks_and_bodies_of_nested_calls_and_a_run_id_names_the_run() {
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let in_body = Arc::clone(&seen);
    let whoami = ToolDefinition::builder("whoami")
        .description("tells the tenant its call carries")
        .execute(move |_args: Value, exec| {
            let tenant = exec.extensions.get::<Tenant>().map(|t| t.0);
            let run = exec
                .extensions
                .get::<RunId>()
                .map(|r| r.as_str().to_string());
            in_body.lock().unwrap().push(format!("body {tenant:?}"));
            async move { Ok(json!({ "tenant": tenant, "run": run })) }
        })
        .build()
        .unwrap();
    let in_hook = Arc::clone(&seen);
    let harness = Harness::builder()
        .sandbox(sandbox().clone())
        .inner(move |pipeline| {
            let in_hook = Arc::clone(&in_hook);
            pipeline.pre_hook(pre_hook_fn("tenant", move |call| {
                let tenant = call.extensions.get::<Tenant>().map(|t| t.0);
                in_hook.lock().unwrap().push(format!("hook {tenant:?}"));
                HookDecision::Allow
            }))
        })
        .build(registry([whoami]))
        .unwrap();
    let mut extensions = Extensions::new();
    extensions.insert(Tenant("acme"));
    extensions.insert(RunId("r_chosen".into()));
    let outcome = harness
        .run_with("return await tools.whoami({})", &extensions)
        .await
        .unwrap();
    assert_eq!(
        outcome.value_json(),
        Some(json!({"tenant": "acme", "run": "r_chosen"})),
        "{}",
        outcome.to_json()
    );
    assert_eq!(
        *seen.lock().unwrap(),
        vec!["hook Some(\"acme\")", "body Some(\"acme\")"]
    );
}

/// The run id joins a run's durable `tool/result` to the live results (and audit records) of
/// its nested calls: chosen, or fresh from `Harness::request`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_durable_result_of_a_run_carries_the_run_id_of_its_nested_calls() {
    use codemode::pipeline::Event;
    let durable = Recorder::default();
    let live = Recorder::default();
    let (outer_sink, inner_sink) = (durable.clone(), live.clone());
    let harness = Harness::builder()
        .sandbox(sandbox().clone())
        .outer(move |pipeline| pipeline.durable_sink(outer_sink.clone()))
        .inner(move |pipeline| pipeline.observer(inner_sink.clone()))
        .build(registry([echo_tool("echo")]))
        .unwrap();
    let mut chosen = Extensions::new();
    chosen.insert(RunId("r_chosen".into()));
    let program = "await tools.echo({text: 'a'}); return 1";
    harness.run_with(program, &chosen).await.unwrap();
    harness.run(program).await.unwrap();

    let run_ids = |events: Vec<Event>| -> Vec<String> {
        events
            .into_iter()
            .filter_map(|e| match e {
                Event::Result(r) | Event::Durable(r) => r.run_id.map(|id| id.to_string()),
                _ => None,
            })
            .collect()
    };
    let durable_ids = run_ids(durable.events());
    let nested_ids = run_ids(live.events());
    assert_eq!(durable_ids.len(), 2, "{durable_ids:?}");
    assert_eq!(durable_ids[0], "r_chosen");
    assert!(durable_ids[1].starts_with("r_") && durable_ids[1] != "r_chosen");
    assert_eq!(nested_ids, durable_ids, "each nested call names its run");
    let Event::Durable(first) = &durable.events()[0] else {
        panic!("a durable event")
    };
    let json = serde_json::to_value(first).unwrap();
    assert_eq!(json["run_id"], "r_chosen", "{json}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inner_customizations_compose_in_order() {
    let order: Arc<Mutex<Vec<&'static str>>> = Arc::default();
    let (first, second) = (Arc::clone(&order), Arc::clone(&order));
    let harness = Harness::builder()
        .sandbox(sandbox().clone())
        .inner(move |pipeline| {
            let first = Arc::clone(&first);
            pipeline.pre_hook(pre_hook_fn("first", move |_| {
                first.lock().unwrap().push("first");
                HookDecision::Allow
            }))
        })
        .inner(move |pipeline| {
            let second = Arc::clone(&second);
            pipeline.pre_hook(pre_hook_fn("second", move |_| {
                second.lock().unwrap().push("second");
                HookDecision::Deny {
                    reason: "second says no".into(),
                }
            }))
        })
        .build(registry([echo_tool("echo")]))
        .unwrap();
    let outcome = harness
        .run("try { await tools.echo({ text: 'x' }) } catch (e) { return [e.code, e.details.reason] }")
        .await
        .unwrap();
    assert_eq!(
        outcome.value_json(),
        Some(json!(["DENIED", "second says no"]))
    );
    assert_eq!(*order.lock().unwrap(), vec!["first", "second"]);
}

#[test]
fn build_errors_name_the_clash() {
    let named_run_code = registry([echo_tool(RUN_CODE)]);
    let err = Harness::builder()
        .sandbox(sandbox().clone())
        .build(named_run_code)
        .unwrap_err();
    assert!(matches!(err, HarnessError::RunCode(_)), "{err:?}");
    assert!(
        err.to_string().contains("already named `run_code`"),
        "{err}"
    );

    let mut with_catalog = ToolRegistry::new();
    with_catalog
        .register_namespaced("catalog", echo_tool("search"))
        .unwrap();
    let err = Harness::builder()
        .sandbox(sandbox().clone())
        .discovery(Discovery::On)
        .build(with_catalog.clone())
        .unwrap_err();
    assert!(matches!(err, HarnessError::Discovery(_)), "{err:?}");
    assert!(err.to_string().contains("namespace `catalog`"), "{err}");
    // Without discovery the same tools are fine.
    Harness::builder()
        .sandbox(sandbox().clone())
        .build(with_catalog)
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovery_describes_the_catalog_instead_of_the_whole_sdk() {
    let harness = Harness::builder()
        .sandbox(sandbox().clone())
        .discovery(Discovery::On)
        .build(registry([echo_tool("echo")]))
        .unwrap();
    assert!(harness.uses_discovery());
    let description = harness.run_code().description();
    assert!(description.contains("catalog"), "{description}");
    assert!(!description.contains("echo("), "{description}");
    let outcome = harness
        .run("const found = await tools.catalog.search({ query: 'echo' }); return (await tools.echo({ text: found.tools[0].path })).echo")
        .await
        .unwrap();
    assert_eq!(
        outcome.value_json(),
        Some(json!("echo")),
        "{}",
        outcome.to_json()
    );
}

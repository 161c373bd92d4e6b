//! Whole-program approval (issue 13): with `program_approval = "ask"`, a program whose plan names
//! calls the policy asks about is put to the approver once, before it runs. An approval answers
//! the asks of the planned tools (no further prompt), calls outside the plan still prompt, a
//! deny rule is never bypassed, a refusal keeps the program from running, and the wait never
//! counts against the deadline. The plan is in the outcome and in the audit log.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use codemode::builtins::BuiltinTools;
use codemode::harness::Harness;
use codemode::pipeline::{
    ApprovalDecision, ApprovalRequest, Approver, AuditLog, HookError, ProgramApproval,
    ProgramApprovalRequest,
};
use codemode::policy::Policy;
use codemode::sandbox::{Limits, RunOutcome, RunStatus, Sandbox};
use codemode::{RunId, ToolRegistry};
use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::{Value, json};

use crate::common::{process_sandbox, sandbox};

/// Writes and edits ask; anything under `secret/` is denied; the rest is allowed.
const POLICY: &str = r#"
default = "allow"
program_approval = "ask"

[[rule]]
tools = ["write_file", "edit_file"]
decision = "ask"
reason = "changes files"

[[rule]]
tools = ["write_file", "edit_file", "read_file"]
decision = "deny"
reason = "secrets stay untouched"
args.path = { glob = "secret/**" }
"#;

/// What the approver was asked, and how it answers.
#[derive(Default)]
struct Recorded {
    programs: Vec<String>,
    calls: Vec<String>,
}

#[derive(Clone)]
struct TestApprover {
    seen: Arc<Mutex<Recorded>>,
    /// `None`: this approver does not judge whole programs.
    program_answer: Option<ApprovalDecision>,
    program_delay: Duration,
}

impl TestApprover {
    fn answering(program_answer: Option<ApprovalDecision>) -> Self {
        TestApprover {
            seen: Arc::default(),
            program_answer,
            program_delay: Duration::ZERO,
        }
    }

    fn programs(&self) -> Vec<String> {
        self.seen.lock().unwrap().programs.clone()
    }

    fn calls(&self) -> Vec<String> {
        self.seen.lock().unwrap().calls.clone()
    }
}

impl Approver for TestApprover {
    fn approve<'a>(
        &'a self,
        request: &'a ApprovalRequest<'a>,
    ) -> BoxFuture<'a, Result<ApprovalDecision, HookError>> {
        let what = format!("{} {}", request.call.path, request.call.args);
        self.seen.lock().unwrap().calls.push(what);
        async { Ok(ApprovalDecision::Approve) }.boxed()
    }

    fn approve_program<'a>(
        &'a self,
        request: &'a ProgramApprovalRequest<'a>,
    ) -> BoxFuture<'a, Result<Option<ApprovalDecision>, HookError>> {
        self.seen.lock().unwrap().programs.push(request.summary());
        let answer = self.program_answer.clone();
        let delay = self.program_delay;
        async move {
            tokio::time::sleep(delay).await;
            Ok(answer)
        }
        .boxed()
    }
}

struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
    harness: Harness,
    audit: PathBuf,
}

fn fixture(approver: &TestApprover, sandbox: &Sandbox, limits: Limits) -> Fixture {
    fixture_with(POLICY, approver, sandbox, limits)
}

fn fixture_with(
    policy: &str,
    approver: &TestApprover,
    sandbox: &Sandbox,
    limits: Limits,
) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join("secret")).unwrap();
    std::fs::write(root.join("notes.txt"), "draft\n").unwrap();
    let audit = root.join("audit.jsonl");
    let policy = Policy::from_toml_str(policy, "p.toml").unwrap_or_else(|e| panic!("{e}"));
    let builtins = BuiltinTools::new(&root).unwrap();
    let mut registry = ToolRegistry::new();
    builtins.register(&mut registry).unwrap();
    let log = Arc::new(AuditLog::open(&audit).unwrap());
    let approver: Arc<dyn Approver> = Arc::new(approver.clone());
    let hook = policy.pre_hook();
    let harness = Harness::builder()
        .sandbox(sandbox.clone())
        .limits(limits)
        .program_approval(policy.program_approval())
        .inner(move |pipeline| {
            pipeline
                .pre_hook(hook.clone())
                .guard(builtins.guard())
                .shared_approver(Arc::clone(&approver))
                .shared_observer(log.clone())
        })
        .build(registry)
        .unwrap();
    Fixture {
        _dir: dir,
        root,
        harness,
        audit,
    }
}

fn read(root: &Path, file: &str) -> Option<String> {
    std::fs::read_to_string(root.join(file)).ok()
}

fn audit_records(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn json_of(outcome: &RunOutcome) -> Value {
    serde_json::from_str(&outcome.to_json()).unwrap()
}

const TWO_WRITES: &str = r#"
await tools.write_file({ path: "a.txt", content: "one" });
const name = "b" + ".txt";
await tools.write_file({ path: name, content: "two" });
return (await tools.read_file({ path: "a.txt" })).content;
"#;

#[tokio::test]
async fn an_approved_program_makes_no_further_prompt_for_its_planned_tools() {
    let approver = TestApprover::answering(Some(ApprovalDecision::Approve));
    let f = fixture(&approver, sandbox(), Limits::default());
    let outcome = f.harness.run(TWO_WRITES).await.unwrap();
    assert_eq!(outcome.status, RunStatus::Ok, "{}", outcome.to_json());
    assert_eq!(read(&f.root, "a.txt").as_deref(), Some("one"));
    assert_eq!(read(&f.root, "b.txt").as_deref(), Some("two"));
    let programs = approver.programs();
    assert_eq!(programs.len(), 1, "asked once about the program");
    let summary = &programs[0];
    assert!(
        summary.contains("   2 | await tools.write_file"),
        "{summary}"
    );
    assert!(
        summary.contains(r#"write_file {"path":"a.txt","content":"one"}"#),
        "{summary}"
    );
    assert!(
        summary.contains("write_file (arguments computed at run time)"),
        "{summary}"
    );
    assert!(summary.contains("<- asks: changes files"), "{summary}");
    assert!(approver.calls().is_empty(), "{:?}", approver.calls());

    // The audit log: the plan (digests only, the approval), and each write answered by it.
    let records = audit_records(&f.audit);
    let plan = &records[0];
    assert_eq!(plan["event"], "audit_plan", "{plan}");
    assert_eq!(plan["decision"], "approved");
    assert_eq!(plan["by"], "approver");
    assert_eq!(plan["may_call_any"], false);
    assert_eq!(plan["planned_calls"].as_array().unwrap().len(), 3);
    assert!(
        !plan.to_string().contains("one"),
        "no argument value: {plan}"
    );
    let writes: Vec<&Value> = records
        .iter()
        .filter(|r| r["tool"] == "write_file")
        .collect();
    assert_eq!(writes.len(), 2);
    for w in writes {
        assert_eq!(w["decision"], "approved", "{w}");
        assert_eq!(w["with_program"], true, "{w}");
        assert_eq!(w["run_id"], plan["run_id"]);
    }
}

#[tokio::test]
async fn the_outcome_carries_the_plan() {
    let approver = TestApprover::answering(Some(ApprovalDecision::Approve));
    let f = fixture(&approver, sandbox(), Limits::default());
    let outcome = f
        .harness
        .run("const r = await tools.read_file({ path: \"notes.txt\" });\nconst t = tools;\nreturn r.content")
        .await
        .unwrap();
    let json = json_of(&outcome);
    assert_eq!(
        json["planned_calls"],
        json!([{"path": "read_file", "line": 1, "column": 17, "called": true, "args": {"path": "notes.txt"}}])
    );
    assert_eq!(
        json["dynamic_access"],
        json!([{"kind": "aliased", "line": 2, "column": 11}])
    );
    // Nothing asks: the approver never hears of this program.
    assert!(approver.programs().is_empty());
}

#[tokio::test]
async fn a_call_outside_the_plan_still_prompts() {
    let approver = TestApprover::answering(Some(ApprovalDecision::Approve));
    let f = fixture(&approver, sandbox(), Limits::default());
    let program = r#"
await tools.write_file({ path: "a.txt", content: "one" });
const tool = ["edit", "file"].join("_");
await tools[tool]({ path: "a.txt", old: "one", new: "uno" });
return "done";
"#;
    let outcome = f.harness.run(program).await.unwrap();
    assert_eq!(outcome.status, RunStatus::Ok, "{}", outcome.to_json());
    assert_eq!(read(&f.root, "a.txt").as_deref(), Some("uno"));
    let summary = &approver.programs()[0];
    assert!(
        summary.contains("a tool name computed at run time"),
        "{summary}"
    );
    // write_file was approved with the program; edit_file, reached by a computed name, asks.
    let calls = approver.calls();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert!(calls[0].starts_with("edit_file "), "{calls:?}");
}

#[tokio::test]
async fn a_deny_rule_is_never_bypassed_by_an_approved_program() {
    let approver = TestApprover::answering(Some(ApprovalDecision::Approve));
    let f = fixture(&approver, sandbox(), Limits::default());
    let program = r#"
await tools.write_file({ path: "notes.txt", content: "ok" });
try {
  await tools.write_file({ path: "secret/key.txt", content: "pwned" });
  return "written";
} catch (e) {
  return [e.code, e.details.by];
}
"#;
    let outcome = f.harness.run(program).await.unwrap();
    assert_eq!(
        outcome.value_json(),
        Some(json!(["DENIED", "policy"])),
        "{}",
        outcome.to_json()
    );
    assert_eq!(read(&f.root, "notes.txt").as_deref(), Some("ok"));
    assert_eq!(read(&f.root, "secret/key.txt"), None);
    assert!(approver.calls().is_empty());
}

#[tokio::test]
async fn a_refused_program_never_runs() {
    let approver = TestApprover::answering(Some(ApprovalDecision::Refuse {
        reason: "not today".into(),
    }));
    let f = fixture(&approver, sandbox(), Limits::default());
    let outcome = f.harness.run(TWO_WRITES).await.unwrap();
    assert_eq!(outcome.status, RunStatus::Error);
    let error = outcome.error.as_ref().unwrap();
    assert_eq!(error.name, "ProgramRefused");
    assert_eq!(error.code.as_deref(), Some("DENIED"));
    assert_eq!(
        error.details,
        Some(json!({"by": "approver", "reason": "not today"}))
    );
    assert_eq!(outcome.stats.tool_calls, 0);
    assert_eq!(read(&f.root, "a.txt"), None);
    assert!(approver.calls().is_empty());
    // The plan is still reported, and the audit log says who refused.
    assert_eq!(outcome.planned_calls.len(), 3);
    let records = audit_records(&f.audit);
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0]["decision"], "deny");
    assert_eq!(records[0]["reason"], "not today");
}

#[tokio::test]
async fn time_awaiting_program_approval_does_not_count_against_the_deadline() {
    let mut approver = TestApprover::answering(Some(ApprovalDecision::Approve));
    approver.program_delay = Duration::from_millis(700);
    let limits = Limits::default().with_deadline(Duration::from_millis(300));
    let f = fixture(&approver, sandbox(), limits);
    let outcome = f.harness.run(TWO_WRITES).await.unwrap();
    assert_eq!(outcome.status, RunStatus::Ok, "{}", outcome.to_json());
    assert!(outcome.stats.wall_ms < 300.0, "{}", outcome.stats.wall_ms);
}

#[tokio::test]
async fn a_run_stopped_while_awaiting_program_approval_is_cancelled_and_runs_nothing() {
    let mut approver = TestApprover::answering(Some(ApprovalDecision::Approve));
    approver.program_delay = Duration::from_secs(30);
    let f = fixture(&approver, sandbox(), Limits::default());
    let code_mode = f.harness.code_mode().clone();
    let mut extensions = codemode::Extensions::new();
    extensions.insert(RunId("r_waiting".into()));
    let run = tokio::spawn(async move {
        code_mode
            .run(TWO_WRITES, Default::default(), &extensions)
            .await
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(f.harness.code_mode().stop_run("r_waiting"));
    let outcome = tokio::time::timeout(Duration::from_secs(5), run)
        .await
        .expect("stops at once")
        .unwrap();
    assert_eq!(
        outcome.status,
        RunStatus::Cancelled,
        "{}",
        outcome.to_json()
    );
    assert_eq!(read(&f.root, "a.txt"), None);
}

#[tokio::test]
async fn program_approval_off_or_an_approver_that_does_not_judge_programs_asks_per_call() {
    // Off in the policy: each write asks.
    let approver = TestApprover::answering(Some(ApprovalDecision::Approve));
    let off = POLICY.replace("program_approval = \"ask\"", "program_approval = \"off\"");
    let f = fixture_with(&off, &approver, sandbox(), Limits::default());
    let outcome = f.harness.run(TWO_WRITES).await.unwrap();
    assert!(outcome.is_ok(), "{}", outcome.to_json());
    assert!(approver.programs().is_empty());
    assert_eq!(approver.calls().len(), 2);

    // On, but the approver has no answer for programs: each write asks too.
    let approver = TestApprover::answering(None);
    let f = fixture(&approver, sandbox(), Limits::default());
    let outcome = f.harness.run(TWO_WRITES).await.unwrap();
    assert!(outcome.is_ok(), "{}", outcome.to_json());
    assert_eq!(approver.programs().len(), 1);
    assert_eq!(approver.calls().len(), 2);
}

#[tokio::test]
async fn an_approved_plan_holds_across_the_worker_process_boundary() {
    let approver = TestApprover::answering(Some(ApprovalDecision::Approve));
    let f = fixture(&approver, process_sandbox(), Limits::default());
    let outcome = f.harness.run(TWO_WRITES).await.unwrap();
    assert_eq!(outcome.status, RunStatus::Ok, "{}", outcome.to_json());
    assert_eq!(read(&f.root, "b.txt").as_deref(), Some("two"));
    assert_eq!(approver.programs().len(), 1);
    assert!(approver.calls().is_empty(), "{:?}", approver.calls());
}

#[tokio::test]
async fn a_namespace_reference_covers_the_tools_under_it_and_nothing_else() {
    let approver = TestApprover::answering(Some(ApprovalDecision::Approve));
    let f = fixture(&approver, sandbox(), Limits::default());
    // `write` is a reference to write_file: planned (not called there), it covers write_file.
    let program = r#"
const write = tools.write_file;
await write({ path: "a.txt", content: "one" });
return "ok";
"#;
    let outcome = f.harness.run(program).await.unwrap();
    assert!(outcome.is_ok(), "{}", outcome.to_json());
    let summary = &approver.programs()[0];
    assert!(
        summary.contains("(referenced: may call write_file or any tool under it)"),
        "{summary}"
    );
    assert!(approver.calls().is_empty());
}

#[test]
fn a_policy_names_program_approval_ask_or_off() {
    let ask = Policy::from_toml_str("program_approval = \"ask\"", "p.toml").unwrap();
    assert_eq!(ask.program_approval(), ProgramApproval::Ask);
    let default = Policy::from_toml_str("default = \"allow\"", "p.toml").unwrap();
    assert_eq!(default.program_approval(), ProgramApproval::Off);
    let err = Policy::from_toml_str("program_approval = \"maybe\"", "p.toml").unwrap_err();
    assert_eq!(
        err.to_string(),
        "p.toml:1:20: unknown program approval `maybe` (expected `ask` or `off`)"
    );
}

//! Before a run starts: the program's static plan, and, when program approval is on and the
//! plan names calls that would ask, one question to the approver about the whole program.
//!
//! The plan is read in the host (never in a worker), from the program's source, under the
//! same size limit as the run. The approver is asked before the sandbox is involved, so the
//! time spent waiting never counts against the run's deadline; a refusal means the program
//! never runs. An approval puts an [`ApprovedPlan`] on the run's extensions: the gates answer
//! the `ask`s of the tool paths it covers, and only those (a `deny` is never touched).

use std::collections::{BTreeMap, HashSet};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use sha2::{Digest, Sha256};

use crate::call::{ApprovedPlan, Caller, DeniedBy, Extensions, Limits, ProgramPlan, RunId};
use crate::pipeline::{
    Authorization, AuthorizationDecision, Pipeline, PlanEvent, PlannedAsk, Preview,
    ProgramApproval, ProgramApprovalRequest, ProgramVerdict,
};
use crate::sandbox::{RunError, RunOutcome, RunStatus, plan};

/// Programs larger than this are analysed on a blocking thread, off the async runtime.
const INLINE_PLAN_BYTES: usize = 64 * 1024;

/// What the run may do after admission.
pub(super) enum Admission {
    /// Run, with these extensions (an [`ApprovedPlan`] among them when the program was
    /// approved).
    Run(Extensions),
    /// Do not run: the approver refused, or the run was cancelled while awaiting it.
    Stop(Box<RunOutcome>),
}

/// The plan of `code`, and why there is none when the program cannot be analysed.
pub(super) async fn plan_of(code: &str, limits: &Limits) -> (Arc<ProgramPlan>, Option<String>) {
    if code.len() > limits.program_bytes {
        return (
            Arc::default(),
            Some("the program is over the program size limit".into()),
        );
    }
    let result = if code.len() <= INLINE_PLAN_BYTES {
        plan(code)
    } else {
        let owned = code.to_owned();
        match tokio::task::spawn_blocking(move || plan(&owned)).await {
            Ok(result) => result,
            Err(_) => return (Arc::default(), Some("the analysis did not finish".into())),
        }
    };
    match result {
        Ok(plan) => (Arc::new(plan), None),
        Err(e) => (Arc::default(), Some(e.to_string())),
    }
}

/// Whether the analysis shows the program calls no tool: it read the program, found no tool
/// named and no access it cannot follow.
pub(super) fn calls_no_tools(plan: &ProgramPlan, unplanned: Option<&str>) -> bool {
    unplanned.is_none() && plan.calls.is_empty() && !plan.may_call_any()
}

/// The run's context for admission.
pub(super) struct Candidate<'a> {
    pub(super) code: &'a str,
    pub(super) run_id: &'a RunId,
    pub(super) plan: &'a Arc<ProgramPlan>,
    pub(super) unplanned: Option<String>,
    pub(super) extensions: &'a Extensions,
    /// Every sandbox path programs can call (for the namespaces a plan references).
    pub(super) paths: &'a [String],
}

/// Emits the run's `run/plan` event and decides whether it runs.
pub(super) async fn admit(
    candidate: Candidate<'_>,
    mode: ProgramApproval,
    pipeline: &Pipeline,
    cancelled: impl Future<Output = ()>,
) -> Admission {
    let mut extensions = candidate.extensions.clone();
    let mut approval = None;
    let mut stop = None;
    if mode == ProgramApproval::Ask {
        let asks = planned_asks(&candidate, pipeline).await;
        if !asks.is_empty() {
            let request = ProgramApprovalRequest {
                run_id: candidate.run_id.as_str(),
                code: candidate.code,
                plan: candidate.plan,
                asks: &asks,
                extensions: candidate.extensions,
            };
            let reasons = asks
                .iter()
                .map(|a| format!("{}: {}", a.path, a.reasons.join("; ")))
                .collect::<Vec<_>>()
                .join("; ");
            let mut waited = Duration::ZERO;
            let verdict = tokio::select! {
                verdict = pipeline.approve_program(&request, &mut waited) => Some(verdict),
                () = cancelled => None,
            };
            match verdict {
                Some(ProgramVerdict::Approved) => {
                    extensions.insert(ApprovedPlan(Arc::clone(candidate.plan)));
                    approval = Some(record(AuthorizationDecision::Approved, reasons));
                }
                Some(ProgramVerdict::Refused { reason }) => {
                    approval = Some(record(AuthorizationDecision::Deny, reason.clone()));
                    stop = Some(refused(&reason));
                }
                Some(ProgramVerdict::PerCall) => {}
                None => {
                    stop = Some(RunOutcome::failed(
                        RunStatus::Cancelled,
                        RunError::new(
                            "Cancelled",
                            "the run was cancelled while its program awaited approval",
                        ),
                    ));
                }
            }
        }
    }
    pipeline.emit_plan(PlanEvent {
        run_id: Arc::clone(&candidate.run_id.0),
        program_sha256: sha256_hex(candidate.code),
        planned_calls: candidate.plan.calls.clone(),
        dynamic_access: candidate.plan.dynamic.clone(),
        unplanned: candidate.unplanned,
        approval,
        at: crate::call::ids::now_rfc3339(),
    });
    match stop {
        Some(outcome) => Admission::Stop(Box::new(outcome)),
        None => Admission::Run(extensions),
    }
}

/// The planned tool paths whose calls the pre-execute hooks would put to the approver, with
/// their reasons, in plan order. A call with constant arguments is judged with them; any
/// other with `{}` (its hooks decide again when it is made). A reference to a namespace
/// stands for every tool under it.
async fn planned_asks(candidate: &Candidate<'_>, pipeline: &Pipeline) -> Vec<PlannedAsk> {
    let caller = Caller::code_mode(Arc::clone(&candidate.run_id.0), 0);
    let empty = json!({});
    let mut order: Vec<String> = Vec::new();
    let mut reasons: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut judged: HashSet<(String, String)> = HashSet::new();
    for call in &candidate.plan.calls {
        let args = call.args.as_ref().unwrap_or(&empty);
        let paths: Vec<&str> = if pipeline.registry().get(&call.path).is_some() {
            vec![call.path.as_str()]
        } else {
            let prefix = format!("{}.", call.path);
            candidate
                .paths
                .iter()
                .filter(|p| p.starts_with(&prefix))
                .map(String::as_str)
                .collect()
        };
        for path in paths {
            // One judgement per distinct (path, arguments): a loop of the same call site is
            // one entry of the plan anyway, but a program may repeat a call many times.
            if !judged.insert((path.to_owned(), args.to_string())) {
                continue;
            }
            let preview = pipeline
                .preview(path, args, &caller, candidate.extensions)
                .await;
            if let Preview::Ask { reasons: asked } = preview {
                let entry = reasons.entry(path.to_owned()).or_insert_with(|| {
                    order.push(path.to_owned());
                    Vec::new()
                });
                for reason in asked {
                    if !entry.contains(&reason) {
                        entry.push(reason);
                    }
                }
            }
        }
    }
    order
        .into_iter()
        .map(|path| PlannedAsk {
            reasons: reasons.remove(&path).unwrap_or_default(),
            path,
        })
        .collect()
}

fn record(decision: AuthorizationDecision, reason: String) -> Authorization {
    Authorization {
        decision,
        by: DeniedBy::Approver.as_str().to_owned(),
        reason,
        asked: None,
        with_program: true,
    }
}

/// The outcome of a program the approver refused: it never ran.
fn refused(reason: &str) -> RunOutcome {
    let mut error = RunError::new(
        "ProgramRefused",
        format!("the approver refused to run this program: {reason}"),
    );
    error.code = Some("DENIED".into());
    error.details = Some(json!({"by": DeniedBy::Approver.as_str(), "reason": reason}));
    RunOutcome::failed(RunStatus::Error, error)
}

/// Lowercase hex, written in one go: a `format!` per byte cost 20k instructions, a quarter of
/// the caller's share of a warm run.
fn sha256_hex(text: &str) -> String {
    format!("{:x}", Sha256::digest(text.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::{calls_no_tools, plan_of, sha256_hex};
    use crate::call::Limits;

    fn verdict(code: &str) -> bool {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let (plan, unplanned) = runtime.block_on(plan_of(code, &Limits::default()));
        calls_no_tools(&plan, unplanned.as_deref())
    }

    #[test]
    fn only_a_program_seen_to_name_no_tool_calls_no_tools() {
        assert!(verdict("return 1 + 1"));
        assert!(verdict("const xs = [3, 1, 2]; return xs.sort()"));
        assert!(!verdict("return await tools.echo({ x: 1 })"));
        assert!(
            !verdict("const f = tools.fs.read; return f"),
            "a reference may be called"
        );
        assert!(
            !verdict("const name = 'echo'; return tools[name]({})"),
            "not followed"
        );
        assert!(!verdict("return 1 +"), "not analysed");
    }

    #[test]
    fn a_programs_digest_is_its_sha256_in_64_lowercase_hex_digits() {
        // FIPS 180-2's example.
        assert_eq!(
            sha256_hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        // A byte below 0x10 keeps its leading zero.
        assert_eq!(
            sha256_hex("39"),
            "0b918943df0962bc7a1824c0555a389347b4febdc7cf9d1254406d80ce44e3f9"
        );
    }
}

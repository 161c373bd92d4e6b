//! Approvals in MCP mode: an `ask` becomes a question to the user through the client's
//! elicitation, when the client supports it; otherwise it is refused (DESIGN.md §3 fails closed).

use futures::FutureExt;
use futures::future::BoxFuture;
use rmcp::model::{ElicitRequestParams, ElicitationAction};
use serde_json::{Value, json};
use tokio::sync::oneshot;

use super::live::{AskRoute, LiveRequest, PendingAsk};
use crate::call::Extensions;
use crate::pipeline::{
    ApprovalDecision, ApprovalRequest, Approver, HookError, ProgramApprovalRequest,
};

/// Arguments longer than this are cut in the question shown to the user.
const ARGS_SHOWN_BYTES: usize = 600;

/// Puts an `ask` to the user of the MCP request the call belongs to (found on the call's
/// extensions).
pub(crate) struct ElicitationApprover;

/// The question put to the user.
pub(crate) fn question(request: &ApprovalRequest<'_>) -> String {
    let mut args = request.call.args.to_string();
    if args.len() > ARGS_SHOWN_BYTES {
        let mut cut = ARGS_SHOWN_BYTES;
        while !args.is_char_boundary(cut) {
            cut -= 1;
        }
        args.truncate(cut);
        args.push_str(" …");
    }
    format!(
        "Allow the tool call `{}`?\nWhy this asks: {}\nArguments: {args}",
        request.call.path,
        request.reasons.join("; ")
    )
}

/// The form of an approval elicitation: one required boolean.
pub(crate) fn approval_form(message: &str) -> Value {
    json!({
        "mode": "form",
        "message": message,
        "requestedSchema": {
            "type": "object",
            "properties": {
                "approve": {"type": "boolean", "title": "Approve", "description": "Allow what the message describes", "default": false}
            },
            "required": ["approve"]
        }
    })
}

/// Whether an elicitation answer (`{action, content}`) approves.
pub(crate) fn approves(answer: &Value) -> bool {
    answer.get("action").and_then(Value::as_str) == Some("accept")
        && answer
            .pointer("/content/approve")
            .and_then(Value::as_bool)
            .unwrap_or(false)
}

/// The one wording of a user's refusal, whatever the protocol version carried it (an
/// elicitation declined, cancelled or accepted without the box ticked, or an input-required
/// answer saying no): programs and logs must not depend on how the client asked.
pub(crate) const USER_REFUSED: &str = "the user did not approve the call";

/// The same, for a whole program put to the user before it runs.
pub(crate) const USER_REFUSED_PROGRAM: &str = "the user did not approve the program";

/// Puts `message` to the user of the MCP request found on `extensions` and waits for the
/// answer, by whatever route the request's protocol offers.
async fn ask_user(
    extensions: &Extensions,
    message: String,
    asked: &[String],
    refused: &str,
) -> ApprovalDecision {
    let refuse = |reason: String| ApprovalDecision::Refuse { reason };
    let Some(live) = LiveRequest::of(extensions) else {
        return refuse("the MCP request this call belongs to has ended".into());
    };
    match &live.asks {
        AskRoute::Refuse(reason) => refuse(format!("{}; {reason}", asked.join("; "))),
        AskRoute::InputRequired(queue) => {
            let (reply, answer) = oneshot::channel();
            if queue.send(PendingAsk { message, reply }).is_err() {
                return refuse("the MCP request this call belongs to has ended".into());
            }
            match answer.await {
                Ok(true) => ApprovalDecision::Approve,
                Ok(false) => refuse(refused.into()),
                Err(_) => refuse("the client did not answer the approval request".into()),
            }
        }
        AskRoute::Elicit(peer) => {
            let params: ElicitRequestParams = match serde_json::from_value(approval_form(&message))
            {
                Ok(params) => params,
                Err(e) => return refuse(format!("bad elicitation form: {e}")),
            };
            match peer.create_elicitation(params).await {
                Ok(result) if result.action == ElicitationAction::Accept => {
                    let answer = json!({"action": "accept", "content": result.content});
                    if approves(&answer) {
                        ApprovalDecision::Approve
                    } else {
                        refuse(refused.into())
                    }
                }
                Ok(_) => refuse(refused.into()),
                Err(e) => refuse(format!("the approval request to the client failed: {e}")),
            }
        }
    }
}

impl Approver for ElicitationApprover {
    fn approve<'a>(
        &'a self,
        request: &'a ApprovalRequest<'a>,
    ) -> BoxFuture<'a, Result<ApprovalDecision, HookError>> {
        async move {
            Ok(ask_user(
                request.call.extensions,
                question(request),
                request.reasons,
                USER_REFUSED,
            )
            .await)
        }
        .boxed()
    }

    /// The whole program, once, before it runs: the same elicitation (or input-required
    /// round trip), its message the program and its plan.
    fn approve_program<'a>(
        &'a self,
        request: &'a ProgramApprovalRequest<'a>,
    ) -> BoxFuture<'a, Result<Option<ApprovalDecision>, HookError>> {
        async move {
            let message = format!("Allow this program to run?\n{}", request.summary());
            let asked: Vec<String> = request
                .asks
                .iter()
                .map(|a| format!("{}: {}", a.path, a.reasons.join("; ")))
                .collect();
            Ok(Some(
                ask_user(request.extensions, message, &asked, USER_REFUSED_PROGRAM).await,
            ))
        }
        .boxed()
    }
}

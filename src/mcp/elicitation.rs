//! Approvals in MCP mode: an `ask` becomes a question to the user through the client's
//! elicitation, when the client supports it; otherwise it is refused (DESIGN.md §3 fails closed).

use futures::FutureExt;
use futures::future::BoxFuture;
use rmcp::model::{ElicitRequestParams, ElicitationAction};
use serde_json::{Value, json};
use tokio::sync::oneshot;

use super::live::{AskRoute, LiveRequest, PendingAsk};
use crate::pipeline::{ApprovalDecision, ApprovalRequest, Approver, HookError};

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
                "approve": {"type": "boolean", "title": "Approve", "description": "Run this tool call", "default": false}
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

impl Approver for ElicitationApprover {
    fn approve<'a>(
        &'a self,
        request: &'a ApprovalRequest<'a>,
    ) -> BoxFuture<'a, Result<ApprovalDecision, HookError>> {
        async move {
            let refuse = |reason: String| Ok(ApprovalDecision::Refuse { reason });
            let Some(live) = LiveRequest::of(request.call.extensions) else {
                return refuse("the MCP request this call belongs to has ended".into());
            };
            let message = question(request);
            match &live.asks {
                AskRoute::Refuse(reason) => {
                    refuse(format!("{}; {reason}", request.reasons.join("; ")))
                }
                AskRoute::InputRequired(queue) => {
                    let (reply, answer) = oneshot::channel();
                    if queue.send(PendingAsk { message, reply }).is_err() {
                        return refuse("the MCP request this call belongs to has ended".into());
                    }
                    match answer.await {
                        Ok(true) => Ok(ApprovalDecision::Approve),
                        Ok(false) => refuse(USER_REFUSED.into()),
                        Err(_) => refuse("the client did not answer the approval request".into()),
                    }
                }
                AskRoute::Elicit(peer) => {
                    let params: ElicitRequestParams =
                        serde_json::from_value(approval_form(&message))
                            .map_err(|e| HookError::new(format!("bad elicitation form: {e}")))?;
                    match peer.create_elicitation(params).await {
                        Ok(result) if result.action == ElicitationAction::Accept => {
                            let answer = json!({"action": "accept", "content": result.content});
                            if approves(&answer) {
                                Ok(ApprovalDecision::Approve)
                            } else {
                                refuse(USER_REFUSED.into())
                            }
                        }
                        Ok(_) => refuse(USER_REFUSED.into()),
                        Err(e) => refuse(format!("the approval request to the client failed: {e}")),
                    }
                }
            }
        }
        .boxed()
    }
}

//! Events (DESIGN.md section 8). `tools/call`, `tools/progress` and `tools/result` are live
//! observations; `tool/result` is the durable session event, for direct calls only.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::call::{CallStatus, Caller, ContextEntry, DynamicAccess, Extensions, PlannedCall};
use crate::tool::Card;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
/// A call was issued (`tools/call`, live only). Sent for every call, also one that then fails
/// lookup or validation.
pub struct CallEvent {
    /// The call's id.
    pub call_id: Arc<str>,
    /// Sandbox path of the tool.
    pub tool: String,
    /// Who issued the call.
    pub caller: Caller,
    /// The arguments snapshot the body executes (`null` when they could not be converted).
    pub args: Arc<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The tool's presenter card for the call; `None` for an unknown tool, invalid arguments or
    /// a tool without a call presenter.
    pub card: Option<Card>,
    /// When it was issued (RFC 3339).
    pub at: String,
    #[serde(default)]
    /// The call waits behind exclusive calls before it can run; a `tools/started` event says
    /// when its turn comes. `false`: it goes straight to the gates.
    pub queued: bool,
    /// The call's typed data (never serialized).
    #[serde(skip)]
    pub extensions: Extensions,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
/// A queued call's turn came (`tools/started`, live only): it leaves the queue for the gates
/// and its body. Only calls issued with `queued: true` have one.
pub struct StartedEvent {
    /// The call's id.
    pub call_id: Arc<str>,
    /// Sandbox path of the tool.
    pub tool: String,
    /// Who issued the call.
    pub caller: Caller,
    /// How long it waited in the queue, in milliseconds.
    pub queued_ms: f64,
    /// The call's typed data (never serialized).
    #[serde(skip)]
    pub extensions: Extensions,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
/// A progress report from a running body (`tools/progress`, live only).
pub struct ProgressEvent {
    /// The call's id.
    pub call_id: Arc<str>,
    /// What the body reported.
    pub message: String,
    /// When (RFC 3339).
    pub at: String,
}

/// The static plan of a code-mode run, before it starts (`run/plan`, live only; the audit log
/// writes it). Sent for every run of a [`CodeMode`](crate::harness::CodeMode).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlanEvent {
    /// The run's id, as on its nested calls' events and audit records.
    pub run_id: Arc<str>,
    /// Hex SHA-256 of the program's source text.
    pub program_sha256: String,
    /// Every place the program names a tool, in source order.
    pub planned_calls: Vec<PlannedCall>,
    /// Every place the analysis cannot follow; not empty means the program may call any tool.
    pub dynamic_access: Vec<DynamicAccess>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The program could not be analysed (it does not parse): why. Its run fails the same way.
    pub unplanned: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// How the whole program was judged, when it was put to the approver.
    pub approval: Option<Authorization>,
    /// When (RFC 3339).
    pub at: String,
}

/// The result of a call; the same shape live (`tools/result`) and durable (`tool/result`).
/// `args` is carried so a replayed log can re-run the pure result presenter.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResultEvent {
    /// The call's id.
    pub call_id: Arc<str>,
    /// Sandbox path of the tool.
    pub tool: String,
    /// Who issued the call.
    pub caller: Caller,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The run the call belongs to: the caller's run for a nested call; for a direct call (a
    /// `run_code` call) the [`RunId`](crate::call::RunId) extension it carries, which is the id
    /// of the run it starts. The same id is on the audit records of the run's nested calls and
    /// on its spans (`codemode.run_id`), so the three can be joined.
    pub run_id: Option<Arc<str>>,
    /// `ok` or `error`. A value that reports a failure of its own makes it `error` with the
    /// value kept: a `run_code` run that did not end `ok` (`code` is its status upper-cased,
    /// `TIMEOUT`, `CANCELLED`, ...; `details` is `{status, name}`).
    pub status: CallStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The error code, on error.
    pub code: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The error message, on error.
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The error's `details`, on error.
    pub details: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The final canonical value, on success.
    pub value: Option<Arc<Value>>,
    /// The model-visible content (the error message on error).
    pub content: String,
    /// Context attachments of post-execute hooks.
    pub contexts: Vec<ContextEntry>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The tool's presenter card for the result.
    pub card: Option<Card>,
    /// When the call started (RFC 3339).
    pub started_at: String,
    /// Issue to completion in milliseconds (queueing and approval included).
    pub duration_ms: f64,
    /// The arguments snapshot (a replayed log re-runs the result presenter on it).
    pub args: Arc<Value>,
    /// Whether the tool's body started. A call cancelled before it did had no effect; one
    /// whose body had started ran to its end (see `Pipeline`'s cancellation rule), so its
    /// status is what the tool did, even when the caller had gone.
    #[serde(default)]
    pub executed: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// How the gates decided, for a call that was denied or put to the approver; `None` for a
    /// call that every gate simply allowed (and for calls that failed before the gates).
    pub authorization: Option<Authorization>,
    #[serde(default, skip_serializing_if = "is_zero")]
    /// Time spent queued behind exclusive calls before the gates ran, in milliseconds (part of
    /// `duration_ms`; left out when 0).
    pub queued_ms: f64,
    #[serde(default, skip_serializing_if = "is_zero")]
    /// Time spent waiting for the approver, in milliseconds (part of `duration_ms`; left out
    /// when 0).
    pub approval_ms: f64,
    /// The call's typed data (never serialized).
    #[serde(skip)]
    pub extensions: Extensions,
}

fn is_zero(ms: &f64) -> bool {
    *ms == 0.0
}

/// Who decided a call that was not simply allowed, and why (audit records carry it).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Authorization {
    /// `deny` (a hook, the policy, a guard or the approver refused) or `approved` (the approver
    /// said yes to an `ask`).
    pub decision: AuthorizationDecision,
    /// Who decided: `policy`, `hook`, `guard` or `approver`.
    pub by: String,
    /// The denial's reason; for an approved call, why it was asked.
    pub reason: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Why the approver was asked, on a call it was asked about and that was then denied (by the
    /// approver, or by a guard after the approval).
    pub asked: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    /// The `ask` was answered by the approval of the whole program before its run (the call's
    /// tool path is in the approved plan): no prompt for this call.
    pub with_program: bool,
}

/// The decision of an [`Authorization`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuthorizationDecision {
    /// The call was refused.
    Deny,
    /// The approver allowed an `ask`.
    Approved,
}

impl ResultEvent {
    /// The durable result as presenters see it.
    pub fn view(&self) -> crate::tool::ResultView<'_> {
        crate::tool::ResultView {
            status: self.status,
            code: self.code.as_deref(),
            value: self.value.as_deref(),
            content: &self.content,
            typed: None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event")]
/// Any event of the pipeline.
pub enum Event {
    #[serde(rename = "tools/call")]
    /// `tools/call`.
    Call(CallEvent),
    #[serde(rename = "tools/started")]
    /// `tools/started`: a queued call's turn came (live only).
    Started(StartedEvent),
    #[serde(rename = "tools/progress")]
    /// `tools/progress`.
    Progress(ProgressEvent),
    #[serde(rename = "tools/result")]
    /// `tools/result`: the live observation of a result, for every call.
    Result(ResultEvent),
    /// `tool/result`: the durable session event, for direct calls only.
    #[serde(rename = "tool/result")]
    Durable(ResultEvent),
    /// `run/plan`: a code-mode run's static plan, before it starts (live only).
    #[serde(rename = "run/plan")]
    Plan(PlanEvent),
}

impl Event {
    /// The event's name: `tools/call`, `tools/started`, `tools/progress`, `tools/result`,
    /// `tool/result` or `run/plan`.
    pub fn name(&self) -> &'static str {
        match self {
            Event::Call(_) => "tools/call",
            Event::Started(_) => "tools/started",
            Event::Progress(_) => "tools/progress",
            Event::Result(_) => "tools/result",
            Event::Durable(_) => "tool/result",
            Event::Plan(_) => "run/plan",
        }
    }

    /// The id of the call the event is about; for `run/plan`, the run's id.
    pub fn call_id(&self) -> &str {
        match self {
            Event::Call(e) => &e.call_id,
            Event::Started(e) => &e.call_id,
            Event::Progress(e) => &e.call_id,
            Event::Result(e) | Event::Durable(e) => &e.call_id,
            Event::Plan(e) => &e.run_id,
        }
    }
}

/// Receives events. Called synchronously on the call's task, so keep it quick (hand off to a
/// channel for slow consumers). A durable sink must have written the event when it returns.
pub trait EventSink: Send + Sync + 'static {
    /// Receives one event. A durable sink has written it when this returns.
    fn emit(&self, event: &Event);

    /// Writes one durable event and says whether it was written. The pipeline calls this for
    /// durable sinks: a failure is reported in the call's outcome
    /// ([`CallOutcome::durable_error`](crate::pipeline::CallOutcome::durable_error)), so a call
    /// whose record is missing never looks complete. The default is [`emit`](Self::emit),
    /// which cannot fail.
    ///
    /// # Errors
    /// The event could not be written; the message says where and why.
    fn record(&self, event: &Event) -> Result<(), String> {
        self.emit(event);
        Ok(())
    }
}

impl<F> EventSink for F
where
    F: Fn(&Event) + Send + Sync + 'static,
{
    fn emit(&self, event: &Event) {
        self(event)
    }
}

/// A live sink that forwards clones to an unbounded channel (never blocks the call).
#[derive(Debug)]
pub struct ChannelSink(tokio::sync::mpsc::UnboundedSender<Event>);

impl ChannelSink {
    /// A sink and the receiver of the events it is given.
    pub fn new() -> (ChannelSink, tokio::sync::mpsc::UnboundedReceiver<Event>) {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        (ChannelSink(tx), rx)
    }
}

impl EventSink for ChannelSink {
    fn emit(&self, event: &Event) {
        let _ = self.0.send(event.clone());
    }
}

/// The pipeline's live observers and durable sinks.
#[derive(Default)]
pub(crate) struct Sinks {
    pub(crate) live: Vec<Arc<dyn EventSink>>,
    pub(crate) durable: Vec<Arc<dyn EventSink>>,
}

impl Sinks {
    pub(crate) fn live(&self, event: &Event) {
        for sink in &self.live {
            sink.emit(event);
        }
    }

    /// Writes `event` to every durable sink; the failures, joined, when any sink failed.
    pub(crate) fn durable(&self, event: &Event) -> Option<String> {
        let failures: Vec<String> = self
            .durable
            .iter()
            .filter_map(|sink| sink.record(event).err())
            .collect();
        (!failures.is_empty()).then(|| failures.join("; "))
    }
}

impl crate::tool::ProgressReporter for Sinks {
    fn report(&self, call_id: &Arc<str>, message: String) {
        if self.live.is_empty() {
            return;
        }
        self.live(&Event::Progress(ProgressEvent {
            call_id: call_id.clone(),
            message,
            at: crate::call::ids::now_rfc3339(),
        }));
    }
}

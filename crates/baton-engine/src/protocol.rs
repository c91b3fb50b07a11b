//! The one contract between the engine and its front ends: typed events out, operations in.
//!
//! A workflow reports everything a front end may show as an [`Event`] on a channel (statuses
//! typed, agent activity flattened, no journal rows or agent-crate types), and takes a human's
//! decisions and cancellation as [`Op`]s on another. The terminal renderer, `--json` and, later,
//! the dashboard all consume the same stream; none of them holds workflow logic.

use baton_agent::runner::AgentEvent;
use baton_core::dispatch::Stage;
use baton_core::escalation::{Choice, EscalationKind};
use baton_core::status::{Status, StatusValue};
use baton_store::journal::EscalationRecord;
use serde::Serialize;

/// Something that happened in a workflow.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// The run started.
    RunStarted {
        /// Run id.
        run_id: String,
        /// Stories in the batch.
        stories: Vec<String>,
        /// YOLO mode (checkpoints auto-confirmed) rather than standard.
        yolo: bool,
    },
    /// Something the user should know that is not a status change (a resumed run, a cleared
    /// stale lock).
    Notice {
        /// The message.
        message: String,
    },
    /// A stage of a story started.
    Stage {
        /// Story.
        key: String,
        /// Stage.
        stage: Stage,
        /// Round (1 for the first).
        round: u32,
        /// Agent.
        agent: String,
    },
    /// A status changed.
    Transition {
        /// Key.
        key: String,
        /// From.
        from: StatusValue,
        /// To.
        to: Status,
    },
    /// The orchestrator ran the tests.
    Tests {
        /// Story.
        key: String,
        /// Whether they passed.
        passed: bool,
        /// Whether the run was interrupted before it could say.
        interrupted: bool,
    },
    /// A stage was committed.
    Commit {
        /// Story (`-` for run-level commits).
        key: String,
        /// Message.
        message: String,
    },
    /// A stage could not be committed.
    CommitFailed {
        /// Story.
        key: String,
        /// The intended message.
        message: String,
        /// Why.
        error: String,
    },
    /// A human is needed.
    Escalation {
        /// The escalation.
        escalation: EscalationView,
    },
    /// A story finished for this run.
    StoryFinished {
        /// Story.
        key: String,
        /// Its status now.
        status: StatusValue,
        /// Why, when not done.
        reason: Option<String>,
    },
    /// An agent started.
    AgentStarted {
        /// Agent.
        agent: String,
        /// `provider/model`.
        model: String,
    },
    /// A model turn started.
    Turn {
        /// Agent.
        agent: String,
        /// Turn from 1.
        turn: u32,
    },
    /// A tool call is about to run.
    ToolCall {
        /// Agent.
        agent: String,
        /// Tool.
        tool: String,
    },
    /// A guard refused a tool call.
    Refused {
        /// Agent.
        agent: String,
        /// Tool.
        tool: String,
        /// Why.
        reason: String,
    },
    /// Usage of one model call.
    Usage {
        /// Agent.
        agent: String,
        /// Input tokens (cache included).
        input_tokens: u64,
        /// Output tokens.
        output_tokens: u64,
        /// Cost in US dollars.
        cost_usd: f64,
        /// Estimated from the text: the provider reported no usage.
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        estimated: bool,
    },
    /// A model answer is streaming in (every 50 tokens or so): for a live line on long calls.
    Streaming {
        /// Agent.
        agent: String,
        /// Turn from 1.
        turn: u32,
        /// Output tokens so far (estimated when the provider has not said).
        output_tokens: u64,
        /// Seconds since the call started.
        elapsed_secs: u64,
    },
    /// A provider streams no usage: its token counts, costs and token budgets are estimates.
    UsageEstimated {
        /// Agent that noticed.
        agent: String,
        /// Provider.
        provider: String,
    },
    /// The budget's warning line was crossed.
    BudgetWarning {
        /// Agent.
        agent: String,
        /// Message.
        message: String,
    },
    /// An agent ended.
    AgentFinished {
        /// Agent.
        agent: String,
        /// How (`completed`, `failed`, …).
        status: String,
    },
}

impl Event {
    /// The flat event for an agent's own event.
    pub fn from_agent(e: &AgentEvent) -> Event {
        match e {
            AgentEvent::Started { agent, model } => Event::AgentStarted {
                agent: agent.clone(),
                model: model.clone(),
            },
            AgentEvent::Turn { agent, turn } => Event::Turn {
                agent: agent.clone(),
                turn: *turn,
            },
            AgentEvent::ToolCall { agent, tool } => Event::ToolCall {
                agent: agent.clone(),
                tool: tool.clone(),
            },
            AgentEvent::Refused {
                agent,
                tool,
                reason,
            } => Event::Refused {
                agent: agent.clone(),
                tool: tool.clone(),
                reason: reason.clone(),
            },
            AgentEvent::Usage {
                agent,
                usage,
                cost_usd,
                estimated,
            } => Event::Usage {
                agent: agent.clone(),
                input_tokens: usage.total_input(),
                output_tokens: usage.output_tokens,
                cost_usd: *cost_usd,
                estimated: *estimated,
            },
            AgentEvent::Streaming {
                agent,
                turn,
                output_tokens,
                elapsed_secs,
            } => Event::Streaming {
                agent: agent.clone(),
                turn: *turn,
                output_tokens: *output_tokens,
                elapsed_secs: *elapsed_secs,
            },
            AgentEvent::UsageEstimated { agent, provider } => Event::UsageEstimated {
                agent: agent.clone(),
                provider: provider.clone(),
            },
            AgentEvent::BudgetWarning { agent, message } => Event::BudgetWarning {
                agent: agent.clone(),
                message: message.clone(),
            },
            AgentEvent::Finished { agent, status } => Event::AgentFinished {
                agent: agent.clone(),
                status: status.as_str().to_owned(),
            },
        }
    }
}

/// One choice of an escalation: its stable id and what a human reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChoiceView {
    /// Stable id (what `baton answer` stores).
    pub id: String,
    /// Label.
    pub label: String,
}

/// An escalation as front ends show it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EscalationView {
    /// Id.
    pub id: i64,
    /// The story concerned.
    pub key: Option<String>,
    /// What raised it (stable id).
    pub kind: String,
    /// Title.
    pub title: String,
    /// What was found.
    pub finding: String,
    /// The choices' labels, in order (what `baton answer ID N` picks from).
    pub options: Vec<String>,
    /// The choices.
    pub choices: Vec<ChoiceView>,
    /// The answer's label, once answered.
    pub answer: Option<String>,
    /// Whether the engine waits for an [`Op::Answer`] (or [`Op::Defer`]) now.
    pub awaiting: bool,
    /// When it was raised (RFC 3339).
    pub created_at: String,
    /// When it was answered.
    pub answered_at: Option<String>,
    /// When the engine acted on the answer.
    pub resolved_at: Option<String>,
    /// The run that raised it.
    pub run_id: Option<String>,
}

impl EscalationView {
    /// The view of a journaled escalation.
    pub fn of(e: &EscalationRecord, awaiting: bool) -> EscalationView {
        let kind = EscalationKind::parse(&e.kind);
        EscalationView {
            id: e.id,
            key: e.key.clone(),
            kind: e.kind.clone(),
            title: e.title.clone(),
            finding: e.finding.clone(),
            options: e
                .options
                .iter()
                .map(|o| Choice::label_of(kind, o))
                .collect(),
            choices: e
                .options
                .iter()
                .map(|o| {
                    let c = Choice::from_stored(kind, o);
                    ChoiceView {
                        id: c.id().to_owned(),
                        label: c.label().to_owned(),
                    }
                })
                .collect(),
            answer: e.answer.as_deref().map(|a| Choice::label_of(kind, a)),
            awaiting,
            created_at: e.created_at.clone(),
            answered_at: e.answered_at.clone(),
            resolved_at: e.resolved_at.clone(),
            run_id: e.run_id.clone(),
        }
    }
}

/// What a front end asks of a running workflow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// Answer an escalation with a choice (its stable id, or the option's text for an agent's).
    Answer {
        /// The escalation.
        id: i64,
        /// The choice.
        choice: String,
    },
    /// Leave an escalation for later (`baton answer`); the run pauses.
    Defer {
        /// The escalation.
        id: i64,
    },
    /// Stop the run; the interrupted step runs again next time.
    Cancel,
}

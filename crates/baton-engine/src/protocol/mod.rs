//! The one contract between the engine and its front ends: typed events out, operations in.
//!
//! Every workflow (sprint, sdd, plan, team) reports everything a front end may show as one
//! [`Event`] type: the run, the event's sequence number, its time, its [`Scope`] (the run, a
//! unit of work, or an agent within a unit) and a typed [`EventBody`] (statuses typed, agent
//! activity flattened, no journal rows or agent-crate types). It takes a human's decisions and
//! cancellation as [`Op`]s; an op that names no waiting escalation, or a choice that is not one
//! of its options, is answered with [`EventBody::OpRejected`], never silence. Both directions are
//! serde both ways, so the terminal renderer, `--json` and, later, a web board or another
//! process consume and produce the same stream; none of them holds workflow logic.

use baton_agent::runner::AgentEvent;
use baton_core::dispatch::Stage;
use baton_core::escalation::{Choice, EscalationKind};
use baton_core::sdd::{SddStage, TaskView};
use baton_core::status::{Status, StatusValue};
use baton_core::story::StepOutcome;
use baton_store::journal::EscalationRecord;
use serde::{Deserialize, Serialize};

pub use baton_core::unit::UnitKey;

/// Whom an event is about: the run as a whole, one unit of work, or one agent within a unit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// The run.
    Run,
    /// A unit of work.
    Unit(UnitKey),
    /// An agent, working for a unit (or for the run itself).
    Agent {
        /// The unit it works for.
        unit: Option<UnitKey>,
        /// The agent.
        agent: String,
    },
}

/// Something that happened in a run: which run, its place in the run's sequence (the journal's
/// numbering, so a late subscriber catches up from the journal), when, whom it concerns, and
/// what happened. In JSON the body's fields sit beside `run`, `seq`, `at` and `scope`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// The run.
    pub run: String,
    /// Its place in the sequence, from 1.
    pub seq: u64,
    /// When (RFC 3339).
    pub at: String,
    /// Whom it concerns.
    pub scope: Scope,
    /// What happened.
    #[serde(flatten)]
    pub body: EventBody,
}

/// Where a story worked in its own worktree stands on its way into the base branch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MergePhase {
    /// It works in its own worktree, on its own branch.
    Worktree,
    /// It waits for its turn in the merge lane.
    Queued,
    /// Its branch is being brought up to date with the base (rebased).
    Rebasing,
    /// The rebase stopped at a conflict: a merge fix round follows.
    Conflict,
    /// The project's tests run on the updated branch.
    Testing,
    /// The base branch was fast-forwarded to it.
    Merged,
    /// Its worktree and branch are kept (not merged, or holding work).
    Kept,
}

impl MergePhase {
    /// The kebab-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            MergePhase::Worktree => "worktree",
            MergePhase::Queued => "queued",
            MergePhase::Rebasing => "rebasing",
            MergePhase::Conflict => "conflict",
            MergePhase::Testing => "testing",
            MergePhase::Merged => "merged",
            MergePhase::Kept => "kept",
        }
    }
}

/// What happened: the body of an [`Event`], tagged `event` in JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum EventBody {
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
    /// Usage of one model call (a coding-agent CLI's: of its whole run). The counts follow the
    /// token meter's rule (`baton_core::meter`): `input_tokens` is all of the input, the cache
    /// reads and writes are parts of it.
    Usage {
        /// Agent.
        agent: String,
        /// Input tokens (cache reads and writes included).
        input_tokens: u64,
        /// The part of `input_tokens` read from the prompt cache.
        #[serde(default)]
        cache_read_tokens: u64,
        /// The part of `input_tokens` written to the prompt cache.
        #[serde(default)]
        cache_write_tokens: u64,
        /// Output tokens.
        output_tokens: u64,
        /// Cost in US dollars.
        cost_usd: f64,
        /// Estimated from the text: the provider reported no usage.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
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
    /// A plan run (`baton sdd`) started.
    #[serde(rename = "started")]
    TasksStarted {
        /// Run id.
        run_id: String,
        /// The plan.
        plan: String,
        /// Its tasks.
        tasks: usize,
    },
    /// Where a plan task stands: `[TDD] Task 3/7 "…" — reviewing (spec ✓ quality …) | $2.34`.
    #[serde(rename = "status")]
    TaskStatus {
        /// The line.
        line: String,
        /// The task's id.
        task: String,
        /// Its position from 1.
        position: usize,
        /// Tasks in the plan.
        total: usize,
        /// Where it stands.
        view: TaskView,
        /// Spent so far in the run.
        cost_usd: f64,
    },
    /// A stage of a plan task started.
    TaskStage {
        /// The task.
        task: String,
        /// The stage.
        stage: SddStage,
        /// Its round.
        round: u32,
        /// The agent.
        agent: String,
    },
    /// A stage of a plan task ended.
    #[serde(rename = "stage_ended")]
    TaskStageEnded {
        /// The task.
        task: String,
        /// The stage.
        stage: SddStage,
        /// How.
        outcome: StepOutcome,
    },
    /// A planning step started (`baton plan`).
    PlanStep {
        /// The step.
        step: String,
        /// The agent that writes its artifact (none for sprint planning, which is code).
        agent: Option<String>,
    },
    /// A planning step ended.
    PlanStepEnded {
        /// The step.
        step: String,
        /// Whether its artifact was written and reads complete.
        ok: bool,
        /// The artifact, or why there is none.
        detail: String,
    },
    /// A story worked in its own worktree, on its way into the base branch.
    Merge {
        /// Story.
        key: String,
        /// Where it is.
        phase: MergePhase,
        /// The branch, the files in conflict, the base: what the phase concerns.
        detail: String,
    },
    /// A review's parsed verdict: what the orchestrator read from the reviewer's block.
    Review {
        /// Story.
        key: String,
        /// The review round (1 for the first).
        round: u32,
        /// Whether it passed.
        passed: bool,
        /// The findings, with their severity, file and line.
        findings: Vec<baton_core::verdict::Finding>,
    },
    /// An operation was not carried out.
    OpRejected {
        /// The operation.
        op: Op,
        /// Why.
        reason: String,
    },
}
impl EventBody {
    /// The flat event for an agent's own event.
    pub fn from_agent(e: &AgentEvent) -> EventBody {
        match e {
            AgentEvent::Started { agent, model } => EventBody::AgentStarted {
                agent: agent.clone(),
                model: model.clone(),
            },
            AgentEvent::Turn { agent, turn } => EventBody::Turn {
                agent: agent.clone(),
                turn: *turn,
            },
            AgentEvent::ToolCall { agent, tool } => EventBody::ToolCall {
                agent: agent.clone(),
                tool: tool.clone(),
            },
            AgentEvent::Refused {
                agent,
                tool,
                reason,
            } => EventBody::Refused {
                agent: agent.clone(),
                tool: tool.clone(),
                reason: reason.clone(),
            },
            AgentEvent::Usage {
                agent,
                usage,
                cost_usd,
                estimated,
            } => EventBody::Usage {
                agent: agent.clone(),
                input_tokens: usage.total_input(),
                cache_read_tokens: usage.cache_read_tokens,
                cache_write_tokens: usage.cache_write_tokens,
                output_tokens: usage.output_tokens,
                cost_usd: *cost_usd,
                estimated: *estimated,
            },
            AgentEvent::Streaming {
                agent,
                turn,
                output_tokens,
                elapsed_secs,
            } => EventBody::Streaming {
                agent: agent.clone(),
                turn: *turn,
                output_tokens: *output_tokens,
                elapsed_secs: *elapsed_secs,
            },
            AgentEvent::UsageEstimated { agent, provider } => EventBody::UsageEstimated {
                agent: agent.clone(),
                provider: provider.clone(),
            },
            AgentEvent::BudgetWarning { agent, message } => EventBody::BudgetWarning {
                agent: agent.clone(),
                message: message.clone(),
            },
            AgentEvent::Finished { agent, status } => EventBody::AgentFinished {
                agent: agent.clone(),
                status: status.as_str().to_owned(),
            },
        }
    }
}

/// One choice of an escalation: its stable id and what a human reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChoiceView {
    /// Stable id (what `baton answer` stores).
    pub id: String,
    /// Label.
    pub label: String,
}

/// An escalation as front ends show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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

/// What a front end asks of a running workflow, tagged `op` in JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
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

#[cfg(test)]
mod tests;

//! What happened: the body of an [`crate::Event`], one variant per kind of event, tagged `event`
//! in JSON. Statuses, stages and findings are `baton-core`'s typed values; agent activity is
//! flattened (no agent-crate types), and no journal row appears here.

use crate::escalation::EscalationView;
use crate::event::MergePhase;
use crate::op::Op;
use baton_core::dispatch::Stage;
use baton_core::sdd::{SddStage, TaskView};
use baton_core::status::{Status, StatusValue};
use baton_core::story::StepOutcome;
use serde::{Deserialize, Serialize};

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
    /// An escalation was answered, from any front end: `baton answer`, the web board, or a
    /// person at the terminal of the run that asked. The view carries the answer.
    EscalationAnswered {
        /// The escalation, answered.
        escalation: EscalationView,
        /// The command that acts on the answer (`` `baton sprint` ``), when the answer was given
        /// outside the run that asked.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        next: Option<String>,
    },
    /// `baton team`: an agent's task started.
    TeamTaskStarted {
        /// The task's position, from 1.
        task: usize,
        /// The agent.
        agent: String,
    },
    /// `baton team`: an agent's task ended.
    TeamTaskFinished {
        /// The task's position, from 1.
        task: usize,
        /// The agent.
        agent: String,
        /// How (`completed`, `failed`, `escalated`, …).
        status: String,
        /// What it cost, in US dollars.
        cost_usd: f64,
    },
    /// `baton bmad`: a turn of the skill's agent started.
    BmadTurn {
        /// The session (`bmad-prd-1`).
        session: String,
        /// The turn, from 1 over the whole session.
        turn: u32,
    },
    /// `baton bmad`: a menu the skill showed was answered, by baton or by a person.
    BmadMenuAnswered {
        /// The session.
        session: String,
        /// The option chosen (its key).
        selection: String,
        /// `baton` or `person`.
        by: String,
        /// baton's confidence in the choice, in percent (100 for a person's).
        confidence: f64,
    },
    /// `baton bmad`: a party of personas was held.
    BmadParty {
        /// The session.
        session: String,
        /// What it was called on (a stall's issues, `before final`).
        on: String,
        /// The personas who took part.
        members: Vec<String>,
    },
    /// `baton bmad`: the session ended.
    BmadSessionEnded {
        /// The session.
        session: String,
        /// How (`completed`, `stopped`, `failed`).
        end: String,
        /// Why, or what the skill reported.
        reason: String,
    },
    /// `baton pm`: an effect of the pass was applied to an issue on GitHub.
    PmEffectApplied {
        /// The issue.
        issue: u64,
        /// What was done.
        effect: String,
    },
    /// `baton pm`: an issue took an implementation seat.
    PmSeatTaken {
        /// The issue.
        issue: u64,
        /// The seat, from 1.
        seat: u32,
    },
    /// `baton pm`: an issue gave its implementation seat back.
    PmSeatReleased {
        /// The issue.
        issue: u64,
        /// The seat, from 1.
        seat: u32,
    },
    /// `baton pm`: a specialist's turn on an issue started.
    PmTurn {
        /// The issue.
        issue: u64,
        /// The role (`developer`, `reviewer`, …).
        role: String,
        /// The agent that plays it.
        agent: String,
    },
}

impl EventBody {
    /// The event's name: its `event` tag in JSON (the SSE event name on the web board).
    pub fn name(&self) -> &'static str {
        match self {
            EventBody::RunStarted { .. } => "run_started",
            EventBody::Notice { .. } => "notice",
            EventBody::Stage { .. } => "stage",
            EventBody::Transition { .. } => "transition",
            EventBody::Tests { .. } => "tests",
            EventBody::Commit { .. } => "commit",
            EventBody::CommitFailed { .. } => "commit_failed",
            EventBody::Escalation { .. } => "escalation",
            EventBody::StoryFinished { .. } => "story_finished",
            EventBody::AgentStarted { .. } => "agent_started",
            EventBody::Turn { .. } => "turn",
            EventBody::ToolCall { .. } => "tool_call",
            EventBody::Refused { .. } => "refused",
            EventBody::Usage { .. } => "usage",
            EventBody::Streaming { .. } => "streaming",
            EventBody::UsageEstimated { .. } => "usage_estimated",
            EventBody::BudgetWarning { .. } => "budget_warning",
            EventBody::AgentFinished { .. } => "agent_finished",
            EventBody::TasksStarted { .. } => "started",
            EventBody::TaskStatus { .. } => "status",
            EventBody::TaskStage { .. } => "task_stage",
            EventBody::TaskStageEnded { .. } => "stage_ended",
            EventBody::PlanStep { .. } => "plan_step",
            EventBody::PlanStepEnded { .. } => "plan_step_ended",
            EventBody::Merge { .. } => "merge",
            EventBody::Review { .. } => "review",
            EventBody::OpRejected { .. } => "op_rejected",
            EventBody::EscalationAnswered { .. } => "escalation_answered",
            EventBody::TeamTaskStarted { .. } => "team_task_started",
            EventBody::TeamTaskFinished { .. } => "team_task_finished",
            EventBody::BmadTurn { .. } => "bmad_turn",
            EventBody::BmadMenuAnswered { .. } => "bmad_menu_answered",
            EventBody::BmadParty { .. } => "bmad_party",
            EventBody::BmadSessionEnded { .. } => "bmad_session_ended",
            EventBody::PmEffectApplied { .. } => "pm_effect_applied",
            EventBody::PmSeatTaken { .. } => "pm_seat_taken",
            EventBody::PmSeatReleased { .. } => "pm_seat_released",
            EventBody::PmTurn { .. } => "pm_turn",
        }
    }
}

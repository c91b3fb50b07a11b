//! The sprint run's report: how the run ended and what each story did.

use crate::protocol::EscalationView;
use baton_core::meter::Meter;
use serde::Serialize;

pub use baton_protocol::RunEnd;

/// One story's line of the batch report.
#[derive(Debug, Clone, Default, Serialize)]
pub struct StoryReport {
    /// Story key.
    pub key: String,
    /// Status at the end of the run.
    pub final_status: String,
    /// Agents dispatched, in order.
    pub agents: Vec<String>,
    /// Fix rounds used (review rounds that requested changes, and failed test runs).
    pub review_rounds: u32,
    /// Tokens and dollars of the story's agents in this run: `input_tokens` (cache reads and
    /// writes included), `cache_read_tokens`, `cache_write_tokens`, `output_tokens`, `cost_usd`.
    #[serde(flatten)]
    pub usage: Meter,
    /// Some tokens (and so the cost) were estimated from the text: a provider streamed no usage.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub usage_estimated: bool,
    /// The same per stage, in the order they ran.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stages: Vec<StageReport>,
    /// Why it did not finish, if it did not.
    pub error: Option<String>,
    /// Its branch, kept because it was not merged (stories worked in parallel only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// Its worktree, kept with the branch (project-relative).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worktree: Option<String>,
}

/// What one stage of a story (one agent's run in one journal step) used.
#[derive(Debug, Clone, Default, Serialize)]
pub struct StageReport {
    /// The stage (`create`, `dev`, `review`, `fix`, `merge`, …).
    pub stage: String,
    /// Its round.
    pub round: u32,
    /// The agent.
    pub agent: String,
    /// Its tokens and dollars.
    #[serde(flatten)]
    pub usage: Meter,
}

/// The batch report.
#[derive(Debug, Clone, Serialize)]
pub struct SprintReport {
    /// Run id.
    pub run_id: String,
    /// How it ended.
    pub end: RunEnd,
    /// Why.
    pub reason: String,
    /// Stories in the batch.
    pub total: usize,
    /// Done.
    pub completed: usize,
    /// Need intervention or failed.
    pub failed: usize,
    /// Not started or not finished because the run stopped first.
    pub skipped: usize,
    /// Tokens and dollars of the whole run, every model call in its cost ledger (its stories,
    /// retrospectives and merge rounds).
    pub usage: Meter,
    /// Per story.
    pub stories: Vec<StoryReport>,
    /// The escalation awaiting an answer, if paused.
    pub escalation: Option<EscalationView>,
}

impl SprintReport {
    /// An empty report of run `run_id`.
    pub fn new(run_id: &str) -> SprintReport {
        SprintReport {
            run_id: run_id.to_owned(),
            end: RunEnd::Completed,
            reason: String::new(),
            total: 0,
            completed: 0,
            failed: 0,
            skipped: 0,
            usage: Meter::default(),
            stories: Vec::new(),
            escalation: None,
        }
    }
}

//! What the engine knows about one story when it decides the next move.
//!
//! [`StoryFacts`] is loaded fresh from the sprint file, the story file and the journal before
//! every decision; nothing the decision needs lives in memory between iterations, so a resumed
//! run decides exactly as an uninterrupted one would. Steps carry a typed [`StepOutcome`] (stored
//! by its stable id) and a [`StepDetail`] with what later decisions read back: the verdict's
//! fingerprint, the failure reason, an agent's escalation.

use crate::dispatch::{DispatchOptions, Stage};
use crate::escalation::{Choice, EscalationKind};
use crate::status::{Status, StatusValue};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// How a step ended, as the orchestrator settled it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StepOutcome {
    /// A dev or fix agent finished; the orchestrator's own test run has not settled it yet.
    AgentDone,
    /// The step's work is complete (for dev and fix: the tests pass).
    Completed,
    /// The orchestrator's test run failed after a dev or fix step.
    TestsFailed,
    /// The orchestrator's test run was interrupted (Ctrl-C, cancellation): no verdict.
    TestsInterrupted,
    /// The review gave no usable verdict.
    Inconclusive,
    /// The review reported fewer findings than required.
    TooFewFindings,
    /// The review passed.
    Passed,
    /// The review requested changes.
    ChangesRequested,
    /// End-to-end verification failed.
    VerificationFailed,
    /// The agent stopped itself with `HALT:`.
    Halted,
    /// The agent escalated to a human.
    Escalated,
    /// The agent failed.
    Failed,
    /// The agent timed out.
    TimedOut,
    /// The agent was cancelled (or stopped by the budget).
    Cancelled,
}

impl StepOutcome {
    /// Every outcome.
    pub const ALL: [StepOutcome; 14] = [
        StepOutcome::AgentDone,
        StepOutcome::Completed,
        StepOutcome::TestsFailed,
        StepOutcome::TestsInterrupted,
        StepOutcome::Inconclusive,
        StepOutcome::TooFewFindings,
        StepOutcome::Passed,
        StepOutcome::ChangesRequested,
        StepOutcome::VerificationFailed,
        StepOutcome::Halted,
        StepOutcome::Escalated,
        StepOutcome::Failed,
        StepOutcome::TimedOut,
        StepOutcome::Cancelled,
    ];

    /// The stable id stored in the journal.
    pub fn as_str(self) -> &'static str {
        match self {
            StepOutcome::AgentDone => "agent-done",
            StepOutcome::Completed => "completed",
            StepOutcome::TestsFailed => "tests-failed",
            StepOutcome::TestsInterrupted => "tests-interrupted",
            StepOutcome::Inconclusive => "inconclusive",
            StepOutcome::TooFewFindings => "too-few-findings",
            StepOutcome::Passed => "passed",
            StepOutcome::ChangesRequested => "changes-requested",
            StepOutcome::VerificationFailed => "verification-failed",
            StepOutcome::Halted => "halted",
            StepOutcome::Escalated => "escalated",
            StepOutcome::Failed => "failed",
            StepOutcome::TimedOut => "timed_out",
            StepOutcome::Cancelled => "cancelled",
        }
    }

    /// Parses a stored id.
    pub fn parse(s: &str) -> Option<StepOutcome> {
        StepOutcome::ALL.into_iter().find(|o| o.as_str() == s)
    }

    /// A review that sent the story back.
    pub fn is_rejection(self) -> bool {
        matches!(
            self,
            StepOutcome::ChangesRequested | StepOutcome::VerificationFailed
        )
    }
}

impl fmt::Display for StepOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An agent's own escalation, as the step recorded it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentEscalation {
    /// Short title.
    pub title: String,
    /// What the agent found.
    pub finding: String,
    /// The options it offered.
    pub options: Vec<String>,
}

/// What a settled step leaves for later decisions (stored as JSON beside the step).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepDetail {
    /// The story's status when the step started: its result applies while the story is still
    /// there.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "status_id")]
    pub started_in: Option<Status>,
    /// The agent that ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Why it failed, halted or was inconclusive; the failing tests' output; a review's summary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The review's findings fingerprint (stall detection).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
    /// Findings the review reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub findings: Option<usize>,
    /// Blocking findings (critical or high).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocking: Option<usize>,
    /// The agent's escalation, when it escalated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escalation: Option<AgentEscalation>,
    /// A cancelled step was stopped by the budget (not by a person or the run ending).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub budget_stop: bool,
}

/// One step of the story's history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepFact {
    /// Journal id (monotonic: later steps have larger ids).
    pub id: i64,
    /// The stage.
    pub stage: Stage,
    /// The round (1 for the first).
    pub round: u32,
    /// How it ended; `None`: started and never settled (the process was killed).
    pub outcome: Option<StepOutcome>,
    /// Whether the step belongs to the run deciding now.
    pub this_run: bool,
    /// What it left behind.
    pub detail: StepDetail,
}

/// One escalation of the story.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EscalationFact {
    /// Journal id.
    pub id: i64,
    /// What raised it.
    pub kind: EscalationKind,
    /// Its title.
    pub title: String,
    /// The answer, once a human gave one.
    pub answer: Option<Choice>,
    /// Whether the engine has acted on the answer.
    pub resolved: bool,
    /// The newest step of the story when it was raised (0: none).
    pub after_step: i64,
}

/// The rules a story is driven by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rules {
    /// Story-document review and QA stages.
    pub dispatch: DispatchOptions,
    /// Fix rounds before escalating.
    pub max_review_rounds: u32,
    /// Findings a code review must report.
    pub min_findings: usize,
    /// Times a story may enter the same status before it is a loop.
    pub loop_limit: u32,
    /// Standard mode with `done` as a checkpoint: a human confirms before a story is done.
    pub confirm_done: bool,
}

impl Default for Rules {
    fn default() -> Rules {
        Rules {
            dispatch: DispatchOptions::default(),
            max_review_rounds: 3,
            min_findings: 3,
            loop_limit: 5,
            confirm_done: false,
        }
    }
}

/// Everything [`super::decide`] reads.
#[derive(Debug, Clone, PartialEq)]
pub struct StoryFacts {
    /// The story key.
    pub key: String,
    /// Its status in the sprint file.
    pub status: StatusValue,
    /// Why it has that status (the reason of the transition that set it), if journaled.
    pub status_reason: Option<String>,
    /// The story file's path relative to the project, for messages.
    pub story_file: String,
    /// Whether the story file exists.
    pub story_file_exists: bool,
    /// Every step that worked on the story, oldest first.
    pub steps: Vec<StepFact>,
    /// Its escalations, oldest first.
    pub escalations: Vec<EscalationFact>,
    /// How often the story entered each status (applied journal events).
    pub entered: BTreeMap<Status, u32>,
    /// The rules.
    pub rules: Rules,
    /// Why the budget is exhausted, if it is.
    pub budget_exhausted: Option<String>,
    /// Whether the run was cancelled.
    pub cancelled: bool,
    /// A human moved the story (`baton set`, outside any run) after its newest step ended: that
    /// step's result is spent, and the story starts afresh from where the human put it.
    pub moved_by_human_since_last_step: bool,
}

impl StoryFacts {
    /// Facts of a story with no history, in `status`.
    pub fn new(key: &str, status: Status) -> StoryFacts {
        StoryFacts {
            key: key.to_owned(),
            status: StatusValue::Known(status),
            status_reason: None,
            story_file: format!("_bmad-output/implementation-artifacts/{key}.md"),
            story_file_exists: true,
            steps: Vec::new(),
            escalations: Vec::new(),
            entered: BTreeMap::new(),
            rules: Rules::default(),
            budget_exhausted: None,
            cancelled: false,
            moved_by_human_since_last_step: false,
        }
    }

    /// The newest step, settled or not.
    pub fn last_step(&self) -> Option<&StepFact> {
        self.steps.last()
    }

    /// The newest settled step.
    pub fn last_settled(&self) -> Option<&StepFact> {
        self.steps.iter().rev().find(|s| s.outcome.is_some())
    }

    /// The id of the newest step (0 if none).
    pub fn newest_step_id(&self) -> i64 {
        self.steps.last().map_or(0, |s| s.id)
    }

    /// Fix rounds used: settled fix steps, except those whose tests never gave a verdict.
    pub fn rounds_used(&self) -> u32 {
        let n = self
            .steps
            .iter()
            .filter(|s| s.stage == Stage::Fix)
            .filter(|s| {
                !matches!(
                    s.outcome,
                    None | Some(StepOutcome::AgentDone | StepOutcome::TestsInterrupted)
                )
            })
            .count();
        u32::try_from(n).unwrap_or(u32::MAX)
    }

    /// Extra fix rounds humans granted (answers "another fix round").
    pub fn rounds_granted(&self) -> u32 {
        let n = self
            .escalations
            .iter()
            .filter(|e| {
                matches!(
                    e.kind,
                    EscalationKind::MaxReviewRounds | EscalationKind::Stall
                ) && e.answer == Some(Choice::AnotherRound)
            })
            .count();
        u32::try_from(n).unwrap_or(u32::MAX)
    }

    /// Whether an `in-progress` story is being fixed after a failed review or failing tests
    /// (rather than an interrupted first implementation).
    pub fn fixing(&self) -> bool {
        self.last_settled().is_some_and(|s| {
            // A fix step that completed while the story stayed in-progress was interrupted
            // before its transition: it is still a fix.
            s.stage == Stage::Fix
                || matches!(
                    s.outcome,
                    Some(
                        StepOutcome::ChangesRequested
                            | StepOutcome::TestsFailed
                            | StepOutcome::VerificationFailed
                    )
                )
        })
    }

    /// Escalations of `kinds` raised after step `step_id` (or at it).
    pub fn escalated_since<'a>(
        &'a self,
        step_id: i64,
        kinds: &'a [EscalationKind],
    ) -> impl Iterator<Item = &'a EscalationFact> + 'a {
        self.escalations
            .iter()
            .filter(move |e| e.after_step >= step_id && kinds.contains(&e.kind))
    }
}

/// `Option<Status>` as its kebab-case id (unknown ids read as `None`).
mod status_id {
    use crate::status::Status;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(s: &Option<Status>, ser: S) -> Result<S::Ok, S::Error> {
        match s {
            Some(s) => ser.serialize_str(s.as_str()),
            None => ser.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(de: D) -> Result<Option<Status>, D::Error> {
        Ok(Option::<String>::deserialize(de)?.and_then(|s| Status::parse(&s)))
    }
}

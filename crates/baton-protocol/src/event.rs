//! The event envelope: which run, its place in the run's sequence, when, whom it concerns
//! ([`Scope`]), and what happened ([`crate::EventBody`], flattened beside the envelope in JSON).

use crate::body::EventBody;
use crate::unit::UnitKey;
use serde::{Deserialize, Serialize};

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

impl Scope {
    /// The unit concerned, directly or through its agent.
    pub fn unit(&self) -> Option<&UnitKey> {
        match self {
            Scope::Run => None,
            Scope::Unit(u) => Some(u),
            Scope::Agent { unit, .. } => unit.as_ref(),
        }
    }

    /// The story concerned, if the unit is one.
    pub fn story(&self) -> Option<&str> {
        self.unit().and_then(UnitKey::story)
    }

    /// The agent concerned, if the scope names one.
    pub fn agent(&self) -> Option<&str> {
        match self {
            Scope::Agent { agent, .. } => Some(agent),
            _ => None,
        }
    }
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

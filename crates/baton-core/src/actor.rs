//! Who makes a transition.
//!
//! The transition table grants each move to some actors only: the developer cannot pass its own
//! review, the reviewer cannot start development. `Human` is a person at the `baton` command line,
//! `Orchestrator` is baton's own engine (epic follow-ups, escalations, reconciliation).

use serde::{Deserialize, Serialize};
use std::fmt;

/// The party that requests a status change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Actor {
    /// A person using the `baton` command.
    Human,
    /// baton's engine itself.
    Orchestrator,
    /// The scrum-master agent (creates and revises stories).
    ScrumMaster,
    /// The developer agent.
    Developer,
    /// The reviewer agent.
    Reviewer,
    /// The QA agent.
    Qa,
}

impl Actor {
    /// Every actor, for tables and tests.
    pub const ALL: [Actor; 6] = [
        Actor::Human,
        Actor::Orchestrator,
        Actor::ScrumMaster,
        Actor::Developer,
        Actor::Reviewer,
        Actor::Qa,
    ];

    /// The kebab-case name used in the journal and in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Actor::Human => "human",
            Actor::Orchestrator => "orchestrator",
            Actor::ScrumMaster => "scrum-master",
            Actor::Developer => "developer",
            Actor::Reviewer => "reviewer",
            Actor::Qa => "qa",
        }
    }

    /// Parses the kebab-case name.
    pub fn parse(s: &str) -> Option<Actor> {
        Actor::ALL.into_iter().find(|a| a.as_str() == s)
    }
}

impl fmt::Display for Actor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

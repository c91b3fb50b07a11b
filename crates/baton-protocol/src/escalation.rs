//! Escalations as front ends show them: the question, its choices (stable ids and labels), and
//! whether and how it was answered.

use crate::unit::UnitKey;
use serde::{Deserialize, Serialize};

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
    /// The unit concerned, by its journal key (see [`EscalationView::unit`]).
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
    /// Whether the engine waits for an [`crate::Op::Answer`] (or [`crate::Op::Defer`]) now.
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
    /// The unit it concerns, typed (`None`: none, or a key no workflow writes).
    pub fn unit(&self) -> Option<UnitKey> {
        UnitKey::parse(self.key.as_deref()?).ok()
    }
}

//! Escalations: questions put to a human (options, the answer, when the engine acted on it),
//! keyed by the story or plan task they concern.

use serde::Serialize;

use super::JournalError;

/// An escalation to a human.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EscalationRecord {
    /// Id (assigned by the journal; ignored on insert).
    pub id: i64,
    /// The run that raised it.
    pub run_id: Option<String>,
    /// The story concerned.
    pub key: Option<String>,
    /// Short title.
    pub title: String,
    /// What was found.
    pub finding: String,
    /// The choices offered (2–4).
    pub options: Vec<String>,
    /// The choice made, once answered.
    pub answer: Option<String>,
    /// RFC 3339 creation time.
    pub created_at: String,
    /// RFC 3339 answer time.
    pub answered_at: Option<String>,
    /// What raised it (`max-review-rounds`, `inconclusive-review`, `stall`, `agent`, …), so the
    /// engine knows how to act on the answer.
    pub kind: String,
    /// RFC 3339 time the engine acted on the answer.
    pub resolved_at: Option<String>,
    /// The newest step of the story when it was raised (0: none), so decisions can tell what
    /// happened before the escalation from what happened after.
    pub after_step: i64,
}

/// The escalations of the journal.
///
/// `answer_escalation` is durable when it returns (a human's answer is never lost); the other
/// writes may skip the flush (a lost escalation is raised again).
pub trait EscalationLog {
    /// Records an escalation; returns its id.
    fn raise_escalation(&mut self, esc: &EscalationRecord) -> Result<i64, JournalError>;
    /// Records the answer to an escalation: `true` if answered now, `false` if the id is unknown
    /// or was already answered (the first answer stands).
    fn answer_escalation(&mut self, id: i64, answer: &str, at: &str) -> Result<bool, JournalError>;
    /// Marks an answered escalation as acted on.
    fn resolve_escalation(&mut self, id: i64, at: &str) -> Result<(), JournalError>;
    /// Escalations, oldest first; open (unanswered) ones only if `open_only`.
    fn escalations(&self, open_only: bool) -> Result<Vec<EscalationRecord>, JournalError>;
    /// The escalations of one `key` (a story, `sdd:<plan>#<task>`), oldest first; open
    /// (unanswered) ones only if `open_only`. The filter runs in the database.
    fn escalations_for_key(
        &self,
        key: &str,
        open_only: bool,
    ) -> Result<Vec<EscalationRecord>, JournalError>;
    /// One escalation by id, if it exists.
    fn escalation(&self, id: i64) -> Result<Option<EscalationRecord>, JournalError>;
}

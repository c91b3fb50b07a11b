//! The journal: a durable record of every status transition, run, step, escalation and cost.
//!
//! The sprint file is authoritative for statuses; the journal says how they got there. Each
//! transition is written as a *pending* event before the sprint file is replaced and marked
//! *applied* afterwards, so a process killed between the two can be reconciled on the next start
//! (see [`crate::ledger`]). The [`Journal`] trait keeps the engine independent of the backend:
//! [`SqliteJournal`] is the embedded one at `.baton/baton.db`; a PostgreSQL one can follow.

mod migrations;
mod sqlite;

pub use sqlite::SqliteJournal;
pub use sqlite::guard::{Allowance, GuardRecord, NewGuardRecord};
pub use sqlite::sdd::SddTaskRecord;

use serde::Serialize;
use std::path::PathBuf;

/// Errors of the journal.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// The database could not be opened, migrated or queried.
    #[error("journal `{path}`: {source}")]
    Sqlite {
        /// The database file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: rusqlite::Error,
    },
    /// The database was written by a newer baton.
    #[error(
        "journal `{path}` has schema version {found}, newer than this baton understands ({supported}); upgrade baton"
    )]
    TooNew {
        /// The database file.
        path: PathBuf,
        /// The version found.
        found: i64,
        /// The newest version this build knows.
        supported: i64,
    },
    /// A stored row could not be read back (hand-edited database).
    #[error("journal `{path}`: corrupt row in `{table}`: {detail}")]
    Corrupt {
        /// The database file.
        path: PathBuf,
        /// The table.
        table: &'static str,
        /// What was wrong.
        detail: String,
    },
}

/// Where an event stands in the write protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum EventState {
    /// Recorded before the sprint file was written; not yet known to be on disk.
    Pending,
    /// The sprint file holds the change.
    Applied,
    /// The write never happened (process killed, or a concurrent edit won): not a transition.
    Abandoned,
}

impl EventState {
    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            EventState::Pending => "pending",
            EventState::Applied => "applied",
            EventState::Abandoned => "abandoned",
        }
    }
}

/// A transition about to be written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewEvent {
    /// RFC 3339 timestamp.
    pub at: String,
    /// Who asked (`human`, `developer`, …).
    pub actor: String,
    /// The `development_status` key.
    pub key: String,
    /// Status before (as shown by baton, extended states included); `None` for a new key.
    pub from: Option<String>,
    /// Status after.
    pub to: String,
    /// Why (free text; may be empty).
    pub reason: String,
    /// Whether `--force` allowed a move the table forbids.
    pub forced: bool,
    /// The run this belongs to, if any.
    pub run_id: Option<String>,
}

/// A transition as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Event {
    /// Monotonic id.
    pub id: i64,
    /// Events written together (one sprint-file write) share a group.
    pub group: i64,
    /// RFC 3339 timestamp.
    pub at: String,
    /// Who asked.
    pub actor: String,
    /// The key.
    pub key: String,
    /// Status before.
    pub from: Option<String>,
    /// Status after.
    pub to: String,
    /// Why.
    pub reason: String,
    /// Whether forced.
    pub forced: bool,
    /// Run id, if any.
    pub run_id: Option<String>,
    /// Protocol state.
    pub state: EventState,
}

/// Which events to list.
#[derive(Debug, Clone, Default)]
pub struct EventFilter {
    /// Only this key.
    pub key: Option<String>,
    /// Include pending and abandoned events too (default: applied only).
    pub all_states: bool,
    /// At most this many, newest last.
    pub limit: Option<usize>,
}

/// A run of the engine (`baton sprint`, `baton team`, …).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunRecord {
    /// Time-ordered id.
    pub id: String,
    /// What kind of run (`sprint`, `team`, …).
    pub kind: String,
    /// RFC 3339 start.
    pub started_at: String,
    /// RFC 3339 end, once ended.
    pub ended_at: Option<String>,
    /// `running`, `completed`, `paused`, `stopped`, `failed`, `cancelled`.
    pub status: String,
    /// Why it ended.
    pub reason: Option<String>,
}

/// One agent step within a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepRecord {
    /// Id (assigned by the journal; ignored on insert).
    pub id: i64,
    /// The run.
    pub run_id: String,
    /// Story key, if the step works on one.
    pub key: Option<String>,
    /// Stage (`create`, `dev`, `review`, `fix`, …).
    pub stage: String,
    /// Attempt number, from 1.
    pub attempt: u32,
    /// Hash of the step's inputs, to detect a re-run with identical input.
    pub input_hash: String,
    /// Outcome once finished (`completed`, `halted`, …); `None` while running.
    pub outcome: Option<String>,
    /// RFC 3339 start.
    pub started_at: String,
    /// RFC 3339 end.
    pub ended_at: Option<String>,
    /// What the settled step leaves for later decisions (JSON), if anything.
    pub detail: Option<String>,
}

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

/// One entry of the cost ledger: the usage of one model call.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CostEntry {
    /// The run.
    pub run_id: Option<String>,
    /// The step.
    pub step_id: Option<i64>,
    /// RFC 3339 time.
    pub at: String,
    /// `provider/model`.
    pub model: String,
    /// Input tokens (cache reads and writes excluded).
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Cache-read input tokens.
    pub cache_read_tokens: u64,
    /// Cache-write input tokens.
    pub cache_write_tokens: u64,
    /// Cost in US dollars.
    pub cost_usd: f64,
    /// The tokens (and so the cost) were estimated from the text: the provider reported none.
    pub estimated: bool,
}

/// The journal backend.
///
/// Methods that write take effect as one transaction each. `record_pending` and
/// `answer_escalation` are durable when they return (synchronous commit); every other write may
/// skip the flush and become durable with the next synchronous commit. That is safe because each
/// of them is either repaired by reconciliation (a lost `mark_applied`) or re-derived by the
/// engine from the files and the durable events (a lost step, cost line or escalation is
/// re-run or re-raised), and a killed process loses none of them: only a power cut can.
pub trait Journal {
    /// Records a group of transitions that one sprint-file write will apply, as `pending`, in
    /// one durable transaction. Returns their ids, in order.
    fn record_pending(&mut self, events: &[NewEvent]) -> Result<Vec<i64>, JournalError>;
    /// Marks events as applied.
    fn mark_applied(&mut self, ids: &[i64]) -> Result<(), JournalError>;
    /// Marks events as abandoned: their write never happened.
    fn mark_abandoned(&mut self, ids: &[i64]) -> Result<(), JournalError>;
    /// Every event still pending, oldest first.
    fn pending(&self) -> Result<Vec<Event>, JournalError>;
    /// Events matching `filter`, oldest first.
    fn events(&self, filter: &EventFilter) -> Result<Vec<Event>, JournalError>;

    /// Starts a run.
    fn begin_run(&mut self, run: &RunRecord) -> Result<(), JournalError>;
    /// Ends a run with its final status and reason.
    fn end_run(
        &mut self,
        id: &str,
        at: &str,
        status: &str,
        reason: &str,
    ) -> Result<(), JournalError>;
    /// Looks a run up.
    fn run(&self, id: &str) -> Result<Option<RunRecord>, JournalError>;
    /// The newest run of `kind`, if any.
    fn last_run(&self, kind: &str) -> Result<Option<RunRecord>, JournalError>;
    /// Records a step; returns its id.
    fn begin_step(&mut self, step: &StepRecord) -> Result<i64, JournalError>;
    /// Finishes a step with an outcome and, optionally, its detail (JSON).
    fn end_step(
        &mut self,
        id: i64,
        at: &str,
        outcome: &str,
        detail: Option<&str>,
    ) -> Result<(), JournalError>;
    /// Steps of a run, oldest first.
    fn steps(&self, run_id: &str) -> Result<Vec<StepRecord>, JournalError>;
    /// Records an escalation; returns its id.
    fn raise_escalation(&mut self, esc: &EscalationRecord) -> Result<i64, JournalError>;
    /// Records the answer to an escalation: `true` if answered now, `false` if the id is unknown
    /// or was already answered (the first answer stands).
    fn answer_escalation(&mut self, id: i64, answer: &str, at: &str) -> Result<bool, JournalError>;
    /// Escalations, open ones only if `open_only`.
    fn escalations(&self, open_only: bool) -> Result<Vec<EscalationRecord>, JournalError>;
    /// Marks an answered escalation as acted on.
    fn resolve_escalation(&mut self, id: i64, at: &str) -> Result<(), JournalError>;
    /// Every step that worked on `key`, across runs, oldest first.
    fn steps_for_key(&self, key: &str) -> Result<Vec<StepRecord>, JournalError>;
    /// Appends to the cost ledger.
    fn record_cost(&mut self, entry: &CostEntry) -> Result<(), JournalError>;
    /// Total cost in US dollars of a run (all runs if `None`).
    fn total_cost(&self, run_id: Option<&str>) -> Result<f64, JournalError>;
}

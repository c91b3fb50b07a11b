//! Status events: every transition of a `development_status` entry, written as *pending* before
//! the sprint file is replaced and marked *applied* (or *abandoned*) afterwards, so that a process
//! killed between the two is reconciled on the next start (see [`crate::ledger`]).

use serde::Serialize;

use super::JournalError;

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

/// The status events of the journal.
///
/// `record_pending` and `mark_abandoned` are durable when they return (a synchronous commit):
/// a lost abandon could later be mistaken for an applied event. `mark_applied` may skip the
/// flush: a mark lost to a power cut is repaired by reconciliation.
pub trait StatusEvents {
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
}

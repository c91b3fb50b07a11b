//! The scoped event log of runs: every event the engine emits (status changes, agent activity,
//! streamed progress), numbered by the journal, so that a subscriber that comes late (a web page,
//! another process) catches up from here and then follows the live stream from the next number.
//!
//! The journal stores the event's scope and body as the JSON text the engine wrote; it does not
//! read them. Appends are cheap: they are never flushed on their own (they become durable with
//! the next synchronous commit), since events are many and a lost tail is only lost progress
//! output, never state a decision reads.

use serde::Serialize;

use super::JournalError;

/// One event as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StoredEvent {
    /// Its number: increasing, never reused, from 1.
    pub seq: i64,
    /// The run that emitted it.
    pub run_id: String,
    /// RFC 3339 time.
    pub at: String,
    /// Where it happened (JSON, as the engine wrote it).
    pub scope: String,
    /// What happened (JSON, as the engine wrote it).
    pub body: String,
}

/// The run event log of the journal.
pub trait RunEvents {
    /// Appends an event and returns its number (greater than every number handed out before).
    /// Never flushed on its own.
    fn append_event(
        &mut self,
        run_id: &str,
        at: &str,
        scope_json: &str,
        body_json: &str,
    ) -> Result<i64, JournalError>;
    /// At most `limit` events numbered above `seq`, oldest first (`seq` 0: from the start).
    fn events_after(&self, seq: i64, limit: usize) -> Result<Vec<StoredEvent>, JournalError>;
    /// The number of the newest event, 0 when there is none.
    fn last_event_seq(&self) -> Result<i64, JournalError>;
}

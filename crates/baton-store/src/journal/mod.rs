//! The journal: a durable record of every status transition, run, step, escalation and cost.
//!
//! The sprint file is authoritative for statuses; the journal says how they got there. Each
//! transition is written as a *pending* event before the sprint file is replaced and marked
//! *applied* afterwards, so a process killed between the two can be reconciled on the next start
//! (see [`crate::ledger`]).
//!
//! One trait per record family keeps the engine independent of the backend and lets each part
//! ask only for what it uses: [`StatusEvents`], [`RunLog`] (runs and steps), [`EscalationLog`],
//! [`CostLedger`], [`GuardState`] (the guards' settings, log, context-rule firings and
//! allowances), [`SddTasks`] and [`RunEvents`] (the engine's numbered event stream). Each family
//! has its module with its record types. [`SqliteJournal`] is the embedded backend at
//! `.baton/baton.db` and implements them all; a PostgreSQL one can follow. `use
//! baton_store::journal::prelude::*` brings every family trait into scope.
//!
//! [`Journal`] is the whole journal as the engine first knew it (status events, runs and steps,
//! escalations, the cost ledger), implemented for every type that implements those four
//! families. It keeps its methods so that existing code calling them on a [`SqliteJournal`] with
//! `Journal` in scope keeps working; a module should import either `Journal` or the family traits,
//! not both, or a method is found twice.
//!
//! Durability: every write is one transaction. `record_pending`, `mark_abandoned`,
//! `answer_escalation`, guard settings and allowances are durable when they return (synchronous
//! commit); every other write may skip the flush and become durable with the next synchronous
//! commit. That is safe because each of them is either repaired by reconciliation (a lost
//! `mark_applied`) or re-derived by the engine from the files and the durable events (a lost step,
//! cost line or escalation is re-run or re-raised; a lost run event is lost progress output), and
//! a killed process loses none of them: only a power cut can.

pub mod board;
mod costs;
mod escalations;
mod guard;
mod migrations;
mod run_events;
mod runs;
mod sdd;
mod sqlite;
mod status;
mod store;

pub use costs::{CostEntry, CostLedger, UsageOf};
pub use escalations::{EscalationLog, EscalationRecord};
pub use guard::{Allowance, GuardRecord, GuardState, NewGuardRecord};
pub use run_events::{RunEvents, StoredEvent};
pub use runs::{INTERRUPTED, RunHold, RunLog, RunRecord, StepRecord};
pub use sdd::{SddTaskRecord, SddTasks};
pub use sqlite::SqliteJournal;
pub use status::{Event, EventFilter, EventState, NewEvent, StatusEvents};
pub use store::{BoxedStore, Store};

use std::path::PathBuf;

/// Every family trait of the journal, for `use baton_store::journal::prelude::*`.
pub mod prelude {
    pub use super::{
        CostLedger, EscalationLog, GuardState, RunEvents, RunLog, SddTasks, StatusEvents,
    };
}

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
    /// A run's liveness lock beside the journal could not be taken or read.
    #[error("run lock `{path}`: {source}")]
    RunLock {
        /// The lock file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
}

/// Wraps a SQLite error with the database path.
fn sqlite_err(path: &std::path::Path, source: rusqlite::Error) -> JournalError {
    JournalError::Sqlite {
        path: path.to_path_buf(),
        source,
    }
}

/// The journal as one trait: status events, runs and steps, escalations and the cost ledger.
///
/// Implemented for every type that implements [`StatusEvents`], [`RunLog`], [`EscalationLog`]
/// and [`CostLedger`]; each method forwards to its family's. New code should name the families
/// it needs instead (see the module documentation).
pub trait Journal {
    /// [`StatusEvents::record_pending`].
    fn record_pending(&mut self, events: &[NewEvent]) -> Result<Vec<i64>, JournalError>;
    /// [`StatusEvents::mark_applied`].
    fn mark_applied(&mut self, ids: &[i64]) -> Result<(), JournalError>;
    /// [`StatusEvents::mark_abandoned`].
    fn mark_abandoned(&mut self, ids: &[i64]) -> Result<(), JournalError>;
    /// [`StatusEvents::pending`].
    fn pending(&self) -> Result<Vec<Event>, JournalError>;
    /// [`StatusEvents::events`].
    fn events(&self, filter: &EventFilter) -> Result<Vec<Event>, JournalError>;

    /// [`RunLog::begin_run`].
    fn begin_run(&mut self, run: &RunRecord) -> Result<(), JournalError>;
    /// [`RunLog::end_run`].
    fn end_run(
        &mut self,
        id: &str,
        at: &str,
        status: &str,
        reason: &str,
    ) -> Result<(), JournalError>;
    /// [`RunLog::run`].
    fn run(&self, id: &str) -> Result<Option<RunRecord>, JournalError>;
    /// [`RunLog::last_run`].
    fn last_run(&self, kind: &str) -> Result<Option<RunRecord>, JournalError>;
    /// [`RunLog::begin_step`].
    fn begin_step(&mut self, step: &StepRecord) -> Result<i64, JournalError>;
    /// [`RunLog::end_step`].
    fn end_step(
        &mut self,
        id: i64,
        at: &str,
        outcome: &str,
        detail: Option<&str>,
    ) -> Result<(), JournalError>;
    /// [`RunLog::steps`].
    fn steps(&self, run_id: &str) -> Result<Vec<StepRecord>, JournalError>;
    /// [`EscalationLog::raise_escalation`].
    fn raise_escalation(&mut self, esc: &EscalationRecord) -> Result<i64, JournalError>;
    /// [`EscalationLog::answer_escalation`].
    fn answer_escalation(&mut self, id: i64, answer: &str, at: &str) -> Result<bool, JournalError>;
    /// [`EscalationLog::escalations`].
    fn escalations(&self, open_only: bool) -> Result<Vec<EscalationRecord>, JournalError>;
    /// [`EscalationLog::resolve_escalation`].
    fn resolve_escalation(&mut self, id: i64, at: &str) -> Result<(), JournalError>;
    /// [`RunLog::steps_for_key`].
    fn steps_for_key(&self, key: &str) -> Result<Vec<StepRecord>, JournalError>;
    /// [`CostLedger::record_cost`].
    fn record_cost(&mut self, entry: &CostEntry) -> Result<(), JournalError>;
    /// [`CostLedger::total_cost`].
    fn total_cost(&self, run_id: Option<&str>) -> Result<f64, JournalError>;
}

impl<J: StatusEvents + RunLog + EscalationLog + CostLedger + ?Sized> Journal for J {
    fn record_pending(&mut self, events: &[NewEvent]) -> Result<Vec<i64>, JournalError> {
        StatusEvents::record_pending(self, events)
    }
    fn mark_applied(&mut self, ids: &[i64]) -> Result<(), JournalError> {
        StatusEvents::mark_applied(self, ids)
    }
    fn mark_abandoned(&mut self, ids: &[i64]) -> Result<(), JournalError> {
        StatusEvents::mark_abandoned(self, ids)
    }
    fn pending(&self) -> Result<Vec<Event>, JournalError> {
        StatusEvents::pending(self)
    }
    fn events(&self, filter: &EventFilter) -> Result<Vec<Event>, JournalError> {
        StatusEvents::events(self, filter)
    }
    fn begin_run(&mut self, run: &RunRecord) -> Result<(), JournalError> {
        RunLog::begin_run(self, run)
    }
    fn end_run(
        &mut self,
        id: &str,
        at: &str,
        status: &str,
        reason: &str,
    ) -> Result<(), JournalError> {
        RunLog::end_run(self, id, at, status, reason)
    }
    fn run(&self, id: &str) -> Result<Option<RunRecord>, JournalError> {
        RunLog::run(self, id)
    }
    fn last_run(&self, kind: &str) -> Result<Option<RunRecord>, JournalError> {
        RunLog::last_run(self, kind)
    }
    fn begin_step(&mut self, step: &StepRecord) -> Result<i64, JournalError> {
        RunLog::begin_step(self, step)
    }
    fn end_step(
        &mut self,
        id: i64,
        at: &str,
        outcome: &str,
        detail: Option<&str>,
    ) -> Result<(), JournalError> {
        RunLog::end_step(self, id, at, outcome, detail)
    }
    fn steps(&self, run_id: &str) -> Result<Vec<StepRecord>, JournalError> {
        RunLog::steps(self, run_id)
    }
    fn raise_escalation(&mut self, esc: &EscalationRecord) -> Result<i64, JournalError> {
        EscalationLog::raise_escalation(self, esc)
    }
    fn answer_escalation(&mut self, id: i64, answer: &str, at: &str) -> Result<bool, JournalError> {
        EscalationLog::answer_escalation(self, id, answer, at)
    }
    fn escalations(&self, open_only: bool) -> Result<Vec<EscalationRecord>, JournalError> {
        EscalationLog::escalations(self, open_only)
    }
    fn resolve_escalation(&mut self, id: i64, at: &str) -> Result<(), JournalError> {
        EscalationLog::resolve_escalation(self, id, at)
    }
    fn steps_for_key(&self, key: &str) -> Result<Vec<StepRecord>, JournalError> {
        RunLog::steps_for_key(self, key)
    }
    fn record_cost(&mut self, entry: &CostEntry) -> Result<(), JournalError> {
        CostLedger::record_cost(self, entry)
    }
    fn total_cost(&self, run_id: Option<&str>) -> Result<f64, JournalError> {
        CostLedger::total_cost(self, run_id)
    }
}

#[cfg(test)]
mod tests {
    /// Code written against `Journal` alone, as the engine and the binary are today: the methods
    /// are called on the concrete backend with only `Journal` in scope.
    mod as_callers_use_it {
        use crate::journal::{CostEntry, EscalationRecord, Journal, NewEvent, SqliteJournal};

        #[test]
        fn the_journal_trait_forwards_to_each_family() {
            let mut j = SqliteJournal::open_in_memory().unwrap();
            let ids = j
                .record_pending(&[NewEvent {
                    at: "t".into(),
                    actor: "human".into(),
                    key: "1-1-a".into(),
                    from: None,
                    to: "backlog".into(),
                    reason: String::new(),
                    forced: false,
                    run_id: None,
                }])
                .unwrap();
            assert_eq!(j.pending().unwrap().len(), 1);
            j.mark_applied(&ids).unwrap();
            assert!(j.pending().unwrap().is_empty());
            let id = j
                .raise_escalation(&EscalationRecord {
                    id: 0,
                    run_id: None,
                    key: Some("1-1-a".into()),
                    title: "stuck".into(),
                    finding: String::new(),
                    options: vec!["retry".into(), "stop".into()],
                    answer: None,
                    created_at: "t".into(),
                    answered_at: None,
                    kind: "agent".into(),
                    resolved_at: None,
                    after_step: 0,
                })
                .unwrap();
            assert_eq!(j.escalations(true).unwrap()[0].id, id);
            assert!(j.answer_escalation(id, "retry", "t").unwrap());
            assert!(j.escalations(true).unwrap().is_empty());
            j.record_cost(&CostEntry {
                run_id: Some("r".into()),
                step_id: None,
                at: "t".into(),
                model: "script/demo".into(),
                input_tokens: 1,
                output_tokens: 1,
                cache_read_tokens: 0,
                cache_write_tokens: 0,
                cost_usd: 0.5,
                estimated: false,
            })
            .unwrap();
            assert_eq!(j.total_cost(Some("r")).unwrap(), 0.5);
            assert_eq!(j.run("r").unwrap(), None);
        }
    }

    /// Code written against the families: generic over one family, or holding a trait object.
    mod by_family {
        use crate::journal::prelude::*;
        use crate::journal::{EscalationRecord, JournalError, SqliteJournal, StoredEvent};

        fn open_of<J: EscalationLog + ?Sized>(
            j: &J,
            key: &str,
        ) -> Result<Vec<EscalationRecord>, JournalError> {
            j.escalations_for_key(key, true)
        }

        fn catch_up(events: &dyn RunEvents, from: i64) -> Vec<StoredEvent> {
            events.events_after(from, 10).unwrap()
        }

        #[test]
        fn families_serve_generic_code_and_trait_objects() {
            let mut j = SqliteJournal::open_in_memory().unwrap();
            assert!(open_of(&j, "1-1-a").unwrap().is_empty());
            let seq = j.append_event("r", "t", "{}", "{}").unwrap();
            let boxed: Box<dyn RunEvents> = Box::new(j);
            assert_eq!(catch_up(boxed.as_ref(), 0)[0].seq, seq);
            assert!(catch_up(boxed.as_ref(), seq).is_empty());
        }
    }
}

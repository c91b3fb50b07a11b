//! The whole journal as one object-safe trait, for the code that wires a run: [`Store`] is every
//! record family at once, so the engine and the agents hold a `dyn Store` (or the one family they
//! use) and never name the SQLite implementation. A boxed store is a [`super::Journal`] too, so a
//! ledger can own one. Code that calls methods on a `dyn Store` imports the family traits
//! ([`super::prelude`]), not `Journal`, whose methods would be a second candidate for each call.

use super::{
    CostEntry, CostLedger, EscalationLog, EscalationRecord, Event, EventFilter, GuardState,
    JournalError, NewEvent, RunEvents, RunHold, RunLog, RunRecord, SddTasks, StatusEvents,
    StepRecord, UsageOf,
};
use baton_core::meter::Meter;
use std::collections::BTreeMap;

/// Every record family of the journal, as one trait object.
pub trait Store:
    StatusEvents + RunLog + EscalationLog + CostLedger + GuardState + SddTasks + RunEvents + Send
{
}

impl<T> Store for T where
    T: StatusEvents
        + RunLog
        + EscalationLog
        + CostLedger
        + GuardState
        + SddTasks
        + RunEvents
        + Send
        + ?Sized
{
}

/// A journal a ledger owns without naming its backend.
pub type BoxedStore = Box<dyn Store>;

impl<S: StatusEvents + ?Sized> StatusEvents for Box<S> {
    fn record_pending(&mut self, events: &[NewEvent]) -> Result<Vec<i64>, JournalError> {
        (**self).record_pending(events)
    }
    fn mark_applied(&mut self, ids: &[i64]) -> Result<(), JournalError> {
        (**self).mark_applied(ids)
    }
    fn mark_abandoned(&mut self, ids: &[i64]) -> Result<(), JournalError> {
        (**self).mark_abandoned(ids)
    }
    fn pending(&self) -> Result<Vec<Event>, JournalError> {
        (**self).pending()
    }
    fn events(&self, filter: &EventFilter) -> Result<Vec<Event>, JournalError> {
        (**self).events(filter)
    }
}

impl<S: RunLog + ?Sized> RunLog for Box<S> {
    fn begin_run(&mut self, run: &RunRecord) -> Result<(), JournalError> {
        (**self).begin_run(run)
    }
    fn end_run(
        &mut self,
        id: &str,
        at: &str,
        status: &str,
        reason: &str,
    ) -> Result<(), JournalError> {
        (**self).end_run(id, at, status, reason)
    }
    fn run(&self, id: &str) -> Result<Option<RunRecord>, JournalError> {
        (**self).run(id)
    }
    fn last_run(&self, kind: &str) -> Result<Option<RunRecord>, JournalError> {
        (**self).last_run(kind)
    }
    fn runs_of_kind(&self, kind: &str, n: usize) -> Result<Vec<RunRecord>, JournalError> {
        (**self).runs_of_kind(kind, n)
    }
    fn unfinished_runs(&self) -> Result<Vec<RunRecord>, JournalError> {
        (**self).unfinished_runs()
    }
    fn hold_run(&self, id: &str) -> Result<RunHold, JournalError> {
        (**self).hold_run(id)
    }
    fn run_is_held(&self, id: &str) -> Result<bool, JournalError> {
        (**self).run_is_held(id)
    }
    fn close_interrupted(
        &mut self,
        id: &str,
        at: &str,
        reason: &str,
    ) -> Result<bool, JournalError> {
        (**self).close_interrupted(id, at, reason)
    }
    fn begin_step(&mut self, step: &StepRecord) -> Result<i64, JournalError> {
        (**self).begin_step(step)
    }
    fn end_step(
        &mut self,
        id: i64,
        at: &str,
        outcome: &str,
        detail: Option<&str>,
    ) -> Result<(), JournalError> {
        (**self).end_step(id, at, outcome, detail)
    }
    fn steps(&self, run_id: &str) -> Result<Vec<StepRecord>, JournalError> {
        (**self).steps(run_id)
    }
    fn steps_for_key(&self, key: &str) -> Result<Vec<StepRecord>, JournalError> {
        (**self).steps_for_key(key)
    }
}

impl<S: EscalationLog + ?Sized> EscalationLog for Box<S> {
    fn raise_escalation(&mut self, esc: &EscalationRecord) -> Result<i64, JournalError> {
        (**self).raise_escalation(esc)
    }
    fn answer_escalation(&mut self, id: i64, answer: &str, at: &str) -> Result<bool, JournalError> {
        (**self).answer_escalation(id, answer, at)
    }
    fn resolve_escalation(&mut self, id: i64, at: &str) -> Result<(), JournalError> {
        (**self).resolve_escalation(id, at)
    }
    fn escalations(&self, open_only: bool) -> Result<Vec<EscalationRecord>, JournalError> {
        (**self).escalations(open_only)
    }
    fn escalations_for_key(
        &self,
        key: &str,
        open_only: bool,
    ) -> Result<Vec<EscalationRecord>, JournalError> {
        (**self).escalations_for_key(key, open_only)
    }
    fn escalation(&self, id: i64) -> Result<Option<EscalationRecord>, JournalError> {
        (**self).escalation(id)
    }
}

impl<S: CostLedger + ?Sized> CostLedger for Box<S> {
    fn record_cost(&mut self, entry: &CostEntry) -> Result<(), JournalError> {
        (**self).record_cost(entry)
    }
    fn total_cost(&self, run_id: Option<&str>) -> Result<f64, JournalError> {
        (**self).total_cost(run_id)
    }
    fn usage(&self, of: UsageOf<'_>) -> Result<Meter, JournalError> {
        (**self).usage(of)
    }
    fn usage_by_key(
        &self,
        run_kind: Option<&str>,
    ) -> Result<BTreeMap<String, Meter>, JournalError> {
        (**self).usage_by_key(run_kind)
    }
    fn usage_by_step(&self, key: &str) -> Result<BTreeMap<i64, Meter>, JournalError> {
        (**self).usage_by_step(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::{Journal, SqliteJournal};

    #[test]
    fn a_boxed_store_is_a_journal_and_each_family() {
        let dir = tempfile::tempdir().unwrap();
        let mut store: BoxedStore =
            Box::new(SqliteJournal::open(&dir.path().join("baton.db")).unwrap());
        let run = RunRecord {
            id: "r1".into(),
            kind: "sprint".into(),
            started_at: "2026-11-26T00:00:00Z".into(),
            ended_at: None,
            status: "running".into(),
            reason: None,
        };
        // A ledger owns its journal: a boxed store is one.
        fn journal(j: &mut impl Journal, run: &RunRecord) {
            j.begin_run(run).unwrap();
        }
        journal(&mut store, &run);
        assert_eq!(
            RunLog::last_run(&store, "sprint").unwrap().unwrap().id,
            "r1"
        );
        let seq = RunEvents::append_event(&mut *store, "r1", "t", "\"run\"", "{}").unwrap();
        assert_eq!(seq, 1);
        // Upcast to the one family a sprint-planning record takes.
        let status: &mut dyn StatusEvents = &mut *store;
        assert!(status.pending().unwrap().is_empty());
    }
}

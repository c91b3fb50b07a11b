//! Read-only views a dashboard asks of the journal and the engine never needs: the newest runs,
//! what each run spent, and the run events of one story (its agents' activity and usage), so a
//! web board can show the runs and a story's history without reading every event.

use super::{JournalError, RunRecord, StoredEvent};

/// Tokens and dollars spent, summed over some cost-ledger lines: the token meter, whose
/// `input_tokens` include the cache reads and writes.
pub type Spend = baton_core::meter::Meter;

/// The journal as a dashboard reads it.
pub trait BoardViews {
    /// The newest `limit` runs, newest first.
    fn recent_runs(&self, limit: usize) -> Result<Vec<RunRecord>, JournalError>;
    /// What run `run_id` spent.
    fn run_spend(&self, run_id: &str) -> Result<Spend, JournalError>;
    /// The newest `limit` run events scoped to story `key` (its unit's and its agents'), oldest
    /// first.
    fn story_events(&self, key: &str, limit: usize) -> Result<Vec<StoredEvent>, JournalError>;
}

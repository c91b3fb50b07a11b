//! Read-only views a dashboard asks of the journal and the engine never needs: the newest runs,
//! what each run spent, and the run events of one story (its agents' activity and usage), so a
//! web board can show the runs and a story's history without reading every event.

use super::{JournalError, RunRecord, StoredEvent};
use serde::Serialize;

/// Tokens and dollars spent, summed over some cost-ledger lines.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Spend {
    /// Input tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Dollars.
    pub cost_usd: f64,
}

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

//! The cost ledger: the usage and price of every model call, per run and step.

use serde::Serialize;

use super::JournalError;

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

/// The cost ledger of the journal. Appends may skip the flush.
pub trait CostLedger {
    /// Appends to the cost ledger.
    fn record_cost(&mut self, entry: &CostEntry) -> Result<(), JournalError>;
    /// Total cost in US dollars of a run (all runs if `None`).
    fn total_cost(&self, run_id: Option<&str>) -> Result<f64, JournalError>;
}

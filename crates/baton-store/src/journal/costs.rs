//! The cost ledger: the usage and price of every model call, per run and step, and its sums
//! as the token meter shows them (per step, story, run and sprint; [`Meter`]).
//!
//! A line keeps the three input counts apart as the wires leave them (uncached input, cache
//! reads, cache writes: nothing is counted twice); its sums follow the meter's rule, where
//! `input_tokens` is all three together.

use baton_core::meter::Meter;
use serde::Serialize;
use std::collections::BTreeMap;

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

impl CostEntry {
    /// The line as the token meter counts it.
    pub fn meter(&self) -> Meter {
        Meter::of_call(
            self.input_tokens,
            self.cache_read_tokens,
            self.cache_write_tokens,
            self.output_tokens,
            self.cost_usd,
        )
    }
}

/// Which lines of the cost ledger to sum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UsageOf<'a> {
    /// Every line.
    All,
    /// The lines of one run.
    Run(&'a str),
    /// The lines of every run of one kind (`sprint`: the sprint, over all its runs).
    RunKind(&'a str),
    /// The lines of one step.
    Step(i64),
    /// The lines of the steps journaled under one key (a story, `sdd:<plan>#<task>`, …).
    Key(&'a str),
}

/// The cost ledger of the journal. Appends may skip the flush.
pub trait CostLedger {
    /// Appends to the cost ledger.
    fn record_cost(&mut self, entry: &CostEntry) -> Result<(), JournalError>;
    /// Total cost in US dollars of a run (all runs if `None`).
    fn total_cost(&self, run_id: Option<&str>) -> Result<f64, JournalError>;
    /// The token meter of the lines `of` names (zero when there are none).
    fn usage(&self, of: UsageOf<'_>) -> Result<Meter, JournalError>;
    /// The token meter of each key whose steps have lines, over the runs of kind `run_kind`
    /// (every run if `None`).
    fn usage_by_key(&self, run_kind: Option<&str>)
    -> Result<BTreeMap<String, Meter>, JournalError>;
    /// The token meter of each step of `key` that has lines, by step id.
    fn usage_by_step(&self, key: &str) -> Result<BTreeMap<i64, Meter>, JournalError>;
}

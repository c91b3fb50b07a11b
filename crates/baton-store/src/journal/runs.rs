//! Runs and their steps: one record per run of the engine (`baton sprint`, `baton sdd`, …) and
//! one per agent step within it, with the outcome and the detail later decisions read.

use serde::Serialize;

use super::JournalError;

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

/// The runs and steps of the journal. Writes may skip the flush: a step lost to a power cut is
/// run again.
pub trait RunLog {
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
    /// Every step that worked on `key`, across runs, oldest first.
    fn steps_for_key(&self, key: &str) -> Result<Vec<StepRecord>, JournalError>;
}

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
    /// The newest `n` runs of `kind`, newest first.
    fn runs_of_kind(&self, kind: &str, n: usize) -> Result<Vec<RunRecord>, JournalError>;
    /// The runs that began and have not ended (running now, or left so by a killed process),
    /// oldest first.
    fn unfinished_runs(&self) -> Result<Vec<RunRecord>, JournalError>;
    /// Takes run `id`'s liveness hold: held by this process until the [`RunHold`] drops (or
    /// the process dies, which the OS handles), so that other processes can tell a live run
    /// from one a kill left "running". Taken before the run begins.
    fn hold_run(&self, id: &str) -> Result<RunHold, JournalError>;
    /// Whether a live process holds run `id` ([`RunLog::hold_run`]). A run nobody holds whose
    /// record says it is running was left so by a process that is gone.
    fn run_is_held(&self, id: &str) -> Result<bool, JournalError>;
    /// Ends run `id` as [`INTERRUPTED`] with `reason`, if it has not ended; whether it did.
    fn close_interrupted(&mut self, id: &str, at: &str, reason: &str)
    -> Result<bool, JournalError>;
}

/// The status of a run a kill (or a crash) cut off, recorded when a later run found it.
pub const INTERRUPTED: &str = "interrupted";

/// A run's liveness hold: an exclusive OS lock on a file of its own beside the journal
/// (`live/<id>.lock`), released and removed when the hold drops, or released by the OS when the
/// process dies. A journal without a file (in memory) holds nothing.
#[derive(Debug, Default)]
pub struct RunHold {
    held: Option<(std::fs::File, std::path::PathBuf)>,
}

impl RunHold {
    /// A hold on nothing (a journal in memory).
    pub fn none() -> RunHold {
        RunHold::default()
    }

    /// Takes the lock on `path` (created, with its directory, if missing).
    pub fn take(path: &std::path::Path) -> std::io::Result<RunHold> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)?;
        file.lock()?;
        Ok(RunHold {
            held: Some((file, path.to_path_buf())),
        })
    }

    /// Whether the lock on `path` is held by a live process: a missing file is held by
    /// nobody.
    pub fn is_held(path: &std::path::Path) -> std::io::Result<bool> {
        let file = match std::fs::OpenOptions::new().write(true).open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(e),
        };
        match file.try_lock() {
            Ok(()) => {
                file.unlock()?;
                Ok(false)
            }
            Err(std::fs::TryLockError::WouldBlock) => Ok(true),
            Err(std::fs::TryLockError::Error(e)) => Err(e),
        }
    }
}

impl Drop for RunHold {
    fn drop(&mut self) {
        if let Some((file, path)) = self.held.take() {
            // Removed while still locked: a process that opened it meanwhile finds it free only
            // once the run has ended, and a closing of an ended run changes nothing.
            let _ = std::fs::remove_file(&path);
            let _ = file.unlock();
        }
    }
}

//! The tasks of plan files driven by `baton sdd`: which tasks a plan has and the state each was
//! last seen in, for status lines and `baton sdd --status`.
//!
//! What a task does next is never read from here: it is decided from the task's steps and
//! escalations (keyed `sdd:<plan>#<task id>`). This is the journaled record of each state a task
//! entered, written as the task moves.

use serde::Serialize;

use super::JournalError;

/// A plan task as journaled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SddTaskRecord {
    /// The plan file, relative to the project root.
    pub plan: String,
    /// The task's id in the plan.
    pub task_id: String,
    /// Its position in the plan, from 1.
    pub position: i64,
    /// Its title.
    pub title: String,
    /// `pending`, `implementing`, `reviewing`, `fixing`, `escalated` or `complete`.
    pub state: String,
    /// The run that wrote it last.
    pub run_id: Option<String>,
    /// When (RFC 3339).
    pub updated_at: String,
}

/// The plan tasks of `baton sdd` in the journal. Writes may skip the flush.
pub trait SddTasks {
    /// Records a task's state (inserting the task the first time).
    fn record_sdd_task(&mut self, task: &SddTaskRecord) -> Result<(), JournalError>;
    /// The tasks of `plan`, in plan order.
    fn sdd_tasks(&self, plan: &str) -> Result<Vec<SddTaskRecord>, JournalError>;
}

//! The team's memory on disk: what was learned ([`baton_core::memory`]), stored, curated,
//! searched, recalled and pruned.
//!
//! [`MemoryStore`] is the one interface the engine and the front ends hold; [`SqliteMemory`] is
//! the embedded store, on by default, in its own database beside the journal
//! (`.baton/memory.db`) with an FTS5 index over the texts, so that a corrupt memory database can
//! be set aside without touching the journal. Every change (added, strengthened, forgotten,
//! pruned, recalled) is logged in the same database. [`queue`] keeps writes meant for an
//! external backend that is down, and [`degrade`] wraps such a backend so that it can never fail
//! a run.

pub mod degrade;
pub mod queue;
mod sqlite;

pub use sqlite::{DEFAULT_CAP, SqliteMemory};

use baton_core::memory::recall::{Candidate, Query};
use baton_core::memory::{Draft, DraftError, Kind, Scope, Source};
use baton_core::verdict::Finding;
use serde::Serialize;
use std::path::PathBuf;

/// A stored memory.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Memory {
    /// Its id (`m12` is shown for 12).
    pub id: i64,
    /// Its kind.
    pub kind: Kind,
    /// 1–10.
    pub importance: u8,
    /// Where it came from.
    pub source: Source,
    /// The lesson.
    pub text: String,
    /// The unit it came from.
    pub unit: Option<String>,
    /// Where it applies.
    pub scope: Scope,
    /// How many times it was learned.
    pub strength: u32,
    /// When it was first stored (Unix seconds).
    pub created_at: i64,
    /// When it was last learned or confirmed (Unix seconds).
    pub updated_at: i64,
}

/// What storing a draft did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Curated {
    /// A new memory.
    Added(i64),
    /// The same lesson was already stored: it was made stronger (and its importance raised
    /// when the new draft's was higher).
    Strengthened(i64),
}

impl Curated {
    /// The memory's id.
    pub fn id(self) -> i64 {
        match self {
            Curated::Added(id) | Curated::Strengthened(id) => id,
        }
    }
}

/// Which memories to list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    /// Only this kind.
    pub kind: Option<Kind>,
    /// Only this source.
    pub source: Option<Source>,
    /// At most this many (newest first).
    pub limit: Option<usize>,
}

/// One recall: which memories went into which step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RecallRecord {
    /// The run.
    pub run_id: String,
    /// The unit (`1-2-login`, `sdd:plan.md#3`).
    pub unit: String,
    /// The kind of step.
    pub stage: String,
    /// The memories, in the order they were put in the task.
    pub memories: Vec<i64>,
    /// When (Unix seconds).
    pub at: i64,
}

/// A line of the memory's own log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LogEntry {
    /// When (Unix seconds).
    pub at: i64,
    /// `added`, `strengthened`, `forgotten`, `pruned`, `set-aside`.
    pub action: String,
    /// The memory concerned.
    pub memory: Option<i64>,
    /// What else there is to say.
    pub detail: String,
}

/// Why the memory could not do something.
#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    /// The database could not be opened or queried.
    #[error("memory `{path}`: {source}")]
    Sqlite {
        /// The database file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: rusqlite::Error,
    },
    /// The database is not a memory database baton can read: it was moved aside.
    #[error(
        "memory `{path}` is unreadable ({why}); it was moved to `{moved_to}` and memory starts afresh"
    )]
    SetAside {
        /// The database file.
        path: PathBuf,
        /// Where it went.
        moved_to: PathBuf,
        /// What was wrong.
        why: String,
    },
    /// A draft that cannot be stored.
    #[error(transparent)]
    Draft(#[from] DraftError),
    /// A stored row that does not read back.
    #[error("memory `{path}`: corrupt row {id}: {detail}")]
    Corrupt {
        /// The database file.
        path: PathBuf,
        /// The row.
        id: i64,
        /// What was wrong.
        detail: String,
    },
    /// A file of the write queue could not be read or written.
    #[error("memory queue `{path}`: {source}")]
    Queue {
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
}

/// The memory as the engine and the front ends use it.
pub trait MemoryStore: Send {
    /// Stores `draft` at `now` (Unix seconds), merging it into the same lesson when one is
    /// stored, then prunes its scope to the cap.
    fn remember(&mut self, draft: Draft, now: i64) -> Result<Curated, MemoryError>;

    /// [`MemoryStore::remember`] once per `origin` (what the draft was read from: a memlog
    /// entry's file and content): `None`, and nothing changed, when that origin was stored
    /// before, so importing the same file twice changes nothing.
    fn remember_once(
        &mut self,
        draft: Draft,
        origin: &str,
        now: i64,
    ) -> Result<Option<Curated>, MemoryError>;

    /// Removes memory `id`; false when there is none.
    fn forget(&mut self, id: i64, now: i64) -> Result<bool, MemoryError>;

    /// One memory.
    fn get(&self, id: i64) -> Result<Option<Memory>, MemoryError>;

    /// Memories, newest first.
    fn list(&self, filter: &Filter) -> Result<Vec<Memory>, MemoryError>;

    /// Memories whose text matches `words` (full-text, best first).
    fn search(&self, words: &str, limit: usize) -> Result<Vec<Memory>, MemoryError>;

    /// The memories that may apply to `query`, with their text match against `words`, for
    /// [`baton_core::memory::recall::select`] (`now` in Unix seconds gives their age).
    fn candidates(
        &self,
        query: &Query,
        words: &str,
        now: i64,
    ) -> Result<Vec<Candidate>, MemoryError>;

    /// Records which memories went into a step.
    fn record_recall(&mut self, recall: &RecallRecord) -> Result<(), MemoryError>;

    /// The recalls of `unit`, oldest first.
    fn recalls(&self, unit: &str) -> Result<Vec<RecallRecord>, MemoryError>;

    /// Records the findings of `unit`'s latest review and returns those of its previous review
    /// that are gone: the ones a fix round resolved.
    fn settle_findings(
        &mut self,
        unit: &str,
        findings: &[Finding],
    ) -> Result<Vec<Finding>, MemoryError>;

    /// The memory's own log, oldest first.
    fn log(&self) -> Result<Vec<LogEntry>, MemoryError>;
}

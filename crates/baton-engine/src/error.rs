//! The engine's error type: what can stop a workflow from carrying out a decision.
//!
//! Agents failing, tests failing and reviews rejecting are not errors: they are outcomes the
//! decision logic acts on. An [`EngineError`] means the engine itself could not read or write
//! its state (the sprint file, the journal, a story file, git), and the story it was driving
//! goes to `needs-intervention` with the error as the reason.

use baton_agent::workspace::git::GitError;
use baton_store::journal::JournalError;
use baton_store::ledger::LedgerError;
use std::path::PathBuf;

/// Why the engine could not carry on.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The sprint ledger could not be opened (why, as it was reported).
    #[error("the sprint file is unavailable: {0}")]
    NoLedger(String),
    /// A transition or a read of the sprint file failed.
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    /// The journal failed.
    #[error(transparent)]
    Journal(#[from] JournalError),
    /// A key is not in the sprint file.
    #[error("`{0}` is not in the sprint file")]
    UnknownKey(String),
    /// A key is not a story.
    #[error("`{0}` is not a story")]
    NotAStory(String),
    /// A file the next stage depends on could not be read or written.
    #[error("`{path}`: {message}")]
    File {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// git failed.
    #[error(transparent)]
    Git(#[from] GitError),
    /// A stage commit failed: the stage's work is in the tree, uncommitted, and the story
    /// needs a human.
    #[error(
        "the stage commit `{message}` failed: {source}; the stage's work is in the tree, uncommitted"
    )]
    CommitFailed {
        /// The commit's subject.
        message: String,
        /// Why.
        #[source]
        source: GitError,
    },
    /// The project is not fit for a run (not a repository, uncommitted changes, …).
    #[error("{0}")]
    Preflight(String),
    /// A decision made no progress (a move to the status the story already has).
    #[error("`{key}`: {what} made no progress; the story needs a human")]
    NoProgress {
        /// The story.
        key: String,
        /// What was attempted.
        what: String,
    },
}

impl EngineError {
    /// An error reading or writing `path`.
    pub fn file(path: &std::path::Path, message: impl std::fmt::Display) -> EngineError {
        EngineError::File {
            path: path.to_path_buf(),
            message: message.to_string(),
        }
    }
}

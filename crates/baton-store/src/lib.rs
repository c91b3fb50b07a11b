//! baton-store: the files and the database that hold baton's state.
//!
//! The BMad `sprint-status.yaml` (tolerant load, validation, comment-preserving edits, atomic and
//! locked writes with compare-and-swap), story files' `Status:` line, YAML frontmatter checkpoints
//! of markdown documents, the SQLite journal, the team's memory, and `baton.toml`. Deciding which transitions are
//! legal is baton-core's job; this crate makes the chosen ones durable.

pub mod atomic;
pub mod bmad_checkpoint;
pub mod bmad_queue;
pub mod bmad_skills;
pub mod bmad_targets;
pub mod bounded;
pub mod frontmatter;
pub mod journal;
pub mod ledger;
pub mod locate;
pub mod lock;
pub mod memory;
pub mod planning;
pub mod sprint_file;
pub mod state_dir;
pub mod story_file;

//! YAML frontmatter of markdown documents, edited without disturbing anything else.
//!
//! This module owns reading and minimally rewriting the `---`-fenced YAML block at the top of
//! BMad markdown documents: planning documents whose `stepsCompleted` records step-file progress
//! (ints or step-file names, BMAD-FORMAT.md §4 and R8) and story files whose optional frontmatter
//! holds `baseline_commit` (§3). The fences are found by hand, the body after the closing fence is
//! kept byte for byte, and [`Document::set`] rewrites only the block of the one top-level key it
//! changes, then re-parses the result and refuses any edit that would not read back as intended.
//! It also owns [`Checkpoints`]: numbered snapshots of a document under `.baton/checkpoints`,
//! pruned to the newest ten, that can be restored atomically.
//!
//! One file per job: `split` finds the fences, `yaml` reads the YAML, `document` holds
//! [`Document`] and its reads, `edit` (with `lines` and `layout`) the edits that keep bytes,
//! `steps` the `stepsCompleted` list, `checkpoints` the snapshots, `error` the one error type.

mod checkpoints;
mod document;
mod edit;
mod error;
mod layout;
mod lines;
mod split;
mod steps;
mod yaml;

pub use checkpoints::{Checkpoint, Checkpoints};
pub use document::Document;
pub use error::FrontmatterError;
pub use split::{FrontSpan, body_offset};
pub use steps::StepRef;

/// The frontmatter key holding step-file progress (BMAD-FORMAT.md §4).
pub const STEPS_COMPLETED: &str = "stepsCompleted";

/// How many checkpoints [`Checkpoints`] keeps per document unless told otherwise.
pub const DEFAULT_KEEP: usize = 10;

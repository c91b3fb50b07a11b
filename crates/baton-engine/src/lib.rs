//! baton-engine: workflows built from agents and the sprint state.
//!
//! A workflow is facts → decision → effect: the facts of a story are loaded from the sprint file,
//! the story file and the journal ([`ctx`]); [`baton_core::story::decide`] picks the next move;
//! the driver ([`story`]) carries it out through a stage ([`stages`]) or a transition, and the
//! result is journaled as a new fact. The sprint scheduler lives in [`workflows::sprint`], ad-hoc
//! dispatch in [`workflows::team`]; front ends talk to a run through [`protocol`] and [`session`].
//! The engine decides; it never talks HTTP or parses YAML itself.

pub mod checks;
pub mod clock;
pub mod ctx;
pub mod error;
pub mod prompts;
pub mod protocol;
pub mod run;
pub mod session;
pub mod settings;
pub mod setup;
pub mod sprint_tools;
pub mod stages;
pub mod story;
pub mod story_doc;
pub mod tamper;
pub mod workflow;
pub mod workflows;

pub use error::EngineError;
pub use workflows::{sdd, team};

/// The sprint workflow, under its short name.
pub mod sprint {
    pub use crate::settings::{SprintOptions, SprintSettings};
    pub use crate::workflows::sprint::report::{RunEnd, SprintReport, StoryReport};
    pub use crate::workflows::sprint::{SprintEngine, recovery};
}

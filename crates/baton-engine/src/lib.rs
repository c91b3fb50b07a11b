//! baton-engine: one run, many workflows, built from agents and the sprint state.
//!
//! A [`run::Run`] is what every workflow shares: steps, agents on the worker their role names,
//! escalations, commits and the run's bookkeeping, each in one copy, and one scoped event stream
//! numbered by the journal. Each workflow implements [`workflow::Workflow`] over it: the sprint
//! ([`workflows::sprint`]), subagent-driven development of a plan file ([`workflows::sdd`]),
//! planning ([`workflows::plan`]) and ad-hoc dispatch ([`workflows::team`]); each unit of work (a
//! story, a plan task, a planning step) owns its workspace ([`run::Unit`]). A workflow is facts →
//! decision → effect: a story's facts come from the sprint file, the story file and the journal
//! ([`ctx`]); [`baton_core::story::decide`] picks the next move; the driver ([`story`]) carries it
//! out through a stage ([`stages`]) or a transition, and the result is journaled as a new fact.
//! Front ends start a workflow with [`session::start`] and talk to it through [`protocol`] (the
//! `baton-protocol` crate); an answer given outside a run goes through [`answer`]. The
//! engine decides; it never talks HTTP or parses YAML itself.

pub mod answer;
pub mod checks;
pub mod clock;
pub mod ctx;
pub mod error;
pub mod failpoint;
pub mod feedback;
pub mod group_commit;
pub mod memory;
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

//! The sprint's view of a run, and one story's view of it.
//!
//! [`RunCtx`] is a [`Run`] (agents, workers, journal, clock, events, escalations) plus what only
//! a sprint has: the sprint ledger (sprint file and journal) and the sprint's settings.
//! [`StoryCtx`] is the per-story unit the driver and the stages work through: it loads a story's
//! facts, journals steps and runs agents through the run, carries out moves (with their stage
//! commits), and raises and resolves escalations. Nothing outside these two types and the run
//! touches a file, the journal or git on a story's behalf.

mod facts;
mod moves;
mod story;

use crate::error::EngineError;
use crate::protocol::{EventBody, UnitKey};
use crate::run::{Run, Unit};
use crate::settings::SprintSettings;
use crate::sprint_tools::SharedLedger;
use crate::workflows::sprint::report::StoryReport;
use baton_core::status::StatusValue;
use baton_store::journal::BoxedStore;
use baton_store::ledger::Ledger;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// What every story of a sprint run shares: the [`Run`] (reached through `Deref`), the sprint
/// ledger and the sprint's settings.
pub struct RunCtx {
    /// The run.
    pub run: Arc<Run>,
    /// The sprint ledger.
    pub ledger: SharedLedger,
    /// Settings.
    pub settings: SprintSettings,
    /// Moves of stories in flight at once, committed together.
    pub grouper: crate::group_commit::Grouper,
    /// Whether git ignores the story files, asked once.
    pub story_files_ignored: tokio::sync::OnceCell<bool>,
}

impl std::ops::Deref for RunCtx {
    type Target = Run;

    fn deref(&self) -> &Run {
        &self.run
    }
}

impl RunCtx {
    /// Sends an event about the run as a whole.
    pub fn emit(&self, body: EventBody) {
        self.run.emit_run(body);
    }

    /// Runs `f` on the ledger.
    pub fn with_ledger<T>(
        &self,
        f: impl FnOnce(&mut Ledger<BoxedStore>) -> Result<T, EngineError>,
    ) -> Result<T, EngineError> {
        let mut guard = self
            .ledger
            .lock()
            .map_err(|_| EngineError::NoLedger("the ledger lock is poisoned".into()))?;
        match guard.as_mut() {
            Ok(l) => f(l),
            Err(why) => Err(EngineError::NoLedger(why.to_string())),
        }
    }

    /// The effective status of `key`.
    pub fn status(&self, key: &str) -> Result<StatusValue, EngineError> {
        self.with_ledger(|l| {
            l.refresh()?;
            l.doc()
                .sprint()
                .get(key)
                .map(|e| e.effective())
                .ok_or_else(|| EngineError::UnknownKey(key.to_owned()))
        })
    }

    /// A project path relative to the root, for messages and prompts.
    pub fn rel(&self, p: &Path) -> String {
        p.strip_prefix(&self.settings.root)
            .unwrap_or(p)
            .display()
            .to_string()
    }

    /// The story file of `key`: in the story directory or one of its subfolders, where BMad
    /// projects keep them; where it will be written when there is none yet.
    pub fn story_path(&self, key: &str) -> PathBuf {
        let dir = &self.settings.stories_dir;
        baton_store::story_file::find_indexed(dir, key)
            .unwrap_or_else(|| dir.join(format!("{key}.md")))
    }

    /// Commits what changed with `message` for `key` (`-`: the run's own commit). A failure
    /// is reported and remembered by the run (which then does not end `completed`), and
    /// returned.
    pub async fn commit(&self, key: &str, message: String) -> Result<(), EngineError> {
        let unit = (key != "-").then(|| self.run.unit(UnitKey::Story(key.to_owned())));
        self.run.commit(unit.as_ref(), message).await
    }
}

/// One story's view of the run.
pub struct StoryCtx {
    /// The run.
    pub run: Arc<RunCtx>,
    /// The story.
    pub key: String,
    /// The story as a unit of the run, with the tree it works in.
    pub unit: Unit,
    /// Its own worktree and branch, when it is worked beside others.
    pub tree: Option<StoryTree>,
    /// What the report says of it.
    pub report: Mutex<StoryReport>,
}

/// The journal step a story's agent works in: its id (the cost ledger's lines name it), and
/// the stage and round the report names it by.
#[derive(Debug, Clone, Copy)]
pub struct InStep<'a> {
    /// The step's id in the journal.
    pub id: i64,
    /// Its stage (`create`, `dev`, `review`, `fix`, `merge`, …).
    pub stage: &'a str,
    /// Its round.
    pub round: u32,
}

/// A story's own worktree and branch, and the lane that merges it into the base.
pub struct StoryTree {
    /// The branch (`baton/<key>`).
    pub branch: String,
    /// The merge lane of the run.
    pub lane: Arc<crate::workflows::sprint::lane::MergeLane>,
    /// The files git ignores that were carried into the worktree, with their content then.
    pub carried: crate::workflows::sprint::carry::Carried,
}

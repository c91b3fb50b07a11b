//! A run's bookkeeping before and after its work, one copy for every workflow: is the project a
//! git repository, did an earlier run of the same workflow die before it ended, is the tree
//! clean apart from files the workflow owns, and the journal's record of the run's beginning and
//! end.
//!
//! What counts as the workflow's own files and what to do with a killed run's leftovers differ
//! by workflow (the sprint's recovery names the stage a kill cut off); the checks they are built
//! from are here.

use super::Run;
use crate::error::EngineError;
use baton_store::journal::{INTERRUPTED, RunHold, RunRecord};

impl Run {
    /// Ends the coding-agent CLIs a killed baton left working on the project (nothing may edit
    /// the tree alongside this run); a notice for each.
    pub async fn end_orphaned_workers(&self) -> Vec<String> {
        match &self.setup.cli.state_dir {
            Some(dir) => baton_agent::worker::cli::end_orphaned_workers(dir).await,
            None => Vec::new(),
        }
    }

    /// Refuses a project that is not a git repository; `why` says what the workflow commits.
    pub async fn require_repo(&self, why: &str) -> Result<(), EngineError> {
        if self.workspace().git().is_repo().await {
            return Ok(());
        }
        Err(EngineError::Preflight(format!(
            "`{}` is not a git repository; {why}",
            self.workspace().root().display()
        )))
    }

    /// The newest earlier run of this workflow, if a kill cut it off: it was marked
    /// interrupted ([`Run::close_orphaned_runs`]) and no run of the workflow began since, so its
    /// leftovers are still this workflow's to settle.
    pub fn interrupted(&self) -> Result<Option<RunRecord>, EngineError> {
        let kind = self.kind.as_str();
        self.with_journal(|j| Ok(j.runs_of_kind(kind, 2)?))
            .map(|runs| {
                runs.into_iter()
                    .find(|r| r.id != self.id)
                    .filter(|r| r.status == INTERRUPTED)
            })
    }

    /// Takes this run's liveness hold (see [`baton_store::journal::RunHold`]): while it is
    /// held, no other process takes the run for one a kill left running.
    pub fn hold(&self) -> Result<RunHold, EngineError> {
        self.with_journal(|j| Ok(j.hold_run(&self.id)?))
    }

    /// Marks ended ([`INTERRUPTED`]) every run of any workflow that the journal says is running
    /// but whose process is gone (nobody holds it); returns them. A run another live process
    /// holds is left alone.
    pub fn close_orphaned_runs(&self) -> Result<Vec<RunRecord>, EngineError> {
        let at = self.clock.now().rfc3339;
        let reason = format!(
            "interrupted: the process running it ended without ending it (found when run {} \
             started)",
            self.id
        );
        self.with_journal(|j| {
            let mut closed = Vec::new();
            for r in j.unfinished_runs()? {
                if r.id == self.id || j.run_is_held(&r.id)? {
                    continue;
                }
                if j.close_interrupted(&r.id, &at, &reason)? {
                    closed.push(r);
                }
            }
            Ok(closed)
        })
    }

    /// The tree's uncommitted paths (root-relative, `/`-separated) that `own` does not claim.
    pub async fn foreign_dirt(&self, own: impl Fn(&str) -> bool) -> Vec<String> {
        self.workspace()
            .snapshot()
            .await
            .dirty()
            .filter(|p| !own(p))
            .map(str::to_owned)
            .collect()
    }

    /// Journals the run's beginning.
    pub fn begin(&self) -> Result<(), EngineError> {
        let record = RunRecord {
            id: self.id.clone(),
            kind: self.kind.as_str().into(),
            started_at: self.clock.now().rfc3339,
            ended_at: None,
            status: "running".into(),
            reason: None,
        };
        self.with_journal(|j| Ok(j.begin_run(&record)?))
    }

    /// Journals the run's end as `status` (`completed`, `paused`, …) with `reason`.
    pub fn end(&self, status: &str, reason: &str) -> Result<(), EngineError> {
        let at = self.clock.now().rfc3339;
        self.with_journal(|j| Ok(j.end_run(&self.id, &at, status, reason)?))
    }
}

/// The first five paths, comma-separated.
pub fn list(paths: &[impl AsRef<str>]) -> String {
    format!(
        "{}{}",
        paths
            .iter()
            .take(5)
            .map(AsRef::as_ref)
            .collect::<Vec<_>>()
            .join(", "),
        if paths.len() > 5 { ", …" } else { "" }
    )
}

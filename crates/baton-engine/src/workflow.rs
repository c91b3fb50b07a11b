//! What a workflow is to the run: a preflight that checks the project before anything starts,
//! the work itself, which ends in the workflow's own report, and how that report ends the run in
//! the journal.
//!
//! Sprint, sdd, plan, team, bmad and pm implement [`Workflow`]; [`crate::session::start`] runs
//! any of them the same way (runs a killed process left "running" closed, preflight notices as
//! events, the run's beginning journaled, ops in, events out, the run's end journaled from
//! [`Workflow::ending`], the report at the end). No workflow journals its own beginning or end.

use crate::error::EngineError;
use crate::run::Run;
use std::future::Future;
use std::sync::Arc;

/// A kind of work a run can do.
pub trait Workflow: Send + Sync + 'static {
    /// What the run reports when it ends.
    type Report: Send + 'static;

    /// Checks the project is fit for the run, settling what a killed run left behind; returns
    /// notices for the user. An error stops the run before it starts.
    fn preflight(
        &self,
        run: &Arc<Run>,
    ) -> impl Future<Output = Result<Vec<String>, EngineError>> + Send;

    /// Does the work to its end (a pause, a stop and a failure are ends too).
    fn run(self, run: Arc<Run>) -> impl Future<Output = Self::Report> + Send;

    /// How `report` ends `run` in the journal.
    fn ending(report: &Self::Report, run: &Run) -> Ending;
}

/// How a run ended, as the journal records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ending {
    /// `completed`, `paused`, `stopped`, `failed` or `cancelled`.
    pub status: String,
    /// Why.
    pub reason: String,
}

impl Ending {
    /// The end `status` for `reason`.
    pub fn new(status: impl Into<String>, reason: impl Into<String>) -> Ending {
        Ending {
            status: status.into(),
            reason: reason.into(),
        }
    }
}

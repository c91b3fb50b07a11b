//! What a workflow is to the run: a preflight that checks the project before anything starts,
//! and the work itself, which ends in the workflow's own report.
//!
//! Sprint, sdd, plan and team implement [`Workflow`]; [`crate::session::start`] runs any of them
//! the same way (preflight notices as events, ops in, events out, the report at the end).

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
}

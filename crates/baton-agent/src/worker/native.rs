//! The native worker: baton's own tool-calling loop, [`Runner`], behind the [`Worker`] trait.

use super::{BoxFuture, Job, Worker};
use crate::outcome::Outcome;
use crate::runner::Runner;

impl Worker for Runner {
    fn run<'a>(&'a self, job: &'a Job) -> BoxFuture<'a, Outcome> {
        Box::pin(Runner::run(self, &job.agent, &job.task))
    }
}

//! Workers: whatever runs an agent on a job and ends in a typed [`Outcome`].
//!
//! The engine never knows how an agent runs. It hands a [`Job`] (the agent's definition and its
//! task) to a [`Worker`] bound to a workspace, a budget and a cancellation token, and gets an
//! [`Outcome`] back whose changed files come from the workspace's git, not from the worker's
//! claims. The native tool-calling loop ([`crate::runner::Runner`]) is the first worker
//! ([`native`]); coding-agent CLIs plug in beside it.

pub mod cli;
pub mod native;

use crate::definition::AgentDef;
use crate::outcome::Outcome;
pub use crate::tools::BoxFuture;

/// One piece of agent work.
#[derive(Debug, Clone)]
pub struct Job {
    /// The agent.
    pub agent: AgentDef,
    /// What it is asked to do.
    pub task: String,
}

/// Runs agents. Implementations never panic and never return an error: every way a run can
/// end is an [`Outcome`].
pub trait Worker: Send + Sync {
    /// Runs the job to its outcome.
    fn run<'a>(&'a self, job: &'a Job) -> BoxFuture<'a, Outcome>;
}

//! The GitHub pipeline as workflows of the run: [`PmPass`], one pass of the Product Manager
//! over the open issues (facts read through the [`Forge`], the pure
//! [`baton_core::pipeline::decide::decide`], then effects), and [`turn::PmTurn`], a
//! specialist's turn on one issue.
//!
//! A pass ([`pass`]) lists the open issues and the closed ones still in the pipeline (GitHub
//! closes an issue when a pull request naming it merges), then per issue: lock it
//! ([`seats::lock`]), read it afresh ([`facts::read`]: labels, state, seats, comments, pull
//! request, checks, all after the lock), decide, carry the actions out ([`effects`]), write the
//! status comment, unlock. A failure is explained with the repository and the permission it
//! lacks ([`explain`]), and says whether running again can help. Every effect is journaled under
//! the issue's unit (`gh:#N`) with an idempotency key before it is sent, and carries a hidden
//! marker or is idempotent on GitHub, so a pass killed between an effect and its record finds
//! it on the rerun instead of repeating it. Implementation seats are git references taken by
//! compare-and-swap ([`seats::Seats`]). Nothing here merges: publishing marks a draft ready
//! and enables auto-merge, which GitHub carries out once the branch protection (the owner's
//! approval, green checks) is met.

pub mod effects;
pub mod explain;
pub mod facts;
pub mod pass;
pub mod seats;
pub mod turn;

use crate::error::EngineError;
use crate::run::Run;
use crate::workflow::{Ending, Workflow};
use baton_core::pipeline::Phase;
use baton_core::pipeline::decide::{Limits, Roles};
use baton_github::{Forge, ForgeError, MergeMethod, NewLabel};
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The pipeline's settings (`[pipeline]` in `baton.toml`, with the protocol's defaults).
#[derive(Debug, Clone)]
pub struct Pipeline {
    /// The roles by what they do.
    pub roles: Roles,
    /// Round trips, silence and reminder limits.
    pub limits: Limits,
    /// Implementation seats.
    pub seats: u32,
    /// The product owner's handle, without `@`.
    pub owner: String,
    /// The account the token acts as (what the PM's and the agents' comments are by).
    pub login: String,
    /// How published pull requests merge.
    pub merge: MergeMethod,
    /// The label that brings an issue into the pipeline (`None`: every open issue).
    pub intake_label: Option<String>,
    /// The branch pull requests merge into, whose tree the seat commits use.
    pub base: String,
    /// The baton agent each role runs.
    pub agents: BTreeMap<String, String>,
    /// The run's number and link, for footers (`$GITHUB_RUN_ID` in Actions).
    pub run_link: Option<(String, String)>,
    /// The Project (v2) whose field mirrors the phase: (owner, number, field).
    pub project: Option<(String, u64, String)>,
    /// The repository, `OWNER/NAME` (for messages).
    pub repo: String,
}

impl Pipeline {
    /// The baton agent `role` runs.
    pub fn agent_of(&self, role: &str) -> String {
        if let Some(a) = self.agents.get(role) {
            return a.clone();
        }
        if role == self.roles.analyst {
            "analyst".into()
        } else if role == self.roles.architect {
            "architect".into()
        } else if role == self.roles.reviewer {
            "reviewer".into()
        } else {
            "developer".into()
        }
    }

    /// Every label the pipeline uses.
    pub fn labels(&self) -> Vec<NewLabel> {
        let mut out: Vec<NewLabel> = self
            .roles
            .all()
            .into_iter()
            .map(|r| NewLabel {
                name: format!("agent/{r}"),
                color: "1d76db".into(),
                description: Some(format!("baton pipeline: work for the {r} agent")),
            })
            .collect();
        out.extend(Phase::ALL.into_iter().map(|p| NewLabel {
            name: p.label(),
            color: "ededed".into(),
            description: Some(format!("baton pipeline: {}", p.title())),
        }));
        out
    }

    /// The metadata footer of a comment by `agent`.
    pub fn footer(&self, agent: &str, skills: &[&str]) -> String {
        let run = self
            .run_link
            .as_ref()
            .map(|(n, l)| (n.as_str(), l.as_str()));
        baton_core::pipeline::footer(agent, skills, run)
    }
}

/// What went wrong in a pass.
#[derive(Debug, thiserror::Error)]
pub enum PmError {
    /// GitHub refused or failed.
    #[error(transparent)]
    Forge(#[from] ForgeError),
    /// The journal failed.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// git failed in the checkout.
    #[error(transparent)]
    Git(#[from] baton_agent::workspace::git::GitError),
    /// Anything else, said plainly.
    #[error("{0}")]
    Other(String),
}

/// What a pass did with one issue.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct IssueReport {
    /// The issue.
    pub number: u64,
    /// Its title.
    pub title: String,
    /// Its phase before the pass.
    pub from: String,
    /// Its phase after.
    pub to: String,
    /// What the pass did.
    pub did: Vec<String>,
    /// What it waits on, when nothing was done.
    pub waits: Option<String>,
}

/// What a pass did.
#[derive(Debug, Clone, Serialize, Default)]
pub struct PassReport {
    /// The run.
    pub run: String,
    /// Per issue.
    pub issues: Vec<IssueReport>,
    /// Things to know (labels created, comments ignored, effects found from a killed pass).
    pub notes: Vec<String>,
    /// Why the pass stopped early.
    pub error: Option<String>,
    /// Whether running the pass again, unchanged, can get past the error (GitHub's server, the
    /// network, a rate limit); not for a wrong repository, a bad token or a missing permission.
    pub retry: bool,
}

/// One pass of the Product Manager.
pub struct PmPass {
    /// GitHub.
    pub forge: Arc<dyn Forge>,
    /// The settings.
    pub pipeline: Pipeline,
    /// Only these issues (from `--issue` or the triggering event); `None`: every open issue.
    pub only: Option<Vec<u64>>,
    /// Also the issues of these pull requests (the triggering event named a pull request).
    pub pulls: Vec<u64>,
    /// Decide and report, change nothing.
    pub dry_run: bool,
}

impl Workflow for PmPass {
    type Report = PassReport;

    async fn preflight(&self, _run: &Arc<Run>) -> Result<Vec<String>, EngineError> {
        Ok(Vec::new())
    }

    async fn run(self, run: Arc<Run>) -> PassReport {
        let mut report = PassReport {
            run: run.id.clone(),
            ..PassReport::default()
        };
        if let Err(e) = pass::pass(&self, &run, &mut report).await {
            report.retry = explain::transient(&e);
            let text = explain::explain(&e, &self.pipeline.repo);
            report.error = Some(baton_core::secrets::redact(&text).into_owned());
        }
        report
    }

    fn ending(report: &PassReport, _run: &Run) -> Ending {
        match &report.error {
            None => Ending::new("completed", format!("{} issues", report.issues.len())),
            Some(e) => Ending::new("failed", e.clone()),
        }
    }
}
